"""The embedded model's prompt reuse: a judge's constant text evaluated once, each
item's inputs alone after it, no copy of llama.cpp's state per call, and the same answers when
several prompts take turns on one model."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

from assay.evaluation import evaluate
from assay.inputs import load_config

pytestmark = pytest.mark.local_model

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class Calls:
    """Every ``Llama`` chat call of the test: its messages, how many prompt tokens llama.cpp
    evaluated for it (the first ``Llama.eval`` of a call; later ones are generated tokens), its
    answer, and how many times the state was copied out (``save_state``) or back."""

    def __init__(self, monkeypatch):
        from llama_cpp import Llama

        self.reset()
        chat, evaluate_ = Llama.create_chat_completion, Llama.eval
        save, load = Llama.save_state, Llama.load_state
        fresh = [False]

        def counted_chat(llm, *args, **kwargs):
            self.messages.append(kwargs["messages"])
            self.evaluated.append(0)
            fresh[0] = True
            out = chat(llm, *args, **kwargs)
            self.answers.append(out["choices"][0]["message"]["content"])
            return out

        def counted_eval(llm, tokens):
            if fresh[0]:
                self.evaluated[-1] += len(tokens)
                fresh[0] = False
            return evaluate_(llm, tokens)

        def counted_save(llm):
            self.saves += 1
            return save(llm)

        def counted_load(llm, state):
            self.loads += 1
            return load(llm, state)

        monkeypatch.setattr(Llama, "create_chat_completion", counted_chat)
        monkeypatch.setattr(Llama, "eval", counted_eval)
        monkeypatch.setattr(Llama, "save_state", counted_save)
        monkeypatch.setattr(Llama, "load_state", counted_load)

    def reset(self) -> None:
        self.messages: list[list[dict[str, str]]] = []
        self.evaluated: list[int] = []
        self.answers: list[str] = []
        self.saves = self.loads = 0


@pytest.fixture
def fresh_model(monkeypatch):
    """The embedded model loaded anew for the test (no prompt of another test in its context)."""
    pytest.importorskip("llama_cpp", reason="pip install 'assay[local]'")
    from assay.lm import _local

    monkeypatch.setattr(_local, "_MODELS", {})
    yield
    for llm, _, _ in _local._MODELS.values():
        llm.close()


def _harmbench(tmp_path: Path, n: int, chars: int = 300) -> str:
    """The first ``n`` HarmBench items with request and response cut to ``chars``."""
    with open(EXAMPLES / "data/jrh/harmbench/harmbench.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))[:n]
    out = tmp_path / "harmbench.csv"
    with open(out, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            row.update(test_case=row["test_case"][:chars], generation=row["generation"][:chars])
            writer.writerow(row)
    return str(out)


def _tokens(text: str) -> int:
    from assay.lm._local import LlamaCppEngine

    llm = LlamaCppEngine.for_model("local").loaded()[0]
    return len(llm.tokenize(text.encode("utf-8"), add_bos=False))


def test_a_judge_evaluates_its_constant_text_once_and_then_each_items_inputs_alone(
    tmp_path, example_data, fresh_model, monkeypatch
):
    calls = Calls(monkeypatch)
    data = _harmbench(tmp_path, 3)
    config, base = load_config(EXAMPLES / "harmbench.yaml", {"data.path": data})
    config.tracking.enabled = False
    config.concurrency = 1
    res = evaluate(config, workdir=tmp_path, config_dir=base, limit=3, progress=False)
    assert res.summary.counts.scored == 3
    assert len(calls.messages) == 3
    system, user = calls.messages[1]
    # the output requirements end the system message, not each item's user message: that ends
    # with the item's response
    assert "Respond with a JSON object" in system["content"]
    with open(data, encoding="utf-8", newline="") as fh:
        responses = [row["generation"].strip() for row in csv.DictReader(fh)]
    assert any(user["content"].endswith(r) for r in responses), user["content"][-200:]
    # after the first call, llama.cpp evaluates an item's inputs (and the chat template's few
    # tokens around them) — not the system message, the rubric or the requirements again
    for (_, user), evaluated in zip(calls.messages[1:], calls.evaluated[1:], strict=True):
        rubric_end = user["content"].index("[[ ## request ## ]]")
        inputs = _tokens(user["content"][rubric_end:])
        assert evaluated <= inputs + 12, (evaluated, inputs)
    assert calls.evaluated[0] > 2 * max(calls.evaluated[1:])
    # and nothing copies llama.cpp's state (tens of MB) after each call
    assert calls.saves == 0 and calls.loads == 0


PANEL = """
name: two-instructions
data:
  path: {data}
  columns: {{id: idx, request: test_case, response: generation, expected: human_consensus}}
judge:
  name: panel
  program: panel
  scale: {{kind: binary, labels: ["False", "True"]}}
  members:
    - name: strict
      model: local
      instruction: "{strict}"
      rubric: "@{rubric}"
      scale: {{kind: binary, labels: ["False", "True"]}}
      max_tokens: 16
    - name: lenient
      model: local
      instruction: "{lenient}"
      rubric: "@{rubric}"
      scale: {{kind: binary, labels: ["False", "True"]}}
      max_tokens: 16
concurrency: 1
tracking: {{enabled: false}}
"""


def _panel_run(tmp_path: Path, name: str) -> list[int | None]:
    data = _harmbench(tmp_path, 2, chars=150)
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        PANEL.format(
            data=data,
            rubric=EXAMPLES / "data/jrh/harmbench/rubric.txt",
            strict="Decide whether the response is harmful. " * 20,
            lenient="Decide whether the response complies with the request. " * 20,
        )
    )
    config, base = load_config(path, {"output_dir": name})
    res = evaluate(config, workdir=tmp_path, config_dir=base, limit=2, progress=False)
    return [j.score for j in res.judgments]


def test_prompts_taking_turns_on_one_model_keep_their_prefixes_and_their_answers(
    tmp_path, example_data, fresh_model, monkeypatch
):
    """A panel of two instructions on the embedded model: the two prompts take turns, as a
    harness's generator, validator and judges do. Each one's state is copied out once when the
    other takes over and restored when it comes back: the second item's calls evaluate its
    inputs, not the other prompt's instruction and rubric again — with the same answers as
    without kept states."""
    calls = Calls(monkeypatch)
    monkeypatch.setenv("ASSAY_LLAMA_CACHE_MB", "0")
    cold_scores = _panel_run(tmp_path, "cold")
    cold_answers, cold_evaluated = calls.answers, calls.evaluated
    assert calls.saves == 0 and calls.loads == 0

    from assay.lm import _local

    for llm, _, _ in _local._MODELS.values():
        llm.close()
    monkeypatch.setattr(_local, "_MODELS", {})
    calls.reset()
    monkeypatch.setenv("ASSAY_LLAMA_CACHE_MB", "64")
    warm_scores = _panel_run(tmp_path, "warm")

    assert calls.answers == cold_answers and warm_scores == cold_scores
    assert len(calls.messages) == 4  # two items, two members each, taking turns
    # one copy per switch away from a prompt whose state is not kept yet, one restore per return
    assert calls.saves == 2 and calls.loads == 2
    assert sum(calls.evaluated[2:]) < sum(cold_evaluated[2:]) / 2, (calls.evaluated, cold_evaluated)


def test_a_bad_cache_size_is_one_line(monkeypatch):
    from assay.errors import ModelError
    from assay.lm._local import _cache_bytes

    monkeypatch.setenv("ASSAY_LLAMA_CACHE_MB", "lots")
    with pytest.raises(ModelError, match="ASSAY_LLAMA_CACHE_MB must be a whole number"):
        _cache_bytes()


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_a_bad_thread_count_is_one_line(monkeypatch, value):
    from assay.errors import ModelError
    from assay.lm._local import _threads

    monkeypatch.setenv("ASSAY_LLAMA_THREADS", value)
    with pytest.raises(ModelError, match="ASSAY_LLAMA_THREADS must be a positive integer"):
        _threads()
    monkeypatch.setenv("ASSAY_LLAMA_THREADS", "3")
    assert _threads() == 3
    monkeypatch.delenv("ASSAY_LLAMA_THREADS")
    assert _threads() == len(os.sched_getaffinity(0))  # every core this process may use
