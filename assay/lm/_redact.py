"""Secrets kept out of what a run stores and prints: an LM error's text is redacted before it
becomes an unscored judgment's ``error``, a failed probe's reason, a crashed case's record or a
line of the call ledger.

A server answering a wrong key often repeats it ("Incorrect API key provided: sk-..."), and
that text would otherwise reach ``judgments.jsonl``, report.html and the MLflow artifacts. What
is redacted: the value of every environment variable a model spec read its key from
(``api_key_env``, noted by :func:`note_key_variable` as it is read), of every variable whose
name says it holds a key (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``AWS_SECRET_ACCESS_KEY``,
``HF_TOKEN``… — the providers' variables LiteLLM reads), and anything shaped like a key:
``sk-…`` tokens and ``Bearer …`` credentials.

The variables noted are process-wide, like the ledger's sinks: the key is read where an LM is
built and the error is turned into text on a pool's thread, which share nothing else.
"""

from __future__ import annotations

import os
import re

REDACTED = "[redacted]"

_KEY_NAME = re.compile(r"(?:API_?KEY|_KEY|_TOKEN|_SECRET|_PASSWORD)$", re.IGNORECASE)
_KEY_SHAPE = re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}|\bBearer\s+[A-Za-z0-9._~+/=\-]+")
_MIN_LENGTH = 8  # a shorter value ("no-key", "1") is no secret, and would redact ordinary text
_noted: set[str] = set()


def note_key_variable(name: str) -> None:
    """The environment variable ``name`` holds a key a model is called with: its value is
    redacted from now on, whatever the variable is called."""
    _noted.add(name)


def _secrets() -> list[str]:
    """The values to redact, longest first (a key that contains another is redacted whole)."""
    values = {
        value
        for name, value in os.environ.items()
        if (name in _noted or _KEY_NAME.search(name)) and len(value.strip()) >= _MIN_LENGTH
    }
    return sorted({v.strip() for v in values}, key=len, reverse=True)


def redact(text: str) -> str:
    """``text`` with every key (see the module docstring) replaced by ``[redacted]``."""
    for secret in _secrets():
        text = text.replace(secret, REDACTED)
    return _KEY_SHAPE.sub(
        lambda m: "Bearer " + REDACTED if m.group().startswith("Bearer") else REDACTED, text
    )


def error_text(exc: BaseException, limit: int = 2000) -> str:
    """An LM failure as stored text: ``Type: message``, redacted, then cut to ``limit``
    characters (cut after redacting: never half a key)."""
    return redact(f"{type(exc).__name__}: {exc}")[:limit]
