"""MLflow keys: a valid name is kept as it is; a name with a character MLflow refuses is
cleaned and keeps a key of its own (a hash of the part that changed), so names that clean to
the same text never share a key."""

from __future__ import annotations

import re

import pytest

from assay.runs import mlflow_key

VALID = re.compile(r"[A-Za-z0-9_\-. /]{1,250}")


@pytest.mark.parametrize(
    "names",
    [
        ("m+1", "m_1", "m-1", "m 1"),
        ("модель-а", "модель-б"),
        ("gpt-4o (v2)", "gpt-4o [v2]", "gpt-4o _v2_"),
        ("judge:a", "judge;a", "judge_a"),
        ("x" * 300 + "a", "x" * 300 + "b"),
    ],
)
def test_names_that_clean_to_one_text_keep_a_key_each(names):
    keys = [mlflow_key(n) for n in names]
    assert len(set(keys)) == len(names)
    assert all(VALID.fullmatch(k) for k in keys)
    assert [mlflow_key(n) for n in names] == keys  # stable


def test_a_valid_name_is_its_own_key_and_parts_are_cleaned_apart():
    assert mlflow_key("position_bias.placebo.plain/end.effect") == (
        "position_bias.placebo.plain/end.effect"
    )
    key = mlflow_key("strength.m+1.ci_low")
    assert key.startswith("strength.m_1_") and key.endswith(".ci_low")
    assert key.split(".")[1] == mlflow_key("m+1")
    assert mlflow_key(key) == key
