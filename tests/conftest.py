"""Shared test setup: offline environment, and no DSPy response cache leaking between tests."""

from __future__ import annotations

from pathlib import Path

import pytest

import assay  # noqa: F401  (offline-safe environment defaults)

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(autouse=True)
def _no_dspy_cache():
    """Each test starts with DSPy's response caches off, so LM call counts are exact."""
    import dspy

    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    yield
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA
