"""Every Unicode line break in what a run writes — item texts, a judge's reasoning, a model's
name, a reviewer's name and note — and the run read back through what users run on it: the
report, compare, drift, certify, a resumed run, the review app and its YAML files, a selective
run's abstained items and their human verdicts, ``assay agreement`` on an annotation table.

JSON escapes the control characters among them but leaves U+0085, U+2028 and U+2029 as they
are; a reader that split its lines with ``str.splitlines`` cut such a record in two."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

from assay.cli import main
from assay.lm import StubServer
from assay.lm._stub_server import default_respond
from tests.decisions import test_selective
from tests.stub_judge import stub_config
from tests.web.test_abstained_review import _client, _post

BREAKS = ("\n", "\r", "\r\n", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
TEXT = "".join(f"part {k}{b}" for k, b in enumerate(BREAKS)) + "end"
N = 12


def assert_whole(text: str) -> None:
    """``text`` is :data:`TEXT`, every break in place (JSON's or HTML's escapes undone)."""
    assert text == TEXT, repr(text)


def write_items(folder: Path, n: int = N) -> Path:
    """``items.jsonl``: the request and response of every item hold every line break (written
    as a user's tool writes JSON Lines: U+0085, U+2028, U+2029 unescaped)."""
    path = folder / "items.jsonl"
    rows = [
        {
            "id": f"i{k}",
            "request": f"What colour is item {k}? {TEXT}",
            "response": f"Item {k} is blue. {TEXT}",
            "expected": k % 2,
        }
        for k in range(n)
    ]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def respond(body: dict) -> str:
    """Right on odd items, wrong on items 0 and 2 (so the report lists disagreements); the
    reasoning holds every line break."""
    k = int(re.search(r"Item (\d+) is blue", json.dumps(body["messages"])).group(1))
    out = json.loads(default_respond(body))
    out["verdict"] = str((k % 2 == 1) != (k in (0, 2)))
    out["reasoning"] = TEXT
    return json.dumps(out, ensure_ascii=False)


@pytest.fixture(scope="module")
def stub():
    with StubServer(respond=respond) as server:
        yield server


def in_folder(folder: Path, argv: list[str]) -> int:
    cwd = Path.cwd()
    os.chdir(folder)
    try:
        return main(argv)
    finally:
        os.chdir(cwd)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, stub) -> dict[str, Path]:
    """Two evaluate runs of one judge (whose model name holds every line break: the call
    ledger records it) and a harness run of it (probes, seeds: the items' texts)."""
    folder = tmp_path_factory.mktemp("breaks")
    items = write_items(folder)
    judge = {"model": f"openai/stub{TEXT}", "program": "chain_of_thought"}
    out = {}
    for name in ("old", "new"):
        (folder / name).mkdir()
        cfg = stub_config(folder / name, items, stub.base_url, name=name, judge=judge)
        assert in_folder(folder / name, ["evaluate", str(cfg), "--quiet"]) == 0
        (out[name],) = (folder / name / "runs").iterdir()
    config = yaml.safe_load((out["old"] / "config.yaml").read_text(encoding="utf-8"))
    judge = config["judge"]
    harness = {
        "name": "stab",
        "data": config["data"],
        "scale": judge.pop("scale"),
        "judges": [judge],
        "tests": {"stochastic_stability": {"k": 2}},
        "tracking": {"enabled": False},
    }
    (folder / "h").mkdir()
    (folder / "h" / "harness.yaml").write_text(json.dumps(harness), encoding="utf-8")
    assert in_folder(folder / "h", ["harness", "harness.yaml", "--quiet"]) == 0
    (out["harness"],) = (folder / "h" / "runs").iterdir()
    return out


def test_an_evaluate_run_reads_back_whole(runs, tmp_path, capsys, monkeypatch):
    old, new = runs["old"], runs["new"]
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    # the report: every judgment, its item's texts and the judge's reasoning
    html = (old / "report.html").read_text(encoding="utf-8")
    assert f"Items <small>({N};" in html
    # per item its request, response, reasoning and raw output; the model's name once; the
    # two disagreements' response and reasoning
    assert html.count("part 10") == 4 * N + 1 + 2 * 2
    md = (old / "report.md").read_text(encoding="utf-8")
    assert "2 of 12 pairs disagree" in md and "| i0 |" in md and "| i2 |" in md
    assert main(["compare", "--paired", str(old), str(new), "--no-log", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["n_items"] == res["n_paired"] == N
    assert main(["drift", str(old), str(new), "--stability", str(runs["harness"]), "--no-log"]) == 0
    policy = tmp_path / "lax.yaml"
    policy.write_text(json.dumps({"name": "lax", "confidence": 0.9, "bars": {"tpr": 0.1}}))
    copy = tmp_path / "runs" / old.name
    shutil.copytree(old, copy)
    assert main(["certify", str(copy), "--policy", str(policy), "--json"]) == 0
    capsys.readouterr()
    # a re-run reads its judgments and its call ledger back: nothing to judge, every call paid
    assert in_folder(old.parents[1], ["evaluate", "config.yaml", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["usage"]["calls"] == N


def test_assay_agreement_reads_judgments_and_an_annotation_table(runs, tmp_path, capsys):
    """Three annotators per item, their names and comments holding every line break, against
    the judge's judgments.jsonl."""
    table = tmp_path / "annotations.jsonl"
    rows = [
        {"item": f"i{k}", "who": f"annotator {a}{TEXT}", "label": k % 2, "comment": TEXT}
        for k in range(N)
        for a in range(3)
    ]
    table.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    argv = ["agreement", str(table), str(runs["old"] / "judgments.jsonl"), "--json"]
    argv += ["--id-column", "item", "--annotator-column", "who", "--score-column", "label"]
    assert main([*argv, "--scale", "binary"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["n"] == N and len(res["annotators"]["annotators"]) == 3
    for name in res["annotators"]["annotators"]:
        assert_whole(name[len("annotator 0") :])
    judgments = runs["old"] / "judgments.jsonl"
    assert main(["agreement", str(judgments), str(runs["new"] / "judgments.jsonl"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == N


def test_a_harness_run_and_its_reviews_read_back_whole(runs, capsys):
    """Decisions through the review app: a note and an edited text holding every break; the
    app after a restart, ``assay review export`` and a re-run of the harness read them."""
    harness = runs["harness"]
    client, csrf = _client(harness)
    probes = [json.loads(x) for x in (harness / "probes.jsonl").read_bytes().split(b"\n") if x]
    assert len(probes) == 2 * N
    for p in probes:
        assert_whole(p["response"].split("blue. ", 1)[1])
    accepted, edited = probes[0]["id"], probes[1]["id"]
    text = f"{probes[1]['response']} Edited. {TEXT}"
    decide = {"reviewer": "ana", "version": 0, "note": TEXT}
    ok = client.post(
        "/api/decide",
        json={**decide, "probe_id": accepted, "decision": "accept"},
        headers={"X-CSRF-Token": csrf},
    )
    assert ok.status_code == 200, ok.text
    ok = client.post(
        "/api/decide",
        json={**decide, "probe_id": edited, "decision": "edit", "edited_text": text},
        headers={"X-CSRF-Token": csrf},
    )
    assert ok.status_code == 200, ok.text

    client, _ = _client(harness)  # a restart: everything read from the files again
    assert client.get("/").status_code == 200
    latest = client.get(f"/api/probe/{accepted}").json()["latest"]
    assert latest["status"] == "accepted"
    assert_whole(latest["note"])
    latest = client.get(f"/api/probe/{edited}").json()["latest"]
    assert_whole(latest["note"])
    assert latest["response"] == text
    assert client.get(f"/probe/{edited}").status_code == 200

    out = harness / "review.yaml"
    capsys.readouterr()
    assert main(["review", "export", str(harness), "-o", str(out)]) == 0
    entries = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert len(entries) == 2 * N - 2  # the two decided probes are not pending

    config = harness.parents[1] / "harness.yaml"
    assert in_folder(harness.parents[1], ["harness", str(config), "--quiet"]) == 0
    report = (harness / "report.md").read_text(encoding="utf-8")
    assert "'accepted': 1, 'edited': 1" in report and "lm_error" not in report


@pytest.fixture(scope="module")
def selective(tmp_path_factory) -> tuple[list[str], Path]:
    """The stub cascade of tests/decisions/test_selective.py, its unlabelled items' texts
    holding every line break: (the apply command line, its run directory; i108 and i111
    abstained)."""
    folder = tmp_path_factory.mktemp("selective")
    with (
        pytest.MonkeyPatch.context() as mp,
        StubServer(
            respond=test_selective.respond, verdict_probs=test_selective.verdict_probs
        ) as stub,
    ):
        mp.chdir(folder)
        cfg = test_selective.write_config(folder, stub.base_url)
        config = json.loads(cfg.read_text(encoding="utf-8"))
        new = folder / "new.jsonl"
        rows = [
            {"id": f"i{k}", "request": f"What colour is item {k}? {TEXT}", "response": TEXT}
            for k in range(100, 112)
        ]
        new.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
        config["unlabelled"]["path"] = str(new)
        cfg.write_text(json.dumps(config), encoding="utf-8")
        calibrated = test_selective.cli_json(["selective", "calibrate", str(cfg)])
        calibration = Path(calibrated["run_dir"]) / "calibration.json"
        apply = ["selective", "apply", str(cfg), "--calibration", str(calibration)]
        out = test_selective.cli_json(apply)
    assert out["parts"][0]["abstained"] == 2
    return apply, Path(out["run_dir"])


def test_abstained_items_and_their_human_verdicts_read_back_whole(selective, capsys):
    apply, run_dir = selective
    client, csrf = _client(run_dir)
    assert re.findall(r'<a href="/item/(i\d+)"', client.get("/").text) == ["i108", "i111"]
    body = {"item_id": "i108", "verdict": "True", "reviewer": "ana", "note": TEXT}
    assert _post(client, csrf, **body, version=0).status_code == 200

    client, _ = _client(run_dir)  # a restart
    assert "1 / 2 abstained items with a human verdict" in client.get("/").text
    assert client.get("/api/item/i108").json()["version"] == 1
    assert client.get("/item/i108").status_code == 200

    out = run_dir / "review.yaml"
    assert main(["review", "export", str(run_dir), "-o", str(out), "--all"]) == 0
    entries = {e["item_id"]: e for e in yaml.safe_load(out.read_text(encoding="utf-8"))}
    assert_whole(entries["i111"]["response"])
    assert entries["i108"]["status"] != "pending"

    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(run_dir.parents[1])
        assert test_selective.cli_json(apply)["human_verdicts"] == 1  # merged
    verdicts = [json.loads(x) for x in (run_dir / "verdicts.jsonl").read_bytes().split(b"\n") if x]
    (human,) = [v for v in verdicts if v["source"] == "human"]
    assert human["item_id"] == "i108"
    assert_whole(human["note"])
    assert "| human | True | 1 |" in (run_dir / "report.md").read_text(encoding="utf-8")
