"""What the native-client tests share: a one-field verdict signature, a stub responder for it,
and DSPy's in-memory response cache for one test."""

from __future__ import annotations

import dspy
import pytest


class Verdict(dspy.Signature):
    """Is the answer good?"""

    answer: str = dspy.InputField()
    verdict: bool = dspy.OutputField()


def verdict_for(request) -> str:
    """The stub's answer to a :class:`Verdict` request: true when the answer names sunlight."""
    asked = request["messages"][-1]["content"]
    return '{"verdict": %s}' % ("true" if "Sunlight" in asked else "false")


@pytest.fixture
def memory_cache():
    """DSPy's in-memory response cache on for one test (``tests/conftest.py`` has every test
    start with the caches off, and turns them off again after)."""
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=True)
    yield dspy.cache
