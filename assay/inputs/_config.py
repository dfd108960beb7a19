"""The typed config of an evaluation run (YAML file ⇄ pydantic), shared by the API and the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from assay._registry import load_plugins, plugin_spec
from assay.data import ColumnMap, PairsConfig, TraceSource, TranscriptPrep
from assay.errors import ConfigError
from assay.inputs._resolve import ResolvedConfig, resolve_config
from assay.lm import StrictInt
from assay.metrics import MAX_RESAMPLES, MIN_RESAMPLES, Resamples
from assay.programs import JudgeConfig
from assay.runs import ExecutionConfig
from assay.types import FiniteReal, PlainName, Seed, Share, UnscoredReason, stable_hash

DataFormat = Literal["table", "toolemu", "inspect", "mlflow"]

_USED_BY: dict[str, tuple[DataFormat, ...]] = {
    "columns": ("table",),
    "split": ("table",),
    "pairs": ("table",),
    "toolkits": ("toolemu",),
    "expected_from": ("toolemu",),
    "expected_key": ("toolemu",),
    "expected": ("inspect",),
    "errored_samples": ("inspect", "mlflow"),
    "epochs": ("inspect",),
    "transcript": ("toolemu", "inspect", "mlflow"),
    **dict.fromkeys(
        ("tracking_uri", "experiment", "filter", "run_id", "request", "response"), ("mlflow",)
    ),
    **dict.fromkeys(("expectation", "annotators", "write_back"), ("mlflow",)),
}
"""The formats that read each data key; any other format refuses the key set to anything but
its default, rather than ignore it."""

_REFERENCE_IS = {
    "table": "data.columns.expected (a column)",
    "toolemu": "data.expected_from (an evaluator file)",
    "inspect": "data.expected (a dotted path into each sample)",
    "mlflow": "data.expectation (a human assessment's name)",
}


class DataConfig(BaseModel):
    """Where the items come from. Relative paths are relative to the config file. A key the
    format does not read is refused, not ignored."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(default="", description="the data file (every format but mlflow)")
    format: DataFormat = Field(
        default="table",
        description="table (CSV, TSV, JSON, JSONL, Parquet, a Hugging Face hub data set), "
        "toolemu (ToolEmu trajectories), inspect (an Inspect eval log), mlflow (traces)",
    )
    columns: ColumnMap = Field(
        default_factory=ColumnMap,
        description="table: which columns hold the id, request, response and reference label",
    )
    split: str = Field(
        default="train", description="table: the split of a Hugging Face hub data set"
    )
    toolkits: str | None = Field(
        default=None, description="toolemu: the toolkit specs the evaluators read (JSON)"
    )
    expected_from: str | None = Field(
        default=None,
        description="toolemu: the reference, a ToolEmu evaluator file scoring the trajectories "
        "(line i or eval_id i scores trajectory i)",
    )
    expected_key: str | None = Field(
        default=None,
        description="toolemu: which eval_scores entry of expected_from is the reference "
        "(e.g. ToolCallRisk, Helpfulness); default: the only one",
    )
    expected: str | None = Field(
        default=None,
        description="inspect: where each sample's reference label is, a dotted path into the "
        "sample (e.g. scores.combined_scorer.value), read by the judge's scale",
    )
    limit: StrictInt | None = Field(default=None, ge=1, description="keep the first N items")
    pairs: PairsConfig | None = Field(
        default=None,
        description="table: labelled pairs for a pairwise judge, built from a score column",
    )
    transcript: TranscriptPrep = Field(
        default_factory=TranscriptPrep,
        description="agent transcripts (toolemu, inspect, mlflow): preprocessing applied "
        "before planning and judging",
    )
    tracking_uri: str | None = Field(
        default=None, description="mlflow: the tracking URI the traces are in (as MLflow reads it)"
    )
    experiment: str | None = Field(default=None, description="mlflow: experiment name or id")
    filter: str | None = Field(default=None, description="mlflow: a search_traces filter string")
    run_id: str | None = Field(default=None, description="mlflow: only the traces of this run")
    request: str = Field(
        default="inputs",
        description="mlflow: where the request is, a dotted path into the trace's inputs "
        "(e.g. inputs.messages.-1.content)",
    )
    response: str = Field(
        default="outputs",
        description="mlflow: where the response is, a dotted path into the trace's outputs",
    )
    expectation: str | None = Field(
        default=None,
        description="mlflow: the name of the human assessment (an Expectation, or a Feedback "
        "from a HUMAN source) that is the reference",
    )
    annotators: bool = Field(
        default=False,
        description="mlflow: each human assessment named `expectation` is one annotator's "
        "(its source id); the reference is their majority, and the run writes annotations.csv",
    )
    write_back: bool = Field(
        default=False,
        description="mlflow: write each verdict back on its trace as a Feedback named after the "
        "judge, once everything is judged (idempotent)",
    )
    errored_samples: Literal["error", "skip"] = Field(
        default="error",
        description="inspect: a sample that errored in the Inspect run (no output, no scores), "
        "or a log whose eval did not finish; mlflow: a trace whose state is ERROR or "
        "IN_PROGRESS. 'error' names them and stops before anything is judged; 'skip' leaves "
        "them out (as Inspect's own metrics do), counted in the run's summary",
    )
    epochs: Literal["all", "first"] = Field(
        default="all",
        description="inspect: a log run with several epochs gives an item per sample and epoch "
        "('all': intervals, paired tests and certificates take a sample's epochs as one "
        "sample); 'first' judges each sample's first epoch only, one independent item a "
        "sample, the others left out and counted",
    )
    missing_expected: Literal["error", "keep"] = Field(
        default="error",
        description="an item whose reference label is empty: 'error' names it and stops before "
        "anything is judged; 'keep' judges it without a reference (counted as such)",
    )

    @model_validator(mode="after")
    def _check_source(self) -> DataConfig:
        if self.format == "mlflow":
            for key in ("tracking_uri", "experiment"):
                if not getattr(self, key):
                    raise ValueError(f"format mlflow needs data.{key}")
            if self.path:
                raise ValueError("format mlflow reads traces, not a file: drop data.path")
            if self.annotators and not self.expectation:
                raise ValueError("data.annotators needs data.expectation (whose assessments)")
        elif not self.path:
            raise ValueError(f"data.path is required: the {self.format} file to read")
        for key, formats in _USED_BY.items():
            if self.format not in formats and self._given(key):
                hint = f"; the reference of format {self.format} is {_REFERENCE_IS[self.format]}"
                raise ValueError(
                    f"data.{key} is for format: {' or '.join(formats)}"
                    + (hint if key.startswith("expect") else "")
                )
        if self.expected_key is not None and self.expected_from is None:
            raise ValueError("data.expected_key needs data.expected_from (whose scores)")
        if self.pairs is not None and self.columns.expected not in (None, "expected"):
            raise ValueError(
                "data.columns.expected: pairs take their reference from data.pairs.score"
            )
        if self.missing_expected == "keep" and not self.has_reference:
            raise ValueError(
                f"data.missing_expected is about reference labels, and this data has none: "
                f"the reference of format {self.format} is {_REFERENCE_IS[self.format]}"
            )
        return self

    def _given(self, key: str) -> bool:
        """Whether ``key`` is set to something other than its default."""
        field = type(self).model_fields[key]
        return getattr(self, key) != field.get_default(call_default_factory=True)

    @property
    def has_reference(self) -> bool:
        """Whether the data names reference labels (pairs make their own)."""
        if self.format == "table":
            return self.pairs is None and self.columns.expected is not None
        if self.format == "toolemu":
            return self.expected_from is not None
        if self.format == "inspect":
            return self.expected is not None
        return self.expectation is not None

    def trace_source(self) -> TraceSource:
        """Where an mlflow-format config's traces are."""
        assert self.tracking_uri is not None and self.experiment is not None
        return TraceSource(
            tracking_uri=self.tracking_uri,
            experiment=self.experiment,
            filter=self.filter,
            run_id=self.run_id,
            request=self.request,
            response=self.response,
            expectation=self.expectation,
            annotators=self.annotators,
            errored=self.errored_samples,
        )


def without_write_back(data: DataConfig) -> DataConfig:
    """The ``data`` of a runner that writes no verdicts on traces (harness, optimize): refuse
    ``write_back`` rather than ignore it."""
    if data.write_back:
        raise ValueError("write_back: only assay evaluate writes its verdicts back on the traces")
    return data


class BootstrapConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    n_resamples: Resamples = Field(
        default=1000,
        description=f"bootstrap replicates per interval ({MIN_RESAMPLES:,} to {MAX_RESAMPLES:,}: "
        "beyond that an interval's ends move by thousandths, while each replicate holds an index "
        "per item in memory)",
    )
    confidence: Share = Field(
        default=0.95, description="the intervals' confidence level, strictly between 0 and 1"
    )
    seed: Seed = Field(default=0, description="the seed of the bootstrap's resampling")


class TrackingConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(default=True, description="log the run to MLflow")
    uri: str | None = Field(
        default=None,
        description=(
            "the MLflow tracking URI (default: sqlite:///mlflow.db in the working folder)"
        ),
    )
    experiment: str = Field(default="assay", description="the MLflow experiment")


MAX_CONCURRENCY = 512
"""Most LM calls a run keeps in flight (``concurrency``)."""
MAX_RETRIES = 20
"""Most attempts after the first of one call (``retries``)."""

TRANSIENT: tuple[UnscoredReason, ...] = ("lm_error", "timeout", "plugin_error")
"""Unscored reasons worth judging again once the cause is gone (``--retry-unscored``): an LM
error, a timeout, a plug-in judge kind's failing code (an installed plug-in is fixed under the
same run; one that fails on some items only may fail for a cause outside it)."""


class RetryConfig(BaseModel):
    """Which unscored judgments a re-run judges again (a fresh sample: the LM cache is
    bypassed for them); the report says how many were retried."""

    model_config = ConfigDict(extra="forbid")

    unscored: list[UnscoredReason] = Field(
        default_factory=list,
        description=(
            "unscored reasons judged again on a re-run (lm_error, timeout, ...): a "
            "fresh call, bypassing the LM cache"
        ),
    )


class RunConfig(BaseModel):
    """What every run has: a name, how it runs (concurrency, retries, deadline) and how it is
    measured and recorded. Each runner's config adds its own fields."""

    model_config = ConfigDict(extra="forbid")

    name: PlainName = Field(description="the run's name: its folder is runs/NAME-HASH")
    plugins: list[str] = Field(
        default_factory=list,
        description="plug-ins to import first: Python files (relative to the config file) or "
        "module names; each counts in the run's identity (see docs/extending.md)",
    )
    concurrency: StrictInt = Field(
        default=4,
        ge=1,
        le=MAX_CONCURRENCY,
        description=f"LM calls in flight at once (at most {MAX_CONCURRENCY}: each holds a thread "
        "and a connection, and a process has 1024 file descriptors by default)",
    )
    retries: StrictInt = Field(
        default=3,
        ge=0,
        le=MAX_RETRIES,
        description=f"attempts after the first, per call (at most {MAX_RETRIES}: each may wait "
        "its whole timeout, so more would hold an item on a dead endpoint for hours)",
    )
    deadline_s: FiniteReal | None = Field(
        default=None, gt=0, description="stop the run (resumable) after this many seconds"
    )
    retry: RetryConfig = Field(
        default_factory=RetryConfig, description="which unscored judgments a re-run judges again"
    )
    bootstrap: BootstrapConfig = Field(
        default_factory=BootstrapConfig,
        description="the bootstrap intervals: replicates, confidence, seed",
    )
    output_dir: str = Field(
        default="runs",
        description="the runs folder (its ledger holds certificates and tuning records)",
    )
    tracking: TrackingConfig = Field(default_factory=TrackingConfig, description="MLflow logging")
    execution: ExecutionConfig = Field(
        default_factory=ExecutionConfig,
        description=(
            "where judging runs: local threads or a Ray cluster (not part of any run hash)"
        ),
    )

    @field_validator("plugins")
    @classmethod
    def _import_plugins(cls, specs: list[str]) -> list[str]:
        """Imported as soon as they are valid: a field of the runner's config (validated after
        the base's) may name what they register — a judge's ``task``, a test. A config built
        in Python names a file by its absolute path."""
        try:
            specs = [plugin_spec(s, None) for s in specs]
            load_plugins(specs)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return specs

    def deadline(self, started: float) -> float | None:
        """The ``time.monotonic()`` value the run must end by, if it has a deadline."""
        return None if self.deadline_s is None else started + self.deadline_s


class EvaluateConfig(RunConfig):
    """An ``assay evaluate`` run: data, judge, and how to measure and record it."""

    data: DataConfig = Field(
        description="the items to judge, with their references where there are"
    )
    judge: JudgeConfig = Field(description="the judge")
    threshold: StrictInt | None = Field(
        default=None,
        description="scores >= threshold are 'good'; below it a failure (ToolEmu: 2)",
    )

    @model_validator(mode="after")
    def _check(self) -> EvaluateConfig:
        scale = self.judge.scale
        if self.threshold is not None and scale is not None:
            if self.threshold not in scale.values:
                raise ValueError(
                    f"threshold {self.threshold} is not a score on the {scale.describe()} scale"
                )
        if self.data.columns.generator is not None and self.data.format == "table":
            if scale is not None and scale.kind == "categorical" and not scale.ordered:
                raise ValueError(
                    "data.columns.generator: self-preference compares scores, and the "
                    f"categorical scale {scale.describe()} has none (use a binary or ordinal "
                    "scale)"
                )
            if self.judge.model_family() is None:
                members = sorted({m.model_family() or "?" for m in self.judge.members})
                raise ValueError(
                    "data.columns.generator: the panel's members are of several model families "
                    f"({', '.join(members)}); set judge.family to the one its own outputs "
                    "belong to"
                )
        return self

    def run_hash(self, data_fingerprint: str) -> str:
        """Identity of a run: the judge config and the prices its cost is counted at
        (:meth:`~assay.programs.JudgeConfig.results_hash`), the data and the measuring
        settings."""
        identity: dict[str, object] = {
            "judge": self.judge.results_hash(),
            "data": data_fingerprint,
            "threshold": self.threshold,
            "bootstrap": self.bootstrap.model_dump(),
        }
        # what self-preference is measured by, where set (the hashes of other runs stay)
        if self.data.columns.generator is not None:
            identity["generator"] = self.data.columns.generator
        if self.judge.family is not None:
            identity["judge_family"] = self.judge.family
        return stable_hash(identity)


def load_config(
    path: str | Path,
    overrides: dict | None = None,
    model: type[BaseModel] | None = None,
    *,
    resolved: ResolvedConfig | None = None,
):
    """Read a YAML config (an :class:`EvaluateConfig`, or ``model``); resolve ``@file`` text
    fields and relative paths against its folder (:func:`~._resolve.resolve_config`, or
    ``resolved``: what it returned for this file and these overrides).

    Returns the config and the folder relative paths were resolved against.
    """
    resolved = resolved or resolve_config(path, overrides)
    try:
        return (model or EvaluateConfig).model_validate(resolved.raw), resolved.base
    except ValidationError as exc:
        loc = tuple(exc.errors()[0]["loc"])
        for field, file in resolved.files.items():  # an entry of a rubric file: name that file
            if loc[: len(field)] == field and len(loc) > len(field):
                entry = loc[len(field)]
                where = f"entry {entry + 1}: " if isinstance(entry, int) else ""
                raise ConfigError(
                    f"{file}: {where}{first_error(exc, skip=len(field) + 1)}"
                ) from None
        raise ConfigError(f"{path}: {first_error(exc)}") from None


def first_error(exc: ValidationError, skip: int = 0) -> str:
    """One line for a pydantic error: the dotted field (without its first ``skip`` parts) and
    what is wrong with it."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"][skip:])
    msg = err["msg"]
    if err["type"] == "extra_forbidden":
        msg = "unknown config key"
    msg = msg.removeprefix("Value error, ")
    value = err.get("input")
    if err["type"] != "extra_forbidden" and isinstance(value, bool | int | float | str):
        shown = yaml.safe_dump(value, default_style=None).splitlines()[0].removesuffix("...")
        if len(shown) <= 40 and shown not in msg:
            msg += f" (got {shown.strip()})"
    return f"field '{loc}': {msg}" if loc else msg
