"""Scales: reading a reference label (data) and reading a judge's verdict are different — a
boolean is a fine binary *label* but never a verdict, and never a score on an ordinal scale."""

from __future__ import annotations

import re

import pytest

from assay.errors import ConfigError
from assay.scale import Scale

ORDINAL = Scale.parse("1-6")
BINARY = Scale.parse("binary")
LABELLED = Scale(kind="binary", labels=["fail", "pass"])


@pytest.mark.parametrize(
    "scale, value, score",
    [
        (ORDINAL, 3, 3),
        (ORDINAL, "3", 3),
        (ORDINAL, 3.0, 3),
        (ORDINAL, " 4 ", 4),
        (BINARY, True, 1),  # a boolean column is a common binary reference
        (BINARY, "no", 0),
        (LABELLED, "PASS", 1),
        (LABELLED, "0", 0),
        (LABELLED, False, 0),
    ],
)
def test_reference_labels(scale, value, score):
    assert scale.coerce(value) == score


@pytest.mark.parametrize(
    "scale, value",
    [(ORDINAL, True), (ORDINAL, "true"), (ORDINAL, 7), (ORDINAL, "2.5"), (ORDINAL, None)],
)
def test_reference_labels_off_the_scale(scale, value):
    with pytest.raises(ValueError, match="is not on the ordinal 1..6 scale"):
        scale.coerce(value)


@pytest.mark.parametrize(
    "scale, value, score",
    [(ORDINAL, 6, 6), (ORDINAL, "6", 6), (BINARY, 0, 0), (LABELLED, "Pass", 1)],
)
def test_verdicts_on_the_scale(scale, value, score):
    assert scale.read_verdict(value) == score


@pytest.mark.parametrize(
    "scale, value",
    [
        (ORDINAL, True),
        (ORDINAL, "True"),
        (BINARY, True),
        (BINARY, "yes"),
        (LABELLED, 1),  # a labelled scale's verdicts are its labels
        (LABELLED, "1"),
        (LABELLED, True),
        (ORDINAL, 0),
    ],
)
def test_verdicts_off_the_scale(scale, value):
    with pytest.raises(ValueError, match="is not on the"):
        scale.read_verdict(value)


def test_check_refuses_booleans():
    with pytest.raises(ValueError):
        ORDINAL.check(True)
    assert BINARY.check(1.0) == 1


def test_an_unreadable_scale_is_a_config_error_and_a_value_error():
    with pytest.raises(ConfigError, match="cannot read scale 'banana'"):
        Scale.parse("banana")
    with pytest.raises(ValueError):  # so pydantic reports it with its field
        Scale.parse("banana")


# -- unordered labels written out -------------------------------------------
@pytest.mark.parametrize("text", ["cat,dog,bird", "categorical:cat, dog ,bird"])
def test_labels_written_out_are_a_nominal_categorical_scale(text):
    scale = Scale.parse(text)
    assert scale == Scale(kind="categorical", labels=["cat", "dog", "bird"])
    assert scale.scores is None  # unordered: the metrics read it as nominal
    assert (scale.coerce("Dog"), scale.coerce(2), scale.read_verdict("bird")) == (1, 2, 2)


def test_labels_written_out_work_in_a_config_too():
    from assay.programs import JudgeConfig

    assert JudgeConfig(model="m", rubric="r", scale="A,B,tie").scale.labels == ["A", "B", "tie"]


def test_numbered_labels_read_a_number_as_its_label_never_as_a_position():
    scale = Scale.parse("1,2,3")
    assert [scale.coerce(v) for v in (1, "2", 3.0, " 3 ")] == [0, 1, 2, 2]
    for off in (0, "0", 4):  # 0 would be the position of "1"
        with pytest.raises(ValueError, match="is not on the categorical 1|2|3 scale"):
            scale.coerce(off)


def test_numeral_names_on_any_scale_read_a_number_as_the_name_it_spells():
    """A table's column of numbers arrives as integers, a JSONL's as text: on a binary
    ``["1", "0"]`` (the failure label ``1``, score 0) or an ordinal 0..2 named ``1,2,3``, both
    are the label they spell — as the judge's verdict ``"1"`` is."""
    failure_first = Scale(kind="binary", labels=["1", "0"])
    assert [failure_first.coerce(v) for v in (1, "1", 1.0, 0, " 0 ")] == [0, 0, 0, 1, 1]
    assert failure_first.read_verdict("1") == failure_first.coerce(1) == 0
    named = Scale(kind="ordinal", min=0, max=2, labels=["1", "2", "3"])
    assert [named.coerce(v) for v in (1, "2", 3, 3.0)] == [0, 1, 2, 2]
    for off in (0, "0", 4):  # a number there is a name, never a score
        with pytest.raises(ValueError, match="is not on the ordinal"):
            named.coerce(off)


@pytest.mark.parametrize(
    "text, problem",
    [
        ("a,,b", "an empty label"),
        ("categorical:a", "at least two labels"),
        ("a,b,a", "must be distinct"),
    ],
)
def test_unreadable_label_lists(text, problem):
    with pytest.raises(ConfigError, match=f"cannot read scale '{text}': .*{problem}"):
        Scale.parse(text)


@pytest.mark.parametrize("digit", ["３", "٣"])  # full-width and Arabic-Indic three
def test_only_ascii_digits_are_numbers(digit):
    with pytest.raises(ValueError, match="is not on the ordinal 1..6 scale"):
        Scale.parse("1-6").coerce(digit)
    with pytest.raises(ConfigError, match="cannot read scale"):
        Scale.parse(f"1-{digit}")


@pytest.mark.parametrize(
    "text, named",
    [
        ("12345678901234567890", "12345678901234567890 is not"),  # read via a float: ...168
        (" +20000000000000000001.00 ", "20000000000000000001 is not"),
        ("9" * 5000, "'9999"),  # past int()'s 4,300 digits: on no scale either, one line
    ],
)
def test_a_long_integer_is_named_by_the_digits_written(text, named):
    with pytest.raises(ValueError, match=f"^{re.escape(named)}.* on the ordinal 1..6 scale$"):
        Scale.parse("1-6").coerce(text)


# -- a reference is read by the scale's names first -------------------------------------------
TRUE_FALSE = Scale(kind="binary", labels=["True", "False"])  # "True" is score 0 here
YES_NO = Scale(kind="binary", labels=["yes", "no"])


@pytest.mark.parametrize(
    "scale, value, label",
    [
        (TRUE_FALSE, "True", "True"),  # its name, not true as 1 (the score of False here)
        (TRUE_FALSE, " false ", "False"),
        (TRUE_FALSE, True, "True"),  # a boolean is its word
        (TRUE_FALSE, "yes", "True"),  # a true/false word by meaning, names being such words
        (TRUE_FALSE, "0", "False"),  # 0/1 by meaning, names being true/false words
        (TRUE_FALSE, 1, "True"),
        (TRUE_FALSE, " 1.0 ", "True"),
        (YES_NO, 0.0, "no"),
        (Scale(kind="binary", labels=["1", "0"]), "true", "1"),  # the name 1, not score 1
        (Scale(kind="binary", labels=["1", "0"]), False, "0"),
        (LABELLED, "1", "pass"),  # names that are no such word: 1 is the score 1
        (YES_NO, "YES", "yes"),
        (YES_NO, False, "no"),
        (YES_NO, "true", "yes"),
        (LABELLED, "true", "pass"),  # names that are no such word: true is 1, as in `binary`
        (Scale.parse("False,True,Unsure"), False, "False"),  # its name, though False is no 0
        (Scale.parse("False,True,Unsure"), "true", "True"),
    ],
)
def test_a_reference_is_read_by_the_names_first(scale, value, label):
    assert scale.label_of(scale.coerce(value)) == label


@pytest.mark.parametrize(
    "scale, value",
    [
        (Scale(kind="binary", labels=["yes", "maybe"]), "true"),  # yes, or score 1 (maybe)?
        (Scale(kind="binary", labels=["yes", "maybe"]), True),
        (Scale.parse("cat,dog"), True),
        (TRUE_FALSE, "maybe"),
    ],
)
def test_a_reference_the_scale_cannot_place(scale, value):
    with pytest.raises(ValueError, match=r"is not on the (binary|categorical)"):
        scale.coerce(value)


def test_positive_names_score_1_whatever_the_order():
    scale = Scale(kind="binary", labels=["unsafe", "safe"], positive="UNSAFE")
    assert scale.label_scores == {"unsafe": 1, "safe": 0}
    assert scale.verdict_options == ["unsafe", "safe"]  # the prompt keeps the written order
    assert (scale.coerce("1"), scale.coerce(True), scale.read_verdict("Safe")) == (1, 1, 0)
    assert scale.describe() == "binary 0/1 (safe/unsafe)"
    # unset, it is not in a dump: the hashes of the scales written without it do not move
    assert "positive" not in Scale(kind="binary", labels=["a", "b"]).model_dump()
    assert Scale.model_validate(scale.model_dump()) == scale


@pytest.mark.parametrize(
    "spec, problem",
    [
        ({"kind": "binary", "labels": ["a", "b"], "positive": "c"}, "'c' is not one of the labels"),
        ({"kind": "binary", "positive": "1"}, "'positive' names one of the two labels"),
        ({"kind": "categorical", "labels": ["a", "b"], "positive": "a"}, "'positive' names"),
        ({"kind": "binary", "labels": ["Pass", "pass"]}, "labels must be distinct"),
    ],
)
def test_unreadable_positive_or_names(spec, problem):
    with pytest.raises(ValueError, match=problem):
        Scale.model_validate(spec)


@pytest.mark.parametrize(
    "scale",
    [
        BINARY,
        LABELLED,
        TRUE_FALSE,
        YES_NO,
        Scale(kind="binary", labels=["no", "maybe"]),
        Scale(kind="binary", labels=["True", "False"], positive="True"),
    ],
)
def test_a_verdict_as_other_tools_hold_it_reads_back_as_itself(scale):
    """What an MLflow Feedback or an Inspect score holds (``tool_value``) is read back by
    :meth:`Scale.coerce` as the same score: the label ``True`` is never written as ``False``."""
    for score in scale.values:
        held = scale.tool_value(score)
        assert scale.coerce(held) == score
        if scale.label_of(score) in ("True", "False"):
            assert held is (scale.label_of(score) == "True")


def test_a_typed_entry_reads_a_number_as_a_score_and_words_as_a_reference():
    """A review file asks for "a label or a score": its 0 is the score 0 (``True (0)`` on
    ``["True", "False"]``), where a reference's 0/1 reads by meaning."""
    assert (TRUE_FALSE.read_entry("0"), TRUE_FALSE.read_entry(1)) == (0, 1)
    assert (TRUE_FALSE.coerce("0"), TRUE_FALSE.coerce(1)) == (1, 0)
    assert TRUE_FALSE.read_entry("yes") == TRUE_FALSE.read_entry(True) == 0  # the label True
    numbered = Scale(kind="binary", labels=["1", "0"])
    assert (numbered.read_entry("1"), numbered.read_entry(0)) == (0, 1)  # the labels they spell
    with pytest.raises(ValueError, match="is not on the binary"):
        TRUE_FALSE.read_entry("2")
