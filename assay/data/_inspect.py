"""Inspect AI eval logs (``.eval`` / ``.json``) read with ``inspect_ai.log`` into transcript Items,
a few samples at a time: a ``.eval`` log through inspect_ai's sample reads, a ``.json`` log a
sample at a time with ijson (two passes: the samples' epochs, then the samples)."""

from __future__ import annotations

import contextlib
import json
import re
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, NamedTuple

from assay.data._common import as_int_label, check_file, is_missing, jsonable, resolve_dotted
from assay.data._transcript import with_steps
from assay.errors import DataError
from assay.scale import Scale
from assay.types import Item, Message, ToolCall

_MEDIA = ("image", "audio", "video", "document")
"""Content parts a text judge cannot read: each is a marker in the text, where it was."""


def _text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a multi-part list, with
    ``[image not shown]`` (audio, video, document) where a part a text judge cannot read was —
    else a question about a picture read as a question about nothing. The model's reasoning
    parts are left out, as its private thoughts are; a provider-run tool is a tool call
    (:func:`_messages`)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content:
        kind = getattr(part, "type", None)
        if isinstance(part, str):
            parts.append(part)
        elif kind == "text":
            parts.append(getattr(part, "text", "") or "")
        elif kind in _MEDIA:
            name = getattr(part, "filename", None)
            parts.append(f"[{kind}{' ' + name if name else ''} not shown]")
    return "\n".join(p for p in parts if p)


def _tool_call(call: Any) -> ToolCall:
    """An inspect_ai ``ToolCall`` as an assay ToolCall with its full arguments."""
    arguments = getattr(call, "arguments", None)
    return ToolCall(
        id=getattr(call, "id", None),
        function=str(getattr(call, "function", "")),
        arguments=jsonable(arguments) if isinstance(arguments, Mapping) else (arguments or {}),
    )


def _messages(message: Any) -> list[Message]:
    """An inspect_ai ``ChatMessage`` as assay Messages: one, and for each tool the model's
    provider ran itself within an assistant message (a ``ContentToolUse`` part: web search,
    code execution, an MCP call) that call on the message and its result after it, as a tool
    the solver ran is shown — else the agent's searches and their results were in no message."""
    role = message.role
    if role == "tool":
        error = getattr(message, "error", None)
        return [
            Message(
                role="tool",
                content=_text(message.content),
                tool_call_id=getattr(message, "tool_call_id", None),
                function=getattr(message, "function", None),
                error=getattr(error, "message", None) or (str(error) if error else None),
            )
        ]
    calls = [_tool_call(c) for c in getattr(message, "tool_calls", None) or []]
    used = [p for p in _parts(message.content) if getattr(p, "type", None) == "tool_use"]
    results = []
    for part in used:
        function = str(part.name or part.tool_type)
        calls.append(ToolCall(id=part.id, function=function, arguments=_tool_use_arguments(part)))
        results.append(
            Message(
                role="tool",
                content=part.result or "",
                tool_call_id=part.id,
                function=function,
                error=part.error or None,
            )
        )
    return [Message(role=role, content=_text(message.content), tool_calls=calls), *results]


def _parts(content: Any) -> list[Any]:
    """The parts of a message's content (none for a plain string)."""
    return [] if content is None or isinstance(content, str) else list(content)


def _tool_use_arguments(part: Any) -> dict[str, Any] | str:
    """A ``ContentToolUse``'s arguments (JSON text) as a JSON object where they are one."""
    try:
        value = json.loads(part.arguments or "{}")
    except json.JSONDecodeError:
        return part.arguments
    return value if isinstance(value, dict) else part.arguments


def _scores(sample: Any) -> dict[str, Any]:
    """Each scorer's ``value``, ``answer``, ``explanation`` and ``metadata`` as plain JSON."""
    return {
        name: {
            "value": jsonable(score.value),
            "answer": score.answer,
            "explanation": score.explanation,
            "metadata": jsonable(score.metadata or {}),
        }
        for name, score in (sample.scores or {}).items()
    }


def _unsupported(version: Any, path: Path) -> DataError:
    """The installed ``inspect_ai`` cannot read this log format version (a newer one)."""
    from inspect_ai import __version__ as installed

    return DataError(
        f"Inspect log format version {version} is not supported by the installed "
        f"inspect_ai {installed} (a newer inspect_ai may read it)",
        path=path,
        field="version",
    )


def _read_log(path: Path, **options: Any) -> Any:
    """``inspect_ai.log.read_eval_log`` with every failure turned into one DataError. Which
    format versions are readable is the installed inspect_ai's decision, not assay's: what it
    reads becomes its typed ``EvalLog``, the one shape this module reads from."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError as exc:  # an optional dependency: pip install 'assay[inspect]'
        raise DataError(f"reading Inspect logs needs inspect_ai ({exc})", path=path) from None
    if path.suffix.lower() == ".eval" and not zipfile.is_zipfile(path):
        raise DataError(
            "not a readable Inspect eval log (truncated, or not a zip archive)", path=path
        )
    with _read_errors(path):
        return read_eval_log(str(path), resolve_attachments=True, **options)


@contextlib.contextmanager
def _read_errors(path: Path) -> Iterator[None]:
    """inspect_ai's zip, JSON, pydantic and OS errors alike as one DataError naming ``path``,
    with the reason the error was raised from: inspect_ai's header read of a ``.json`` log
    raises "Unable to read log file" from the reason (a format version it refuses, bad JSON)."""
    try:
        yield
    except Exception as exc:
        reason: BaseException = exc
        while reason.__cause__ is not None:
            reason = reason.__cause__
        detail = str(reason).strip().splitlines()[0] if str(reason).strip() else ""
        version = re.search(r"read version (\S+) of log format", detail)
        if version:
            raise _unsupported(version.group(1), path) from None
        raise DataError(
            f"not a readable Inspect eval log ({type(reason).__name__}{': ' + detail if detail else ''})",
            path=path,
        ) from None


def _in_log_order(key: tuple[Any, Any]) -> tuple[int, str]:
    """inspect_ai's order of a whole log's samples: by epoch, then id (a number zero-padded)."""
    sample_id, epoch = key
    return (epoch or 1, sample_id if isinstance(sample_id, str) else str(sample_id).zfill(20))


SAMPLES_AT_ONCE = 256  # a .eval log's samples read together (one look-up of the archive's index)


class _Log(NamedTuple):
    """A log opened for reading: its header, whether it holds several epochs, its samples (an
    iterator, in inspect_ai's order of a whole log) and, where the log lists them without
    reading the samples (a ``.eval`` log's sample list), the item ids and errors of the
    samples that errored and how many samples it lists (else None and 0: the errored samples
    are found as the samples are read)."""

    header: Any
    several_epochs: bool
    samples: Iterator[Any]
    errored: list[tuple[str, str]] | None = None  # (item id, error), where listed
    total: int = 0  # the samples listed (with ``errored``)
    later: int = 0  # the later epochs listed and left out (first epochs only)


def _samples(path: Path, first_epochs: bool = False) -> _Log:
    """The log opened for reading. A ``.eval`` log (a zip archive, a file per sample) is read a
    few samples at a time (:data:`SAMPLES_AT_ONCE`) — its header and sample list first (which
    says which samples errored), the next samples when those before them are done with; a
    ``.json`` log (one JSON document) a sample at a time (:func:`_json_samples`, which says
    when it reads one whole). No step holds every transcript. ``first_epochs``: a ``.eval``
    log's later epochs are neither read nor listed (counted in ``later``); a ``.json`` log's
    are read and left to the caller."""
    if path.suffix.lower() != ".eval":
        return _Log(*_json_samples(path))
    from inspect_ai.log import read_eval_log_sample_summaries, read_eval_log_samples_by_id

    header = _read_log(path, header_only=True)
    with _read_errors(path):
        summaries = read_eval_log_sample_summaries(str(path))
    listed = sorted({(s.id, s.epoch) for s in summaries}, key=_in_log_order)
    epochs = getattr(header.eval.config, "epochs", None) or 1
    several = epochs > 1 or any((epoch or 1) > 1 for _, epoch in listed)
    keys = [k for k in listed if (k[1] or 1) == 1] if first_epochs else listed
    why = {(s.id, s.epoch): s.error for s in summaries if s.error}
    errored = [(_item_id(i, e, several), why[i, e]) for i, e in keys if (i, e) in why]

    def read() -> Iterator[Any]:
        for start in range(0, len(keys), SAMPLES_AT_ONCE):
            with _read_errors(path):
                samples = read_eval_log_samples_by_id(
                    str(path), keys[start : start + SAMPLES_AT_ONCE], resolve_attachments=True
                )
            yield from samples

    return _Log(header, several, read(), errored, len(keys), len(listed) - len(keys))


def _json_samples(path: Path) -> tuple[Any, bool, Iterator[Any]]:
    """A ``.json`` log read a sample at a time with ijson: its header (inspect_ai's own header
    read, which refuses a format version it cannot read), a first pass for the samples' epochs
    (whether item ids carry the epoch has to be known before the first item), then a second
    for the samples in the file's order, which is a whole read's (it does not sort them). A log
    ijson cannot parse is read whole (:func:`_last_epoch`)."""
    header = _read_log(path, header_only=True)
    last_epoch = _last_epoch(path)
    if last_epoch is None:
        log = _read_log(path)
        samples = log.samples or []
        return log, any((s.epoch or 1) > 1 for s in samples), iter(samples)
    return header, last_epoch > 1, _json_sample_reads(path, header)


def _last_epoch(path: Path) -> int | None:
    """The highest epoch of a ``.json`` log's samples, from a pass over the whole file that
    holds one number at a time; None if ijson cannot parse the file — NaN or Infinity (which
    inspect_ai writes for such floats), an integer beyond 64 bits or a number beyond a double,
    or not JSON — for inspect_ai's whole read (pydantic's parser) to read or to say what is
    wrong. The pass parses every number as the sample pass does, so that pass meets none."""
    import ijson

    with _read_errors(path):
        try:
            with path.open("rb") as f:
                epochs = ijson.items(f, "samples.item.epoch", use_float=True)
                return max((epoch or 1 for epoch in epochs), default=1)
        except ijson.JSONError:
            return None


def _json_sample_reads(path: Path, header: Any) -> Iterator[Any]:
    """A ``.json`` log's samples one at a time, each as a whole read gives it
    (:func:`_as_read`). ``use_float``: numbers as pydantic's parser gives them, not Decimals."""
    import ijson

    with _read_errors(path), path.open("rb") as f:
        for raw in ijson.items(f, "samples.item", use_float=True):
            yield _as_read(raw, header)


def _as_read(raw: Any, header: Any) -> Any:
    """One parsed sample as ``read_eval_log(..., resolve_attachments=True)`` gives it: validated
    as its reader validates a log (deserializing: no fresh message or event ids), an old log's
    single unnamed score named after the log's first scorer (as ``EvalLog`` does), and its
    attachments resolved."""
    from inspect_ai._util.constants import get_deserializing_context
    from inspect_ai.log import EvalSample, resolve_sample_attachments
    from inspect_ai.log._log import SCORER_PLACEHOLDER

    sample = EvalSample.model_validate(raw, context=get_deserializing_context())
    scorers = header.results.scores if header.results else None
    if sample.scores and SCORER_PLACEHOLDER in sample.scores and scorers:
        sample.scores[scorers[0].name] = sample.scores.pop(SCORER_PLACEHOLDER)
    return resolve_sample_attachments(sample, True)


def load_inspect_log(
    path: str | Path,
    *,
    expected: str | None = None,
    scale: Scale | None = None,
    missing_expected: Literal["keep", "error"] = "error",
    errored_samples: Literal["error", "skip"] = "error",
    counts: dict[str, int] | None = None,
    epochs: Literal["all", "first"] = "all",
    errored: list[tuple[str, str]] | None = None,
) -> list[Item]:
    """One Item per sample and epoch of an Inspect eval log, with the full transcript.

    ``request`` is the first user message (else the sample's input); ``response`` the sample's
    completion (``output.completion``: what Inspect's scorers score — for an agent that submits
    with a tool, the submitted answer), else the last assistant message's text.

    ``id`` is the sample id, or ``<id>#e<epoch>`` when the log has several epochs. ``meta`` holds
    ``metadata`` (the sample's), ``scores`` (per scorer: value, answer, explanation, metadata),
    ``task``, ``model``, ``sample_id``, ``epoch``, ``target`` and, for a sample Inspect stopped at a
    limit (messages, tokens, time…), ``limit`` (its ``type``, ``limit`` and ``reason``: the
    transcript is cut off there). ``expected`` is a dotted path
    into ``meta`` (e.g. ``scores.combined_scorer.value.refusal``) whose value is the reference
    label, read with ``scale.coerce`` (its label names first; without a scale, an integer or a
    boolean as 0/1); without it ``expected`` is None. A path that does not resolve is a
    DataError; an empty value is one too, naming the samples, unless ``missing_expected`` is
    ``"keep"`` (the item has no reference).

    A sample that errored in the Inspect run (``sample.error``: no output, no scores — Inspect
    leaves it out of its own metrics) is never an item: the log is a DataError naming the
    samples that errored and why, or with ``errored_samples="skip"`` they are left out,
    counted in ``counts["errored_samples"]`` (when a dict is passed) and listed in ``errored``
    (when a list is passed: each sample's item id and its error, one line).

    ``epochs="first"`` keeps each sample's first epoch alone (its id still ``<id>#e1``), the
    later ones left out and counted in ``counts["later_epochs"]``.
    """
    return list(
        iter_inspect_log(
            path,
            expected=expected,
            scale=scale,
            missing_expected=missing_expected,
            errored_samples=errored_samples,
            counts=counts,
            epochs=epochs,
            errored=errored,
        )
    )


def iter_inspect_log(
    path: str | Path,
    *,
    expected: str | None = None,
    scale: Scale | None = None,
    missing_expected: Literal["keep", "error"] = "error",
    errored_samples: Literal["error", "skip"] = "error",
    counts: dict[str, int] | None = None,
    epochs: Literal["all", "first"] = "all",
    errored: list[tuple[str, str]] | None = None,
) -> Iterator[Item]:
    """:func:`load_inspect_log` an item at a time (the log read a few samples at a time).
    Samples that errored are an error before the first item where the log lists them (a
    ``.eval`` log's sample list), else once every sample is read, as empty reference labels
    are; each names the first five. With ``errored_samples="skip"``, ``errored`` (a list,
    when given) receives each sample left out: its item id and its error, one line."""
    file = check_file(path)
    log = _Log(*_samples(file, first_epochs=epochs == "first"))
    status = getattr(log.header, "status", "success")
    planned = _planned(log.header)
    if status != "success" and errored_samples == "error":
        # before the first sample; the log's samples counted whatever data.epochs leaves out
        raise _unfinished_error(file, status, planned, log.total + log.later)
    if log.errored and (errored_samples == "error" or len(log.errored) == log.total):
        raise _errored_error(file, log.errored, log.total)  # before the first sample is read
    run_epochs = getattr(log.header.eval.config, "epochs", None) or 1
    several = run_epochs > 1 or log.several_epochs
    seen: set[str] = set()
    unlabelled: list[str] = []
    failed: list[tuple[str, str]] = []
    later = log.later
    for sample in log.samples:
        item_id = _item_id(sample.id, sample.epoch, several)
        if epochs == "first" and (sample.epoch or 1) > 1:
            later += 1  # a .json log's: read, not judged
            continue
        if item_id in seen:
            raise DataError(f"duplicate sample '{item_id}'", path=file)
        seen.add(item_id)
        if sample.error is not None:  # no output, no scores: not a response to judge
            failed.append((item_id, _error_text(sample.error)))
            continue
        item = _item(sample, item_id, log.header, expected, scale, file)
        if expected is not None and item.expected is None:
            unlabelled.append(item_id)
        yield item
    if not seen and not later:
        raise DataError(
            "the log has no samples (was it written with log_samples=False?)", path=file
        )
    if failed and (errored_samples == "error" or len(failed) == len(seen)):
        raise _errored_error(file, failed, len(seen))
    if errored is not None:
        errored.extend(failed)
    if counts is not None:
        counts["errored_samples"] = len(failed)
        if later:
            counts["later_epochs"] = later
        if status != "success":  # judged as it stands (data.errored_samples: skip)
            if planned is not None:
                counts["unfinished_samples"] = max(0, planned - len(seen) - later)
            else:
                counts["unfinished_log"] = 1
    if unlabelled and missing_expected == "error":
        shown = ", ".join(unlabelled[:5]) + (", ..." if len(unlabelled) > 5 else "")
        raise DataError(
            f"empty reference label in {len(unlabelled)} of {len(seen) - len(failed)} samples "
            f"(samples {shown}); set data.missing_expected: keep to judge them without a "
            "reference",
            path=file,
            field=expected,
        )


def _item_id(sample_id: Any, epoch: int | None, several: bool) -> str:
    """A sample's item id: its id, with ``#e<epoch>`` where the log has several epochs."""
    return f"{sample_id}#e{epoch}" if several else f"{sample_id}"


def _planned(header: Any) -> int | None:
    """How many samples the eval set out to run (its data set's samples, or the ids it was
    limited to, times its epochs, at most its limit); None where the log does not say."""
    dataset, config = header.eval.dataset, header.eval.config
    ids = getattr(dataset, "sample_ids", None)
    samples = len(ids) if ids else getattr(dataset, "samples", None)
    if samples is None:
        return None
    limit = getattr(config, "limit", None)
    if isinstance(limit, int):
        samples = min(samples, limit)
    elif isinstance(limit, tuple | list) and len(limit) == 2:
        samples = min(samples, max(0, limit[1] - limit[0]))
    return samples * (getattr(config, "epochs", None) or 1)


def _unfinished_error(file: Path, status: str, planned: int | None, listed: int) -> DataError:
    """The one-line error for a log whose eval did not finish (cancelled, failed, or still
    running when it was copied): its samples are not the eval's."""
    held = f"; its log lists {listed} samples" if listed else ""
    of = f" of the {planned} it set out to run" if planned is not None and listed else ""
    return DataError(
        f"the Inspect eval did not finish (status {status!r}){held}{of}: judged as it stands, "
        "the samples that never ran would be missing without a word; set "
        "data.errored_samples: skip to judge the samples it holds (those that never ran are "
        "counted in the run's summary)",
        path=file,
    )


def _error_text(error: Any) -> str:
    """An ``EvalError``'s message on one line (``RuntimeError('boom')``), at most 200 characters."""
    text = " ".join(str(getattr(error, "message", None) or error).split())
    return text if len(text) <= 200 else text[:199] + "…"


def _errored_error(file: Path, errored: list[tuple[str, Any]], total: int) -> DataError:
    """The one-line error for samples that errored in the Inspect run: how many of ``total``,
    the first five, the first one's error, and what to do."""
    shown = ", ".join(i for i, _ in errored[:5]) + (", ..." if len(errored) > 5 else "")
    first, why = errored[0]
    which = f"samples {shown}; {first}: " if len(errored) > 1 else f"sample {first}: "
    which += _error_text(why)
    if len(errored) == total:
        return DataError(
            f"every sample errored in the Inspect run ({which}): nothing to judge; re-run them "
            "(inspect eval-retry)",
            path=file,
        )
    return DataError(
        f"{len(errored)} of {total} samples errored in the Inspect run ({which}): an errored "
        "sample has no output or scores to judge; re-run them (inspect eval-retry) or set "
        "data.errored_samples: skip to leave them out, as Inspect's metrics do",
        path=file,
    )


def _item(
    sample: Any, item_id: str, log: Any, expected: str | None, scale: Scale | None, file: Path
) -> Item:
    """One sample as an Item: its transcript, request and response, meta and reference."""
    transcript = with_steps(m for message in sample.messages or [] for m in _messages(message))
    users = [m for m in transcript if m.role == "user"]
    assistants = [m for m in transcript if m.role == "assistant"]
    if users:
        request = users[0].content
    else:
        request = sample.input if isinstance(sample.input, str) else ""
    # the solver's completion, as Inspect's scorers read it: an agent that submits its answer
    # with a tool (basic_agent, react) ends on a tool call whose message may have no text
    response = getattr(sample.output, "completion", "") or ""
    if not response.strip() and assistants:
        response = assistants[-1].content
    meta: dict[str, Any] = {
        "metadata": jsonable(sample.metadata or {}),
        "scores": _scores(sample),
        "task": log.eval.task,
        "model": log.eval.model,
        "sample_id": sample.id,
        "epoch": sample.epoch,
        "target": jsonable(sample.target),
    }
    if sample.limit is not None:  # cut off by a message, token, time … limit: said, not unsaid
        meta["limit"] = jsonable(sample.limit.model_dump(exclude_none=True))
    label: int | None = None
    if expected is not None:
        value, problem = resolve_dotted(meta, expected)
        if problem is not None:
            raise DataError(f"sample '{item_id}': {problem}", path=file, field=expected)
        if not is_missing(value):
            try:
                label = scale.coerce(value) if scale is not None else _unscaled(value)
            except ValueError as exc:
                raise DataError(f"sample '{item_id}': {exc}", path=file, field=expected) from None
    return Item(
        id=item_id,
        request=request,
        response=response,
        transcript=transcript,
        expected=label,
        meta=meta,
    )


def _unscaled(value: object) -> int:
    """A reference read without a scale: an integer, or a JSON boolean of the log (an Inspect
    score's metadata holds typed values: ``refusal: false`` is the binary 0), never a
    true/false word in text, which only a scale places (:func:`as_int_label`)."""
    return int(value) if isinstance(value, bool) else as_int_label(value)
