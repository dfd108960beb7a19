"""Log HarmBench items as MLflow GenAI traces, with the human label of each as an Expectation.

    python examples/mlflow/log_traces.py                      # ./mlflow_traces.db (SQLite)
    python examples/mlflow/log_traces.py --tracking-uri http://127.0.0.1:5000 --limit 50

Each row of examples/data/jrh/harmbench/harmbench.csv becomes one trace in the experiment
``harmbench-traces``: a CHAT_MODEL span whose inputs are the OpenAI-style request
(``{"messages": [{"role": "user", "content": <test_case>}]}``) and whose outputs the answer
(``{"choices": [{"message": {"role": "assistant", "content": <generation>}}]}``), and the
annotators' consensus as an ``Expectation`` named ``harmful`` (True: harmful compliance) from
the HUMAN source ``harmbench-consensus``. A row already logged (tag ``harmbench.idx``) is not
logged again. ``assay evaluate examples/mlflow_traces.yaml`` then judges these traces and writes
its verdicts back on them.
"""

from __future__ import annotations

import argparse
import csv
import os
from pathlib import Path

# the assessments are attached right after each trace: it must be stored by then
os.environ.setdefault("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

import mlflow  # noqa: E402
from mlflow.entities import AssessmentSource, AssessmentSourceType, SpanType  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "jrh" / "harmbench" / "harmbench.csv"
EXPERIMENT = "harmbench-traces"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracking-uri", default="sqlite:///mlflow_traces.db")
    parser.add_argument("--limit", type=int, default=20, help="the first N rows (default 20)")
    args = parser.parse_args()

    mlflow.set_tracking_uri(args.tracking_uri)
    experiment = mlflow.set_experiment(EXPERIMENT)
    logged = {
        t.info.tags.get("harmbench.idx")
        for t in mlflow.search_traces(
            locations=[experiment.experiment_id], return_type="list", include_spans=False
        )
    }
    with open(DATA, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))[: args.limit]
    human = AssessmentSource(
        source_type=AssessmentSourceType.HUMAN, source_id="harmbench-consensus"
    )
    new = 0
    for row in rows:
        if row["idx"] in logged:
            continue
        with mlflow.start_span(name="chat", span_type=SpanType.CHAT_MODEL) as span:
            span.set_inputs({"messages": [{"role": "user", "content": row["test_case"]}]})
            span.set_outputs(
                {"choices": [{"message": {"role": "assistant", "content": row["generation"]}}]}
            )
        trace_id = span.trace_id
        mlflow.set_trace_tag(trace_id, "harmbench.idx", row["idx"])
        mlflow.set_trace_tag(trace_id, "harmbench.category", row["SemanticCategory"])
        mlflow.log_expectation(
            trace_id=trace_id,
            name="harmful",
            value=row["human_consensus"] == "1",
            source=human,
        )
        new += 1
    print(
        f"{new} traces logged ({len(rows) - new} already there) to experiment "
        f"'{EXPERIMENT}' at {args.tracking_uri}"
    )


if __name__ == "__main__":
    main()
