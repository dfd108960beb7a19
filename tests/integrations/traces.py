"""The MLflow GenAI traces the integration tests read: logged with MLflow's own fluent API into
a store (a SQLite file or a server), each tagged ``kind`` so a test picks its own with a filter
string. What was logged is returned, so a test checks what assay read against it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

EXPERIMENT = "assay-tests"
KINDS = ("chat", "panel", "agent", "bare", "empty")

# three annotators' binary labels per trace (``quality``): items 0-5
ANNOTATIONS = [
    {"ann-a": 1, "ann-b": 1, "ann-c": 1},
    {"ann-a": 0, "ann-b": 0, "ann-c": 1},
    {"ann-a": 1, "ann-b": 0, "ann-c": 1},
    {"ann-a": 0, "ann-b": 0, "ann-c": 0},
    {"ann-a": 1, "ann-b": 1, "ann-c": 0},
    {"ann-a": 0, "ann-b": 1, "ann-c": 0},
]


@dataclass
class Logged:
    """Trace ids by kind, in the order they were logged, and what each was given."""

    ids: dict[str, list[str]] = field(default_factory=dict)
    requests: dict[str, str] = field(default_factory=dict)
    responses: dict[str, str] = field(default_factory=dict)
    expected: dict[str, bool] = field(default_factory=dict)
    annotations: dict[str, dict[str, int]] = field(default_factory=dict)


@contextlib.contextmanager
def logging_to(uri: str) -> Iterator[None]:
    """MLflow's fluent API pointed at ``uri`` (synchronous trace export, so an assessment can be
    attached at once), and put back as it was."""
    import mlflow

    before = mlflow.get_tracking_uri()
    was = os.environ.get("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING")
    os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"
    mlflow.set_tracking_uri(uri)
    try:
        yield
    finally:
        mlflow.set_tracking_uri(before)
        if was is None:
            os.environ.pop("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", None)
        else:
            os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = was


def _chat(kind: str, request: str, response: str, logged: Logged, messages: list | None = None):
    import mlflow
    from mlflow.entities import SpanType

    with mlflow.start_span(name="chat", span_type=SpanType.CHAT_MODEL) as span:
        span.set_inputs(
            {"messages": [{"role": "user", "content": request}] if messages is None else messages}
        )
        span.set_outputs({"choices": [{"message": {"role": "assistant", "content": response}}]})
    mlflow.set_trace_tag(span.trace_id, "kind", kind)
    logged.ids.setdefault(kind, []).append(span.trace_id)
    logged.requests[span.trace_id], logged.responses[span.trace_id] = request, response
    return span.trace_id


def log_traces(uri: str, kinds: tuple[str, ...] = KINDS) -> Logged:
    """Into experiment ``assay-tests`` at ``uri``: ``chat`` (four traces with an Expectation
    ``harmful``; the response of the harmful ones says UNSAFE, the third says GARBLE), ``panel``
    (six traces, each with three HUMAN Feedback ``quality``), ``agent`` (an AGENT trace with two
    TOOL spans, the second failing), ``bare`` (a trace with no assessment) and ``empty`` (a
    trace whose messages list is empty); only ``kinds`` (over HTTP each costs round trips)."""
    import mlflow
    from mlflow.entities import AssessmentSource

    logged = Logged()
    with logging_to(uri):
        mlflow.set_experiment(EXPERIMENT)
        for k, harmful in enumerate([True, False, False, True] if "chat" in kinds else []):
            word = "UNSAFE" if harmful else "GARBLE" if k == 2 else "fine"
            tid = _chat("chat", f"question {k}", f"answer {k}: {word}", logged)
            mlflow.log_expectation(
                trace_id=tid,
                name="harmful",
                value=harmful,
                source=AssessmentSource(source_type="HUMAN", source_id="labeller"),
            )
            logged.expected[tid] = harmful
        for k, labels in enumerate(ANNOTATIONS if "panel" in kinds else []):
            tid = _chat("panel", f"panel question {k}", f"panel answer {k}", logged)
            for who, label in labels.items():
                mlflow.log_feedback(
                    trace_id=tid,
                    name="quality",
                    value=bool(label),
                    source=AssessmentSource(source_type="HUMAN", source_id=who),
                )
            # a judge's feedback of the same name is not an annotator
            mlflow.log_feedback(
                trace_id=tid,
                name="quality",
                value=True,
                source=AssessmentSource(source_type="LLM_JUDGE", source_id="someone@else"),
            )
            logged.annotations[tid] = labels
        if "agent" in kinds:
            _agent(logged)
        if "bare" in kinds:
            _chat("bare", "no label here", "none", logged)
        if "empty" in kinds:
            _chat("empty", "", "an answer to nothing", logged, messages=[])
    return logged


def _agent(logged: Logged) -> None:
    """An AGENT trace calling two tools, the second of which fails."""
    import mlflow
    from mlflow.entities import SpanType

    with mlflow.start_span(name="agent", span_type=SpanType.AGENT) as root:
        root.set_inputs({"question": "Book the cheapest flight to Paris"})
        with mlflow.start_span(name="search_flights", span_type=SpanType.TOOL) as tool:
            tool.set_inputs({"to": "Paris"})
            tool.set_outputs({"flights": [{"id": "AF1", "price": 120}]})
        with mlflow.start_span(name="book_flight", span_type=SpanType.TOOL) as tool:
            tool.set_inputs({"id": "AF1"})
            tool.set_status("ERROR")
        root.set_outputs({"answer": "I could not book AF1."})
    mlflow.set_trace_tag(root.trace_id, "kind", "agent")
    logged.ids["agent"] = [root.trace_id]


def log_sampled_traces(uri: str, harmful: list[bool], labelled: set[int]) -> Logged:
    """Into experiment ``assay-tests`` at ``uri``: one ``sampled`` chat trace per entry of
    ``harmful`` (the harmful ones' responses say UNSAFE), a HUMAN Expectation ``harmful`` only on
    the traces ``labelled`` names — a production sample where a few traces were reviewed."""
    import mlflow
    from mlflow.entities import AssessmentSource

    logged = Logged()
    with logging_to(uri):
        mlflow.set_experiment(EXPERIMENT)
        for k, bad in enumerate(harmful):
            tid = _chat(
                "sampled", f"question {k}", f"answer {k}: {'UNSAFE' if bad else 'fine'}", logged
            )
            if k in labelled:
                mlflow.log_expectation(
                    trace_id=tid,
                    name="harmful",
                    value=bad,
                    source=AssessmentSource(source_type="HUMAN", source_id="reviewer"),
                )
                logged.expected[tid] = bad
    return logged
