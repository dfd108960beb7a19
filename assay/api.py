"""The Python API, as short as the command line: each function takes a config object or the
path of a YAML config (plus the command line's options) and returns the typed result.

    import assay
    res = assay.evaluate("examples/harmbench.yaml", limit=20)
    print(res.summary.metrics["kappa_categorical"])

``workdir`` (default: the current directory) holds ``runs/``, ``mlflow.db`` and the LM cache,
exactly as for the command line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from assay.errors import RunError
from assay.experiments import (
    AgreementResult,
    CalibrationResult,
    EvaluateConfig,
    EvaluateResult,
    PrevalenceResult,
    load_config,
)
from assay.experiments.compare import Comparison
from assay.experiments.optimize import OptimizeConfig, OptimizeResult
from assay.experiments.reliability import HarnessConfig, HarnessResult
from assay.lm import configure_cache
from assay.toolemu import ToolEmuResult, ToolEmuRunConfig, load_toolemu_config

C = TypeVar("C", bound=BaseModel)


def _config(
    config: C | str | Path, model: type[C], overrides: dict[str, Any]
) -> tuple[C, Path | None]:
    if isinstance(config, str | Path):
        if model is ToolEmuRunConfig:
            return load_toolemu_config(config, overrides)  # type: ignore[return-value]
        return load_config(config, overrides, model=model)
    if overrides:
        raise TypeError("overrides apply to a config file; change the config object instead")
    return config, None


def _workdir(workdir: str | Path | None) -> Path:
    here = Path(workdir) if workdir is not None else Path.cwd()
    configure_cache(here)
    return here


def evaluate(
    config: EvaluateConfig | str | Path,
    *,
    workdir: str | Path | None = None,
    limit: int | None = None,
    tracking_uri: str | None = None,
    progress: bool = True,
    **overrides: Any,
) -> EvaluateResult:
    """``assay evaluate``; ``overrides`` are dotted config keys (``**{"judge.model": "..."}``)."""
    from assay.experiments import evaluate as run

    cfg, base = _config(config, EvaluateConfig, overrides)
    return run(
        cfg,
        workdir=_workdir(workdir),
        config_dir=base,
        limit=limit,
        tracking_uri=tracking_uri,
        progress=progress,
    )


def calibrate(
    config: EvaluateConfig | str | Path,
    *,
    workdir: str | Path | None = None,
    fraction: float = 0.5,
    seed: int = 0,
    limit: int | None = None,
    tracking_uri: str | None = None,
    progress: bool = True,
    method: str = "threshold",
) -> CalibrationResult:
    """``assay calibrate``."""
    from assay.experiments import calibrate as run

    cfg, base = _config(config, EvaluateConfig, {})
    return run(
        cfg,
        workdir=_workdir(workdir),
        config_dir=base,
        fraction=fraction,
        seed=seed,
        limit=limit,
        tracking_uri=tracking_uri,
        progress=progress,
        method=method,
    )


def harness(
    config: HarnessConfig | str | Path,
    *,
    workdir: str | Path | None = None,
    limit: int | None = None,
    tests: list[str] | None = None,
    judges: list[str] | None = None,
    tracking_uri: str | None = None,
    progress: bool = True,
) -> HarnessResult:
    """``assay harness``."""
    from assay.experiments.reliability import run_harness

    cfg, base = _config(config, HarnessConfig, {})
    return run_harness(
        cfg,
        workdir=_workdir(workdir),
        config_dir=base,
        limit=limit,
        tests=tests,
        judges=judges,
        tracking_uri=tracking_uri,
        progress=progress,
    )


def toolemu(
    config: ToolEmuRunConfig | str | Path,
    *,
    workdir: str | Path | None = None,
    cases: str | list[int] | None = None,
    limit: int | None = None,
    tracking_uri: str | None = None,
    progress: bool = True,
) -> ToolEmuResult:
    """``assay toolemu run``."""
    from assay.toolemu import run_toolemu

    cfg, base = _config(config, ToolEmuRunConfig, {})
    return run_toolemu(
        cfg,
        workdir=_workdir(workdir),
        config_dir=base,
        select=cases,
        limit=limit,
        tracking_uri=tracking_uri,
        progress=progress,
    )


def optimize(
    config: OptimizeConfig | str | Path,
    *,
    workdir: str | Path | None = None,
    tracking_uri: str | None = None,
    progress: bool = True,
) -> OptimizeResult:
    """``assay optimize``."""
    from assay.experiments.optimize import optimize as run

    cfg, base = _config(config, OptimizeConfig, {})
    return run(
        cfg,
        workdir=_workdir(workdir),
        config_dir=base,
        progress=progress,
        tracking_uri=tracking_uri,
    )


def agreement(reference: str | Path, candidate: str | Path, **options: Any) -> AgreementResult:
    """``assay agreement`` (no LM call); ``options`` as :func:`assay.experiments.agreement`."""
    from assay.experiments import agreement as run

    return run(reference, candidate, **options)


def compare(
    selectors: list[str] | None = None,
    *,
    workdir: str | Path | None = None,
    tracking_uri: str | None = None,
    **options: Any,
) -> Comparison:
    """``assay compare``: judge runs side by side, read from MLflow."""
    from assay.experiments.compare import compare as run
    from assay.experiments.runs import default_tracking_uri

    here = Path(workdir) if workdir is not None else Path.cwd()
    return run(selectors or [], tracking_uri=tracking_uri or default_tracking_uri(here), **options)


def estimate(run: str | Path, validation: str | Path, **options: Any) -> PrevalenceResult:
    """``assay estimate`` (no LM call): a verdict's rate corrected for the judge's errors."""
    from assay.experiments import estimate as run_estimate

    return run_estimate(run, validation, **options)


def write_html_report(run_dir: str | Path, *, items: list | None = None) -> Path:
    """Write ``run_dir/report.html`` again for a finished run of any kind; returns its path.

    Each runner builds its report (a :class:`assay.report.Report`) from what its run wrote; the
    kind of run is read from the files it holds. ``items`` (evaluate runs) gives the item
    texts; without it they are read back from the run's data set when that is a local file."""
    from assay.experiments import build_report as evaluate_report
    from assay.experiments.compare import build_report as compare_report
    from assay.experiments.reliability import build_report as harness_report
    from assay.report import write_html
    from assay.toolemu import build_report as toolemu_report

    run_dir = Path(run_dir)
    kind = detect_kind(run_dir)
    report = {
        "evaluate": lambda: evaluate_report(run_dir, items),
        "harness": lambda: harness_report(run_dir),
        "toolemu": lambda: toolemu_report(run_dir),
        "compare": lambda: compare_report(run_dir),
    }[kind]()
    return write_html(report, run_dir)


def detect_kind(run_dir: Path) -> str:
    """The kind of run a directory holds, from the files it wrote."""
    if (run_dir / "comparison.json").is_file():
        return "compare"
    if (run_dir / "metrics.json").is_file():
        if (run_dir / "trajectories.jsonl").is_file():
            return "toolemu"
        if (run_dir / "probes.jsonl").is_file():
            return "harness"
        if (run_dir / "judgments.jsonl").is_file():
            return "evaluate"
    raise RunError(
        f"{run_dir}: not a finished run (no comparison.json, or metrics.json with judgments.jsonl, "
        "probes.jsonl or trajectories.jsonl)"
    )
