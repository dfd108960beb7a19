"""A GBNF grammar for the embedded model under which every answer is complete within its token
budget, so a verdict after a free-text field (a reasoning, ToolEmu's evaluator thought) is never
cut off by ``max_tokens``.

llama-cpp-python's own JSON-schema conversion honours ``maxLength``, but a JSON string
character may be a multi-byte UTF-8 character or a ``\\uXXXX`` escape (up to six tokens), and
the whitespace between fields is free (up to 21 characters at each place), so no ``maxLength``
bounds the answer in *tokens*. This grammar is built for the flat objects DSPy's JSON adapter
asks for (text, ``Literal`` options, numbers, booleans) with:

- free text limited to printable ASCII without ``"`` and ``\\`` (one byte each, so one token
  at most — no tokenizer has an empty token), at most ``N`` characters per text field;
- at most one space between tokens of the JSON structure;
- ``N`` = (budget − the longest structure: keys, punctuation, longest option, digits) / number
  of text fields, the budget being ``max_tokens`` less one token of slack.

So the longest answer the grammar allows has at most ``max_tokens`` − 1 tokens (when the
structure alone fits in that many bytes: ~110 for ToolEmu's evaluator). Anything else
(nested objects, arrays) gets ``None``: the caller falls back to the plain schema.
"""

from __future__ import annotations

import json
from typing import Any

TEXT_CHAR = r"[ !#-\[\]-~]"
"""Printable ASCII except ``"`` and ``\\``: one byte, needing no escape."""
_INTEGER = '"-"? [0-9]{1,15}'
_NUMBER = '"-"? [0-9]{1,15} ("." [0-9]{1,15})?'
_WIDTH = {"integer": 16, "number": 32, "boolean": 5, "null": 4}


def _literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _resolve(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = prop.get("$ref")
    if isinstance(ref, str):
        return defs.get(ref.rsplit("/", 1)[-1], {})
    return prop


def _value(prop: dict[str, Any]) -> tuple[str | None, int] | None:
    """``(GBNF of the value or None for free text, its longest width in bytes)``; None when the
    property is not a flat value this grammar handles."""
    options = prop.get("enum")
    if options is None and "const" in prop:
        options = [prop["const"]]
    if options:
        texts = [json.dumps(o) for o in options]
        return " | ".join(_literal(t) for t in texts), max(len(t) for t in texts)
    kind = prop.get("type")
    if kind == "string":
        return None, 2
    if kind == "integer":
        return _INTEGER, _WIDTH[kind]
    if kind == "number":
        return _NUMBER, _WIDTH[kind]
    if kind == "boolean":
        return '"true" | "false"', _WIDTH[kind]
    return None  # objects, arrays, unions: not handled


def bounded_json_grammar(schema: dict[str, Any], max_tokens: int) -> str | None:
    """GBNF for ``schema`` (an object of flat properties, all written in schema order) whose
    every sentence is at most ``max_tokens`` − 1 tokens long; None when the schema is not flat.
    A budget too small even for the structure leaves the text fields empty (the structure is
    then all that is generated: in practice fewer tokens than bytes, with no guarantee)."""
    props = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(props, dict) or not props:
        return None
    defs = schema.get("$defs") or schema.get("definitions") or {}
    rules: list[str] = []
    parts: list[str] = []
    texts: list[str] = []
    fixed = 2  # "{" and "}"
    for i, (name, raw) in enumerate(props.items()):
        value = _value(_resolve(raw, defs)) if isinstance(raw, dict) else None
        if value is None:
            return None
        grammar, width = value
        key = json.dumps(name)
        rule = f"v{i}"
        if grammar is None:
            texts.append(rule)
        else:
            rules.append(f"{rule} ::= {grammar}")
        parts.append(f'{_literal(key)} ":" " "? {rule}')
        fixed += len(key) + 2 + width + (2 if i else 0)  # ': ' and ', ' between fields
    per_text = max(0, (max_tokens - 1 - fixed) // len(texts)) if texts else 0
    text = f'"\\"" c{{0,{per_text}}} "\\""' if per_text else '"\\"\\""'
    rules += [f"{rule} ::= {text}" for rule in texts]
    root = 'root ::= "{" ' + ' "," " "? '.join(parts) + ' "}"'
    return "\n".join([root, *rules, f"c ::= {TEXT_CHAR}"]) + "\n"


def text_limit(grammar: str) -> int | None:
    """The character limit of the free-text fields of a grammar from :func:`bounded_json_grammar`."""
    marker = "c{0,"
    at = grammar.find(marker)
    return int(grammar[at + len(marker) : grammar.index("}", at)]) if at >= 0 else None
