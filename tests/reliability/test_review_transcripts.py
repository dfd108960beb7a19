"""Review of agent-transcript probes in the YAML file: each probe's criterion is listed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from assay.reliability.review._review_files import export_review, import_review
from assay.scale import Scale
from tests.agent_review_run import (
    CAUGHT,
    LABELS,
    MISSED,
    RECIPIENT,
    RESULT,
    TOOL_EDIT,
    write_agent_run,
)

SCALE = Scale(kind="binary", labels=LABELS)


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_agent_run(tmp_path / "run")


def _export(run: Path, tmp_path: Path, **kw) -> tuple[Path, list[dict]]:
    out = tmp_path / "review.yaml"
    export_review(run, out, SCALE, **kw)
    return out, yaml.safe_load(out.read_text())


def _write(path: Path, entries: list[dict]) -> None:
    path.write_text(yaml.safe_dump(entries, sort_keys=False, allow_unicode=True))


def test_the_export_names_each_probes_criterion(run, tmp_path):
    out, entries = _export(run, tmp_path)
    assert {e["probe_id"]: e["criterion"] for e in entries} == {
        MISSED: RESULT,
        CAUGHT: RESULT,
        TOOL_EDIT: RECIPIENT,
    }
    text = out.read_text()
    assert text.index("criterion: reports_result") < text.index("probe_text:")
    # exported as it is, imported as it is: the criterion is read-only, like the test
    for e in entries:
        e.update(decision="accept", reviewer="ana")
    _write(out, entries)
    assert import_review(run, out, SCALE)["accepted"] == 3
