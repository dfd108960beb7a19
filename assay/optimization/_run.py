"""``assay optimize``: compile a judge with a DSPy optimizer on a train split of labelled items,
measure it before and after on held-out dev and test splits, and keep the optimized program.

Stages, each persisted in the run directory so a crash loses nothing finished:

1. split the labelled items (stratified by label, seeded) into train / dev / test;
2. **baseline**: the unoptimized judge on dev and test → ``baseline.json`` (judgments appended to
   ``baseline.jsonl`` as they finish); a re-run reuses it;
3. **compile** the judge on train with the optimizer; every LM call it makes is counted and
   costed → ``program.json`` (DSPy state, no LM) and ``compile.json``;
4. **after**: the optimized program, reloaded from ``program.json``, on dev and test →
   ``result.json`` with before/after, the objective's parts, costs and split ids; MLflow.

The objective is a per-example DSPy metric from :mod:`assay.metrics` (``exact``, ``absolute``,
``quadratic``). Set metrics such as κ cannot be scored one example at a time; they are optimised
through the quadratic-agreement surrogate (``metric: quadratic``, ``1 − ((y − ŷ)/(max − min))²``)
and the true κ, with its CI, is reported on dev and test. Optimizers that select among
candidates (random search, MIPROv2, GEPA) use dev as their validation set; test is never seen
before the final measurement.

**Reliability-aware objective** (``invariance.enabled``): each example is also judged in
deterministic format variants of its judged text (the ``format_*`` reliability tests, seeded by
the text) and scores ``(1 − weight) · label agreement + weight · consistency``, consistency being
the share of variants whose verdict equals the verdict on the original. An example with no
applicable variant scores its label agreement alone.
"""

from __future__ import annotations

import contextlib
import io
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dspy

from assay.decisions import ledger_of, record_tuning
from assay.errors import RunError
from assay.inputs import data_fingerprint, item_set_tags, load_items
from assay.lm import make_adapter
from assay.optimization._config import USES_VALSET, OptimizeConfig
from assay.optimization._measure import measure
from assay.optimization._objective import InvariantJudge, examples, make_metric
from assay.optimization._optimizers import (
    SharedUsageTracker,
    make_optimizer,
    usage_by_model,
)
from assay.optimization._results import Measurement, OptimizeResult
from assay.optimization._splits import SPLITS, split_items
from assay.programs import (
    JudgeConfig,
    LMFactory,
    build_judge,
    judge_lm_factory,
    load_program_state,
    save_program,
)
from assay.runs import Run, RunStore, TrackedRun, confidence_tag, flatten_metrics, now
from assay.types import Item, Usage, stable_hash

SEALED = (
    "config.yaml",
    "split.json",
    "baseline.json",
    "baseline.jsonl",
    "compile.json",
    "program.json",
    "optimized.jsonl",
    "result.json",
)
"""What a finished optimize run's seal covers: what its re-run reads back and what the tuned
program is (those of them the run wrote)."""


def _program(
    judge: JudgeConfig,
    lm_factory: LMFactory,
    state: str | None,
    *,
    tracking_uri: str | None,
    base: Path | None,
) -> dspy.Module:
    program = build_judge(judge.model_copy(update={"program_state": None}), lm_factory)
    if state:
        load_program_state(program, state, tracking_uri=tracking_uri, base=base)
    return program


def _demos(program: dspy.Module) -> int:
    return sum(len(p.demos) for p in program.predictors())


def optimize(
    config: OptimizeConfig,
    *,
    workdir: Path,
    config_dir: Path | None = None,
    progress: bool = True,
    tracking_uri: str | None = None,
    lm_factory: LMFactory | None = None,
) -> OptimizeResult:
    """Split, measure the baseline, compile, measure again, save and log (see the module doc).

    Re-running a finished run reads ``result.json``; a crashed one resumes at the stage it
    reached (the baseline is never judged twice). Returns the contents of ``result.json``.
    """
    scale = config.judge.scale
    assert scale is not None
    items = load_items(config.data, scale, cache_dir=workdir / ".assay" / "hf")
    ids, splits, split_record = split_items(items, config.split, scale)
    lm_factory = lm_factory or judge_lm_factory(retries=config.retries, base=config_dir)
    metric = make_metric(config)
    judge_lm = lm_factory(config.judge)
    with dspy.context(lm=judge_lm, adapter=make_adapter(config.judge.adapter)):
        optimizer, prices = make_optimizer(config, metric, len(splits["train"]), config_dir)
    prices[judge_lm.model] = config.judge.price_pair
    fingerprint = data_fingerprint(items)

    with Run.open(
        config,
        config.run_hash(fingerprint),
        command="optimize",
        workdir=workdir,
        tracking_uri=tracking_uri,
        # a baseline, compile or tuned program edited since it finished: what the optimizer
        # made cannot be told from the files, so the run is refused, not rebuilt on them
        rebuild_unsealed=False,
    ) as run:
        if run.finished and run.store.read_json("result.json") is not None:
            out = run.store.read_json("result.json")
            if out.get("mlflow_run_id") is None and run.tracking_enabled:
                # made with tracking off: logged now by this call, which logs, once
                out = _log_and_seal(run, config, out, ids, fingerprint, splits, workdir)
            else:
                _record_tuning(config, run.dir, splits, workdir, out.get("mlflow_run_id"))
            return OptimizeResult.model_validate({**out, "reused": True})
        run.store.write_json("split.json", split_record)

        def program(state_ref: str | None) -> dspy.Module:
            return _program(
                config.judge, lm_factory, state_ref, tracking_uri=run.tracking_uri, base=config_dir
            )

        # 1. baseline, saved before anything is optimized
        before, before_reused = _baseline(
            config, program, splits, run.store, fingerprint, ids, progress, again=bool(run.reopened)
        )
        nothing = Measurement.model_validate(before).measured_nothing()
        if nothing:  # no verdict to improve on, and the optimizer would call the same judge
            raise RunError(
                f"{run.dir}: before optimizing: {nothing}; nothing to optimize (once the cause "
                "is fixed, remove this run directory and run again)"
            )
        # 2. compile on train (skipped when a previous attempt finished it)
        compiled = run.store.read_json("compile.json")
        if not (compiled and (run.dir / "program.json").exists()):
            compiled = _compile(config, program, optimizer, judge_lm, prices, splits, run, progress)
        # 3. the optimized program, reloaded from its saved state, on dev and test
        after = measure(
            program(str(run.dir / "program.json")),
            splits,
            config,
            run.store,
            "optimized.jsonl",
            progress=progress,
            desc="optimized",
        ).model_dump(exclude={"reused"})  # result.json's plain data
        out = _result(config, run.dir, split_record, before, before_reused, after, compiled)
        out["spend"] = (spend := run.spend(Usage(**out["usage"]["total"]))) and spend.model_dump()
        run.store.write_json("result.json", out)
        out = _log_and_seal(run, config, out, ids, fingerprint, splits, workdir)
        run.update(status="finished", finished=now())
        return OptimizeResult.model_validate(out)


def _log_and_seal(
    run: Run,
    config: OptimizeConfig,
    out: dict[str, Any],
    ids: dict[str, list[str]],
    fingerprint: str,
    splits: dict[str, list[Item]],
    workdir: Path,
) -> dict[str, Any]:
    """Log the result ``out`` to MLflow (when tracking is on), write its run id and how to use
    the tuned program into ``result.json``, record the tuning in the ledger and seal what a
    re-run reads back: at the end of a run, or for a finished run made with tracking off that a
    later call, which logs, finds (then logged once: the run id is in its result from then)."""
    run_id = run.log(_tracked(config, out, ids, fingerprint, splits["test"]))
    if run_id:
        out["mlflow_run_id"] = run_id
        out["use"] = {"judge": {"program_state": f"runs:/{run_id}/program.json"}}
        if config.log_mlflow_model:
            out["mlflow_model"] = _log_dspy_model(config, run_id, run.dir / "program.json")
        run.store.write_json("result.json", out)
    _record_tuning(config, run.dir, splits, workdir, run_id)
    run.seal_results(SEALED)  # what a re-run reads back: result.json, the tuned program
    run.update(mlflow_run_id=run_id)
    return out


def _record_tuning(
    config: OptimizeConfig,
    run_dir: Path,
    splits: dict[str, list[Item]],
    workdir: Path,
    run_id: str | None,
) -> None:
    """Record in the runs folder's ledger the items the optimizer saw (train, and dev when it
    selects on it) and the program it wrote, so that the optimized judge is never certified or
    compared on them (see :mod:`assay.decisions`' tuning records)."""
    seen = splits["train"] + (splits["dev"] if config.optimizer.name in USES_VALSET else [])
    tuned = config.judge.model_copy(update={"program_state": str(run_dir / "program.json")})
    record_tuning(
        tuned,
        config.judge,
        seen,
        source=f"assay optimize ({config.optimizer.name})",
        run=run_dir,
        ledger=ledger_of(workdir, config.output_dir),
        uris=[f"runs:/{run_id}/program.json"] if run_id else (),
    )


def _baseline(
    config: OptimizeConfig,
    program: Callable[[str | None], dspy.Module],
    splits: dict[str, list[Item]],
    store: RunStore,
    fingerprint: str,
    ids: dict[str, list[str]],
    progress: bool,
    *,
    again: bool = False,
) -> tuple[dict[str, Any], bool]:
    """The unoptimized judge on dev and test, measured once and kept in ``baseline.json``
    (``again``: measured anew from its judgments, as other code measures them: no LM call)."""
    key = stable_hash(
        {
            "judge": config.judge.config_hash(),
            "data": fingerprint,
            "ids": ids,
            "bootstrap": config.bootstrap.model_dump(),
            "invariance": config.invariance.model_dump(),
            "metric": config.metric,
        }
    )
    old = store.read_json("baseline.json")
    if old and old.get("key") == key and not again:
        return old["measure"], True
    before = measure(
        program(config.judge.program_state),
        splits,
        config,
        store,
        "baseline.jsonl",
        progress=progress,
        desc="baseline",
    ).model_dump(exclude={"reused"})  # baseline.json's plain data
    store.write_json("baseline.json", {"key": key, "created": now(), "measure": before})
    return before, False


def _compile(
    config: OptimizeConfig,
    program: Callable[[str | None], dspy.Module],
    optimizer: Any,
    judge_lm: dspy.BaseLM,
    prices: dict[str, tuple[float, float] | None],
    splits: dict[str, list[Item]],
    run: Run,
    progress: bool,
) -> dict[str, Any]:
    """Compile the judge on train; save its state (JSON, no LM) and what the compile cost."""
    student = program(config.judge.program_state)
    for p in student.predictors():
        p.lm = None  # the context LM is used; DSPy resets predictor LMs anyway
    if config.invariance.enabled:
        student = InvariantJudge(student, config.invariance.variants)
    train = examples(student, splits["train"], config.judge)
    kwargs = dict(config.optimizer.compile_options)
    if config.optimizer.name in USES_VALSET:
        kwargs.setdefault("valset", examples(student, splits["dev"], config.judge))
    start = time.perf_counter()
    # optimizers print to stdout (kept off it: --json prints there) and draw tqdm bars
    quiet = io.StringIO()
    tracker = SharedUsageTracker()
    with (
        dspy.context(
            lm=judge_lm, adapter=make_adapter(config.judge.adapter), usage_tracker=tracker
        ),
        contextlib.redirect_stdout(sys.stderr if progress else quiet),
        contextlib.redirect_stderr(sys.stderr if progress else quiet),
    ):
        result = optimizer.compile(student, trainset=train, **kwargs)
    optimized = result.judge if isinstance(result, InvariantJudge) else result
    by_model = usage_by_model(tracker, prices)
    save_program(optimized, run.dir / "program.json")
    compiled = {
        "optimizer": config.optimizer.model_dump(),
        "seconds": round(time.perf_counter() - start, 3),
        "demos": _demos(optimized),
        "usage": Usage.total(by_model.values()).model_dump(),
        "usage_by_model": {m: u.model_dump() for m, u in by_model.items()},
        "finished": now(),
    }
    run.store.write_json("compile.json", compiled)
    run.update(status="compiled")
    return compiled


def _result(
    config: OptimizeConfig,
    run_dir: Path,
    split_record: dict[str, Any],
    before: dict[str, Any],
    before_reused: bool,
    after: dict[str, Any],
    compiled: dict[str, Any],
) -> dict[str, Any]:
    usage = {
        "baseline": before["usage"],
        "optimization": compiled["usage"],
        "optimization_by_model": compiled["usage_by_model"],
        "after": after["usage"],
    }
    usage["total"] = sum(
        (Usage(**usage[k]) for k in ("baseline", "optimization", "after")), Usage()
    ).model_dump()
    return {
        "name": config.name,
        "run_dir": str(run_dir),
        "optimizer": config.optimizer.model_dump(),
        "metric": config.metric,
        "invariance": config.invariance.model_dump(),
        "split": split_record,
        "before": {**before, "reused": before_reused},
        "after": after,
        "objective": {"before": before["objective"], "after": after["objective"]},
        "demos": compiled["demos"],
        "compile_seconds": compiled["seconds"],
        "usage": usage,
        "program": str(run_dir / "program.json"),
        "mlflow_run_id": None,
        "mlflow_model": None,
    }


def _tracked(
    config: OptimizeConfig,
    out: dict[str, Any],
    ids: dict[str, list[str]],
    fingerprint: str,
    test_items: list[Item],
) -> TrackedRun:
    """MLflow: params = judge config, optimizer, objective, split sizes; metrics = before/after
    per split with CI bounds (after-on-test also unprefixed, like an evaluate run); artifacts =
    the run directory (``program.json``, the optimized program's JSON state, at the root)."""
    from assay.evaluation import evaluate_metrics

    params = {
        **config.judge.flat_params(),
        "data.path": config.data.path,
        "data.n_items": str(sum(len(v) for v in ids.values())),
        "optimizer.name": config.optimizer.name,
        **{f"optimizer.options.{k}": str(v) for k, v in config.optimizer.options.items()},
        **{
            f"optimizer.compile_options.{k}": str(v)
            for k, v in config.optimizer.compile_options.items()
        },
        "metric": config.metric,
        **{f"invariance.{k}": str(v) for k, v in config.invariance.model_dump().items()},
        **{f"split.{k}": str(v) for k, v in config.split.model_dump().items()},
        **{f"split.n_{p}": str(len(ids[p])) for p in SPLITS},
    }
    metrics = evaluate_metrics(out["after"]["test"])
    for phase in ("before", "after"):
        for part in ("dev", "test"):
            metrics.update(flatten_metrics(evaluate_metrics(out[phase][part]), f"{phase}.{part}."))
        objective = {
            k: out[phase]["objective"][k] for k in ("label_agreement", "consistency", "value")
        }
        metrics.update(flatten_metrics(objective, f"{phase}.objective."))
    metrics.update(flatten_metrics(out["usage"]["optimization"], "optimization."))
    metrics.update(flatten_metrics(out.get("spend"), "spend_"))  # as the server answered
    metrics["optimization.demos"] = float(out["demos"])
    scale = config.judge.scale
    assert scale is not None
    # Two judge entries for ``assay compare``, measured on the test split: the baseline and the
    # optimized program, ranked beside runs measured on exactly these items (``assay.items``).
    children = []
    for phase, optimizer, state in (
        ("baseline", "none", config.judge.program_state or ""),
        ("optimized", config.optimizer.name, out["program"]),
    ):
        judge_params = config.judge.flat_params()
        judge_params["judge.program_state"] = state
        judge_params["judge.optimizer"] = optimizer
        children.append(
            TrackedRun(
                name=f"{config.name}/{phase}",
                params={**judge_params, "data.path": config.data.path, "split": "test"},
                metrics=evaluate_metrics(out["before" if phase == "baseline" else "after"]["test"]),
                tags={
                    "assay.command": "optimize",
                    "assay.role": "judge",
                    "assay.phase": phase,
                    "assay.data": fingerprint[:16],
                    **item_set_tags(test_items, split="test", of=sum(map(len, ids.values()))),
                    "assay.scale": scale.describe(),
                    "assay.judge": f"{config.judge.name} ({phase})",
                    **confidence_tag(config.bootstrap.confidence),
                },
                artifacts=[Path(out["run_dir"]) / "result.json"],
            )
        )
    return TrackedRun(
        name=config.name,
        params=params,
        metrics=metrics,
        tags={
            "assay.role": "parent",
            "assay.data": fingerprint[:16],
            "assay.scale": scale.describe(),
            "assay.judge": config.judge.name,
            "assay.optimized": "true",
            "assay.optimizer": config.optimizer.name,
        },
        children=children,
    )


def _log_dspy_model(config: OptimizeConfig, run_id: str, state: Path) -> str:
    """Opt-in (``log_mlflow_model: true``): also log the program with ``mlflow.dspy``. DSPy
    saves a whole program with cloudpickle, and loading it runs arbitrary code — the JSON state
    (``program.json``) is the reference format; a failure here is noted, never fatal."""
    try:
        import mlflow
        import mlflow.dspy

        bare = build_judge(config.judge.model_copy(update={"program_state": None}), lambda _c: None)
        load_program_state(bare, str(state))
        with mlflow.start_run(run_id=run_id), contextlib.redirect_stdout(io.StringIO()):
            info = mlflow.dspy.log_model(
                bare, name="judge_program", use_dspy_model_save=True, pip_requirements=[]
            )
        return info.model_uri
    except Exception as exc:  # optional: the JSON state artifact is the reference format
        return f"skipped: {type(exc).__name__}: {str(exc)[:200]}"
