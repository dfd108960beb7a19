"""assay conformal end to end: two labelled evaluate runs of one ordinal judge on the loopback
stub server answering token logprobs (score_mode: expected) → q̂ calibrated on the first → sets
for the second; and the refusals (no probabilities, another judge config)."""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from assay.cli import main
from assay.errors import RunError
from assay.lm import StubServer
from assay.metrics import calibrate_conformal, conformal_rank, probability_matrix
from assay.runners import write_report
from assay.runs._seal import seal
from tests.stub_judge import stub_config
from tests.web.test_report_parity import assert_same_sections, both

SCORES = [1, 2, 3, 4, 5]


def reference(k: int) -> int:
    return SCORES[(k * 7) % 5]


def judge_probs(k: int) -> dict[str, float]:
    """Item k's verdict distribution: a discretised Gaussian around its reference, shifted by
    seeded noise, of a seeded width (a fair but uncertain judge)."""
    rng = np.random.default_rng(k)
    centre = reference(k) + rng.normal(0.2, 0.9)
    logits = -0.5 * ((np.array(SCORES) - centre) / rng.uniform(0.5, 1.5)) ** 2
    p = np.exp(logits - logits.max())
    return {str(s): float(v) for s, v in zip(SCORES, p / p.sum(), strict=True)}


def from_request(body: dict) -> dict[str, float] | None:
    text = " ".join(str(m.get("content")) for m in body.get("messages") or [])
    found = re.search(r"item (\d+)\?", text)
    return judge_probs(int(found.group(1))) if found else None


def write_items(path: Path, ks: range) -> Path:
    rows = ["id,request,response,expected"]
    rows += [f"i{k},What colour is item {k}?,Item {k} is blue.,{reference(k)}" for k in ks]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Calibration (60 items) and apply (30 items) runs of one judge config, and a run of
    another rubric and one without probabilities."""
    tmp = tmp_path_factory.mktemp("conformal")
    ordinal = {"scale": {"kind": "ordinal", "min": 1, "max": 5}, "score_mode": "expected"}
    out = {}
    with StubServer(verdict_probs=from_request) as stub:

        def evaluate(name: str, ks: range, **judge) -> Path:
            csv = write_items(tmp / f"{name}.csv", ks)
            cfg = stub_config(
                tmp, csv, stub.base_url, name=name, file=f"{name}.yaml", judge={**ordinal, **judge}
            )
            assert main(["evaluate", str(cfg), "--quiet"]) == 0
            return next((tmp / "runs").glob(f"{name}-*"))

        import os

        here = Path.cwd()
        os.chdir(tmp)  # the runs go under tmp/runs, as a user's would under their folder
        try:
            out["cal"] = evaluate("cal", range(60))
            out["app"] = evaluate("app", range(60, 90))
            out["other"] = evaluate("other", range(60, 70), rubric="Another rubric.")
            out["plain"] = evaluate("plain", range(10), score_mode="argmax")
        finally:
            os.chdir(here)
    out["tmp"] = tmp
    return out


def judgments(run_dir: Path) -> dict[str, dict]:
    lines = (run_dir / "judgments.jsonl").read_text().splitlines()
    return {j["item_id"]: j for j in map(json.loads, lines)}


def test_calibrate_on_one_run_apply_to_another(runs, capsys, monkeypatch):
    tmp, cal, app = runs["tmp"], runs["cal"], runs["app"]
    monkeypatch.chdir(tmp)
    # the judgments carry the distribution the stub's logprobs gave
    assert judgments(cal)["i3"]["probabilities"] == pytest.approx(judge_probs(3))
    args = ["conformal", str(cal), "--alpha", "0.2", "--apply", str(app), "--out", "sets.json"]
    assert main([*args, "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert (s["method"], s["n_calibration"], s["n_items"], s["n_sets"]) == ("ordinal", 60, 30, 30)
    # q̂ from the calibration run's judgments, recomputed here: ids and labels line up
    cal_j = judgments(cal)
    ids = sorted(cal_j)
    probs = probability_matrix([cal_j[i]["probabilities"] for i in ids], SCORES)
    labels = [reference(int(i[1:])) - 1 for i in ids]
    expected = calibrate_conformal(probs, labels, 0.2, "ordinal")
    assert s["rank"] == conformal_rank(60, 0.2) == 49
    assert s["qhat"] == pytest.approx(expected.qhat)
    # every applied item: a contiguous interval of scores; covered iff the reference is inside
    lines = [json.loads(x) for x in (Path(s["run_dir"]) / "conformal_sets.jsonl").open()]
    assert len(lines) == 30 and {x["item_id"] for x in lines} == {f"i{k}" for k in range(60, 90)}
    for x in lines:
        assert x["set"] == list(range(x["set"][0], x["set"][-1] + 1)) and x["size"] == len(x["set"])
        assert x["covered"] == (x["reference"] in x["set"]) and x["reference"] == reference(
            int(x["item_id"][1:])
        )
    covered = sum(x["covered"] for x in lines)
    assert s["coverage"]["value"] == pytest.approx(covered / 30) and s["coverage"]["n"] == 30
    assert s["mean_size"] == pytest.approx(np.mean([x["size"] for x in lines]))
    assert sum(c["n"] for c in s["per_class"]) == 30
    # --out: the calibration bound to the judge config, and the same sets
    saved = json.loads((tmp / "sets.json").read_text())
    assert saved["config_hash"] == s["config_hash"] and saved["sets"] == lines
    # the report: report.md and report.html with the same tables, and the dispatch by kind
    md = (Path(s["run_dir"]) / "report.md").read_text()
    assert "## Coverage per reference" in md and "## Set sizes" in md
    tables = both(Path(s["run_dir"]))
    assert [t[:3] for t in tables["report.html"]] == [t[:3] for t in tables["report.md"]][:2]
    assert_same_sections(Path(s["run_dir"]), "Coverage per reference", "Set sizes")
    assert (Path(s["run_dir"]) / "report.html").unlink() is None
    write_report(Path(s["run_dir"]))
    assert "Coverage per reference" in (Path(s["run_dir"]) / "report.html").read_text()
    # the console; the same command again is the same run, re-read
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "q̂ = " in text and "coverage " in text and "conformal_sets.jsonl" in text
    assert str(s["run_dir"]) in text and len(list((tmp / "runs").glob("cal-conformal-*"))) == 1
    # the applied run copied elsewhere: the same sets (the run is its content), re-read, and
    # the line names the directory read this time, not the first run's
    copy = tmp / "copied-app"
    shutil.copytree(app, copy)
    assert main(["conformal", str(cal), "--alpha", "0.2", "--apply", str(copy)]) == 0
    text = capsys.readouterr().out
    assert f"applied to {copy}:" in text and f"applied to {app}:" not in text


def test_calibration_items_under_new_ids_are_overlap_not_coverage(tmp_path, capsys, monkeypatch):
    """The calibration items judged again under other ids (the same texts, one of them with a
    zero-width space slipped in, one with look-alike letters of other scripts), beside ten new
    items: the renamed ones are counted as overlap, by the text the judge read, and the
    coverage is over the ten new items alone."""
    monkeypatch.chdir(tmp_path)
    ordinal = {"scale": {"kind": "ordinal", "min": 1, "max": 5}, "score_mode": "expected"}
    rows = ["id,request,response,expected"]
    renamed = [
        *rows,
        *(f"x{k},What colour is item {k}?,Item {k} is blue.,{reference(k)}" for k in range(20)),
    ]
    renamed[1] = renamed[1].replace("blue", "bl\u200bue")
    renamed[2] = renamed[2].replace("Item", "\u0399tem").replace("blue", "blu\u0435")
    renamed += [
        f"i{k},What colour is item {k}?,Item {k} is blue.,{reference(k)}" for k in range(20, 30)
    ]
    (tmp_path / "renamed.csv").write_text("\n".join(renamed) + "\n", encoding="utf-8")
    with StubServer(verdict_probs=from_request) as stub:
        for name, csv in (
            ("cal", write_items(tmp_path / "cal.csv", range(20))),
            ("renamed", tmp_path / "renamed.csv"),
        ):
            cfg = stub_config(
                tmp_path,
                csv,
                stub.base_url,
                name="same",
                file=f"{name}.yaml",
                judge=ordinal,
                output_dir=name,
            )
            assert main(["evaluate", str(cfg), "--quiet"]) == 0
    (cal,) = (tmp_path / "cal").glob("same-*")
    (app,) = (tmp_path / "renamed").glob("same-*")
    capsys.readouterr()
    assert main(["conformal", str(cal), "--alpha", "0.2", "--apply", str(app), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert (s["n_items"], s["overlap"], s["coverage"]["n"]) == (30, 20, 10)
    lines = [json.loads(x) for x in (Path(s["run_dir"]) / "conformal_sets.jsonl").open()]
    assert {x["item_id"] for x in lines if x["calibration"]} == {f"x{k}" for k in range(20)}
    assert main(["conformal", str(cal), "--alpha", "0.2", "--apply", str(app)]) == 0
    text = capsys.readouterr().out
    assert "20 of these items are calibration items" in text and "on 10 labelled items" in text


def test_holdout_of_one_run(runs, capsys, monkeypatch):
    monkeypatch.chdir(runs["tmp"])
    argv = ["conformal", str(runs["cal"]), "--holdout", "0.25", "--seed", "3", "--json"]
    assert main(argv) == 0
    s = json.loads(capsys.readouterr().out)
    assert (s["n_calibration"], s["n_sets"], s["overlap"], s["in_sample"]) == (45, 15, 0, False)
    lines = [json.loads(x) for x in (Path(s["run_dir"]) / "conformal_sets.jsonl").open()]
    assert not any(x["calibration"] for x in lines)
    # categorical scores on request: LAC sets need not be intervals, but are sets of scores
    assert main([*argv, "--method", "lac"]) == 0
    assert json.loads(capsys.readouterr().out)["method"] == "lac"


def test_refusals(runs, capsys, monkeypatch):
    monkeypatch.chdir(runs["tmp"])
    assert main(["conformal", str(runs["plain"])]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        f"run {runs['plain']} has no verdict probabilities; judge with score_mode: expected"
    )
    assert len(err.splitlines()) == 1
    assert main(["conformal", str(runs["cal"]), "--apply", str(runs["other"])]) == 2
    err = capsys.readouterr().err
    assert "a run of another judge config" in err and len(err.strip().splitlines()) == 1
    assert (
        main(["conformal", str(runs["cal"]), "--apply", str(runs["app"]), "--holdout", "0.5"]) == 2
    )
    assert "give one" in capsys.readouterr().err
    assert main(["conformal", str(runs["cal"]), "--alpha", "1.5"]) == 2
    assert "argument --alpha: must be less than 1, got 1.5" in capsys.readouterr().err


def test_refuses_a_run_whose_data_changed_since(runs, capsys, monkeypatch):
    monkeypatch.chdir(runs["tmp"])
    csv = runs["tmp"] / "app.csv"
    before = csv.read_text()
    try:
        csv.write_text(
            before.replace(
                "i60,What colour is item 60?,Item 60 is blue.,1",
                "i60,What colour is item 60?,Item 60 is blue.,2",
            )
        )
        assert csv.read_text() != before
        assert main(["conformal", str(runs["cal"]), "--apply", str(runs["app"])]) == 2
        err = capsys.readouterr().err
        assert "changed since the run judged it" in err and len(err.strip().splitlines()) == 1
    finally:
        csv.write_text(before)


def conformal_run(runs, capsys, alpha: str) -> tuple[list[str], Path]:
    """A conformal run of the module's calibration run applied to its apply run (each test its
    own ``alpha``: its own run directory), and the arguments that made it."""
    args = ["conformal", str(runs["cal"]), "--alpha", alpha, "--apply", str(runs["app"])]
    assert main([*args, "--json"]) == 0
    return args, Path(json.loads(capsys.readouterr().out)["run_dir"])


def forge_uncovered(sets: Path) -> int:
    """The items the sets left uncovered, edited to covered with the whole scale as their set
    (as an auditor did): how many."""
    lines = [json.loads(x) for x in sets.open()]
    forged = [x for x in lines if x["covered"] is False]
    for x in forged:
        x.update(covered=True, set=SCORES, size=len(SCORES))
    sets.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return len(forged)


def test_the_sets_are_sealed_and_an_edited_set_is_neither_drawn_nor_kept(
    runs, capsys, monkeypatch, caplog
):
    """The sets are sealed with the run: edited once it finished, the report is not drawn
    again from them (one line naming the file, as an edited judgments.jsonl is), and the same
    command again makes them again from the runs they came from, saying why."""
    monkeypatch.chdir(runs["tmp"])
    args, run_dir = conformal_run(runs, capsys, "0.15")
    sets = run_dir / "conformal_sets.jsonl"
    seal = json.loads((run_dir / "run.json").read_text())["seal"]
    assert set(seal["files"]) == {"config.yaml", "metrics.json", "conformal_sets.jsonl"}
    made = sets.read_text()
    assert write_report(run_dir).is_file()  # untouched: drawn again
    assert forge_uncovered(sets) > 0
    with pytest.raises(RunError) as refused:
        write_report(run_dir)
    said = str(refused.value)
    assert said.startswith(f"{run_dir}: conformal_sets.jsonl is not the file the run sealed")
    assert "\n" not in said
    with caplog.at_level(logging.WARNING):
        assert main(args) == 0
    warned = [r.getMessage() for r in caplog.records if "conformal_sets.jsonl" in r.getMessage()]
    assert len(warned) == 1 and "is not the file the run sealed" in warned[0]
    assert sets.read_text() == made  # made again from the evaluate runs, and sealed anew
    assert write_report(run_dir).is_file()


def test_a_run_sealed_before_its_sets_were_is_read_and_drawn_and_says_so(
    runs, capsys, monkeypatch, caplog
):
    """A conformal run sealed before its sets were (its seal lists config.yaml and metrics.json
    only) is read back and drawn again as before; where its sets are shown — its report's
    items, the console that names the file — one line says nothing vouches for them."""
    monkeypatch.chdir(runs["tmp"])
    args, run_dir = conformal_run(runs, capsys, "0.35")
    state = json.loads((run_dir / "run.json").read_text())
    state["seal"] = seal(
        run_dir,
        ("config.yaml", "metrics.json"),
        kind=state["kind"],
        run_hash=state["run_hash"],
        instance=state.get("instance"),
    )
    (run_dir / "run.json").write_text(json.dumps(state))
    html = write_report(run_dir).read_text()
    assert html.count("conformal_sets.jsonl is not vouched for") == 1
    with caplog.at_level(logging.WARNING):
        assert main(args) == 0
    warned = [r.getMessage() for r in caplog.records if "not vouched for" in r.getMessage()]
    assert len(warned) == 1 and warned[0].startswith(f"{run_dir}: conformal_sets.jsonl")
    assert "coverage " in capsys.readouterr().out
    assert json.loads((run_dir / "run.json").read_text())["seal"] == state["seal"]
