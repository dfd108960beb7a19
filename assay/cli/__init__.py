"""The command line, generated from the runner registry and calling the same API: one
subcommand per registered runner, plus ``review`` and ``schema``.

Every ``--plugin`` of the command line — before the command (``assay --plugin FILE COMMAND``,
for every command) or after it (a runner's option) — is imported before the parser is built,
so a plug-in may add a runner, and so a command of its own; the installed packages' plug-ins
(the ``assay.plugins`` entry points) load at the registry's first lookup.

A user mistake prints one line and exits non-zero; Ctrl-C ends the run at once (everything
finished is already saved) and never waits on a hung request.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import assay  # noqa: F401  (sets offline-safe environment defaults first)
from assay._registry import load_plugins, plugin_spec
from assay.cli import review, schema
from assay.errors import AssayError
from assay.runners import get_runner, known_runners

COMMANDS = {"review": review, "schema": schema}
"""The commands that are not runners (each module has ``register(subparsers)``); every runner is
a command of its own (:mod:`assay.runners._runner`: a new runner is one file and its
registration, nothing here)."""
# ``assay --help`` lists review right after harness: reviewing a harness's probes is its first use
_FOLLOWS = {"harness": "review"}


class _Parser(argparse.ArgumentParser):
    """argparse, with a mistake on the command line as one line naming the option (the usage
    is one ``--help`` away), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command: the registered runners' (their options declared once, in
    their runner), with ``review`` and ``schema``."""
    p = _Parser(prog="assay", description="Measure LLM judges: agreement, reliability, cost.")
    p.add_argument(*_PLUGIN, **_PLUGIN_KW)
    sub = p.add_subparsers(dest="command", required=True)
    groups: dict[str, argparse._SubParsersAction] = {}  # two-word commands: ``toolemu run``
    placed: set[str] = set()
    for name in known_runners():
        runner = get_runner(name)
        first, *rest = runner.words()
        if not rest:
            runner.add_parser(sub)
        else:
            if first not in groups:
                group = sub.add_parser(first, help=runner.group_help or None)
                groups[first] = group.add_subparsers(dest=f"{first}_command", required=True)
            runner.add_parser(groups[first])
        if first in _FOLLOWS:
            COMMANDS[_FOLLOWS[first]].register(sub)
            placed.add(_FOLLOWS[first])
    for name, command in COMMANDS.items():
        if name not in placed:
            command.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    import logging

    if argv is None:
        _no_notebook_display()

    logging.getLogger("mlflow").setLevel(logging.WARNING)  # not "creating database tables..."
    try:  # the plug-ins first: they may add runners, which the parser is built from
        _import_plugins(sys.argv[1:] if argv is None else argv)
        parser = build_parser()
    except AssayError as exc:
        print(f"assay: error: {exc}", file=sys.stderr)
        return _leave(exc.exit_code, argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a mistake on the command line (its line printed)
        if argv is None:
            raise
        return exc.code if isinstance(exc.code, int) else 2
    if argv is None and getattr(args, "opens_run", False):
        args.started = _sidecar_started  # entered once there is work (not for a re-read)
    try:
        code = args.func(args)
    except AssayError as exc:
        print(f"assay: error: {exc}", file=sys.stderr)
        return _leave(exc.exit_code, argv)
    except KeyboardInterrupt:
        print("assay: interrupted; re-run the same command to resume", file=sys.stderr)
        return _leave(130, argv)
    return _end(code, argv)


_PLUGIN = ("--plugin",)
_PLUGIN_KW = {
    "dest": "plugins_before",
    "action": "append",
    "default": [],
    "metavar": "FILE_OR_MODULE",
    "help": "import this plug-in first — a Python file or a module name; it may add a runner "
    "(repeatable; a run's plug-ins are recorded in its config and part of its identity)",
}


def _import_plugins(argv: list[str]) -> None:
    """Import every ``--plugin`` of ``argv``, wherever it stands (a file relative to the
    current directory), before the parser is built from the registered runners."""
    scan = argparse.ArgumentParser(prog="assay", add_help=False, allow_abbrev=False)
    scan.add_argument(*_PLUGIN, **_PLUGIN_KW)
    found = scan.parse_known_args(argv)[0].plugins_before
    load_plugins([plugin_spec(value, Path.cwd()) for value in found])


@contextlib.contextmanager
def _sidecar_started() -> Iterator[None]:
    """What the run this command opens may start before the command's own imports (the
    MLflow helper interpreter: :func:`assay.runs.command_started`). The runner enters it once
    it knows it has work: not for a finished run it reads back by its inputs."""
    from assay.runs import command_started

    with command_started():
        yield


def _no_notebook_display() -> None:
    """A command never runs in a notebook, yet DSPy imports IPython's display helpers whenever
    IPython happens to be installed (none of assay's dependencies needs it): a third of DSPy's
    import, on the path to a command's first LM call. Marked absent for this process only —
    DSPy, matplotlib and tqdm all fall back to plain output, as without IPython."""
    if "IPython" not in sys.modules:
        sys.modules["IPython"] = None  # type: ignore[assignment]


def _end(code: int, argv: list[str] | None) -> int:
    """A command that ran to its end (its result printed, its files written and closed) exits
    without the interpreter's teardown of DSPy, pydantic and the rest — 0.15-0.2 s measured
    after the work was done. The exit handlers still run (the sidecars closed, a Ray session
    shut down, the embedded model freed, logs flushed). Called from Python, just return."""
    if argv is not None:
        return code
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing to keep
            stream.flush()
    os._exit(code)


def _leave(code: int, argv: list[str] | None) -> int:
    """Exit now when worker threads are still blocked in requests (an abandoned pool after
    Ctrl-C or a deadline): the interpreter would otherwise wait for them at exit. Everything
    finished is on disk already. Called from Python (``argv`` given), just return."""
    stuck = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if argv is None and stuck:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
