"""The abstained items of a ``selective apply`` run in a YAML review file, without a browser:
``assay review export RUN`` lists them, a person fills in verdicts, ``assay review import`` records
them through the same queue as the review app — every entry checked first (one line naming the
file, the entry and the field; nothing written), a verdict given since the export refused — and
a re-run of ``apply`` merges them into ``verdicts.jsonl`` (checked there). The run is the stub cascade of
tests/decisions/test_selective.py (abstaining on i108 and i111)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from assay.cli import main
from tests.decisions.test_selective import finished_cascade


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """The run directory of a finished stub cascade's ``apply``."""
    return finished_cascade(tmp_path_factory.mktemp("abstained"))[1]


def _export(run_dir: Path, capsys) -> tuple[Path, list[dict]]:
    out = run_dir / "review.yaml"
    assert main(["review", "export", str(run_dir), "-o", str(out)]) == 0
    assert "2 abstained items written to" in capsys.readouterr().out
    return out, yaml.safe_load(out.read_text())


def _human_verdicts(run_dir: Path) -> str:
    path = run_dir / "human_verdicts.jsonl"
    return path.read_text() if path.exists() else ""


def _refused(capsys, run_dir: Path, file: Path) -> str:
    before = _human_verdicts(run_dir)
    assert main(["review", "import", str(run_dir), str(file)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    assert _human_verdicts(run_dir) == before  # nothing written
    return err[0]


def test_export_fill_in_and_import(finished, tmp_path, capsys):
    run_dir = tmp_path / finished.name
    shutil.copytree(finished, run_dir)
    out, entries = _export(run_dir, capsys)
    assert [e["item_id"] for e in entries] == ["i108", "i111"]
    assert {e["status"] for e in entries} == {"pending"} and {e["seen"] for e in entries} == {0}
    assert all(e["stages"] and e["verdict"] == "" for e in entries)
    assert "# Abstained items of a selective run (2 listed)" in out.read_text()
    entries[0].update(verdict="True", reviewer="ana", note="clearly harmful")
    out.write_text(yaml.safe_dump(entries, sort_keys=False))
    assert main(["review", "import", str(run_dir), str(out)]) == 0
    assert "recorded 1 verdicts (1 entries left blank)" in capsys.readouterr().out
    (record,) = [json.loads(x) for x in (run_dir / "human_verdicts.jsonl").read_text().splitlines()]
    assert (record["item_id"], record["label"], record["reviewer"]) == ("i108", "True", "ana")
    # the same file again: i108 got a verdict since it was written
    line = _refused(capsys, run_dir, out)
    assert f"{out}, row 1, field 'seen'" in line and "got a verdict since" in line
    assert "by ana at " in line
    # the decided item is left out of a new export unless --all
    assert main(["review", "export", str(run_dir), "-o", str(out)]) == 0
    assert [e["item_id"] for e in yaml.safe_load(out.read_text())] == ["i111"]
    # recorded as the review app records (AbstentionQueue.record): a re-run of apply merges
    # it, as tests/web/test_abstained_review.py checks
    fields = {"item_id", "score", "label", "reviewer", "note", "timestamp", "signature"}
    # signed, and chained to the line before (""): a verdict edited, added, moved or removed by
    # hand is refused
    assert set(record) == fields | {"previous"} and record["previous"] == ""


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"verdict": "Maybe", "reviewer": "ana"}, "verdict", "is not on the"),
        ({"verdict": "True"}, "reviewer", "missing: who gives the verdict"),
        ({"verdict": "True", "reviewer": "ana", "response": "edited"}, "response", "read-only"),
        ({"verdict": "True", "reviewer": "ana", "verdit": "x"}, "verdit", "unknown key"),
        ({"verdict": "True", "reviewer": "ana", "item_id": "i1"}, "item_id", "no abstained item"),
    ],
)
def test_a_bad_entry_is_one_line_and_nothing_is_written(
    finished, tmp_path, capsys, change, field, message
):
    run_dir = tmp_path / finished.name
    shutil.copytree(finished, run_dir)
    out, entries = _export(run_dir, capsys)
    entries[0].update(verdict="False", reviewer="bo")  # a good entry first: not written either
    entries[1].update(change)
    out.write_text(yaml.safe_dump(entries, sort_keys=False))
    line = _refused(capsys, run_dir, out)
    assert f"{out}, row 2, field '{field}'" in line and message in line


def test_an_item_given_two_verdicts_in_one_file_is_refused(finished, tmp_path, capsys):
    run_dir = tmp_path / finished.name
    shutil.copytree(finished, run_dir)
    out, entries = _export(run_dir, capsys)
    entries[0].update(verdict="False", reviewer="bo")
    entries[1] = {**entries[0], "verdict": "True"}
    out.write_text(yaml.safe_dump(entries, sort_keys=False))
    line = _refused(capsys, run_dir, out)
    assert f"{out}, row 2, field 'item_id'" in line and "i108 has a verdict in entry 1" in line
