"""How a metric reads in a report or on the terminal: one formatter for values and intervals."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assay.metrics._value import MetricValue
from assay.report import Table, markdown_table


def fmt(v: object, digits: int = 3, *, percent: bool = False) -> str:
    """A number for a table: ``—`` when missing, ``n/a`` when undefined (nan)."""
    if v is None:
        return "—"
    if isinstance(v, float) and v != v:
        return "n/a"
    if percent and isinstance(v, int | float):
        return _signless(f"{100 * v:.{max(digits - 2, 1)}f}") + "%"
    if isinstance(v, float):
        return _signless(f"{v:.{digits}f}")
    return str(v)


def fmt_level(confidence: float) -> str:
    """A confidence level as its label says it: ``95%``, ``97.5%``, ``99.9%`` — its digits, none
    rounded away (``f"{0.975:.0%}"`` said 98%) and no float noise added (0.9 is ``90%``)."""
    return f"{round(100 * confidence, 6):.10g}%"


def _signless(text: str) -> str:
    """``-0.000`` (a value a rounding below 0, such as a κ of 0 computed as -2e-16) as
    ``0.000``."""
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


def fmt_ci(
    m: MetricValue | Mapping[str, Any] | None,
    digits: int = 3,
    *,
    percent: bool = False,
    with_n: bool = False,
) -> str:
    """``value [ci_low, ci_high]`` of a metric (a :class:`MetricValue` or its dict; just the
    value when it has no interval, ``undefined`` when it is), optionally followed by ``(n=…)``."""
    if not m:
        return "—"
    if isinstance(m, MetricValue):
        m = m.to_dict()
    lo, hi = m.get("ci_low"), m.get("ci_high")
    has_ci = lo is not None and lo == lo and hi is not None and hi == hi
    ci = (
        f" [{fmt(lo, digits, percent=percent)}, {fmt(hi, digits, percent=percent)}]"
        if has_ci
        else ""
    )
    n = f" (n={m['n']})" if with_n and m.get("n") is not None else ""
    value = m.get("value")
    if value is None or value != value:  # read back from JSON (null) or computed (nan)
        return f"undefined{n}"
    return f"{fmt(value, digits, percent=percent)}{ci}{n}"


def metric_table(
    title: str,
    metrics: Mapping[str, MetricValue | Mapping[str, Any]],
    confidence: float = 0.95,
    **more: Any,
) -> Table:
    """A report's table of ``metrics``: metric, value (``undefined`` when it is), CI bounds,
    how the CI was computed, count (a rate's numerator), n (its denominator, else the items),
    note (``more``: the :class:`~assay.report.Table`'s lead, note, figure)."""
    rows = []
    for name, metric in metrics.items():
        m = metric.to_dict() if isinstance(metric, MetricValue) else metric
        ci = (
            f"[{fmt(m.get('ci_low'))}, {fmt(m.get('ci_high'))}]"
            if m.get("ci_low") is not None
            else "—"
        )
        value = m.get("value")
        shown = "undefined" if value is None or value != value else fmt(value)
        rows.append(
            [
                name,
                shown,
                ci,
                m.get("ci_method") or "",
                "" if m.get("count") is None else m["count"],
                m.get("n", ""),
                m.get("note") or "",
            ]
        )
    columns = ["metric", "value", f"{fmt_level(confidence)} CI", "CI method", "count", "n", "note"]
    return Table(title, columns, rows, **more)


def metrics_table(
    metrics: Mapping[str, MetricValue | Mapping[str, Any]], confidence: float = 0.95
) -> str:
    """Markdown table: metric, value, CI bounds, CI method, count, n, note."""
    return "\n".join(markdown_table(metric_table("", metrics, confidence)))
