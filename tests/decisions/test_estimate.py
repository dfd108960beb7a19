"""assay estimate end to end: evaluate runs of a binary judge on the loopback stub server (token
logprobs, score_mode: expected), a seeded fifth of the items carrying their human label, read
back by ``assay estimate`` — the figures equal ``ppi_py`` on the run's own judgments and
references, the interval holds the simulation's known truth and is narrower than the labels
alone, the report says it in words; a labelled sample that is not random refused or warned of;
every bad input one line; two runs (``--validation``) with Rogan–Gladen by hand."""

from __future__ import annotations

import csv
import json
import math
import os
import re
from pathlib import Path

import numpy as np
import ppi_py
import pytest

from assay.cli import main
from assay.decisions import estimate
from assay.decisions._estimate_report import estimate_words
from assay.errors import DataError, RunError
from assay.evaluation import evaluate
from assay.inputs import EvaluateConfig
from assay.lm import ScriptedEngine, StubServer, register_script
from assay.metrics import rough_note, strata_labels_worth
from assay.runners import write_report
from tests.stub_judge import stub_config
from tests.web.test_report_parity import assert_same_sections, both

N = 400
ALPHA = 0.05
GARBLED = {5, 77, 150, 151, 290}  # the stub answers these with no verdict: unscored


def truth(k: int) -> int:
    """Item k's human label (1 = harmful compliance), prevalence 0.3."""
    return int(np.random.default_rng(1000 + k).random() < 0.3)


def judge_p(k: int) -> float:
    """A good judge's probability of True: near 0.85 on harmful items and 0.12 on the others,
    with item-level noise (so some verdicts are wrong)."""
    rng = np.random.default_rng(5000 + k)
    return float(np.clip(0.12 + 0.73 * truth(k) + rng.normal(0, 0.18), 0.01, 0.99))


def _k(body: dict) -> int | None:
    text = " ".join(str(m.get("content")) for m in body.get("messages") or [])
    found = re.search(r"item (\d+)\?", text)
    return int(found.group(1)) if found else None


def respond(body: dict) -> str:
    k = _k(body)
    if k in GARBLED:
        return "no verdict here"
    return json.dumps({"verdict": "True" if k is not None and judge_p(k) > 0.5 else "False"})


def verdict_probs(body: dict) -> dict[str, float] | None:
    k = _k(body)
    if k is None or k in GARBLED:
        return None
    return {"True": judge_p(k), "False": 1 - judge_p(k)}


def labelled_uniformly(n: int = N, size: int = 80, seed: int = 7) -> set[int]:
    return set(np.random.default_rng(seed).choice(n, size, replace=False).tolist())


def write_items(path: Path, ks: range, labelled: set[int], **columns) -> Path:
    """``path``: one row per item k — its texts (lengths varying with k, not with the label), the
    label where ``labelled`` says, and any extra ``columns`` (k → value)."""
    extra = list(columns)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "request", "response", "expected", *extra])
        for k in ks:
            text = f"Reply {'with many words ' * (k % 9)}to item {k}?"
            row = [f"i{k}", text, f"Item {k} says so.", truth(k) if k in labelled else ""]
            w.writerow(row + [columns[c](k) for c in extra])
    return path


def category(k: int) -> str:
    return "abc"[k % 3]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Evaluate runs through the command line, all of one judge config: the main run (400
    items, a uniform fifth labelled), one whose labelled items are the longest texts, one
    labelling every item, one labelling none, one labelling one, a labelled validation run of
    other items, and the main run's items with no label (for the label queue)."""
    tmp = tmp_path_factory.mktemp("estimate")
    out: dict[str, Path] = {"tmp": tmp}
    judge = {"scale": {"kind": "binary", "labels": ["False", "True"]}, "score_mode": "expected"}
    longest = {k for k in range(N) if k % 9 >= 7}

    with StubServer(respond=respond, verdict_probs=verdict_probs) as stub:

        def run(name: str, ks: range, labelled: set[int], **columns) -> Path:
            csv_path = write_items(tmp / f"{name}.csv", ks, labelled, **columns)
            data = {"path": str(csv_path), "columns": {"id": "id"}, "missing_expected": "keep"}
            cfg = stub_config(
                tmp, csv_path, stub.base_url, name=name, file=f"{name}.yaml", judge=judge, data=data
            )
            assert main(["evaluate", str(cfg), "--quiet"]) == 0
            return next((tmp / "runs").glob(f"{name}-*"))

        here = Path.cwd()
        os.chdir(tmp)
        try:
            weight = {"weight": lambda k: 0 if k == 11 else 1 + k % 3, "category": category}
            out["main"] = run("main", range(N), labelled_uniformly(), **weight)
            out["longest"] = run("longest", range(N), longest)
            out["all"] = run("all", range(60), set(range(60)))
            out["none"] = run("none", range(60), set())
            out["one"] = run("one", range(60), {3})
            out["validation"] = run("validation", range(N, N + 150), set(range(N, N + 150)))
            out["unlabelled"] = run("unlabelled", range(N), set())
        finally:
            os.chdir(here)
    return out


def cli(args: list[str], capsys, code: int = 0) -> str:
    assert main(args) == code, capsys.readouterr()
    captured = capsys.readouterr()
    return captured.out if code == 0 else captured.err


def cli_json(args: list[str], capsys) -> dict:
    return json.loads(cli([*args, "--json"], capsys))


def judgments(run_dir: Path) -> dict[str, dict]:
    lines = (run_dir / "judgments.jsonl").read_text().splitlines()
    return {j["item_id"]: j for j in map(json.loads, lines)}


def references(csv_path: Path) -> dict[str, int | None]:
    with csv_path.open(encoding="utf-8") as fh:
        return {
            r["id"]: (int(r["expected"]) if r["expected"] else None) for r in csv.DictReader(fh)
        }


def row(summary: dict, method: str) -> dict:
    (out,) = [e for e in summary["estimates"] if e["method"] == method]
    return out


def probability_predictions(run_dir: Path) -> dict[str, float]:
    """Each item's P(True) as the run's judgments.jsonl holds it; an unscored item's the mean
    of the scored ones."""
    p = {i: (j["probabilities"] or {}).get("1") for i, j in judgments(run_dir).items()}
    stand_in = np.mean([v for v in p.values() if v is not None])
    return {i: stand_in if v is None else v for i, v in p.items()}


def test_the_figures_equal_ppi_py_on_the_runs_judgments_and_references(runs, capsys, monkeypatch):
    monkeypatch.chdir(runs["tmp"])
    s = cli_json(["estimate", str(runs["main"])], capsys)
    # the run's numbers, read here from its files: the reference of each labelled item (the
    # CSV) and the judge's P(True) (judgments.jsonl)
    refs, js = references(runs["tmp"] / "main.csv"), judgments(runs["main"])
    assert {i for i, j in js.items() if j["score"] is None} == {f"i{k}" for k in GARBLED}
    f = probability_predictions(runs["main"])
    lab = sorted(i for i in refs if refs[i] is not None)
    unl = sorted(i for i in refs if refs[i] is None)
    y = np.array([refs[i] for i in lab], float)
    yhat, yhat_u = np.array([f[i] for i in lab]), np.array([f[i] for i in unl])

    assert (s["n_items"], s["n_labelled"], s["n_unlabelled"]) == (N, 80, 320)
    assert s["headline"] == "ppi++" and s["estimates"][0]["method"] == "ppi++"
    assert (s["prediction"], s["prediction_source"]) == ("probability", "token probabilities")
    assert s["unscored"] == {"parse_error": len(GARBLED)}
    for method, lam in (("ppi++", None), ("ppi", 1)):
        low, high = ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=ALPHA, lam=lam)
        value = ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u, lam=lam)
        e = row(s, method)
        assert (e["ci_low"], e["ci_high"]) == pytest.approx(
            (float(low[0]), float(high[0])), abs=1e-9
        )
        assert e["value"] == pytest.approx(float(np.ravel(value)[0]), abs=1e-9)
        assert f"{len(GARBLED)} unscored items (parse_error {len(GARBLED)})" in e["note"]
    low, high = ppi_py.classical_mean_ci(y, alpha=ALPHA)
    human = row(s, "human_only")
    assert (human["ci_low"], human["ci_high"]) == pytest.approx((low, high), abs=1e-9)
    # --prediction verdict: the judge's 0/1 verdicts, the same comparison
    v = cli_json(["estimate", str(runs["main"]), "--prediction", "verdict"], capsys)
    score = {i: j["score"] for i, j in js.items()}
    stand_in = np.mean([x for x in score.values() if x is not None])
    fv = {i: stand_in if x is None else x for i, x in score.items()}
    low, high = ppi_py.ppi_mean_ci(
        y, np.array([fv[i] for i in lab], float), np.array([fv[i] for i in unl], float), alpha=ALPHA
    )
    e = row(v, "ppi++")
    assert e["prediction"] == "verdict"
    assert (e["ci_low"], e["ci_high"]) == pytest.approx((float(low[0]), float(high[0])), abs=1e-9)


def test_the_interval_holds_the_truth_and_beats_the_labels_alone(runs, capsys, monkeypatch):
    """A simulated run whose truth is known: the rate over all 400 items (0.3225)."""
    monkeypatch.chdir(runs["tmp"])
    s = cli_json(["estimate", str(runs["main"])], capsys)
    true_rate = np.mean([truth(k) for k in range(N)])
    best, human = row(s, "ppi++"), row(s, "human_only")
    assert best["ci_low"] <= true_rate <= best["ci_high"]
    assert best["ci_high"] - best["ci_low"] < 0.8 * (human["ci_high"] - human["ci_low"])
    assert best["effective_labels"] > 1.5 * 80 and 0.5 < best["lam"] <= 1
    assert [c["finding"] for c in s["checks"]] == ["none", "none"]  # a uniform sample


def test_the_run_writes_its_report_in_words(runs, capsys, monkeypatch):
    monkeypatch.chdir(runs["tmp"])
    text = cli(["estimate", str(runs["main"]), "--strata", "category"], capsys)
    assert "estimate (PPI++): " in text and "95% CI" in text
    assert "the human labels alone: " in text and "(effective labels)" in text
    assert "the judge's probability of verdict True (token probabilities)" in text
    assert "assumes: the 80 labelled items are a uniform random sample of the 400 items" in text
    run_dir = Path(re.search(r"report: (\S+)/report.md", text).group(1))
    md, page = (run_dir / "report.md").read_text(), (run_dir / "report.html").read_text()
    for said in ("estimate (PPI++)", "the human labels alone", "effective labels", "assumes:"):
        assert said in md and said in page
    assert_same_sections(
        run_dir,
        "Estimates",
        "Strata",
        "The judge on the labelled items",
        "Is the labelled sample like the rest?",
        "Items",
    )
    for tables in both(run_dir).values():
        (estimates,) = [t for t in tables if t[0] == "Estimates"]
        assert [r[0] for r in estimates[2]] == [
            "PPI++",
            "PPI",
            "stratified PPI++",
            "human labels only",
            "Rogan–Gladen",
        ]
    (run_dir / "report.html").unlink()
    write_report(run_dir)
    assert "stratified PPI++" in (run_dir / "report.html").read_text()
    # the same command again: the finished run re-read, not another one
    assert cli(["estimate", str(runs["main"]), "--strata", "category"], capsys) == text


def test_a_labelled_sample_that_is_not_random_is_refused_or_warned_of(runs, capsys, monkeypatch):
    monkeypatch.chdir(runs["tmp"])
    err = cli(["estimate", str(runs["longest"])], capsys, code=2)
    assert err.count("\n") == 1 and "differ from the" in err and "text length" in err
    assert "--accept-shift" in err
    s = cli_json(["estimate", str(runs["longest"]), "--accept-shift"], capsys)
    (length,) = [c for c in s["checks"] if c["what"].startswith("text length")]
    assert length["finding"] == "warning" and length["p_adjusted"] < 0.001
    assert any("(--accept-shift)" in w for w in s["warnings"])
    text = cli(["estimate", str(runs["longest"]), "--accept-shift"], capsys)
    assert "warning: the labelled items differ from the others in text length" in text


BINARY = {"kind": "binary", "labels": ["False", "True"]}


def scripted_run(
    tmp_path: Path,
    name: str,
    rows: list[str],
    respond,
    scale=BINARY,
    *,
    script: str | None = None,
    **judge_extra,
) -> Path:
    """An evaluate run of a scripted judge (``respond(call)``; binary unless ``scale`` says
    otherwise; ``judge_extra``: more of the judge's config) on CSV ``rows`` (header first). The
    judge's model is ``scripted:<script>`` (default ``est-<name>``): runs given one ``script``
    are of one judge, as a run and its validation run must be."""
    script = script or f"est-{name}"
    register_script(script, lambda: ScriptedEngine(respond=respond))
    (tmp_path / f"{name}.csv").write_text("\n".join(rows) + "\n")
    cfg = EvaluateConfig.model_validate(
        {
            "name": name,
            "data": {
                "path": str(tmp_path / f"{name}.csv"),
                "columns": {"id": "id"},
                "missing_expected": "keep",
            },
            "judge": {
                "model": f"scripted:{script}",
                "scale": scale,
                **judge_extra,
            },
            "tracking": {"enabled": False},
        }
    )
    return evaluate(cfg, workdir=tmp_path, progress=False).run_dir


def test_few_labels_say_the_interval_is_rough(tmp_path, capsys, monkeypatch):
    """10 labels of 100 items: PPI++'s interval is ppi_py's, and the note says that a normal
    interval on fewer than 30 labels covers less than its level (76–89% at 95% on 10 labels in
    simulation) — on the console's headline, in metrics.json and in the report."""
    rng = np.random.default_rng(5)
    y = (rng.random(100) < 0.3).astype(int)
    f = np.where(rng.random(100) < 0.9, y, 1 - y)
    rows = ["id,request,response,expected"]
    rows += [
        f"i{k},q,{'HARMFUL' if f[k] else 'benign'} {k},{y[k] if k < 10 else ''}" for k in range(100)
    ]
    run_dir = scripted_run(tmp_path, "few", rows, noisy_judge)
    monkeypatch.chdir(tmp_path)
    text = cli(["estimate", str(run_dir)], capsys)
    assert (
        "\nnote: only 10 human labels: with fewer than 30 the normal interval covers less" in text
    )
    s = cli_json(["estimate", str(run_dir)], capsys)
    y, f = y.astype(float), f.astype(float)
    low, high = ppi_py.ppi_mean_ci(y[:10], f[:10], f[10:], alpha=ALPHA)
    best = row(s, "ppi++")
    assert (best["ci_low"], best["ci_high"]) == pytest.approx((low[0], high[0]), abs=1e-9)
    assert "only 10 human labels" in best["note"] and "only 10" in row(s, "human_only")["note"]
    run = Path(re.search(r"report: (\S+)/report.md", text).group(1))
    for page in ("report.md", "report.html"):
        assert "only 10 human labels" in (run / page).read_text()


def stratified_run(tmp_path, seed: int) -> Path:
    """Half the items of stratum a labelled, a tenth of b and c: a stratified sample, not a
    uniform one."""
    rows = ["id,request,response,expected,kind"]
    rng = np.random.default_rng(seed)
    for k in range(300):
        kind = "abc"[k % 3]
        share = 0.5 if kind == "a" else 0.1
        label = int(rng.random() < 0.4) if rng.random() < share else ""
        rows.append(f"i{k},q{k},r{k},{label},{kind}")
    return scripted_run(tmp_path, f"strata{seed}", rows, lambda call: {"verdict": "True"})


def test_strata_labelled_in_other_proportions_lead_with_stratified_ppi(tmp_path):
    """A stratified sample — stratified PPI++ leads, with the warning saying why."""
    s = estimate(stratified_run(tmp_path, 4), strata="kind", workdir=tmp_path)
    assert s.headline == "stratified_ppi++" and s.estimates[0].method == "stratified_ppi++"
    assert any("stratified PPI++ allows that" in w for w in s.warnings)
    assert "within each stratum of kind" in s.sampling


def test_a_stratum_whose_labels_are_all_equal_gives_no_stratified_interval(tmp_path):
    """Stratum b's 7 labels are all 0 (seed 3): its standard error would be 0, so stratified
    PPI++ is not given — the shifted allocation is refused, saying why, or with
    ``--accept-shift`` PPI++ leads and a warning names the stratum."""
    run_dir = stratified_run(tmp_path, 3)
    with pytest.raises(DataError, match="stratum 'b': its 7 labels are all 0, so its variance"):
        estimate(run_dir, strata="kind", workdir=tmp_path)
    s = estimate(run_dir, strata="kind", workdir=tmp_path, accept_shift=True)
    assert s.headline == "ppi++" and "stratified_ppi++" not in {e.method for e in s.estimates}
    assert any("stratified PPI++ not computed: stratum 'b'" in w for w in s.warnings)


def test_check_columns_refuse_a_clear_difference_and_warn_of_it_when_accepted(
    tmp_path, capsys, monkeypatch
):
    """``--check-column``: ``split`` (every labelled item in a, most others in b; chi-square)
    and ``hour`` (more than ten distinct numbers, the labelled ones earlier: Kolmogorov–Smirnov)
    each refused in one line naming the column; with ``--accept-shift`` both are warnings,
    printed and in metrics.json, and ``region`` (alike in both groups) is not."""
    rng = np.random.default_rng(21)
    labelled = set(rng.choice(300, 80, replace=False).tolist())
    rows = ["id,request,response,expected,split,hour,region"]
    for k in range(300):
        lab = k in labelled
        label = int(rng.random() < 0.4) if lab else ""
        split = "a" if lab or k % 10 == 0 else "b"
        hour = round(float(rng.uniform(0, 12) if lab else rng.uniform(8, 20)), 2)
        region = "xyz"[int(rng.integers(3))]
        rows.append(f"i{k},q,r{k:04d},{label},{split},{hour},{region}")

    def says(call):
        return {"verdict": "True" if int(call.field("response")[1:]) % 3 == 0 else "False"}

    run_dir = scripted_run(tmp_path, "shift", rows, says)
    monkeypatch.chdir(tmp_path)
    for column, test in (("split", "chi-square"), ("hour", "Kolmogorov–Smirnov")):
        err = cli(["estimate", str(run_dir), "--check-column", column], capsys, code=2)
        assert err.count("\n") == 1, err
        assert f"differ from the 220 others in column {column} (" in err and test in err
        assert "--accept-shift" in err

    args = ["estimate", str(run_dir), "--accept-shift"]
    args += [x for c in ("split", "hour", "region") for x in ("--check-column", c)]
    s = cli_json(args, capsys)
    found = {c["what"]: (c["test"], c["finding"]) for c in s["checks"]}
    assert found["column split"] == ("chi-square test of homogeneity", "warning")
    assert found["column hour"] == ("two-sample Kolmogorov–Smirnov", "warning")
    assert found["column region"][1] == "none"
    shifted = [w for w in s["warnings"] if "differ from the others in column" in w]
    assert len(shifted) == 2 and all("(--accept-shift)" in w for w in shifted)
    assert not any("region" in w for w in s["warnings"])
    text = cli(args, capsys)
    for column in ("split", "hour"):
        assert f"warning: the labelled items differ from the others in column {column}" in text
    run = Path(re.search(r"report: (\S+)/report.md", text).group(1))
    assert json.loads((run / "metrics.json").read_text())["warnings"] == s["warnings"]


@pytest.mark.parametrize(
    ("name", "extra", "message"),
    [
        ("none", [], "none of the 60 items has a human label"),
        ("one", [], "1 of the 60 items has a human label: an interval needs at least 2"),
        ("main", ["--positive", "Maybe"], "--positive Maybe: not on the binary"),
        ("main", ["--alpha", "1.5"], "argument --alpha: must be less than 1, got 1.5"),
        ("main", ["--weights", "weight"], "item i11: weight 0; a weight is a positive number"),
        ("main", ["--strata", "kind"], "--strata kind: no such column in the data of"),
        ("main", ["--weights", "weight", "--strata", "category"], "--weights with --strata"),
        ("main", ["--threshold", "7"], "--threshold 7 is not on the binary"),
    ],
)
def test_bad_input_is_one_line(runs, capsys, monkeypatch, name, extra, message):
    monkeypatch.chdir(runs["tmp"])
    err = cli(["estimate", str(runs[name]), *extra], capsys, code=2)
    assert err.count("\n") == 1 and message in err, err


def test_every_item_labelled_is_the_labels_alone_said_so(runs, capsys, monkeypatch):
    monkeypatch.chdir(runs["tmp"])
    s = cli_json(["estimate", str(runs["all"])], capsys)
    assert s["headline"] == "human_only" and [e["method"] for e in s["estimates"]] == ["human_only"]
    assert "every item is labelled" in s["estimates"][0]["note"]
    assert s["estimates"][0]["value"] == pytest.approx(np.mean([truth(k) for k in range(60)]))


def test_weights_from_a_column_equal_ppi_py_with_them(tmp_path):
    rows = ["id,request,response,expected,w"]
    rng = np.random.default_rng(9)
    for k in range(120):
        rows.append(f"i{k},q,r{k},{int(rng.random() < 0.5) if k % 4 == 0 else ''},{1 + k % 5}")

    def says(call):
        return {"verdict": "True" if "7" in call.field("response") else "False"}

    run_dir = scripted_run(tmp_path, "w", rows, says)
    s = estimate(run_dir, weights="w", workdir=tmp_path)
    js, refs = judgments(run_dir), references(tmp_path / "w.csv")
    lab = [i for i in sorted(refs) if refs[i] is not None]
    unl = [i for i in sorted(refs) if refs[i] is None]
    weight = {f"i{k}": 1 + k % 5 for k in range(120)}
    low, high = ppi_py.ppi_mean_ci(
        np.array([refs[i] for i in lab], float),
        np.array([js[i]["score"] for i in lab], float),
        np.array([js[i]["score"] for i in unl], float),
        alpha=ALPHA,
        w=np.array([weight[i] for i in lab], float),
        w_unlabeled=np.array([weight[i] for i in unl], float),
    )
    e = s.of("ppi++")
    assert (e.ci_low, e.ci_high) == pytest.approx((float(low[0]), float(high[0])), abs=1e-9)
    assert s.of("rogan_gladen") is None and any("no observation weights" in w for w in s.warnings)


def test_a_weighted_plan_gives_the_weighted_estimates_half_widths(tmp_path, capsys):
    """--weights with --budget: the plan promised the unweighted half-widths (± 0.105 for 40
    labels where the weighted estimate gave ± 0.128) and a Rogan–Gladen row the estimate does
    not compute with weights. Planned for the pilot's own size, the weighted plan's half-widths
    are ppi_py's weighted ones on the pilot (within 3%: the plan's sample variances and λ),
    and there is no Rogan–Gladen row."""
    rng = np.random.default_rng(4)
    n_items, weight = 160, [1 + k % 5 for k in range(160)]
    y = [int(rng.random() < 0.1 + 0.15 * weight[k]) for k in range(n_items)]
    p = [float(np.clip(0.15 + 0.6 * y[k] + rng.normal(0, 0.2), 0.02, 0.98)) for k in range(160)]
    labelled = set(rng.choice(n_items, 40, replace=False).tolist())
    rows = ["id,request,response,expected,w"]
    rows += [f"i{k},q,r{k:03d},{y[k] if k in labelled else ''},{weight[k]}" for k in range(n_items)]

    def says(call):
        k = int(call.field("response")[1:])
        return {
            "verdict": "True" if p[k] > 0.5 else "False",
            "_probs": {"True": p[k], "False": 1 - p[k]},
        }

    run_dir = scripted_run(tmp_path, "wplan", rows, says, score_mode="expected")
    s = estimate(run_dir, weights="w", budget=40, workdir=tmp_path)
    lab = sorted(labelled)
    unl = [k for k in range(n_items) if k not in labelled]
    arr = np.asarray
    yl, fl, fu = arr(y, float)[lab], arr(p)[lab], arr(p)[unl]
    wl, wu = arr(weight, float)[lab], arr(weight, float)[unl]
    ppi = ppi_py.ppi_mean_ci(yl, fl, fu, alpha=ALPHA, w=wl, w_unlabeled=wu)
    human = ppi_py.classical_mean_ci(yl, alpha=ALPHA, w=wl)
    want = {"ppi++": (ppi[1][0] - ppi[0][0]) / 2, "human_only": (human[1] - human[0]) / 2}
    plans = {row.plan.method: row.plan for row in s.plan}
    for method, half_width in want.items():
        assert plans[method].half_width == pytest.approx(float(half_width), rel=0.03), method
        assert s.of(method).half_width == pytest.approx(float(half_width), rel=1e-6), method
    assert set(plans) == {"human_only", "ppi++"}  # no Rogan–Gladen row: it takes no weights
    assert s.plan_weights == "w"


CLASSES = ("comply", "refuse", "partial")


def category_truth(k: int) -> str:
    """Item k's human label among three classes (a third refusals, on average)."""
    return CLASSES[int(np.random.default_rng(7000 + k).choice(3, p=[0.45, 0.35, 0.2]))]


def category_verdict(call):
    """Right on about three items in four, else another class; no verdict on every 41st."""
    k = int(re.search(r"answer (\d+)", call.field("response")).group(1))
    if k % 41 == 40:
        return "no verdict here"
    rng = np.random.default_rng(9000 + k)
    right = category_truth(k)
    wrong = [c for c in CLASSES if c != right][int(rng.integers(2))]
    return {"verdict": right if rng.random() < 0.75 else wrong}


def test_the_rate_of_one_class_of_a_categorical_judge_equals_ppi_py(tmp_path, capsys, monkeypatch):
    """A categorical scale: ``--positive refuse`` estimates the rate of that class, the judge's
    0/1 indicator of it as the prediction (an unscored item: the mean indicator); without
    ``--positive`` there is no class to count, said in one line."""
    labelled = set(np.random.default_rng(11).choice(240, 60, replace=False).tolist())
    rows = ["id,request,response,expected"]
    for k in range(240):
        label = category_truth(k) if k in labelled else ""
        rows.append(f"i{k},q{k},answer {k},{label}")
    scale = {"kind": "categorical", "labels": list(CLASSES)}
    run_dir = scripted_run(tmp_path, "classes", rows, category_verdict, scale=scale)
    monkeypatch.chdir(tmp_path)
    s = cli_json(["estimate", str(run_dir), "--positive", "refuse"], capsys)
    assert (s["target"], s["prediction"], s["n_labelled"]) == ("verdict refuse", "verdict", 60)
    assert s["unscored"] == {"parse_error": 5}

    js = judgments(run_dir)
    refuse = CLASSES.index("refuse")  # a categorical label's score: its position
    said = {i: None if j["score"] is None else float(j["score"] == refuse) for i, j in js.items()}
    stand_in = np.mean([v for v in said.values() if v is not None])
    f = {i: stand_in if v is None else v for i, v in said.items()}
    lab = [f"i{k}" for k in range(240) if k in labelled]
    unl = [f"i{k}" for k in range(240) if k not in labelled]
    y = np.array([float(category_truth(int(i[1:])) == "refuse") for i in lab])
    yhat, yhat_u = np.array([f[i] for i in lab]), np.array([f[i] for i in unl])
    for method, lam in (("ppi++", None), ("ppi", 1)):
        low, high = ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=ALPHA, lam=lam)
        value = ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u, lam=lam)
        e = row(s, method)
        assert e["value"] == pytest.approx(float(np.ravel(value)[0]), abs=1e-9)
        assert (e["ci_low"], e["ci_high"]) == pytest.approx(
            (float(low[0]), float(high[0])), abs=1e-9
        )
    assert 0 < row(s, "ppi++")["lam"] < 1

    err = cli(["estimate", str(run_dir)], capsys, code=2)
    assert err.count("\n") == 1
    assert "the categorical comply|refuse|partial scale has no single positive verdict" in err
    assert "give --positive LABEL" in err


def test_the_label_plan_is_the_pilots_variance_formula(runs, capsys, monkeypatch):
    monkeypatch.chdir(runs["tmp"])
    s = cli_json(
        ["estimate", str(runs["main"]), "--target-half-width", "0.03", "--budget", "200"], capsys
    )
    refs, f = references(runs["tmp"] / "main.csv"), probability_predictions(runs["main"])
    y = np.array([refs[i] for i in sorted(refs) if refs[i] is not None], float)
    fl = np.array([f[i] for i in sorted(refs) if refs[i] is not None])
    fu = np.array([f[i] for i in sorted(refs) if refs[i] is None])
    var_y, var_f = np.var(y, ddof=1), np.var(np.concatenate([fl, fu]), ddof=1)
    cov = np.cov(y, fl)[0, 1]
    # 200 of the 400 items labelled leave 200 predictions; the residual is the pilot's own
    n, z = 200, 1.959963984540054
    left = fl.size + fu.size - n
    lam = min(1, max(0, cov / ((1 + n / left) * var_f)))
    v = lam**2 * var_f / left + np.var(y - lam * fl, ddof=1) / n
    plans = {(r["given"], r["plan"]["method"]): r["plan"] for r in s["plan"]}
    assert plans[("labels", "ppi++")]["half_width"] == pytest.approx(z * math.sqrt(v), rel=1e-9)
    assert plans[("labels", "ppi++")]["n_unlabelled"] == left
    assert plans[("labels", "human_only")]["half_width"] == pytest.approx(
        z * math.sqrt(var_y / n), rel=1e-9
    )
    assert plans[("half-width", "human_only")]["n_labels"] == math.ceil(var_y / (0.03 / z) ** 2)
    assert ("half-width", "rogan_gladen") in plans and ("labels", "rogan_gladen") in plans
    text = cli(["estimate", str(runs["main"]), "--budget", "200"], capsys)
    assert "### How many labels" in text and "| 200 labels | PPI++ | 200 | 120 |" in text


def odd_items_true(call):
    """Says True for the odd-numbered items (responses r0, r1, …)."""
    return {"verdict": "True" if int((call.field("response") or "r0")[1:]) % 2 else "False"}


def test_a_two_label_pilot_plans_without_a_negative_variance(tmp_path, capsys, monkeypatch):
    """Two labels the judge gets right, 100 others: Var(f) over every item with the pilot's
    Cov(Y, f) made Var(Y − λf) negative — a math domain error for --budget, "1 label, ±0.0100"
    for --target-half-width. The residual is the pilot's own: never negative."""
    monkeypatch.chdir(tmp_path)
    rows = ["id,request,response,expected"] + [
        f"i{k},q{k},r{k},{k if k < 2 else ''}" for k in range(102)
    ]
    run_dir = scripted_run(tmp_path, "two", rows, odd_items_true)
    s = cli_json(["estimate", str(run_dir), "--budget", "50"], capsys)
    plans = {p["plan"]["method"]: p["plan"] for p in s["plan"]}
    assert all(p["half_width"] > 0 for p in plans.values() if math.isfinite(p["half_width"]))
    assert plans["ppi++"]["n_unlabelled"] == 52
    s = cli_json(["estimate", str(run_dir), "--target-half-width", "0.01"], capsys)
    ppi = next(p["plan"] for p in s["plan"] if p["plan"]["method"] == "ppi++")
    assert ppi["n_labels"] is None and ppi["note"].startswith(
        "out of reach short of labelling every item: 101 of the 102 labelled leave ± "
    )
    queued = cli(
        ["estimate", str(run_dir), "--target-half-width", "0.01", "--suggest", "9"], capsys
    )
    assert "By the plan, ± 0.01 is out of reach short of labelling every item" in queued


@pytest.mark.parametrize("suggest", [False, True])
def test_a_pilot_whose_labels_are_all_alike_plans_with_a_stand_in(
    tmp_path, capsys, monkeypatch, suggest
):
    """12 labels, all 0: a sample variance of 0 is no evidence of none. The plan says which
    stand-in it used, never plans ± 0 or one label, and a queue is not told the labels given
    before reach the target already."""
    monkeypatch.chdir(tmp_path)
    rows = ["id,request,response,expected"] + [
        f"i{k},q{k},r{k},{0 if k % 10 == 0 else ''}" for k in range(120)
    ]
    run_dir = scripted_run(tmp_path, "alike", rows, odd_items_true)
    args = ["estimate", str(run_dir), "--target-half-width", "0.05", "--budget", "40"]
    text = cli([*args, *(["--suggest", "20"] if suggest else [])], capsys)
    assert "the pilot's 12 labels are all 0: planned with Var(Y) = 0.172" in text
    assert "0.0000" not in text and "| PPI++ | 1 |" not in text
    assert "reach that half-width already" not in text
    s = cli_json([*args, *(["--suggest", "20"] if suggest else [])], capsys)
    for row in s["plan"]:
        plan = row["plan"]
        assert plan["n_labels"] is None or plan["n_labels"] > 12
        assert not plan["half_width"] < 0.05


# -- two runs: --validation ----------------------------------------------------------------------


def noisy_judge(call):
    """Says True for HARMFUL answers, except the ones marked 'miss'; and True for 'alarm'."""
    r = call.field("response") or ""
    says = ("HARMFUL" in r and "miss" not in r) or "alarm" in r
    return {"verdict": "True" if says else "False"}


@pytest.fixture
def two_runs(tmp_path):
    # validation: 20 harmful (4 missed: TPR 0.8), 20 benign (2 false alarms: TNR 0.9)
    # (each answer its own text: the same text under two ids would be one item repeated)
    val = [f"v{i},q,HARMFUL{' miss' if i < 4 else ''} v{i},1" for i in range(20)]
    val += [f"w{i},q,benign{' alarm' if i < 2 else ''} w{i},0" for i in range(20)]
    # unlabelled: 30 harmful of 100 (6 missed), 70 benign (7 alarms) -> flags 24 + 7 = 31
    unl = [f"u{i},q,HARMFUL{' miss' if i < 6 else ''} u{i}," for i in range(30)]
    unl += [f"x{i},q,benign{' alarm' if i < 7 else ''} x{i}," for i in range(70)]

    def run(name, rows, **judge):
        header = "id,request,response,expected"
        return scripted_run(tmp_path, name, [header, *rows], noisy_judge, script="noisy", **judge)

    wrong = [f"c{i},q,HARMFUL miss c{i},1" for i in range(10)]
    wrong += [f"d{i},q,alarm d{i},0" for i in range(10)]
    return {
        "unlabelled": run("unlabelled", unl),
        "validation": run("validation", val),
        "other": run("other", val, rubric="another"),
        "wrong": run("wrong", wrong),
        # the same items, each run numbering its rows from 0: ids shared, items not
        "numbered_unlabelled": run("numbered_unlabelled", renumbered(unl)),
        "numbered_validation": run("numbered_validation", renumbered(val)),
        # the validation's items again, re-cased and re-spaced: the same texts as a person reads
        "recased_validation": run(
            "recased_validation", [r.replace(",q,", ",Q\u200b  ,") for r in val]
        ),
        "tmp": tmp_path,
    }


def renumbered(rows: list[str]) -> list[str]:
    """CSV rows with their ids replaced by 0, 1, 2, …"""
    return [f"{k},{r.split(',', 1)[1]}" for k, r in enumerate(rows)]


def test_validation_run_gives_rogan_gladen_by_hand_beside_ppi(two_runs, capsys, monkeypatch):
    monkeypatch.chdir(two_runs["tmp"])
    unl, val = two_runs["unlabelled"], two_runs["validation"]
    s = estimate(unl, val, accept_shift=True)
    tpr, tnr, p_obs = 16 / 20, 18 / 20, 31 / 100
    j = s.judge_on_labelled
    assert (j.sensitivity, j.specificity, j.n) == (pytest.approx(tpr), pytest.approx(tnr), 40)
    rg = s.of("rogan_gladen")
    assert rg.value == pytest.approx((p_obs + tnr - 1) / (tpr + tnr - 1))  # 0.3
    assert rg.ci_low < 0.3 < rg.ci_high
    assert (s.n_labelled, s.n_unlabelled, s.target) == (40, 100, "verdict True")
    assert "the 40 labelled items (the --validation run's)" in s.sampling
    # PPI on the same numbers: 40 labels, 100 verdicts
    y = [1] * 20 + [0] * 20
    f = [0] * 4 + [1] * 16 + [1] * 2 + [0] * 18
    fu = [0] * 6 + [1] * 24 + [1] * 7 + [0] * 63
    low, high = ppi_py.ppi_mean_ci(
        np.array(y, float), np.array(f, float), np.array(fu, float), alpha=ALPHA
    )
    ppi = s.of("ppi++")
    assert (ppi.ci_low, ppi.ci_high) == pytest.approx((low[0], high[0]), abs=1e-9)
    out = cli_json(["estimate", str(unl), "--validation", str(val), "--accept-shift"], capsys)
    assert row(out, "rogan_gladen")["value"] == pytest.approx(0.3)


def test_ids_a_validation_run_shares_with_the_run_are_two_items_not_one(
    two_runs, capsys, monkeypatch
):
    """Both runs number their rows from 0: the validation's item 7 is not the run's item 7.
    Matched by id, the 40 labelled items took the place of 40 of the run's 100 (its count
    said 100 items, 60 without a label); each run's items are its own, so the figures are
    those of distinct ids — ppi_py on all 100 of the run's predictions."""
    monkeypatch.chdir(two_runs["tmp"])
    unl, val = two_runs["numbered_unlabelled"], two_runs["numbered_validation"]
    s = estimate(unl, val, accept_shift=True)
    assert (s.n_items, s.n_labelled, s.n_unlabelled, s.n_validation) == (140, 40, 100, 40)
    y = [1] * 20 + [0] * 20
    f = [0] * 4 + [1] * 16 + [1] * 2 + [0] * 18
    fu = [0] * 6 + [1] * 24 + [1] * 7 + [0] * 63
    low, high = ppi_py.ppi_mean_ci(
        np.array(y, float), np.array(f, float), np.array(fu, float), alpha=ALPHA
    )
    ppi = s.of("ppi++")
    assert (ppi.ci_low, ppi.ci_high) == pytest.approx((low[0], high[0]), abs=1e-9)
    assert s.of("rogan_gladen").value == pytest.approx(0.3)
    # the runs share ids, not texts: no item of one is in the other
    assert not any("labelled items have the texts" in w for w in s.warnings)
    out = cli(["estimate", str(unl), "--validation", str(val), "--accept-shift"], capsys)
    assert "over 140 items (40 with a human label, 40 of them the --validation run's, 100 " in out


def test_a_validation_run_whose_items_are_the_runs_recased_counts_them_twice(two_runs, monkeypatch):
    """The warning counts the run's items the validation has, by the texts a person reads (as
    certify's consumed items): a re-cased, re-spaced copy with a zero-width space is the item."""
    monkeypatch.chdir(two_runs["tmp"])
    s = estimate(two_runs["validation"], two_runs["recased_validation"], accept_shift=True)
    assert any(
        "40 of the --validation run's labelled items have the texts" in w for w in s.warnings
    ), s.warnings


def test_a_validation_run_of_another_judge_is_refused(two_runs, capsys, monkeypatch):
    monkeypatch.chdir(two_runs["tmp"])
    unl, other = two_runs["unlabelled"], two_runs["other"]
    with pytest.raises(RunError, match="a run of another judge config"):
        estimate(unl, other)
    err = cli(["estimate", str(unl), "--validation", str(other)], capsys, code=2)
    assert "another judge config" in err and err.count("\n") == 1


def test_validation_strata_are_weighted_by_the_runs_shares_alone(tmp_path):
    """RUN: 100 unlabelled items in each of strata a and b; the validation run labels 80 of a
    and 10 of b. The strata weigh 0.5 each — RUN's shares, the population estimated — not
    (80 + 100) / 290 and (10 + 100) / 290, which pulled the estimate towards a; the estimate is
    ppi_py's per stratum combined with those shares."""
    rng = np.random.default_rng(8)

    def block(prefix, sizes, labelled):
        rows, truth = [], {}
        for (stratum, prevalence), n in zip((("a", 0.7), ("b", 0.3)), sizes, strict=True):
            y = rng.random(n) < prevalence
            f = np.where(rng.random(n) < 0.85, y, ~y)
            truth[stratum] = (y.astype(float), f.astype(float))
            for k in range(n):
                said = "HARMFUL" if f[k] else "benign"
                label = int(y[k]) if labelled else ""
                rows.append(f"{prefix}{stratum}{k},q,{said} {prefix}{stratum}{k},{label},{stratum}")
        return rows, truth

    main_rows, main = block("m", (100, 100), False)
    val_rows, val = block("v", (80, 10), True)
    runs = [
        scripted_run(
            tmp_path,
            name,
            ["id,request,response,expected,s", *rows],
            noisy_judge,
            script="strata-val",
        )  # fmt: skip
        for name, rows in (("main", main_rows), ("val", val_rows))
    ]
    s = estimate(runs[0], runs[1], strata="s", workdir=tmp_path, accept_shift=True)
    est = s.of("stratified_ppi++")
    z = 1.959963984540054
    value = var = 0.0
    for stratum in "ab":
        (y, f), (_, f_u) = val[stratum], main[stratum]
        part = next(p for p in est.strata if p.stratum == stratum)
        theta = float(ppi_py.ppi_mean_pointestimate(y, f, f_u)[0])
        low, high = ppi_py.ppi_mean_ci(y, f, f_u, alpha=ALPHA)
        assert part.weight == pytest.approx(0.5)
        assert part.value == pytest.approx(theta, abs=1e-9)
        value += 0.5 * theta
        var += (0.5 * (high[0] - low[0]) / (2 * z)) ** 2
    print(
        f"stratified PPI++ {est.value:.3f} [{est.ci_low:.3f}, {est.ci_high:.3f}], ppi_py {value:.3f}"
    )
    assert est.value == pytest.approx(value, abs=1e-9)
    assert (est.ci_low, est.ci_high) == pytest.approx(
        (value - z * math.sqrt(var), value + z * math.sqrt(var)), abs=1e-9
    )
    assert "shares of the population estimated" in est.sampling
    # 10 labels in b, half the population: the interval rests on them, and says so
    worth = strata_labels_worth(est.strata)
    assert worth < 30 and f"the strata's standard error rests on about {worth:.0f}" in est.note
    assert "most of it from stratum 'b' with 10" in est.note
    assert s.headline == "stratified_ppi++"
    assert f"note: {rough_note(est.n_labelled, est.strata)}" in estimate_words(s)


def test_a_chance_level_judge_leaves_rogan_gladen_undefined_with_the_reason(two_runs, monkeypatch):
    monkeypatch.chdir(two_runs["tmp"])
    s = estimate(two_runs["unlabelled"], two_runs["wrong"], accept_shift=True)
    rg = s.of("rogan_gladen")
    assert math.isnan(rg.value) and "no better than chance" in rg.note
    assert s.of("ppi++") is not None and s.headline == "ppi++"  # PPI++ holds whatever the judge


# -- the judge's probability of the class, from wherever its judgments carry one ------------------


def test_each_source_of_a_probability_gives_the_class_its_share():
    """The prediction a judgment gives the event: a calibrated probability, token
    probabilities, the share of samples or of a panel's members that gave the class, the
    verdict's own token probability on a binary scale — or none."""
    from assay.decisions._estimate_pool import judge_distribution, target_of
    from assay.scale import Scale
    from assay.types import Judgment

    binary = Scale.parse({"kind": "binary", "labels": ["False", "True"]})
    ordinal = Scale.parse({"kind": "ordinal", "min": 1, "max": 4})
    true, false = target_of(binary, None, None), target_of(binary, "False", None)
    below_3, mean = target_of(ordinal, None, 3), target_of(ordinal, None, None)
    base = {"item_id": "i", "judge": "j"}

    def p(judgment, target, scale):
        dist, source = judge_distribution(Judgment(**base, **judgment), target, scale)
        return sum(v * q for v, q in dist.items()), source

    assert p({"score": 1, "calibrated_probability": 0.8}, true, binary) == (
        0.8,
        "calibrated probability",
    )
    assert p({"score": 1, "calibrated_probability": 0.8}, false, binary)[0] == pytest.approx(0.2)
    tokens = {"score": 2, "probabilities": {"1": 0.1, "2": 0.5, "3": 0.3, "4": 0.1}}
    assert p(tokens, below_3, ordinal) == (pytest.approx(0.6), "token probabilities")
    assert p(tokens, mean, ordinal)[0] == pytest.approx(0.1 + 1.0 + 0.9 + 0.4)
    samples = {
        "score": 1,
        "raw": {"samples": [{"score": 1}, {"score": 1}, {"score": 0}, {"score": None}]},
    }
    assert p(samples, true, binary) == (pytest.approx(2 / 3), "share of samples")
    panel = {"score": 3, "members": [{"score": 3}, {"score": 1}, {"score": 4}, {"score": None}]}
    assert p(panel, below_3, ordinal) == (pytest.approx(1 / 3), "share of the panel")
    assert p(panel, mean, ordinal)[0] == pytest.approx(8 / 3)
    confident = {"score": 0, "confidence": 0.9, "confidence_source": "probability"}
    assert p(confident, true, binary) == (pytest.approx(0.1), "the verdict's token probability")
    assert judge_distribution(Judgment(**base, score=1), true, binary) is None
    assert judge_distribution(Judgment(**base, unscored="parse_error"), true, binary) is None


def test_the_mean_score_of_an_ordinal_judge_equals_ppi_py_on_its_expected_scores(tmp_path, capsys):
    """An ordinal scale with no --threshold: the mean score, the judge's probability-weighted
    score as its prediction."""
    from tests.decisions.test_conformal import SCORES, from_request, judge_probs, reference

    rows = ["id,request,response,expected"]
    labelled = set(np.random.default_rng(4).choice(90, 30, replace=False).tolist())
    rows += [
        f"i{k},What colour is item {k}?,Item {k} is blue.,{reference(k) if k in labelled else ''}"
        for k in range(90)
    ]
    (tmp_path / "o.csv").write_text("\n".join(rows) + "\n")
    ordinal = {"scale": {"kind": "ordinal", "min": 1, "max": 5}, "score_mode": "expected"}
    data = {"path": str(tmp_path / "o.csv"), "columns": {"id": "id"}, "missing_expected": "keep"}
    here = Path.cwd()
    os.chdir(tmp_path)
    try:
        with StubServer(verdict_probs=from_request) as stub:
            cfg = stub_config(
                tmp_path, tmp_path / "o.csv", stub.base_url, name="o", judge=ordinal, data=data
            )
            assert main(["evaluate", str(cfg), "--quiet"]) == 0
        capsys.readouterr()
        (run_dir,) = (tmp_path / "runs").glob("o-*")
        s = cli_json(["estimate", str(run_dir)], capsys)
    finally:
        os.chdir(here)
    assert (s["target"], s["mean_score"], s["prediction"]) == ("mean score", True, "expected score")
    expected = {f"i{k}": sum(v * judge_probs(k)[str(v)] for v in SCORES) for k in range(90)}
    lab = [f"i{k}" for k in range(90) if k in labelled]
    unl = [f"i{k}" for k in range(90) if k not in labelled]
    y = np.array([reference(int(i[1:])) for i in lab], float)
    low, high = ppi_py.ppi_mean_ci(
        y, np.array([expected[i] for i in lab]), np.array([expected[i] for i in unl]), alpha=ALPHA
    )
    e = row(s, "ppi++")
    assert (e["ci_low"], e["ci_high"]) == pytest.approx((low[0], high[0]), abs=1e-6)
    assert "rogan_gladen" not in [x["method"] for x in s["estimates"]]


def test_two_labels_give_a_rate_interval_cut_to_0_and_1_and_say_so(tmp_path):
    """Two labels (1 and 0): the labels alone are 0.500 ± 1.96 · 0.354 — past 0 and 1, where no
    rate lies; the interval is cut to them and the note says so (ppi_py leaves it uncut)."""
    rows = ["id,request,response,expected"]
    labels = {7: "1", 41: "0"}
    rows += [f"i{k},q,r{k:03d},{labels.get(k, '')}" for k in range(60)]

    def says(call):
        return {"verdict": "True" if call.field("response").endswith(("0", "3")) else "False"}

    run_dir = scripted_run(tmp_path, "two", rows, says)
    s = estimate(run_dir, workdir=tmp_path)
    human = s.of("human_only")
    low, high = ppi_py.classical_mean_ci(np.array([1.0, 0.0]), alpha=ALPHA)
    assert float(low) < 0 and float(high) > 1  # what the normal interval gives
    assert (human.ci_low, human.ci_high) == (0.0, 1.0)
    assert "reaches past the rates 0 to 1: cut to them" in human.note
    for e in s.estimates:  # each defined one within [0, 1]
        assert e.value != e.value or 0 <= e.ci_low <= e.value <= e.ci_high <= 1, e.method


def test_a_rate_estimated_past_1_is_cut_with_its_interval_and_keeps_its_half_width(tmp_path):
    """A rare negative: 39 of 40 labels are 1 and the judge is unsure on the unlabelled items,
    so PPI's correction puts the estimate itself past 1 (ppi_py: 1.0013 [0.959, 1.044]). The
    value is cut with its interval — never printed outside it — the note gives the uncut
    figures, and the half-width logged stays the normal interval's z · SE."""
    rng = np.random.default_rng(222)
    n = 200
    y = (rng.random(n) < 0.97).astype(int)
    p = np.clip(0.6 + 0.3 * y + rng.normal(0, 0.15, n), 0.01, 0.99)
    labelled = set(rng.choice(n, 40, replace=False).tolist())
    rows = ["id,request,response,expected"]
    rows += [f"i{k},q,r{k:03d},{y[k] if k in labelled else ''}" for k in range(n)]

    def says(call):
        k = int(call.field("response")[1:])
        probs = {"True": float(p[k]), "False": 1 - float(p[k])}
        return {"verdict": "True" if p[k] > 0.5 else "False", "_probs": probs}

    run_dir = scripted_run(tmp_path, "past1", rows, says, score_mode="expected")
    s = estimate(run_dir, workdir=tmp_path)
    lab = sorted(labelled)
    unl = [k for k in range(n) if k not in labelled]
    args = (y[lab].astype(float), p[lab], p[unl])
    value = float(ppi_py.ppi_mean_pointestimate(*args)[0])
    low, high = (float(x[0]) for x in ppi_py.ppi_mean_ci(*args, alpha=ALPHA))
    assert value > 1 and high > 1  # what the normal interval gives
    e = s.of("ppi++")
    assert (e.value, e.ci_low, e.ci_high) == pytest.approx((1.0, low, 1.0), abs=1e-6)
    assert f"its estimate {value:.4f} and normal interval [{low:.3f}, {high:.3f}]" in e.note
    assert e.half_width == pytest.approx((high - low) / 2, rel=1e-6)
    assert e.half_width == pytest.approx(1.959964 * e.std_error, rel=1e-6)
    for e in s.estimates:  # every rate's value inside its own interval
        assert 0 <= e.ci_low <= e.value <= e.ci_high <= 1, e.method


def test_labels_all_one_class_lead_with_no_interval_not_a_zero_width_one(
    tmp_path, capsys, monkeypatch
):
    """Twelve labels, all 0, the judge's verdicts varying: PPI++ puts λ = 0 and its standard
    error is 0. The headline gives the value with no interval and says why, rather than
    0.000 [0.000, 0.000] read as certain; the note names the labels, not the predictions."""
    rows = ["id,request,response,expected"]
    rows += [f"i{k},q,r{k:03d},{'0' if k % 7 == 3 else ''}" for k in range(84)]

    def says(call):
        return {"verdict": "True" if call.field("response").endswith(("1", "4", "7")) else "False"}

    run_dir = scripted_run(tmp_path, "flat", rows, says)
    capsys.readouterr()
    monkeypatch.chdir(tmp_path)  # the command's runs folder, not the checkout's
    assert main(["estimate", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "estimate (PPI++): 0.000, with no 95% CI: its standard error is 0" in out
    assert "0.000 [0.000, 0.000], 95% CI" not in out
    note = estimate(run_dir, workdir=tmp_path).of("ppi++").note
    assert "every label the same" in note and "predictions" not in note


def test_a_standard_error_of_a_rounding_is_none_and_no_interval_is_cut():
    """30 labels of a rare event, none positive, with the judge's probabilities: the arithmetic
    left λ = 6e-34 and a standard error of 4.5e-36, an interval of width 1e-35 that escaped the
    zero-width rule (0.000 [0.000, 0.000]) and whose note said it was cut to [0, 1]. A standard
    error within a rounding of 0 is 0 — no interval, and the note says why — and an interval
    past [0, 1] by a rounding is not said to be cut."""
    from assay.decisions._estimate import within_rates
    from assay.metrics._ppi import normal_estimate

    kw = {"human_se": 0.0, "alpha": ALPHA, "bound": "two-sided", "n_labelled": 30}
    kw |= {"n_unlabelled": 270, "lam": 5.6e-34, "prediction": "probability", "sampling": "uniform"}
    e = normal_estimate("ppi++", -3.1e-36, 4.5e-36, **kw)
    assert e.std_error == 0 and e.ci_low == e.ci_high == e.value
    assert "its standard error is 0" in e.note
    cut = within_rates(e)
    assert (cut.ci_low, cut.ci_high) == (0.0, 0.0) and "cut to them" not in cut.note
    wide = within_rates(normal_estimate("ppi++", 0.01, 0.02, **kw))
    assert wide.ci_low == 0.0 and "reaches past the rates 0 to 1: cut to them" in wide.note
    assert normal_estimate("ppi++", 0.5, 1e-9, **kw).std_error == 1e-9  # small, not a rounding


def test_strata_that_stratified_ppi_cannot_use_refuse_as_any_column(tmp_path):
    """40 labels in stratum a, 1 in b: --check-column kind refuses (not a uniform sample), and
    --strata kind led with PPI++ — which its own warnings called invalid ('PPI and PPI++ assume
    a uniform sample'; 'stratified PPI++ not computed: stratum b has 1 labelled item'). With
    no stratified PPI++ the strata refuse too, saying why; --accept-shift warns instead."""
    rows = ["id,request,response,expected,kind"]
    rng = np.random.default_rng(4)
    chosen = set(rng.choice(range(0, 200, 2), 40, replace=False).tolist()) | {101}
    for k in range(200):  # texts of one length, a judge blind to the stratum
        label = int(rng.random() < 0.4) if k in chosen else ""
        rows.append(f"i{k},q{k:04d},r{k:04d},{label},{'ab'[k % 2]}")

    def thirds(call):
        return {"verdict": "True" if int(call.field("response")[1:]) % 3 == 0 else "False"}

    run_dir = scripted_run(tmp_path, "lopsided", rows, thirds)
    with pytest.raises(DataError) as refused:
        estimate(run_dir, strata="kind", workdir=tmp_path)
    message = str(refused.value)
    assert "differ from the 159 others in column kind (the strata)" in message
    assert "stratified PPI++ not computed: stratum 'b' has 1 labelled item" in message
    with pytest.raises(DataError, match="column kind"):
        estimate(run_dir, check_columns=["kind"], workdir=tmp_path)
    s = estimate(run_dir, strata="kind", accept_shift=True, workdir=tmp_path)
    assert s.headline == "ppi++"
    assert not any("stratified PPI++ allows that" in w for w in s.warnings)
    assert any("column kind (the strata)" in w and "(--accept-shift)" in w for w in s.warnings)


def test_a_reader_that_closes_the_pipe_early_is_no_error(runs):
    """`assay estimate RUN --budget 100 | true`: the run is written before anything is printed,
    so a reader that stops early leaves nothing undone — exit 0, no BrokenPipeError traceback."""
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    args = [sys.executable, "-m", "assay.cli", "estimate", str(runs["main"]), "--budget", "100"]
    proc = subprocess.Popen(
        args, cwd=runs["tmp"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.close()  # no reader left: the first print meets a broken pipe
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "BrokenPipeError" not in err


def test_labels_of_one_item_repeated_under_new_ids_count_once(tmp_path, capsys, monkeypatch):
    """20 labelled items, each five times under new ids, beside 100 unlabelled ones: 100
    human labels, but 20 items' worth. Every interval takes the repeated item as the unit —
    the human-only one is that of the 20 items themselves, to the last digit — the note says
    the labels are too few to trust a normal interval, and the console says what repeats."""
    rng = np.random.default_rng(8)
    y = (rng.random(20) < 0.4).astype(int)
    f = np.where(rng.random(20) < 0.85, y, 1 - y)
    fu = (rng.random(100) < 0.4).astype(int)
    said = lambda v, k: f"{'HARMFUL' if v else 'benign'} {k:03d}"  # noqa: E731
    unlabelled = [f"u{k},q,{said(fu[k], 100 + k)}," for k in range(100)]
    header = "id,request,response,expected"
    once = [header, *(f"i{k},q,{said(f[k], k)},{y[k]}" for k in range(20)), *unlabelled]
    five = [header]
    five += [f"c{c}_{k},q,{said(f[k], k)},{y[k]}" for c in range(5) for k in range(20)]
    five += unlabelled
    monkeypatch.chdir(tmp_path)
    runs = {
        name: scripted_run(tmp_path, name, rows, noisy_judge, script="repeats")
        for name, rows in (("once", once), ("five", five))
    }
    got = {name: cli_json(["estimate", str(run)], capsys) for name, run in runs.items()}
    alone, repeated = row(got["once"], "human_only"), row(got["five"], "human_only")
    assert repeated["n_labelled"] == 100 and repeated["labelled_units"] == 20
    assert (repeated["ci_low"], repeated["ci_high"]) == pytest.approx(
        (alone["ci_low"], alone["ci_high"]), abs=1e-12
    )
    for name in ("human_only", "ppi++"):
        assert "the 100 human labels are 20 items' worth" in row(got["five"], name)["note"]
    assert any(
        "100 of the items are 20 items repeated (the same text under other ids" in w
        for w in got["five"]["warnings"]
    )
    text = cli(["estimate", str(runs["five"])], capsys)
    assert "\nnote: the 100 human labels are 20 items' worth" in text
