"""``assay schema KIND`` describes every field of every config a runner reads, nested models
included: a user reading the schema (or an editor completing a YAML file from it) learns what
each key does without opening the code."""

from __future__ import annotations

import json

import pytest

from assay.cli import main
from assay.cli.schema import _kinds
from assay.runners import BUILTIN

# assay's own configs (a plug-in runner another test registers describes its own fields)
KINDS = sorted(kind for kind, r in _kinds().items() if r.name in BUILTIN)


def undescribed(schema: dict) -> list[str]:
    out = []
    for where, node in [("", schema), *((f"{k}.", v) for k, v in schema.get("$defs", {}).items())]:
        for name, prop in (node.get("properties") or {}).items():
            if not (prop.get("description") or "").strip():
                out.append(f"{where}{name}")
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_every_field_of_every_config_has_a_description(kind, capsys):
    assert len(KINDS) >= 8
    assert main(["schema", kind]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema.get("properties"), kind
    assert undescribed(schema) == []
