"""The readable before/after report of an optimize run."""

from __future__ import annotations

from typing import Any

from assay.metrics import fmt, fmt_ci, fmt_level
from assay.optimization._config import USES_VALSET
from assay.optimization._results import OptimizeResult
from assay.types import Spend, Usage, spend_line, usd, work_line


def render_result(result: OptimizeResult, confidence: float = 0.95) -> str:
    """Before/after tables (dev and test), the objective's parts, costs and where things are."""
    out = result.model_dump()
    s = out["split"]
    lines = [
        f"\n{out['name']}: {out['optimizer']['name']} on {s['sizes']['train']} train items "
        f"(dev {s['sizes']['dev']}, test {s['sizes']['test']}; seed {s['seed']})"
        + (" · baseline reused" if out["before"].get("reused") else ""),
    ]
    pct = fmt_level(confidence)
    # an optimizer that selects among candidates on dev has seen it: its after is in-sample
    seen = out["optimizer"]["name"] in USES_VALSET
    held = {
        "dev": " — the optimizer selected on these items: not held out, the after is optimistic"
        if seen
        else " — held out: the optimizer did not see them",
        "test": " — held out: the optimizer did not see them",
    }
    for part in ("dev", "test"):
        b, a = out["before"][part]["metrics"], out["after"][part]["metrics"]
        lines += [
            f"\n{part} ({out['after'][part]['counts']['paired']} paired){held[part]}:",
            f"| metric | before [{pct} CI] | after [{pct} CI] | change |",
            "|---|---|---|---|",
        ]
        for name in b:
            lines.append(
                f"| {name} | {fmt_ci(b.get(name))} | {fmt_ci(a.get(name))} | {_delta(b.get(name), a.get(name))} |"
            )
    ob, oa = out["objective"]["before"], out["objective"]["after"]
    lines += [
        f"\nobjective on dev ({ob['metric']}):",
        "| part | before | after |",
        "|---|---|---|",
        f"| label agreement | {fmt(ob['label_agreement'])} | {fmt(oa['label_agreement'])} |",
    ]
    if ob["consistency"] is not None:
        lines.append(
            f"| consistency ({ob['with_variants']} items with variants) | {fmt(ob['consistency'])} | {fmt(oa['consistency'])} |"
        )
    lines.append(f"| objective | {fmt(ob['value'])} | {fmt(oa['value'])} |")
    u = out["usage"]
    lines.append(
        "\nLM calls answered by the server: baseline {b} · optimizer {o} · after {a} · "
        "paid {c}".format(
            b=u["baseline"]["calls"],
            o=u["optimization"]["calls"],
            a=u["after"]["calls"],
            c=usd(Usage.model_validate(u["total"]), "$"),  # never $0 for answers of unknown cost
        )
        + (
            f" ({u['total']['unpriced_calls']} calls unpriced)"
            if u["total"]["unpriced_calls"]
            else ""
        )
    )
    lines.append(work_line(Usage.model_validate(u["total"])))  # what a warm cache hides
    lines.append(spend_line(Spend.model_validate(out["spend"]) if out.get("spend") else None))
    lines.append(f"optimized program ({out['demos']} demos): {out['program']}")
    if out.get("mlflow_run_id"):
        lines.append(
            f"MLflow run: {out['mlflow_run_id']} · use it: judge: {{program_state: runs:/{out['mlflow_run_id']}/program.json}}"
        )
    return "\n".join(lines)


def _delta(b: dict[str, Any] | None, a: dict[str, Any] | None) -> str:
    if not a or not b or a.get("value") is None or b.get("value") is None:
        return "—"
    d = a["value"] - b["value"]
    return "—" if d != d else f"{d:+.3f}"
