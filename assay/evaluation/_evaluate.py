"""``assay evaluate``: judge every item, keep every judgment, measure agreement, log to MLflow.

Data flows one way: config → items → judgments (appended as they finish) → metrics → report
and MLflow. The run directory is keyed by the judge config hash and the data, so re-running a
finished config reads its results and makes no LM call; re-running a killed one judges only
what is missing; ``retry.unscored`` judges the items left unscored for those reasons again.
"""

from __future__ import annotations

import csv
import io
import itertools
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import dspy

from assay.evaluation._no_labels import panel_metrics, panel_over_run
from assay.evaluation._report import SHOWN_DISAGREEMENTS, render_report
from assay.evaluation._results import (
    DisagreementRecord,
    EvaluateResult,
    EvaluateSummary,
    PanelReport,
)
from assay.evaluation._verdicts import Seen, Verdicts
from assay.inputs import EvaluateConfig, ItemIndex, ItemStream, item_set_tags, stream_items
from assay.metrics import fmt_level
from assay.programs import LMFactory, build_judge, judge_lm_factory, save_program
from assay.runs import (
    JudgeTask,
    ProgramRecipe,
    ProgramsByAttempt,
    Run,
    TrackedRun,
    confidence_tag,
    flatten_metrics,
    run_tasks,
    to_judge,
)
from assay.types import PAID_FIELDS, Item, Judgment


def evaluate(
    config: EvaluateConfig,
    *,
    workdir: Path,
    config_dir: Path | None = None,
    limit: int | None = None,
    tracking_uri: str | None = None,
    progress: bool = True,
    lm_factory: LMFactory | None = None,
) -> EvaluateResult:
    """Run (or resume, or re-read) an evaluation. Nothing is written before input is validated."""
    started = time.monotonic()
    assert config.judge.scale is not None
    notes: dict[str, Any] = {}  # what loading counted (pairs built and skipped)
    items = run_items(config, workdir=workdir, limit=limit, notes=notes)
    index = ItemIndex.read(items)
    fingerprint = index.fingerprint
    run_hash = config.run_hash(fingerprint)

    programs, recipe = _judge_programs(config, config_dir, lm_factory)
    programs(1)  # built (API keys checked, program state loaded) before anything is written

    where = {"workdir": workdir, "tracking_uri": tracking_uri, "after_first_answer": True}
    result = _judge_and_measure(
        config, items, index, run_hash, programs, recipe, notes, started, progress, **where
    )
    if config.data.write_back:  # every verdict on its trace, once the run is finished
        result.feedback = _write_back(config, result.judgments)
    return result


def run_items(
    config: EvaluateConfig, *, workdir: Path, limit: int | None = None, notes: dict | None = None
) -> ItemStream:
    """The items an evaluate run of ``config`` judges (``notes``: what loading counted)."""
    assert config.judge.scale is not None
    return stream_items(
        config.data,
        config.judge.scale,
        cache_dir=workdir / ".assay" / "hf",
        limit=limit,
        notes=notes,
        seed=config.bootstrap.seed,
    )


def _judge_and_measure(
    config: EvaluateConfig,
    items: ItemStream,
    index: ItemIndex,
    run_hash: str,
    programs: ProgramsByAttempt,
    recipe: Any,
    notes: dict[str, Any],
    started: float,
    progress: bool,
    **where: Any,
) -> EvaluateResult:
    """Open the run, judge what it has not judged yet, and measure and record it (or re-read a
    finished run). The items stream past twice (to judge, to write the report) and the
    judgments once after they are all in: what is held per item is its id, reference and a
    few numbers (:class:`~assay.evaluation._verdicts.Verdicts`)."""
    with Run.open(config, run_hash, command="evaluate", **where) as run:
        run_hash = run.run_hash  # with the run's plug-ins
        seen = Seen(index, run.store)
        retry = config.retry.unscored
        work, retried = 0, 0
        for start in range(0, len(index), _SLICE):
            todo, again = to_judge(index.ids[start : start + _SLICE], seen, retry)  # type: ignore[arg-type]
            work, retried = work + len(todo), retried + again
        lazy = {"items": items, "ids": index.ids}
        if not work and run.finished:
            done = EvaluateResult.reread(run.dir, run.mlflow_run_id, **lazy)
            # logged now if an earlier call left it out (tracking off) and this one logs
            done.mlflow_run_id = run.log_finished(
                lambda: _tracked(
                    config, items, len(index), index.fingerprint, run_hash, done.summary
                )
            )
            return done
        resumed = seen.any
        scoring = run.preload("assay.evaluation._scoring")  # NumPy, the bootstrap: the end's
        # the statistics the end needs, imported meanwhile too (see _statistics_module)
        stats = run.preload(_statistics_module(config))
        new = [0]

        def persist(_task: JudgeTask, judgment: Judgment) -> None:
            run.calls_flowing()  # the first answer: the warm-ups may start now
            run.store.append(judgment)
            seen.add(judgment)
            new[0] += 1

        def tasks() -> Iterator[JudgeTask]:
            stream = iter(items)
            while by_id := {it.id: it for it in itertools.islice(stream, _SLICE)}:
                todo, _ = to_judge(by_id, seen, retry)  # type: ignore[arg-type]
                for i, a in todo:
                    yield JudgeTask(
                        programs(a), by_id[i], config.judge, attempt=a, recipe=recipe(a)
                    )
                del by_id  # before the next slice is read: one slice alive, not two

        run_tasks(
            tasks(),
            concurrency=config.concurrency,
            on_judgment=persist,
            progress=progress,
            deadline=config.deadline(started),
            execution=config.execution,
            total=work,
            keep=False,
        )
        scoring.join()
        stats.join()
        panel = _panel_over_run(config, index, run, seen)
        verdicts = Verdicts.read(index, run.store, seen)
        summary = _summarize(config, index, verdicts, run_hash, retried, notes, run)
        summary = summary.model_copy(update=_judge_biases(config, items, verdicts))
        if panel is not None:
            summary = summary.model_copy(update={"panel": panel})
        _write_outputs(run, config, summary, programs(1), items, index, verdicts)
        run_id = run.finish(
            _tracked(config, items, len(index), index.fingerprint, run_hash, summary),
            n_items=len(index),
            data_fingerprint=index.fingerprint,  # what a refusal of a changed run names
        )
        return EvaluateResult.lazy(
            run_dir=run.dir,
            summary=summary,
            new_judgments=new[0],
            mlflow_run_id=run_id,
            resumed=resumed,
            retried=retried,
            **lazy,
        )


_SLICE = 1000  # items read from the stream at a time, to choose what to judge


def _panel_over_run(
    config: EvaluateConfig, index: ItemIndex, run: Run, seen: Seen
) -> PanelReport | None:
    """A panel's members over the run (Dawid–Skene); with a run-level aggregate the panel's
    verdicts it changed are appended to the judgments (the latest judgment of an item wins),
    so that the run's judgments are its verdicts. A panel's judgments are read whole: the
    fit needs every item's member verdicts at once."""
    if config.judge.program != "panel":
        return None
    latest = run.store.judgments()
    judgments = [latest[i] for i in index.ids if i in latest]
    b = config.bootstrap
    samples = None
    if index.samples is not None:  # an Inspect log's epochs: resampled by their samples
        samples = {i: s for i, s in zip(index.ids, index.samples, strict=True) if s is not None}
    out, panel = panel_over_run(
        config.judge,
        judgments,
        seed=b.seed,
        n_resamples=b.n_resamples,
        confidence=b.confidence,
        samples=samples,
    )
    for before, after in zip(judgments, out, strict=True):
        if after is not before and after != before:
            run.store.append(after)
            seen.add(after)
    return panel


def _statistics_module(config: EvaluateConfig) -> str:
    """What the end of a run imports for its statistics: ``scipy.special`` for the rates' exact
    intervals (~0.25 s to import), or ``scipy.stats`` (~0.9 s) when a figure of this config
    takes a test or a model from it — the scale-use model of an ordinal judge, self-preference
    (a generator per item), the panel's and the annotators' figures."""
    scale, data = config.judge.scale, config.data
    plain = (
        scale is not None
        and scale.kind != "ordinal"
        and data.format == "table"
        and data.columns.generator is None
        and not data.annotators
        and config.judge.program != "panel"
    )
    return "scipy.special" if plain else "scipy.stats"


def _judge_biases(config: EvaluateConfig, items: ItemStream, v: Verdicts) -> dict[str, Any]:
    """Self-preference (with a generator per item: ``data.columns.generator`` of a table, the
    model of an MLflow trace where a span names one) and, on an ordinal scale with references,
    the judge's use of the scale (against each annotator with ``data.annotators``). The items
    are read once more only when a generator or annotators are in them."""
    from assay.evaluation._scale_use import scale_use_report
    from assay.evaluation._self_preference import self_preference_report

    scale, data, b = config.judge.scale, config.data, config.bootstrap
    assert scale is not None
    key = {"table": data.columns.generator, "mlflow": "model"}.get(data.format)
    annotators = data.format == "mlflow" and data.annotators
    generators: dict[str, Any] = {}
    annotations: dict[str, dict[str, int | None]] | None = {} if annotators else None
    if key is not None or annotators:
        for it in items:
            if key is not None and it.meta.get(key) is not None:
                generators[it.id] = it.meta[key]
            if annotations is not None:
                annotations[it.id] = it.meta.get("annotations", {})
    out: dict[str, Any] = {
        "scale_use": scale_use_report(
            v.ids,
            v.scores,
            v.references,
            scale,
            judge=config.judge.name,
            annotations=annotations,
            samples=v.samples,
            n_resamples=b.n_resamples,
            confidence=b.confidence,
            seed=b.seed,
        )
    }
    by_score = scale.kind == "binary" or scale.ordered
    if by_score and (data.columns.generator is not None or generators):
        out["self_preference"] = self_preference_report(
            v.ids,
            v.scores,
            v.references,
            generators,
            config.judge.model_family(),
            source=f"the column `{key}`" if data.format == "table" else "the trace's model",
            confidence=b.confidence,
        )
    return out


def _write_back(config: EvaluateConfig, judgments: list[Judgment]) -> dict[str, int]:
    """The run's verdicts on their traces as Feedback named after the judge, from the source
    ``<judge name>@<config hash>`` (what was written, updated and already there)."""
    from assay.data import write_feedback

    assert config.data.tracking_uri is not None
    config_hash = config.judge.config_hash()
    done = write_feedback(
        config.data.tracking_uri,
        judgments,
        name=config.judge.name,
        source_id=f"{config.judge.name}@{config_hash}",
        scale=config.judge.scale,
        metadata={"assay.config_hash": config_hash, "assay.run": config.name},
    )
    return {"written": done.written, "updated": done.updated, "skipped": done.skipped}


def _judge_programs(
    config: EvaluateConfig, config_dir: Path | None, lm_factory: LMFactory | None
) -> tuple[ProgramsByAttempt, Any]:
    """The judge's program per attempt, and how a Ray worker rebuilds it (``recipe(attempt)``;
    None with a custom ``lm_factory``, which cannot travel)."""

    def make(rollout: int | None) -> dspy.Module:
        factory = lm_factory or judge_lm_factory(
            retries=config.retries, base=config_dir, rollout=rollout
        )
        return build_judge(config.judge, factory)

    def recipe(attempt: int) -> ProgramRecipe | None:
        if lm_factory is not None:
            return None
        rollout = None if attempt == 1 else attempt
        return ProgramRecipe.of(
            config.judge, rollout=rollout, retries=config.retries, base=config_dir
        )

    return ProgramsByAttempt(config.judge, make), recipe


def _write_outputs(
    run: Run,
    config: EvaluateConfig,
    summary: EvaluateSummary,
    program: dspy.Module,
    items: ItemStream,
    index: ItemIndex,
    verdicts: Verdicts,
) -> None:
    """metrics.json, disagreements.jsonl, report.md, the judge program's state, the reliability
    diagram (judges with probabilities) and report.html."""
    run.store.write_json("metrics.json", summary.model_dump(mode="json"))
    worst = _write_disagreements(config, run, items, index, verdicts)
    run.store.write_text(
        "report.md",
        render_report(
            config.name,
            config.model_dump(mode="json"),
            summary,
            config.bootstrap.confidence,
            disagreements=worst,
        ),
    )
    save_program(program, run.dir / "program.json")
    annotations = (
        (it.id, who, label) for it in items for who, label in it.meta.get("annotations", {}).items()
    )
    first = next(annotations, None)
    if first is not None:  # several annotators per item: the long table `assay agreement` reads
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows([("item_id", "annotator", "label")])
        csv.writer(out, lineterminator="\n").writerows(itertools.chain([first], annotations))
        run.store.write_text("annotations.csv", out.getvalue())
    if summary.calibration is not None:
        from assay.metrics import plot_reliability_diagram

        plot_reliability_diagram(
            summary.calibration.reliability,  # type: ignore[arg-type]
            run.dir / "reliability.png",
            title=f"{config.name}: {summary.calibration.probability}",
        )
    write_html(run.dir, items)


_RANK_SLICE = 10_000  # items ranked at once while disagreements.jsonl is written


def _write_disagreements(
    config: EvaluateConfig, run: Run, items: ItemStream, index: ItemIndex, v: Verdicts
) -> list[DisagreementRecord]:
    """disagreements.jsonl: every scored item whose verdict differs from its reference, most
    distant first, with its texts and the judge's reasoning; returns the first ``SHOWN_DISAGREEMENTS``.

    The texts are joined and ordered in a temporary SQLite file (it spills to disk), so a run
    of a million items holds no disagreement's text in memory: the pairs are ranked a slice at
    a time, then one reading of the items and one of the judgments fill in their texts."""
    import sqlite3

    from assay.evaluation._scoring import disagreement_records

    scale = config.judge.scale
    assert scale is not None
    db = sqlite3.connect("")  # a private temporary database, on disk once it grows
    try:
        db.execute(
            "CREATE TABLE d (id TEXT PRIMARY KEY, distance REAL, record TEXT,"
            " request TEXT, response TEXT, reasoning TEXT)"
        )
        for start in range(0, len(index), _RANK_SLICE):
            end = start + _RANK_SLICE
            pairs = [
                (index.ids[k], v.references[k], v.scores[k])
                for k in range(start, min(end, len(index)))
                if _differs_at(k, v)
            ]
            if pairs:
                ids, refs, judged = zip(*pairs, strict=True)
                ranked = disagreement_records(list(ids), list(refs), list(judged), scale)
                db.executemany(
                    "INSERT INTO d (id, distance, record) VALUES (?, ?, ?)",
                    ((d.id, d.distance, d.model_dump_json()) for d in ranked),
                )
        db.executemany(
            "UPDATE d SET request = ?, response = ? WHERE id = ?",
            ((it.request, it.response, it.id) for it in items if _differs(it.id, index, v)),
        )
        db.executemany(  # the latest judgment of an item is the one that counts
            "UPDATE d SET reasoning = ? WHERE id = ?",
            (
                (j.reasoning, j.item_id)
                for j in run.store.iter_records("judgments.jsonl", Judgment)
                if _differs(j.item_id, index, v)
            ),
        )
        rows = db.execute(
            "SELECT record, request, response, reasoning FROM d ORDER BY distance DESC, id"
        )
        shown: list[DisagreementRecord] = []

        def lines() -> Iterator[str]:
            for record, request, response, reasoning in rows:
                d = DisagreementRecord.model_validate_json(record).model_copy(
                    update={"request": request, "response": response, "reasoning": reasoning}
                )
                if len(shown) < SHOWN_DISAGREEMENTS:
                    shown.append(d)
                yield d.model_dump_json() + "\n"

        run.store.write_text("disagreements.jsonl", lines())
        return shown
    finally:
        db.close()


def _differs(item_id: str, index: ItemIndex, v: Verdicts) -> bool:
    k = index.position.get(item_id)
    return k is not None and _differs_at(k, v)


def _differs_at(k: int, v: Verdicts) -> bool:
    """Whether the item at position ``k`` is scored, has a reference and the two differ."""
    r, c = v.references[k], v.scores[k]
    return r is not None and c is not None and r != c


def _summarize(
    config: EvaluateConfig,
    index: ItemIndex,
    verdicts: Verdicts,
    run_hash: str,
    retried: int,
    notes: dict[str, Any] | None = None,
    run: Run | None = None,
) -> EvaluateSummary:
    """The run's metrics; ``run``: whose call ledger says what the server answered."""
    from assay.evaluation._scoring import summarize_verdicts

    b = config.bootstrap
    assert config.judge.scale is not None
    summary = summarize_verdicts(
        verdicts,
        config.judge.scale,
        items=len(index),
        without_reference=sum(1 for s in index.expected if s is None),
        threshold=config.threshold,
        n_resamples=b.n_resamples,
        confidence=b.confidence,
        seed=b.seed,
    )
    return summary.model_copy(
        update={
            "retried": retried,
            "config_hash": config.judge.config_hash(),
            "run_hash": run_hash,
            "bootstrap": f"{b.n_resamples} percentile resamples over items, seed {b.seed}, "
            f"{fmt_level(b.confidence)} intervals",
            "pairs": (notes or {}).get("pairs"),
            "left_out": (notes or {}).get("left_out"),
            "errored_samples": (notes or {}).get("errored_samples"),
            "spend": run.spend(summary.usage) if run is not None else None,
        }
    )


def _tracked(
    config: EvaluateConfig,
    items: ItemStream,
    n_items: int,
    fingerprint: str,
    run_hash: str,
    summary: EvaluateSummary,
) -> TrackedRun:
    assert config.judge.scale is not None
    return TrackedRun(
        name=config.name,
        params={
            **config.judge.flat_params(),
            "data.path": config.data.path
            or f"{config.data.tracking_uri} experiment {config.data.experiment}",
            "data.format": config.data.format,
            "data.n_items": str(n_items),
            "threshold": str(config.threshold),
            "run_hash": run_hash,
            **(
                {"self_preference.judge_family": summary.self_preference.judge_family}
                if summary.self_preference is not None
                else {}
            ),
        },
        metrics=evaluate_metrics(summary),
        tags={
            "assay.data": fingerprint[:16],
            "assay.scale": config.judge.scale.describe(),
            "assay.judge": config.judge.name,
            **item_set_tags(items, split="all"),
            **confidence_tag(config.bootstrap.confidence),
        },
    )


def evaluate_metrics(summary: EvaluateSummary | dict[str, Any]) -> dict[str, float]:
    """An evaluate summary as MLflow metrics: every metric with its CI bounds (unprefixed),
    counts as ``n_*``, usage as ``usage_*`` (what the judgments hold: served, and ``cached_*``
    from the LM cache), the cost of the work as ``work_*`` (both, every answer priced as a
    call), what the server answered as ``spend_*`` (paid, paid and not used, failed attempts)
    and the cost per accuracy point (of the work)."""
    s = EvaluateSummary.model_validate(summary) if isinstance(summary, dict) else summary
    return {
        **flatten_metrics(s.metrics),
        **flatten_metrics(s.counts, "n_"),
        **flatten_metrics(s.usage, "usage_"),
        **flatten_metrics(s.work.model_dump(include=set(PAID_FIELDS)), "work_"),
        **flatten_metrics(s.spend, "spend_"),  # spend_paid.calls, spend_paid_not_used.cost_usd
        **flatten_metrics({"cost_per_accuracy_point_usd": s.usage.cost_per_accuracy_point_usd}),
        **(flatten_metrics(s.calibration.metrics, "calibration_") if s.calibration else {}),
        **(
            flatten_metrics(s.calibration.calibrated, "calibrated_")
            if s.calibration and s.calibration.calibrated
            else {}
        ),
        **(flatten_metrics(panel_metrics(s.panel), "panel_") if s.panel else {}),
        **_bias_metrics(s),
    }


def _bias_metrics(s: EvaluateSummary) -> dict[str, float]:
    """Self-preference as ``self_preference_*``; scale use as ``compression_*``,
    ``rater_discrimination.<rater>``, ``rater_severity.<rater>`` and ``item_quality.*``."""
    out: dict[str, float] = {}
    if s.self_preference is not None:
        from assay.evaluation._self_preference import self_preference_metrics

        out |= flatten_metrics(self_preference_metrics(s.self_preference), "self_preference_")
    if s.scale_use is not None:
        from assay.evaluation._scale_use import scale_use_metrics

        out |= flatten_metrics(scale_use_metrics(s.scale_use))
    return out


def write_html(run_dir: Path, items: Iterable[Item]) -> None:
    """``report.html`` (before the run is logged, so MLflow gets it too); the page's renderer
    loads on first use."""
    from assay.evaluation._html_report import build_report
    from assay.report import write_html as write_page

    write_page(build_report(run_dir, items), run_dir)
