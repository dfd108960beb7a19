"""``assay evaluate CONFIG``: run a judge over a labelled data set and measure its agreement."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from assay.cli._common import add_ray, add_run, mlflow_line, overrides, print_run_json, workdir

if TYPE_CHECKING:
    from assay.experiments import Counts


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evaluate", help="run a judge over a labelled data set and measure its agreement"
    )
    p.add_argument("config", help="YAML config (see examples/)")
    add_run(p, model=True)
    add_ray(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from assay.experiments import evaluate, load_config
    from assay.metrics import metrics_table
    from assay.types import spend_line

    config, base = load_config(args.config, overrides(args))
    res = evaluate(
        config,
        workdir=workdir(),
        config_dir=base,
        limit=args.limit,
        tracking_uri=args.tracking_uri,
        progress=not args.quiet,
    )
    s = res.summary
    c = s.counts
    if args.json:
        print_run_json(res, {"new_judgments": res.new_judgments, **s.model_dump(mode="json")})
        return _exit_code(c)
    if res.new_judgments == 0 and res.resumed:
        state = "re-read (finished before; no LM call)"
    elif res.resumed:
        state = f"resumed, {res.new_judgments} new judgments"
    else:
        state = f"{res.new_judgments} judgments"
    if res.retried:
        state += f" ({res.retried} unscored items judged again)"
    print(f"\n{config.name}: {state}")
    print(
        f"items {c.items} · scored {c.scored} · unscored {c.unscored} "
        f"{c.unscored_reasons or ''} · paired with reference {c.paired}"
    )
    if s.metrics:
        print(metrics_table(s.model_dump()["metrics"], config.bootstrap.confidence))
    u = s.usage
    print(
        f"LM calls {u.calls} · tokens {u.prompt_tokens}+{u.completion_tokens} · "
        f"cost ${u.cost_usd:.6f}"
    )
    print(spend_line(s.spend))
    if u.limit_wait_s or u.rate_limited:
        print(
            f"rate limits: {u.limit_wait_s:.1f}s waited over all calls · "
            f"{u.rate_limited} HTTP 429 answers (waited out and retried)"
        )
    print(f"run directory: {res.run_dir}")
    line = mlflow_line(res.mlflow_run_id, args.tracking_uri)
    if line:
        print(line)
    transient = sum(c.unscored_reasons.get(r, 0) for r in ("lm_error", "timeout"))
    if transient:
        print(
            f"note: {transient} items are unscored by LM errors or timeouts; once the cause is "
            "fixed, re-run with --retry-unscored to judge them again."
        )
    if config.judge.model.startswith("local"):
        print("note: the embedded model is for trying assay, not for trustworthy verdicts.")
    return _exit_code(c)


def _exit_code(counts: Counts) -> int:
    """1 when no item could be judged at all (every judgment an LM error or timeout)."""
    failed = sum(counts.unscored_reasons.get(r, 0) for r in ("lm_error", "timeout"))
    return 1 if counts.judged and failed == counts.judged else 0
