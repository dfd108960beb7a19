"""``Usage.total``: token, call and cost totals that do not depend on the order calls finished."""

from __future__ import annotations

import itertools

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
