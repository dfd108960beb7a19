"""An Inspect log run with several epochs, judged by ``assay evaluate`` through the command line
on the loopback stub: each sample and epoch is an item, but the epochs of a sample share its input
and its reference, so what is computed over them takes the samples as the unit — evaluate's
intervals and ``compare --paired``'s tests resample the samples with all their epochs, and
``certify`` bounds a rate at the samples' number of trials — never as if each epoch were a new
sample."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest

from assay.cli import main
from assay.lm import StubServer
from assay.lm._stub_server import default_respond
from assay.metrics import clopper_pearson_interval
from assay.metrics._report import agreement_metrics

pytest.importorskip("inspect_ai")

from inspect_ai.log import read_eval_log  # noqa: E402

from tests.inspect_logs import Epoch, write_inspect_log  # noqa: E402

SAMPLES, EPOCHS = 24, 3


def refused(sample: int) -> bool:
    return sample % 3 == 0


def judged_refusal(sample: int, epoch: int, judge: str = "stub-model") -> bool:
    """The stub judges: right but on a few samples, where they are wrong in every epoch or in
    one (``stub-b`` on fewer than the others)."""
    if judge == "stub-b":
        wrong = sample == 1 or (sample == 7 and epoch == 2)
    else:
        wrong = sample in (1, 2, 5) or (sample in (7, 8) and epoch == 2)
    return refused(sample) != wrong


def write_log(
    path: Path, epochs: range = range(1, EPOCHS + 1), unlabelled: frozenset[int] = frozenset()
) -> Path:
    """The log: ``SAMPLES`` samples, each run in ``epochs``; a sample in ``unlabelled`` has an
    empty refusal score (no reference)."""
    rows = [
        Epoch(
            f"s{s}",
            e,
            f"Request {s}",
            f"Sample {s} epoch {e}: " + ("I cannot help." if refused(s) else "Here it is."),
            {"refusal": "" if s in unlabelled else int(refused(s))},
        )
        for s in range(SAMPLES)
        for e in epochs
    ]
    return write_inspect_log(path, rows, task="refusals", epochs=EPOCHS)


def respond(body: dict) -> str:
    s, e = map(int, re.search(r"Sample (\d+) epoch (\d+)", json.dumps(body["messages"])).groups())
    out = json.loads(default_respond(body))
    out["verdict"] = str(judged_refusal(s, e, body["model"]))
    return json.dumps(out)


def verdict_probs(body: dict) -> dict[str, float]:
    """The stub judge's verdict distribution (``score_mode: expected``): its verdict with a
    probability that moves a little from epoch to epoch."""
    s, e = map(int, re.search(r"Sample (\d+) epoch (\d+)", json.dumps(body["messages"])).groups())
    sure = 0.6 + 0.1 * ((s + e) % 4)
    yes = sure if judged_refusal(s, e) else 1 - sure
    return {"True": yes, "False": 1 - yes}


def evaluate_log(
    folder: Path,
    log: Path,
    stub: StubServer,
    model: str = "stub-model",
    data: dict | None = None,
    **judge: object,
) -> Path:
    """``assay evaluate`` of the log by ``model`` on the stub, through the command line in
    ``folder``; its run directory."""
    config = {
        "name": f"epochs-{model}",
        "data": {
            "path": str(log),
            "format": "inspect",
            "expected": "scores.refusal.value",
            **(data or {}),
        },
        "judge": {
            "name": "refusal-judge",
            "model": f"openai/{model}",
            "api_base": stub.base_url,
            "rubric": "Did the model refuse?",
            "scale": {"kind": "binary", "labels": ["False", "True"]},
            **judge,
        },
        "concurrency": 8,
        "tracking": {"enabled": False},
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(json.dumps(config), encoding="utf-8")
    cwd = Path.cwd()
    try:
        os.chdir(folder)
        assert main(["evaluate", str(folder / "config.yaml"), "--quiet"]) == 0
    finally:
        os.chdir(cwd)
    (run,) = (folder / "runs").iterdir()
    return run


def pairs(log: Path, *judges: str) -> tuple[np.ndarray, list[np.ndarray], list[str]]:
    """The references, each judge's verdicts and the samples, as Inspect's own reader lists
    the log's samples and epochs."""
    samples = read_eval_log(str(log)).samples
    assert len(samples) == SAMPLES * EPOCHS
    ref = np.array([int(refused(int(s.id[1:]))) for s in samples])
    verdicts = [
        np.array([int(judged_refusal(int(s.id[1:]), s.epoch, j)) for s in samples]) for j in judges
    ]
    return ref, verdicts, [str(s.id) for s in samples]


def test_every_interval_resamples_the_samples_with_all_their_epochs(tmp_path):
    log = write_log(tmp_path / "refusals.eval")
    with StubServer(respond=respond) as stub:
        run = evaluate_log(tmp_path, log, stub)
    got = json.loads((run / "metrics.json").read_text())["metrics"]

    ref, (cand,), clusters = pairs(log, "stub-model")
    want = agreement_metrics(
        ref, cand, kind="binary", k=2, clusters=clusters, labels=["False", "True"]
    )
    assert got.keys() == want.keys()
    for name, m in got.items():
        assert m["ci_method"] == want[name].ci_method, name
        assert m["note"] == want[name].note, name
        assert m["n"] == want[name].n and m["value"] == pytest.approx(want[name].value)
        assert (m["ci_low"], m["ci_high"]) == pytest.approx((want[name].ci_low, want[name].ci_high))
    assert got["accuracy"]["count"] == int((ref == cand).sum())
    assert got["accuracy"]["ci_method"] == "cluster bootstrap"
    assert f"resampled {SAMPLES} clusters" in got["accuracy"]["note"]
    # the judge flagged every refusal: no resample can move its miss rate off 0, so the interval
    # is the exact one over the 8 refused samples, not over their 24 epochs
    fnr = got["false_negative_rate"]
    assert (fnr["value"], fnr["n"], fnr["ci_method"]) == (0.0, 24, "Clopper–Pearson over clusters")
    assert fnr["ci_high"] == pytest.approx(clopper_pearson_interval(0, 8)[1])

    # as if each epoch were a new sample, the interval would be narrower than it is
    independent = agreement_metrics(ref, cand, kind="binary", k=2, labels=["False", "True"])
    kappa = got["kappa_categorical"]
    assert (
        independent["kappa_categorical"].ci_high - independent["kappa_categorical"].ci_low
        < kappa["ci_high"] - kappa["ci_low"]
    )


def test_a_paired_comparison_resamples_the_samples_with_all_their_epochs(
    tmp_path, capsys, monkeypatch
):
    """``compare --paired`` of two judges on the log: every difference is tested by the paired
    cluster bootstrap over the samples (McNemar's test would take each epoch for a new
    discordant sample), its figures those of the comparison over the samples as clusters."""
    from assay.metrics import paired_comparison

    log = write_log(tmp_path / "refusals.eval")
    with StubServer(respond=respond) as stub:
        a = evaluate_log(tmp_path / "a", log, stub, "stub-a")
        b = evaluate_log(tmp_path / "b", log, stub, "stub-b")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["compare", "--paired", str(a), str(b), "--no-log", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["comparison"]

    ref, (va, vb), clusters = pairs(log, "stub-a", "stub-b")
    kw = {"kind": "binary", "k": 2, "labels": ["False", "True"]}
    want = paired_comparison(ref, va, vb, clusters=clusters, **kw)
    assert got["n"] == SAMPLES * EPOCHS and f"The {SAMPLES} clusters" in got["note"]
    assert [d["metric"] for d in got["differences"]] == [d.metric for d in want.differences]
    for d, w in zip(got["differences"], want.differences, strict=True):
        assert d["test"] == "paired cluster bootstrap", d["metric"]
        assert (d["delta"], d["ci_low"], d["ci_high"], d["p_value"], d["p_adjusted"]) == (
            pytest.approx((w.delta, w.ci_low, w.ci_high, w.p_value, w.p_adjusted))
        ), d["metric"]
    # as if each epoch were a new sample, McNemar's test would find B's accuracy better
    naive = paired_comparison(ref, va, vb, **kw)
    accuracy = {d["metric"]: d for d in got["differences"]}["accuracy"]
    naive_accuracy = {d.metric: d for d in naive.differences}["accuracy"]
    assert naive_accuracy.test == "McNemar exact" and naive_accuracy.p_value < accuracy["p_value"]


def test_a_certificate_bounds_the_rates_over_the_samples(tmp_path, capsys, monkeypatch):
    """``assay certify`` of the run: each rate is bounded at the samples' number of trials (three
    scored epochs each), the successes in proportion — scipy's Beta quantiles — not as if the
    72 items were 72 samples; κ by the cluster bootstrap."""
    from scipy.stats import beta

    log = write_log(tmp_path / "refusals.eval")
    with StubServer(respond=respond) as stub:
        run = evaluate_log(tmp_path, log, stub)
    policy = {"name": "gate", "confidence": 0.9, "bars": {"tpr": 0.7, "tnr": 0.6,
              "kappa_categorical": 0.3}}  # fmt: skip
    (tmp_path / "gate.yaml").write_text(json.dumps(policy), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    code = main(["certify", str(run), "--policy", str(tmp_path / "gate.yaml"), "--json"])
    cert = json.loads(capsys.readouterr().out)
    tpr, tnr, kappa = cert["results"]
    delta = 0.1 / 3
    # 8 refused samples, every epoch flagged; 16 others, 37 of their 48 epochs judged right
    assert (tpr["successes"], tpr["n"], tnr["successes"], tnr["n"]) == (24, 24, 37, 48)
    assert tpr["method"] == tnr["method"] == "clopper-pearson-clusters"
    assert tpr["bound"] == pytest.approx(delta ** (1 / 8))
    x = 37 / 48 * 16
    assert tnr["bound"] == pytest.approx(beta.ppf(delta, x, 16 - x + 1))
    assert kappa["method"] == "cluster-bootstrap" and "resampled 24 clusters" in kappa["note"]
    # counted as 48 independent negatives, the false alarms would look rarer than they are
    assert tnr["bound"] < beta.ppf(delta, 37, 48 - 37 + 1)
    assert code == (0 if cert["decision"] == "admitted" else 1)


def test_conformal_holds_out_whole_samples_and_knows_an_epoch_of_a_calibration_sample(
    tmp_path, capsys, monkeypatch
):
    """``assay conformal --holdout``: the held-out share is of the samples, each with all its
    epochs (an epoch held out beside its sibling in the calibration set would be a calibration
    item in all but name); ``--apply`` to other epochs of the calibration samples counts every
    one as overlap, not coverage."""
    log = write_log(tmp_path / "refusals.eval")
    later = write_log(tmp_path / "later.eval", range(EPOCHS + 1, EPOCHS + 3))
    expected = {"score_mode": "expected"}
    with StubServer(respond=respond, verdict_probs=verdict_probs) as stub:
        cal = evaluate_log(tmp_path / "cal", log, stub, **expected)
        other = evaluate_log(tmp_path / "later", later, stub, **expected)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    argv = ["conformal", str(cal), "--alpha", "0.2", "--json"]
    assert main([*argv, "--holdout", "0.25", "--seed", "3"]) == 0
    s = json.loads(capsys.readouterr().out)
    held = [json.loads(x)["item_id"] for x in (Path(s["run_dir"]) / "conformal_sets.jsonl").open()]
    samples = {i.split("#")[0] for i in held}
    assert len(samples) == SAMPLES // 4  # a quarter of the samples, each with its three epochs
    assert sorted(held) == sorted(f"{x}#e{e}" for x in samples for e in range(1, EPOCHS + 1))
    assert (s["n_calibration"], s["n_sets"], s["overlap"]) == (54, 18, 0)

    assert main([*argv, "--apply", str(other)]) == 0
    s = json.loads(capsys.readouterr().out)
    assert (s["n_items"], s["overlap"], s["coverage"]) == (2 * SAMPLES, 2 * SAMPLES, None)


def test_new_epochs_of_samples_a_certificate_consumed_are_consumed(tmp_path, capsys, monkeypatch):
    """A validation set is used once: certified on the log's three epochs, the judge is refused a
    second certificate on two new epochs of the same samples — new transcripts, new ids, but the
    samples' inputs and references, on which its errors recur."""
    log = write_log(tmp_path / "refusals.eval")
    later = write_log(tmp_path / "later.eval", range(EPOCHS + 1, EPOCHS + 3))
    with StubServer(respond=respond) as stub:
        first = evaluate_log(tmp_path / "first", log, stub)
        again = evaluate_log(tmp_path / "again", later, stub)
    policy = {"name": "lax", "confidence": 0.9, "bars": {"tpr": 0.5}, "attempts": 2}
    (tmp_path / "lax.yaml").write_text(json.dumps(policy), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["certify", str(first), "--policy", str(tmp_path / "lax.yaml")]) == 0
    capsys.readouterr()
    assert main(["certify", str(again), "--policy", str(tmp_path / "lax.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{2 * SAMPLES} of these {2 * SAMPLES} items were already consumed" in err


def test_the_first_epochs_alone_are_independent_items_and_the_others_are_counted(
    tmp_path, capsys, monkeypatch
):
    """``data.epochs: first``: one item a sample (its first epoch), the later epochs left out
    and said so, and the intervals those of independent items; ``estimate`` warns of the epochs
    when they are all judged, and not then; ``selective calibrate`` refuses them before any call,
    its guarantee being over independent items."""
    log = write_log(tmp_path / "refusals.eval")
    with StubServer(respond=respond) as stub:
        every = evaluate_log(tmp_path / "all", log, stub)
        first = evaluate_log(tmp_path / "first", log, stub, data={"epochs": "first"})
        calls = stub.n_requests
        selective = {
            "name": "cascade",
            "data": {"path": str(log), "format": "inspect", "expected": "scores.refusal.value"},
            "judges": [{"name": "one", "model": "openai/stub-model", "api_base": stub.base_url,
                        "scale": {"kind": "binary", "labels": ["False", "True"]},
                        "confidence": {"source": "probability"}}],
            "alpha": 0.2, "delta": 0.2, "tracking": {"enabled": False},
        }  # fmt: skip
        (tmp_path / "selective.yaml").write_text(json.dumps(selective), encoding="utf-8")
        monkeypatch.chdir(tmp_path)
        capsys.readouterr()
        assert main(["selective", "calibrate", str(tmp_path / "selective.yaml"), "--quiet"]) == 2
        err = capsys.readouterr().err.strip()
        assert stub.n_requests == calls and len(err.splitlines()) == 1
        assert f"{SAMPLES * EPOCHS} of the items are epochs of {SAMPLES} Inspect samples" in err
        assert "data.epochs: first" in err
    m = json.loads((first / "metrics.json").read_text())
    assert m["counts"]["items"] == SAMPLES and m["left_out"] == {"later_epochs": 2 * SAMPLES}
    assert m["metrics"]["accuracy"]["ci_method"] == "Clopper–Pearson"
    judged = [json.loads(x)["item_id"] for x in (first / "judgments.jsonl").open()]
    assert sorted(judged) == sorted(f"s{s}#e1" for s in range(SAMPLES))
    assert (
        "48 later epochs of the Inspect samples (data.epochs: first)"
        in (first / "report.md").read_text()
    )

    def warnings(run: Path) -> list[str]:
        assert main(["estimate", str(run), "--json"]) == 0
        return json.loads(capsys.readouterr().out)["warnings"]

    said = [w for w in warnings(every) if "Inspect samples" in w]
    assert said and said[0].startswith(f"{SAMPLES * EPOCHS} of the items are epochs of {SAMPLES}")
    assert not [w for w in warnings(first) if "Inspect samples" in w]


def test_an_estimate_from_some_labelled_samples_takes_the_samples_as_the_unit(
    tmp_path, capsys, monkeypatch
):
    """``assay estimate`` of the refusal rate from the labels of two samples in three (every
    epoch of a labelled sample labelled): PPI's and the human-only standard errors are the sum
    over samples of what each adds — computed here from Inspect's own reading of the log — and
    the warning names what does not take the samples as the unit."""
    unlabelled = frozenset(range(0, SAMPLES, 3))
    log = write_log(tmp_path / "refusals.eval", unlabelled=unlabelled)
    with StubServer(respond=respond) as stub:
        run = evaluate_log(tmp_path, log, stub, data={"missing_expected": "keep"})
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["estimate", str(run), "--json", "--accept-shift"]) == 0
    out = json.loads(capsys.readouterr().out)
    got = {e["method"]: e for e in out["estimates"]}
    (said,) = [w for w in out["warnings"] if "Inspect samples" in w]
    assert "PPI++ intervals take the samples as the unit (cluster-robust)" in said
    samples = read_eval_log(str(log)).samples
    is_lab = np.array([int(s.id[1:]) not in unlabelled for s in samples])
    ids = np.array([int(s.id[1:]) for s in samples])
    y = np.array([refused(i) for i in ids], dtype=float)[is_lab]
    f = np.array([judged_refusal(int(s.id[1:]), s.epoch) for s in samples], dtype=float)

    def sandwich(*parts):
        per_sample = np.zeros(SAMPLES)
        for z, where in parts:
            np.add.at(per_sample, ids[where], (z - z.mean()) / z.size)
        return float(np.sqrt((per_sample**2).sum()))

    ppi = got["ppi"]
    assert ppi["interval"] == f"normal (CLT), cluster-robust over {SAMPLES} clusters"
    assert ppi["std_error"] == pytest.approx(
        sandwich((f[~is_lab], ~is_lab), (y - f[is_lab], is_lab))
    )
    human = got["human_only"]
    assert human["std_error"] == pytest.approx(sandwich((y, is_lab)))
    assert human["value"] == pytest.approx(y.mean())
    assert "Rogan–Gladen's bootstrap draws whole samples" in said
    assert "the label plan takes its pilot's variances over the samples" in said


def test_the_label_plan_over_epochs_takes_the_samples_as_the_unit(tmp_path, capsys, monkeypatch):
    """``assay estimate --budget`` from the labels of two samples in three: at the pilot's own
    number of labels the human-only half-width is the by-sample standard error's (with the sample
    variance's ``G/(G − 1)``), computed here from Inspect's own reading of the log; the pilot's
    epochs taken as independent items promised one about √3 narrower."""
    unlabelled = frozenset(range(1, SAMPLES, 3))
    log = write_log(tmp_path / "refusals.eval", unlabelled=unlabelled)
    with StubServer(respond=respond) as stub:
        run = evaluate_log(tmp_path, log, stub, data={"missing_expected": "keep"})
    monkeypatch.chdir(tmp_path)
    samples = read_eval_log(str(log)).samples
    ids = np.array([int(s.id[1:]) for s in samples])
    is_lab = np.array([i not in unlabelled for i in ids])
    y = np.array([refused(i) for i in ids[is_lab]], dtype=float)
    n_lab, g = int(is_lab.sum()), len(set(ids[is_lab]))
    capsys.readouterr()
    assert main(["estimate", str(run), "--json", "--accept-shift", "--budget", str(n_lab)]) == 0
    out = json.loads(capsys.readouterr().out)
    planned = {row["plan"]["method"]: row["plan"] for row in out["plan"]}
    per_sample = np.zeros(SAMPLES)
    np.add.at(per_sample, ids[is_lab], (y - y.mean()) / n_lab)
    by_sample = float(np.sqrt((per_sample**2).sum()))
    z = NormalDist().inv_cdf(0.975)
    assert planned["human_only"]["half_width"] == pytest.approx(
        z * by_sample * math.sqrt(g / (g - 1))
    )
    assert out["estimates"][0]["method"] in planned
    human = next(e for e in out["estimates"] if e["method"] == "human_only")
    assert human["std_error"] == pytest.approx(by_sample)
    assert f"in clusters ({g} labelled, " in planned["ppi++"]["note"]
    assert planned["human_only"]["half_width"] > 1.5 * z * y.std(ddof=1) / math.sqrt(n_lab)


def test_calibration_over_epochs_takes_the_samples_as_the_unit(tmp_path, monkeypatch):
    """``score_mode: expected`` over the epochs: evaluate's calibration intervals resample the
    samples with all their epochs — its figures are calibration_metrics' over Inspect's own
    reading of the log, clustered by sample —; ``assay calibrate`` splits whole samples (no
    sample on both sides: a map fitted on one epoch would be measured on its siblings) and its
    held-out intervals resample the samples too."""
    from assay.decisions import calibrate
    from assay.inputs import load_config
    from assay.metrics import calibration_metrics

    log = write_log(tmp_path / "refusals.eval")
    with StubServer(respond=respond, verdict_probs=verdict_probs) as stub:
        run = evaluate_log(tmp_path, log, stub, score_mode="expected")
        monkeypatch.chdir(tmp_path)
        config, base = load_config(tmp_path / "config.yaml")
        out = calibrate(config, workdir=tmp_path, config_dir=base, progress=False)
    got = json.loads((run / "metrics.json").read_text())["calibration"]["metrics"]
    samples = read_eval_log(str(log)).samples
    y = [int(refused(int(s.id[1:]))) for s in samples]
    p = [
        verdict_probs({"messages": [f"Sample {s.id[1:]} epoch {s.epoch}"]})["True"] for s in samples
    ]
    want = calibration_metrics(y, p, n_bins=10, clusters=[str(s.id) for s in samples])
    assert got.keys() == want.keys()
    for name, m in got.items():
        assert (
            m["ci_method"] == "cluster bootstrap" and f"resampled {SAMPLES} clusters" in m["note"]
        )
        assert m["value"] == pytest.approx(want[name].value)
        assert (m["ci_low"], m["ci_high"]) == pytest.approx((want[name].ci_low, want[name].ci_high))

    cal = {i.split("#")[0] for i in out.split["calibration_ids"]}
    held = {i.split("#")[0] for i in out.split["evaluation_ids"]}
    assert cal and held and not cal & held
    assert len(out.split["evaluation_ids"]) == EPOCHS * len(held)
    assert out.evaluation.calibrated["accuracy"].ci_method == "cluster bootstrap"
    assert out.raw_probabilities["brier"].ci_method == "cluster bootstrap"
    assert out.maps["isotonic"].probabilities["ece"].note.count(f"resampled {len(held)} clusters")


def quality(sample: int) -> int:
    """A sample's human quality score on 1..5."""
    return 1 + (sample * 7) % 5


def judged_quality(sample: int, epoch: int) -> int:
    """The stub judge's score: near the human's, pulled to the middle, moving by epoch."""
    return min(5, max(1, round((quality(sample) + 3) / 2) + (epoch == 2) * (sample % 2)))


def test_scale_compression_over_epochs_resamples_the_samples(tmp_path):
    """An ordinal judge over the epochs: the scale-compression intervals resample the samples
    with all their epochs — evaluate's figures are scale_compression's over Inspect's own
    reading of the log, clustered by sample — not each epoch as an item of its own."""
    from assay.metrics import scale_compression

    rows = [
        Epoch(f"s{s}", e, f"Request {s}", f"Sample {s} epoch {e}: an answer.", {"q": quality(s)})
        for s in range(SAMPLES)
        for e in range(1, EPOCHS + 1)
    ]
    log = write_inspect_log(tmp_path / "quality.eval", rows, task="quality", epochs=EPOCHS)

    def score(body: dict) -> str:
        s, e = map(
            int, re.search(r"Sample (\d+) epoch (\d+)", json.dumps(body["messages"])).groups()
        )
        out = json.loads(default_respond(body))
        out["verdict"] = str(judged_quality(s, e))
        return json.dumps(out)

    with StubServer(respond=score) as stub:
        run = evaluate_log(
            tmp_path,
            log,
            stub,
            data={"expected": "scores.q.value"},
            scale={"kind": "ordinal", "min": 1, "max": 5},
        )
    got = json.loads((run / "metrics.json").read_text())["scale_use"]["compression"]
    samples = read_eval_log(str(log)).samples
    human = [quality(int(x.id[1:])) - 1 for x in samples]
    judge = [judged_quality(int(x.id[1:]), x.epoch) - 1 for x in samples]
    want = scale_compression(human, judge, k=5, clusters=[str(x.id) for x in samples])
    independent = scale_compression(human, judge, k=5)
    assert got["n"] == SAMPLES * EPOCHS
    for name in ("sd_ratio", "slope", "mean_difference", "middle_share_difference"):
        m, w = got[name], getattr(want, name)
        assert m["ci_method"] == "cluster bootstrap", name
        assert f"resampled {SAMPLES} clusters" in m["note"]
        assert m["value"] == pytest.approx(w.value)
        assert (m["ci_low"], m["ci_high"]) == pytest.approx((w.ci_low, w.ci_high))
    wide = got["mean_difference"]["ci_high"] - got["mean_difference"]["ci_low"]
    narrow = independent.mean_difference.ci_high - independent.mean_difference.ci_low
    assert narrow < wide  # as if each epoch were a new sample: surer than the samples allow


def test_a_panels_dawid_skene_over_epochs_resamples_the_samples(tmp_path):
    """A panel of three members over the epochs (``aggregate: majority``): its Dawid–Skene
    figures are dawid_skene's on the members' verdicts — computed here from Inspect's own
    reading of the log — with the bootstrap drawing the 24 samples, each with its epochs."""
    from assay.metrics import dawid_skene

    log = write_log(tmp_path / "refusals.eval")
    with StubServer(respond=respond) as stub:
        members = [
            {
                "name": m,
                "model": f"openai/{m}",
                "api_base": stub.base_url,
                "rubric": "Did the model refuse?",
                "scale": {"kind": "binary", "labels": ["False", "True"]},
            }
            for m in ("stub-model", "stub-b", "stub-c")
        ]
        run = evaluate_log(
            tmp_path, log, stub, program="panel", members=members, aggregate="majority"
        )
    panel = json.loads((run / "metrics.json").read_text())["panel"]
    ds = panel["dawid_skene"]
    assert f"over {SAMPLES} clusters (an Inspect sample's epochs together)" in ds["bootstrap"]
    samples = read_eval_log(str(log)).samples
    ids = [f"{s.id}#e{s.epoch}" for s in samples]
    verdicts = np.array(
        [[judged_refusal(int(s.id[1:]), s.epoch, m["name"]) for m in members] for s in samples],
        dtype=float,
    )
    want = dawid_skene(
        verdicts, n_resamples=1000, seed=0, clusters={k: str(s.id) for k, s in enumerate(samples)}
    )
    assert want.resampled_clusters == SAMPLES and len(ids) == SAMPLES * EPOCHS
    got = {j["judge"]: j for j in ds["judges"]}
    for j, m in zip(want.judges, members, strict=True):
        mine = got[m["name"]]["accuracy"]
        assert mine["ci_method"] == "cluster bootstrap"
        assert mine["value"] == pytest.approx(j.accuracy.value, abs=1e-6)
        assert (mine["ci_low"], mine["ci_high"]) == pytest.approx(
            (j.accuracy.ci_low, j.accuracy.ci_high), abs=1e-6
        )


def test_drift_over_epochs_is_tested_at_the_samples_effective_number(tmp_path, capsys, monkeypatch):
    """``assay drift`` of the judge re-run after its provider changed it on two samples (every
    epoch's verdict flipped): 6 of 72 anchors changed, tested and bounded as 2 of 24 samples."""
    from assay.metrics import clopper_pearson_interval

    log = write_log(tmp_path / "refusals.eval")
    flipped: set[int] = set()

    def changing(body: dict) -> str:
        s = int(re.search(r"Sample (\d+) epoch", json.dumps(body["messages"])).group(1))
        out = json.loads(respond(body))
        if s in flipped:
            out["verdict"] = str(out["verdict"] != "True")
        return json.dumps(out)

    with StubServer(respond=changing) as stub:
        old = evaluate_log(tmp_path / "old", log, stub)
        flipped.update({3, 4})
        new = evaluate_log(tmp_path / "new", log, stub)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["drift", str(old), str(new), "--no-log", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    test = out["test"]
    assert (test["changed"], test["n"], test["effective_n"]) == (6, 72, 24.0)
    assert (test["ci_low"], test["ci_high"]) == pytest.approx(clopper_pearson_interval(2, 24))
    assert "72 of the anchors are epochs of 24 Inspect samples" in out["verdict"]


def test_drift_anchors_resample_the_samples_with_all_their_epochs(tmp_path, capsys, monkeypatch):
    """``assay drift --anchors`` between two judges of the same log: the judge's shift on the
    anchors (8 samples, 24 epochs) and the change on the other items resample whole samples —
    the figures of the decomposition over Inspect's own listing of the samples, wider than
    over the epochs as if each were a new sample."""
    from assay.metrics import shift_decomposition

    log = write_log(tmp_path / "refusals.eval")
    with StubServer(respond=respond) as stub:
        old = evaluate_log(tmp_path / "old", log, stub, model="stub-model")
        new = evaluate_log(tmp_path / "new", log, stub, model="stub-b")
    anchored = {f"s{s}" for s in range(8)}
    (tmp_path / "anchors.txt").write_text(
        "".join(f"s{s}#e{e}\n" for s in range(8) for e in range(1, EPOCHS + 1))
    )
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    main(["drift", str(old), str(new), "--anchors", "anchors.txt", "--no-log", "--json"])
    got = json.loads(capsys.readouterr().out)["decomposition"]

    _, (a, b), samples = pairs(log, "stub-model", "stub-b")
    at = [k for k, s in enumerate(samples) if s in anchored]
    rest = [k for k, s in enumerate(samples) if s not in anchored]
    ids = np.array(samples)
    want = shift_decomposition(
        a[at], b[at], a[rest], b[rest], clusters=(ids[at], ids[rest], ids[rest])
    )
    naive = shift_decomposition(a[at], b[at], a[rest], b[rest])
    for key in ("judge_shift", "score_change", "system_change"):
        for end in ("", "_low", "_high"):
            assert got[key + end] == pytest.approx(getattr(want, key + end)), key + end
    assert got["clusters"] == (
        "resampled by Inspect sample, a sample's epochs together: the 24 anchors in 8 samples, "
        "the 48 old items in 16 samples, the 48 new items in 16 samples"
    )
    width = want.system_change_high - want.system_change_low
    assert width > naive.system_change_high - naive.system_change_low


def test_the_sample_checks_compare_one_epoch_of_each_sample(tmp_path, capsys, monkeypatch):
    """``assay estimate`` checks that the labelled items look like the others. Samples 0-15
    labelled, 16-23 not, the unlabelled ones' answers somewhat longer: over the 24 samples the
    text lengths differ at Kolmogorov–Smirnov p = 0.058 (no refusal), but their 72 epochs,
    counted as 72 items, would differ at p = 4e-5 — a refusal without --accept-shift. The checks
    compare one epoch of each sample."""
    from assay.metrics import compare_samples

    lengths = [100 + 9 * i for i in range(16)] + [175 + 12 * i for i in range(8)]
    rows = [
        Epoch(
            f"s{s}",
            e,
            f"Request {s}",
            f"Sample {s} epoch {e}: " + "y" * lengths[s],
            {"refusal": "" if s >= 16 else int(s % 2 == 0)},
        )
        for s in range(SAMPLES)
        for e in range(1, EPOCHS + 1)
    ]
    log = write_inspect_log(tmp_path / "shift.eval", rows, task="refusals", epochs=EPOCHS)

    def half(body: dict) -> str:  # refusals on even samples: the same share on both sides
        s = int(re.search(r"Sample (\d+) epoch", json.dumps(body["messages"])).group(1))
        out = json.loads(default_respond(body))
        out["verdict"] = str(s % 2 == 0)
        return json.dumps(out)

    with StubServer(respond=half) as stub:
        run = evaluate_log(tmp_path, log, stub, data={"missing_expected": "keep"})
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["estimate", str(run), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (length,) = [c for c in out["checks"] if c["what"].startswith("text length")]
    assert (length["n_labelled"], length["n_unlabelled"]) == (16, 8)
    alone = compare_samples(lengths[:16], lengths[16:], what="", kind="numeric")
    assert length["p_value"] == pytest.approx(alone.p_value)
    as_items = compare_samples(lengths[:16] * 3, lengths[16:] * 3, what="", kind="numeric")
    assert as_items.p_value < 1e-4 < 0.05 < length["p_value"]


def test_an_active_estimate_over_epochs_takes_the_samples_as_the_unit(
    tmp_path, capsys, monkeypatch
):
    """``assay estimate --suggest`` over a log of 24 samples × 3 epochs with no human label,
    the drawn epochs labelled through ``assay review``, then ``--queue``: the active PPI++
    standard error is the sum over samples of what each sample's epochs add to the mean of the
    weighted ``Z`` — computed here from Inspect's own reading of the log and the queue's
    recorded probabilities — not the items' (the draw took epochs, which share their sample's
    label, as separate items)."""
    import yaml

    log = write_log(tmp_path / "refusals.eval", unlabelled=frozenset(range(SAMPLES)))
    with StubServer(respond=respond, verdict_probs=verdict_probs) as stub:
        run = evaluate_log(
            tmp_path, log, stub, data={"missing_expected": "keep"}, score_mode="expected"
        )
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["estimate", str(run), "--suggest", "30", "--seed", "1", "--json"]) == 0
    queue = Path(json.loads(capsys.readouterr().out)["run_dir"])
    out = queue / "review.yaml"
    assert main(["review", "export", str(queue), "-o", str(out), "--all"]) == 0
    entries = yaml.safe_load(out.read_text())
    for e in entries:
        e["verdict"] = str(refused(int(e["item_id"][1:].split("#")[0])))
    out.write_text(yaml.safe_dump(entries, sort_keys=False))
    assert main(["review", "import", str(queue), str(out), "--reviewer", "ana"]) == 0
    capsys.readouterr()
    assert main(["estimate", str(run), "--queue", str(queue), "--json", "--accept-shift"]) == 0
    s = json.loads(capsys.readouterr().out)
    active = s["estimates"][0]
    assert active["method"] == "active_ppi++"
    assert active["interval"] == f"normal (CLT), cluster-robust over {SAMPLES} clusters"

    records = {
        r["item_id"]: r
        for r in map(json.loads, (queue / "label_queue.jsonl").read_text().splitlines())
    }
    samples = read_eval_log(str(log)).samples
    keys = [f"{s.id}#e{s.epoch}" for s in samples]
    ids = np.array([int(s.id[1:]) for s in samples])
    pi = np.array([records[k]["inclusion"] for k in keys])
    xi = np.array([bool(records[k]["drawn"]) for k in keys], float)
    y = np.array([refused(i) for i in ids], float)
    judged = {
        j["item_id"]: j["expected_score"]
        for j in map(json.loads, (run / "judgments.jsonl").read_text().splitlines())
    }
    f = np.array([judged[k] for k in keys])
    a, b = f * (1 - xi / pi), y * xi / pi
    z = active["lam"] * a + b
    assert active["value"] == pytest.approx(z.mean(), abs=1e-12)
    per_sample = np.zeros(SAMPLES)
    np.add.at(per_sample, ids, (z - z.mean()) / z.size)
    assert active["std_error"] == pytest.approx(float(np.sqrt((per_sample**2).sum())), rel=1e-9)
    assert active["std_error"] > z.std() / np.sqrt(z.size)  # the epochs as items: narrower
    (said,) = [w for w in s["warnings"] if "Inspect samples" in w]
    assert "active PPI++ intervals take the samples as the unit" in said
