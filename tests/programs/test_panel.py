"""Panel aggregation: explicit tie rules, never list order; unscored members reported."""

from __future__ import annotations

import dspy
import pytest

from assay.lm import ScriptedEngine, ScriptedFailure
from assay.programs import JudgeConfig, Panel, aggregate_scores, build_judge

V = [1, 2, 3, 4, 5]


@pytest.mark.parametrize(
    ("scores", "method", "tie", "expected"),
    [
        ([1, 1, 3], "majority", "lower", 1),
        ([1, 3], "majority", "lower", 1),
        ([3, 1], "majority", "lower", 1),  # order does not matter
        ([3, 1], "majority", "higher", 3),
        ([3, 1], "majority", "unscored", None),
        ([1, 2, 4], "mean", "lower", 2),  # mean 2.33 → 2
        ([1, 2], "mean", "lower", 1),  # mean 1.5: tie between 1 and 2
        ([2, 1], "mean", "higher", 2),
        ([1, 2, 5, 5], "median", "lower", 2),  # median between 2 and 5
        ([1, 2, 5, 5], "median", "higher", 5),
        ([4, 1, 5], "median", "lower", 4),
        ([4, 1, 5], "min", "lower", 1),
        ([], "majority", "lower", None),
        # one member at the extreme: the mean moves (2.75 → 3), the trimmed mean does not
        ([2, 2, 2, 5], "mean", "lower", 3),
        ([2, 2, 2, 5], "trimmed_mean", "lower", 2),
        ([3, 3, 4, 5], "trimmed_mean", "lower", 3),  # 3.5 between 3 and 4
        ([3, 3, 4, 5], "trimmed_mean", "higher", 4),
        ([1, 4, 5], "trimmed_mean", "lower", 4),
        # fitted over the run: an item alone gets the members' majority
        ([4, 4, 2], "dawid_skene", "lower", 4),
        ([2, 4], "weighted", "higher", 4),
    ],
)
def test_aggregate_scores(scores, method, tie, expected):
    assert aggregate_scores(scores, method, tie, V) == expected


def member(name: str, answer) -> tuple[JudgeConfig, ScriptedEngine]:
    def respond(call):
        if answer is None:
            raise ScriptedFailure("down")
        return {"verdict": answer}

    return JudgeConfig(name=name, model=f"scripted:{name}", scale="1-5"), ScriptedEngine(
        respond=respond
    )


def make_panel(answers, **kw) -> Panel:
    members = [member(f"m{i}", a) for i, a in enumerate(answers)]
    engines = {cfg.name: eng for cfg, eng in members}
    cfg = JudgeConfig(name="panel", program="panel", members=[c for c, _ in members], **kw)

    def factory(c):
        return dspy.LM(f"scripted/{c.name}", engine=engines[c.name], num_retries=0)

    return build_judge(cfg, factory)


def call(panel):
    with dspy.context(adapter=dspy.JSONAdapter()):
        return panel(rubric="r", request="q", response="a")


def test_panel_majority_and_members_recorded():
    pred = call(make_panel([4, 4, 2]))
    assert pred.score == 4
    assert [m["score"] for m in pred.members] == [4, 4, 2]


def test_unscored_member_does_not_shrink_the_panel_silently():
    pred = call(make_panel([4, 4, None]))
    assert pred.score is None and pred.unscored == "panel_quorum"
    assert pred.members[2]["unscored"] == "lm_error"
    pred = call(make_panel([4, 4, None], quorum=2))
    assert pred.score == 4
    assert sum(m["score"] is None for m in pred.members) == 1


def test_panel_tie_is_broken_by_the_rule():
    assert call(make_panel([2, 4], tie_break="lower")).score == 2
    assert call(make_panel([4, 2], tie_break="higher")).score == 4
    pred = call(make_panel([2, 4], tie_break="unscored"))
    assert pred.score is None and pred.unscored == "tie"


def test_panel_config_checks():
    with pytest.raises(ValueError, match="at least two"):
        JudgeConfig(program="panel", members=[JudgeConfig(scale="1-5")])
