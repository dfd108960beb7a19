"""The report's plots made side by side in forked copies of the sidecar: the same files, and a
copy that fails is made again here (which raises its error)."""

from __future__ import annotations

import os
import threading

import pytest

from assay.experiments.reliability import _report


@pytest.fixture
def one_thread(monkeypatch):
    """As in the run's sidecar, where the jobs fork (pytest's process may have other threads;
    the jobs here take no lock)."""
    monkeypatch.setattr(threading, "active_count", lambda: 1)


def test_every_job_is_done_once_and_the_copies_are_other_processes(tmp_path, one_thread):
    parent = os.getpid()

    def job(name):
        return lambda: (tmp_path / name).write_text(str(os.getpid()))

    _report._side_by_side([job("a"), job("b"), job("c")])
    pids = {n: int((tmp_path / n).read_text()) for n in "abc"}
    assert pids["c"] == parent  # the last one here
    assert pids["a"] != parent and pids["b"] != parent and pids["a"] != pids["b"]


def test_a_copy_that_fails_is_done_again_here(tmp_path, one_thread):
    parent = os.getpid()

    def flaky():  # fails in a copy only
        if os.getpid() != parent:
            raise RuntimeError("copy")
        (tmp_path / "made").write_text("here")

    _report._side_by_side([flaky, lambda: None])
    assert (tmp_path / "made").read_text() == "here"

    def broken():
        raise ValueError("no data to plot")

    with pytest.raises(ValueError, match="no data to plot"):
        _report._side_by_side([broken, lambda: None])


def test_with_other_threads_the_jobs_run_here_in_order(tmp_path, monkeypatch):
    monkeypatch.setattr(threading, "active_count", lambda: 3)
    order: list[int] = []
    _report._side_by_side([lambda: order.append(os.getpid()), lambda: order.append(1)])
    assert order == [os.getpid(), 1]
