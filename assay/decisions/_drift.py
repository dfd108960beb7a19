"""``assay drift OLD NEW``: the same judge config re-run on the same anchor items — did its
verdicts change more often than its own sampling noise explains? (Providers change models
behind a name.)

Both runs must be of the same judge config (its hash) on the same items (the ``assay.items``
fingerprint); anything else is refused in one line. The noise is the judge's measured
stochastic stability: a harness run's ``stochastic_stability`` samples of that judge config
(``--stability HARNESS_RUN``); without one, no change is expected and any change is flagged.
The test is :func:`assay.metrics.drift_test`'s.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from pathlib import Path

from assay import _json
from assay.decisions._finished import JudgeRun, distinct_runs, read_judge_run
from assay.decisions._paired import (
    check_same_items,
    paired_ids,
    side,
    unscored_shift,
    write_outputs,
)
from assay.decisions._paired_results import DriftResult, ItemChange
from assay.errors import ConfigError, RunError
from assay.inputs import repeated_samples, samples_of
from assay.runs import RunStore, sealed_run

STABILITY_TEST = "stochastic_stability"
NO_STABILITY = "no stability measured; any change is flagged"


def drift(
    old: str | Path,
    new: str | Path,
    *,
    tracking_uri: str,
    stability: str | Path | None = None,
    level: float = 0.05,
    confidence: float = 0.95,
    out_dir: Path | None = None,
    log: bool = True,
    workdir: Path | None = None,
) -> DriftResult:
    """The verdicts of ``new`` against ``old`` (evaluate runs of one judge config on the same
    items): which changed, their rate with a Clopper–Pearson interval, and the one-sided exact
    binomial test against the rate ``stability`` (a harness run directory) predicts."""
    from assay.metrics import drift_test
    from assay.metrics import stability as measure

    for name, value in (("--level", level), ("--confidence", confidence)):
        if not 0 < value < 1:
            raise ConfigError(f"drift {name} {value}: must be strictly between 0 and 1")

    with tempfile.TemporaryDirectory(prefix="assay-drift-") as tmp:
        ro = read_judge_run(old, tracking_uri=tracking_uri, scratch=Path(tmp))
        rn = read_judge_run(new, tracking_uri=tracking_uri, scratch=Path(tmp))
    distinct_runs([ro, rn], "drift")
    if ro.config_hash != rn.config_hash:
        raise RunError(
            f"{new}: judge config {rn.config_hash[:10]}, OLD's is {ro.config_hash[:10]}: drift "
            "compares one judge config with itself (compare two configs with compare --paired)"
        )
    check_same_items(ro, rn, "OLD", "NEW")
    ids, left_out = paired_ids(ro, rn, need_reference=False)
    if not ids:
        raise RunError(f"{old} and {new}: no item was scored in both runs")
    measured = None
    source = NO_STABILITY
    if stability is not None:
        measured = measure(stability_samples(Path(stability), ro).values(), level=level)
        source = (
            f"{STABILITY_TEST} of this judge config in {stability}: {measured.items} items, up "
            f"to {measured.samples} samples each; P(two verdicts on an item differ) = "
            f"{measured.rate:.3f}, its upper {1 - level / 2:.1%} bound {measured.upper:.3f} is "
            f"tested at {level / 2:g} (the two errors within {level:g})"
        )
    label = ro.scale.label_of
    changes = [
        ItemChange(
            item_id=i,
            old=_shown(ro.judgments[i].score, label),
            new=_shown(rn.judgments[i].score, label),
        )
        for i in ids
        if ro.judgments[i].score != rn.judgments[i].score
    ]
    by_id = {it.id: it for it in ro.items}
    anchors = [by_id[i] for i in ids]
    test = drift_test(
        len(changes),
        len(ids),
        measured,
        level=level,
        confidence=confidence,
        clusters=samples_of(anchors),
    )
    unscored = unscored_shift(ro, rn, [it.id for it in ro.items], level)
    said = f"{test.changed} of {test.n} verdicts changed ({test.rate:.1%})"
    if test.effective_n is not None:  # an Inspect log's epochs: tested as the samples allow
        epochs = repeated_samples(anchors)
        said += (
            f"; {epochs[0]} of the anchors are epochs of {epochs[1]} Inspect samples, tested "
            f"as {test.effective_n:.1f} independent anchors"
        )
    if unscored.moved:
        verdict = f"drifted: {unscored.said()}; of the items both scored, {said}"
    elif test.drifted:
        verdict = (
            f"drifted: {said}, more than stability explains ({test.tested_against:.3f}; "
            f"p = {test.p_value:.3g} < {test.test_level:g})"
        )
    else:
        verdict = (
            f"within stability: {said}; stability explains up to {test.tested_against:.3f} "
            f"(p = {test.p_value:.3g} at {test.test_level:g})"
        )
        if unscored.said():
            verdict += f"; {unscored.said()}"
    result = DriftResult(
        old=side(ro),
        new=side(rn),
        items=ro.fingerprint,
        n_items=len(ro.items),
        left_out=left_out,
        stability=source,
        measured=measured,
        test=test,
        changes=changes,
        verdict=verdict,
        unscored=unscored,
    )
    return write_outputs(result, out_dir, log, tracking_uri, workdir)


def _shown(score: int | None, label) -> str:
    name = label(score) if score is not None else None
    return f"{name} ({score})" if name else str(score)


def stability_samples(harness_dir: Path, run: JudgeRun) -> dict[str, list[int]]:
    """Each source item's sampled verdicts in a harness run's ``stochastic_stability`` probes,
    by the judge whose config is ``run``'s (scored samples only) — of a finished harness run
    whose files are the ones it sealed."""
    state = sealed_run(harness_dir, kind="harness", needs=("probes.jsonl",))
    want = run.config_hash[:8]
    files = sorted((harness_dir / "judgments").glob(f"*-{want}.jsonl"))
    if not files:
        have = sorted(p.stem for p in (harness_dir / "judgments").glob("*.jsonl"))
        raise RunError(
            f"{harness_dir}: no judge of config {run.config_hash[:10]} (its judges: "
            f"{', '.join(have) or 'none'})"
        )
    source_of = {}
    for _, p in _json.records(harness_dir / "probes.jsonl"):
        if p.get("test") == STABILITY_TEST:
            source_of[p["id"]] = p["source_id"]
    if not source_of:
        raise RunError(f"{harness_dir}: the run has no {STABILITY_TEST} probes")
    out: dict[str, list[int]] = defaultdict(list)
    store = RunStore(harness_dir, run_hash=str(state.get("run_hash")))
    for item_id, j in store.judgments(str(files[0].relative_to(harness_dir))).items():
        if item_id in source_of and j.score is not None:  # a retried sample: its latest
            out[source_of[item_id]].append(j.score)
    if not any(len(v) >= 2 for v in out.values()):
        raise RunError(
            f"{harness_dir}: no item with 2 scored {STABILITY_TEST} samples of this judge"
        )
    return dict(out)
