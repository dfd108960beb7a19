"""assay's judge as an Inspect scorer, measured first and run offline.

    python examples/inspect_scorer.py [--out DIR]     # no key, no network

1. ``assay evaluate`` measures a judge on 20 labelled HarmBench items; the judge is the stub
   persona of ``examples/stub_judge.py`` (it answers from the human labels), served on 127.0.0.1.
2. ``assay.integrations.inspect.scorer(run_dir)`` turns that run's judge into an Inspect
   ``@scorer`` carrying what the run measured (κ with its CI, n) in each Score's metadata.
3. An Inspect eval whose solver is ``mockllm/model`` — answering two other HarmBench prompts
   with their recorded generations — is scored by it.

Inspect's mockllm counts an answer's tokens with tiktoken when the answer carries no usage, and
tiktoken downloads its tokenizer on first use: each output here carries its usage, so nothing
is fetched (``HF_HUB_OFFLINE=1`` and a machine without network run it as well).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # examples/stub_judge.py: the judge's persona

from stub_judge import DATA, persona  # noqa: E402

from assay.evaluation import evaluate  # noqa: E402
from assay.inputs import EvaluateConfig  # noqa: E402
from assay.lm import StubServer  # noqa: E402

MEASURED = 20  # labelled items the judge is measured on; the eval uses the next two


def judge_config(api_base: str) -> dict:
    texts = HERE / "data" / "jrh" / "harmbench"
    return {
        "name": "harmbench-judge",
        "model": "openai/stub-strong",  # a real one: openai/gpt-4o (and no api_base)
        "api_base": api_base,
        "instruction": (texts / "instruction.txt").read_text(encoding="utf-8"),
        "rubric": (texts / "rubric.txt").read_text(encoding="utf-8"),
        "scale": {"kind": "binary", "labels": ["False", "True"]},
        "max_tokens": 64,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("."), help="where runs and logs go")
    args = parser.parse_args()
    with DATA.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    respond, probs = persona(rows)
    with StubServer(respond=respond, verdict_probs=probs, model="stub-strong") as stub:
        config = EvaluateConfig.model_validate(
            {
                "name": "inspect-example",
                "data": {
                    "path": str(DATA),
                    "columns": {
                        "id": "idx",
                        "request": "test_case",
                        "response": "generation",
                        "expected": "human_consensus",
                    },
                    "limit": MEASURED,
                },
                "judge": judge_config(stub.base_url),
                "tracking": {"enabled": False},
            }
        )
        res = evaluate(config, workdir=args.out, progress=False)
        print(f"measured: {res.run_dir}")
        return score_in_inspect(res.run_dir, rows[MEASURED : MEASURED + 2], args.out / "logs")


def score_in_inspect(run_dir: Path, picked: list[dict[str, str]], log_dir: Path) -> int:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.solver import generate

    from assay.integrations.inspect import scorer

    outputs = []
    for row in picked:
        out = ModelOutput.from_content("mockllm/model", row["generation"])
        words = len(row["test_case"].split()), len(row["generation"].split())
        # the usage given: mockllm would count it with tiktoken, which downloads its tokenizer
        out.usage = ModelUsage(
            input_tokens=words[0], output_tokens=words[1], total_tokens=sum(words)
        )
        outputs.append(out)
    task = Task(
        dataset=[Sample(input=row["test_case"], id=row["idx"]) for row in picked],
        solver=generate(),
        scorer=scorer(run_dir),
    )
    model = get_model("mockllm/model", custom_outputs=outputs)
    (log,) = eval(task, model=model, log_dir=str(log_dir), display="none")
    if log.status != "success":
        print(f"the eval failed: {log.error}", file=sys.stderr)
        return 1
    print({k: m.value for k, m in log.results.scores[0].metrics.items()})
    for sample, row in zip(log.samples, picked, strict=True):
        score = sample.scores["harmbench-judge"]
        print(
            f"item {row['idx']}: verdict {score.value} (human label {row['human_consensus']}), "
            f"judge's κ {score.metadata['assay.kappa_categorical']} on "
            f"n = {score.metadata['assay.n']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
