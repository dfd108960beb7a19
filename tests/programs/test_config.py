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


# -- rubric lists (transcript judges) ---------------------------------------------------------
def _transcript_judge(criteria, scale=None):
    return JudgeConfig(
        task="transcript",
        model="scripted:x",
        criteria=criteria,
        scale=scale or {"kind": "ordinal", "min": 0, "max": 3},
    )


def test_score_levels_must_be_contiguous_integers_each_once():
    ok = _transcript_judge(
        [
            {
                "id": "a",
                "instructions": "i",
                "score_levels": [{"score": s, "label": f"l{s}"} for s in (2, 0, 1)],
            }
        ]
    )
    assert ok.criteria[0].scores == [0, 1, 2]  # sorted
    assert "Score levels:\n- 0: l0" in ok.criteria[0].text()
    with pytest.raises(ValueError, match="consecutive integers: 0..3 is missing 2"):
        _transcript_judge(
            [
                {
                    "id": "a",
                    "instructions": "i",
                    "score_levels": [{"score": s, "label": "x"} for s in (0, 1, 3)],
                }
            ]
        )
    with pytest.raises(ValueError, match="score 1 listed more than once"):
        _transcript_judge(
            [
                {
                    "id": "a",
                    "instructions": "i",
                    "score_levels": [{"score": s, "label": "x"} for s in (0, 1, 1)],
                }
            ]
        )
    with pytest.raises(ValueError, match="not on the judge's"):
        _transcript_judge(
            [
                {
                    "id": "a",
                    "instructions": "i",
                    "score_levels": [{"score": s, "label": "x"} for s in (3, 4)],
                }
            ]
        )


def test_criterion_ids_are_required_and_unique():
    with pytest.raises(ValueError, match="id"):
        _transcript_judge([{"instructions": "i"}])
    with pytest.raises(ValueError, match="'a' is used more than once"):
        _transcript_judge([{"id": "a", "instructions": "i"}, {"id": "a", "instructions": "j"}])


@pytest.mark.parametrize(
    "rubric, message",
    [
        ([{"instructions": "i"}], "entry 1: field 'id' is missing"),
        (
            [{"id": "a", "instructions": "i"}, {"id": "a", "instructions": "j"}],
            "entry 2: duplicate id 'a' \\(also entry 1\\)",
        ),
        ({"id": "a"}, "a rubric is a JSON list"),
    ],
)
def test_a_bad_rubric_file_is_a_one_line_error_naming_it(tmp_path, rubric, message):
    import json

    from assay.errors import ConfigError
    from assay.inputs import load_config

    (tmp_path / "rubric.json").write_text(json.dumps(rubric))
    (tmp_path / "c.yaml").write_text(
        "name: t\ndata: {path: x.csv}\njudge: {task: transcript, model: 'scripted:x', "
        "criteria: '@rubric.json', scale: {kind: binary}}\n"
    )
    with pytest.raises(ConfigError, match=message) as err:
        load_config(tmp_path / "c.yaml")
    assert str(err.value).startswith(str((tmp_path / "rubric.json").resolve()))
    assert "\n" not in str(err.value)


def test_the_prompt_layout_of_an_in_process_model_is_part_of_the_judge_identity():
    """In-process models get the ``constant-first`` prompt (output requirements in the
    system message), another prompt than DSPy's — so another config hash, and a logged param;
    every other model keeps DSPy's layout and its pinned hash (the one its runs carry)."""
    local = JudgeConfig(model="local", scale="binary", rubric="r")
    hosted = JudgeConfig(model="openai/gpt-4o-mini", scale="binary", rubric="r")
    assert local.config_hash() != "597dfa58f04630f4"  # its hash with DSPy's layout
    assert hosted.config_hash() == "360a996d3b77a864"  # pinned: the hash its runs carry
    assert local.flat_params()["judge.prompt_layout"] == "constant-first"
    assert "judge.prompt_layout" not in hosted.flat_params()
    panel = JudgeConfig(
        program="panel",
        scale="binary",
        members=[{"model": "local", "scale": "binary"}, {"model": "openai/x", "scale": "binary"}],
    )
    assert panel.flat_params()["judge.members.0.prompt_layout"] == "constant-first"
    assert "judge.members.1.prompt_layout" not in panel.flat_params()
