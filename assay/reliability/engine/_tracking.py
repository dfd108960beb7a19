"""What MLflow records of a harness run: a parent run (test settings, probe counts, generation
cost, artifacts) and a child run per judge (judge config, per-test metrics with CI bounds)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from assay.inputs import item_set_tags
from assay.reliability._results import HarnessSummary, JudgeReliability, PlaceboScores
from assay.reliability.engine._judging import judgment_file
from assay.reliability.scoring import get_scoring, kind_of
from assay.runs import TrackedRun, confidence_tag, flatten_metrics
from assay.types import Item

# every test's envelope; what its scoring kind adds is the kind's ``tracked``
_ENVELOPE = ("pass_rate", "consistency", "unscored")


def judge_metrics(r: JudgeReliability) -> dict[str, float]:
    """One judge's metrics: ``<test>.<metric>`` (with ``_ci_low`` / ``_ci_high``), its usage
    (``usage_*``: answered by the server; ``usage_cached_*``: from the LM cache), the cost of
    its work (``work_*``: both) and its mean pass rate."""
    tests = {}
    for test, scores in r.tests.items():
        m = scores.model_dump()  # the envelope and the scoring kind's metrics, flat
        kind = kind_of(test)
        keys = _ENVELOPE + (get_scoring(kind).tracked if kind else ())
        tests[test] = {k: m[k] for k in keys if m.get(k) is not None}
        if scores.placebo is not None:
            tests[test]["placebo"] = placebo_metrics(scores.placebo)
    figures = {
        "calls",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "unpriced_calls",
        "untallied_calls",
    }
    usage = r.usage.model_dump(include=figures | {f"cached_{k}" for k in figures})
    return {
        **flatten_metrics(tests),
        **flatten_metrics(usage, "usage_"),
        **flatten_metrics(r.work.model_dump(include=figures), "work_"),
        **flatten_metrics({"mean_pass_rate": r.mean_pass_rate}),
    }


def placebo_metrics(p: PlaceboScores) -> dict[str, Any]:
    """A bias test's effects against its placebo, per cue cell (``<cell>.effect`` with its
    interval, the two flip rates and directional shares, the p-values, the design effect of
    epochs, ``flagged`` as 0 or 1),
    the test's flag and how many placebo verdicts are unscored."""
    cells: dict[str, Any] = {}
    for cell, e in p.effects.items():
        cells[cell] = {
            "effect": {"value": e.effect, "ci_low": e.ci_low, "ci_high": e.ci_high},
            **{
                k: getattr(e, k)
                for k in (
                    "n",
                    "cue_rate",
                    "placebo_rate",
                    "directional_share",
                    "placebo_directional_share",
                    "p_value",
                    "p_adjusted",
                    "design_effect",  # None where the items are independent
                )
            },
            "flagged": None if e.flagged is None else float(e.flagged),
        }
    flagged = None if p.flagged is None else float(p.flagged)
    return {**cells, "flagged": flagged, "unscored": p.unscored}


def parent_metrics(summary: HarnessSummary, reused: dict[str, int]) -> dict[str, float]:
    """The parent run's metrics: probes per test, those taken unchanged from an earlier run
    (``probes_reused.<test>``), drops, what generation spent (answered by the server, from the
    LM cache, and the cost of its work) and what the run paid (``spend_*``)."""
    return {
        **flatten_metrics({"probes": summary.probes, "probes_reused": reused}),
        **flatten_metrics({t: sum(d.values()) for t, d in summary.dropped.items()}, "dropped."),
        **flatten_metrics(
            {
                k: {
                    "cost_usd": u.cost_usd,
                    "calls": u.calls,
                    "cached_calls": u.cached_calls,
                    "work_cost_usd": u.work().cost_usd,
                }
                for k, u in summary.generation_usage.items()
            },
            "usage.",
        ),
        **flatten_metrics(summary.spend, "spend_"),  # the run's calls as the server answered
    }


def harness_tracked(
    run_dir: Path,
    config,
    judge_cfgs,
    summary: HarnessSummary,
    reused: dict[str, int],
    *,
    judged: Iterable[Item],
) -> TrackedRun:
    """``judged``: the probes judged, as items (``assay.items``; an
    :class:`~assay.inputs.ItemStream` is read a slice at a time)."""
    tags = {
        "assay.data": summary.data_fingerprint[:16],
        "assay.probes": run_dir.name,
        "assay.scale": config.scale.describe(),
        **item_set_tags(judged, split="probes", of=summary.seeds),
        **confidence_tag(config.bootstrap.confidence),
    }
    params = {
        "data.path": config.data.path,
        "scale": config.scale.describe(),
        "seeds": str(summary.seeds),
        "generator.model": config.generator.model,
        "generator.temperature": str(config.generator.temperature),
        "validator.model": config.validator.model,
        "review.required": str(config.review.required),
    }
    for test, settings in config.tests.items():
        params[f"test.{test}"] = str(settings or {})
    artifacts: list[Path | tuple[Path, str]] = [(run_dir / "programs", "programs")]
    artifacts += [run_dir / f for f in ("metrics.json", "probes.jsonl", "config.yaml")]
    # written by the reports while the rest is logged (Run.log's ``meanwhile``)
    late = [
        run_dir / f
        for f in (
            "report.md",
            "report.html",
            "heatmap.png",
            "cost_accuracy.png",
            "samples_needed.png",
        )
    ]
    children = []
    for cfg in judge_cfgs:
        jp = cfg.flat_params()
        jp.update(
            {
                k: v
                for k, v in params.items()
                if k.startswith("test.") or k in ("data.path", "scale")
            }
        )
        children.append(
            TrackedRun(
                name=f"{config.name}/{cfg.name}",
                params=jp,
                metrics=judge_metrics(summary.judges[cfg.name]),
                tags={
                    **tags,
                    "assay.role": "judge",
                    "assay.judge": cfg.name,
                    "assay.command": "harness",
                },
                artifacts=[
                    (
                        run_dir / judgment_file(cfg),
                        "judgments",
                    )
                ],
            )
        )
    return TrackedRun(
        name=config.name,
        params=params,
        metrics=parent_metrics(summary, reused),
        tags={**tags, "assay.role": "parent"},
        artifacts=artifacts,
        children=children,
        late=late,
    )
