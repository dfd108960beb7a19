"""What the exported scorers share: an assay judge loaded from a config or a finished run, the
figures assay measured of it, and one request / response judged into a :class:`Judgment`."""

from __future__ import annotations

import math
import threading
from pathlib import Path
from typing import Any, Protocol

from assay.errors import ConfigError
from assay.programs import JudgeConfig
from assay.types import Item, Judgment

PREFIX = "assay."
"""Every metadata key the scorers add starts with it."""


class WithJudge(Protocol):
    """A runner's config that holds one judge (``EvaluateConfig``, ``OptimizeConfig``, …)."""

    @property
    def judge(self) -> JudgeConfig: ...


JudgeSource = JudgeConfig | WithJudge | str | Path
"""Where a judge is loaded from: its config, a config holding it, a YAML config file with a
``judge``, or a finished ``evaluate`` or ``harness`` run directory."""


class MeasuredJudge:
    """An assay judge ready to score one response at a time, with its measured figures
    (``figures``: metadata ``assay.<name>`` → text, as MLflow assessments hold them)."""

    def __init__(self, config: JudgeConfig, figures: dict[str, str] | None = None):
        self.config = config
        self.config_hash = config.config_hash()
        self.figures = {
            f"{PREFIX}judge": config.name,
            f"{PREFIX}config_hash": self.config_hash,
            **(figures or {}),
        }
        self._program: Any = None
        self._lock = threading.Lock()

    @property
    def source_id(self) -> str:
        """``<name>@<config hash>``: which judge, exactly, gave a verdict."""
        return f"{self.config.name}@{self.config_hash}"

    def judge(self, request: str, response: str, item_id: str | None = None) -> Judgment:
        """One verdict — scored, or unscored with its reason (never a made-up score)."""
        from assay.runs import judge_one

        item = Item(
            id=item_id or Item.content_id(request, response), request=request, response=response
        )
        return judge_one(self.program(), item, self.config, config_hash=self.config_hash)

    def program(self) -> Any:
        with self._lock:
            if self._program is None:
                from assay.programs import build_judge

                self._program = build_judge(self.config)
            return self._program

    def value(self, judgment: Judgment) -> bool | int | str | None:
        """A scored verdict as the tools hold it: a bool on a binary scale, the label on a
        categorical one, the integer score on an ordinal one; ``None`` when unscored."""
        score, scale = judgment.score, self.config.scale
        if score is None or scale is None:
            return None
        return scale.tool_value(score)


def load_judge(
    config_or_run: JudgeSource,
    *,
    harness: str | Path | None = None,
    judge: str | None = None,
) -> MeasuredJudge:
    """The judge of ``config_or_run`` — a :class:`JudgeConfig`, a config object or YAML file
    with a ``judge``, or a finished ``evaluate`` run directory (its config and its κ with CI and
    n) or ``harness`` run directory (``judge`` names one of its judges when it has several) —
    with ``harness``'s reliability summary (its worst test's rate) of the same judge config."""
    figures: dict[str, str] = {}
    if isinstance(config_or_run, JudgeConfig):
        config = config_or_run
    elif isinstance(getattr(config_or_run, "judge", None), JudgeConfig):
        config = config_or_run.judge
    else:
        path = Path(config_or_run)
        if path.is_dir():
            config, figures = _from_run(path, judge)
        elif path.is_file():
            from assay.inputs import load_config

            config = load_config(path)[0].judge
        else:
            raise ConfigError(f"{path}: no judge config file or run directory there")
    if harness is not None:
        figures.update(_reliability(Path(harness), config))
    return MeasuredJudge(config, figures)


def _from_run(run_dir: Path, name: str | None) -> tuple[JudgeConfig, dict[str, str]]:
    from assay.inputs import load_config
    from assay.runners import get_runner, run_kind
    from assay.runs import sealed_run

    kind = run_kind(run_dir)
    if kind not in ("evaluate", "harness"):
        raise ConfigError(f"{run_dir}: a {kind} run; give an evaluate or harness run's directory")
    state = sealed_run(run_dir, kind=kind)  # the figures are the run's as it finished them
    runner = get_runner(kind)
    config = load_config(run_dir / "config.yaml", model=runner.config_model())[0]
    if kind == "harness":
        return _harness_judge(run_dir, config.judges, name), {}
    summary = runner.read_summary(run_dir)
    figures = {f"{PREFIX}{k}": v for k, v in _run_ids(run_dir, state).items()}
    figures[f"{PREFIX}n"] = str(summary.counts.paired)
    for metric, m in summary.metrics.items():
        if metric.startswith("kappa"):
            figures[f"{PREFIX}{metric}"] = _num(m.value)
            figures[f"{PREFIX}{metric}_ci_low"] = _num(m.ci_low)
            figures[f"{PREFIX}{metric}_ci_high"] = _num(m.ci_high)
    return config.judge, figures


def _harness_judge(run_dir: Path, judges: list[JudgeConfig], name: str | None) -> JudgeConfig:
    names = [j.name for j in judges]
    if name is None and len(judges) == 1:
        return judges[0]
    for j in judges:
        if j.name == name:
            return j
    raise ConfigError(f"{run_dir}: name one of its judges ({', '.join(names)}) with judge=")


def _reliability(run_dir: Path, config: JudgeConfig) -> dict[str, str]:
    """The harness run's figures of the judge with ``config``'s hash: its worst test's rate
    (pass rate or consistency, the lowest) and which test that is."""
    from assay.comparison import worst_test
    from assay.reliability import judge_metrics
    from assay.runners import get_runner, run_kind
    from assay.runs import sealed_run

    if run_kind(run_dir) != "harness":
        raise ConfigError(f"{run_dir}: not a harness run (harness= takes a harness run directory)")
    state = sealed_run(run_dir, kind="harness")
    summary = get_runner("harness").read_summary(run_dir)
    digest = config.config_hash()
    measured = [r for r in summary.judges.values() if r.config_hash == digest]
    if not measured:
        raise ConfigError(
            f"{run_dir}: the harness measured no judge with config hash {digest} "
            f"({config.name}'s); it measured {', '.join(summary.judges) or 'none'}"
        )
    worst = worst_test(judge_metrics(measured[0]))
    figures = {f"{PREFIX}harness_{k}": v for k, v in _run_ids(run_dir, state).items()}
    if worst is not None:
        figures[f"{PREFIX}worst_test_rate"] = _num(worst[0])
        figures[f"{PREFIX}worst_test"] = worst[1]
    figures[f"{PREFIX}mean_pass_rate"] = _num(measured[0].mean_pass_rate)
    return figures


def _run_ids(run_dir: Path, state: dict[str, Any]) -> dict[str, str]:
    ids = {"run_hash": state["run_hash"], "run_dir": str(run_dir.resolve())}
    if state.get("mlflow_run_id"):
        ids["mlflow_run_id"] = state["mlflow_run_id"]
    return ids


def _num(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "nan"
    return f"{value:.4g}"
