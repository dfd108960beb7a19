"""The Python API, as short as the command line: one function per registered runner (see
:mod:`assay.runners._runner`), taking a config object or the path of a YAML config (plus
the command line's options, by their field names) and returning the typed result.

    import assay
    res = assay.evaluate("examples/harmbench.yaml", limit=20)
    print(res.summary.metrics["kappa_categorical"])

``workdir`` (default: the current directory) holds ``runs/``, ``mlflow.db`` and the LM cache,
exactly as for the command line; ``progress=False`` hides the progress bars. A runner of a
config also takes dotted config overrides (``**{"judge.model": "..."}``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from assay import _API as BUILTIN  # the built-in runners' functions, named without imports
from assay.runners import get_runner, known_runners

C = TypeVar("C", bound=BaseModel)


def runner_function(name: str) -> Any:
    """``assay.<name>(...)``: the runner registered as ``name``, called as the command line
    calls it (:meth:`~assay.runners._runner.Runner.call`)."""
    cls = get_runner(name)

    def call(*args: Any, **kwargs: Any) -> Any:
        return cls.call(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__signature__ = cls.signature()  # type: ignore[attr-defined]
    call.__doc__ = f"``assay {' '.join(cls.words())}``: {cls.help()}.\n\n" + "\n".join(
        f"{field}: {info.description or ''}" for field, info in cls.Options.model_fields.items()
    )
    return call


def __getattr__(name: str) -> Any:
    if name.startswith("_") or (name not in BUILTIN and name not in known_runners()):
        raise AttributeError(f"module 'assay.api' has no attribute {name!r}")
    return runner_function(name)


def _config(
    config: C | str | Path, model: type[C], overrides: dict[str, Any]
) -> tuple[C, Path | None]:
    """A config object, or the one a YAML file holds (with its folder), as a runner reads it."""
    from assay.runners import ConfigOptions

    options = ConfigOptions(config=config, overrides=overrides)
    if model.__name__ == "ToolEmuRunConfig":
        from assay.emulation import load_toolemu_config

        return options.load(model, loader=load_toolemu_config)
    return options.load(model)


def write_html_report(run_dir: str | Path, *, items: list | None = None) -> Path:
    """Write ``run_dir/report.html`` again for a finished run of any kind; returns its path.

    The runner whose kind the run's ``run.json`` names builds its report (a
    :class:`assay.report.Report`) from what its run wrote (a run written before runs named
    their kind: guessed from its files). ``items`` (evaluate runs) gives the item texts;
    without it they are read back from the run's data set when that is a local file."""
    from assay.runners import write_report

    return write_report(Path(run_dir), **({"items": items} if items is not None else {}))


__all__ = [*BUILTIN, "get_runner", "runner_function", "write_html_report"]
