"""Probability-weighted (G-Eval) scores from token logprobs."""

from __future__ import annotations

import math

import pytest

from assay.programs import expected_score, verdict_distribution


def tok(text, lp, alts=()):
    return {
        "token": text,
        "logprob": lp,
        "top_logprobs": [{"token": t, "logprob": v} for t, v in alts],
    }


def test_expected_score_over_ordinal_digits():
    # {"verdict": 3} with alternatives 3 (p=.5), 4 (p=.3), 2 (p=.1), "x" (ignored)
    lps = [
        tok("{", 0),
        tok('"verdict', 0),
        tok('":', 0),
        tok(" ", 0),
        tok(
            "3",
            math.log(0.5),
            [
                ("3", math.log(0.5)),
                ("4", math.log(0.3)),
                ("2", math.log(0.1)),
                ("x", math.log(0.1)),
            ],
        ),
        tok("}", 0),
    ]
    expected = (3 * 0.5 + 4 * 0.3 + 2 * 0.1) / 0.9
    options = {str(i): i for i in range(1, 7)}
    assert expected_score(lps, options) == pytest.approx(expected)
    # the distribution behind it: renormalised over the options, scores no one wrote absent
    dist = verdict_distribution(lps, options)
    assert dist == pytest.approx({2: 0.1 / 0.9, 3: 0.5 / 0.9, 4: 0.3 / 0.9})
    assert sum(dist.values()) == pytest.approx(1.0)


def test_expected_score_over_labels_and_openai_shape():
    content = [
        tok('{"verdict": "', 0),
        tok("True", math.log(0.2), [("True", math.log(0.2)), ("False", math.log(0.6))]),
    ]
    assert expected_score({"content": content}, {"False": 0, "True": 1}) == pytest.approx(0.2 / 0.8)


def test_tokens_before_the_verdict_key_are_ignored():
    # "True" inside reasoning text before the verdict key must not be taken as the verdict
    content = [
        tok('{"reasoning": "', 0),
        tok("True", 0, [("True", 0.0)]),
        tok('", "verdict": "', 0),
        tok("False", math.log(0.9), [("False", math.log(0.9)), ("True", math.log(0.1))]),
    ]
    assert expected_score(content, {"False": 0, "True": 1}) == pytest.approx(0.1)


def test_no_logprobs_gives_none():
    assert expected_score(None, {"0": 0, "1": 1}) is None
    assert expected_score([tok("hello", 0)], {"0": 0, "1": 1}) is None
