"""An evaluate run streams its items and judgments: the pool holds a bounded window of tasks,
the result's judgments and items are read back only when asked for, and the metrics are
those of the judgments held as a list."""

from __future__ import annotations

import threading
from pathlib import Path

import assay.runs._judging as judging
from assay.evaluation import evaluate, summarize_run
from assay.inputs import EvaluateConfig, load_items
from assay.lm import StubServer
from assay.runs import RunStore
from assay.runs._pool import window
from assay.types import Judgment
from tests.live_objects import live_objects

N_ITEMS = 300
CONCURRENCY = 4


def config(csv: Path, stub: StubServer) -> EvaluateConfig:
    return EvaluateConfig.model_validate(
        {
            "name": "stream",
            "data": {"path": str(csv), "columns": {"id": "id"}},
            "judge": {
                "name": "j",
                "model": "openai/stub-model",
                "api_base": stub.base_url,
                "rubric": "A good response names a colour.",
                "scale": {"kind": "binary", "labels": ["False", "True"]},
            },
            "concurrency": CONCURRENCY,
            "tracking": {"enabled": False},
        }
    )


def items_csv(tmp_path: Path) -> Path:
    path = tmp_path / "items.csv"
    rows = ["id,request,response,expected"]
    rows += [f"i{k},What colour is item {k}?,Item {k} is blue.,{k % 2}" for k in range(N_ITEMS)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_the_run_holds_a_window_of_tasks_and_reads_its_judgments_back_on_demand(
    tmp_path, monkeypatch
):
    made, judged, most = [0], [0], [0]
    lock = threading.Lock()
    real_task, real_judge = judging.JudgeTask, judging.judge_one

    def counted(*args, **kwargs):
        with lock:
            made[0] += 1
            most[0] = max(most[0], made[0] - judged[0])
        return real_task(*args, **kwargs)

    def judge_one(*args, **kwargs):
        out = real_judge(*args, **kwargs)
        with lock:
            judged[0] += 1
        return out

    import assay.evaluation._evaluate as ev

    monkeypatch.setattr(ev, "JudgeTask", counted)
    monkeypatch.setattr(judging, "judge_one", judge_one)
    csv = items_csv(tmp_path)
    with StubServer() as stub:
        cfg = config(csv, stub)
        result = evaluate(cfg, workdir=tmp_path, progress=False)
    assert made[0] == judged[0] == N_ITEMS
    assert most[0] <= window(CONCURRENCY)  # not the 300 tasks built up front
    assert "judgments" not in vars(result) and "items" not in vars(result)  # not read yet

    store = RunStore(result.run_dir, run_hash=result.summary.run_hash)
    on_disk = {j.item_id: j for j in store.records("judgments.jsonl", Judgment)}
    items = load_items(cfg.data, cfg.judge.scale)
    assert result.judgments == [on_disk[it.id] for it in items]
    assert result.items == items
    # the metrics of the streamed run are those of its judgments held as a list
    listed = summarize_run(
        result.judgments,
        {it.id: it.expected for it in items},
        cfg.judge.scale,
        threshold=cfg.threshold,
        n_resamples=cfg.bootstrap.n_resamples,
        confidence=cfg.bootstrap.confidence,
        seed=cfg.bootstrap.seed,
    )
    keep = {"metrics", "counts", "usage", "confusion_matrix", "calibration", "disagreements"}
    # as JSON: κ of a judge that gave one verdict is nan, which equals nothing
    assert result.summary.model_dump_json(include=keep) == listed.model_dump_json(include=keep)


def test_judging_holds_a_slice_of_items_not_the_data_set(tmp_path, monkeypatch):
    """The items to judge are read from the stream a thousand at a time: while 2,500 items are
    judged, never more than that slice and the pool's window of them are alive (not every
    item read up front, which held a run's first 100,000 items with their texts), and DSPy's
    trace keeps none of their predictions."""
    import dspy

    from assay.types import Item

    n_items, live, judged = 2_500, [0], [0]
    lock = threading.Lock()
    real_judge = judging.judge_one

    def judge_one(*args, **kwargs):
        out = real_judge(*args, **kwargs)
        with lock:
            judged[0] += 1
            if judged[0] % 250 == 0:
                live[0] = max(live[0], len(live_objects(Item, collect=False)))
        return out

    monkeypatch.setattr(judging, "judge_one", judge_one)
    csv = tmp_path / "items.csv"
    rows = ["id,request,response,expected"]
    rows += [f"i{k},What colour is item {k}?,Item {k} is blue.,{k % 2}" for k in range(n_items)]
    csv.write_text("\n".join(rows) + "\n", encoding="utf-8")
    traced = len(dspy.settings.trace)  # DSPy's trace of predictions with their inputs
    with StubServer() as stub:
        cfg = config(csv, stub).model_copy(update={"concurrency": 8})
        result = evaluate(cfg, workdir=tmp_path, progress=False)
    assert result.summary.counts.judged == judged[0] == n_items
    assert len(dspy.settings.trace) == traced  # no prediction kept there, with its item
    assert 0 < live[0] <= 1_000 + window(8) + 8, live[0]
