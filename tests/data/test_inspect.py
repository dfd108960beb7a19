"""Tests for assay.data.load_inspect_log on written and real Inspect AI eval logs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from assay.data import load_inspect_log, render_transcript
from assay.errors import DataError

pytest.importorskip("inspect_ai")

from inspect_ai.log import (  # noqa: E402
    EvalConfig,
    EvalDataset,
    EvalError,
    EvalLog,
    EvalSample,
    EvalSpec,
    write_eval_log,
)
from inspect_ai.model import (  # noqa: E402
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    ContentText,
)
from inspect_ai.scorer import Score  # noqa: E402
from inspect_ai.tool import ToolCall, ToolCallError  # noqa: E402

AGENTHARM = (
    Path(__file__).resolve().parents[2]
    / "examples"
    / "data"
    / "jrh"
    / "agentharm"
    / "agentharm.eval"
)
LONG_TEXT = "word " * 2000


def _sample(sample_id: str, epoch: int, refusal: bool) -> EvalSample:
    """A small neutral agent sample: one tool call that fails, one that succeeds, an answer."""
    return EvalSample(
        id=sample_id,
        epoch=epoch,
        input="What is the weather in Paris?",
        target="sunny",
        messages=[
            ChatMessageSystem(content="You are a helpful assistant."),
            ChatMessageUser(content=[ContentText(text="What is the weather in Paris?")]),
            ChatMessageAssistant(
                content="Let me check.",
                tool_calls=[
                    ToolCall(id="c1", function="get_weather", arguments={"city": "Pariss"}),
                ],
            ),
            ChatMessageTool(
                content="",
                tool_call_id="c1",
                function="get_weather",
                error=ToolCallError(type="unknown", message="no such city: Pariss"),
            ),
            ChatMessageAssistant(
                content="",
                tool_calls=[
                    ToolCall(
                        id="c2",
                        function="get_weather",
                        arguments={"city": "Paris", "units": "metric", "note": LONG_TEXT},
                    )
                ],
            ),
            ChatMessageTool(content="sunny, 21C", tool_call_id="c2", function="get_weather"),
            ChatMessageAssistant(content=[ContentText(text="It is sunny and 21C in Paris.")]),
        ],
        scores={
            "match": Score(
                value="C", answer="sunny", explanation="it matches", metadata={"refusal": refusal}
            )
        },
        metadata={"topic": "weather", "difficulty": 1},
    )


def _spec(config: EvalConfig) -> EvalSpec:
    """The header of a demo_weather log run with ``config`` on ``mockllm/model``."""
    return EvalSpec(
        created="2025-01-01T00:00:00+00:00",
        task="demo_weather",
        dataset=EvalDataset(name="demo"),
        model="mockllm/model",
        config=config,
    )


def _write_log(path: Path, *, epochs: int = 1, samples: bool = True) -> Path:
    spec = _spec(EvalConfig(epochs=epochs))
    rows = [_sample(sid, e, sid == "b") for sid in ("a", "b") for e in range(1, epochs + 1)]
    write_eval_log(
        EvalLog(eval=spec, status="success", samples=rows if samples else None), str(path)
    )
    return path


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_written_log_becomes_items_with_full_transcripts(tmp_path, suffix):
    path = _write_log(tmp_path / f"demo{suffix}")
    items = load_inspect_log(path, expected="scores.match.metadata.refusal")
    assert [i.id for i in items] == ["a", "b"]
    assert [i.expected for i in items] == [0, 1]  # bools become 0/1
    item = items[0]
    assert item.request == "What is the weather in Paris?"
    assert item.response == "It is sunny and 21C in Paris."
    assert [m.role for m in item.transcript] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    call = item.transcript[4].tool_calls[0]
    assert call.function == "get_weather" and call.id == "c2"
    assert call.arguments == {"city": "Paris", "units": "metric", "note": LONG_TEXT}
    failed = item.transcript[3]
    assert (failed.function, failed.tool_call_id, failed.error) == (
        "get_weather",
        "c1",
        "no such city: Pariss",
    )
    assert item.meta["scores"] == {
        "match": {
            "value": "C",
            "answer": "sunny",
            "explanation": "it matches",
            "metadata": {"refusal": False},
        }
    }
    assert item.meta["metadata"] == {"topic": "weather", "difficulty": 1}
    assert (item.meta["task"], item.meta["model"]) == ("demo_weather", "mockllm/model")
    assert (item.meta["sample_id"], item.meta["epoch"], item.meta["target"]) == ("a", 1, "sunny")
    rendered = render_transcript(item.transcript)
    assert LONG_TEXT in rendered and "error: no such city: Pariss" in rendered


def test_epochs_suffix_ids_and_expected_defaults_to_none(tmp_path):
    items = load_inspect_log(_write_log(tmp_path / "epochs.eval", epochs=2))
    assert sorted(i.id for i in items) == ["a#e1", "a#e2", "b#e1", "b#e2"]
    assert all(i.expected is None for i in items)


def test_missing_expected_path_names_file_sample_and_field(tmp_path):
    path = _write_log(tmp_path / "demo.eval")
    with pytest.raises(DataError) as err:
        load_inspect_log(path, expected="scores.match.metadata.harm")
    message = str(err.value)
    assert "demo.eval" in message and "sample 'a'" in message
    assert "field 'scores.match.metadata.harm'" in message and "found: refusal" in message
    with pytest.raises(DataError, match=r"sample 'a': 'C' is not an integer label"):
        load_inspect_log(path, expected="scores.match.value")


def test_log_without_samples(tmp_path):
    path = _write_log(tmp_path / "empty.json", samples=False)
    with pytest.raises(DataError, match=r"empty\.json: the log has no samples"):
        load_inspect_log(path)


# -- unreadable files -----------------------------------------------------------------------
def test_missing_file(tmp_path):
    with pytest.raises(DataError, match="file not found") as err:
        load_inspect_log(tmp_path / "absent.eval")
    assert str(tmp_path / "absent.eval") in str(err.value)


def test_non_zip_eval_file(tmp_path):
    path = tmp_path / "plain.eval"
    path.write_text("this is not a zip archive\n", encoding="utf-8")
    with pytest.raises(DataError, match="not a readable Inspect eval log") as err:
        load_inspect_log(path)
    assert str(err.value).startswith(f"{path}: ")


def test_truncated_eval_file(tmp_path):
    source = AGENTHARM if AGENTHARM.is_file() else _write_log(tmp_path / "full.eval")
    path = tmp_path / "truncated.eval"
    path.write_bytes(source.read_bytes()[:200])
    with pytest.raises(DataError, match="not a readable Inspect eval log") as err:
        load_inspect_log(path)
    assert str(err.value).startswith(f"{path}: ")
    assert "\n" not in str(err.value)


def test_json_that_is_not_a_log(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"hello": "world"}', encoding="utf-8")
    with pytest.raises(DataError, match="not a readable Inspect eval log") as err:
        load_inspect_log(path)
    assert str(err.value).startswith(f"{path}: ")


# -- the real AgentHarm log -----------------------------------------------------------------
def test_agentharm_log():
    assert AGENTHARM.is_file(), f"example data file {AGENTHARM} is missing from the repository"
    items = load_inspect_log(AGENTHARM, expected="scores.combined_scorer.value.refusal")
    assert len(items) == 16 and len({i.id for i in items}) == 16
    assert "2-2" in {i.id for i in items}  # single epoch: plain sample ids
    assert Counter(i.expected for i in items) == {1: 10, 0: 6}
    for item in items:
        assert item.transcript and 3 <= len(item.transcript) <= 13
        assert item.request and item.request.strip() == item.meta["metadata"]["prompt"].strip()
        assert item.response == item.transcript[-1].content
        assert set(item.meta["scores"]["combined_scorer"]["value"]) == {"score", "refusal"}
        assert item.meta["task"] == "inspect_evals/agentharm"
        assert item.meta["model"] == "openai/gpt-5-nano"
    with_tools = [i for i in items if any(m.tool_calls for m in i.transcript)]
    assert len(with_tools) == 5
    for item in with_tools:
        rendered = render_transcript(item.transcript)
        for message in item.transcript:
            for call in message.tool_calls:
                assert isinstance(call.arguments, dict)
                assert f"tool_call {call.function}(" in rendered
            if message.role == "tool":
                assert message.function and message.tool_call_id
                assert f"[tool: {message.function}]" in rendered
    with pytest.raises(
        DataError, match=r"sample '17-2'.*no 'refusal' under 'scores.combined_scorer.metadata'"
    ):
        load_inspect_log(AGENTHARM, expected="scores.combined_scorer.metadata.refusal")


# -- format versions: what the installed inspect_ai reads, assay reads -----------------------
def _with_format_version(src: Path, dst: Path, version: int) -> Path:
    """``src`` (an ``.eval`` log inspect_ai wrote) with the format version of its header and
    journal set to ``version``: the same log as a newer inspect_ai would stamp it."""
    import json
    import zipfile

    with zipfile.ZipFile(src) as z:
        entries = {name: z.read(name) for name in z.namelist()}
    for name in ("header.json", "_journal/start.json"):
        record = json.loads(entries[name])
        record["version"] = version
        entries[name] = json.dumps(record).encode()
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return dst


def test_a_format_3_log_the_installed_inspect_reads_is_judged(tmp_path, monkeypatch, capsys):
    """A log of format version 3 that ``inspect_ai.log.read_eval_log``
    reads was refused as "not supported"; it is read through inspect's reader and judged."""
    import json

    from inspect_ai.log import read_eval_log

    from assay.cli import main
    from assay.lm import StubServer

    v3 = _with_format_version(_write_log(tmp_path / "v2.eval"), tmp_path / "v3.eval", 3)
    assert read_eval_log(str(v3)).version == 3  # the installed inspect_ai reads it

    items = load_inspect_log(v3, expected="scores.match.metadata.refusal")
    assert [(i.id, i.expected) for i in items] == [("a", 0), ("b", 1)]
    assert items[0].response == "It is sunny and 21C in Paris."

    config = {
        "name": "inspect-v3",
        "data": {"format": "inspect", "path": str(v3), "expected": "scores.match.metadata.refusal"},
        "judge": {
            "name": "j",
            "model": "openai/stub-model",
            "rubric": "Did it refuse?",
            "scale": "binary",
        },
        "tracking": {"enabled": False},
    }
    monkeypatch.chdir(tmp_path)
    with StubServer() as stub:
        config["judge"]["api_base"] = stub.base_url
        (tmp_path / "config.yaml").write_text(json.dumps(config), encoding="utf-8")
        assert main(["evaluate", "config.yaml", "--quiet", "--json"]) == 0
        assert stub.n_requests == 2
    counts = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["counts"]
    assert (counts["items"], counts["scored"], counts["paired"]) == (2, 2, 2), counts


def test_a_format_version_the_installed_inspect_refuses_names_it(tmp_path):
    """A JSON log of a version newer than the installed inspect_ai reads: one line naming the
    file, the field and the installed inspect_ai."""
    import json

    path = _write_log(tmp_path / "log.json")
    data = json.loads(path.read_text())
    data["version"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"version 99 is not supported by the installed inspect_ai"):
        load_inspect_log(path)


def _whole_read_items(path: Path, expected: str | None, monkeypatch) -> list:
    """The items of ``path`` built from one ``read_eval_log(..., resolve_attachments=True)``:
    every sample in memory at once, in the order of that read."""
    import inspect_ai.log as inspect_log

    import assay.data._inspect as reading
    from assay.scale import Scale

    whole = inspect_log.read_eval_log(str(path), resolve_attachments=True)
    several = any((s.epoch or 1) > 1 for s in whole.samples)
    with monkeypatch.context() as patch:
        patch.setattr(
            reading,
            "_samples",
            lambda file, first_epochs=False: (whole, several, iter(whole.samples)),
        )
        return reading.load_inspect_log(path, expected=expected, scale=Scale(kind="binary"))


def _the_run_streams(path: Path, expected: str | None, whole: list, tmp_path: Path) -> None:
    """A run's items of the log, from the spool file that goes with them, are ``whole`` (the
    items of a whole read): their dumps, order, ids and fingerprint."""
    import gc

    from assay.inputs import DataConfig, data_fingerprint, stream_items
    from assay.scale import Scale

    config = DataConfig.model_validate(
        {"format": "inspect", "path": str(path), "expected": expected}
    )
    stream = stream_items(config, Scale(kind="binary"), cache_dir=tmp_path / "hf")
    (spool,) = (tmp_path / "items").glob("inspect-*.jsonl")
    streamed = list(stream)
    assert [it.model_dump() for it in streamed] == [it.model_dump() for it in whole]
    assert [it.id for it in streamed] == [it.id for it in whole]
    assert data_fingerprint(stream) == data_fingerprint(whole)
    del stream, streamed
    gc.collect()
    assert not spool.exists()


@pytest.mark.parametrize("log", ["written", "agentharm"])
def test_an_eval_log_is_read_a_sample_at_a_time_into_a_file_the_run_streams(
    log, tmp_path, monkeypatch
):
    """A ``.eval`` log (a zip, a file per sample) gives the items a whole read of it gives, in
    its order, without ever being read whole: its header and sample list, then each sample as
    the one before it is taken. The run's items live in a spool file that goes with them."""
    import inspect_ai.log as inspect_log

    import assay.data._inspect as reading
    from assay.scale import Scale

    if log == "written":
        path, expected = _write_log(tmp_path / "epochs.eval", epochs=3), None
    else:
        path, expected = AGENTHARM, "scores.combined_scorer.value.refusal"
    whole = _whole_read_items(path, expected, monkeypatch)
    ids = [it.id for it in whole]
    assert len(set(ids)) == len(ids) > 2

    read_whole = inspect_log.read_eval_log

    def header_only(*args, **kw):
        assert kw.get("header_only"), "the log was read whole"
        return read_whole(*args, **kw)

    samples_read = []
    read_samples = inspect_log.read_eval_log_samples_by_id
    monkeypatch.setattr(inspect_log, "read_eval_log", header_only)
    monkeypatch.setattr(inspect_log, "read_eval_log_samples_by_id",
                        lambda path, keys, **kw: samples_read.extend(keys) or read_samples(path, keys, **kw))  # fmt: skip
    monkeypatch.setattr(reading, "SAMPLES_AT_ONCE", 2)
    items = reading.iter_inspect_log(path, expected=expected, scale=Scale(kind="binary"))
    first = next(items)
    assert (first.id, len(samples_read)) == (ids[0], 2)  # two samples read, so far
    assert [first.id, *(it.id for it in items)] == ids
    assert len(samples_read) == len(ids)

    _the_run_streams(path, expected, whole, tmp_path)


def _write_condensed_log(path: Path) -> Path:
    """A log whose samples are stored as an eval stores them, condensed: a model event's long
    input text an attachment and its messages pooled (``events_data``); and a tool result that
    is an attachment (what inspect_ai makes of an image; write_eval_log condenses nothing)."""
    from inspect_ai.event import ModelEvent
    from inspect_ai.log import condense_sample
    from inspect_ai.model import GenerateConfig, ModelOutput

    samples = []
    for sample_id in ("a", "b"):
        sample = _sample(sample_id, 1, sample_id == "b")
        sample.events = [
            ModelEvent(
                model="mockllm/model",
                input=[*sample.messages[:2], ChatMessageUser(content=LONG_TEXT)],
                tools=[],
                tool_choice="auto",
                config=GenerateConfig(),
                output=ModelOutput.from_content("mockllm/model", "Let me check."),
            )
        ]
        sample = condense_sample(sample)
        sample.messages[5] = ChatMessageTool(
            content="attachment://report", tool_call_id="c2", function="get_weather"
        )
        sample.attachments["report"] = f"sunny, 21C ({sample_id}) " + LONG_TEXT
        samples.append(sample)
    spec = _spec(EvalConfig())
    write_eval_log(EvalLog(eval=spec, status="success", samples=samples), str(path))
    return path


def _write_old_score_log(path: Path) -> Path:
    """A log whose samples hold one unnamed ``score`` (an old format) and whose results name
    the scorer: a whole read names the score after it."""
    import json

    from inspect_ai.log import EvalResults, EvalScore

    log = _write_log(path)
    header = json.loads(log.read_text())
    samples = header.pop("samples")
    for sample in samples:
        sample["score"] = sample.pop("scores")["match"]
    results = EvalResults(
        total_samples=2, completed_samples=2, scores=[EvalScore(name="match", scorer="match")]
    )
    data = {**header, "results": results.model_dump(mode="json"), "samples": samples}
    log.write_text(json.dumps(data))
    return log


@pytest.mark.parametrize("log", ["epochs", "attachments", "old score"])
def test_a_json_log_is_read_a_sample_at_a_time_into_a_file_the_run_streams(
    log, tmp_path, monkeypatch
):
    """A ``.json`` log (one JSON document) gives the items a whole read of it gives, in its
    order, without ever being read whole: inspect_ai reads its header only, ijson its samples'
    epochs, then a sample at a time — the first item comes when one sample is parsed."""
    import ijson
    import inspect_ai.log as inspect_log

    import assay.data._inspect as reading

    expected = "scores.match.metadata.refusal"
    if log == "epochs":
        path = _write_log(tmp_path / "epochs.json", epochs=3)
    elif log == "attachments":
        path = _write_condensed_log(tmp_path / "attachments.json")
        assert '"attachment://report"' in path.read_text()
        assert '"events_data"' in path.read_text()
    else:
        path = _write_old_score_log(tmp_path / "old.json")
    whole = _whole_read_items(path, expected, monkeypatch)
    ids = [it.id for it in whole]
    assert ids == (
        ["a#e1", "b#e1", "a#e2", "b#e2", "a#e3", "b#e3"] if log == "epochs" else ["a", "b"]
    )
    assert [it.expected for it in whole] == [0, 1] * (len(ids) // 2)
    if log == "attachments":
        assert whole[0].transcript[5].content == "sunny, 21C (a) " + LONG_TEXT

    read_whole = inspect_log.read_eval_log

    def header_only(*args, **kw):
        assert kw.get("header_only"), "the log was read whole"
        return read_whole(*args, **kw)

    parsed: Counter = Counter()
    parse = ijson.items

    def counted(file, prefix, **kw):
        for value in parse(file, prefix, **kw):
            parsed[prefix] += 1
            yield value

    monkeypatch.setattr(inspect_log, "read_eval_log", header_only)
    monkeypatch.setattr(ijson, "items", counted)
    items = reading.iter_inspect_log(path, expected=expected)
    first = next(items)
    assert first.id == ids[0]
    assert parsed == {"samples.item.epoch": len(ids), "samples.item": 1}
    rest = list(items)
    assert [it.model_dump() for it in [first, *rest]] == [it.model_dump() for it in whole]
    assert parsed == {"samples.item.epoch": len(ids), "samples.item": len(ids)}

    _the_run_streams(path, expected, whole, tmp_path)


def test_a_json_log_ijson_cannot_parse_is_read_whole(tmp_path, monkeypatch):
    """NaN and Infinity (which inspect_ai writes for such floats) and an integer beyond 64 bits
    are not JSON ijson parses; inspect_ai's whole read parses them, so such a log is read whole,
    to the same items."""
    import json

    path = _write_log(tmp_path / "nan.json", epochs=2)
    data = json.loads(path.read_text())
    data["samples"][1]["scores"]["match"]["metadata"]["confidence"] = float("nan")
    data["samples"][2]["metadata"]["limit"] = float("inf")
    data["samples"][3]["metadata"]["hash"] = 2**80
    path.write_text(json.dumps(data))
    assert "NaN" in path.read_text() and "Infinity" in path.read_text()
    expected = "scores.match.metadata.refusal"
    items = load_inspect_log(path, expected=expected)
    whole = _whole_read_items(path, expected, monkeypatch)
    assert [it.id for it in items] == ["a#e1", "b#e1", "a#e2", "b#e2"]
    assert [it.model_dump() for it in items] == [it.model_dump() for it in whole]
    assert items[3].meta["metadata"]["hash"] == 2**80


@pytest.mark.parametrize("fault", ["messages a number", "cut short"])
def test_a_json_log_with_a_bad_sample_is_one_line_naming_the_file(fault, tmp_path):
    """A sample that does not validate fails when it is reached, after the samples before it;
    a file cut short fails before the first item. Either is one line naming the file."""
    import json

    from assay.data import iter_inspect_log

    path = _write_log(tmp_path / "bad.json", epochs=2)
    if fault == "messages a number":
        data = json.loads(path.read_text())
        data["samples"][1]["messages"] = 7
        path.write_text(json.dumps(data))
    else:
        text = path.read_text()
        path.write_text(text[: len(text) * 2 // 3])
    items = iter_inspect_log(path)
    if fault == "messages a number":
        assert next(items).id == "a#e1"
    with pytest.raises(DataError, match="not a readable Inspect eval log") as err:
        next(items)
    assert str(err.value).startswith(f"{path}: ")
    assert "\n" not in str(err.value)


# -- samples that errored in the Inspect run -----------------------------------------------------
def _errored(sample_id: str, epoch: int) -> EvalSample:
    """A sample whose solver raised (``fail_on_error=False``): no output, no scores."""
    return EvalSample(
        id=sample_id,
        epoch=epoch,
        input="What is the weather in Paris?",
        target="sunny",
        messages=[ChatMessageUser(content="What is the weather in Paris?")],
        error=EvalError(
            message=f"RuntimeError('solver crashed on {sample_id}')",
            traceback="Traceback (most recent call last):\n  ...\nRuntimeError: crashed\n",
            traceback_ansi="",
        ),
    )


def _write_errored_log(path: Path, errored: tuple[str, ...], epochs: int = 1) -> Path:
    spec = _spec(EvalConfig(epochs=epochs, fail_on_error=False))
    rows = [
        _errored(sid, e) if sid in errored else _sample(sid, e, sid == "b")
        for e in range(1, epochs + 1)
        for sid in ("a", "b", "c")
    ]
    write_eval_log(EvalLog(eval=spec, status="success", samples=rows), str(path))
    return path


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_a_sample_that_errored_is_refused_not_judged_as_an_empty_response(tmp_path, suffix):
    """It was an item with response "" (judged, and counted in κ); with a reference path into
    its scores, the error was ``no 'match' under 'scores' (found: )``, not that it errored."""
    path = _write_errored_log(tmp_path / f"log{suffix}", ("b",), epochs=2)
    for expected in (None, "scores.match.metadata.refusal"):
        with pytest.raises(DataError) as err:
            load_inspect_log(path, expected=expected)
        assert str(err.value) == (
            f"{path}: 2 of 6 samples errored in the Inspect run (samples b#e1, b#e2; b#e1: "
            "RuntimeError('solver crashed on b')): an errored sample has no output or scores "
            "to judge; re-run them (inspect eval-retry) or set data.errored_samples: skip to "
            "leave them out, as Inspect's metrics do"
        )


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_samples_that_errored_are_left_out_and_counted_when_told(tmp_path, suffix):
    path = _write_errored_log(tmp_path / f"log{suffix}", ("b",))
    counts: dict[str, int] = {}
    errored: list[tuple[str, str]] = []
    items = load_inspect_log(
        path,
        expected="scores.match.metadata.refusal",
        errored_samples="skip",
        counts=counts,
        errored=errored,
    )
    assert [(i.id, i.expected) for i in items] == [("a", 0), ("c", 0)]
    assert all(i.response == "It is sunny and 21C in Paris." for i in items)
    assert counts == {"errored_samples": 1}
    assert errored == [("b", "RuntimeError('solver crashed on b')")]


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_a_log_whose_every_sample_errored_has_nothing_to_judge(tmp_path, suffix):
    path = _write_errored_log(tmp_path / f"log{suffix}", ("a", "b", "c"))
    with pytest.raises(DataError) as err:
        load_inspect_log(path, errored_samples="skip")
    assert str(err.value) == (
        f"{path}: every sample errored in the Inspect run (samples a, b, c; a: "
        "RuntimeError('solver crashed on a')): nothing to judge; re-run them (inspect eval-retry)"
    )


def test_an_eval_log_with_errored_samples_is_refused_before_a_sample_is_read(tmp_path, monkeypatch):
    """A .eval log's sample list says which samples errored: no sample is read to refuse it."""
    import inspect_ai.log

    path = _write_errored_log(tmp_path / "log.eval", ("c",))

    def no_samples(*args, **kw):
        raise AssertionError("a sample was read")

    monkeypatch.setattr(inspect_ai.log, "read_eval_log_samples_by_id", no_samples)
    with pytest.raises(DataError, match=r"1 of 3 samples errored .*\(sample c: Runtime"):
        load_inspect_log(path)


def test_an_evaluate_run_leaves_errored_samples_out_when_told_and_says_so(
    tmp_path, monkeypatch, capsys
):
    import json

    from assay.cli import main
    from assay.lm import StubServer

    path = _write_errored_log(tmp_path / "log.eval", ("b",))
    config = {
        "name": "inspect-errored",
        "data": {"format": "inspect", "path": str(path), "expected": "target"},
        "judge": {"name": "j", "model": "openai/stub-model", "rubric": "Sunny?", "scale": "binary"},
        "tracking": {"enabled": False},
    }
    monkeypatch.chdir(tmp_path)
    with StubServer() as stub:
        config["judge"]["api_base"] = stub.base_url
        config["judge"]["scale"] = {"kind": "binary", "labels": ["rainy", "sunny"]}
        (tmp_path / "config.yaml").write_text(json.dumps(config), encoding="utf-8")
        assert main(["evaluate", "config.yaml", "--quiet"]) == 2
        err = capsys.readouterr().err
        assert "1 of 3 samples errored in the Inspect run (sample b: " in err
        assert stub.n_requests == 0
        config["data"]["errored_samples"] = "skip"
        (tmp_path / "config.yaml").write_text(json.dumps(config), encoding="utf-8")
        assert main(["evaluate", "config.yaml"]) == 0
        # a and c are the same text: the second may be answered by the LM cache, as the calls
        # happen to overlap or not; the errored b is never sent
        assert 1 <= stub.n_requests <= 2
    out = capsys.readouterr().out
    assert "items 2 · scored 2" in out
    # which sample, and why: the errored samples were counted, not named
    said = (
        "left out: 1 sample that errored in the Inspect run (b: RuntimeError('solver crashed on "
        "b')) (data.errored_samples: skip)"
    )
    assert said in out
    run_dir = next((tmp_path / "runs").iterdir())
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["left_out"] == {"errored_samples": 1}
    assert metrics["errored_samples"] == ["b: RuntimeError('solver crashed on b')"]
    assert said in (run_dir / "report.md").read_text()
    assert "solver crashed on b" in (run_dir / "report.html").read_text()


def test_a_reference_path_into_a_sample_without_scores_says_they_are_empty(tmp_path):
    """A sample that was not scored (``inspect eval --no-score``): ``(found: )`` said nothing."""
    spec = _spec(EvalConfig())
    sample = _sample("a", 1, False).model_copy(update={"scores": None})
    path = tmp_path / "log.eval"
    write_eval_log(EvalLog(eval=spec, status="success", samples=[sample]), str(path))
    with pytest.raises(DataError) as err:
        load_inspect_log(path, expected="scores.match.value")
    assert str(err.value) == (
        f"{path}, field 'scores.match.value': sample 'a': no 'match' under 'scores' (it is empty)"
    )


def test_a_runner_with_no_line_for_left_out_samples_still_says_how_many(tmp_path, caplog):
    """``load_items`` called without ``notes`` — as selective, optimize and certify's re-check
    call it — left the errored samples out silently; it now says how many, in a warning."""
    import logging

    from assay.inputs import load_items
    from assay.inputs._config import DataConfig
    from assay.scale import Scale

    path = _write_errored_log(tmp_path / "log.eval", ("b",))
    data = DataConfig.model_validate(
        {"format": "inspect", "path": str(path), "expected": "target", "errored_samples": "skip"}
    )
    scale = Scale(kind="binary", labels=["rainy", "sunny"])
    with caplog.at_level(logging.WARNING):
        items = load_items(data, scale, cache_dir=tmp_path / "hf")
    assert len(items) == 2
    (said,) = [r.getMessage() for r in caplog.records if "errored" in r.getMessage()]
    assert said == f"{path}: left out: 1 sample that errored in the Inspect run " + (
        "(b: RuntimeError('solver crashed on b')) (data.errored_samples: skip)"
    )
    notes: dict = {}
    caplog.clear()
    load_items(data, scale, cache_dir=tmp_path / "hf", notes=notes)  # the run says it
    assert notes["left_out"] == {"errored_samples": 1} and not caplog.records
    assert notes["errored_samples"] == ["b: RuntimeError('solver crashed on b')"]


@pytest.mark.parametrize("status", ["cancelled", "started", "error"])
@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_a_log_whose_eval_did_not_finish_is_refused_or_counted_when_told(tmp_path, suffix, status):
    """A cancelled eval (or one still running, or failed) holds some of its samples: judged as
    it stood, it was "2 judgments" with nothing said of the samples that never ran."""
    spec = _spec(EvalConfig()).model_copy(
        update={"dataset": EvalDataset(name="demo", samples=5, sample_ids=None)}
    )
    path = tmp_path / f"log{suffix}"
    rows = [_sample(sid, 1, sid == "b") for sid in ("a", "b")]
    write_eval_log(EvalLog(eval=spec, status=status, samples=rows), str(path))
    with pytest.raises(DataError) as err:
        load_inspect_log(path, expected="scores.match.metadata.refusal")
    listed = "; its log lists 2 samples of the 5 it set out to run" if suffix == ".eval" else ""
    assert str(err.value) == (
        f"{path}: the Inspect eval did not finish (status {status!r}){listed}: judged as it "
        "stands, the samples that never ran would be missing without a word; set "
        "data.errored_samples: skip to judge the samples it holds (those that never ran are "
        "counted in the run's summary)"
    )
    counts: dict[str, int] = {}
    items = load_inspect_log(
        path, expected="scores.match.metadata.refusal", errored_samples="skip", counts=counts
    )
    assert [i.id for i in items] == ["a", "b"]
    assert counts == {"errored_samples": 0, "unfinished_samples": 3}
    from assay.inputs import left_out_line

    assert left_out_line(counts) == (
        "left out: 3 samples that never ran (the Inspect eval did not finish) "
        "(data.errored_samples: skip)"
    )


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_an_agent_that_submits_its_answer_with_a_tool_has_that_answer_as_response(tmp_path, suffix):
    """Inspect's ``basic_agent`` / ``react`` end with a ``submit`` tool call in a message with
    no text; the answer is the sample's completion, which Inspect's scorers score. The item's
    response was that last message's text — "" — so a response judge judged an empty answer
    (the messages below are what ``basic_agent`` on ``mockllm/model`` writes)."""
    from inspect_ai.model import ModelOutput

    submit = ToolCall(id="s1", function="submit", arguments={"answer": "The answer is 2"})
    sample = EvalSample(
        id=1,
        epoch=1,
        input="What is 1+1?",
        target="2",
        messages=[
            ChatMessageUser(content="What is 1+1?"),
            ChatMessageAssistant(
                content="", tool_calls=[ToolCall(id="a1", function="add", arguments={"x": 1})]
            ),
            ChatMessageTool(content="2", tool_call_id="a1", function="add"),
            ChatMessageAssistant(content="", tool_calls=[submit]),
            ChatMessageTool(content="The answer is 2", tool_call_id="s1", function="submit"),
        ],
        output=ModelOutput.from_content("mockllm/model", "The answer is 2"),
        scores={"includes": Score(value="C", answer="the answer is 2")},
    )
    chat = _sample("a", 1, False)  # a chat model's answer: its completion is its last message
    chat = chat.model_copy(
        update={
            "output": ModelOutput.from_content("mockllm/model", "It is sunny and 21C in Paris.")
        }
    )
    path = tmp_path / f"log{suffix}"
    write_eval_log(
        EvalLog(eval=_spec(EvalConfig()), status="success", samples=[sample, chat]), str(path)
    )
    agent, chat_item = load_inspect_log(path)
    assert agent.response == "The answer is 2"
    assert agent.transcript[-1].content == "The answer is 2"  # the submit call's result
    assert chat_item.response == "It is sunny and 21C in Paris."


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_a_search_the_models_provider_ran_is_a_tool_call_and_result_in_the_transcript(
    tmp_path, suffix
):
    """A provider-run tool (web search, code execution, MCP: a ``ContentToolUse`` part of the
    assistant message) was in no message of the transcript — the judge of an agent saw its
    answer and none of the searches it was drawn from. It is a tool call on that message and
    its result after it, as a tool the solver ran."""
    from inspect_ai._util.content import ContentToolUse

    search = ContentToolUse(
        tool_type="web_search",
        id="ws1",
        name="web_search",
        arguments='{"query": "weather Paris"}',
        result="Paris: sunny, 21C (météo)",
    )
    failed = ContentToolUse(
        tool_type="code_execution",
        id="ce1",
        name="",
        arguments="print(",
        result="",
        error="SyntaxError",
    )
    sample = EvalSample(
        id="a",
        epoch=1,
        input="What is the weather in Paris?",
        target="sunny",
        messages=[
            ChatMessageUser(content="What is the weather in Paris?"),
            ChatMessageAssistant(
                content=[
                    ContentText(text="Let me look."),
                    search,
                    failed,
                    ContentText(text="Sunny."),
                ]
            ),
        ],
    )
    path = tmp_path / f"log{suffix}"
    write_eval_log(EvalLog(eval=_spec(EvalConfig()), status="success", samples=[sample]), str(path))
    (item,) = load_inspect_log(path)
    user, assistant, result, error = item.transcript
    assert assistant.content == "Let me look.\nSunny."
    assert [(c.id, c.function, c.arguments) for c in assistant.tool_calls] == [
        ("ws1", "web_search", {"query": "weather Paris"}),
        ("ce1", "code_execution", "print("),
    ]
    assert (result.role, result.tool_call_id, result.content) == ("tool", "ws1", search.result)
    assert (error.tool_call_id, error.error) == ("ce1", "SyntaxError")
    assert item.response == "Let me look.\nSunny."
    assert "Paris: sunny, 21C (météo)" in render_transcript(item.transcript)


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_an_image_in_a_message_is_a_marker_not_nothing(tmp_path, suffix):
    """A user's picture (or audio, video, document) was dropped without a trace: the request
    "What is in this picture?" read as a question about nothing, the answer "A cat." as made
    up. The text says a part the judge cannot see was there."""
    from inspect_ai._util.content import ContentDocument, ContentImage, ContentReasoning

    picture = ContentImage(image="data:image/png;base64,iVBORw0KGgo=")
    sample = EvalSample(
        id="a",
        epoch=1,
        input="What is in this picture?",
        target="a cat",
        messages=[
            ChatMessageUser(content=[ContentText(text="What is in this picture?"), picture]),
            ChatMessageUser(content=[ContentDocument(document="/tmp/x.pdf", filename="x.pdf")]),
            ChatMessageAssistant(
                content=[ContentReasoning(reasoning="whiskers..."), ContentText(text="A cat.")]
            ),
        ],
    )
    path = tmp_path / f"log{suffix}"
    write_eval_log(EvalLog(eval=_spec(EvalConfig()), status="success", samples=[sample]), str(path))
    (item,) = load_inspect_log(path)
    assert item.request == "What is in this picture?\n[image not shown]"
    assert item.transcript[1].content == "[document x.pdf not shown]"
    assert item.response == "A cat."  # the model's reasoning is its private thoughts: left out


def test_a_sample_stopped_at_a_limit_says_so_in_its_meta(tmp_path):
    """A sample Inspect stopped at its message limit was judged with nothing saying its
    transcript was cut off there; ``meta["limit"]`` holds Inspect's record of it."""
    from inspect_ai.log import EvalSampleLimit

    cut = _sample("a", 1, False).model_copy(
        update={"limit": EvalSampleLimit(type="message", limit=10)}
    )
    path = tmp_path / "log.eval"
    write_eval_log(
        EvalLog(eval=_spec(EvalConfig()), status="success", samples=[cut, _sample("b", 1, False)]),
        str(path),
    )
    stopped, whole = load_inspect_log(path)
    assert stopped.meta["limit"] == {"type": "message", "limit": 10}
    assert "limit" not in whole.meta


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_first_epochs_of_an_unfinished_log_count_the_later_ones_apart(tmp_path, suffix):
    """``data.epochs: first`` on a cancelled eval of 5 samples × 2 epochs that ran 2 samples
    twice and one once: the later epochs it ran are left out as such, not counted again among
    the samples that never ran (10 planned − 3 first epochs judged − 2 later ones = 5)."""
    spec = _spec(EvalConfig(epochs=2)).model_copy(
        update={"dataset": EvalDataset(name="demo", samples=5, sample_ids=None)}
    )
    path = tmp_path / f"log{suffix}"
    rows = [_sample(sid, e, sid == "b") for sid in ("a", "b") for e in (1, 2)]
    rows.append(_sample("c", 1, False))
    write_eval_log(EvalLog(eval=spec, status="cancelled", samples=rows), str(path))
    counts: dict[str, int] = {}
    items = load_inspect_log(path, errored_samples="skip", counts=counts, epochs="first")
    assert [i.id for i in items] == ["a#e1", "b#e1", "c#e1"]
    assert counts == {"errored_samples": 0, "later_epochs": 2, "unfinished_samples": 5}


def test_the_left_out_line_names_the_first_five_errored_samples_each_with_its_error():
    from assay.inputs import left_out_line
    from assay.inputs._items import errored_names

    errored = [(f"s{k}", f"RuntimeError('crash {k}')") for k in range(7)]
    errored[0] = ("s0", "ValueError(" + "x" * 200 + "\n)")
    named = errored_names(errored)
    assert len(named) == 5 and named[1] == "s1: RuntimeError('crash 1')"
    assert len(named[0]) == len("s0: ") + 120 and named[0].endswith("...")
    line = left_out_line({"errored_samples": 7}, named)
    assert line.startswith("left out: 7 samples that errored in the Inspect run (s0: ValueError(")
    assert line.endswith("s4: RuntimeError('crash 4'), ...) (data.errored_samples: skip)")
    assert left_out_line({"errored_samples": 2}) == (
        "left out: 2 samples that errored in the Inspect run (data.errored_samples: skip)"
    )


def test_a_harness_run_names_the_errored_samples_it_left_out(tmp_path):
    from assay.lm import ScriptedEngine, register_script
    from assay.reliability import HarnessConfig, run_harness

    register_script("errored-judge", lambda: ScriptedEngine(respond={"verdict": "sunny"}))
    path = _write_errored_log(tmp_path / "log.eval", ("b",))
    config = HarnessConfig.model_validate(
        {
            "name": "errored",
            "data": {
                "format": "inspect",
                "path": str(path),
                "expected": "target",
                "errored_samples": "skip",
            },
            "scale": {"kind": "binary", "labels": ["rainy", "sunny"]},
            "judges": [{"name": "j", "model": "scripted:errored-judge"}],
            "tests": {"format_intraline": {}},
            "tracking": {"enabled": False},
            "output_dir": str(tmp_path / "runs"),
        }
    )
    summary = run_harness(config, workdir=tmp_path, progress=False).summary
    assert summary.seeds == 2
    assert (
        "left out: 1 sample that errored in the Inspect run (b: RuntimeError('solver crashed on "
        "b')) (data.errored_samples: skip)"
    ) in summary.notes
