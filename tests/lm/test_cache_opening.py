"""DSPy's disk cache opens in a background thread: its settings are known at once (a judge
task's recipe reads them before the first call), its entries only once it is open."""

from __future__ import annotations

import threading

import dspy
import pytest

from assay.experiments.runs import ProgramRecipe
from assay.lm import configure_cache


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
