"""What a model's answer must be to count: output fields typed ``Literal[...]`` (a judge's
verdict, a ToolEmu label) accept only their options, and an answer cut off by ``max_tokens`` is
reported as truncated, not as unparseable.

DSPy's own parsing is lenient with ``Literal`` fields in ways that turn junk into scores: ``True``
passes for ``1`` (``True == 1`` in Python) and ``"true"`` is read as ``1`` on a 1–6 scale. The
adapters here parse every ``Literal`` output field as text first and accept only

- one of the options, exactly, or up to case for text options (``"safe"`` for ``"Safe"``);
- for integer options, the integer as a number or its ASCII digit string (``2``, ``"2"``,
  ``2.0``; a full-width ``"２"`` or Arabic-Indic ``"٢"`` is no number here, though Python's
  ``int`` reads them);

anything else raises :class:`OffScaleOutput` (an unscored ``off_scale`` judgment). Booleans are
never integers here. An answer holding several JSON objects with output fields, or giving a
field twice in the chat format, is a ``parse_error``, not its first (or last) answer.

Inputs: a call without an input field its signature requires raises :class:`MissingInputs`
before anything is sent (DSPy only logs "Missing" and judges the incomplete prompt).

Truncation: :class:`AssayLM` notes the finish reasons of its latest call (a cache hit keeps the
original's); when a call ended at ``max_tokens`` and its answer does not parse — or its verdict
is off the scale, as a verdict cut mid-word is — the adapter raises :class:`TruncatedOutput`
(an unscored ``truncated`` judgment) instead, without DSPy's fallback call in JSON mode (a cut
answer would be cut again). A truncated answer whose fields all parse is kept. The finish
reasons are read where DSPy records a call in its history; within :func:`without_history` they
are still read, and the call is kept in no history (a run's memory does not grow with its
calls). DSPy's own ``disable_history`` would skip the reading too: a cut answer would pass for
a parse error.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections import Counter
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Literal, get_args, get_origin

import dspy
from dspy.adapters.chat_adapter import field_header_pattern
from dspy.adapters.utils import annotation_allows_none
from dspy.utils.exceptions import AdapterParseError

from assay.lm._cache import scoped
from assay.lm._ledger import ledger_tracker
from assay.lm._limits import on_the_wire
from assay.scale import INTEGER_TEXT

_LAST_FINISH: ContextVar[tuple[str, ...]] = ContextVar("assay_last_finish", default=())
_KEEP_HISTORY: ContextVar[bool] = ContextVar("assay_keep_history", default=True)


@contextlib.contextmanager
def without_history() -> Iterator[None]:
    """Calls of :class:`AssayLM` made inside are kept in no DSPy history (their finish
    reasons are still read)."""
    token = _KEEP_HISTORY.set(False)
    try:
        yield
    finally:
        _KEEP_HISTORY.reset(token)


@contextlib.contextmanager
def kept_nowhere() -> Iterator[None]:
    """Calls made inside kept in no DSPy history (:func:`without_history`) and their
    predictions in no DSPy trace: DSPy keeps the last 10,000 of each, with the item texts,
    while every call is in the run's files and ledger already — so a run's memory does not
    grow with its calls."""
    with dspy.context(trace=None), without_history():
        yield


class OffScaleOutput(ValueError):
    """The model answered a ``Literal`` field with a value that is not one of its options."""

    def __init__(self, field: str, value: object, options: tuple[object, ...]):
        self.field, self.value, self.options = field, value, options
        allowed = ", ".join(repr(o) for o in options)
        super().__init__(f"field '{field}': {value!r} is not one of the allowed values ({allowed})")


class MissingInputs(TypeError):
    """A program was called without input fields its signature requires (DSPy itself only
    logs "Missing" and sends a prompt without them)."""

    def __init__(self, missing: list[str], signature: type[dspy.Signature]):
        self.missing = missing
        names = ", ".join(repr(m) for m in missing)
        takes = ", ".join(signature.input_fields)
        super().__init__(
            f"missing input field{'s' if len(missing) > 1 else ''} {names} "
            f"(the signature's inputs: {takes}); nothing was sent to the model"
        )


def check_inputs(signature: type[dspy.Signature], inputs: dict[str, Any]) -> None:
    """Raise :class:`MissingInputs` when ``inputs`` leaves out a field of ``signature`` that
    has no default and does not allow None — what DSPy's ``Predict`` logs as "Missing"."""
    missing = [
        name
        for name, field in signature.input_fields.items()
        if name not in inputs and not annotation_allows_none(field.annotation)
    ]
    if missing:
        raise MissingInputs(missing, signature)


class TruncatedOutput(Exception):
    """The model's answer was cut off at ``max_tokens`` before it could be read."""

    def __init__(self, detail: str, max_tokens: int | None = None):
        limit = f" (max_tokens={max_tokens})" if max_tokens else ""
        super().__init__(f"the answer was truncated at the token limit{limit}: {detail}"[:1000])


class AssayLM(dspy.LM):
    """``dspy.LM`` that notes the finish reasons of its latest call, per thread of execution,
    for :class:`StrictJSONAdapter` / :class:`StrictChatAdapter` to tell truncation apart, and
    keys its answers in DSPy's response cache by its ``cache_scope`` too (the model it calls:
    endpoint, engine, spec — see :mod:`assay.lm._cache`)."""

    def _warn_zero_temp_rollout(self, temperature: Any, rollout_id: Any) -> None:
        """DSPy warns that a rollout id "has no effect" at temperature 0, but the rollout id is
        part of its cache key, so a retry (``--retry-unscored``) is a fresh request as meant
        (tests/evaluation/test_faults.py checks that it reaches the server): no warning."""

    def __init__(
        self,
        *args: Any,
        cache_scope: str | None = None,
        price: tuple[float, float] | None = None,
        **kwargs: Any,
    ):
        """``cache_scope``: the model it calls, part of every cache key; ``price``: the spec's
        USD per million (input, output) tokens, if it overrides the price map — what the call
        ledger prices this LM's answers at (never sent)."""
        super().__init__(*args, **kwargs)
        self.cache_scope = cache_scope
        self.price = price

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """A call made inside :func:`~assay.lm._limits.gate_calls` holds its slot for the whole
        call, unless the engine holds it around the exchange alone (``gates_wire``). Its
        answers are noted in the call ledger (:mod:`assay.lm._ledger`) as they come."""
        with ledger_tracker(self.model, self.price), scoped(self.cache_scope):
            if getattr(self._engine_spec, "gates_wire", False):
                return super().__call__(*args, **kwargs)
            with on_the_wire():
                return super().__call__(*args, **kwargs)

    async def acall(self, *args: Any, **kwargs: Any) -> Any:
        with ledger_tracker(self.model, self.price), scoped(self.cache_scope):
            return await super().acall(*args, **kwargs)

    def update_history(self, entry: dict[str, Any]) -> None:
        _LAST_FINISH.set(finish_reasons(entry.get("response")))
        if _KEEP_HISTORY.get():
            super().update_history(entry)


def finish_reasons(response: Any) -> tuple[str, ...]:
    """The finish reason of each choice of an lm15 ``Response`` (or several), or of a raw
    OpenAI-style completion."""
    if response is None:
        return ()
    if isinstance(response, list | tuple):
        return tuple(r for one in response for r in finish_reasons(one))
    reason = getattr(response, "finish_reason", None)
    if reason is not None:
        return (str(reason),)
    choices = response.get("choices") if isinstance(response, dict) else None
    choices = choices if choices is not None else getattr(response, "choices", None) or []
    out = []
    for choice in choices:
        value = choice.get("finish_reason") if isinstance(choice, dict) else None
        value = value if value is not None else getattr(choice, "finish_reason", None)
        if value is not None:
            out.append(str(value))
    return tuple(out)


def last_call_truncated() -> bool:
    """Whether the latest :class:`AssayLM` call in this thread of execution hit its token limit."""
    return "length" in _LAST_FINISH.get()


# -- strict Literal fields ------------------------------------------------------------------------
def literal_options(annotation: Any) -> tuple[Any, ...] | None:
    """The options of a ``Literal[...]`` annotation (None for any other type)."""
    return get_args(annotation) if get_origin(annotation) is Literal else None


@functools.lru_cache(maxsize=512)
def _as_text(signature: type[dspy.Signature]) -> type[dspy.Signature]:
    """``signature`` with every ``Literal`` output field typed ``str`` (parsed as written)."""
    for name, field in signature.output_fields.items():
        if literal_options(field.annotation) is not None:
            signature = signature.with_updated_fields(name, type_=str)
    return signature


def pick_option(text: str, options: tuple[Any, ...]) -> Any:
    """The option ``text`` names (see the module docstring), or ``KeyError``."""
    v = text.strip()
    if v.startswith(("Literal[", "str[")) and v.endswith("]"):
        v = v[v.find("[") + 1 : -1].strip()
    if len(v) > 1 and v[0] == v[-1] and v[0] in "\"'":
        v = v[1:-1]
    texts = [o for o in options if isinstance(o, str)]
    if v in texts:
        return v
    folded = [o for o in texts if o.lower() == v.lower()]
    if len(folded) == 1:
        return folded[0]
    ints = [o for o in options if isinstance(o, int) and not isinstance(o, bool)]
    if ints and INTEGER_TEXT.fullmatch(v) and int(float(v)) in ints:
        return int(float(v))
    bools = [o for o in options if isinstance(o, bool)]
    if bools and v.lower() in ("true", "false") and (v.lower() == "true") in bools:
        return v.lower() == "true"
    raise KeyError(v)


class _Strict:
    """The parsing rules above, mixed into DSPy's chat and JSON adapters."""

    def parse(self, signature: type[dspy.Signature], completion: str) -> dict[str, Any]:
        fields = super().parse(_as_text(signature), completion)  # type: ignore[misc]
        for name, field in signature.output_fields.items():
            options = literal_options(field.annotation)
            if options is None or fields.get(name) is None:
                continue
            try:
                fields[name] = pick_option(str(fields[name]), options)
            except KeyError:
                raise OffScaleOutput(name, fields[name], options) from None
        return fields

    def _call_postprocess(self, processed_signature, original_signature, outputs, lm, lm_kwargs):
        try:
            return super()._call_postprocess(  # type: ignore[misc]
                processed_signature, original_signature, outputs, lm, lm_kwargs
            )
        except (AdapterParseError, OffScaleOutput) as exc:
            if last_call_truncated():
                limit = lm_kwargs.get("max_tokens") or getattr(lm, "kwargs", {}).get("max_tokens")
                raise TruncatedOutput(str(exc).splitlines()[0], limit) from None
            raise

    def __call__(self, lm, lm_kwargs, signature, demos, inputs):
        check_inputs(signature, inputs)  # a prompt without one of its inputs is never sent
        _LAST_FINISH.set(())  # what an earlier call left is not this call's
        return super().__call__(lm, lm_kwargs, signature, demos, inputs)  # type: ignore[misc]

    async def acall(self, lm, lm_kwargs, signature, demos, inputs):
        check_inputs(signature, inputs)
        _LAST_FINISH.set(())
        return await super().acall(lm, lm_kwargs, signature, demos, inputs)  # type: ignore[misc]


def json_objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object written at the top level of ``text``, in order (prose, code fences and
    malformed fragments between them are skipped)."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    at = text.find("{")
    while at != -1:
        try:
            value, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            at = text.find("{", at + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        at = text.find("{", end)
    return found


class StrictJSONAdapter(_Strict, dspy.JSONAdapter):
    """``dspy.JSONAdapter`` with strict ``Literal`` fields and truncation reported. An answer
    that holds several JSON objects giving output fields (``{"verdict": 1}{"verdict": 2}``)
    is unparseable: DSPy would read the first and drop the rest, a verdict chosen for the model."""

    def parse(self, signature: type[dspy.Signature], completion: str) -> dict[str, Any]:
        answers = [o for o in json_objects(completion) if o.keys() & signature.output_fields]
        if len(answers) > 1:
            raise AdapterParseError(
                adapter_name=type(self).__name__,
                signature=signature,
                lm_response=completion,
                message=f"the answer holds {len(answers)} JSON objects, not one",
            )
        return super().parse(signature, completion)


class StrictChatAdapter(_Strict, dspy.ChatAdapter):
    """``dspy.ChatAdapter`` with strict ``Literal`` fields and truncation reported; its
    fallback to JSON mode (after an unparseable answer) is strict too. An answer that gives an
    output field twice (two ``[[ ## verdict ## ]]`` sections) is unparseable, as two JSON
    answers are: DSPy would keep the first."""

    def parse(self, signature: type[dspy.Signature], completion: str) -> dict[str, Any]:
        headers = Counter(
            m.group(1)
            for line in completion.splitlines()
            if (m := field_header_pattern.match(line.strip()))
        )
        repeated = [name for name in signature.output_fields if headers[name] > 1]
        if repeated:
            raise AdapterParseError(
                adapter_name=type(self).__name__,
                signature=signature,
                lm_response=completion,
                message=f"the answer gives '{repeated[0]}' {headers[repeated[0]]} times, not once",
            )
        return super().parse(signature, completion)

    def _make_json_adapter_fallback(self) -> dspy.JSONAdapter:
        return StrictJSONAdapter(
            use_native_function_calling=self.use_native_function_calling,
            parallel_tool_calls=self.parallel_tool_calls,
        )
