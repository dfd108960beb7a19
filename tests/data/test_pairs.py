"""Labelled pairs from a score column: the higher score is preferred, equal scores and identical
responses are skipped and counted, the cap keeps every prompt, nothing left is one error."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from assay.data import PairsConfig, build_pairs
from assay.errors import ConfigError, DataError
from assay.inputs._config import DataConfig
from assay.inputs._items import load_items
from assay.programs import PAIRWISE
from assay.scale import Scale
from assay.types import Item

PERSUADE = Path(__file__).resolve().parents[2] / "examples" / "data" / "jrh" / "persuade"


def row(i: str, score, request="Q?", response=None, **meta) -> Item:
    return Item(id=i, request=request, response=response or f"text {i}", meta={"s": score, **meta})


def test_the_higher_score_is_preferred_and_a_is_a_seeded_coin():
    items = [row(f"r{i}", i) for i in range(12)]  # 66 pairs, all with different scores
    pairs, counts = build_pairs(items, PairsConfig(score="s"))
    assert counts["pairs"] == len(pairs) == 66 and counts["candidates"] == 66
    for p in pairs:
        sa, sb = p.meta["pair"]["score_a"], p.meta["pair"]["score_b"]
        assert p.expected == (0 if sa > sb else 1)
        assert p.response == f"text {p.meta['pair']['a']}"
        assert p.meta["response_b"] == f"text {p.meta['pair']['b']}"
    share_a = Counter(p.expected for p in pairs)[0] / len(pairs)
    assert 0.3 < share_a < 0.7  # a judge that always says "A" cannot look accurate
    again, _ = build_pairs(items, PairsConfig(score="s"))
    assert again == pairs  # seeded
    other, _ = build_pairs(items, PairsConfig(score="s", seed=7))
    assert [p.id for p in other] != [p.id for p in pairs]


def test_equal_scores_identical_responses_missing_scores_are_skipped_and_counted():
    items = [
        row("a", 3),
        row("b", 3),  # equal to a
        row("c", 5, response="text a"),  # same text as a (c vs a: identical responses)
        row("d", None),  # no score
        row("e", 1, request="Other?"),  # another prompt: no partner
    ]
    pairs, counts = build_pairs(items, PairsConfig(score="s"))
    assert [{p.meta["pair"]["a"], p.meta["pair"]["b"]} for p in pairs] == [{"b", "c"}]
    assert counts == {
        "candidates": 3,
        "skipped_missing_score": 1,
        "skipped_equal_scores": 1,
        "skipped_identical_responses": 1,
        "skipped_different_requests": 0,
        "left_out_by_cap": 0,
        "pairs": 1,
    }


def test_nothing_left_is_one_data_error_naming_the_field():
    items = [row("a", 2), row("b", 2, response="text a"), row("c", 4, response="text  a ")]
    with pytest.raises(DataError, match="no pair left") as err:
        build_pairs(items, PairsConfig(score="s"))
    assert "pairs" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(DataError, match="pairs.score"):
        build_pairs(items, PairsConfig(score="nope"))
    with pytest.raises(DataError, match="not a number"):
        build_pairs([row("a", "high"), row("b", 1)], PairsConfig(score="s"))


def test_group_by_and_the_cap_round_robin_over_prompts():
    items = [row(f"{g}{i}", i, request="same", topic=g) for g in "xyz" for i in range(5)]
    pairs, counts = build_pairs(items, PairsConfig(score="s", group_by="topic", max_pairs=9))
    assert len(pairs) == 9 and counts["left_out_by_cap"] == 3 * 10 - 9
    assert Counter(p.meta["topic"] for p in pairs) == {"x": 3, "y": 3, "z": 3}


def test_persuade_pairs_through_load_items():
    data = DataConfig(
        path=str(PERSUADE / "persuade_sample.csv"),
        columns={"id": "essay_id", "request": "assignment", "response": "full_text"},
        pairs={"score": "holistic_essay_score", "group_by": "prompt_name", "max_pairs": 40},
    )
    notes: dict = {}
    pairs = load_items(data, PAIRWISE, notes=notes)
    c = notes["pairs"]
    assert len(pairs) == c["pairs"] == 40
    assert c["skipped_equal_scores"] > 0
    assert (
        c["candidates"]
        == sum(c[k] for k in c if k.startswith("skipped")) + 40 + c["left_out_by_cap"]
    )
    for p in pairs:
        assert p.meta["pair"]["score_a"] != p.meta["pair"]["score_b"]
        assert p.meta["prompt_name"] == p.meta["pair"]["group"]
    with pytest.raises(ConfigError, match="data.pairs: pairs need the pairwise scale"):
        load_items(data, Scale(kind="ordinal", min=1, max=6))


def test_evaluate_on_pairs_reports_what_was_built_and_skipped(tmp_path):
    from assay.evaluation import evaluate
    from assay.inputs import EvaluateConfig
    from assay.lm import ScriptedEngine, register_script

    path = tmp_path / "scored.csv"
    path.write_text("id,request,response,score\na,Q?,good one,5\nb,Q?,bad one,1\nc,Q?,meh,1\n")
    register_script(
        "pairs-judge",
        lambda: ScriptedEngine(
            respond=lambda call: {"verdict": "A" if "good" in call.field("response_a") else "B"}
        ),
    )
    config = EvaluateConfig.model_validate(
        {
            "name": "pairs",
            "data": {"path": str(path), "columns": {"id": "id"}, "pairs": {"score": "score"}},
            "judge": {"task": "pairwise", "model": "scripted:pairs-judge"},
            "tracking": {"enabled": False},
            "output_dir": str(tmp_path / "runs"),
        }
    )
    res = evaluate(config, workdir=tmp_path, progress=False)
    assert res.summary.pairs["pairs"] == 2 and res.summary.pairs["skipped_equal_scores"] == 1
    assert res.summary.model_dump()["metrics"]["accuracy"]["value"] == 1.0
    assert "skipped_equal_scores 1" in (res.run_dir / "report.md").read_text()
