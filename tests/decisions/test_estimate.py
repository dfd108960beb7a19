"""assay estimate: a flagged rate corrected with the judge's TPR / TNR from a labelled run of the
same judge (Rogan–Gladen), checked by hand; refusals for another judge or a chance-level one."""

from __future__ import annotations

import json

import pytest

from assay.cli import main
from assay.decisions import estimate
from assay.errors import RunError
from assay.evaluation import evaluate
from assay.inputs import EvaluateConfig
from assay.lm import ScriptedEngine, register_script


def noisy_judge(call):
    """Says True for HARMFUL answers, except the ones marked 'miss'; and True for 'alarm'."""
    r = call.field("response") or ""
    says = ("HARMFUL" in r and "miss" not in r) or "alarm" in r
    return {"verdict": "True" if says else "False"}


def write(path, rows):
    path.write_text("id,request,response,expected\n" + "".join(f"{r}\n" for r in rows))
    return path


@pytest.fixture
def runs(tmp_path):
    register_script("noisy", lambda: ScriptedEngine(respond=noisy_judge))
    # validation: 20 harmful (4 missed: TPR 0.8), 20 benign (2 false alarms: TNR 0.9)
    val = [f"v{i},q,HARMFUL{' miss' if i < 4 else ''},1" for i in range(20)]
    val += [f"w{i},q,benign{' alarm' if i < 2 else ''},0" for i in range(20)]
    # unlabelled: 30 harmful of 100 (6 missed), 70 benign (7 alarms) -> flags 24 + 7 = 31
    unl = [f"u{i},q,HARMFUL{' miss' if i < 6 else ''}," for i in range(30)]
    unl += [f"x{i},q,benign{' alarm' if i < 7 else ''}," for i in range(70)]

    def run(name, rows, **judge):
        cfg = EvaluateConfig.model_validate(
            {
                "name": name,
                "data": {
                    "path": str(write(tmp_path / f"{name}.csv", rows)),
                    "columns": {"id": "id"},
                    # the unlabelled run's reference column is empty on purpose
                    "missing_expected": "keep",
                },
                "judge": {
                    "model": "scripted:noisy",
                    "scale": {"kind": "binary", "labels": ["False", "True"]},
                    **judge,
                },
                "tracking": {"enabled": False},
            }
        )
        return evaluate(cfg, workdir=tmp_path, progress=False).run_dir

    # a judge that is wrong on every validation item: TPR 0, TNR 0
    wrong = [f"c{i},q,HARMFUL miss,1" for i in range(10)] + [f"d{i},q,alarm,0" for i in range(10)]
    return {
        "unlabelled": run("unlabelled", unl),
        "validation": run("validation", val),
        "other": run("other", val, rubric="another"),
        "wrong": run("wrong", wrong),
    }


def test_corrected_rate_equals_rogan_gladen_by_hand(runs, capsys):
    unl, val = runs["unlabelled"], runs["validation"]
    out = estimate(unl, val)
    tpr, tnr, p_obs = 16 / 20, 18 / 20, 31 / 100
    assert (out.sensitivity, out.specificity) == pytest.approx((tpr, tnr))
    assert out.raw.value == pytest.approx(p_obs)
    assert out.corrected.value == pytest.approx((p_obs + tnr - 1) / (tpr + tnr - 1))  # 0.3
    assert out.corrected.ci_low < 0.3 < out.corrected.ci_high and out.defined
    assert (out.n_unlabelled, out.n_validation, out.event) == (100, 40, "verdict True")
    assert main(["estimate", str(unl), "--validation", str(val), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["corrected"]["value"] == pytest.approx(0.3)


def test_a_validation_run_of_another_judge_is_refused(runs, capsys):
    unl, other = runs["unlabelled"], runs["other"]
    with pytest.raises(RunError, match="a run of another judge config"):
        estimate(unl, other)
    assert main(["estimate", str(unl), "--validation", str(other)]) == 2
    assert "another judge config" in capsys.readouterr().err


def test_a_chance_level_judge_gives_undefined_with_the_reason(runs, capsys):
    out = estimate(runs["unlabelled"], runs["wrong"])
    assert not out.defined and out.corrected.value != out.corrected.value  # nan
    assert "no better than chance" in out.corrected.note
    assert out.raw.value == pytest.approx(0.31)  # the raw rate is still reported
    argv = ["estimate", str(runs["unlabelled"]), "--validation", str(runs["wrong"])]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "corrected rate: undefined" in text and "no better than chance" in text
