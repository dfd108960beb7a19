"""Which runs are judge runs, and which of them were measured on the same thing."""

from __future__ import annotations

from typing import Any

from assay.errors import RunError
from assay.runs import search_runs

JUDGE_COMMANDS = ("evaluate", "harness", "optimize")
DEFAULT_EXPERIMENT = "assay"
_GROUP_FIELDS = ("kind", "items", "scale", "threshold")
# The default of a reliability leaderboard: a judge's weakest test (``worst_test`` in _tables),
# computed from the per-test metrics a harness run logs, not logged itself.
WORST_TEST = "worst_test_rate"
# What a run logged before assay recorded the item set: its group is labelled with this prefix.
LEGACY = "no item fingerprint: data "


def _left(run, reason: str) -> dict[str, str]:
    return {"run_id": run.info.run_id, "name": run.info.run_name or "", "reason": reason}


def select(client, uri: str, selectors: list[str], experiment: str | None, tags: dict):
    """Judge runs to consider, runs left out on the way, and the judge run whose group is
    compared when the first selector is a run id (else ``None``: the largest group is)."""
    from mlflow.exceptions import MlflowException

    picked: list[tuple[Any, bool]] = []  # (run, named by its id)
    for sel in selectors:
        try:
            picked.append((client.get_run(sel), True))
            continue
        except MlflowException:
            pass
        exp = client.get_experiment_by_name(sel)
        if exp is None:
            raise RunError(f"{sel}: no such run id or experiment name in {uri}")
        picked += [(r, False) for r in search_runs(client, [exp.experiment_id])]
    only_exp = None
    if not selectors:
        name = experiment or DEFAULT_EXPERIMENT
        only_exp = client.get_experiment_by_name(name)
        if only_exp is None:
            raise RunError(
                f"no experiment '{name}' in {uri}: name the runs or experiments to compare"
            )
        picked = [(r, False) for r in search_runs(client, [only_exp.experiment_id])]
    elif experiment:
        only_exp = client.get_experiment_by_name(experiment)
        if only_exp is None:
            raise RunError(f"no experiment '{experiment}' in {uri}")

    candidates, left_out, seen, first = [], [], set(), None
    for i, (run, named) in enumerate(picked):
        for r in _judge_runs(client, run, named, left_out):
            if r.info.run_id in seen:
                continue
            seen.add(r.info.run_id)
            reason = _filtered_out(r, only_exp, tags)
            if reason:
                left_out.append(_left(r, reason))
                continue
            candidates.append(r)
            if i == 0 and named and first is None:
                first = r
    return candidates, left_out, first


def _judge_runs(client, run, explicit: bool, left_out: list) -> list:
    """A run as judge runs: itself, a harness parent's per-judge children, or nothing."""
    t = run.data.tags
    command = t.get("assay.command")
    if run.info.lifecycle_stage == "deleted":
        left_out.append(_left(run, "run deleted"))
        return []
    if command not in JUDGE_COMMANDS:
        # Inside an experiment, assay's own comparison runs are not judges and not noise.
        if command == "compare" and not explicit:
            return []
        left_out.append(
            _left(run, f"an '{command}' run, not a judge run" if command else "not an assay run")
        )
        return []
    if t.get("assay.role") == "parent":  # harness: one child per judge; optimize: two
        if not explicit:
            return []  # its children are in the same experiment
        children = search_runs(
            client, [run.info.experiment_id], f"tags.mlflow.parentRunId = '{run.info.run_id}'"
        )
        if not children:
            left_out.append(_left(run, f"{command} run without per-judge runs"))
        return children
    return [run]


def _filtered_out(run, experiment, tags: dict[str, str]) -> str | None:
    if experiment is not None and run.info.experiment_id != experiment.experiment_id:
        return f"not in experiment '{experiment.name}'"
    for k, want in tags.items():
        have = run.data.tags.get(k)
        if have != want:
            return f"tag {k} is {have!r}, not {want!r}"
    return None


def kind_of(run) -> str:
    """What a judge run measured: ``agreement`` with labels (evaluate, and an optimize run's
    baseline and optimized judges) or ``reliability`` (harness)."""
    return "reliability" if run.data.tags.get("assay.command") == "harness" else "agreement"


def item_set(run) -> str:
    """The fingerprint of the exact items a judge run was measured on (``assay.items``). A run
    logged before assay recorded it stands in a labelled group of its own: its data set, and
    its split when it logged one (an optimize child's test split is not its data set)."""
    t = run.data.tags
    if t.get("assay.items"):
        return t["assay.items"]
    split = t.get("assay.split")
    return LEGACY + t.get("assay.data", "—") + (f" ({split} split)" if split else "")


def measured_on(run) -> str:
    """The items of a run in words: ``60 items``, ``15 of 60 items (test split)``, ``24 probes
    of 6 source items``; what a leaderboard row and a left-out reason show."""
    t = run.data.tags
    n, of, split = t.get("assay.n_items"), t.get("assay.n_data"), t.get("assay.split")
    if not n:
        return item_set(run)
    if split == "probes":
        return f"{n} probes of {of} source items"
    if split in (None, "all") or of in (None, n):
        return f"{n} items" + ("" if split in (None, "all") else f" ({split} split)")
    return f"{n} of {of} items ({split} split)"


def shared_items(runs: list) -> str:
    """The items of a group of runs in words; runs on the same items drawn in different ways
    (an evaluate run on a file of exactly an optimize run's test split) name them each way."""
    return " = ".join(sorted({measured_on(r) for r in runs}))


def _group_key(run) -> tuple[str, str, str, str]:
    """What decides whether two runs' figures compare: the kind, the items, the scale and the
    failure threshold (an evaluate run's ``threshold``: failure = score below it; failure
    precision and incidence at 3 and at 4 count other events)."""
    threshold = run.data.params.get("threshold", "None")
    return (kind_of(run), item_set(run), run.data.tags.get("assay.scale", ""), threshold)


def comparable(candidates: list, left_out: list, first, force: bool):
    """The compared runs and their group key (``None`` when forced across groups): runs are
    compared only on the same kind, the same items (:func:`item_set`), the same scale and the
    same failure threshold."""
    if not candidates:
        return [], None
    groups: dict[tuple, list] = {}
    for r in candidates:
        groups.setdefault(_group_key(r), []).append(r)
    if force:
        return candidates, next(iter(groups)) if len(groups) == 1 else None
    if first is not None:
        key = _group_key(first)
    else:  # the largest group; on a tie, the one with the most recent run
        key = max(groups, key=lambda k: (len(groups[k]), max(r.info.start_time for r in groups[k])))
    shown = shared_items(groups[key])
    for k, runs in groups.items():
        if k == key:
            continue
        name, a, b = next(
            (n, a, b) for n, a, b in zip(_GROUP_FIELDS, k, key, strict=True) if a != b
        )
        for r in runs:
            if name == "items":
                why = f"different items: {measured_on(r)}, the compared runs' {shown}"
                if measured_on(r) == shown:  # as many: other texts or references
                    why += (
                        f" — as many, but other ones or other references (item fingerprint "
                        f"{a[:10]}, the compared runs' {b[:10]})"
                    )
                if a.startswith(LEGACY):
                    why += " (logged without an item fingerprint: only runs of its own group match)"
            else:
                why = f"{name} differs: {a or '—'} vs {b or '—'}"
            left_out.append(_left(r, why))
    return groups[key], key


def group_of(runs: list, key: tuple | None) -> dict[str, str] | None:
    """What the compared runs share (``None`` when forced across groups)."""
    if key is None:
        return None
    t = runs[0].data.tags
    return {
        "kind": key[0],
        "items": key[1],
        "scale": key[2],
        "threshold": key[3],
        "measured_on": shared_items(runs),
        "data": t.get("assay.data", ""),
        "probes": t.get("assay.probes", ""),
    }


def notes(runs: list, metric: str) -> list[str]:
    """What a reader must know to trust the ranking: ``worst_test_rate`` keeps a judge that
    ignores the response off the top only through a test whose verdict must move (scoring
    ``flip`` or ``criterion``: ``label_flip``, the agent tests) — say so when no run has one."""
    if metric != WORST_TEST:
        return []
    from assay.errors import ConfigError
    from assay.reliability import get_test

    def moves(test: str) -> bool:
        try:
            return get_test(test).scoring in ("flip", "criterion")
        except ConfigError:  # a plug-in test this process has not registered
            return False

    tests = {k.split(".")[0] for r in runs for k in r.data.metrics if k.endswith(".consistency")}
    if any(moves(t) for t in tests):
        return []
    return [
        "no compared run has a test whose verdict must move (label_flip, agent_perturbation, "
        "agent_positives): worst_test_rate cannot tell a judge that ignores the response from "
        "one that reads it"
    ]


def no_width_note(rows: list, metric: str) -> list[str]:
    """The leaderboard rows whose interval prints as one value ([1.000, 1.000]): the runs' own
    notes say so, but MLflow keeps the bounds, not the notes — said here, once."""
    from assay.metrics import NARROWER_THAN_SHOWN

    flat = [
        r.judge
        for r in rows
        if r.ci_low is not None
        and r.ci_high is not None
        and r.ci_high - r.ci_low < NARROWER_THAN_SHOWN
    ]
    if not flat:
        return []
    return [
        f"{metric} of {', '.join(flat)}: an interval of no width at the printed digits — every "
        "bootstrap replicate gave (about) the same value, which shows no variation in the "
        "resamples, not certainty"
    ]


def default_metric(runs: list) -> str:
    """kappa_categorical (else accuracy) for evaluate runs; for harness runs the worst test's
    rate (``worst_test_rate``), which a judge that ignores content cannot win — the mean pass
    rate can be led by a constant judge, whose invariance tests all pass; forced across both
    kinds, whichever kind has more runs. A run that logged no κ (it was undefined: that judge
    gave one verdict everywhere) ranks last on κ, rather than moving every run to accuracy,
    which such a judge can lead on a skewed set."""
    evaluate = [r for r in runs if kind_of(r) == "agreement"]
    if len(evaluate) * 2 < len(runs):
        return WORST_TEST
    if any("kappa_categorical" in r.data.metrics for r in evaluate):
        return "kappa_categorical"
    return "accuracy"
