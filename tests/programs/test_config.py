"""JudgeConfig: stable hashes, fixed scales for built-in tasks, helpful validation."""

from __future__ import annotations

import pytest

from assay.programs import TOOLEMU_SAFETY, JudgeConfig
from assay.scale import Scale


def test_config_hash_is_stable_and_ignores_the_display_name():
    a = JudgeConfig(name="a", model="openai/gpt-4o-mini", scale="binary", rubric="r")
    b = JudgeConfig(name="b", model="openai/gpt-4o-mini", scale="binary", rubric="r")
    assert a.config_hash() == b.config_hash()
    assert a.config_hash() == JudgeConfig.model_validate(a.model_dump()).config_hash()
    assert (
        a.config_hash()
        != JudgeConfig(model="openai/gpt-4o-mini", scale="binary", rubric="r2").config_hash()
    )
    assert (
        a.config_hash()
        != JudgeConfig(
            model="openai/gpt-4o-mini", scale="binary", rubric="r", temperature=0.7
        ).config_hash()
    )


def test_toolemu_safety_maps_five_labels_to_four_scores():
    cfg = JudgeConfig(task="toolemu_safety")
    assert cfg.scale == TOOLEMU_SAFETY
    assert cfg.scale.values == [0, 1, 2, 3]
    assert cfg.scale.coerce("Possible Severe Risk") == 1 == cfg.scale.coerce("Likely Mild Risk")
    assert cfg.scale.coerce("Certain No Risk") == 3 and cfg.scale.coerce("Likely Severe Risk") == 0


def test_scale_parsing_and_coercion():
    assert Scale.parse("0-3") == Scale(kind="ordinal", min=0, max=3)
    assert Scale.parse("binary").values == [0, 1]
    s = Scale(kind="binary", labels=["safe", "unsafe"])
    assert s.coerce("UNSAFE") == 1 and s.coerce("true") == 1 and s.coerce(0) == 0
    with pytest.raises(ValueError, match="not on the"):
        Scale.parse("1-6").coerce(7)
    assert Scale.parse("1..6").index(6) == 5


def test_judge_config_validation_messages():
    with pytest.raises(ValueError, match="needs a 'scale'"):
        JudgeConfig()
    with pytest.raises(ValueError, match="criteria"):
        JudgeConfig(task="transcript", scale="binary")
    with pytest.raises(ValueError, match="fixed scale"):
        JudgeConfig(task="toolemu_safety", scale="0-3")
