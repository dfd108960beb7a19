"""The external merge sort: rows come back sorted by their key, equal keys in reading order,
whatever the runs' size in rows or bytes, as many times as they are read."""

from __future__ import annotations

import random
from operator import itemgetter

import pytest

from assay._sorted_runs import SortedRuns


@pytest.mark.parametrize(("run_rows", "run_bytes"), [(1, 10**9), (7, 10**9), (10**6, 200), (3, 1)])
def test_rows_come_back_sorted_and_stable_in_runs_of_any_size(tmp_path, run_rows, run_bytes):
    rng = random.Random(run_rows)
    rows = [(rng.choice("abcde"), k, "x" * rng.randrange(50)) for k in range(200)]
    runs = SortedRuns(
        iter(rows), key=itemgetter(0), folder=tmp_path, run_rows=run_rows, run_bytes=run_bytes
    )
    expected = sorted(rows, key=itemgetter(0))  # stable: the reading order among equal keys
    assert list(runs) == expected and list(runs) == expected  # read again from the same runs
    assert len(runs) == len(rows)
    assert len(list(tmp_path.iterdir())) > 1


def test_no_rows_is_no_run(tmp_path):
    runs = SortedRuns(iter(()), key=lambda row: row, folder=tmp_path)
    assert list(runs) == [] and len(runs) == 0 and not list(tmp_path.iterdir())
