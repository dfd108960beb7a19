"""The runner protocol: what a runner declares, and the registry the command line, the Python
API, ``assay schema`` and the report dispatch are generated from.

A runner is one class registered with ``@runner("name")``:

    @runner("evaluate")
    class Evaluate(Runner):
        '''run a judge over a labelled data set and measure its agreement'''  # its --help line

        class Options(RunOptions):          # the command-line options and the API keywords,
            limit: int | None = option(...)  # declared once: pydantic fields with their help

        config = "assay.inputs:EvaluateConfig"   # `assay schema evaluate`
        summary = "assay.evaluation:EvaluateSummary"  # metrics.json, validated

        def run(self, options, *, workdir, progress): ...     # opens its Run, returns a result
        def report(self, run_dir, **options): ...             # report.html's Report
        def print(self, result, options, *, json): ...        # the console; the exit code

The command line adds ``assay <command ...>`` with the options' fields as arguments
(:meth:`Runner.add_parser`, :meth:`Runner.main`); the API function ``assay.<name>`` is
:meth:`Runner.call`; both validate the same options model and run it through
:meth:`Runner.execute`. A run opened with ``Run.open(..., command=<name>)`` (or ``kind=``)
writes its kind into ``run.json``, from which :func:`write_report` picks the runner whose
``report`` builds its page. A runner outside the package registers when its module is imported
(before ``assay.cli.main`` builds its parser).

Declarations stay light (the heavy modules are imported inside ``run``/``report``/``print``, or
named as ``"module:attribute"``): the command line builds its parser from every runner before
the run's helper process starts, and imports only the runner it runs.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext, redirect_stdout, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    field_validator,
)

from assay._registry import Registry, load_plugins, plugin_identity, plugin_spec
from assay.errors import AssayError, ConfigError, RunError
from assay.types import PositiveInt, PositiveReal

if TYPE_CHECKING:
    from assay.inputs import ResolvedConfig
    from assay.runs import FinishedRun, RunInputs

BUILTIN = (
    "evaluate",
    "agreement",
    "estimate",
    "harness",
    "calibrate",
    "certify",
    "conformal",
    "selftest",
    "compare",
    "drift",
    "rank",
    "optimize",
    "toolemu",
    "toolemu_agreement",
    "selective_calibrate",
    "selective_apply",
)
"""The built-in runners (one declaration each in :mod:`assay.runners`), in the
order ``assay --help`` lists them."""
RUNNERS: Registry[type[Runner]] = Registry("runner", "assay.runners", builtin=BUILTIN)


def runner(name: str) -> Callable[[type[Runner]], type[Runner]]:
    """Register a :class:`Runner` subclass under ``name`` (its kind, and its API name)."""
    return RUNNERS.register(name)


def get_runner(name: str) -> Runner:
    return RUNNERS.get(name)()


def known_runners() -> list[str]:
    """The registered runners' names: the built-ins first, in the order ``assay --help``
    lists them, then the others in the order they registered."""
    names = [cls.name for cls in RUNNERS.classes()]
    return [n for n in BUILTIN if n in names] + [n for n in names if n not in BUILTIN]


# -- options: one declaration for the command line and the API --------------------------------


@dataclass(frozen=True)
class Cli:
    """How a field of a runner's options appears on the command line (argparse's keywords).
    ``flags`` default to ``--field-name``; a positional field gives its name as the one flag."""

    flags: tuple[str, ...] = ()
    positional: bool = False
    kwargs: dict[str, Any] = field(default_factory=dict)
    api_positional: bool = False  # an option the API takes by position (estimate's validation)
    override: str | None = None  # the config key it overrides (when given)
    to_config: Callable[[Any], Any] | None = None  # its value as that key's


def option(
    default: object = None,
    *,
    help: str,
    flags: Sequence[str] = (),
    cli_default: object = None,
    api_positional: bool = False,
    override: str | None = None,
    to_config: Callable[[Any], Any] | None = None,
    **argparse_kw: Any,
) -> Any:
    """A field of a runner's options: its ``help`` is the command line's and the field's
    description; ``flags`` and the other keywords (``type``, ``action``, ``nargs``, ``metavar``,
    ``choices``, ``const``) go to argparse, and ``cli_default`` when the command line's default
    differs from the API's; ``api_positional``: the API takes it by position, after the
    positional arguments (a required option: ``default=...``); ``override``: the dotted config
    key it overrides when given (its value through ``to_config``)."""
    if cli_default is not None:
        argparse_kw["default"] = cli_default
    if default is ...:
        argparse_kw["required"] = True
    info = Field(default, description=help)
    info.metadata.append(Cli(tuple(flags), False, argparse_kw, api_positional, override, to_config))
    return info


def argument(*, help: str, name: str | None = None, **argparse_kw: Any) -> Any:
    """A positional argument (required, unless ``nargs`` says otherwise); ``name`` is the
    command line's name when it differs from the field's."""
    default = [] if argparse_kw.get("nargs") in ("*", "?") else ...
    info = Field(default, description=help)
    info.metadata.append(Cli((name,) if name else (), True, argparse_kw))
    return info


def _checked_type(info: Any) -> Any:
    """A field's type with its constraints (pydantic keeps an ``Annotated`` field's bounds in
    its metadata), for checking one value of it."""
    bounds = [m for m in info.metadata if not isinstance(m, Cli)]
    return Annotated[info.annotation, *bounds] if bounds else info.annotation


def _cli(info: Any) -> Cli | None:
    return next((m for m in info.metadata if isinstance(m, Cli)), None)


def _api_positional(info: Any) -> bool:
    cli = _cli(info)
    return cli is not None and (cli.positional or cli.api_positional)


class Options(BaseModel):
    """A runner's options. Fields made with :func:`option`/:func:`argument` are on the command
    line too; the rest are for the API only. Every runner takes ``--plugin`` (``plugins=``):
    plug-ins imported before it runs, and recorded in the config of a run it opens."""

    # the schema is built on first validation: a command builds its parser from every runner's
    # options, and validates only its own
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, defer_build=True)
    json_output: ClassVar[str] = "print the result as one JSON object"
    cli_order: ClassVar[tuple[str, ...]] = ()  # --help's order of the fields, json and quiet

    plugins: list[str] = option(
        [],
        help="import this plug-in first: a Python file or a module name (repeatable; part of "
        "the run's identity). A runner's own plug-in: before the command, "
        "assay --plugin FILE COMMAND",
        flags=("--plugin",),
        action="append",
        metavar="FILE_OR_MODULE",
    )

    @field_validator("plugins")
    @classmethod
    def _plugin_specs(cls, values: list[str]) -> list[str]:
        """A file by its absolute path (a relative one is the command line's: against the
        current directory, as the config's path is)."""
        return [plugin_spec(v, Path.cwd()) for v in values]


class ConfigOptions(Options):
    """A runner of a YAML config: the config (a path, or the config object for the API), the
    MLflow tracking URI, and config overrides."""

    config: Any = argument(help="YAML config (see examples/)")
    tracking_uri: str | None = option(
        help="MLflow tracking URI (default: the config's, else sqlite:///mlflow.db here)"
    )
    overrides: dict[str, Any] = Field(
        default_factory=dict, description="dotted config keys, e.g. {'judge.model': '...'}"
    )
    _loaded: Any = PrivateAttr(None)  # the config object, once loaded (for the printer)
    _resolved: Any = PrivateAttr(None)  # the config file as read, before it is validated
    _shown: dict[str, Any] = PrivateAttr(default_factory=dict)

    @property
    def loaded(self) -> Any:
        """The config object :meth:`load` returned."""
        return self._loaded

    @property
    def shown(self) -> dict[str, Any]:
        """What the console shows of the config (:meth:`Runner.shown`), for a runner whose
        finished runs are found by their inputs: from the config once it is loaded, or as
        recorded with the finished run re-read without it."""
        return self._shown

    def resolved(self) -> ResolvedConfig | None:
        """The config file as read, its overrides applied, before it is validated
        (:class:`~assay.inputs.ResolvedConfig`, read once); None for a config object."""
        if not isinstance(self.config, str | Path):
            return None
        if self._resolved is None:
            from assay.inputs import resolve_config

            self._resolved = resolve_config(self.config, self.config_overrides())
        return self._resolved

    def config_overrides(self) -> dict[str, Any]:
        """The config keys the options given override (``--model``, ``--deadline``, ``--ray``,
        ``--retry-unscored``: each field says which), then the dotted keys given to the API."""
        out: dict[str, Any] = {}
        for name, info in type(self).model_fields.items():
            cli, value = _cli(info), getattr(self, name)
            if cli is not None and cli.override and value:
                out[cli.override] = cli.to_config(value) if cli.to_config else value
        return {**out, **self.overrides}

    def load(self, model: type[BaseModel], loader: Callable[..., Any] | None = None) -> Any:
        """``(config, its folder)``: read from the YAML file named, or the object given (no
        overrides allowed then: change the object instead)."""
        from assay.inputs import load_config

        overrides = self.config_overrides()
        if isinstance(self.config, str | Path):
            if loader is not None:
                config, base = loader(self.config, overrides)
            else:
                resolved = self.resolved()
                config, base = load_config(self.config, overrides, model, resolved=resolved)
        elif overrides:
            raise TypeError("overrides apply to a config file; change the config object instead")
        else:
            config, base = self.config, None
        if self.plugins and getattr(config, "plugins", None) is not None:
            plugins = list(dict.fromkeys([*config.plugins, *self.plugins]))
            config = config.model_copy(update={"plugins": plugins})  # in its config.yaml
        self._loaded = config
        return config, base


class RunOptions(ConfigOptions):
    """A runner that judges: also a limit, a deadline and the retry of unscored items."""

    cli_order = ("limit", "model", "deadline", "retry_unscored", "tracking_uri", "json", "quiet")

    limit: PositiveInt | None = option(help="use only the first N items", type="int")
    deadline: PositiveReal | None = option(
        help="stop after this many seconds (everything finished is kept; re-run to resume)",
        type="float",
        metavar="SECONDS",
        override="deadline_s",
    )
    retry_unscored: str | list[str] | None = option(
        help="judge again the items left unscored for these reasons "
        "(default lm_error,timeout,plugin_error; e.g. lm_error,timeout,parse_error,truncated)",
        nargs="?",
        const="lm_error,timeout,plugin_error",
        metavar="REASONS",
        override="retry.unscored",
        to_config=lambda reasons: split_names(reasons) or [],
    )


MODEL_OPTION = option(
    help="override judge.model (a LiteLLM model string, 'local' or 'local:/path.gguf')",
    override="judge.model",
)
CERTIFICATE_OPTION = option(
    help="refuse to run unless this folder's ledger (<output_dir>/certificates) holds an "
    "admitted, signed certificate of `assay certify` for the judge's exact config: under a "
    "policy at least as strict as POLICY (a policy YAML), or the very CERTIFICATE named "
    "(repeatable: every policy, and one certificate per judge)",
    action="append",
    metavar="POLICY|CERTIFICATE",
)
RAY_OPTION = option(
    False,
    help="judge (and generate probes) on a Ray cluster (execution.engine: ray; execution.address "
    "from the config, default auto); needs pip install 'assay[ray]'",
    action="store_true",
    override="execution.engine",
    to_config=lambda on: "ray",
)


def split_names(value: Any) -> Any:
    """``"a, b"`` → ``["a", "b"]`` (a command line's comma-separated names); lists pass."""
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()] or None
    return value


# -- the runner ----------------------------------------------------------------------------


class Runner:
    """One kind of run. Subclass, declare :attr:`Options`, implement :meth:`run` and
    :meth:`print` (and :meth:`report` when the run writes report.html), register with
    :func:`runner`. The class docstring's first line is the command's help."""

    name: ClassVar[str]
    Options: ClassVar[type[Options]] = Options
    command: ClassVar[tuple[str, ...]] = ()  # its words on the command line (default: name)
    config: ClassVar[type[BaseModel] | str | None] = None  # the config model (assay schema)
    summary: ClassVar[type[BaseModel] | str | None] = None  # its typed summary (or result)
    summary_file: ClassVar[str | None] = "metrics.json"  # where a run directory holds it
    progress_option: ClassVar[bool] = True  # offers --quiet (no progress bars)
    quiet_json: ClassVar[bool] = False  # --json also hides the progress bars
    opens_run: ClassVar[bool] = False  # the command line starts the run's MLflow helper early
    # a runner whose finished run of a config file is found again by its inputs before the
    # config is validated (assay.runs._reread): the run files its figures read that its seal
    # does not cover (() for none); None for a runner that is not
    watched: ClassVar[tuple[str, ...] | None] = None
    group_help: ClassVar[str] = ""  # a two-word command: the help of its first word
    cli: bool = False  # called by the command line (not the API): the process is the run's

    @classmethod
    def words(cls) -> tuple[str, ...]:
        return cls.command or (cls.name,)

    @classmethod
    def config_model(cls) -> type[BaseModel] | None:
        """The model of the config it reads (``assay schema``), imported."""
        return resolve(cls.config)

    @classmethod
    def summary_model(cls) -> type[BaseModel] | None:
        """The model its summary (``metrics.json``, ``--json``) validates into, imported."""
        return resolve(cls.summary)

    @classmethod
    def read_summary(cls, run_dir: Path) -> BaseModel:
        """The summary a finished run wrote, validated back into its model (a run of an
        earlier version re-read the same way)."""
        model = cls.summary_model()
        where = Path(run_dir) / (cls.summary_file or "")
        if model is None or cls.summary_file is None or not where.is_file():
            raise RunError(f"{run_dir}: no {cls.summary_file or 'summary'} of a {cls.name} run")
        return model.model_validate_json(where.read_text(encoding="utf-8"))

    @classmethod
    def help(cls) -> str:
        return (cls.__doc__ or cls.name).strip().splitlines()[0]

    def run(self, options: Options, *, workdir: Path, progress: bool) -> object:
        """Open the run of ``options`` and return its typed result (its runner's model)."""
        raise NotImplementedError

    def report(self, run_dir: Path, **options: Any) -> Any:
        """The :class:`~assay.report.Report` of a finished run (None: no report.html)."""
        return None

    def print(self, result: object, options: Options, *, json: bool) -> int:
        """Print the result (``json``: as one JSON object); return the exit code."""
        print(to_json(result))
        return 0

    # -- a finished run found again by its inputs (``watched`` runners) ---------------------

    def inputs(self, options: ConfigOptions) -> RunInputs | None:
        """What a run of ``options`` is made from, as JSON values: the config file as read, the
        content of the files it names, its plug-ins, the options, and the base URLs LiteLLM
        may take from the environment (:func:`assay._endpoints.every_variable`). None when
        there is no finished run to look for first: a config object (not a file), a config
        that reads what no local file holds (:func:`~assay.inputs.named_files`), or a
        certificate to require (checked before any run is read)."""
        from assay._endpoints import every_variable
        from assay.inputs import named_files

        if getattr(options, "require_certificate", None):
            return None
        resolved = options.resolved()
        files = named_files(resolved) if resolved is not None else None
        plugins = resolved.raw.get("plugins", []) if resolved is not None else None
        if files is None or not isinstance(plugins, list):
            return None
        return {
            "command": self.name,
            "config": resolved.raw,
            "base": str(resolved.base),
            "files": files,
            "plugins": plugin_identity([*plugins, *options.plugins]),
            "options": options.model_dump(mode="json", exclude={"config", "tracking_uri"}),
            "endpoints": every_variable(),
        }

    def reread(self, found: FinishedRun, options: ConfigOptions, *, workdir: Path) -> object:
        """The result of ``found`` (a finished :class:`~assay.runs.FinishedRun` made from these
        inputs), read back from its sealed files — as :meth:`run` returns it for a finished run
        it re-reads; None when they cannot be (a summary of an older version): :meth:`run`
        then decides."""
        return None

    def shown(self, config: object) -> dict[str, object]:
        """What :meth:`print` shows of the config beyond the result (JSON values), recorded
        with a finished run so that its re-read prints the same without the config."""
        return {}

    # -- the API and the command line: one call ---------------------------------------------

    def call(
        self,
        *args: Any,
        workdir: str | Path | None = None,
        progress: bool = True,
        **kwargs: Any,
    ) -> Any:
        """The API (``assay.<name>(...)``): positional arguments fill the positional fields in
        order; other keywords are fields, or dotted config overrides for a runner of a config."""
        fields = self.Options.model_fields
        positional = [n for n, f in fields.items() if _api_positional(f)]
        if len(args) > len(positional):
            raise TypeError(f"{self.name}() takes {len(positional)} positional arguments")
        values: dict[str, Any] = dict(zip(positional, args, strict=False))
        extra = {k: v for k, v in kwargs.items() if k not in fields}
        values.update({k: v for k, v in kwargs.items() if k in fields})
        if extra:
            if "overrides" not in fields or not all("." in k for k in extra):
                raise TypeError(f"{self.name}() got unexpected keywords: {', '.join(extra)}")
            values["overrides"] = {**values.get("overrides", {}), **extra}
        return self.execute(self.options(values), workdir=workdir, progress=progress)

    def options(self, values: dict[str, Any]) -> Any:
        """``values`` validated into :attr:`Options`; a value out of its bounds is one line
        naming the option (a :class:`~assay.errors.ConfigError`)."""
        try:
            return self.Options.model_validate(values)
        except ValidationError as exc:
            err = exc.errors()[0]
            name = ".".join(str(p) for p in err["loc"])
            value = err.get("input")
            got = f", got {value}" if isinstance(value, int | float | str) else ""
            raise ConfigError(f"{self.name}: option '{name}' {bound_message(exc)}{got}") from None

    def execute(
        self,
        options: Options,
        *,
        workdir: str | Path | None,
        progress: bool,
        started: Callable[[], AbstractContextManager[object]] = nullcontext,
    ) -> object:
        """The run of validated options in ``workdir`` (default: the current directory): the
        one path of the API and the command line. Its plug-ins are imported first. A finished
        run of the same inputs is read back at once (``watched`` runners); otherwise
        :meth:`run` runs inside ``started()`` (the command line's helper interpreter)."""
        load_plugins(options.plugins)
        here = work_directory(workdir)
        if self.watched is None:
            with started():
                _read_ahead(options)
                return self.run(options, workdir=here, progress=progress)
        from assay.runs import any_recorded, finished_run

        looked = any_recorded(here)  # else nothing to find: the helper starts first
        digest = self._inputs_digest(options) if looked else None
        if digest is not None:
            with finished_run(here, digest, kind=self.name, watched=self.watched) as found:
                result = None if found is None else self.reread(found, options, workdir=here)
            if result is not None:
                options._shown = found.shown
                return result
        with started():
            if not looked:  # before the run reads anything, as the files it reads are now
                digest = self._inputs_digest(options)
            _read_ahead(options)
            result = self.run(options, workdir=here, progress=progress)
        options._shown = self.shown(options.loaded)
        if digest is not None:
            self._remember(options, result, digest, here)
        return result

    def _inputs_digest(self, options: Any) -> str | None:
        from assay.runs import inputs_digest

        inputs = self.inputs(options)
        return inputs_digest(inputs) if inputs is not None else None

    def _remember(self, options: Any, result: Any, digest: str, workdir: Path) -> None:
        """Record the inputs of the run ``result`` came from, once it has finished — unless they
        changed while it ran (read again now: a run is not recorded as made from files that
        were edited under it)."""
        from assay.runs import remember_inputs

        run_dir = getattr(result, "run_dir", None)
        options._resolved = None
        try:
            again = self._inputs_digest(options)
        except AssayError:  # the config, edited meanwhile, no longer reads: nothing recorded
            return
        if run_dir is not None and again == digest:
            shown = options.shown
            remember_inputs(workdir, Path(run_dir), digest, watched=self.watched, shown=shown)

    def signature(self) -> inspect.Signature:
        """The API function's signature: the positional fields, then the others as keywords
        (with ``workdir`` and ``progress``)."""
        params, keywords = [], []
        for name, info in self.Options.model_fields.items():
            if _api_positional(info):
                default = inspect.Parameter.empty if info.is_required() else info.get_default()
                kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
                params.append(inspect.Parameter(name, kind, default=default))
            elif name != "overrides":
                default = info.get_default(call_default_factory=True)
                keywords.append(
                    inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
                )
        keywords += [
            inspect.Parameter("workdir", inspect.Parameter.KEYWORD_ONLY, default=None),
            inspect.Parameter("progress", inspect.Parameter.KEYWORD_ONLY, default=True),
        ]
        if "overrides" in self.Options.model_fields:
            keywords.append(inspect.Parameter("overrides", inspect.Parameter.VAR_KEYWORD))
        return inspect.Signature(params + keywords)

    def add_parser(self, sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
        """This runner's subcommand: its options' fields as arguments, and ``--json`` and
        ``--quiet``, in the order of ``Options.cli_order`` (the rest after, as declared)."""
        p = sub.add_parser(self.words()[-1], help=self.help())
        arguments: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        dests: dict[str, str] = {}
        for name, info in self.Options.model_fields.items():
            cli = _cli(info)
            if cli is None:
                continue
            kw = dict(cli.kwargs)
            if isinstance(kw.get("type"), str):
                kw["type"] = cli_type(kw["type"], _checked_type(info))
            if cli.positional:
                dests[name] = cli.flags[0] if cli.flags else name
                arguments.append((name, (dests[name],), {"help": info.description, **kw}))
            else:
                dests[name] = name
                if not info.is_required():
                    kw.setdefault("default", [] if kw.get("action") == "append" else info.default)
                flags = cli.flags or ("--" + name.replace("_", "-"),)
                arguments.append((name, flags, {"dest": name, "help": info.description, **kw}))
        out = {"action": "store_true"}
        arguments.append(("json", ("--json",), {**out, "help": self.Options.json_output}))
        if self.progress_option:
            arguments.append(("quiet", ("--quiet",), {**out, "help": "no progress bars"}))
        order = (*self.Options.cli_order, "", "plugins")  # the rest, then every command's
        ranked = sorted(
            enumerate(arguments),
            key=lambda a: (order.index(a[1][0] if a[1][0] in order else ""), a[0]),
        )
        for _, (_, flags, kw) in ranked:
            p.add_argument(*flags, **kw)
        p.set_defaults(func=self.main, opens_run=self.opens_run, _dests=dests)
        return p

    def main(self, args: argparse.Namespace) -> int:
        """``assay <command>``: the API called with the command line's options, then printed."""
        values = {name: getattr(args, dest) for name, dest in args._dests.items()}
        values["plugins"] = [*getattr(args, "plugins_before", []), *values["plugins"]]
        options = self.options(values)
        quiet = getattr(args, "quiet", False) or (self.quiet_json and args.json)
        self.cli = True
        started = getattr(args, "started", None) or nullcontext
        # --json: stdout carries the result alone. Whatever else prints to it while the run
        # works (a library, Ray's driver threads) goes to stderr, and a Ray cluster joined is
        # left before the result is printed, so nothing can follow it.
        with redirect_stdout(sys.stderr) if args.json else nullcontext():
            result = self.execute(options, workdir=None, progress=not quiet, started=started)
            if args.json:
                from assay.runs import disconnect

                disconnect()
        try:
            return self.print(result, options, json=args.json)
        except BrokenPipeError:  # `| head`, `| true`: the reader has what it wanted, and the
            # run is written already. Printed again to nowhere, for the exit code the printer
            # gives (a drifted judge, a failed gate), without a traceback.
            with suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return self.print(result, options, json=args.json)


# -- what the printers share ---------------------------------------------------------------


def work_directory(workdir: str | Path | None) -> Path:
    """The working directory (default: the current one): it holds ``runs/``, ``mlflow.db`` and
    the LM cache, for the API as for the command line."""
    return Path(workdir) if workdir is not None else Path.cwd()


def lm_cache(workdir: Path) -> Path:
    """``workdir`` with DSPy's response cache under its ``.assay/`` (a runner that calls LMs,
    once its inputs are read and valid)."""
    from assay.lm import configure_cache

    configure_cache(workdir)
    return workdir


def stored_runs_uri(given: str | None, workdir: Path) -> str:
    """Where a runner reading logged runs looks: the URI given, else ``MLFLOW_TRACKING_URI``,
    else the working folder's ``mlflow.db`` (where the runs of that folder logged)."""
    import os

    from assay.runs import default_tracking_uri

    return given or os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri(workdir)


def to_json(obj: object) -> str:
    if hasattr(obj, "model_dump_json"):
        return obj.model_dump_json()
    return json.dumps(obj, default=str, ensure_ascii=False)


def print_run_json(res: Any, payload: dict[str, Any]) -> None:
    """A run's ``--json`` output: its directory, its MLflow run id, then ``payload``."""
    body = {"run_dir": str(res.run_dir), "mlflow_run_id": res.mlflow_run_id, **payload}
    print(json.dumps(body, default=str))


def measured_nothing(why: str | None) -> int:
    """The exit code of a finished run: 0, or — when ``why`` says it measured nothing (every
    judgment unscored: :func:`assay.types.all_unscored`) — 1, after one line on stderr naming
    the reasons. The run's files stay: ``--retry-unscored`` judges those items again."""
    if why is None:
        return 0
    print(f"assay: error: {why}", file=sys.stderr)
    return 1


def mlflow_line(run_id: str | None, tracking_uri: str | None = None) -> str | None:
    if not run_id:
        return None
    where = tracking_uri or "sqlite:///mlflow.db"
    return f"MLflow run: {run_id}  (browse: mlflow ui --backend-store-uri {where})"


def freeze_imports() -> None:
    """Move the objects of the imports so far out of the garbage collector's reach: full
    collections of them otherwise stall every worker thread for up to a second mid-run. (No
    collection first: it costs half a second of start-up and import-time garbage is small.)
    For a process that is the run's (the command line), never a caller's."""
    import gc

    gc.freeze()


def resolve(ref: Any) -> Any:
    """A declaration's ``"module:attribute"``, imported; anything else as it is."""
    if isinstance(ref, str) and ":" in ref:
        module, _, attr = ref.partition(":")
        return getattr(importlib.import_module(module), attr)
    return ref


def _shown(text: str) -> str:
    """``text`` quoted for an error line, cut short when long (a 5,000-digit number)."""
    return repr(text) if len(text) <= 40 else f"{text[:20]!r}… ({len(text):,} characters)"


def _parse_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # not digits, or more digits than Python converts (4,300)
        raise argparse.ArgumentTypeError(f"{_shown(text)} is not an integer") from None


def _parse_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{_shown(text)} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{_shown(text)} is not a finite number")
    return value


_TYPES: dict[str, Callable[[str], Any]] = {"int": _parse_int, "float": _parse_float}
"""How an option's text is read (its ``type``); its bounds are its field's (:func:`cli_type`)."""


def bound_message(exc: ValidationError) -> str:
    """What a value broke, as "must be at least 1": the first error of validating one value."""
    err = exc.errors()[0]
    ctx = {k: f"{v:g}" if isinstance(v, float) else v for k, v in (err.get("ctx") or {}).items()}
    words = {
        "greater_than": "must be more than {gt}",
        "greater_than_equal": "must be at least {ge}",
        "less_than": "must be less than {lt}",
        "less_than_equal": "must be at most {le}",
        "finite_number": "must be a finite number",
    }
    if err["type"] in words:
        return words[err["type"]].format(**ctx)
    return str(err["msg"]).removeprefix("Value error, ")


def cli_type(kind: str, annotation: object) -> Callable[[str], Any]:
    """An argparse ``type``: the text read as ``kind`` (``"int"``, or ``"float"``: finite), then
    checked against ``annotation`` (an option field's type, with its bounds) — one declaration
    of a bound for the command line and the API."""
    parse = _TYPES[kind]

    def convert(text: str) -> Any:
        value = parse(text)
        try:  # the adapter built here: the parser is made from every runner's options
            return TypeAdapter(annotation).validate_python(value)
        except ValidationError as exc:
            raise argparse.ArgumentTypeError(f"{bound_message(exc)}, got {value}") from None

    convert.__name__ = kind  # argparse names the type in its messages
    return convert


# -- the report dispatch -------------------------------------------------------------------

KIND_FILE = "run.json"


def run_kind(run_dir: Path) -> str:
    """The kind of run a directory holds: the ``kind`` its ``run.json`` names; for a directory
    written before runs named it, guessed from the files it holds, as then."""
    state = run_dir / KIND_FILE
    if state.is_file():
        kind = json.loads(state.read_text(encoding="utf-8")).get("kind")
        if kind:
            return kind
    if any((run_dir / f).is_file() for f in ("comparison.json", "paired.json", "drift.json")):
        return "compare"  # compare --paired and drift write theirs like a comparison
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


def write_report(run_dir: Path, **options: Any) -> Path:
    """``run_dir/report.html``, built by the report of the runner whose kind the run is (the
    run's plug-ins imported first: the runner, or what its report looks up, may be one). A
    finished run whose files are not the ones it sealed is refused in one line first
    (:func:`~assay.runs.check_redrawn`), as a decision on it is."""
    from assay.report import write_html
    from assay.runs import check_redrawn, load_run_plugins

    run_dir = Path(run_dir)
    check_redrawn(run_dir)
    load_run_plugins(run_dir)
    kind = run_kind(run_dir)
    report = get_runner(kind).report(run_dir, **options)
    if report is None:
        raise RunError(f"{run_dir}: a {kind} run has no report.html")
    return write_html(report, run_dir)


def _read_ahead(options: object) -> None:
    """The local table a config file names, read ahead where the command line can (its helper
    reads it while this process imports what the run needs: :func:`assay.inputs.read_table_ahead`);
    nothing for options without a config file."""
    try:
        resolved = options.resolved() if isinstance(options, ConfigOptions) else None
    except AssayError:  # the run reads the config again and says what is wrong
        return
    data = resolved.raw.get("data") if resolved is not None else None
    if isinstance(data, dict):
        from assay.inputs import read_table_ahead

        read_table_ahead(data)


__all__ = [
    "CERTIFICATE_OPTION",
    "Cli",
    "ConfigOptions",
    "MODEL_OPTION",
    "RAY_OPTION",
    "RUNNERS",
    "Options",
    "RunOptions",
    "Runner",
    "argument",
    "bound_message",
    "cli_type",
    "freeze_imports",
    "get_runner",
    "known_runners",
    "lm_cache",
    "mlflow_line",
    "option",
    "print_run_json",
    "resolve",
    "run_kind",
    "runner",
    "split_names",
    "to_json",
    "work_directory",
    "write_report",
]
