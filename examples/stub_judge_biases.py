"""Self-preference and scale use on the loopback stub, without a key or a network.

Writes 60 synthetic items (a 1–5 reference, half of the answers written by ``openai/gpt-4o``
and half by ``anthropic/claude-3-5-sonnet``, in a ``written_by`` column) and three simulated
annotators' labels of them (``annotations.csv``: the reference moved a category up or down on
some items), then runs ``assay evaluate`` with a judge of family gpt served by three personas of
the stub:

- ``gpt-4o-mini`` favours its own family: one point more on the answers gpt wrote;
- ``gpt-4.1-mini`` is fair: the reference with noise that does not depend on who wrote it;
- ``gpt-4.1-nano`` is strict: one category below the reference;

then ``assay agreement`` of the strict judge's verdicts against the three annotators, and the
same items as MLflow traces — each trace's model span naming the model that wrote it, each
annotator's label a HUMAN Feedback ``quality`` — judged by the strict persona: the generator is
the trace's model, and the raters' item response model has the judge and each annotator as
raters (report.md's *The raters under an item response model*).

The personas are for the mechanics of the figures, not judges: point ``judge.model`` at a real
model (no ``api_base``) and ``data`` at your own outputs for figures worth trusting.

    python examples/stub_judge_biases.py /tmp/biases      # its runs in /tmp/biases
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path

# the annotators' labels are attached right after each trace: it must be stored by then
os.environ.setdefault("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

import numpy as np  # noqa: E402

from assay.cli import main as assay  # noqa: E402
from assay.lm import StubServer  # noqa: E402

N = 60
OWN, OTHER = "openai/gpt-4o", "anthropic/claude-3-5-sonnet"


def items(folder: Path) -> tuple[Path, np.ndarray, list[str]]:
    rng = np.random.default_rng(7)
    reference = rng.integers(2, 5, size=N)
    written_by = [OWN if k % 2 == 0 else OTHER for k in range(N)]
    rows = ["id,request,response,expected,written_by"]
    rows += [f"i{k},Question {k}?,Answer {k}.,{reference[k]},{written_by[k]}" for k in range(N)]
    path = folder / "items.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path, reference, written_by


def annotations(folder: Path, reference: np.ndarray) -> tuple[Path, dict[str, np.ndarray]]:
    """Three annotators: the reference, a category up or down on about a third of the items."""
    rng = np.random.default_rng(1)
    labels = {
        a: np.clip(reference + rng.choice([-1, 0, 0, 0, 0, 1], size=N), 1, 5)
        for a in ("ann_a", "ann_b", "ann_c")
    }
    rows = ["item,annotator,label"]
    rows += [f"i{k},{a},{v}" for a, vs in labels.items() for k, v in enumerate(vs)]
    path = folder / "annotations.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path, labels


def traces(folder: Path, written_by: list[str], labels: dict[str, np.ndarray]) -> str:
    """The items as MLflow traces in ``folder/traces.db`` (experiment ``biases``): a model span
    naming who wrote the answer, and each annotator's label as a HUMAN Feedback ``quality``."""
    import mlflow
    from mlflow.entities import AssessmentSource, SpanType
    from mlflow.tracing.constant import SpanAttributeKey

    uri = f"sqlite:///{folder / 'traces.db'}"
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("biases")
    for k in range(N):
        with mlflow.start_span(name="answer", span_type=SpanType.CHAT_MODEL) as span:
            span.set_attribute(SpanAttributeKey.MODEL, written_by[k])
            span.set_inputs({"question": f"Question {k}?"})
            span.set_outputs({"answer": f"Answer {k}."})
        for a, values in labels.items():
            mlflow.log_feedback(
                trace_id=span.trace_id,
                name="quality",
                value=int(values[k]),
                source=AssessmentSource(source_type="HUMAN", source_id=a),
            )
    return uri


def personas(reference: np.ndarray, written_by: list[str]):
    noise = np.random.default_rng(0).choice([-1, 0, 0, 1], size=N)

    def respond(request: dict) -> str:
        k = int(re.search(r"Answer (\d+)\.", json.dumps(request["messages"])).group(1))
        if request["model"] == "gpt-4.1-nano":  # strict
            verdict = max(1, reference[k] - 1)
        else:
            bonus = int(request["model"] == "gpt-4o-mini" and written_by[k] == OWN)
            verdict = np.clip(reference[k] + noise[k] + bonus, 1, 5)
        return json.dumps({"verdict": str(verdict)})

    return respond


def run_in(folder: Path, args: list[str]) -> None:
    """``assay ARGS`` from ``folder`` (its runs in ``folder/runs``)."""
    cwd = Path.cwd()
    os.chdir(folder)
    try:
        assay(args)
    finally:
        os.chdir(cwd)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    folder = parser.parse_args().folder
    folder.mkdir(parents=True, exist_ok=True)
    csv, reference, written_by = items(folder)
    labels_csv, labels = annotations(folder, reference)
    table = {"path": str(csv), "columns": {"id": "id", "generator": "written_by"}}
    with StubServer(respond=personas(reference, written_by)) as stub:

        def evaluate(name: str, model: str, data: dict) -> None:
            config = {
                "name": name,
                "data": data,
                "judge": {
                    "model": f"openai/{model}",
                    "api_base": stub.base_url,
                    "rubric": "A good answer is correct and complete.",
                    "scale": "1-5",
                },
                "tracking": {"enabled": False},
            }
            path = folder / f"{name}.yaml"
            path.write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
            run_in(folder, ["evaluate", path.name, "--quiet"])

        for model in ("gpt-4o-mini", "gpt-4.1-mini", "gpt-4.1-nano"):
            evaluate(f"selfpref-{model.replace('.', '-')}", model, table)
        (strict,) = (folder / "runs").glob("selfpref-gpt-4-1-nano-*")
        args = ["agreement", labels_csv.name, f"runs/{strict.name}/judgments.jsonl"]
        args += ["--scale", "1-5", "--id-column", "item", "--score-column", "label"]
        args += ["--annotator-column", "annotator"]
        print(f"\n$ assay {' '.join(args)}", flush=True)
        run_in(folder, args)
        uri = traces(folder, written_by, labels)
        print(f"\n{N} traces logged to {uri}, each with three annotators' labels", flush=True)
        mlflow = {
            "format": "mlflow",
            "tracking_uri": uri,
            "experiment": "biases",
            "request": "inputs.question",
            "response": "outputs.answer",
            "expectation": "quality",
            "annotators": True,
        }
        evaluate("traces-gpt-4-1-nano", "gpt-4.1-nano", mlflow)


if __name__ == "__main__":
    main()
