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

import argparse
import contextlib
import io
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

import dspy
from dspy.utils.usage_tracker import UsageTracker
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from assay.errors import ConfigError
from assay.experiments._calibrate import split_ids
from assay.experiments._config import BootstrapConfig, DataConfig, TrackingConfig
from assay.experiments._evaluate import data_fingerprint, save_program
from assay.experiments._items import load_items
from assay.experiments._report import _fmt, fmt_ci
from assay.experiments._runner import JudgeTask, run_tasks
from assay.experiments._scoring import summarize_run
from assay.experiments._store import RunStore, now
from assay.lm import configure_cache, make_adapter, usage_of_tracker
from assay.metrics import absolute_error_score, exact_match, quadratic_agreement
from assay.programs import JudgeConfig, build_judge, judge_lm_factory, unscored_reason
from assay.programs._judge import _TASKS
from assay.programs._state import load_program_state
from assay.scale import Scale
from assay.types import Item, Judgment, Usage, stable_hash

# config name → DSPy optimizer class (looked up on ``dspy`` when used)
OPTIMIZERS = {
    "bootstrap_few_shot": "BootstrapFewShot",
    "random_search": "BootstrapFewShotWithRandomSearch",
    "mipro": "MIPROv2",
    "simba": "SIMBA",
    "gepa": "GEPA",
}
_USES_VALSET = {"random_search", "mipro", "gepa"}
_THREADED = {"random_search", "mipro", "simba", "gepa"}
_LM_OPTIONS = ("prompt_model", "task_model", "reflection_lm")
# the input field whose text the format variants perturb, per judge task
_JUDGED_TEXT = {
    "response": "response",
    "transcript": "transcript",
    "toolemu_safety": "scratchpad",
    "toolemu_helpfulness": "scratchpad",
    "emulator_quality": "scratchpad",
}
MIN_PER_LABEL = 2  # items of each label in each split
SPLITS = ("train", "dev", "test")


class SplitConfig(BaseModel):
    """Fractions of the labelled items; stratified by label and seeded."""

    model_config = ConfigDict(extra="forbid")

    train: float = Field(default=0.5, gt=0, lt=1)
    dev: float = Field(default=0.25, gt=0, lt=1)
    test: float = Field(default=0.25, gt=0, lt=1)
    seed: int = 0
    stratify: bool = True

    @model_validator(mode="after")
    def _sum(self) -> SplitConfig:
        if abs(self.train + self.dev + self.test - 1) > 1e-9:
            raise ValueError("split fractions train + dev + test must sum to 1")
        return self


class OptimizerConfig(BaseModel):
    """A DSPy optimizer: ``options`` go to its constructor, ``compile_options`` to ``compile``.

    ``prompt_model`` / ``task_model`` / ``reflection_lm`` options may be a model string or a
    mapping like a harness role (``{model, temperature, max_tokens, seed, api_base, api_key_env,
    price}``); their calls are counted and costed with the optimizer's.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    options: dict[str, Any] = Field(default_factory=dict)
    compile_options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer '{v}'; known optimizers: {', '.join(OPTIMIZERS)}")
        return v


class InvarianceConfig(BaseModel):
    """The reliability-aware objective: agreement with the label and across format variants."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    weight: float = Field(default=0.5, ge=0, le=1)
    variants: list[str] = Field(
        default_factory=lambda: ["format_vertical", "format_intraline", "format_indent"],
        min_length=1,
    )

    @field_validator("variants")
    @classmethod
    def _format_tests(cls, v: list[str]) -> list[str]:
        from assay.experiments.reliability._whitespace import FormatTest

        for name in v:
            if not isinstance(_format_test(name), FormatTest):
                raise ValueError(f"'{name}' is not a deterministic format test (format_*)")
        return v


class OptimizeConfig(BaseModel):
    """An ``assay optimize`` run: data, judge, split, optimizer, objective, and recording."""

    model_config = ConfigDict(extra="forbid")

    name: str
    data: DataConfig
    judge: JudgeConfig
    split: SplitConfig = Field(default_factory=SplitConfig)
    optimizer: OptimizerConfig
    metric: Literal["exact", "absolute", "quadratic"] = "exact"
    invariance: InvarianceConfig = Field(default_factory=InvarianceConfig)
    concurrency: int = Field(default=4, ge=1)
    retries: int = Field(default=3, ge=0)
    bootstrap: BootstrapConfig = Field(default_factory=BootstrapConfig)
    output_dir: str = "runs"
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)

    @model_validator(mode="after")
    def _check(self) -> OptimizeConfig:
        if self.judge.program == "panel":
            raise ValueError("optimize compiles one judge program; a panel cannot be optimized")
        scale = self.judge.scale
        if scale and self.metric != "exact" and scale.kind == "categorical" and not scale.scores:
            raise ValueError(f"metric '{self.metric}' needs ordered scores; use metric: exact")
        return self

    def run_hash(self, data_fingerprint: str) -> str:
        dump = self.model_dump(mode="json", exclude={"name", "output_dir", "tracking", "judge"})
        return stable_hash({"judge": self.judge.config_hash(), "data": data_fingerprint, **dump})


# -- splits -----------------------------------------------------------------------------------
def split_three(labels: dict[str, int], split: SplitConfig) -> dict[str, list[str]]:
    """Stratified (or not), seeded train / dev / test ids, by two calls of :func:`split_ids`."""
    strata = labels if split.stratify else dict.fromkeys(labels, 0)
    train, rest = split_ids(strata, split.train, split.seed)
    dev, test = split_ids(
        {i: strata[i] for i in rest}, split.dev / (split.dev + split.test), split.seed
    )
    return {"train": train, "dev": dev, "test": test}


def _counts(n: int, split: SplitConfig) -> tuple[int, int, int]:
    """Per-stratum sizes, with the rounding :func:`split_ids` uses."""
    train = round(n * split.train)
    dev = round((n - train) * (split.dev / (split.dev + split.test)))
    return train, dev, n - train - dev


def min_items_per_label(split: SplitConfig) -> int:
    """Fewest items of a label for a stratified split to hold ``MIN_PER_LABEL`` in each part."""
    return next(n for n in range(1, 100_000) if min(_counts(n, split)) >= MIN_PER_LABEL)


def check_splittable(
    labels: dict[str, int], splits: dict[str, list[str]], split: SplitConfig, scale: Scale
) -> None:
    """A :class:`ConfigError` saying the minimum when some split lacks items of a label."""
    present = sorted(set(labels.values()))
    if len(present) < 2:
        raise ConfigError(f"optimize needs labelled items of at least two labels; found {present}")
    fractions = f"{split.train:g}/{split.dev:g}/{split.test:g}"
    for part in SPLITS:
        for y in present:
            k = sum(labels[i] == y for i in splits[part])
            if k >= MIN_PER_LABEL:
                continue
            name = scale.label_of(y) or y
            if split.stratify:
                raise ConfigError(
                    f"data set too small to split: label {name} has "
                    f"{sum(v == y for v in labels.values())} labelled items; a stratified "
                    f"{fractions} split needs at least {min_items_per_label(split)} per label "
                    f"({MIN_PER_LABEL} in each of train, dev and test)"
                )
            raise ConfigError(
                f"data set too small to split: the {part} split has {k} items labelled {name}; "
                f"each split needs at least {MIN_PER_LABEL} of every label (try stratify: true)"
            )


# -- the objective ------------------------------------------------------------------------------
def _format_test(name: str):
    from assay.experiments.reliability import get_test

    return get_test(name)


def format_variants(
    config: JudgeConfig, inputs: dict[str, Any], variants: list[str]
) -> list[tuple[str, dict[str, Any]]]:
    """``(test name, inputs)`` for each format variant of the judged text that changes it.

    Deterministic: each test's generator is seeded by (test, hash of the text).
    """
    from assay.experiments.reliability._whitespace import variant_rng

    field = _JUDGED_TEXT[config.task]
    text = inputs[field]
    key = stable_hash(text)
    out = []
    for name in variants:
        varied = _format_test(name).perturb(text, variant_rng(name, key, 0))
        if varied != text:
            out.append((name, {**inputs, field: varied}))
    return out


class InvariantJudge(dspy.Module):
    """The judge, whose prediction also carries ``variant_scores``: its verdicts on the format
    variants of the same inputs. Variant calls are kept out of DSPy's trace, so an optimizer
    never takes a reformatted input for a demonstration."""

    def __init__(self, judge: dspy.Module, variants: list[str]):
        super().__init__()
        self.judge = judge
        self.variants = list(variants)

    def inputs(self, item: Item) -> dict[str, Any]:
        return self.judge.inputs(item)

    def forward(self, **inputs: Any) -> dspy.Prediction:
        pred = self.judge(**inputs)
        scores: list[int | None] = []
        with dspy.context(trace=None):
            for _, varied in format_variants(self.judge.config, inputs, self.variants):
                try:
                    scores.append(self.judge(**varied).score)
                except Exception as exc:
                    if unscored_reason(exc) is None:
                        raise
                    scores.append(None)  # an unscored variant is a changed verdict
        pred.variant_scores = scores
        return pred


def consistency(score: int | None, variant_scores: list[int | None]) -> float | None:
    """Share of variant verdicts equal to the verdict on the original (None: no variant)."""
    if not variant_scores:
        return None
    return sum(v == score for v in variant_scores) / len(variant_scores)


def make_metric(config: OptimizeConfig) -> Callable[..., float | bool]:
    """The DSPy metric optimised: the per-example label metric, or with ``invariance`` the
    weighted sum of it and consistency. Under a trace (DSPy bootstrapping demos) it is a bool:
    exact match, and with ``invariance`` also every variant verdict unchanged.

    It accepts GEPA's five arguments ``(gold, pred, trace, pred_name, pred_trace)``.
    """
    scale = config.judge.scale
    assert scale is not None
    lo, hi = min(scale.values), max(scale.values)
    label_metric = {
        "exact": exact_match,
        "absolute": absolute_error_score(lo, hi) if hi > lo else exact_match,
        "quadratic": quadratic_agreement(lo, hi) if hi > lo else exact_match,
    }[config.metric]
    inv = config.invariance

    def objective(example, pred, trace=None, pred_name=None, pred_trace=None) -> float | bool:
        label = label_metric(example, pred, trace)
        if not inv.enabled:
            return label
        c = consistency(pred.get("score"), list(pred.get("variant_scores") or []))
        if trace is not None:
            return bool(label) and c in (None, 1.0)
        return float(label) if c is None else (1 - inv.weight) * float(label) + inv.weight * c

    objective.__name__ = f"{config.metric}{'+invariance' if inv.enabled else ''}"
    objective.label_metric = label_metric  # type: ignore[attr-defined]
    return objective


def examples(program: dspy.Module, items: list[Item], config: JudgeConfig) -> list[dspy.Example]:
    """DSPy examples: the judge's inputs, the label as the verdict field (so labelled demos show
    the right answer) and ``expected`` (the reference score the metrics read)."""
    scale = config.scale
    assert scale is not None
    verdict_field = _TASKS[config.task][1]
    named = scale.kind == "categorical" or bool(scale.labels)
    out = []
    for it in items:
        inputs = program.inputs(it)
        assert it.expected is not None
        verdict = scale.label_of(it.expected) if named else it.expected
        ex = dspy.Example(**inputs, **{verdict_field: verdict}, expected=it.expected)
        out.append(ex.with_inputs(*inputs))
    return out


# -- measuring ----------------------------------------------------------------------------------
class _FixedInputs(dspy.Module):
    """The judge on precomputed inputs (format variants of dev items), for the runner."""

    def __init__(self, judge: dspy.Module, inputs_by_id: dict[str, dict[str, Any]]):
        super().__init__()
        self.judge = judge
        self.inputs_by_id = inputs_by_id

    def inputs(self, item: Item) -> dict[str, Any]:
        return self.inputs_by_id[item.id]

    def forward(self, **inputs: Any) -> dspy.Prediction:
        return self.judge(**inputs)


def measure(
    program: dspy.Module,
    splits: dict[str, list[Item]],
    config: OptimizeConfig,
    store: RunStore,
    journal: str,
    *,
    progress: bool,
    desc: str,
) -> dict[str, Any]:
    """Judge dev and test (and with ``invariance`` the dev format variants), resumably from
    ``journal``; agreement with CIs per split and the objective's parts on dev."""
    cfg = config.judge
    tasks = [JudgeTask(program, it, cfg) for part in ("dev", "test") for it in splits[part]]
    variants_of: dict[str, list[str]] = {}
    if config.invariance.enabled:
        inputs_by_id: dict[str, dict[str, Any]] = {}
        for it in splits["dev"]:
            for name, inputs in format_variants(
                cfg, program.inputs(it), config.invariance.variants
            ):
                vid = f"{it.id}~{name}"
                inputs_by_id[vid] = inputs
                variants_of.setdefault(it.id, []).append(vid)
        fixed = _FixedInputs(program, inputs_by_id)
        tasks += [JudgeTask(fixed, Item(id=vid, request=""), cfg) for vid in inputs_by_id]
    done = store.judgments(journal)
    todo = [t for t in tasks if t.item.id not in done]
    run_tasks(
        todo,
        concurrency=config.concurrency,
        on_judgment=lambda _t, j: store.append(j, journal),
        progress=progress,
        desc=desc,
    )
    by_id = store.judgments(journal)
    b = config.bootstrap
    out: dict[str, Any] = {}
    for part in ("dev", "test"):
        expected = {it.id: it.expected for it in splits[part]}
        out[part] = summarize_run(
            [by_id[i] for i in expected],
            expected,
            cfg.scale,  # type: ignore[arg-type]
            threshold=None,
            n_resamples=b.n_resamples,
            confidence=b.confidence,
            seed=b.seed,
        )
    out["objective"] = objective_parts(splits["dev"], by_id, variants_of, config)
    out["usage"] = sum((by_id[t.item.id].usage for t in tasks), Usage()).model_dump()
    return out


def objective_parts(
    items: list[Item],
    by_id: dict[str, Judgment],
    variants_of: dict[str, list[str]],
    config: OptimizeConfig,
) -> dict[str, Any]:
    """The objective on ``items`` with the very metric the optimizer used, and its parts."""
    metric = make_metric(config)
    label, values, consistent = [], [], []
    for it in items:
        variant_scores = [by_id[v].score for v in variants_of.get(it.id, [])]
        ex = dspy.Example(expected=it.expected)
        pred = dspy.Prediction(score=by_id[it.id].score, variant_scores=variant_scores)
        label.append(float(metric.label_metric(ex, pred)))  # type: ignore[attr-defined]
        values.append(float(metric(ex, pred)))
        c = consistency(pred.score, variant_scores)
        if c is not None:
            consistent.append(c)
    return {
        "metric": metric.__name__,
        "n": len(items),
        "label_agreement": _mean(label),
        "consistency": _mean(consistent) if config.invariance.enabled else None,
        "with_variants": len(consistent),
        "weight": config.invariance.weight if config.invariance.enabled else 0.0,
        "value": _mean(values),
    }


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


# -- the optimizer ----------------------------------------------------------------------------
def _role_lm(
    key: str, value: Any, config: OptimizeConfig, base: Path | None
) -> tuple[dspy.LM, tuple[float, float] | None]:
    """An optimizer's own LM (``prompt_model``, ``reflection_lm``...) from a model string or a
    model spec mapping (a generator's defaults: it writes instructions), built like any role's
    LM; with the price its usage is costed at."""
    from pydantic import ValidationError

    from assay.experiments._config import first_error
    from assay.lm import GeneratorSpec, make_lm

    try:
        role = GeneratorSpec.model_validate({"model": value} if isinstance(value, str) else value)
    except ValidationError as exc:
        raise ConfigError(f"optimizer.options.{key}: {first_error(exc)}") from None
    return make_lm(role, retries=config.retries, base=base), role.price_pair


def make_optimizer(
    config: OptimizeConfig, metric: Callable, n_train: int, base: Path | None
) -> tuple[dspy.teleprompt.Teleprompter, dict[str, tuple[float, float] | None]]:
    """The configured DSPy optimizer, and the prices of the LMs it brings (model → USD per
    million input/output tokens). Call inside ``dspy.context(lm=...)``: MIPROv2 and SIMBA
    propose instructions with the context LM unless ``prompt_model`` is given."""
    opt = config.optimizer
    if opt.name == "mipro":
        import importlib.util

        if importlib.util.find_spec("optuna") is None:
            raise ConfigError(
                "optimizer 'mipro' needs the optional package optuna (pip install optuna)"
            )
    if opt.name == "gepa" and "reflection_lm" not in opt.options:
        raise ConfigError("optimizer 'gepa' needs options.reflection_lm (a model string)")
    if opt.name == "simba" and int(opt.options.get("bsize", 32)) > n_train:
        raise ConfigError(
            f"optimizer 'simba': options.bsize ({opt.options.get('bsize', 32)}) is larger than "
            f"the train split ({n_train} items)"
        )
    options = dict(opt.options)
    prices: dict[str, tuple[float, float] | None] = {}
    for key in _LM_OPTIONS:
        if options.get(key) is not None:
            options[key], price = _role_lm(key, options[key], config, base)
            prices[options[key].model] = price
    if opt.name in _THREADED:
        options.setdefault("num_threads", config.concurrency)
    cls = getattr(dspy, OPTIMIZERS[opt.name])
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # constructors print to stdout
            return cls(metric=metric, **options), prices
    except (TypeError, ValueError, AssertionError) as exc:
        raise ConfigError(f"optimizer '{opt.name}' options: {exc}") from None


class SharedUsageTracker(UsageTracker):
    """A usage tracker every thread of an optimizer shares. DSPy's ParallelExecutor hands each
    worker a deep copy of the context's tracker and drops it afterwards, so the LM calls of
    parallel evaluations (random search, MIPROv2, SIMBA, GEPA) would go uncounted; this tracker
    is its own deep copy, and adds under a lock."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()

    def __deepcopy__(self, memo: dict) -> SharedUsageTracker:
        return self

    def add_usage(self, lm: str, usage_entry: dict[str, Any]) -> None:
        with self._lock:
            super().add_usage(lm, usage_entry)


def _usage_by_model(
    tracker: UsageTracker, prices: dict[str, tuple[float, float] | None]
) -> dict[str, Usage]:
    """Usage per model, each costed at its configured price (else LiteLLM's price map)."""
    return {
        model: usage_of_tracker(SimpleNamespace(usage_data={model: entries}), prices.get(model))
        for model, entries in tracker.usage_data.items()
    }


def _program(
    judge: JudgeConfig,
    lm_factory: Callable[[JudgeConfig], Any],
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


# -- the run ------------------------------------------------------------------------------------
def optimize(
    config: OptimizeConfig,
    *,
    workdir: Path,
    config_dir: Path | None = None,
    progress: bool = True,
    tracking_uri: str | None = None,
    lm_factory: Callable[[JudgeConfig], Any] | None = None,
) -> dict[str, Any]:
    """Split, measure the baseline, compile, measure again, save and log (see the module doc).

    Re-running a finished run reads ``result.json``; a crashed one resumes at the stage it
    reached (the baseline is never judged twice). Returns the contents of ``result.json``.
    """
    scale = config.judge.scale
    assert scale is not None
    from assay.experiments._tracking import default_tracking_uri

    uri = tracking_uri or config.tracking.uri or default_tracking_uri(workdir)
    items = load_items(config.data, scale, cache_dir=workdir / ".assay" / "hf")
    labelled = {it.id: it for it in items if it.expected is not None}
    labels = {i: it.expected for i, it in labelled.items()}
    ids = split_three(labels, config.split)  # type: ignore[arg-type]
    check_splittable(labels, ids, config.split, scale)  # type: ignore[arg-type]
    splits = {part: [labelled[i] for i in ids[part]] for part in SPLITS}
    lm_factory = lm_factory or judge_lm_factory(retries=config.retries, base=config_dir)
    metric = make_metric(config)
    judge_lm = lm_factory(config.judge)
    adapter = make_adapter(config.judge.adapter)
    with dspy.context(lm=judge_lm, adapter=adapter):
        optimizer, prices = make_optimizer(config, metric, len(splits["train"]), config_dir)
    prices[judge_lm.model] = config.judge.price_pair

    fingerprint = data_fingerprint(items)
    run_hash = config.run_hash(fingerprint)
    run_dir = (workdir / config.output_dir / f"{config.name}-{run_hash[:10]}").resolve()
    store = RunStore(run_dir, run_hash)
    state = store.open(config.model_dump(mode="json"))
    if state.get("status") == "finished" and (run_dir / "result.json").exists():
        return {**json.loads((run_dir / "result.json").read_text()), "reused": True}
    split_record = {
        **config.split.model_dump(),
        **{f"{p}_ids": ids[p] for p in SPLITS},
        "sizes": {p: len(ids[p]) for p in SPLITS},
        "labels": {p: _label_counts(splits[p], scale) for p in SPLITS},
        "without_reference": len(items) - len(labelled),
    }
    store.write_json("split.json", split_record)

    def program(state_ref: str | None) -> dspy.Module:
        return _program(config.judge, lm_factory, state_ref, tracking_uri=uri, base=config_dir)

    # 1. baseline, saved before anything is optimized
    baseline_key = stable_hash(
        {
            "judge": config.judge.config_hash(),
            "data": fingerprint,
            "ids": ids,
            "bootstrap": config.bootstrap.model_dump(),
            "invariance": config.invariance.model_dump(),
            "metric": config.metric,
        }
    )
    old = _read(run_dir / "baseline.json")
    if old and old.get("key") == baseline_key:
        before, before_reused = old["measure"], True
    else:
        before = measure(
            program(config.judge.program_state),
            splits,
            config,
            store,
            "baseline.jsonl",
            progress=progress,
            desc="baseline",
        )
        store.write_json(
            "baseline.json", {"key": baseline_key, "created": now(), "measure": before}
        )
        before_reused = False

    # 2. compile on train (skipped when a previous attempt finished it)
    compiled = _read(run_dir / "compile.json")
    if not (compiled and (run_dir / "program.json").exists()):
        student = program(config.judge.program_state)
        for p in student.predictors():
            p.lm = None  # the context LM is used; DSPy resets predictor LMs anyway
        if config.invariance.enabled:
            student = InvariantJudge(student, config.invariance.variants)
        train = examples(student, splits["train"], config.judge)
        kwargs = dict(config.optimizer.compile_options)
        if config.optimizer.name in _USES_VALSET:
            kwargs.setdefault("valset", examples(student, splits["dev"], config.judge))
        start = time.perf_counter()
        # optimizers print to stdout (kept off it: --json prints there) and draw tqdm bars
        quiet = io.StringIO()
        tracker = SharedUsageTracker()
        with (
            dspy.context(lm=judge_lm, adapter=adapter, usage_tracker=tracker),
            contextlib.redirect_stdout(sys.stderr if progress else quiet),
            contextlib.redirect_stderr(sys.stderr if progress else quiet),
        ):
            result = optimizer.compile(student, trainset=train, **kwargs)
        optimized = result.judge if isinstance(result, InvariantJudge) else result
        by_model = _usage_by_model(tracker, prices)
        save_program(optimized, run_dir / "program.json")
        compiled = {
            "optimizer": config.optimizer.model_dump(),
            "seconds": round(time.perf_counter() - start, 3),
            "demos": _demos(optimized),
            "usage": sum(by_model.values(), Usage()).model_dump(),
            "usage_by_model": {m: u.model_dump() for m, u in by_model.items()},
            "finished": now(),
        }
        store.write_json("compile.json", compiled)
        store.update_state(status="compiled")

    # 3. the optimized program, reloaded from its saved state, on dev and test
    after = measure(
        program(str(run_dir / "program.json")),
        splits,
        config,
        store,
        "optimized.jsonl",
        progress=progress,
        desc="optimized",
    )
    usage = {
        "baseline": before["usage"],
        "optimization": compiled["usage"],
        "optimization_by_model": compiled["usage_by_model"],
        "after": after["usage"],
    }
    usage["total"] = sum(
        (Usage(**usage[k]) for k in ("baseline", "optimization", "after")), Usage()
    ).model_dump()
    out: dict[str, Any] = {
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
    store.write_json("result.json", out)
    if config.tracking.enabled:
        out["mlflow_run_id"], out["mlflow_model"] = _log(
            config, out, run_dir, workdir, uri, ids, fingerprint
        )
        out["use"] = {"judge": {"program_state": f"runs:/{out['mlflow_run_id']}/program.json"}}
        store.write_json("result.json", out)
    store.update_state(status="finished", finished=now(), mlflow_run_id=out["mlflow_run_id"])
    return out


def _label_counts(items: list[Item], scale: Scale) -> dict[str, int]:
    counts: dict[str, int] = {}
    for it in items:
        key = str(scale.label_of(it.expected) or it.expected)  # type: ignore[arg-type]
        counts[key] = counts.get(key, 0) + 1
    return counts


def _read(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.exists() else None


def _log(
    config: OptimizeConfig,
    out: dict[str, Any],
    run_dir: Path,
    workdir: Path,
    uri: str,
    ids: dict[str, list[str]],
    fingerprint: str,
) -> tuple[str, str]:
    """MLflow: params = judge config, optimizer, objective, split sizes; metrics = before/after
    per split with CI bounds (after-on-test also unprefixed, like an evaluate run); artifacts =
    the run directory (``program.json`` at the root); and the program with ``mlflow.dspy``
    when that works (a failure there is noted, never fatal)."""
    from assay.experiments._tracking import flat_metrics, log_run

    params = config.judge.flat_params()
    params.update(
        {
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
    )
    metrics = flat_metrics(out["after"]["test"])
    for phase in ("before", "after"):
        for part in ("dev", "test"):
            for k, v in flat_metrics(out[phase][part]).items():
                metrics[f"{phase}.{part}.{k}"] = v
        for k in ("label_agreement", "consistency", "value"):
            v = out[phase]["objective"][k]
            if v is not None:
                metrics[f"{phase}.objective.{k}"] = float(v)
    for k, v in out["usage"]["optimization"].items():
        metrics[f"optimization.{k}"] = float(v)
    metrics["optimization.demos"] = float(out["demos"])
    scale = config.judge.scale
    assert scale is not None
    run_id = log_run(
        tracking_uri=uri,
        experiment=config.tracking.experiment,
        run_name=config.name,
        params=params,
        metrics=metrics,
        tags={
            "assay.command": "optimize",
            "assay.data": stable_hash({"data": fingerprint, "test": ids["test"]}),
            "assay.scale": scale.describe(),
            "assay.judge": config.judge.name,
            "assay.optimized": "true",
            "assay.optimizer": config.optimizer.name,
        },
        artifacts_dir=run_dir,
        artifact_root=workdir / "mlartifacts",
    )
    return run_id, _log_dspy_model(config, run_id, run_dir / "program.json")


def _log_dspy_model(config: OptimizeConfig, run_id: str, state: Path) -> str:
    """Log the optimized program (without LMs) with ``mlflow.dspy``; a note if that fails."""
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


# -- command line -------------------------------------------------------------------------------
def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``assay optimize`` (the lead wires this into ``assay.cli``)."""
    o = subparsers.add_parser(
        "optimize",
        help="compile a judge with a DSPy optimizer on a train split; measure before and after",
    )
    o.add_argument("config", help="YAML optimize config (see examples/optimize_harmbench.yaml)")
    o.add_argument("--tracking-uri", help="MLflow tracking URI")
    o.add_argument("--json", action="store_true", help="print the result as one JSON object")
    o.add_argument("--quiet", action="store_true", help="no progress bars or optimizer output")
    o.set_defaults(func=run)
    return o


def run(args: argparse.Namespace) -> int:
    from assay.experiments._config import load_config

    config, base = load_config(args.config, model=OptimizeConfig)
    workdir = Path.cwd()
    configure_cache(workdir)
    out = optimize(
        config,
        workdir=workdir,
        config_dir=base,
        progress=not (args.quiet or args.json),
        tracking_uri=args.tracking_uri,
    )
    if args.json:
        print(json.dumps(out, default=str))
        return 0
    print(render_result(out, config.bootstrap.confidence))
    return 0


def render_result(out: dict[str, Any], confidence: float = 0.95) -> str:
    """Before/after tables (dev and test), the objective's parts, costs and where things are."""
    s = out["split"]
    lines = [
        f"\n{out['name']}: {out['optimizer']['name']} on {s['sizes']['train']} train items "
        f"(dev {s['sizes']['dev']}, test {s['sizes']['test']}; seed {s['seed']})"
        + (" · baseline reused" if out["before"].get("reused") else ""),
    ]
    pct = int(confidence * 100)
    for part in ("dev", "test"):
        b, a = out["before"][part]["metrics"], out["after"][part]["metrics"]
        lines += [
            f"\n{part} ({out['after'][part]['counts']['paired']} paired):",
            f"| metric | before [{pct}% CI] | after [{pct}% CI] | change |",
            "|---|---|---|---|",
        ]
        for name in b:
            lines.append(
                f"| {name} | {fmt_ci(b.get(name))} | {fmt_ci(a.get(name))} | {_delta(b.get(name), a.get(name))} |"
            )
    ob, oa = out["objective"]["before"], out["objective"]["after"]
    lines += [
        f"\nobjective on dev ({ob['metric']}):",
        "| part | before | after |",
        "|---|---|---|",
        f"| label agreement | {_fmt(ob['label_agreement'])} | {_fmt(oa['label_agreement'])} |",
    ]
    if ob["consistency"] is not None:
        lines.append(
            f"| consistency ({ob['with_variants']} items with variants) | {_fmt(ob['consistency'])} | {_fmt(oa['consistency'])} |"
        )
    lines.append(f"| objective | {_fmt(ob['value'])} | {_fmt(oa['value'])} |")
    u = out["usage"]
    lines.append(
        "\nLM calls: baseline {b} · optimizer {o} · after {a} · total cost ${c:.6f}".format(
            b=u["baseline"]["calls"],
            o=u["optimization"]["calls"],
            a=u["after"]["calls"],
            c=u["total"]["cost_usd"],
        )
        + (
            f" ({u['total']['unpriced_calls']} calls unpriced)"
            if u["total"]["unpriced_calls"]
            else ""
        )
    )
    lines.append(f"optimized program ({out['demos']} demos): {out['program']}")
    if out.get("mlflow_run_id"):
        lines.append(
            f"MLflow run: {out['mlflow_run_id']} · use it: judge: {{program_state: runs:/{out['mlflow_run_id']}/program.json}}"
        )
    return "\n".join(lines)


def _delta(b: dict[str, Any] | None, a: dict[str, Any] | None) -> str:
    if not a or not b or a.get("value") is None or b.get("value") is None:
        return "—"
    d = a["value"] - b["value"]
    return "—" if d != d else f"{d:+.3f}"
