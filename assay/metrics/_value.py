"""The value of one aggregate metric as reported: point estimate, interval, size and a note."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class MetricValue:
    """One reported metric. ``value`` may be nan when the metric is undefined (``note`` says why);
    ``ci_low``/``ci_high`` are None when no interval could be computed; ``n`` counts the items."""

    value: float
    ci_low: float | None
    ci_high: float | None
    n: int
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A plain dict with the same fields (nan values stay float nan)."""
        return asdict(self)
