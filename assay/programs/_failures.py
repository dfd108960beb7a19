"""Which exceptions become an *unscored* judgment, and with which reason."""

from __future__ import annotations

from assay.lm import OffScaleOutput, TruncatedOutput
from assay.types import UnscoredReason


def unscored_reason(exc: BaseException) -> UnscoredReason | None:
    """``parse_error`` / ``truncated`` / ``off_scale`` / ``timeout`` / ``lm_error`` for grading
    failures, ``plugin_error`` for a plug-in judge kind's failing code (:class:`PluginFailed`);
    ``None`` for anything else (a bug, which must keep its traceback).

    A timeout is ``timeout`` however it arrives: Python's ``TimeoutError``, or a provider
    client's timeout (LiteLLM's / httpx's ``Timeout``) wrapped in DSPy's LM error."""
    from dspy.utils.exceptions import AdapterParseError

    try:
        from dspy.utils.exceptions import LMError
    except ImportError:  # pragma: no cover - older DSPy
        LMError = ()  # type: ignore[assignment]
    from dspy.lm15 import LM15Error

    from assay.programs._judge import MissingLogprobs, OffScaleVerdict
    from assay.programs.kinds import JudgeCallFailed

    if isinstance(exc, TruncatedOutput):
        return "truncated"
    if isinstance(exc, OffScaleOutput | OffScaleVerdict):
        return "off_scale"
    if isinstance(exc, AdapterParseError):
        return "parse_error"
    if isinstance(exc, MissingLogprobs):
        return "no_logprobs"
    if _is_timeout(exc):  # a JudgeCallFailed raised from a timeout too
        return "timeout"
    if isinstance(exc, JudgeCallFailed):
        return exc.reason  # type: ignore[return-value]
    if isinstance(exc, LMError | LM15Error):  # type: ignore[arg-type]
        return "lm_error"
    if isinstance(exc, ValueError) and "is not on the" in str(exc):
        return "off_scale"
    return None


def _is_timeout(exc: BaseException) -> bool:
    """``exc`` or an exception it was raised from is a timeout (by type or type name: the
    provider clients each have their own ``Timeout`` / ``APITimeoutError`` / ``ReadTimeout``)."""
    seen: set[int] = set()
    node: BaseException | None = exc
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        if isinstance(node, TimeoutError) or "timeout" in type(node).__name__.lower():
            return True
        node = node.__cause__ or node.__context__
    return False
