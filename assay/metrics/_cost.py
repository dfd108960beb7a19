"""Cost-effectiveness of a judge."""

from __future__ import annotations

import math
from numbers import Real


def cost_per_accuracy_point(total_cost_usd: float, accuracy: float) -> float:
    """USD per accuracy percentage point: ``total_cost_usd / (accuracy × 100)``.

    ``accuracy`` is a proportion in [0, 1]. Returns ``inf`` when accuracy is 0 (no point was
    bought, whatever the cost — including a cost of 0).
    """
    for value, name in ((total_cost_usd, "total_cost_usd"), (accuracy, "accuracy")):
        if isinstance(value, bool) or not isinstance(value, Real):
            raise ValueError(f"{name} must be a number, got {value!r}")
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value!r}")
    if total_cost_usd < 0:
        raise ValueError(f"total_cost_usd must be >= 0, got {total_cost_usd}")
    if not 0.0 <= accuracy <= 1.0:
        raise ValueError(f"accuracy must be a proportion in [0, 1], got {accuracy}")
    if accuracy == 0:
        return math.inf
    return float(total_cost_usd) / (accuracy * 100.0)
