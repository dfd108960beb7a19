"""A CSV read by the command line's helper process gives the rows read here, on every CSV of
the repository; a reader that fails means the file is read here, as without one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from assay.data import _reading as reading
from assay.data import csv_read_by
from assay.data._reading import csv_rows, read_rows
from assay.runs._sidecar import Sidecar

REPO = Path(__file__).resolve().parents[2]
CSVS = sorted(
    p
    for p in [*REPO.glob("examples/**/*.csv"), *REPO.glob("tests/fixtures/**/*.csv")]
    if p.stat().st_size > 0
)


def _read(path: Path, text_columns: tuple[str | None, ...]) -> tuple[list, list]:
    _, table = read_rows(
        str(path), format=None, text_columns=text_columns, split="train", cache_dir=None
    )
    return table.to_list(), list(table.column_names)


def _header(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8-sig").splitlines()[0].split(",")


@pytest.fixture(scope="module")
def sidecar():
    import os

    old = os.environ.get("ASSAY_SIDECAR")
    os.environ["ASSAY_SIDECAR"] = "1"
    try:
        car = Sidecar.start()
    finally:
        os.environ.pop("ASSAY_SIDECAR") if old is None else os.environ.update(ASSAY_SIDECAR=old)
    assert car is not None
    yield car
    car.close()


@pytest.mark.parametrize("path", CSVS, ids=lambda p: str(p.relative_to(REPO)))
def test_rows_read_in_the_helper_are_the_rows_read_here(sidecar, path):
    assert len(CSVS) >= 8
    text = (_header(path)[0],)  # one column kept as written, the rest typed by pandas
    calls: list[dict] = []

    def reader(**where):
        calls.append(where)
        return sidecar.call("assay.data._reading:csv_rows", **where)

    here = _read(path, text)
    with csv_read_by(reader):
        there = _read(path, text)
    assert len(calls) == 1 and calls[0]["text_columns"] == list(text)
    assert there == here
    # the same types, not only equal values (1 == 1.0 == True in Python)
    assert [[type(v) for v in r.values()] for r in there[0]] == [
        [type(v) for v in r.values()] for r in here[0]
    ]


def test_a_failing_reader_means_the_file_is_read_here():
    path = REPO / "examples" / "data" / "jrh" / "harmbench" / "harmbench.csv"

    def broken(**where):
        raise RuntimeError("the helper is gone")

    with csv_read_by(broken):
        assert _read(path, ("idx",)) == _read(path, ("idx",))
    with csv_read_by(lambda **where: {"rows": "not rows"}):  # garbage back: read here too
        rows, columns = _read(path, ("idx",))
    assert columns[:1] == ["idx"] and isinstance(rows[0], dict)


def test_a_cell_that_json_would_change_is_refused(monkeypatch, tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("id,x\na,1\n", encoding="utf-8")
    monkeypatch.setattr(
        reading,
        "_read_csv",
        lambda p, kw: reading._Rows([{"id": "a", "x": np.int64(1)}], ["id", "x"]),
    )
    with pytest.raises(TypeError, match="int64"):
        csv_rows(str(path), ",", ["id"])


def test_the_command_line_reads_its_table_in_the_mlflow_sidecar(monkeypatch):
    import assay.runs._sidecar as module
    from assay.cli import _sidecar_started

    monkeypatch.setenv("ASSAY_SIDECAR", "1")
    monkeypatch.setattr(module, "_spare", None)
    sent: list[str] = []
    call = Sidecar.call

    def recording(self, target, **kwargs):
        sent.append(target)
        return call(self, target, **kwargs)

    monkeypatch.setattr(Sidecar, "call", recording)
    path = REPO / "examples" / "data" / "jrh" / "persuade" / "persuade_sample.csv"
    here = _read(path, ())
    try:
        with _sidecar_started():
            car = module._spare
            assert _read(path, ()) == here
        assert sent == ["assay.data:csv_rows"]
        assert car.call("os:getpid") == car._proc.pid  # read there, not here
    finally:
        if module._spare is not None:
            module._spare.close()


def test_the_price_map_is_read_while_the_command_line_waits_for_its_table(monkeypatch):
    """The first LM call looks its model up in the price map (parsed on first use): the command
    line has it read in a thread while it waits for its table from the helper interpreter."""
    import assay.lm
    import assay.runs._sidecar as module
    from assay.cli import _sidecar_started

    monkeypatch.setenv("ASSAY_SIDECAR", "1")
    monkeypatch.setattr(module, "_spare", None)
    events: list[str] = []
    call = Sidecar.call

    def recording(self, target, **kwargs):
        events.append(target)
        return call(self, target, **kwargs)

    monkeypatch.setattr(Sidecar, "call", recording)
    monkeypatch.setattr(assay.lm, "preload_price_map", lambda: events.append("price map"))
    path = REPO / "examples" / "data" / "jrh" / "persuade" / "persuade_sample.csv"
    try:
        with _sidecar_started():
            _read(path, ())
        assert events == ["price map", "assay.data:csv_rows"]
    finally:
        if module._spare is not None:
            module._spare.close()


def test_the_price_map_is_read_once_in_a_thread_of_its_own():
    import threading

    from assay.lm import _pricing

    _pricing.preload_price_map()
    _pricing.preload_price_map()
    (thread,) = _pricing._price_map_read
    thread.join(timeout=30)
    assert not thread.is_alive() and thread is not threading.main_thread()
    from dspy.clients.model_metadata import model_info

    assert model_info("openai", "gpt-4o-mini")  # read, and read the same


def test_a_table_read_ahead_is_taken_while_the_file_holds_the_same_bytes(monkeypatch, tmp_path):
    """The command line's helper reads the config's table as soon as the config is read
    (``read_ahead``), while the command imports what its run needs; the run's read takes those
    rows — unless the file changed in between: then it is read again, never the old rows."""
    import assay.runs._sidecar as module
    from assay.cli import _sidecar_started
    from assay.data import read_ahead

    monkeypatch.setenv("ASSAY_SIDECAR", "1")
    monkeypatch.setattr(module, "_spare", None)
    sent: list[str] = []
    submit = Sidecar.submit

    def recording(self, target, **kwargs):
        sent.append(target)
        return submit(self, target, **kwargs)

    monkeypatch.setattr(Sidecar, "submit", recording)
    path = tmp_path / "t.csv"
    path.write_text("id,text\na,old\n", encoding="utf-8")
    try:
        with _sidecar_started():
            read_ahead(path, ("id",))
            assert sent[-1] == "assay.data:csv_rows"
            rows, _ = _read(path, ("id",))
            assert rows == [{"id": "a", "text": "old"}]
            assert sent.count("assay.data:csv_rows") == 1  # the rows read ahead were taken
            read_ahead(path, ("id",))
            module._spare.call("os:getpid")  # jobs run in order: the old rows are read by now
            path.write_text("id,text\na,new\n", encoding="utf-8")  # edited after the read ahead
            rows, _ = _read(path, ("id",))
            assert rows == [{"id": "a", "text": "new"}]
            assert sent.count("assay.data:csv_rows") == 3  # read again
    finally:
        if module._spare is not None:
            module._spare.close()
