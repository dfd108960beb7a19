"""Helpers shared by assay's custom DSPy engines (the ``complete(Request) -> Response`` contract)."""

from __future__ import annotations

import json
from typing import Any

from dspy.lm15 import Request


def request_messages(request: Request) -> list[dict[str, str]]:
    """The request as plain ``{role, content}`` chat messages (system first)."""
    messages: list[dict[str, str]] = []
    if request.system is not None:
        system = (
            request.system
            if isinstance(request.system, str)
            else "".join(p.text for p in request.system)
        )
        messages.append({"role": "system", "content": system})
    messages.extend({"role": m.role, "content": m.text or ""} for m in request.messages)
    return messages


def response_schema(request: Request) -> dict[str, Any] | None:
    """The JSON schema the adapter asked for, if any (``response_format: json_schema``)."""
    fmt = request.config.response_format
    if not fmt:
        return None
    if fmt.get("type") == "json_schema":
        schema = (
            fmt.get("json_schema", fmt).get("schema") if "json_schema" in fmt else fmt.get("schema")
        )
        return dict(schema) if schema else {"type": "object"}
    return {"type": "object"}


def to_plain(value: Any) -> Any:
    """lm15's frozen JSON containers → plain dicts and lists."""
    return json.loads(
        json.dumps(value, default=lambda o: dict(o) if hasattr(o, "items") else list(o))
    )
