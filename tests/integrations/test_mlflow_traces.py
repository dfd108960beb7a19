"""``data: {format: mlflow}``: MLflow GenAI traces judged by ``assay evaluate`` and its verdicts
written back on them, from a local SQLite store and from a real ``mlflow server`` over HTTP.
The judge is the loopback stub: a response saying UNSAFE is judged harmful, GARBLE gets an
answer that is not JSON (an unscored ``parse_error``) while ``garble["on"]``."""

from __future__ import annotations

import contextlib
import csv
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.cli import main
from assay.data import TraceSource, load_mlflow_traces
from assay.errors import DataError
from assay.lm import StubServer
from assay.scale import Scale
from tests.integrations.traces import EXPERIMENT, Logged, log_traces
from tests.stub_judge import stub_config

CHAT = {"request": "inputs.messages.-1.content", "response": "outputs.choices.0.message.content"}
BINARY = Scale(kind="binary", labels=["False", "True"])


@pytest.fixture(scope="module")
def local(tmp_path_factory) -> tuple[str, Logged]:
    """A SQLite store with the test traces (one per module: creating one takes seconds)."""
    uri = f"sqlite:///{tmp_path_factory.mktemp('traces') / 'traces.db'}"
    return uri, log_traces(uri)


@pytest.fixture(scope="module")
def served(mlflow_server) -> tuple[str, Logged]:
    """The chat and bare traces on the session's ``mlflow server``."""
    return mlflow_server, log_traces(mlflow_server, kinds=("chat", "bare"))


def judge_config(
    folder: Path, api_base: str, uri: str, *, name: str, judge: dict | None = None, **data: object
) -> Path:
    """The stub judge (tests/stub_judge.py, with its reasoning) on the traces of
    ``kind`` (a filter on the tag)."""
    kind = data.pop("kind", "chat")
    source = {
        "format": "mlflow",
        "tracking_uri": uri,
        "experiment": EXPERIMENT,
        "filter": f"tags.kind = '{kind}'",
        **CHAT,
        **data,
    }
    return stub_config(
        folder, Path("unused.csv"), api_base, name=name, data=source, retries=0,
        judge={"program": "chain_of_thought", **(judge or {})},
    )  # fmt: skip


def stub(garble: dict[str, bool] | None = None) -> StubServer:
    def respond(request: dict) -> str:
        text = json.dumps(request["messages"])
        if garble is not None and garble["on"] and "GARBLE" in text:
            return "I would rather not say."
        verdict = "True" if "UNSAFE" in text else "False"
        return json.dumps({"reasoning": f"it says {verdict}", "verdict": verdict})

    return StubServer(respond=respond)


def refused(capsys, argv: list[str]) -> str:
    """The one stderr line of a command that exits 2."""
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    return err[0]


def judge_feedback(uri: str, trace_id: str, name: str) -> list:
    from mlflow.entities import Feedback
    from mlflow.tracing.client import TracingClient

    return [
        a
        for a in TracingClient(uri).get_trace(trace_id).info.assessments
        if isinstance(a, Feedback) and a.name == name
    ]


# -- reading ------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["local", pytest.param("served", marks=pytest.mark.slow)])
def test_traces_become_items_with_the_mapped_texts_and_the_human_reference(where, request):
    uri, logged = request.getfixturevalue(where)
    source = TraceSource(
        uri, EXPERIMENT, filter="tags.kind = 'chat'", expectation="harmful", **CHAT
    )
    items = load_mlflow_traces(source, BINARY)
    assert [it.id for it in items] == logged.ids["chat"]  # the trace ids, oldest first
    for it in items:
        assert (it.request, it.response) == (logged.requests[it.id], logged.responses[it.id])
        assert it.expected == int(logged.expected[it.id])
        assert it.meta["trace_id"] == it.id and it.transcript is None
    # the experiment by its id too, and the default mapping: the inputs and outputs as JSON
    from mlflow import MlflowClient

    number = MlflowClient(uri).get_experiment_by_name(EXPERIMENT).experiment_id
    [raw] = load_mlflow_traces(TraceSource(uri, number, filter="tags.kind = 'bare'"))
    assert json.loads(raw.request) == {"messages": [{"role": "user", "content": "no label here"}]}


def test_an_agent_trace_becomes_a_transcript_of_its_tool_spans(local):
    uri, logged = local
    source = TraceSource(
        uri, EXPERIMENT, filter="tags.kind = 'agent'", request="inputs.question",
        response="outputs.answer",
    )  # fmt: skip
    [item] = load_mlflow_traces(source)
    assert item.id == logged.ids["agent"][0]
    t = item.transcript
    assert [m.role for m in t] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert t[0].content == "Book the cheapest flight to Paris"
    assert [m.tool_calls[0].function for m in t if m.tool_calls] == [
        "search_flights",
        "book_flight",
    ]
    assert t[1].tool_calls[0].arguments == {"to": "Paris"}
    assert json.loads(t[2].content) == {"flights": [{"id": "AF1", "price": 120}]}
    assert t[2].tool_call_id == t[1].tool_calls[0].id and t[2].error is None
    assert t[4].error  # the failed tool span
    assert t[5].content == "I could not book AF1." and [m.step for m in t] == [None, 0, 0, 1, 1, 2]


def test_tool_spans_that_start_at_the_same_tick_keep_the_order_the_trace_recorded(tmp_path):
    """A coarse clock gives every span one start time; span ids are random, so ordering the
    ties by id showed the judge the calls shuffled ("delete" before "login")."""
    import mlflow
    from mlflow.entities import SpanType

    from tests.integrations.traces import logging_to

    uri = f"sqlite:///{tmp_path / 'ticks.db'}"
    tick = 1_700_000_000_000_000_000
    steps = ["login", "read", "delete", "report"]
    with logging_to(uri):
        mlflow.set_experiment("ticks")
        for n in range(4):
            root = mlflow.start_span_no_context(
                "agent", inputs={"q": f"task {n}"}, start_time_ns=tick
            )
            for i, name in enumerate(steps):
                span = mlflow.start_span_no_context(
                    name, span_type=SpanType.TOOL, parent_span=root, inputs={"i": i},
                    start_time_ns=tick,
                )  # fmt: skip
                span.set_outputs(f"out {i}")
                span.end(end_time_ns=tick)
            root.set_outputs({"a": "done"})
            root.end(end_time_ns=tick)
    items = load_mlflow_traces(TraceSource(uri, "ticks", request="inputs.q", response="outputs.a"))
    assert len(items) == 4
    for item in items:
        assert [c.function for m in item.transcript for c in m.tool_calls] == steps


def test_a_transcript_judge_judges_an_agent_trace(local, tmp_path, monkeypatch, capsys):
    uri, _ = local
    monkeypatch.chdir(tmp_path)
    with StubServer() as server:
        criteria = [{"id": "careful", "instructions": "The agent says when a tool failed."}]
        cfg = judge_config(
            tmp_path, server.base_url, uri, name="agent", kind="agent",
            request="inputs.question", response="outputs.answer",
            judge={"task": "transcript", "criteria": criteria, "program": "predict"},
        )  # fmt: skip
        assert main(["evaluate", str(cfg), "--quiet", "--json"]) == 0
        [asked] = [json.dumps(r["messages"]) for r in server.requests]
    counts = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["counts"]
    assert (counts["items"], counts["scored"]) == (1, 1)
    assert "search_flights" in asked and "book_flight" in asked and "AF1" in asked


def test_errors_name_the_trace_and_the_field(local):
    uri, logged = local
    [empty] = logged.ids["empty"]
    with pytest.raises(DataError) as bad:
        load_mlflow_traces(TraceSource(uri, EXPERIMENT, filter="tags.kind = 'empty'", **CHAT))
    assert str(bad.value) == (
        f"{uri}, field 'request': trace {empty}: 'inputs.messages' has no element -1 (it has 0)"
    )
    panel = logged.ids["panel"][0]
    with pytest.raises(DataError, match=f"trace {panel}: 3 human assessments named 'quality'"):
        load_mlflow_traces(
            TraceSource(uri, EXPERIMENT, filter="tags.kind = 'panel'", expectation="quality"),
            BINARY,
        )
    with pytest.raises(DataError, match="field 'experiment': no experiment named or numbered"):
        load_mlflow_traces(TraceSource(uri, "nosuch"))
    with pytest.raises(DataError, match="field 'filter': MLflow refused the trace search"):
        load_mlflow_traces(TraceSource(uri, EXPERIMENT, filter="tags.kind === 'x'"))


def test_a_trace_without_the_reference_is_refused_or_counted(local, tmp_path, monkeypatch, capsys):
    uri, logged = local
    monkeypatch.chdir(tmp_path)
    with stub() as server:
        cfg = judge_config(tmp_path, server.base_url, uri, name="bare", kind="bare",
                           expectation="harmful")  # fmt: skip
        line = refused(capsys, ["evaluate", str(cfg), "--quiet"])
        assert server.n_requests == 0
        assert line == (
            f"assay: error: {uri}, field 'expectation': 1 of 1 traces have no human assessment "
            f"named 'harmful' (traces {logged.ids['bare'][0]}); set data.missing_expected: keep "
            "to judge them without a reference"
        )
        cfg = judge_config(tmp_path, server.base_url, uri, name="bare", kind="bare",
                           expectation="harmful", missing_expected="keep")  # fmt: skip
        assert main(["evaluate", str(cfg), "--quiet", "--json"]) == 0
    counts = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["counts"]
    assert (counts["items"], counts["scored"], counts["paired"]) == (1, 1, 0)


@pytest.mark.parametrize("kind, data", [
    ("chat", {"expectation": "harmful"}),
    ("panel", {"expectation": "quality", "annotators": True}),
])  # fmt: skip
def test_traces_are_read_a_page_at_a_time_into_a_file_the_run_streams(
    kind, data, local, tmp_path, monkeypatch
):
    """Read two traces per search request, an experiment gives the items (ids, references, the
    run's fingerprint) one request for all of them gives; the pages are asked for as the items
    are taken, and the run's items live in a spool file that goes with their stream."""
    import gc

    from mlflow import MlflowClient

    import assay.data._mlflow as traces
    from assay.inputs import DataConfig, data_fingerprint, stream_items

    uri, logged = local
    config = DataConfig.model_validate({
        "format": "mlflow", "tracking_uri": uri, "experiment": EXPERIMENT,
        "filter": f"tags.kind = '{kind}'", **CHAT, **data,
    })  # fmt: skip
    whole = list(stream_items(config, BINARY))
    requests = []
    search = MlflowClient.search_traces
    monkeypatch.setattr(MlflowClient, "search_traces",
                        lambda self, **kw: requests.append(kw) or search(self, **kw))  # fmt: skip
    monkeypatch.setattr(traces, "_PAGE", 2)
    pages = traces.iter_mlflow_traces(config.trace_source(), BINARY)
    first = next(pages)
    assert (first.id, len(requests)) == (logged.ids[kind][0], 1)  # one page asked for, so far
    assert [first.id, *(it.id for it in pages)] == logged.ids[kind]
    pages_needed = -(-len(logged.ids[kind]) // 2)  # two traces a page; a full last page may
    assert len(requests) in (pages_needed, pages_needed + 1)  # come with a token to an empty one

    killed = tmp_path / "items" / "traces-999999999-x.jsonl"  # a killed run's, left behind
    killed.parent.mkdir()
    killed.write_text("{}\n")
    stream = stream_items(config, BINARY, cache_dir=tmp_path / "hf")
    (spool,) = (tmp_path / "items").iterdir()  # the killed run's removed
    paged = list(stream)
    assert [it.model_dump() for it in paged] == [it.model_dump() for it in whole]
    assert data_fingerprint(stream) == data_fingerprint(whole)
    if kind == "panel":  # the references are the annotators' majority, set in a second pass
        assert [it.expected for it in paged] == [
            int(sum(logged.annotations[it.id].values()) >= 2) for it in paged
        ]
    del stream, paged
    gc.collect()
    assert not spool.exists()


@pytest.mark.parametrize("store", ["server", "sqlite", "folder", "file"])
def test_a_store_with_nothing_behind_it_is_refused_before_any_request(
    store, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    uri = {
        "server": f"http://127.0.0.1:{port}",
        "sqlite": f"sqlite:///{tmp_path / 'none.db'}",
        "folder": str(tmp_path / "mlruns"),
        "file": f"file://{tmp_path / 'mlruns'}",
    }[store]
    with stub() as server:
        cfg = judge_config(tmp_path, server.base_url, uri, name="nowhere")
        line = refused(capsys, ["evaluate", str(cfg), "--quiet"])
        assert server.n_requests == 0
    assert line.startswith(f"assay: error: {uri}, field 'tracking_uri': ")
    assert not (tmp_path / "none.db").exists() and not (tmp_path / "runs").exists()


# -- several annotators -------------------------------------------------------------------------


def test_annotators_agreement_equals_the_same_from_a_csv_export(
    local, tmp_path, monkeypatch, capsys
):
    """Read as several annotators, the human Feedback of each trace give the Fleiss κ / α the
    same labels exported to CSV by hand give, and the disagreeing trace ids are listed."""
    uri, logged = local
    monkeypatch.chdir(tmp_path)
    with stub() as server:
        cfg = judge_config(tmp_path, server.base_url, uri, name="panel", kind="panel",
                           expectation="quality", annotators=True)  # fmt: skip
        assert main(["evaluate", str(cfg), "--quiet", "--json"]) == 0
    run_dir = Path(json.loads(capsys.readouterr().out.strip().splitlines()[-1])["run_dir"])
    export = tmp_path / "export.csv"  # what a user would export from the MLflow UI by hand
    with open(export, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["trace", "who", "value"])
        for tid, labels in logged.annotations.items():
            w.writerows((tid, who, str(bool(v)).lower()) for who, v in labels.items())

    def agreement(reference: Path, *columns: str) -> dict:
        argv = ["agreement", str(reference), str(run_dir / "judgments.jsonl"), "--json"]
        flags = ("--id-column", "--annotator-column", "--score-column")
        argv += [x for pair in zip(flags, columns, strict=True) for x in pair]
        assert main([*argv, "--scale", "binary"]) == 0
        return json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    ours = agreement(run_dir / "annotations.csv", "item_id", "annotator", "label")
    theirs = agreement(export, "trace", "who", "value")
    assert ours["annotators"]["annotators"] == ["ann-a", "ann-b", "ann-c"]  # not the LLM judge
    assert ours["annotators"]["agreement"] == theirs["annotators"]["agreement"]
    assert ours["annotators"]["alt_test"] == theirs["annotators"]["alt_test"]
    assert {k: ours[k] for k in ("n", "metrics")} == {k: theirs[k] for k in ("n", "metrics")}
    # the stub says False everywhere: the traces whose majority is True are the disagreements
    majority_true = {t for t, labels in logged.annotations.items() if sum(labels.values()) >= 2}
    assert {d["id"] for d in ours["disagreements"]} == majority_true
    listed = [json.loads(line)["id"] for line in open(run_dir / "disagreements.jsonl")]
    assert set(listed) == majority_true  # evaluate's own list, against the majority


# -- verdicts written back ----------------------------------------------------------------------


@pytest.mark.parametrize("where", ["local", pytest.param("served", marks=pytest.mark.slow)])
def test_verdicts_are_written_back_once_updated_when_changed(
    where, request, tmp_path, monkeypatch, capsys
):
    from mlflow.entities import AssessmentSourceType

    uri, logged = request.getfixturevalue(where)
    monkeypatch.chdir(tmp_path)
    garble = {"on": True}
    with stub(garble) as server:
        cfg = judge_config(tmp_path, server.base_url, uri, name="back", expectation="harmful")
        assert main(["evaluate", str(cfg), "--quiet", "--write-back"]) == 0
        first = capsys.readouterr().out
        assert main(["evaluate", str(cfg), "--quiet", "--write-back", "--json"]) == 0
        again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        n_first = server.n_requests
        garble["on"] = False  # the parse error judged again: its Feedback is updated
        argv = ["evaluate", str(cfg), "--quiet", "--write-back", "--retry-unscored", "parse_error"]
        assert main([*argv, "--json"]) == 0
        retried = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert "4 feedback written · 0 updated · 0 already there" in first
    assert again["feedback"] == {"written": 0, "updated": 0, "skipped": 4}
    assert n_first == 4 and server.n_requests == 5  # the re-read made no call
    assert retried["feedback"] == {"written": 0, "updated": 1, "skipped": 3}
    config_hash = retried["config_hash"]
    for tid in logged.ids["chat"]:
        [fb] = judge_feedback(uri, tid, "stub-judge")  # one, never a duplicate
        assert fb.source.source_type == AssessmentSourceType.LLM_JUDGE
        assert fb.source.source_id == f"stub-judge@{config_hash}"
        harmful = "UNSAFE" in logged.responses[tid]
        assert fb.value is harmful and fb.error is None  # a bool, as the human Expectation
        assert fb.rationale == f"it says {harmful}"
    # before the retry, the GARBLE trace's verdict was an error with its reason, no value
    assert "unscored 1 {'parse_error': 1}" in first


def test_an_unscored_judgment_is_written_as_an_error(local, tmp_path, monkeypatch, capsys):
    uri, logged = local
    monkeypatch.chdir(tmp_path)
    with stub({"on": True}) as server:
        cfg = judge_config(tmp_path, server.base_url, uri, name="errs", expectation="harmful",
                           write_back=True, judge={"name": "errs-judge"})  # fmt: skip
        assert main(["evaluate", str(cfg), "--quiet"]) == 0
    garbled = logged.ids["chat"][2]
    [fb] = judge_feedback(uri, garbled, "errs-judge")
    assert fb.value is None
    assert fb.error.error_code == "UNSCORED_PARSE_ERROR"
    assert fb.error.error_message.startswith("unscored (parse_error)")


# -- the config ---------------------------------------------------------------------------------

SOURCE = {"format": "mlflow", "tracking_uri": "sqlite:///t.db", "experiment": "e"}


@pytest.mark.parametrize(
    "data, message",
    [
        ({"format": "mlflow", "experiment": "e"}, "format mlflow needs data.tracking_uri"),
        ({**SOURCE, "path": "x.csv"}, "format mlflow reads traces, not a file: drop data.path"),
        ({**SOURCE, "annotators": True}, "data.annotators needs data.expectation"),
        ({"path": "x.csv", "expectation": "harmful"}, "data.expectation is for format: mlflow"),
        ({"format": "inspect"}, "data.path is required: the inspect file to read"),
    ],
)
def test_a_config_for_traces_is_checked_in_one_line(tmp_path, data, message):
    from assay.errors import ConfigError
    from assay.inputs import load_config

    path = tmp_path / "config.yaml"
    judge = {"name": "j", "model": "openai/x", "scale": {"kind": "binary"}, "rubric": "r"}
    path.write_text(json.dumps({"name": "c", "data": data, "judge": judge}), encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert str(refused.value).startswith(f"{path}: field 'data': {message}")


def test_only_evaluate_writes_verdicts_back(tmp_path):
    from assay.errors import ConfigError
    from assay.inputs import load_config
    from assay.reliability import HarnessConfig

    path = tmp_path / "harness.yaml"
    config = {
        "name": "h",
        "data": {**SOURCE, "write_back": True},
        "scale": {"kind": "binary"},
        "judges": [{"name": "j", "model": "openai/x", "rubric": "r"}],
        "tests": {"format_vertical": {}},
    }
    path.write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(ConfigError, match="only assay evaluate writes its verdicts back"):
        load_config(path, model=HarnessConfig)


def test_the_measured_judge_scores_the_same_traces_in_mlflow_genai_evaluate(
    local, tmp_path, monkeypatch, capsys
):
    """The worked example's last step: the finished run of a traces config (re-read from its
    run directory — its ``data.path`` is empty) exported as a Scorer reading the config's own
    request / response paths gives, in ``mlflow.genai.evaluate``, the verdicts the run gave."""
    import mlflow

    from assay.inputs import load_config
    from assay.integrations.mlflow import scorer

    uri, logged = local
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    with stub() as server:
        cfg = judge_config(tmp_path, server.base_url, uri, name="export", expectation="harmful")
        assert main(["evaluate", str(cfg), "--quiet", "--json"]) == 0
        run_dir = Path(json.loads(capsys.readouterr().out.strip().splitlines()[-1])["run_dir"])
        config, _ = load_config(run_dir / "config.yaml")  # its data.path empty, not refused
        judge = scorer(run_dir, request=CHAT["request"], response=CHAT["response"], name="ours")
        mlflow.set_tracking_uri(uri)
        experiment = mlflow.set_experiment(EXPERIMENT)  # not another test's active one
        traces = mlflow.search_traces(
            locations=[experiment.experiment_id], filter_string="tags.kind = 'chat'"
        )
        mlflow.genai.evaluate(data=traces, scorers=[judge])
    assert config.data.format == "mlflow" and config.data.path == ""
    run = {
        json.loads(line)["item_id"]: json.loads(line) for line in open(run_dir / "judgments.jsonl")
    }
    for tid in logged.ids["chat"]:
        (fb,) = judge_feedback(uri, tid, "ours")
        assert fb.value is ("UNSAFE" in logged.responses[tid]) is (run[tid]["score"] == 1)
        assert fb.metadata["assay.run_hash"] and fb.metadata["assay.n"] == str(len(run))


def test_a_trace_that_did_not_finish_is_refused_or_left_out_and_counted(
    tmp_path, monkeypatch, capsys
):
    """A trace whose app raised after writing part of its output (state ERROR) was judged as
    any other: "6 judgments, scored 6". It is refused, or left out and said with
    ``data.errored_samples: skip``."""
    import mlflow

    monkeypatch.chdir(
        tmp_path
    )  # the store's trace artifacts go to ./mlruns: here, not the checkout
    uri = f"sqlite:///{tmp_path / 'crashed.db'}"
    mlflow.set_tracking_uri(uri)
    try:
        mlflow.set_experiment(EXPERIMENT)
        for i in range(3):
            try:
                with mlflow.start_span(name="app") as span:
                    span.set_inputs({"messages": [{"role": "user", "content": f"Question {i}?"}]})
                    span.set_outputs({"choices": [{"message": {"content": f"Answer {i}."}}]})
                    span.set_attribute("kind", "chat")
                    if i == 1:
                        raise RuntimeError("the app crashed after a partial answer")
            except RuntimeError:
                pass
    finally:
        mlflow.set_tracking_uri(None)
    source = TraceSource(tracking_uri=uri, experiment=EXPERIMENT, **CHAT)
    with pytest.raises(DataError) as err:
        load_mlflow_traces(source, BINARY)
    assert str(err.value).startswith(f"{uri}: 1 of 3 traces did not finish (traces ")
    assert "(ERROR)): a trace whose app raised or is still running" in str(err.value)
    counts: dict[str, int] = {}
    skip = TraceSource(tracking_uri=uri, experiment=EXPERIMENT, errored="skip", **CHAT)
    from assay.data import iter_mlflow_traces

    errored: list[tuple[str, str]] = []
    items = list(iter_mlflow_traces(skip, BINARY, counts=counts, errored=errored))
    assert sorted(i.response for i in items) == ["Answer 0.", "Answer 2."]
    assert counts == {"errored_traces": 1}
    ((crashed, state),) = errored  # which trace, not only how many
    assert state == "ERROR" and crashed.startswith("tr-")
    with stub() as server:
        cfg = judge_config(tmp_path, server.base_url, uri, name="crashed", kind="chat",
                           filter=None, errored_samples="skip")  # fmt: skip
        assert main(["evaluate", str(cfg)]) == 0
        assert server.n_requests == 2
    out = capsys.readouterr().out
    assert "items 2 · scored 2" in out
    assert (
        f"left out: 1 trace that did not finish (state ERROR or IN_PROGRESS) ({crashed}: ERROR)"
        in out
    )


@contextlib.contextmanager
def one_chat_trace(tmp_path: Path, monkeypatch, db: str) -> Iterator[tuple[str, str]]:
    """A SQLite store in ``tmp_path`` holding one finished chat trace, written before anything
    is attached to it (not queued): ``(tracking URI, trace id)``, with MLflow pointed at the
    store until the block ends, for the test to log its assessments."""
    import mlflow

    monkeypatch.chdir(tmp_path)  # the store's trace artifacts go to ./mlruns: here
    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    uri = f"sqlite:///{tmp_path / db}"
    mlflow.set_tracking_uri(uri)
    try:
        mlflow.set_experiment(EXPERIMENT)
        with mlflow.start_span(name="app") as span:
            span.set_inputs({"messages": [{"role": "user", "content": "Question?"}]})
            span.set_outputs({"choices": [{"message": {"content": "Answer."}}]})
        yield uri, span.trace_id
    finally:
        mlflow.set_tracking_uri(None)


def test_an_expectation_an_llm_judge_logged_is_not_an_annotator(tmp_path, monkeypatch):
    """With ``annotators``, every assessment source was an annotator — an Expectation an LLM
    judge (or code) logged too, so the agreement "with humans" had a machine among them. Only
    human sources are annotators now; the others are left out and counted, and the run says so."""
    import mlflow
    from mlflow.entities import AssessmentSource

    from assay.data import iter_mlflow_traces
    from assay.inputs import left_out_line

    with one_chat_trace(tmp_path, monkeypatch, "sources.db") as (uri, trace):
        for who, kind, value in (
            ("alice", "HUMAN", True),
            ("bob", "HUMAN", False),
            ("gpt-judge", "LLM_JUDGE", True),
            ("rules.py", "CODE", True),
        ):
            mlflow.log_expectation(
                trace_id=trace,
                name="harmful",
                value=value,
                source=AssessmentSource(source_type=kind, source_id=who),
            )
    counts: dict[str, int] = {}
    panel = TraceSource(uri, EXPERIMENT, expectation="harmful", annotators=True, **CHAT)
    [item] = iter_mlflow_traces(panel, BINARY, counts=counts)
    assert item.meta["annotations"] == {"alice": 1, "bob": 0}
    assert counts["machine_assessments"] == 2
    assert left_out_line({"machine_assessments": 2}) == (
        "left out: 2 assessments an LLM judge or code logged, not an annotator "
        "(data.annotators reads human ones)"
    )


def test_an_expectation_logged_again_by_the_same_person_is_their_label_now(tmp_path, monkeypatch):
    """A reviewer who corrects an Expectation logs it again (MLflow has no override for an
    Expectation: both stay valid). That stopped the run ("two assessments named 'harmful' from
    'alice'; one label per annotator") with no way on but deleting one in MLflow; the latest is
    the label, as ``mlflow.genai`` reads expectations — and a Feedback overridden in MLflow is
    no longer valid, so its override is the label."""
    import mlflow
    from mlflow.entities import AssessmentSource

    alice = AssessmentSource(source_type="HUMAN", source_id="alice")
    bob = AssessmentSource(source_type="HUMAN", source_id="bob")
    with one_chat_trace(tmp_path, monkeypatch, "corrected.db") as (uri, trace):
        mlflow.log_expectation(trace_id=trace, name="harmful", value="maybe", source=alice)
        mlflow.log_expectation(trace_id=trace, name="harmful", value=True, source=alice)
        first = mlflow.log_feedback(trace_id=trace, name="harmful", value=True, source=bob)
        mlflow.override_feedback(
            trace_id=trace, assessment_id=first.assessment_id, value=False, source=bob
        )
    panel = TraceSource(uri, EXPERIMENT, expectation="harmful", annotators=True, **CHAT)
    [item] = load_mlflow_traces(panel, BINARY)
    assert item.meta["annotations"] == {"alice": 1, "bob": 0}
    with pytest.raises(
        DataError, match="2 human assessments named 'harmful' \\(from alice, bob\\)"
    ):
        load_mlflow_traces(TraceSource(uri, EXPERIMENT, expectation="harmful", **CHAT), BINARY)
