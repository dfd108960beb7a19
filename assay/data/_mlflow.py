"""MLflow GenAI traces as Items, and assay's verdicts written back on them as ``Feedback``.

A trace becomes one Item: its id is the trace id, its request and response are read from the
trace's inputs and outputs through a dotted path (``inputs.messages.-1.content``), its reference
from a named human assessment (an ``Expectation``, or a ``Feedback`` whose source is HUMAN) — or,
with ``annotators``, every human assessment of that name, one annotator per source. A trace with
TOOL spans is an agent run: its spans become a transcript (the request, one tool call and its
result per TOOL span in start order, the response); the model of its last model call, where a
span names one, is the item's ``meta["model"]``. Everything read goes into the Item (ids,
texts, references, the model), so a run's data fingerprint covers it; nothing assay writes back is read.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from assay.data._common import jsonable, resolve_dotted
from assay.data._transcript import with_steps
from assay.errors import DataError
from assay.scale import Scale
from assay.types import Item, Judgment, Message, ToolCall

_PAGE = 500  # traces per search request


@dataclass(frozen=True)
class TraceSource:
    """Where the traces are and how to read them (``data: {format: mlflow, ...}``)."""

    tracking_uri: str
    experiment: str
    filter: str | None = None
    run_id: str | None = None
    request: str = "inputs"
    response: str = "outputs"
    expectation: str | None = None
    annotators: bool = False
    errored: Literal["error", "skip"] = "error"  # a trace that did not finish: refused or left out


PROBE_TIMEOUT_S = 5.0
"""How long an MLflow server has to answer ``/health`` (MLflow's own client retries a dead
server for minutes)."""


def server_problem(tracking_uri: str) -> str | None:
    """Why no MLflow server answers at the ``http(s)://`` ``tracking_uri`` (None: one does):
    one request to its ``/health`` within :data:`PROBE_TIMEOUT_S`, no retry."""
    uri = tracking_uri.rstrip("/")
    try:
        with urllib.request.urlopen(f"{uri}/health", timeout=PROBE_TIMEOUT_S) as answer:
            if answer.status == 200:
                return None
            return f"HTTP {answer.status}"
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return str(reason).strip() or type(exc).__name__


def check_store(tracking_uri: str) -> None:
    """Refuse a tracking URI with nothing behind it before anything runs: an HTTP server that
    does not answer ``/health`` (:func:`server_problem`), a SQLite file or a local store folder
    that does not exist (MLflow would create an empty one)."""
    uri = tracking_uri.rstrip("/")
    if uri.startswith(("http://", "https://")):
        problem = server_problem(uri)
        if problem is None:
            return
        raise DataError(
            f"no MLflow server answers at this address ({problem})",
            path=tracking_uri,
            field="tracking_uri",
        )
    if uri.startswith("sqlite:///"):
        file = Path(uri.removeprefix("sqlite:///")).expanduser()
        if not file.is_file():
            raise DataError(
                f"no MLflow store: {file.resolve()} does not exist",
                path=tracking_uri,
                field="tracking_uri",
            )
    elif uri.startswith("file:") or ("://" not in uri and not uri.startswith("databricks")):
        from urllib.parse import urlparse

        folder = Path(urlparse(uri).path if uri.startswith("file:") else uri).expanduser()
        if not folder.is_dir():
            raise DataError("no MLflow store folder here", path=tracking_uri, field="tracking_uri")


def _client(tracking_uri: str) -> Any:
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=tracking_uri)


def _experiment_id(client: Any, source: TraceSource) -> str:
    """The id of the experiment named (or numbered) ``source.experiment``."""
    from mlflow.exceptions import MlflowException

    try:
        found = client.get_experiment_by_name(source.experiment)
        if found is None and source.experiment.isdigit():
            found = client.get_experiment(source.experiment)
    except MlflowException:
        found = None
    if found is None:
        raise DataError(
            f"no experiment named or numbered '{source.experiment}'",
            path=source.tracking_uri,
            field="experiment",
        )
    return str(found.experiment_id)


def _pages(source: TraceSource, *, limit: int | None = None) -> Iterator[list[Any]]:
    """The experiment's traces (``filter`` and ``run_id`` applied), oldest first, with spans and
    assessments, one search page at a time (``limit``: the first N only)."""
    from mlflow.exceptions import MlflowException

    check_store(source.tracking_uri)
    client = _client(source.tracking_uri)
    experiment = _experiment_id(client, source)
    served = 0
    token = None
    while True:
        try:
            page = client.search_traces(
                locations=[experiment],
                filter_string=source.filter,
                run_id=source.run_id,
                max_results=_PAGE if limit is None else min(_PAGE, limit - served),
                order_by=["timestamp_ms ASC"],
                page_token=token,
            )
        except MlflowException as exc:
            first = str(exc.message).strip().splitlines()
            field_ = "filter" if source.filter else "run_id" if source.run_id else "experiment"
            raise DataError(
                f"MLflow refused the trace search: {first[0] if first else type(exc).__name__}",
                path=source.tracking_uri,
                field=field_,
            ) from None
        served += len(page)
        token = page.token
        yield list(page)
        if not token or (limit is not None and served >= limit):
            return


def iter_mlflow_traces(
    source: TraceSource,
    scale: Scale | None = None,
    *,
    limit: int | None = None,
    counts: dict[str, int] | None = None,
    errored: list[tuple[str, str]] | None = None,
) -> Iterator[Item]:
    """:func:`load_mlflow_traces` one search page at a time: a page's traces (their spans are
    most of a trace's size) are let go once their items are made, so reading an experiment
    holds one page, not every trace. No items: the same error, once the search is over.

    A trace that did not finish (state ``ERROR``: the app raised, its output partial or none;
    ``IN_PROGRESS``) is not a response to judge: an error naming the first five once the search
    is over, or with ``source.errored == "skip"`` left out and counted in
    ``counts["errored_traces"]`` (when a dict is passed), and with ``annotators`` the
    Expectations an LLM judge or code logged in ``counts["machine_assessments"]`` (left out:
    not annotators); ``errored`` (a list, when given) receives each trace left out: its id and
    its state."""
    seen = 0
    unfinished: list[tuple[str, str]] = []
    left = {"machine_assessments": 0}  # what _item leaves out, counted
    for page in _pages(source, limit=limit):
        for trace in page:
            seen += 1
            state = _unfinished_state(trace)
            if state is not None:
                unfinished.append((trace.info.trace_id, state))
                continue
            yield _item(trace, source, scale, left)
    if not seen:
        raise DataError(
            f"no traces in experiment '{source.experiment}'"
            + (f" matching {source.filter!r}" if source.filter else "")
            + (f" in run {source.run_id}" if source.run_id else ""),
            path=source.tracking_uri,
        )
    if unfinished and (source.errored == "error" or len(unfinished) == seen):
        shown = ", ".join(f"{t} ({state})" for t, state in unfinished[:5])
        shown += ", ..." if len(unfinished) > 5 else ""
        every = "every trace" if len(unfinished) == seen else f"{len(unfinished)} of {seen} traces"
        raise DataError(
            f"{every} did not finish (traces {shown}): a trace whose app raised or is still "
            "running has no whole response to judge"
            + (
                ""
                if len(unfinished) == seen
                else "; set data.errored_samples: skip to leave them out (counted)"
            ),
            path=source.tracking_uri,
        )
    if errored is not None:
        errored.extend(unfinished)
    if counts is not None:
        counts["errored_traces"] = len(unfinished)
        if left["machine_assessments"]:
            counts["machine_assessments"] = left["machine_assessments"]


def _unfinished_state(trace: Any) -> str | None:
    """``"ERROR"`` or ``"IN_PROGRESS"`` for a trace that did not finish; None for one that did
    (or whose state MLflow does not know)."""
    state = getattr(trace.info, "state", None)
    name = str(getattr(state, "value", state) or "")
    return name if name in ("ERROR", "IN_PROGRESS") else None


def load_mlflow_traces(
    source: TraceSource, scale: Scale | None = None, *, limit: int | None = None
) -> list[Item]:
    """One Item per trace of ``source`` (see the module's docstring). ``meta`` holds
    ``trace_id`` and, with ``annotators``, ``annotations`` (``{source id:
    label}``: the item's ``expected`` is then left for the caller to draw from them) and, where
    a span names one, ``model`` (:func:`trace_model`). Labels are
    read on ``scale`` when one is given. Errors name the trace id and the field."""
    return list(iter_mlflow_traces(source, scale, limit=limit))


def _item(trace: Any, source: TraceSource, scale: Scale | None, left: dict[str, int]) -> Item:
    trace_id = trace.info.trace_id
    root = _root_span(trace)
    fields = {
        "inputs": root.inputs if root is not None else _parsed(trace.data.request),
        "outputs": root.outputs if root is not None else _parsed(trace.data.response),
    }
    request = _text(trace_id, fields, source, "request")
    response = _text(trace_id, fields, source, "response")
    meta: dict[str, Any] = {"trace_id": trace_id}
    model = trace_model(trace)
    if model is not None:
        meta["model"] = model
    expected: int | None = None
    if source.expectation is not None:
        labels = _human_labels(trace, source, scale, left)
        if source.annotators:
            meta["annotations"] = labels
        elif len(labels) > 1:
            raise DataError(
                f"trace {trace_id}: {len(labels)} human assessments named "
                f"'{source.expectation}' (from {', '.join(labels)}); set data.annotators: true "
                "to read them as several annotators",
                path=source.tracking_uri,
                field="expectation",
            )
        elif labels:
            expected = next(iter(labels.values()))
    return Item(
        id=trace_id,
        request=request,
        response=response,
        transcript=_transcript(trace, request, response),
        expected=expected,
        meta=meta,
    )


def trace_model(trace: Any) -> str | None:
    """The model that wrote a trace's response: the model named by its last model call (the
    last span, in start order then the trace's own order, whose ``mlflow.llm.model`` attribute
    MLflow's autologging set); None when no span names one."""
    from mlflow.tracing.constant import SpanAttributeKey

    named = []
    for position, span in enumerate(trace.data.spans or []):
        model = span.get_attribute(SpanAttributeKey.MODEL)
        if isinstance(model, str) and model.strip():
            named.append((span.start_time_ns, position, model.strip()))
    return max(named)[2] if named else None


def _root_span(trace: Any) -> Any:
    spans = trace.data.spans or []
    return next((s for s in spans if s.parent_id is None), None)


def _parsed(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _text(trace_id: str, fields: dict[str, Any], source: TraceSource, name: str) -> str:
    """The text at the ``request`` or ``response`` path of ``source`` (``inputs...`` or
    ``outputs...``): a string as it is, anything else as JSON."""
    dotted = getattr(source, name)
    value, problem = resolve_dotted(fields, dotted, top="trace")
    if problem is None and value is None:
        problem = f"'{dotted}' is empty"
    if problem is not None:
        raise DataError(f"trace {trace_id}: {problem}", path=source.tracking_uri, field=name)
    return value if isinstance(value, str) else json.dumps(jsonable(value), ensure_ascii=False)


def _human_labels(
    trace: Any, source: TraceSource, scale: Scale | None, left: dict[str, int]
) -> dict[str, Any]:
    """``{source id: label}`` of the trace's valid human assessments named
    ``source.expectation``: Expectations (any source) and Feedback from a HUMAN source — with
    ``annotators``, an Expectation from a HUMAN source too: an LLM judge's or code's is not an
    annotator of an agreement with humans (left out, counted in
    ``left["machine_assessments"]``). Where
    one source gave several (an Expectation logged again to correct it: MLflow keeps both valid,
    as it has no override for an Expectation), the latest — last updated, then last created —
    is that source's label, as ``mlflow.genai`` reads a trace's expectations."""
    from mlflow.entities import AssessmentSourceType, Expectation, Feedback

    latest: dict[str, tuple[tuple[int, int, int], Any]] = {}  # source id: (when, assessment)
    for position, a in enumerate(trace.info.assessments or []):
        if a.name != source.expectation or a.valid is False:
            continue
        kind = getattr(a.source, "source_type", None)
        human = kind == AssessmentSourceType.HUMAN
        if not (isinstance(a, Expectation) or (isinstance(a, Feedback) and human)):
            continue
        if source.annotators and kind is not None and not human:
            left["machine_assessments"] += 1  # an Expectation an LLM judge or code logged
            continue
        if isinstance(a, Feedback) and a.error is not None:
            continue  # a human who could not say: no label
        who = (a.source.source_id if a.source is not None else None) or "default"
        given = (a.last_update_time_ms or 0, a.create_time_ms or 0, position)
        if who not in latest or latest[who][0] < given:
            latest[who] = (given, a)
    labels: dict[str, Any] = {}
    for who, (_, a) in sorted(latest.items()):
        try:
            labels[who] = scale.coerce(a.value) if scale is not None else jsonable(a.value)
        except ValueError as exc:
            raise DataError(
                f"trace {trace.info.trace_id}: assessment '{source.expectation}' from '{who}': "
                f"{exc}",
                path=source.tracking_uri,
                field="expectation",
            ) from None
    return labels


def _transcript(trace: Any, request: str, response: str) -> list[Message] | None:
    """The agent run of a trace with TOOL spans (None without): the request, each tool call
    with its result in start order, the response. Calls that started at the same clock tick (a
    coarse clock or exporter) keep the order the trace recorded them in: a span id is random,
    so ordering ties by it would show the judge "delete" before "login" on some traces."""
    from mlflow.entities import SpanStatusCode, SpanType

    tools = sorted(  # stable: ties keep the trace's own order
        (s for s in trace.data.spans or [] if s.span_type == SpanType.TOOL),
        key=lambda s: s.start_time_ns,
    )
    if not tools:
        return None
    messages = [Message(role="user", content=request)]
    for span in tools:
        arguments = jsonable(span.inputs)
        call = ToolCall(
            id=span.span_id,
            function=span.name,
            arguments=arguments if isinstance(arguments, dict) else {"input": arguments},
        )
        messages.append(Message(role="assistant", tool_calls=[call]))
        status = getattr(span, "status", None)
        failed = getattr(status, "status_code", None) == SpanStatusCode.ERROR
        outputs = span.outputs
        messages.append(
            Message(
                role="tool",
                content=outputs
                if isinstance(outputs, str)
                else json.dumps(jsonable(outputs), ensure_ascii=False),
                tool_call_id=span.span_id,
                function=span.name,
                error=(getattr(status, "description", "") or "tool error") if failed else None,
            )
        )
    messages.append(Message(role="assistant", content=response))
    return with_steps(messages)


@dataclass
class WriteBack:
    """What writing verdicts back did: Feedback ``written`` (new), ``updated`` (an earlier one
    of the same name and source had another value) and ``skipped`` (already there as it is)."""

    written: int = 0
    updated: int = 0
    skipped: int = 0
    traces: list[str] = field(default_factory=list)


def write_feedback(
    tracking_uri: str,
    judgments: Iterable[Judgment],
    *,
    name: str,
    source_id: str,
    scale: Scale,
    metadata: dict[str, str] | None = None,
) -> WriteBack:
    """Each judgment on its trace (the item id) as a ``Feedback`` called ``name`` from an
    LLM_JUDGE source ``source_id``: value the verdict as tools hold it (``Scale.tool_value``: a
    bool on a binary scale, the label on a categorical one, the score on an ordinal one),
    rationale the reasoning;
    an unscored judgment a Feedback whose ``error`` gives the reason, with no value. A Feedback
    of that name and source already on the trace is updated when it differs and left alone when
    it does not, so a re-run adds nothing."""
    from mlflow.entities import AssessmentError, AssessmentSource, AssessmentSourceType, Feedback
    from mlflow.tracing.client import TracingClient

    check_store(tracking_uri)
    client = TracingClient(tracking_uri)
    source = AssessmentSource(source_type=AssessmentSourceType.LLM_JUDGE, source_id=source_id)
    done = WriteBack()
    for j in judgments:
        if j.scored:
            value, error = scale.tool_value(j.score), None  # type: ignore[arg-type]
        else:
            code, message = j.error_for_tools()
            value, error = None, AssessmentError(error_code=code, error_message=message)
        feedback = Feedback(
            name=name,
            value=value,
            error=error,
            source=source,
            rationale=j.reasoning or None,
            metadata={**(metadata or {}), "assay.score": str(j.score)},
            trace_id=j.item_id,
        )
        existing = [
            a
            for a in client.get_trace(j.item_id).info.assessments or []
            if isinstance(a, Feedback)
            and a.name == name
            and a.source is not None
            and a.source.source_type == AssessmentSourceType.LLM_JUDGE
            and a.source.source_id == source_id
        ]
        if not existing:
            client.log_assessment(j.item_id, feedback)
            done.written += 1
        elif _same(existing[0], feedback):
            done.skipped += 1
        else:
            client.update_assessment(j.item_id, existing[0].assessment_id, feedback)
            done.updated += 1
        done.traces.append(j.item_id)
    return done


def _same(old: Any, new: Any) -> bool:
    def error(a: Any) -> tuple[str | None, str | None]:
        e = a.error
        return (e.error_code, e.error_message) if e is not None else (None, None)

    return (
        old.value == new.value
        and (old.rationale or None) == (new.rationale or None)
        and error(old) == error(new)
        and (old.metadata or {}) == (new.metadata or {})
    )
