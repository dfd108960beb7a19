"""DSPy's disk cache opens in a background thread: its settings are known at once (a judge
task's recipe reads them before the first call), its entries only once it is open."""

from __future__ import annotations

import threading

import dspy
import pytest

from assay.lm import configure_cache
from assay.runs import ProgramRecipe


@pytest.fixture
def held_open(monkeypatch):
    """The cache's opening held until the test lets it go."""
    import dspy.clients.cache as cache_module

    release = threading.Event()
    real = cache_module.Cache

    class Slow(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs):
            release.wait(timeout=60)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(cache_module, "Cache", Slow)
    saved = dspy.cache
    yield release
    release.set()
    dspy.cache = saved


def test_a_recipe_reads_the_cache_settings_without_waiting_for_it_to_open(tmp_path, held_open):
    configure_cache(tmp_path)
    got = {}
    worker = threading.Thread(
        target=lambda: got.update(recipe=ProgramRecipe.of(None, rollout=None, retries=0, base=None))
    )
    worker.start()
    worker.join(timeout=30)  # a recipe that waited would still be blocked on the held cache
    assert not worker.is_alive()
    assert got["recipe"].cache == (str(tmp_path / ".assay" / "dspy_cache"), True)
    held_open.set()
    dspy.cache.put({"model": "m", "messages": [{"role": "user", "content": "x"}]}, "answer")
    hit = dspy.cache.get({"model": "m", "messages": [{"role": "user", "content": "x"}]})
    assert hit == "answer"  # once open, the real cache behind it


REQUEST = {"model": "m", "messages": [{"role": "user", "content": "x"}]}


def _get_in_thread() -> tuple[threading.Thread, dict]:
    got: dict = {}
    worker = threading.Thread(target=lambda: got.update(hit=dspy.cache.get(REQUEST)), daemon=True)
    worker.start()
    worker.join(timeout=2)
    return worker, got


def test_a_lookup_in_a_new_cache_folder_is_a_miss_without_waiting_for_it_to_open(
    tmp_path, held_open
):
    configure_cache(tmp_path)  # no .assay/dspy_cache yet: nothing can be in it
    worker, got = _get_in_thread()
    assert not worker.is_alive() and got == {"hit": None}
    held_open.set()
    dspy.cache.put(REQUEST, "answer")  # a write waits for the opening, then lands on disk
    assert dspy.cache.get(REQUEST) == "answer"
    assert any((tmp_path / ".assay" / "dspy_cache").iterdir())


def test_a_lookup_in_an_existing_cache_folder_waits_for_it_to_open(tmp_path, held_open):
    (tmp_path / ".assay" / "dspy_cache").mkdir(parents=True)  # a re-run: entries may be there
    configure_cache(tmp_path)
    worker, got = _get_in_thread()
    assert worker.is_alive() and got == {}  # held: it must read the disk before answering
    held_open.set()
    worker.join(timeout=30)
    assert not worker.is_alive() and got == {"hit": None}


def test_every_thread_reads_the_disk_cache_with_a_small_page_cache_and_no_map(tmp_path):
    """diskcache opens a SQLite connection per shard in each thread that uses it; each held up
    to 32 MB of pages and a 64 MB map by default, so a judging pool's process grew with the
    cache file. A connection opened by a worker thread after the cache is configured (as the
    pool's are) gets one megabyte of pages and no map."""
    saved = dspy.cache
    try:
        configure_cache(tmp_path)
        dspy.cache.put(REQUEST, "answer")  # waits for the opening
        pragmas: dict = {}

        def read() -> None:
            assert dspy.cache.get(REQUEST) == "answer"
            for shard in dspy.cache.inner.disk_cache._shards:  # this thread's connections
                con = shard._con
                pragmas.setdefault("cache_size", set()).add(
                    con.execute("PRAGMA cache_size").fetchone()[0]
                )
                pragmas.setdefault("mmap_size", set()).add(
                    con.execute("PRAGMA mmap_size").fetchone()[0]
                )

        worker = threading.Thread(target=read)
        worker.start()
        worker.join(timeout=60)
        assert pragmas == {"cache_size": {256}, "mmap_size": {0}}
    finally:
        dspy.cache = saved
