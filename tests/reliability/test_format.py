"""The ``format_*`` reliability tests: content-preserving whitespace perturbations."""

from __future__ import annotations

import random
import re
from functools import partial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.errors import ConfigError
from assay.reliability._probe import Dropped, Probe
from assay.reliability._registry import (
    GenerationContext,
    get_test,
    known_tests,
)
from assay.reliability.probes._whitespace import (
    LINE_BREAKS,
    add_indentation,
    add_intraline_space,
    add_vertical_space,
    collapse_whitespace,
    variant_rng,
)
from assay.scale import Scale
from assay.types import Item, Message, ToolCall

FORMAT_TESTS = ["format_vertical", "format_intraline", "format_indent"]
ASCII_WHITESPACE = set(" \t\r\n")
SCALE = Scale(kind="binary")

TEXT = (
    "The river runs east. It is wide and slow!  Boats cross it daily.\n"
    "\n"
    "Fish live there (mostly trout.) Herons hunt them.\n"
    "    An indented line with several words in it.\r\n"
    "Last line, no full stop"
)
LONG_TEXT = (
    TEXT + "\n" + "\n".join(f"Line {i} has a few words. And two sentences." for i in range(8))
)


# -- what "applicable" means, written independently of the implementation ------------------


def _content_lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.split())


def _has_word_gap(text: str) -> bool:
    return any(len(line.split()) >= 2 for line in text.splitlines())


_BREAK_CLASS = "".join(sorted(LINE_BREAKS)).replace("\r", "\\r").replace("\n", "\\n")
_SENTENCE_GAP = re.compile(rf"[.!?…‽。！？][\"')\]}}»”’]*[^\S{_BREAK_CLASS}]+(?=(\S))")


def _has_sentence_gap(text: str) -> bool:
    return any(not m.group(1).islower() for m in _SENTENCE_GAP.finditer(text))


PERTURBATIONS = {
    "vertical-paragraphs": (
        partial(add_vertical_space, mode="paragraphs"),
        lambda t: _content_lines(t) >= 2,
    ),
    "vertical-sentences": (
        partial(add_vertical_space, mode="sentences", extra_lines=1),
        _has_sentence_gap,
    ),
    "vertical-both": (
        add_vertical_space,
        lambda t: _content_lines(t) >= 2 or _has_sentence_gap(t),
    ),
    "intraline": (add_intraline_space, _has_word_gap),
    "intraline-all-gaps": (
        partial(add_intraline_space, min_run=2, max_run=2, rate=1.0),
        _has_word_gap,
    ),
    "indent-tabs": (partial(add_indentation, indent="tabs"), lambda t: bool(t.split())),
    "indent-spaces": (
        partial(add_indentation, indent="spaces", max_depth=1),
        lambda t: bool(t.split()),
    ),
    "indent-mixed": (add_indentation, lambda t: bool(t.split())),
}


def _assert_content_preserved(source: str, probe: str) -> None:
    assert collapse_whitespace(probe) == collapse_whitespace(source)
    assert [c for c in probe if not c.isspace()] == [c for c in source if not c.isspace()]
    assert set(probe) - set(source) <= ASCII_WHITESPACE  # only ASCII whitespace was added


# -- hypothesis: content preserved, and a change whenever one is possible -----------------

_SPECIAL = st.sampled_from(
    [" ", "  ", "\t", "\n", "\r\n", "\r", "\n\n", "\u00a0", "\u2028", "\u3000", "\x1c", "\x1f"]
    + [". ", "! ", "? ", '." ', ".) ", "。", "A", "a", "word"]
)
# Arbitrary unicode, and arbitrary unicode salted with whitespace and sentence punctuation.
ANY_TEXT = st.text() | st.lists(st.text(max_size=4) | _SPECIAL, max_size=30).map("".join)


@pytest.mark.parametrize("name", list(PERTURBATIONS))
@settings(max_examples=100, deadline=None)
@given(text=ANY_TEXT, seed=st.integers(0, 2**64 - 1))
def test_any_text_keeps_content_and_changes_when_applicable(name, text, seed):
    perturb, applicable = PERTURBATIONS[name]
    probe = perturb(text, random.Random(seed))
    _assert_content_preserved(text, probe)
    assert (probe != text) == applicable(text)


_WORD = st.text(
    st.characters(exclude_categories=("Cs",)).filter(lambda c: not c.isspace()),
    min_size=1,
    max_size=6,
)
_WORD_GAP = st.sampled_from([" ", " ", "  ", "\t", "\u00a0", " \u3000"])
_SENTENCE_SEP = st.sampled_from([" ", " ", "  ", "\t", " \u00a0"])


@st.composite
def documents(draw):
    """(text, paragraphs, most sentences in a paragraph, most words in a paragraph)."""
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    paragraphs, most_sentences, most_words = [], 0, 0
    for _ in range(draw(st.integers(1, 4))):
        sentences, n_words = [], 0
        for _ in range(draw(st.integers(1, 4))):
            words = draw(st.lists(_WORD, min_size=1, max_size=5))
            text = draw(st.sampled_from("ABÉΩЖ")) + words[0]
            for word in words[1:]:
                text += draw(_WORD_GAP) + word
            sentences.append(text + draw(st.sampled_from([".", "!", "?", '."', ".)"])))
            n_words += len(words)
        paragraph = sentences[0]
        for sentence in sentences[1:]:
            paragraph += draw(_SENTENCE_SEP) + sentence
        paragraphs.append(paragraph)
        most_sentences = max(most_sentences, len(sentences))
        most_words = max(most_words, n_words)
    separator = draw(st.sampled_from([newline, newline * 2, newline + "  ", newline + "\t"]))
    text = draw(st.sampled_from(["", " ", newline])) + separator.join(paragraphs)
    text += draw(st.sampled_from(["", newline, " "]))
    return text, len(paragraphs), most_sentences, most_words


@settings(max_examples=100, deadline=None)
@given(doc=documents(), seed=st.integers(0, 2**64 - 1))
def test_documents_keep_content_and_change(doc, seed):
    text, paragraphs, sentences, words = doc
    rng = random.Random(seed)
    expected_change = {
        "vertical-paragraphs": paragraphs >= 2,
        "vertical-sentences": sentences >= 2 or None,  # words may contain '.' too
        "vertical-both": paragraphs >= 2 or sentences >= 2 or None,
        "intraline": words >= 2,
        "intraline-all-gaps": words >= 2,
        "indent-tabs": True,
        "indent-spaces": True,
        "indent-mixed": True,
    }
    for name, (perturb, _) in PERTURBATIONS.items():
        probe = perturb(text, rng)
        _assert_content_preserved(text, probe)
        if expected_change[name] is not None:
            assert (probe != text) == expected_change[name], name


def test_examples_look_like_their_names():
    rng = random.Random(0)
    assert add_vertical_space("One. Two.", rng, mode="sentences", extra_lines=1) == "One.\n\nTwo."
    assert add_vertical_space("a\r\nb", rng, mode="paragraphs", extra_lines=1) == "a\r\n\r\nb"
    assert add_vertical_space("e.g. this", rng) == "e.g. this"  # lowercase: no sentence break
    assert add_intraline_space("a b", rng, min_run=3, max_run=3) == "a   b"
    assert add_indentation("x", rng, indent="tabs", max_depth=1) == "\tx"
    assert add_indentation("x", rng, indent="spaces", max_depth=1) == "    x"
    assert collapse_whitespace(" a\u00a0 b\r\n\tc ") == "a b c"


def test_line_breaks_are_those_of_splitlines():
    breaks = {chr(i) for i in range(0x3000) if len(f"a{chr(i)}b".splitlines()) == 2}
    assert breaks == set(LINE_BREAKS)


# -- determinism --------------------------------------------------------------------------


def _ctx() -> GenerationContext:
    def no_lm(*args, **kwargs):
        raise AssertionError("a format test must not use an LM")

    return GenerationContext(scale=SCALE, lm=no_lm)


def _generate(name: str, item: Item, settings: dict | None = None) -> list[Probe | Dropped]:
    test = get_test(name, settings)
    return test.generate(test.units([item])[0], _ctx())


@pytest.mark.parametrize("name", FORMAT_TESTS)
def test_same_source_and_variant_give_the_same_probe(name):
    item = Item(id="s1", request="Describe the river.", response=LONG_TEXT, expected=1)
    first = _generate(name, item, {"variants": 5})
    again = _generate(name, item.model_copy(), {"variants": 5})
    assert [p.model_dump() for p in first] == [p.model_dump() for p in again]
    assert all(isinstance(p, Probe) for p in first)
    assert len({p.response for p in first}) == 5  # different variants, different probes
    other = _generate(name, item.model_copy(update={"id": "s2"}), {"variants": 5})
    assert [p.response for p in other] != [p.response for p in first]


def test_variant_rng_is_a_function_of_its_arguments():
    draws = [variant_rng("format_indent", "s1", 0).random() for _ in range(2)]
    assert draws[0] == draws[1]
    assert variant_rng("format_indent", "s1", 1).random() != draws[0]
    assert variant_rng("format_vertical", "s1", 0).random() != draws[0]


# -- registry -----------------------------------------------------------------------------


def test_registry_knows_the_format_tests():
    assert set(FORMAT_TESTS) <= set(known_tests())
    test = get_test("format_vertical", {"variants": 2})
    assert type(test).__name__ == "FormatVertical"
    assert test.name == "format_vertical"
    assert (test.settings.variants, test.settings.mode, test.settings.extra_lines) == (2, "both", 3)
    assert (test.scoring, test.uses_llm, test.needs_labels) == ("invariance", False, True)
    intraline = get_test("format_intraline").settings
    assert (intraline.min_run, intraline.max_run, intraline.rate) == (2, 6, 0.3)
    indent = get_test("format_indent", {"indent": "tabs"}).settings
    assert (indent.variants, indent.indent, indent.max_depth) == (1, "tabs", 3)


@pytest.mark.parametrize(
    ("name", "settings", "message"),
    [
        ("format_vertical", {"variant": 2}, "unknown config key"),
        ("format_vertical", {"mode": "lines"}, "mode"),
        ("format_vertical", {"variants": 0}, "variants"),
        ("format_intraline", {"min_run": 4, "max_run": 3}, "max_run must be >= min_run"),
        ("format_intraline", {"rate": 0}, "rate"),
        ("format_indent", {"max_depth": 0}, "max_depth"),
    ],
)
def test_bad_settings_are_config_errors(name, settings, message):
    with pytest.raises(ConfigError, match=message):
        get_test(name, settings)


@pytest.mark.parametrize("name", FORMAT_TESTS)
def test_needs_reference_labels(name):
    with pytest.raises(ConfigError, match="needs reference labels"):
        get_test(name).check([Item(id="s1", response="a b")], SCALE)


# -- generate -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", FORMAT_TESTS)
def test_probes_keep_the_source_target_and_have_stable_ids(name):
    item = Item(id="s1", request="Describe the river.", response=TEXT, expected=0, meta={"k": 1})
    settings = {"variants": 3}
    probes = _generate(name, item, settings)
    full_settings = get_test(name, settings).settings.model_dump()
    assert len(probes) == 3
    for i, probe in enumerate(probes):
        assert isinstance(probe, Probe)
        assert probe.id == Probe.make_id(name, "s1", i, full_settings)
        assert (probe.test, probe.source_id, probe.request) == (name, "s1", item.request)
        assert (probe.target, probe.target_source, probe.meta) == (0, "human", {"variant": i})
        assert probe.transcript is None
        assert probe.response != TEXT
        _assert_content_preserved(TEXT, probe.response)
        assert probe.as_item().expected == 0
    assert len({p.id for p in probes}) == 3
    changed = _generate(
        name,
        item,
        {"variants": 3, "extra_lines": 1} if name == "format_vertical" else {"variants": 4},
    )
    assert {p.id for p in changed}.isdisjoint(p.id for p in probes)  # settings are in the id


@pytest.mark.parametrize(
    ("name", "response"),
    [
        ("format_intraline", "Hello."),
        ("format_intraline", "one\nword\nper\nline"),
        ("format_vertical", "One sentence on one line"),
        ("format_vertical", ""),
        ("format_indent", ""),
        ("format_indent", " \n\t "),
    ],
)
def test_nothing_to_perturb_is_dropped_not_applicable(name, response):
    dropped = _generate(name, Item(id="s1", response=response, expected=1), {"variants": 2})
    assert [(d.reason, d.variant, d.source_id) for d in dropped] == [
        ("not_applicable", 0, "s1"),
        ("not_applicable", 1, "s1"),
    ]
    assert all(isinstance(d, Dropped) and d.test == name for d in dropped)


def test_a_repeated_probe_is_dropped_as_duplicate():
    # one gap and one blank line: every variant makes the same text
    item = Item(id="s1", response="First. Second.", expected=1)
    out = _generate("format_vertical", item, {"variants": 3, "extra_lines": 1})
    assert isinstance(out[0], Probe) and out[0].response == "First.\n\nSecond."
    assert [(d.reason, d.variant) for d in out[1:]] == [("duplicate", 1), ("duplicate", 2)]


@pytest.mark.parametrize("name", FORMAT_TESTS)
def test_transcripts_are_perturbed_message_by_message(name):
    transcript = [
        Message(role="user", content="Please book two tickets. Then email me."),
        Message(
            role="assistant",
            content="Booking now.\nI will email you after.",
            tool_calls=[ToolCall(id="c1", function="book", arguments={"n": 2})],
        ),
        Message(role="tool", content="ok", tool_call_id="c1", function="book"),
    ]
    item = Item(
        id="a1", request="task", response="Done. Both booked.", transcript=transcript, expected=1
    )
    before = item.model_dump()
    (probe,) = _generate(name, item)
    assert item.model_dump() == before  # the source is untouched
    assert isinstance(probe, Probe)
    # a response no message holds is reformatted on its own (a judge of request and response
    # sees it changed, as a transcript judge sees the messages)
    _assert_content_preserved(item.response, probe.response)
    assert [m.role for m in probe.transcript] == ["user", "assistant", "tool"]
    assert probe.transcript[1].tool_calls == transcript[1].tool_calls
    assert [m.content for m in probe.transcript] != [m.content for m in transcript]
    for old, new in zip(transcript, probe.transcript, strict=True):
        _assert_content_preserved(old.content, new.content)


def test_pass_rates_resample_source_items_not_probes():
    """Probes of one source are not independent: with two sources of five probes each, one all
    right and one all wrong, the CI resamples the 2 sources (it spans 0..1), where resampling
    the 10 probes would pretend to know the rate within ±0.3."""
    from assay.reliability.scoring import score_test
    from assay.scale import Scale
    from assay.types import Judgment

    scale = Scale.parse("binary")
    probes, verdicts = [], {}
    for src, says in (("a", 1), ("b", 0)):
        for k in range(5):
            p = Probe(id=f"{src}{k}", test="t", source_id=src, response="x", target=1)
            probes.append(p)
            verdicts[p.id] = Judgment(item_id=p.id, judge="j", score=says)
    out = score_test("invariance", probes, verdicts, {"a": 1, "b": 1}, scale)
    m = out.pass_rate
    assert m.value == 0.5 and m.n == 10
    assert (m.ci_low, m.ci_high) == (0.0, 1.0)
    assert "2 clusters" in m.note


def test_a_fresh_process_loads_only_the_tests_it_asks_for_and_names_all_on_a_typo():
    """A run imports the files of the tests it runs; an unknown name still lists every test."""
    import subprocess
    import sys

    code = """
import sys
from assay.errors import ConfigError
from assay.reliability._registry import get_test
get_test("label_flip")
loaded = sorted(m.rsplit(".", 1)[1] for m in sys.modules  # tests, not their private bases
                if m.startswith("assay.reliability.probes.")
                and not m.rsplit(".", 1)[1].startswith("_"))
try:
    get_test("label_flip_typo")
except ConfigError as exc:
    print(loaded, "synthetic_ordinal" in str(exc) and "verbosity_short" in str(exc))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["['label_flip']", "True"], out.stdout + out.stderr


def test_stability_leaves_out_an_item_with_an_unscored_sample():
    """An item is its k samples: with one unscored, whether all k agree cannot be told — the
    scored rest agree more often the fewer they are, and one alone always "agrees". A judge
    whose first sample parses and the other four do not was reported stable on every item
    (pass 1.00, flip 0.00); those items are left out and counted, and only the complete ones
    are scored."""
    from assay.reliability.scoring import score_test
    from assay.scale import Scale
    from assay.types import Judgment

    scale = Scale.parse("binary")
    probes, verdicts = [], {}
    says = {"a": [1, None, None, None, None], "b": [1, 1, 0, None, 1], "c": [0, 0, 0, 0, 0]}
    says |= {"d": [1, 0, 1, 1, 1]}
    for src, scores in says.items():
        for k, score in enumerate(scores):
            p = Probe(id=f"{src}{k}", test="t", source_id=src, response="x", target=1)
            probes.append(p)
            unscored = "parse_error" if score is None else None
            verdicts[p.id] = Judgment(item_id=p.id, judge="j", score=score, unscored=unscored)
    out = score_test("stability", probes, verdicts, {}, scale)
    assert out.unscored == 5  # each unscored sample counted, as before
    assert out.scoring_metrics["items"] == 2 and out.scoring_metrics["items_incomplete"] == 2
    assert (out.pass_rate.count, out.pass_rate.n) == (1, 2)  # c stable, d not; a and b out
    assert out.scoring_metrics["flip_rate"] == pytest.approx((0.0 + 1 / 5) / 2)
    assert out.scoring_metrics["samples_k"] == 5  # the complete items' k, not a's one scored sample
