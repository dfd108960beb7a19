"""Pairing ToolEmu evaluator lines never loses data, concatenated multi-run files included.

ToolEmu restarts ``eval_id`` at 0 for every agent run, so evaluator outputs of several runs
concatenated into one file repeat every id. The files here are built from the shared ones:
four "agent runs" of the same 15 trajectories, one after the other.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score

from assay.cli import main
from assay.data import (
    align_evaluation_files,
    load_toolemu_evaluations,
    load_toolemu_trajectories,
    pair_evaluations,
    parse_toolemu_evaluation,
    read_evaluator_scores,
)
from assay.errors import DataError
from assay.inputs import load_config
from assay.inputs._items import load_items

TRAJ = "toolemu/trajectories/gpt-4o-mini_r0-15_trajectories.jsonl"
SAFE = "toolemu/trajectories/gpt-4o-mini_r0-15_judge-{}_eval_agent_safe.jsonl"
RUNS = 4


def lines(path: Path) -> list[str]:
    return [ln for ln in path.read_text().splitlines() if ln.strip()]


def concat(src: Path, dst: Path, times: int = RUNS) -> Path:
    dst.write_text("".join(ln + "\n" for _ in range(times) for ln in lines(src)))
    return dst


def scores(path: Path) -> list[int]:
    return [json.loads(ln)["eval_scores"]["ToolCallRisk"] for ln in lines(path)]


@pytest.fixture
def multi(example_data, tmp_path):
    """(trajectories, gpt-5-mini evals, qwen evals), each four runs long (60 lines)."""
    return (
        concat(example_data / TRAJ, tmp_path / "traj.jsonl"),
        concat(example_data / SAFE.format("gpt-5-mini"), tmp_path / "gpt.jsonl"),
        concat(example_data / SAFE.format("qwen3-32b"), tmp_path / "qwen.jsonl"),
    )


def agreement_json(capsys, *argv: str) -> dict:
    assert main(["agreement", "--json", *argv]) == 0
    return json.loads(capsys.readouterr().out)


def test_concatenated_runs_pair_every_line(multi, capsys):
    _, gpt, qwen = multi
    out = agreement_json(capsys, str(gpt), str(qwen), "--scale", "0-3", "--threshold", "2")
    assert out["n"] == 15 * RUNS
    assert out["paired_by"] == "line"
    assert out["unpaired"] == {"reference": 0, "candidate": 0}
    ref, cand = scores(gpt), scores(qwen)
    assert out["metrics"]["kappa_quadratic"]["value"] == pytest.approx(
        cohen_kappa_score(ref, cand, labels=[0, 1, 2, 3], weights="quadratic")
    )


def test_unique_eval_ids_pair_by_id_whatever_the_order(example_data, tmp_path, capsys):
    gpt = example_data / SAFE.format("gpt-5-mini")
    shuffled = lines(example_data / SAFE.format("qwen3-32b"))
    random.Random(3).shuffle(shuffled)
    qwen = tmp_path / "qwen_shuffled.jsonl"
    qwen.write_text("\n".join(shuffled) + "\n")
    out = agreement_json(capsys, str(gpt), str(qwen), "--scale", "0-3")
    assert (out["n"], out["paired_by"]) == (15, "eval_id")
    ref = scores(gpt)
    cand = scores(example_data / SAFE.format("qwen3-32b"))  # original order = eval_id order
    assert out["metrics"]["kappa_categorical"]["value"] == pytest.approx(
        cohen_kappa_score(ref, cand, labels=[0, 1, 2, 3])
    )


def test_missing_eval_ids_are_counted_as_unpaired(example_data, tmp_path, capsys):
    gpt = example_data / SAFE.format("gpt-5-mini")
    qwen = tmp_path / "qwen_part.jsonl"
    qwen.write_text("\n".join(lines(example_data / SAFE.format("qwen3-32b"))[:11]) + "\n")
    out = agreement_json(capsys, str(gpt), str(qwen), "--scale", "0-3")
    assert out["n"] == 11 and out["paired_by"] == "eval_id"
    assert out["unpaired"] == {"reference": 4, "candidate": 0}


def test_repeated_ids_that_do_not_align_are_an_error_naming_them(multi, tmp_path, capsys):
    _, gpt, _ = multi
    short = tmp_path / "short.jsonl"
    short.write_text("\n".join(lines(gpt)[:45]) + "\n")
    assert main(["agreement", "--json", str(gpt), str(short), "--scale", "0-3"]) == 2
    err = capsys.readouterr().err
    assert "eval_id repeats (0, 1, 2, 3, 4 and 10 more)" in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_expected_from_concatenated_runs_labels_every_trajectory(multi, tmp_path):
    traj, gpt, _ = multi
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        f"name: multi\ndata: {{format: toolemu, path: {traj}, expected_from: {gpt}}}\n"
        "judge: {task: toolemu_safety, model: scripted:none}\n"
    )
    config, _ = load_config(cfg)
    items = load_items(config.data, config.judge.scale)
    assert len(items) == 15 * RUNS
    assert [it.expected for it in items] == scores(gpt)


def test_expected_from_with_a_misaligned_file_is_a_one_line_error(multi, tmp_path):
    traj, gpt, _ = multi
    short = tmp_path / "short.jsonl"
    short.write_text("\n".join(lines(gpt)[:50]) + "\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        f"name: multi\ndata: {{format: toolemu, path: {traj}, expected_from: {short}}}\n"
        "judge: {task: toolemu_safety, model: scripted:none}\n"
    )
    config, _ = load_config(cfg)
    with pytest.raises(DataError, match="50 lines for 60 trajectories"):
        load_items(config.data, config.judge.scale)


def test_toolemu_agreement_reads_concatenated_runs_completely(multi):
    traj, gpt, _ = multi
    trajectories = load_toolemu_trajectories(traj)
    by_id = read_evaluator_scores(gpt, trajectories, key="ToolCallRisk")
    assert len(by_id) == 15 * RUNS
    assert [by_id[t.id] for t in trajectories] == scores(gpt)


def test_pair_evaluations_keys_unique_ids_and_checks_their_range(tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_text(
        "".join(
            json.dumps({"eval_id": i, "eval_scores": {"ToolCallRisk": i % 4}}) + "\n"
            for i in (2, 0, 1)
        )
    )
    rows = load_toolemu_evaluations(path)
    paired, how = pair_evaluations(rows, 3, path=path)
    assert how == "eval_id" and {k: v["score"] for k, v in paired.items()} == {2: 2, 0: 0, 1: 1}
    with pytest.raises(DataError, match="eval_id 2 has no trajectory"):
        pair_evaluations(rows, 2, path=path)


def test_files_without_eval_ids_pair_by_line(tmp_path):
    rows = [{"line": i, "eval_id": i, "score": i % 4, "raw": {}} for i in range(5)]
    pairs, how = align_evaluation_files(rows, rows, paths=(tmp_path / "a", tmp_path / "b"))
    assert how == "line" and len(pairs) == 5


def test_off_scale_score_is_unscored_not_an_abort(example_data, tmp_path, capsys):
    rows = lines(example_data / SAFE.format("qwen3-32b"))
    bad = json.loads(rows[0])
    bad["eval_scores"]["ToolCallRisk"] = 5
    bad["Overall Quantitative Score"] = 5
    bad["Overall Qualitative Label"] = "five"
    rows[0] = json.dumps(bad)
    cand = tmp_path / "cand.jsonl"
    cand.write_text("\n".join(rows) + "\n")
    out = agreement_json(capsys, str(example_data / SAFE.format("gpt-5-mini")), str(cand))
    assert out["n"] == 14 and out["unscored"] == {"reference": 0, "candidate": 1}


def test_label_stated_only_in_the_evaluator_thought():
    record = {
        "Evaluator Thought": "... 3. **Overall Qualitative Label:** The agent ... so "
        "**Likely Severe Risk (0)** applies.\n\n**Overall Quantitative Score:** see above",
        "Evaluator Log Summary": "",
    }
    assert parse_toolemu_evaluation(record, key="ToolCallRisk") == (0, "Likely Severe Risk")
    only_score = {"Evaluator Thought": "Overall Quantitative Score: **2**"}
    assert parse_toolemu_evaluation(only_score, key="ToolCallRisk") == (2, None)
    nothing = {"Evaluator Thought": "I could not decide."}
    assert parse_toolemu_evaluation(nothing, key="ToolCallRisk") == (None, None)


def test_a_markdown_only_evaluator_file_is_read_by_agreement_as_by_evaluate(
    example_data, tmp_path, capsys
):
    """An evaluator file whose lines state the verdict only in the markdown
    of ``Evaluator Thought`` (no ``eval_scores``, no label field) was refused by ``assay
    agreement`` ("not an assay judgments or ToolEmu evaluator file") while ``evaluate`` read
    it as reference labels. Both now read it with the same reader, to the same scores."""
    gpt, qwen = (example_data / SAFE.format(m) for m in ("gpt-5-mini", "qwen3-32b"))
    markdown = tmp_path / "gpt_markdown.jsonl"
    with markdown.open("w") as fh:
        for line in lines(gpt):
            record = json.loads(line)
            thought = (
                "The agent acted.\n\n"
                f"**Overall Qualitative Label:** **{record['Overall Qualitative Label']}**\n\n"
                f"**Overall Quantitative Score:** **{record['eval_scores']['ToolCallRisk']}**"
            )
            fh.write(
                json.dumps({"Evaluator Thought": thought, "eval_id": record["eval_id"]}) + "\n"
            )

    from_markdown = agreement_json(capsys, str(markdown), str(qwen), "--scale", "0-3")
    original = agreement_json(capsys, str(gpt), str(qwen), "--scale", "0-3")
    assert from_markdown["n"] == original["n"] == 15
    assert from_markdown["paired_by"] == "eval_id"
    assert from_markdown["metrics"] == original["metrics"]

    cfg = tmp_path / "c.yaml"  # evaluate's reader of the same file: the same scores
    cfg.write_text(
        f"name: md\ndata: {{format: toolemu, path: {example_data / TRAJ}, expected_from: "
        f"{markdown}}}\njudge: {{task: toolemu_safety, model: scripted:none}}\n"
    )
    config, _ = load_config(cfg)
    items = load_items(config.data, config.judge.scale)
    assert [it.expected for it in items] == scores(gpt)
