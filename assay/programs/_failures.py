"""Which exceptions become an *unscored* judgment, and with which reason."""

from __future__ import annotations

from assay.types import UnscoredReason


def unscored_reason(exc: BaseException) -> UnscoredReason | None:
    """``parse_error`` / ``lm_error`` / ``timeout`` / ``off_scale`` for grading failures;
    ``None`` for anything else (a bug, which must keep its traceback)."""
    from dspy.utils.exceptions import AdapterParseError

    try:
        from dspy.utils.exceptions import LMError
    except ImportError:  # pragma: no cover - older DSPy
        LMError = ()  # type: ignore[assignment]
    from dspy.lm15 import LM15Error

    from assay.programs._judge import MissingLogprobs

    if isinstance(exc, AdapterParseError):
        return "parse_error"
    if isinstance(exc, MissingLogprobs):
        return "no_logprobs"
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, LMError | LM15Error):  # type: ignore[arg-type]
        return "lm_error"
    if isinstance(exc, ValueError) and "is not on the" in str(exc):
        return "off_scale"
    return None
