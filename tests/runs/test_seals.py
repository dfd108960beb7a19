"""A finished run seals what it judged, and every command that decides on a run checks the seal:
an evaluate run's judgments.jsonl edited after it finished (every verdict set to the reference,
the forgery that would pass any bar) is refused by certify, conformal, compare --paired, drift,
estimate and the integrations' measured figures, in one line naming the run and the file; so is
a seal edited to match, a seal removed (a run finished before seals existed), and a logged run
whose MLflow artifacts were edited. The same runs, unedited, are decided on."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from assay.cli import main
from assay.lm import StubServer
from assay.lm._stub_server import default_respond
from tests.stub_judge import stub_config, write_items

N = 30
WRONG = {k for k in range(N) if k % 4 == 0}  # the judge's mistakes: an edit would hide them
LAX = {"name": "lax", "confidence": 0.9, "bars": {"accuracy": 0.5}}


def persona(body: dict) -> tuple[str, float]:
    """Item k's verdict (its reference k % 2, except on WRONG) and how sure the judge is."""
    k = int(re.search(r"item (\d+)", json.dumps(body["messages"])).group(1))
    right = k not in WRONG
    return ["False", "True"][k % 2 if right else 1 - k % 2], 0.9 if right else 0.6


def respond(body: dict) -> str:
    out = json.loads(default_respond(body))
    out["verdict"] = persona(body)[0]
    return json.dumps(out)


def verdict_probs(body: dict) -> dict[str, float]:
    label, p = persona(body)
    return {label: p, ("True" if label == "False" else "False"): 1 - p}


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """Two finished evaluate runs on the same 30 labelled items (the judge with and without
    a second rubric sentence), with verdict probabilities; and the stub, serving."""
    folder = tmp_path_factory.mktemp("sealed")
    with (
        StubServer(respond=respond, verdict_probs=verdict_probs) as stub,
        pytest.MonkeyPatch.context() as mp,
    ):
        mp.chdir(folder)
        csv = write_items(folder, N)
        runs = []
        for name, rubric in (("a", "A good response names a colour."), ("b", "Name a colour.")):
            judge = {"rubric": rubric, "score_mode": "expected"}
            cfg = stub_config(
                folder, csv, stub.base_url, name=name, file=f"{name}.yaml", judge=judge
            )
            assert main(["evaluate", str(cfg), "--quiet"]) == 0
            runs.append(next((folder / "runs").glob(f"{name}-*")))
        # a's judge again, later, in a run of its own: what drift compares a with
        judge = {"rubric": "A good response names a colour.", "score_mode": "expected"}
        cfg = stub_config(
            folder, csv, stub.base_url, name="a", file="a-later.yaml", judge=judge,
            output_dir=str(folder / "later"),
        )  # fmt: skip
        assert main(["evaluate", str(cfg), "--quiet", "--retry-unscored"]) == 0
        runs.append(next((folder / "later").glob("a-*")))
        yield runs, stub


@pytest.fixture
def runs(judged, tmp_path, monkeypatch, capsys):
    """The module's runs copied into ``tmp_path/runs`` (a copy keeps its seal), run from
    there."""
    (a, b, _), _ = judged
    capsys.readouterr()
    monkeypatch.chdir(tmp_path)
    copies = [tmp_path / "runs" / d.name for d in (a, b)]
    for src, dst in zip((a, b), copies, strict=True):
        shutil.copytree(src, dst)
    return copies


@pytest.fixture
def later(judged, tmp_path):
    """A's judge run again in a run of its own (a copy in ``tmp_path/later``)."""
    (_, _, run), _ = judged
    copy = tmp_path / "later" / run.name
    shutil.copytree(run, copy)
    return copy


def set_verdicts_to_the_reference(run_dir: Path) -> None:
    """What a forger does: every judgment in judgments.jsonl given the reference's verdict."""
    lines = []
    for line in (run_dir / "judgments.jsonl").read_text().splitlines():
        j = json.loads(line)
        k = int(j["item_id"][1:])
        j |= {"score": k % 2, "label": ["False", "True"][k % 2], "unscored": None}
        lines.append(json.dumps(j))
    (run_dir / "judgments.jsonl").write_text("\n".join(lines) + "\n")


def commands(tmp_path: Path, a: Path, b: Path, later: Path | None = None) -> dict[str, list[str]]:
    policy = tmp_path / "lax.yaml"
    policy.write_text(json.dumps(LAX))
    return {
        "certify": ["certify", str(a), "--policy", str(policy)],
        "conformal": ["conformal", str(a), "--alpha", "0.2", "--out", str(tmp_path / "sets")],
        "compare --paired": ["compare", "--paired", str(b), str(a), "--no-log"],
        "drift": ["drift", str(a), str(later or a), "--no-log"],
        "estimate": ["estimate", str(a), "--validation", str(a)],
    }


def refusal(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


@pytest.mark.parametrize(
    "command", ["certify", "conformal", "compare --paired", "drift", "estimate"]
)
def test_edited_judgments_are_refused_by_every_deciding_command(
    runs, later, tmp_path, capsys, command
):
    a, b = runs
    argv = commands(tmp_path, a, b, later)[command]
    original = (a / "judgments.jsonl").read_text()
    set_verdicts_to_the_reference(a)
    line = refusal(capsys, argv)
    assert str(a) in line
    assert "judgments.jsonl is not the file the run sealed when it finished" in line
    (a / "judgments.jsonl").write_text(original)  # the run as it judged: decided on
    assert main(argv) in (0, 1), capsys.readouterr().err
    assert not capsys.readouterr().err.strip()


def test_certify_admits_the_forgery_it_is_shown_only_when_unsealed(runs, tmp_path, capsys):
    """The edit matters: the run's own verdicts are wrong on 8 of 30 items, the forged ones on
    none — under accuracy ≥ 0.85 the forgery would be admitted, the run is refused."""
    a, _ = runs
    strict = tmp_path / "strict.yaml"
    strict.write_text(json.dumps({"name": "s", "confidence": 0.9, "bars": {"accuracy": 0.85}}))
    set_verdicts_to_the_reference(a)
    assert "judgments.jsonl is not the file" in refusal(
        capsys, ["certify", str(a), "--policy", str(strict)]
    )
    assert not (tmp_path / "runs" / "certificates").exists()  # nothing consumed


def test_a_seal_edited_to_match_or_removed_is_refused(runs, tmp_path, capsys):
    a, _ = runs
    argv = commands(tmp_path, a, a)["certify"]
    set_verdicts_to_the_reference(a)
    state = json.loads((a / "run.json").read_text())
    # the forger recomputes the digest the seal lists for the edited file
    forged = hashlib.sha256((a / "judgments.jsonl").read_bytes()).hexdigest()
    state["seal"]["files"]["judgments.jsonl"] = forged
    (a / "run.json").write_text(json.dumps(state))
    line = refusal(capsys, argv)
    assert f"{a}: its run.json's seal is not signed by the signing key" in line
    # ... or removes the seal: a run that cannot be checked is not decided on
    del state["seal"]
    (a / "run.json").write_text(json.dumps(state))
    line = refusal(capsys, argv)
    assert "finished before runs were sealed" in line and "run its config again to seal it" in line
    # a sealed file removed
    state = json.loads((runs[1] / "run.json").read_text())
    (runs[1] / "metrics.json").unlink()
    assert "metrics.json is missing; the run's seal covers it" in refusal(
        capsys, ["estimate", str(runs[1]), "--validation", str(runs[1])]
    )


def test_the_integrations_refuse_the_measured_figures_of_an_edited_run(runs):
    from assay.errors import RunError
    from assay.integrations import load_judge

    a, _ = runs
    assert load_judge(a).figures["assay.n"] == str(N)
    metrics = json.loads((a / "metrics.json").read_text())
    metrics["metrics"]["kappa_categorical"]["value"] = 0.99  # a better κ than was measured
    (a / "metrics.json").write_text(json.dumps(metrics))
    with pytest.raises(RunError, match="metrics.json is not the file the run sealed"):
        load_judge(a)


def test_a_logged_run_whose_artifacts_were_edited_is_refused(judged, tmp_path, capsys):
    """compare --paired on MLflow run ids: the files are downloaded from the artifact store
    and checked against the seal the run was tagged with (the store's copy edited: refused)."""
    import mlflow

    (_, _, _), stub = judged
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    csv = write_items(tmp_path, N)
    ids = []
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        for name in ("la", "lb"):
            judge = {"rubric": f"Rubric {name}."}
            cfg = stub_config(
                tmp_path,
                csv,
                stub.base_url,
                name=name,
                file=f"{name}.yaml",
                judge=judge,
                tracking={"enabled": True},
            )
            assert main(["evaluate", str(cfg), "--quiet", "--tracking-uri", uri]) == 0
            (run_dir,) = (tmp_path / "runs").glob(f"{name}-*")
            ids.append(json.loads((run_dir / "run.json").read_text())["mlflow_run_id"])
        capsys.readouterr()
        argv = ["compare", "--paired", *ids, "--tracking-uri", uri, "--no-log"]
        assert main(argv) in (0, 1)
        tag = mlflow.MlflowClient(uri).get_run(ids[1]).data.tags["assay.seal"]
        assert tag.split()[0] == json.loads((run_dir / "run.json").read_text())["seal"]["digest"]
        (logged,) = tmp_path.rglob(f"{ids[1]}/artifacts/judgments.jsonl")
        set_verdicts_to_the_reference(logged.parent)
        capsys.readouterr()
        line = refusal(capsys, argv)
    assert line.startswith(f"assay: error: {ids[1]}: judgments.jsonl is not the file")
