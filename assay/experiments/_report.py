"""A readable Markdown report of an evaluate run, from metrics.json alone."""

from __future__ import annotations

from typing import Any

from assay.metrics import fmt, metrics_table


def render_report(
    name: str, config: dict[str, Any], summary: dict[str, Any], confidence: float
) -> str:
    judge = config["judge"]
    c = summary["counts"]
    u = summary["usage"]
    lines = [
        f"# assay evaluate — {name}",
        "",
        f"- judge: `{judge.get('name')}` · model `{judge.get('model')}` · program `{judge.get('program')}` · "
        f"adapter `{judge.get('adapter')}` · temperature {judge.get('temperature')} · config hash `{summary.get('config_hash', '')}`",
        f"- data: `{config['data']['path']}` ({c['items']} items)",
        f"- judged {c['judged']}, scored {c['scored']}, **unscored {c['unscored']}**"
        + (
            f" ({', '.join(f'{k}: {v}' for k, v in c['unscored_reasons'].items())})"
            if c["unscored"]
            else ""
        )
        + f"; without a reference label {c['without_reference']}; metrics computed on **{c['paired']}** pairs."
        + (
            f" {summary['retried']} unscored items were judged again on this run."
            if summary.get("retried")
            else ""
        ),
        "",
        "## Agreement with the reference",
        "",
    ]
    if summary["metrics"]:
        lines.append(metrics_table(summary["metrics"], confidence))
        cm = summary.get("confusion_matrix")
        if cm:
            labels = cm["labels"]
            lines += ["", "Confusion matrix (rows: reference, columns: judge):", ""]
            lines.append("| | " + " | ".join(str(x) for x in labels) + " |")
            lines.append("|---" * (len(labels) + 1) + "|")
            for lab, row in zip(labels, cm["rows_reference"], strict=True):
                lines.append(f"| **{lab}** | " + " | ".join(str(x) for x in row) + " |")
    else:
        lines.append(summary.get("note") or "No item has both a reference label and a judge score.")
    lines += [
        "",
        "## Cost",
        "",
        f"- LM calls {u['calls']}, prompt tokens {u['prompt_tokens']}, completion tokens {u['completion_tokens']}, "
        f"cost ${u['cost_usd']:.6f}; judgments served from the cache: {u['cached_judgments']}",
        *(
            [
                f"- **{u['unpriced_calls']} calls have no known price** (the model is not in LiteLLM's price map): "
                "their cost is not included; set `judge.price`."
            ]
            if u.get("unpriced_calls")
            else []
        ),
        f"- cost per accuracy point: {fmt(u.get('cost_per_accuracy_point_usd'), 6)} USD; mean latency {u['mean_latency_s']:.3f} s",
        f"- waiting on rate limits: {u.get('limit_wait_s', 0.0):.1f} s over all calls; "
        f"HTTP 429 answers {u.get('rate_limited', 0)} (each waited out and retried)",
        "",
        f"Bootstrap: {summary.get('bootstrap', '')}",
    ]
    if str(judge.get("model", "")).startswith("local"):
        lines += [
            "",
            "> The embedded local model is for trying assay and for smoke tests. Its verdicts are "
            "not trustworthy; use a real model for real measurements.",
        ]
    return "\n".join(lines) + "\n"
