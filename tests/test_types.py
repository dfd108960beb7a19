"""``Usage.total``: token, call and cost totals that do not depend on the order calls finished."""

from __future__ import annotations

import itertools
import math

from assay.types import Usage


def test_usage_total_is_the_same_in_every_order_and_exact():
    parts = [
        Usage(prompt_tokens=3, completion_tokens=1, cost_usd=c, calls=1, limit_wait_s=w)
        for c, w in [(0.1, 0.5), (0.2, 0.0), (0.3, 1e-9)]
    ]
    # a plain left-to-right sum depends on the order: 0.1 + 0.2 + 0.3 != 0.3 + 0.2 + 0.1
    assert (0.1 + 0.2) + 0.3 != (0.3 + 0.2) + 0.1
    totals = {Usage.total(p).model_dump_json() for p in itertools.permutations(parts)}
    assert len(totals) == 1
    total = Usage.total(parts)
    assert total.cost_usd == 0.6  # the correctly rounded sum
    assert total.limit_wait_s == 0.500000001
    assert (total.prompt_tokens, total.completion_tokens, total.calls) == (9, 3, 3)


def test_usage_total_of_nothing_is_zero_usage():
    assert Usage.total([]) == Usage()


def test_a_total_gives_pydantic_only_its_nonzero_counts():
    """pydantic keeps, in each model, the set of the fields it was given: all sixteen took a
    512-byte table besides the set, for each of the one or more usages a run holds per LM call
    until it scores. A total gives the counts that are not zero, and is the same usage."""
    parts = [Usage(prompt_tokens=3, completion_tokens=1, cost_usd=0.25, calls=1)] * 2
    total = Usage.total(parts)
    assert total.model_fields_set == {"prompt_tokens", "completion_tokens", "cost_usd", "calls"}
    assert total.model_dump() == {**Usage().model_dump(), **total.model_dump(exclude_unset=True)}
    assert Usage.total([]).model_fields_set == set()


def test_usage_of_counts_keeps_a_negative_zero_and_every_nonzero_value():
    u = Usage.of({"prompt_tokens": 0, "cost_usd": -0.0, "cached_cost_usd": 0.0, "calls": 2})
    assert u.model_fields_set == {"cost_usd", "calls"}
    assert u.model_dump_json() == Usage(cost_usd=-0.0, calls=2).model_dump_json()
    assert '"cost_usd":-0.0' in u.model_dump_json()
    assert math.isnan(Usage.of({"limit_wait_s": math.nan}).limit_wait_s)
