"""The DSPy optimizers assay drives, their own LMs, and the usage of every call they make."""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import dspy
from dspy.utils.usage_tracker import UsageTracker

from assay.errors import ConfigError
from assay.lm import usage_of_tracker
from assay.optimization._config import OPTIMIZERS, OptimizeConfig
from assay.types import Usage

_THREADED = {"random_search", "mipro", "simba", "gepa"}
_LM_OPTIONS = ("prompt_model", "task_model", "reflection_lm")


def _role_lm(
    key: str, value: Any, config: OptimizeConfig, base: Path | None
) -> tuple[dspy.LM, tuple[float, float] | None]:
    """An optimizer's own LM (``prompt_model``, ``reflection_lm``...) from a model string or a
    model spec mapping (a generator's defaults: it writes instructions), built like any role's
    LM; with the price its usage is costed at."""
    from pydantic import ValidationError

    from assay.inputs import first_error
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


def usage_by_model(
    tracker: UsageTracker, prices: dict[str, tuple[float, float] | None]
) -> dict[str, Usage]:
    """Usage per model, each costed at its configured price (else LiteLLM's price map)."""
    return {
        model: usage_of_tracker(SimpleNamespace(usage_data={model: entries}), prices.get(model))
        for model, entries in tracker.usage_data.items()
    }
