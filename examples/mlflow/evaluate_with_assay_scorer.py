"""The worked example's last step: the judge assay measured, as a Scorer in ``mlflow.genai.evaluate``.

    python examples/mlflow/log_traces.py          # 1. the traces, with their human labels
    assay evaluate examples/mlflow_traces.yaml    # 2. the judge measured on them, verdicts written back
    python examples/mlflow/evaluate_with_assay_scorer.py [--limit 5]   # 3. this script

It finds the finished evaluate run of ``examples/mlflow_traces.yaml`` under ``./runs``, turns its
judge into an MLflow ``Scorer`` with ``assay.integrations.mlflow.scorer`` — reading the same texts
the run judged (the config's ``request`` / ``response`` paths) and carrying what the run measured
(κ with its CI, n, the run's ids) as each Feedback's metadata — and runs
``mlflow.genai.evaluate`` with it on the traces of ``harmbench-traces``. The evaluation is an
MLflow run of that experiment, its Feedback on each trace next to the human Expectation.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

import mlflow  # noqa: E402

from assay.inputs import load_config  # noqa: E402
from assay.integrations.mlflow import scorer  # noqa: E402

CONFIG = Path(__file__).resolve().parents[1] / "mlflow_traces.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=5, help="the first N traces (default 5)")
    parser.add_argument("--runs", type=Path, default=Path("runs"), help="where the run is")
    args = parser.parse_args()

    config, _ = load_config(CONFIG)
    finished = sorted(
        p.parent
        for p in args.runs.glob(f"{config.name}-*/metrics.json")
        if (p.parent / "judgments.jsonl").is_file()
    )
    if not finished:
        raise SystemExit(f"no finished run of {CONFIG.name} under {args.runs}: run step 2 first")
    data = config.data
    judge = scorer(finished[-1], request=data.request, response=data.response, name="assay-judge")
    mlflow.set_tracking_uri(data.tracking_uri)
    experiment = mlflow.set_experiment(data.experiment)
    traces = mlflow.search_traces(locations=[experiment.experiment_id], max_results=args.limit)
    result = mlflow.genai.evaluate(data=traces, scorers=[judge])
    print(f"mlflow.genai.evaluate run {result.run_id}: {result.metrics}")
    first = mlflow.get_trace(traces["trace_id"].iloc[0])
    (fb,) = first.search_assessments(name="assay-judge")
    figures = {k: v for k, v in fb.metadata.items() if "kappa" in k or k.endswith((".n", "hash"))}
    print(f"{first.info.trace_id}: {fb.value} from {fb.source.source_id}; measured: {figures}")


if __name__ == "__main__":
    main()
