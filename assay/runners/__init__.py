"""Every command is a runner: one class registered with ``@runner("name")`` declaring its options,
config and summary models, its run, its report and its console printer (the protocol,
:mod:`assay.runners._runner`); the command line, the Python API (``assay.<name>(...)``) and
``assay schema`` are generated from them. The built-in runners are this package's public
modules, one light declaration each: a command imports only the runner it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay._lazy import lazy_names

_WHERE = {
    "BUILTIN": "_runner",
    "ConfigOptions": "_runner",
    "Options": "_runner",
    "RunOptions": "_runner",
    "Runner": "_runner",
    "argument": "_runner",
    "cli_type": "_runner",
    "get_runner": "_runner",
    "known_runners": "_runner",
    "lm_cache": "_runner",
    "option": "_runner",
    "run_kind": "_runner",
    "runner": "_runner",
    "write_report": "_runner",
}

if TYPE_CHECKING:  # for type checkers and editors: the same names, imported eagerly
    from assay.runners._runner import (
        BUILTIN,
        ConfigOptions,
        Options,
        Runner,
        RunOptions,
        argument,
        cli_type,
        get_runner,
        known_runners,
        lm_cache,
        option,
        run_kind,
        runner,
        write_report,
    )

__all__ = [
    "BUILTIN",
    "ConfigOptions",
    "Options",
    "RunOptions",
    "Runner",
    "argument",
    "cli_type",
    "get_runner",
    "known_runners",
    "lm_cache",
    "option",
    "run_kind",
    "runner",
    "write_report",
]
assert sorted(__all__) == sorted(_WHERE)


__getattr__, __dir__ = lazy_names(__name__, _WHERE)
