"""docs/agent-transcripts.md shows a transcript item as the loader makes it and as a judge reads
it: both blocks are what the code produces from the repository's data today."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from assay.data import render_transcript
from assay.inputs import load_config, load_items
from assay.reliability import HarnessConfig

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "agent-transcripts.md"


def block(kind: str) -> tuple[str, str, str]:
    """The config, item id and fenced text that follow a ``<!-- transcript-KIND: ... -->``."""
    m = re.search(
        rf"<!-- transcript-{kind}: (\S+) (\S+) -->\n```\w+\n(.*?)\n```", PAGE.read_text(), re.S
    )
    assert m, f"no transcript-{kind} block in {PAGE.name}"
    return m.group(1), m.group(2), m.group(3)


def item(config: str, item_id: str):
    loaded = load_config(REPO / config, model=HarnessConfig)
    cfg = loaded[0] if isinstance(loaded, tuple) else loaded
    return next(it for it in load_items(cfg.data, cfg.scale) if it.id == item_id)


@pytest.mark.parametrize("kind", ["messages", "rendered"])
def test_the_page_s_transcript_is_what_the_code_makes(kind):
    config, item_id, shown = block(kind)
    it = item(config, item_id)
    if kind == "messages":
        made = [m.model_dump(mode="json", exclude_defaults=True) for m in it.transcript]
        assert [json.loads(line) for line in shown.splitlines()] == made
    else:
        assert shown == render_transcript(it.transcript)
