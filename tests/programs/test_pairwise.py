"""``task: pairwise``: its scale, exact swapping, the seeded presentation order recorded per
judgment, verdicts mapped back to the canonical pair, and evaluate's accuracy and κ."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, cohen_kappa_score

from assay.evaluation import evaluate
from assay.inputs import EvaluateConfig
from assay.lm import ScriptedEngine, register_script
from assay.programs import (
    PAIRWISE,
    PAIRWISE_NO_TIE,
    JudgeConfig,
    build_judge,
    mirror_preference,
    presentation_order,
    swap_pair,
)
from assay.runs import judge_one
from assay.types import Item

A, B, TIE = 0, 1, 2


def pair(i: int = 0, expected: int | None = A, **meta) -> Item:
    return Item(
        id=f"p{i}",
        request=f"Question {i}?",
        response=f"answer one {i}",
        expected=expected,
        meta={"response_b": f"answer two {i}", "group": "g", **meta},
    )


def test_the_pairwise_scale_defaults_to_a_b_tie_and_a_no_tie_scale_is_allowed():
    assert JudgeConfig(task="pairwise", model="scripted:x").scale == PAIRWISE
    no_tie = JudgeConfig(task="pairwise", model="scripted:x", scale=PAIRWISE_NO_TIE.model_dump())
    assert no_tie.scale.verdict_options == ["A", "B"]
    with pytest.raises(ValueError, match="pairwise judge's scale is categorical"):
        JudgeConfig(task="pairwise", model="scripted:x", scale="binary")


@given(
    st.text(max_size=30),
    st.text(max_size=30),
    st.text(max_size=30),
    st.sampled_from([A, B, TIE, None]),
    st.sampled_from([None, "AB", "BA"]),
)
def test_swapping_exchanges_the_responses_and_mirrors_the_label_and_nothing_else(
    request, a, b, expected, order
):
    meta = {"response_b": b, "prompt_name": "x", **({"order": order} if order else {})}
    item = Item(id="i", request=request, response=a, expected=expected, meta=meta)
    swapped = swap_pair(item)
    assert swapped.response == b and swapped.meta["response_b"] == a
    assert swapped.expected == {A: B, B: A, TIE: TIE, None: None}[expected]
    rest = {k: v for k, v in swapped.model_dump().items() if k not in ("response", "expected")}
    orig = {k: v for k, v in item.model_dump().items() if k not in ("response", "expected")}
    rest["meta"].pop("response_b"), orig["meta"].pop("response_b")
    assert rest == orig
    assert swap_pair(swapped) == item


def test_mirror_preference_on_both_scales():
    assert [mirror_preference(x) for x in (A, B, TIE, None)] == [B, A, TIE, None]
    assert [mirror_preference(x, PAIRWISE_NO_TIE) for x in (A, B)] == [B, A]


def test_presentation_order_is_seeded_stable_under_edits_of_a_and_can_be_forced():
    orders = [presentation_order(pair(i)) for i in range(400)]
    assert orders == [presentation_order(pair(i)) for i in range(400)]  # deterministic
    assert 0.4 < orders.count("AB") / 400 < 0.6  # both orders, about evenly
    edited = pair(3).model_copy(update={"response": "answer one 3\n\n(with a blank line)"})
    assert presentation_order(edited) == presentation_order(pair(3))
    assert presentation_order(pair(3, order="BA")) == "BA"
    assert presentation_order(pair(3, order="AB")) == "AB"


def _first_shown_engine() -> ScriptedEngine:
    """Always prefers the response shown first; records what it was shown."""
    return ScriptedEngine(respond=lambda call: {"verdict": "A"})


@pytest.mark.parametrize("order,canonical", [("AB", A), ("BA", B)])
def test_the_verdict_is_mapped_back_to_the_canonical_pair_and_the_order_recorded(order, canonical):
    engine = _first_shown_engine()
    register_script("pairwise-first", lambda: engine)
    cfg = JudgeConfig(name="pj", task="pairwise", model="scripted:pairwise-first", rubric="r")
    j = judge_one(build_judge(cfg), pair(1, order=order), cfg)
    assert j.score == canonical and j.label == ("A" if canonical == A else "B")
    assert j.raw["order"] == order and j.raw["shown_verdict"] == "A"
    shown_first = engine.calls[-1].field("response_a")
    assert shown_first == ("answer one 1" if order == "AB" else "answer two 1")


def test_an_item_without_response_b_is_a_data_error_naming_the_field():
    from assay.errors import DataError

    cfg = JudgeConfig(task="pairwise", model="scripted:pairwise-first")
    with pytest.raises(DataError, match="response_b"):
        build_judge(cfg).inputs(Item(id="x", request="q", response="a"))


def test_evaluate_a_pairwise_judge_accuracy_and_kappa_against_the_reference(tmp_path):
    prefs = ["A", "B", "tie", "A", "B", "B", "A", "tie", "A", "B"]
    path = tmp_path / "pairs.csv"
    lines = ["id,request,response,response_b,expected"]
    for i, p in enumerate(prefs):
        a, b = (f"GOOD {i}", f"bad {i}") if p == "A" else (f"bad {i}", f"GOOD {i}")
        if p == "tie":
            a, b = f"GOOD {i}", f"GOOD too {i}"
        lines.append(f"r{i},Q{i}?,{a},{b},{p}")
    path.write_text("\n".join(lines) + "\n")

    def respond(call):
        a, b = call.field("response_a") or "", call.field("response_b") or ""
        if "GOOD" in a and "GOOD" in b:
            return {"verdict": "A"}  # misses ties: says the first one shown
        return {"verdict": "A" if "GOOD" in a else "B"}

    register_script("pairwise-good", lambda: ScriptedEngine(respond=respond))
    config = EvaluateConfig.model_validate(
        {
            "name": "pw",
            "data": {"path": str(path), "columns": {"id": "id"}},
            "judge": {"task": "pairwise", "model": "scripted:pairwise-good", "rubric": "r"},
            "tracking": {"enabled": False},
            "output_dir": str(tmp_path / "runs"),
        }
    )
    res = evaluate(config, workdir=tmp_path, progress=False)
    ref = [{"A": A, "B": B, "tie": TIE}[p] for p in prefs]
    got = [j.score for j in res.judgments]
    # a tie is shown in a seeded order: the judge's "A" is the canonical A or B
    for j, item in zip(res.judgments, res.items, strict=True):
        assert j.raw["order"] == presentation_order(item)
    m = res.summary.model_dump()["metrics"]
    assert m["accuracy"]["value"] == pytest.approx(accuracy_score(ref, got))
    assert m["kappa_categorical"]["value"] == pytest.approx(cohen_kappa_score(ref, got))
    assert got[:2] == [A, B] and m["accuracy"]["value"] == pytest.approx(0.8)


def test_a_pairwise_judge_in_a_harness_on_another_scale_is_a_config_error():
    from assay.reliability import HarnessConfig

    with pytest.raises(ValueError, match="pairwise judge's scale is categorical"):
        HarnessConfig.model_validate(
            {
                "name": "h",
                "data": {"path": "x.csv"},
                "scale": "binary",
                "judges": [{"name": "p", "task": "pairwise", "model": "scripted:x"}],
                "tests": {"format_vertical": {}},
            }
        )


def test_a_pairwise_panel_aggregates_canonical_verdicts_and_records_each_members_order():
    register_script("pw-first", lambda: ScriptedEngine(respond=lambda c: {"verdict": "A"}))
    register_script(
        "pw-content",
        lambda: ScriptedEngine(
            respond=lambda c: {"verdict": "A" if "one" in c.field("response_a") else "B"}
        ),
    )
    members = [
        {"name": n, "task": "pairwise", "model": f"scripted:{m}"}
        for n, m in (("m1", "pw-content"), ("m2", "pw-content"), ("m3", "pw-first"))
    ]
    cfg = JudgeConfig(name="panel", task="pairwise", program="panel", members=members)
    assert cfg.scale == PAIRWISE
    for order in ("AB", "BA"):
        j = judge_one(build_judge(cfg), pair(2, order=order), cfg)
        # the two content judges prefer "answer one" (canonical A) in both orders: majority A
        assert j.score == A
        assert [m["order"] for m in j.members] == [order] * 3
        first = j.members[2]["score"]
        assert first == (A if order == "AB" else B)  # the first-shown judge follows the order
