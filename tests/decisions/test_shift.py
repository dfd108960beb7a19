"""``assay drift --anchors`` and ``--series`` end to end on the loopback stub server: evaluate
runs through the command line by two versions of a 1-5 judge, the second scoring +1 on every
item (noisily: 0, +1 or +2), of a system whose new version is better by 0.5 — both recovered
within their intervals; anchors refused unless byte-identical; and the control chart flagging
the first run the new judge scored."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from assay.cli import main
from assay.lm import StubServer
from assay.lm._stub_server import default_respond
from tests.stub_judge import evaluate_cli as evaluate
from tests.stub_judge import personas_stub
from tests.web.test_report_parity import assert_same_sections

ORDINAL = {"scale": {"kind": "ordinal", "min": 1, "max": 5}}
N_ANCHORS, N_SYSTEM = 30, 40


def base(k: int) -> int:
    """An item's quality to the old judge: 1 or 2."""
    return 1 + (k // 3) % 2


def offset(k: int) -> int:
    """The new judge's offset on item k: 0, +1 or +2 in turn, +1 on average."""
    return k % 3


def respond(body: dict) -> str:
    """The judge: an anchor's score is its quality; a system answer's is its quality, +1 when
    the new system improved it ('better'); the new judge adds its offset."""
    text = json.dumps(body.get("messages"))
    found = re.search(r"(Anchor|System) answer (\d+)( better)?", text)
    k = int(found.group(2))
    score = base(k) + bool(found.group(3))
    if body["model"] == "judge-v2":
        score += offset(k)
    if found.group(1) == "Anchor" and body["model"] == "judge-v3":
        score += 1  # a third version, seen only on the anchors' runs of the series
    out = json.loads(default_respond(body))
    out["verdict"] = str(score)
    return json.dumps(out)


personas = pytest.fixture(personas_stub)


@pytest.fixture
def stub():
    with StubServer(respond=respond) as server:
        yield server


def items(path: Path, version: int, *, edited: int | None = None) -> Path:
    """Anchors a0..a29 (the same texts in both versions, unless ``edited``) and the system's
    answers s0..s39; version 2 improved every even one."""
    rows = ["id,request,response,expected"]
    for k in range(N_ANCHORS):
        tail = " (edited)" if k == edited else ""
        rows.append(f"a{k},Question {k}?,Anchor answer {k}.{tail},3")
    for k in range(N_SYSTEM):
        better = " better" if version == 2 and k % 2 == 0 else ""
        rows.append(f"s{k},Question {k}?,System answer {k}{better}.,3")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def scores(run_dir: Path) -> dict[str, int]:
    lines = (run_dir / "judgments.jsonl").read_text().splitlines()
    return {j["item_id"]: j["score"] for j in map(json.loads, lines)}


def test_a_judge_offset_and_a_system_change_are_told_apart(tmp_path, stub, capsys, monkeypatch):
    old = evaluate(
        tmp_path / "old", stub, "judge-v1", items=items(tmp_path / "d1.csv", 1), judge=ORDINAL
    )
    new = evaluate(
        tmp_path / "new", stub, "judge-v2", items=items(tmp_path / "d2.csv", 2), judge=ORDINAL
    )
    anchors = tmp_path / "anchors.txt"
    anchors.write_text(
        "# the frozen anchors\n" + "\n".join(f"a{k}" for k in range(N_ANCHORS)) + "\n"
    )
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    code = main(["drift", str(old), str(new), "--anchors", "anchors.txt", "--no-log", "--json"])
    res = json.loads(capsys.readouterr().out)
    d = res["decomposition"]
    # against the judgments the runs wrote, by hand
    so, sn = scores(old), scores(new)
    anchor_ids = [f"a{k}" for k in range(N_ANCHORS)]
    system_ids = [f"s{k}" for k in range(N_SYSTEM)]
    shift = np.mean([sn[i] - so[i] for i in anchor_ids])
    change = np.mean([sn[i] for i in system_ids]) - np.mean([so[i] for i in system_ids])
    assert d["judge_shift"] == pytest.approx(shift) == pytest.approx(1.0)  # the offset injected
    assert d["score_change"] == pytest.approx(change)
    assert d["system_change"] == pytest.approx(change - shift)
    assert (d["anchors"], d["old_items"], d["new_items"]) == (30, 40, 40)
    # the injected offset (+1) and the system's improvement (+0.5) are within their intervals;
    # the score change the dashboard showed (about 1.5) is not the system's
    assert d["judge_shift_low"] <= 1.0 <= d["judge_shift_high"] and d["judge_shift_low"] > 0
    assert d["system_change_low"] <= 0.5 <= d["system_change_high"]
    assert not d["system_change_low"] <= change <= d["system_change_high"]
    assert code == 1 and res["verdict"].startswith("the judge")  # the judge moved
    assert res["score"] == "mean score" and res["left_out"] == []
    folder = tmp_path / "drift"
    assert "Judge shift and system change" in (folder / "report.md").read_text()
    assert_same_sections(folder, "Judge shift and system change")
    # the console prints the same table
    assert main(["drift", str(old), str(new), "--anchors", "anchors.txt", "--no-log"]) == 1
    out = capsys.readouterr().out
    assert "| judge shift (anchors) |" in out and "verdict: the judge" in out


def test_anchors_must_be_byte_identical_and_in_both_runs(tmp_path, stub, capsys, monkeypatch):
    old = evaluate(
        tmp_path / "old", stub, "judge-v1", items=items(tmp_path / "d1.csv", 1), judge=ORDINAL
    )
    edited = items(tmp_path / "d2.csv", 2, edited=3)  # anchor a3's answer edited: same id
    new = evaluate(tmp_path / "new", stub, "judge-v2", items=edited, judge=ORDINAL)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "anchors.txt").write_text("a0\na1\na2\na3\n")
    capsys.readouterr()

    def refused(argv: list[str]) -> str:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err
        return err

    line = refused(["drift", str(old), str(new), "--anchors", "anchors.txt", "--no-log"])
    assert "error: anchors.txt line 4: anchor a3 differs between OLD and NEW" in line
    (tmp_path / "anchors.txt").write_text("a0\nzz\n")
    line = refused(["drift", str(old), str(new), "--anchors", "anchors.txt", "--no-log"])
    assert "error: anchors.txt line 2: anchor zz is not an item of OLD" in line
    (tmp_path / "anchors.txt").write_text("a0\na1\na0\n")
    assert "line 3: anchor a0 again (first on line 1)" in refused(
        ["drift", str(old), str(new), "--anchors", "anchors.txt"]
    )
    assert "cannot read the anchors file" in refused(
        ["drift", str(old), str(new), "--anchors", "missing.txt"]
    )
    line = refused(["drift", str(old), str(new), str(old), "--anchors", "anchors.txt"])
    assert "more than OLD and NEW is a --series" in line
    line = refused(["drift", str(old), str(new), "--series", "--anchors", "anchors.txt"])
    assert "give one" in line
    # a tampered run is refused by its seal, as every finished run read back
    (old / "judgments.jsonl").write_text(
        (old / "judgments.jsonl").read_text().replace('"score":1,', '"score":5,', 1)
    )
    (tmp_path / "anchors.txt").write_text("a0\na1\n")
    assert "seal" in refused(["drift", str(old), str(new), "--anchors", "anchors.txt"])


def test_the_control_chart_flags_the_first_run_of_a_shifted_judge(
    tmp_path, stub, capsys, monkeypatch
):
    """Eight weekly runs of the system; the judge changed to v2 before week 7: weeks 1-5 are
    the baseline, week 7 is the first out of control — against the EWMA computed by hand."""
    bumps = [4, 5, 3, 6, 4, 5, 4, 5]  # of 20 answers, how many the system answered better
    runs = []
    for week, bumped in enumerate(bumps, start=1):
        rows = ["id,request,response,expected"]
        rows += [
            f"w{week}-{k},Question {k}?,System answer {2 * k + 1}{' better' if k < bumped else ''}.,3"
            for k in range(20)
        ]
        csv = tmp_path / f"week{week}.csv"
        csv.write_text("\n".join(rows) + "\n")
        model = "judge-v1" if week < 7 else "judge-v2"
        runs.append(evaluate(tmp_path / f"w{week}", stub, model, items=csv, judge=ORDINAL))
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    code = main(["drift", *map(str, runs), "--series", "--tracking-uri", uri, "--json"])
    res = json.loads(capsys.readouterr().out)
    got = [p["score"] for p in res["points"]]
    want = [np.mean(list(scores(r).values())) for r in runs]
    assert got == pytest.approx(want)
    # μ0 and σ from the first 5 weeks; the EWMA with λ = 0.2, L = 3, by hand
    mu, sd = np.mean(want[:5]), np.std(want[:5], ddof=1)
    z, flagged = mu, []
    for i, x in enumerate(want, start=1):
        z = 0.2 * x + 0.8 * z
        half = 3 * sd * np.sqrt(0.2 / 1.8 * (1 - 0.8 ** (2 * i)))
        assert res["chart"]["ewma"][i - 1] == pytest.approx(z)
        assert res["chart"]["upper"][i - 1] == pytest.approx(mu + half)
        flagged.append(abs(z - mu) > half)
    assert res["chart"]["out_of_control"] == flagged
    assert res["chart"]["first_out"] == 7 and code == 1
    assert res["verdict"].startswith("out of control: run 7 (")
    folder = tmp_path / "drift"
    assert (folder / "ewma.png").read_bytes().startswith(b"\x89PNG")
    assert "ewma.png" in (folder / "report.md").read_text()
    assert 'alt="EWMA control chart"' in (folder / "report.html").read_text()
    assert_same_sections(folder, "EWMA control chart")
    # logged to MLflow: the comparison run's metrics and the chart
    import mlflow

    run = mlflow.MlflowClient(tracking_uri=uri).get_run(res["comparison_run_id"])
    assert run.data.tags["assay.mode"] == "drift-series"
    assert run.data.metrics["first_out_of_control"] == 7
    assert run.data.metrics["ewma.7"] == pytest.approx(res["chart"]["ewma"][6])
    # the first six weeks alone: in control, exit 0; μ0 and σ given
    argv = [
        "drift",
        *map(str, runs[:6]),
        "--series",
        "--no-log",
        "--center",
        f"{mu:.3f}",
        "--sigma",
        f"{sd:.3f}",
    ]
    assert main([*argv, "--json"]) == 0
    six = json.loads(capsys.readouterr().out)
    assert six["chart"]["first_out"] is None and six["chart"]["baseline"] is None
    assert six["chart"]["center"] == round(mu, 3) and six["verdict"].startswith("in control")
    # one run given thrice is no series: refused in one line (its spread would be 0)
    same = ["drift", str(runs[0]), str(runs[0]), str(runs[0]), "--series", "--baseline", "3"]
    assert main([*same, "--no-log"]) == 2
    assert "drift --series needs distinct runs" in capsys.readouterr().err


def test_on_a_binary_scale_the_shift_is_of_rates(tmp_path, personas, capsys, monkeypatch):
    """Two binary judges on the same 40 items, the first 10 the anchors: the new judge calls
    True on 4 anchors the old one called False — a shift of +0.4 in the rate of True."""
    personas.personas.wrong = {"stub-b": {0, 2, 4, 6, 30, 32}}  # even items are False
    old = evaluate(tmp_path / "old", personas, "stub-a")
    new = evaluate(tmp_path / "new", personas, "stub-b")
    (tmp_path / "anchors.txt").write_text("\n".join(f"i{k}" for k in range(10)) + "\n")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    main(["drift", str(old), str(new), "--anchors", "anchors.txt", "--tracking-uri", uri, "--json"])
    res = json.loads(capsys.readouterr().out)
    d = res["decomposition"]
    assert res["score"] == "rate of True"
    # logged to MLflow: the comparison run's figures
    import mlflow

    run = mlflow.MlflowClient(tracking_uri=uri).get_run(res["comparison_run_id"])
    assert run.data.tags["assay.mode"] == "drift-anchors"
    assert run.data.metrics["judge_shift"] == pytest.approx(0.4)
    assert run.data.metrics["system_change_low"] == pytest.approx(d["system_change_low"])
    assert run.data.params["anchors"] == "anchors.txt"
    assert (d["old_anchor_score"], d["new_anchor_score"]) == (0.5, 0.9)
    assert d["judge_shift"] == pytest.approx(0.4)
    assert d["score_change"] == pytest.approx(17 / 30 - 15 / 30)  # True on 2 more of 30


def test_the_example_essay_judge_has_the_offset_it_says():
    """examples/shift_judge.py, the docs' stand-in judge: v1 gives the human score, v2 one more
    (at most 6), an essay it does not know 1."""
    import csv
    import importlib.util

    path = Path(__file__).parents[2] / "examples" / "shift_judge.py"
    spec = importlib.util.spec_from_file_location("shift_judge", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = list(csv.DictReader(module.DATA.open(encoding="utf-8", newline="")))
    respond = module.persona(rows)
    for row in rows[:12]:
        human = int(row["holistic_essay_score"])
        for model, want in (("essay-judge-v1", human), ("essay-judge-v2", min(6, human + 1))):
            body = {"model": model, "messages": [{"content": f"Essay:\n{row['full_text']}"}]}
            assert json.loads(respond(body))["verdict"] == str(want)
    assert json.loads(respond({"model": "essay-judge-v2", "messages": []}))["verdict"] == "1"


def test_an_anchor_shift_of_no_width_is_said_to_be_one(tmp_path, stub, capsys, monkeypatch):
    """judge-v3 scores every anchor exactly one more than judge-v1: the shift is +1 in every
    resample, an interval of no width that shows no variation, not certainty — said in the
    verdict and under the table (it was printed bare: +1.000 [+1.000, +1.000])."""
    data = items(tmp_path / "d1.csv", 1)
    old = evaluate(tmp_path / "old", stub, "judge-v1", items=data, judge=ORDINAL)
    new = evaluate(tmp_path / "new", stub, "judge-v3", items=data, judge=ORDINAL)
    (tmp_path / "anchors.txt").write_text("\n".join(f"a{k}" for k in range(N_ANCHORS)) + "\n")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    argv = ["drift", str(old), str(new), "--anchors", "anchors.txt", "--no-log"]
    assert main([*argv, "--json"]) == 1
    res = json.loads(capsys.readouterr().out)
    d = res["decomposition"]
    assert d["judge_shift"] == d["judge_shift_low"] == d["judge_shift_high"] == 1.0
    said = "the judge shift interval has no width at the printed digits"
    assert said in res["verdict"] and "not certainty" in res["verdict"]
    assert res["unscored"] == {
        "lost": 0,
        "gained": 0,
        "p_value": None,
        "level": 0.05,
        "moved": False,
    }
    assert main(argv) == 1
    assert "The judge shift interval has no width" in capsys.readouterr().out
