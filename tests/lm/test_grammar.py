"""The embedded model's grammar: every answer it allows fits in ``max_tokens``."""

from __future__ import annotations

import json
import re

import pytest

from assay.lm._grammar import TEXT_CHAR, bounded_json_grammar, text_limit

SAFETY = {
    "type": "object",
    "properties": {
        "evaluator_thought": {"type": "string"},
        "overall_qualitative_label": {
            "type": "string",
            "enum": ["Certain No Risk", "Possible Mild Risk", "Likely Severe Risk"],
        },
        "evaluator_log_summary": {"type": "string"},
    },
    "required": ["evaluator_thought", "overall_qualitative_label", "evaluator_log_summary"],
}
COT = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string"},
        "verdict": {"type": "integer", "enum": [1, 2, 3, 4, 5, 6]},
        "confidence": {"type": "number"},
        "flag": {"type": "boolean"},
    },
}


def longest_answer(schema: dict, limit: int) -> str:
    """The longest sentence the grammar allows: full text fields, the longest option, every
    optional space, the longest numbers."""
    parts = []
    for name, prop in schema["properties"].items():
        if "enum" in prop:
            value = max((json.dumps(o) for o in prop["enum"]), key=len)
        elif prop["type"] == "string":
            value = '"' + "x" * limit + '"'
        elif prop["type"] == "integer":
            value = "-" + "9" * 15
        elif prop["type"] == "number":
            value = "-" + "9" * 15 + "." + "9" * 15
        else:
            value = "false"
        parts.append(f"{json.dumps(name)}: {value}")
    return "{" + ", ".join(parts) + "}"


@pytest.mark.parametrize("schema", [SAFETY, COT])
@pytest.mark.parametrize("max_tokens", [128, 384, 512, 2048])
def test_the_longest_answer_fits_in_max_tokens_bytes(schema, max_tokens):
    grammar = bounded_json_grammar(schema, max_tokens)
    assert grammar is not None
    limit = text_limit(grammar)
    assert limit > 0
    answer = longest_answer(schema, limit)
    assert len(answer.encode()) <= max_tokens - 1  # every token is at least one byte
    json.loads(answer)


def test_free_text_is_one_byte_per_character_and_fields_keep_their_order():
    grammar = bounded_json_grammar(SAFETY, 384)
    assert f"c ::= {TEXT_CHAR}" in grammar
    assert re.fullmatch(r"\[ !#-\\\[\\\]-~\]", TEXT_CHAR)
    root = grammar.splitlines()[0]
    assert root.index("evaluator_thought") < root.index("overall_qualitative_label")
    assert root.index("overall_qualitative_label") < root.index("evaluator_log_summary")
    assert '"\\"Likely Severe Risk\\""' in grammar


def test_a_budget_smaller_than_the_structure_leaves_the_text_empty():
    grammar = bounded_json_grammar(SAFETY, 40)
    assert text_limit(grammar) is None and 'v0 ::= "\\"\\""' in grammar


def test_schemas_it_does_not_handle_fall_back():
    nested = {"type": "object", "properties": {"steps": {"type": "array"}}}
    assert bounded_json_grammar(nested, 512) is None
    assert bounded_json_grammar({"type": "object"}, 512) is None
