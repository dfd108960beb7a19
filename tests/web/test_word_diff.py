"""The word diff a probe is shown with: it rebuilds both texts, marks only what changed, and
compares only what lies between the texts' common beginning and end."""

from __future__ import annotations

import difflib
import random

from assay.report import Segment, diff_texts
from assay.report._diff import _TOKEN, _opcodes

WORDS = ["a", "b", "the", " ", "  ", "\n", "\n\n", "\t", "x", ".", ",", "é"]


def _edited(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(0, 4)):
        at = rng.randint(0, len(chars))
        new = "".join(rng.choice(WORDS) for _ in range(rng.randint(0, 3)))
        chars[at : at + rng.randint(0, 3)] = list(new)
    return "".join(chars)


def _text(segments: list[Segment], *kinds: str) -> str:
    return "".join(s.text for s in segments if s.kind in kinds)


def test_both_texts_are_rebuilt_and_the_unchanged_text_is_the_same_on_both_sides():
    rng = random.Random(7)
    for _ in range(3000):
        source = "".join(rng.choice(WORDS) for _ in range(rng.randint(0, 30)))
        probe = source if rng.random() < 0.2 else _edited(rng, source)
        left, right = diff_texts(source, probe)
        assert _text(left, "same", "del") == source
        assert _text(right, "same", "ins") == probe
        assert {s.kind for s in left} <= {"same", "del"}
        assert {s.kind for s in right} <= {"same", "ins"}
        assert _text(left, "same") == _text(right, "same")
        if source == probe:
            assert left == right == ([Segment("same", source)] if source else [])


def test_a_change_inside_a_long_response_is_marked_alone():
    words = [f"w{k}" for k in range(600)]
    source = " ".join(words)
    probe = " ".join([*words[:300], "CHANGED", *words[301:]])
    left, right = diff_texts(source, probe)
    assert [s.text for s in left if s.kind == "del"] == ["w300"]
    assert [s.text for s in right if s.kind == "ins"] == ["CHANGED"]


def _difflib_opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """The reference: difflib over the whole texts, a lone whitespace run between two changes
    folded into them."""
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    out: list[list] = []
    for k, (op, i1, i2, j1, j2) in enumerate(ops):
        between = 0 < k < len(ops) - 1 and ops[k - 1][0] != "equal" and ops[k + 1][0] != "equal"
        if op == "equal" and between and not "".join(a[i1:i2]).strip():
            op = "replace"
        if out and op != "equal" and out[-1][0] != "equal":
            out[-1] = ["replace", out[-1][1], i2, out[-1][3], j2]
        else:
            out.append([op, i1, i2, j1, j2])
    return [tuple(o) for o in out]


def test_texts_with_other_words_that_begin_and_end_differently_are_aligned_by_difflib():
    rng = random.Random(11)
    for _ in range(1000):
        body = "".join(rng.choice(WORDS) for _ in range(rng.randint(0, 25)))
        a = _TOKEN.findall("A" + body + "Z")
        b = _TOKEN.findall("B" + _edited(rng, body) + "Y")
        assert _opcodes(a, b) == _difflib_opcodes(a, b)


def test_a_common_beginning_and_end_are_one_unchanged_block_each():
    rng = random.Random(12)
    for _ in range(1000):
        body = "".join(rng.choice(WORDS) for _ in range(rng.randint(1, 25)))
        a = _TOKEN.findall("start here " + "A" + body + "Z" + " end there")
        b = _TOKEN.findall("start here " + "B" + _edited(rng, body) + "Y" + " end there")
        ops = _opcodes(a, b)
        assert ops[0] == ("equal", 0, 4, 0, 4) and ops[-1][0] == "equal"
        assert ops[-1][2] - ops[-1][1] == 4 and ops[-1][2] == len(a) and ops[-1][4] == len(b)
        inner = _difflib_opcodes(a[4:-4], b[4:-4])
        shifted = [(op, i1 + 4, i2 + 4, j1 + 4, j2 + 4) for op, i1, i2, j1, j2 in inner]
        assert ops[1:-1] == shifted


def test_a_change_of_whitespace_alone_marks_each_changed_run_and_no_word():
    """What the format tests make: the same words, spaced otherwise. Each word stays
    unchanged on both sides, even where a passage repeats further on (difflib's matcher
    aligned such a passage with its repeat and struck everything between)."""
    passage = "The concept of race is a social construct used to categorize people. "
    source = "Answer: " + passage + "More text follows here. " + passage + "End."
    rng = random.Random(5)
    tokens = _TOKEN.findall(source)
    spaced = [rng.choice([" ", "  ", "\n", "   "]) if t == " " else t for t in tokens]
    probe = "".join(spaced)
    left, right = diff_texts(source, probe)
    assert _text(left, "same", "del") == source and _text(right, "same", "ins") == probe
    changed = [s for s in [*left, *right] if s.kind != "same"]
    assert changed and all(not s.text.strip() and s.marker for s in changed)
    words = [t for t in tokens if not t.isspace()]
    assert _unchanged_words(left) == _unchanged_words(right) == words


def _unchanged_words(segments: list[Segment]) -> list[str]:
    return [
        t for s in segments if s.kind == "same" for t in _TOKEN.findall(s.text) if not t.isspace()
    ]
