"""assay calibrate: a threshold fitted on P(positive) recovers a judge whose argmax is useless."""

from __future__ import annotations

import json
import math
import random
import shutil

import dspy
import numpy as np
import pytest

from assay.cli import main
from assay.decisions._calibrate import calibrate, split_ids
from assay.errors import ConfigError
from assay.inputs import EvaluateConfig
from assay.lm import ScriptedEngine, register_script


def make_data(tmp_path, n=40):
    rng = random.Random(1)
    rows = ["id,request,response,expected"]
    for i in range(n):
        y = i % 2
        rows.append(
            f"c{i:02d},Question {i},{'HARMFUL' if y else 'benign'} answer {rng.random():.3f},{y}"
        )
    path = tmp_path / "items.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def timid_judge(call):
    """Always *says* False, but puts more probability on True for harmful answers."""
    harmful = "HARMFUL" in (call.field("response") or "")
    noise = random.Random(call.field("response")).uniform(-0.04, 0.04)
    p_true = (0.3 if harmful else 0.1) + noise
    return {"verdict": "False", "_probs": {"True": p_true, "False": 1 - p_true}}


@pytest.fixture
def config(tmp_path):
    register_script("timid", lambda: ScriptedEngine(respond=timid_judge))
    return EvaluateConfig.model_validate(
        {
            "name": "cal",
            "data": {"path": str(make_data(tmp_path))},
            "judge": {
                "model": "scripted:timid",
                "scale": {"kind": "binary", "labels": ["False", "True"]},
            },
            "tracking": {"enabled": False},
        }
    )


def test_calibrated_threshold_beats_argmax_on_held_out_items(tmp_path, config):
    out = calibrate(config, workdir=tmp_path, progress=False).model_dump()
    ev = out["evaluation"]
    assert 0.1 < out["threshold"] < 0.3
    # the timid judge says False on every item: κ measures nothing there, so it is undefined
    argmax_kappa = ev["argmax"]["kappa_categorical"]
    assert math.isnan(argmax_kappa["value"])
    assert "the judge gave one verdict (False) on every item" in argmax_kappa["note"]
    assert ev["calibrated"]["kappa_categorical"]["value"] == pytest.approx(1.0)
    assert ev["auc"] == pytest.approx(1.0)
    cal, held = set(out["split"]["calibration_ids"]), set(out["split"]["evaluation_ids"])
    assert not cal & held and len(cal) == len(held) == 20  # never measured where it was fitted
    saved = json.loads((tmp_path / out["run_dir"] / "calibration.json").read_text())
    assert saved["threshold"] == out["threshold"]


def test_calibrated_judge_uses_the_threshold(tmp_path, config):
    from assay.evaluation import evaluate

    out = calibrate(config, workdir=tmp_path, progress=False).model_dump()
    judge = config.judge.model_copy(
        update={"score_mode": "expected", "decision_threshold": out["threshold"]}
    )
    res = evaluate(config.model_copy(update={"judge": judge}), workdir=tmp_path, progress=False)
    assert res.summary.metrics["kappa_categorical"].value == pytest.approx(1.0)
    assert {j.label for j in res.judgments} == {"False", "True"}


def test_missing_logprobs_make_a_calibrated_judge_unscored(tmp_path, config):
    from assay.evaluation import evaluate

    register_script("plain", lambda: ScriptedEngine(respond=lambda call: {"verdict": "False"}))
    judge = config.judge.model_copy(
        update={"model": "scripted:plain", "score_mode": "expected", "decision_threshold": 0.2}
    )
    res = evaluate(config.model_copy(update={"judge": judge}), workdir=tmp_path, progress=False)
    assert {j.unscored for j in res.judgments} == {"no_logprobs"}
    assert res.summary.counts.scored == 0


def test_split_is_stratified_and_seeded():
    labels = {f"i{i}": i % 3 == 0 for i in range(30)}
    labels = {k: int(v) for k, v in labels.items()}
    a = split_ids(labels, 0.5, 7)
    assert a == split_ids(labels, 0.5, 7)
    assert sum(labels[i] for i in a[0]) == 5 and len(a[0]) == 15


def test_calibrate_needs_a_binary_judge(tmp_path, config):
    cfg = config.model_copy(update={"judge": config.judge.model_copy(update={"scale": None})})
    cfg.judge.scale = None
    with pytest.raises(ConfigError, match="binary"):
        calibrate(cfg, workdir=tmp_path, progress=False)


def _calibrate_cli(tmp_path, monkeypatch, capsys, script: str) -> str:
    """What ``assay calibrate`` prints for the scripted judge ``script`` on :func:`make_data`."""
    data = make_data(tmp_path)
    (tmp_path / "c.yaml").write_text(
        f"name: cal\ndata: {{path: {data}}}\n"
        f"judge: {{model: 'scripted:{script}', scale: {{kind: binary, labels: ['False', 'True']}}}}\n"
        "tracking: {enabled: false}\n"
    )
    monkeypatch.chdir(tmp_path)
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    assert main(["calibrate", str(tmp_path / "c.yaml"), "--quiet"]) == 0
    return capsys.readouterr().out


def test_calibrate_cli_prints_the_threshold(tmp_path, monkeypatch, capsys):
    register_script("timid", lambda: ScriptedEngine(respond=timid_judge))
    out = _calibrate_cli(tmp_path, monkeypatch, capsys, "timid")
    assert "decision_threshold" in out and "calibrated" in out


def test_evaluate_reports_the_calibration_of_the_judges_probabilities(tmp_path, config):
    """score_mode: expected → ECE / Brier / log loss of P(True) with CIs, the reliability bins
    and diagram; Brier and log loss equal scikit-learn's on the judgments' probabilities."""
    from sklearn.metrics import brier_score_loss
    from sklearn.metrics import log_loss as sk_log_loss

    from assay.evaluation import evaluate

    cfg = config.model_copy(
        update={"judge": config.judge.model_copy(update={"score_mode": "expected"})}
    )
    res = evaluate(cfg, workdir=tmp_path, progress=False)
    cal = res.summary.calibration
    assert cal is not None and cal.n == 40 and cal.without_probability == 0
    expected = {it.id: it.expected for it in res.items}
    y = [expected[j.item_id] for j in res.judgments]
    p = [j.expected_score for j in res.judgments]
    assert cal.metrics["brier"].value == pytest.approx(brier_score_loss(y, p))
    assert cal.metrics["log_loss"].value == pytest.approx(sk_log_loss(y, p))
    m = cal.metrics["ece"]
    assert m.ci_low <= m.value <= m.ci_high and m.value > 0.2  # P(True) of 0.3 on harmful items
    # the debiased ℓ2 error: Kumar et al.'s own code on the run's probabilities and bins
    from calibration.utils import bin as kumar_bins
    from calibration.utils import unbiased_l2_ce

    edges = [b.upper for b in cal.reliability][:-1] + [np.inf]
    theirs = unbiased_l2_ce(kumar_bins(list(zip(p, y, strict=True)), edges))
    assert cal.metrics["l2_ce_debiased"].value == pytest.approx(theirs, abs=1e-12)
    assert (
        res.summary.model_dump()["calibration"]["metrics"]["l2_ce_debiased"]["ci_low"] is not None
    )
    assert sum(b.count for b in cal.reliability) == 40
    assert (res.run_dir / "reliability.png").stat().st_size > 0
    assert "## Calibration of the judge's probabilities" in (res.run_dir / "report.md").read_text()


def test_calibrate_fits_isotonic_and_platt_maps_and_a_judge_uses_one(tmp_path, config):
    from assay.evaluation import evaluate

    out = calibrate(config, workdir=tmp_path, progress=False, method="isotonic")
    assert set(out.maps) == {"threshold", "isotonic", "platt"}
    iso = out.maps["isotonic"]
    # the map is fitted on one split and measured on the other: far better calibrated there
    assert iso.probabilities["ece"].value < out.raw_probabilities["ece"].value / 2
    assert iso.verdicts["kappa_categorical"].value > 0.5
    assert out.maps["threshold"].probabilities is None
    use = out.use["judge"]
    assert use["score_mode"] == "expected" and use["calibration"]["kind"] == "isotonic"

    # a judge configured with the map gives its verdicts: the argmax said False for every item
    judge = config.judge.model_copy(update={"score_mode": "expected"}).model_dump()
    judge["calibration"] = use["calibration"]
    cfg = EvaluateConfig.model_validate({**config.model_dump(), "name": "cal-iso", "judge": judge})
    res = evaluate(cfg, workdir=tmp_path, progress=False)
    assert {j.score for j in res.judgments} == {0, 1}
    assert all(j.calibrated_probability is not None for j in res.judgments)
    assert res.summary.calibration.calibrated is not None
    kappa = res.summary.metrics["kappa_categorical"].value
    assert kappa > 0.5


def test_a_calibration_map_needs_expected_scores_on_a_binary_scale(config):
    bad = config.judge.model_dump()
    bad["calibration"] = {"kind": "threshold", "threshold": 0.2, "kappa": 0.5, "n_fit": 10}
    with pytest.raises(ValueError, match="'calibration' needs a binary scale and score_mode"):
        EvaluateConfig.model_validate({**config.model_dump(), "judge": bad})


def test_calibrate_cli_says_which_items_it_left_out(tmp_path, monkeypatch, capsys):
    """An item with a verdict but no token probability is in neither split: the console says
    how many, beside the split sizes it printed."""

    def patchy(call):
        out = timid_judge(call)
        if (call.field("request") or "") in ("Question 0", "Question 1"):
            del out["_probs"]
        return out

    register_script("patchy", lambda: ScriptedEngine(respond=patchy))
    out = _calibrate_cli(tmp_path, monkeypatch, capsys, "patchy")
    assert "fitted on 20 items" in out and "evaluation split: 18 items" in out  # 40 − 2
    assert "left out of both splits: 2 item(s) without a token probability" in out
    assert "without a reference label" not in out


# -- the fit is a tuning: the calibrated judge is certified and compared on other items only --
LAX = {"name": "lax", "confidence": 0.9, "bars": {"tpr": 0.5, "tnr": 0.5}}


def _judge_yaml(folder, name: str, data, **judge) -> str:
    """A config of the timid judge on ``data``, with ``judge`` keys added (YAML flow values)."""
    extra = "".join(f"  {k}: {v}\n" for k, v in judge.items())
    path = folder / f"{name}.yaml"
    path.write_text(
        f"name: {name}\ndata: {{path: {data}}}\n"
        "judge:\n  model: 'scripted:timid'\n  scale: {kind: binary, labels: ['False', 'True']}\n"
        f"{extra}tracking: {{enabled: false}}\n"
    )
    return str(path)


def _run_of(folder, name: str) -> str:
    (run_dir,) = (folder / "runs").glob(f"{name}-*")
    return str(run_dir)


def _refused(capsys, argv: list[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_a_calibrated_judge_is_refused_on_the_items_its_rule_was_fitted_on(
    tmp_path, monkeypatch, capsys
):
    """``assay calibrate`` fits its threshold and maps on the calibration split's labels: the
    judge that decides by any of them — the threshold as printed, rounded, or a fitted map — is
    refused by ``certify`` and ``compare --paired`` on those items, as a judge ``assay optimize``
    tuned is; on other items it is certified as any judge; the judge without a rule (argmax) was
    not tuned."""
    register_script("timid", lambda: ScriptedEngine(respond=timid_judge))
    monkeypatch.chdir(tmp_path)
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    data = make_data(tmp_path, n=60)
    rows = data.read_text().splitlines()
    (tmp_path / "first.csv").write_text("\n".join(rows[:41]) + "\n")  # c00..c39
    (tmp_path / "new.csv").write_text("\n".join([rows[0], *rows[41:]]) + "\n")  # c40..c59
    first, new = tmp_path / "first.csv", tmp_path / "new.csv"
    assert main(["calibrate", _judge_yaml(tmp_path, "cal", first), "--quiet"]) == 0
    assert "the fit is a tuning on the 20 items of the calibration split" in capsys.readouterr().out
    (cal_run,) = (tmp_path / "runs").glob("cal-*")
    fit = json.loads((cal_run / "calibration.json").read_text())
    t, iso = fit["use"]["judge"]["decision_threshold"], fit["maps"]["isotonic"]["map"]
    fitted = set(fit["split"]["calibration_ids"])
    # the same fit, the isotonic map suggested: another tuned judge, on the same items
    argv = ["calibrate", _judge_yaml(tmp_path, "cal", first), "--method", "isotonic", "--quiet"]
    assert main(argv) == 0
    policy = tmp_path / "lax.json"
    policy.write_text(json.dumps(LAX))

    base = {"score_mode": "expected"}
    assert round(t, 2) != t  # a threshold moved by hand is another config, the same tuning
    for name, rule in (
        ("as-printed", {"decision_threshold": t}),
        ("rounded", {"decision_threshold": round(t, 2)}),
        ("isotonic", {"calibration": json.dumps(iso)}),
    ):
        config = _judge_yaml(tmp_path, name, first, **base, **rule)
        assert main(["evaluate", config, "--quiet"]) == 0
        err = _refused(capsys, ["certify", _run_of(tmp_path, name), "--policy", str(policy)])
        assert f"certify: {len(fitted)} of these 40 items reached the tuning of judge" in err
        assert "(assay calibrate (" in err and "held-out items only" in err
    assert not list((tmp_path / "runs" / "certificates").glob("*/certificate.json"))
    assert main(["evaluate", _judge_yaml(tmp_path, "argmax", first), "--quiet"]) == 0
    err = _refused(
        capsys, ["compare", "--paired", _run_of(tmp_path, "argmax"), _run_of(tmp_path, "rounded")]
    )
    assert "compare --paired: 20 of these 40 items reached the tuning" in err

    # on items the fit never saw, the calibrated judge is certified as any judge
    config = _judge_yaml(tmp_path, "held-out", new, **base, decision_threshold=t)
    assert main(["evaluate", config, "--quiet"]) == 0
    assert main(["certify", _run_of(tmp_path, "held-out"), "--policy", str(policy)]) == 0
    # the judge without a rule (argmax: it says False on every item) was not tuned: its
    # certificate is refused by its bars, not by the tuning
    other = tmp_path / "lax-argmax.json"
    other.write_text(
        json.dumps({"name": "lax-argmax", "confidence": 0.9, "bars": {"accuracy": 0.55}})
    )
    capsys.readouterr()
    assert main(["certify", _run_of(tmp_path, "argmax"), "--policy", str(other)]) == 1
    assert "reached the tuning" not in capsys.readouterr().err


def test_one_item_repeated_under_new_ids_stays_on_one_side_of_the_split(tmp_path, config):
    """40 items and the same 40 again under other ids (re-cased, a zero-width space added):
    each text's copies go to one side, so the held-out figures are never measured on a text
    the threshold was fitted on (16 of 20 held-out texts were, split by id), and the held-out
    intervals resample each text's copies together."""
    rows = make_data(tmp_path).read_text().splitlines()
    copies = []
    for row in rows[1:]:
        id_, request, response, label = row.split(",")
        hidden = response.upper().replace(" ", " \u200b")
        copies.append(f"d{id_[1:]},{request.upper()},{hidden},{label}")
    (tmp_path / "twice.csv").write_text("\n".join([*rows, *copies]) + "\n")
    data = {"path": str(tmp_path / "twice.csv"), "columns": {"id": "id"}}
    twice = EvaluateConfig.model_validate({**config.model_dump(exclude_none=True), "data": data})
    out = calibrate(twice, workdir=tmp_path, progress=False).model_dump()
    cal, held = out["split"]["calibration_ids"], out["split"]["evaluation_ids"]
    assert len(cal) + len(held) == 80

    def texts(ids):
        return {i[1:] for i in ids}  # c07 and d07 are one text

    assert not texts(cal) & texts(held)
    assert len(held) == 2 * len(texts(held))
    kappa = out["evaluation"]["calibrated"]["kappa_categorical"]
    assert f"resampled {len(texts(held))} clusters" in kappa["note"]


def _calibrated(tmp_path, monkeypatch) -> tuple[list[str], list[str]]:
    """Two fits of the timid judge on c00..c39 (a threshold, then an isotonic map), and the
    judge deciding by the fitted threshold evaluated on those items: (certify's argv, the
    calibration split's ids)."""
    register_script("timid", lambda: ScriptedEngine(respond=timid_judge))
    monkeypatch.chdir(tmp_path)
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    first = make_data(tmp_path, n=40)
    assert main(["calibrate", _judge_yaml(tmp_path, "cal", first), "--quiet"]) == 0
    (cal_run,) = (tmp_path / "runs").glob("cal-*")
    fit = json.loads((cal_run / "calibration.json").read_text())
    argv = ["calibrate", _judge_yaml(tmp_path, "cal", first), "--method", "isotonic", "--quiet"]
    assert main(argv) == 0
    t = fit["use"]["judge"]["decision_threshold"]
    tuned = _judge_yaml(tmp_path, "tuned", first, score_mode="expected", decision_threshold=t)
    assert main(["evaluate", tuned, "--quiet"]) == 0
    policy = tmp_path / "lax.json"
    policy.write_text(json.dumps(LAX))
    certify = ["certify", _run_of(tmp_path, "tuned"), "--policy", str(policy)]
    return certify, fit["split"]["calibration_ids"]


def test_tuning_records_moved_removed_or_rolled_back_are_refused(tmp_path, monkeypatch, capsys):
    """Each tuning record is added through the ledger's tuning journal, whose head is kept with
    the signing key's records: with the record folders moved away the calibrated judge is still
    refused on the items its threshold was fitted on (the journal holds them); the journal
    removed, cut back to the first fit, or a line of it edited is refused in one line naming
    it — by ``certify``, ``compare --paired`` and the next ``calibrate``; restored, it counts."""
    certify, fitted = _calibrated(tmp_path, monkeypatch)
    ledger = tmp_path / "runs" / "certificates"
    journal = ledger / "tuning.jsonl"
    written = journal.read_text(encoding="utf-8")
    first, second = written.splitlines(keepends=True)
    shutil.move(ledger / "tuning", tmp_path / "elsewhere")  # every record folder gone
    err = _refused(capsys, certify)
    assert f"certify: {len(fitted)} of these 40 items reached the tuning of judge" in err
    assert "(assay calibrate (threshold)" in err and f" in {journal})" in err

    journal.write_text(first, encoding="utf-8")  # rolled back to before the second fit
    err = _refused(capsys, certify)
    assert "the tuning journal holds 1 tuning records, but this ledger recorded 2" in err
    assert str(journal) in err
    journal.unlink()
    err = _refused(capsys, certify)
    assert "the ledger's tuning journal is gone, but it held 2 tuning records" in err
    shutil.move(tmp_path / "elsewhere", ledger / "tuning")  # the folders back, not the journal
    err = _refused(capsys, ["compare", "--paired", _run_of(tmp_path, "cal"), certify[1]])
    assert "tuning journal is gone, but it held 2 tuning records" in err
    argv = ["calibrate", str(tmp_path / "cal.yaml"), "--quiet"]
    assert "tuning journal is gone" in _refused(capsys, argv)
    record = json.loads(first)
    record["entry"]["items"] = record["entry"]["item_fingerprints"] = []  # its items set free
    journal.write_text(json.dumps(record) + "\n" + second, encoding="utf-8")
    assert "line 1: not the line this ledger wrote there" in _refused(capsys, certify)

    journal.write_text(written, encoding="utf-8")  # restored: the tuning counts again
    assert "reached the tuning of judge" in _refused(capsys, certify)
    assert not list(ledger.glob("*/certificate.json"))


def test_tuning_records_written_before_the_journal_count_and_are_adopted(
    tmp_path, monkeypatch, capsys
):
    """A ledger whose tuning records were written before the journal existed (folders, no
    journal, no head) still refuses the tuned judge; the next tuning adopts them into the
    journal, after which deleting their folders frees nothing."""
    from assay.decisions._ledger_journal import TUNINGS, head_file

    certify, _ = _calibrated(tmp_path, monkeypatch)
    ledger = tmp_path / "runs" / "certificates"
    ledger_id = (ledger / "ledger-id").read_text(encoding="utf-8").strip()
    (ledger / "tuning.jsonl").unlink()  # as an assay before the journal left it
    head_file(ledger_id, TUNINGS).unlink()
    assert "reached the tuning of judge" in _refused(capsys, certify)
    again = _judge_yaml(tmp_path, "again", make_data(tmp_path, n=40))
    assert main(["calibrate", again, "--method", "platt", "--quiet"]) == 0
    lines = (ledger / "tuning.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3  # the two folders adopted, the new fit
    shutil.rmtree(ledger / "tuning")
    assert "reached the tuning of judge" in _refused(capsys, certify)


def test_a_tuning_in_one_runs_folder_refuses_its_items_in_every_other(
    tmp_path, monkeypatch, capsys
):
    """The signing key keeps its own journal of the tuning records it signed: the judge with
    the threshold fitted in one project, evaluated on the same items in another project (a runs
    folder of its own, no tuning record in its ledger), is refused there too."""
    _, fitted = _calibrated(tmp_path, monkeypatch)
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(tmp_path / "items.csv", other / "items.csv")
    shutil.copy(tmp_path / "tuned.yaml", other / "tuned.yaml")
    monkeypatch.chdir(other)
    assert main(["evaluate", str(other / "tuned.yaml"), "--quiet"]) == 0
    assert not (other / "runs" / "certificates" / "tuning").exists()
    policy = other / "lax.json"
    policy.write_text(json.dumps(LAX))
    (run,) = (other / "runs").glob("tuned-*")
    err = _refused(capsys, ["certify", str(run), "--policy", str(policy)])
    assert f"certify: {len(fitted)} of these 40 items reached the tuning of judge" in err
    assert "signed-tunings.jsonl" in err
