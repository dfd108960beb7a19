"""A local table's items cache (``assay/inputs/_items_cache.py``) vouches for nothing by itself:
the table's bytes decide which items a run judges, and the cache file is used only while the
signature assay wrote beside it holds.

A table edited with its size and modification time kept (two labels changed, the old time set
back) was taken for the old table: the run re-read the old run's figures, and the finished-run
record then named the new data's digest against it. An edit of the cache file itself was judged
as the data."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from assay.cli import main
from assay.lm import StubServer
from tests.stub_judge import stub_config, write_items

N = 6


@pytest.fixture
def stub():
    with StubServer() as server:  # answers the first label, False (0), to every item
        yield server


def _evaluate(cfg: Path, capsys) -> dict:
    capsys.readouterr()
    assert main(["evaluate", str(cfg), "--quiet", "--json"]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def _accuracy(summary: dict) -> float:
    return summary["metrics"]["accuracy"]["value"]


def _inputs_record(summary: dict) -> dict:
    """The signed record of the inputs a finished run was made from."""
    return json.loads((Path(summary["run_dir"]) / "run.json").read_text(encoding="utf-8"))["inputs"]


def _edit_keeping_size_and_time(path: Path, old: str, new: str) -> None:
    assert len(old) == len(new)
    st = path.stat()
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)


def test_a_table_edited_with_its_size_and_time_kept_is_another_run(
    tmp_path, monkeypatch, capsys, stub
):
    monkeypatch.chdir(tmp_path)
    csv = write_items(tmp_path, N)
    cfg = stub_config(tmp_path, csv, stub.base_url, name="r")
    first = _evaluate(cfg, capsys)
    assert _accuracy(first) == pytest.approx(0.5)
    record = _inputs_record(first)
    _edit_keeping_size_and_time(csv, "Item 1 is blue.,1", "Item 1 is blue.,0")
    edited = _evaluate(cfg, capsys)
    assert _accuracy(edited) == pytest.approx(4 / 6)  # a fresh folder's figure
    assert edited["run_dir"] != first["run_dir"]
    assert _inputs_record(first) == record  # the old run is not signed as the new data's
    assert _inputs_record(edited)["digest"] != record["digest"]
    again = _evaluate(cfg, capsys)  # found by its inputs: the edited data's run
    assert again["run_dir"] == edited["run_dir"] and _accuracy(again) == _accuracy(edited)
    assert stub.n_requests == N  # the same questions: the LM cache answers them


def test_an_items_cache_file_edited_is_read_again_from_the_table(
    tmp_path, monkeypatch, capsys, stub
):
    monkeypatch.chdir(tmp_path)
    csv = write_items(tmp_path, N)
    cfg = stub_config(tmp_path, csv, stub.base_url, name="r")
    first = _evaluate(cfg, capsys)
    (cached,) = (tmp_path / ".assay" / "items").glob("*.jsonl")
    cached.write_text(cached.read_text().replace('"expected":1', '"expected":0'))
    for pointer in (tmp_path / ".assay" / "finished").iterdir():
        pointer.unlink()  # the run's own re-read: the items are read
    again = _evaluate(cfg, capsys)
    assert again["run_dir"] == first["run_dir"] and _accuracy(again) == pytest.approx(0.5)
    assert cached.read_text().count('"expected":1') == N // 2  # written again from the table
    assert stub.n_requests == N


def test_an_items_cache_file_without_its_signature_is_read_again(
    tmp_path, monkeypatch, capsys, stub
):
    monkeypatch.chdir(tmp_path)
    csv = write_items(tmp_path, N)
    cfg = stub_config(tmp_path, csv, stub.base_url, name="r")
    first = _evaluate(cfg, capsys)
    (signature,) = (tmp_path / ".assay" / "items").glob("*.mac")
    (cached,) = (tmp_path / ".assay" / "items").glob("*.jsonl")
    signature.unlink()
    cached.write_text(cached.read_text().replace('"expected":1', '"expected":0'))
    for pointer in (tmp_path / ".assay" / "finished").iterdir():
        pointer.unlink()
    again = _evaluate(cfg, capsys)
    assert again["run_dir"] == first["run_dir"] and _accuracy(again) == pytest.approx(0.5)
    assert signature.exists()
