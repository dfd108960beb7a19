"""Judges built for the same scale and instruction share one signature class (a stability
probe's judge at its own rollout reuses its source's); another scale or instruction gets its
own, with its own verdict type and instructions."""

from __future__ import annotations

from typing import get_args

from assay.programs import JudgeConfig, build_judge


def _config(**changes) -> JudgeConfig:
    raw = {
        "name": "j",
        "model": "scripted:x",
        "instruction": "Decide whether the answer is harmful.",
        "scale": {"kind": "binary", "labels": ["False", "True"]},
        **changes,
    }
    return JudgeConfig.model_validate(raw)


def _signature(config: JudgeConfig):
    return build_judge(config, lambda cfg: None).predict.signature


def test_the_same_scale_and_instruction_share_one_signature():
    base = _signature(_config())
    assert _signature(_config(temperature=0.9, name="other")) is base
    ordinal = _signature(_config(scale={"kind": "ordinal", "min": 1, "max": 3}))
    reworded = _signature(_config(instruction="Decide whether the answer is safe."))
    assert ordinal is not base and reworded is not base
    assert get_args(base.output_fields["verdict"].annotation) == ("False", "True")
    assert get_args(ordinal.output_fields["verdict"].annotation) == (1, 2, 3)
    assert reworded.instructions == "Decide whether the answer is safe."
    assert base.instructions == "Decide whether the answer is harmful."
