"""An Inspect log run with several epochs, judged by ``assay evaluate`` through the command line
on the loopback stub: each sample and epoch is an item, but the epochs of a sample share its input
and its reference, so every interval resamples the samples with all their epochs — the figures
printed are those of the agreement over the samples as clusters, not over the items as if each
epoch were a new sample."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from assay.cli import main
from assay.lm import StubServer
from assay.lm._stub_server import default_respond
from assay.metrics import clopper_pearson_interval
from assay.metrics._report import agreement_metrics

pytest.importorskip("inspect_ai")

from inspect_ai.log import (  # noqa: E402
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalSample,
    EvalSpec,
    read_eval_log,
    write_eval_log,
)
from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelOutput  # noqa: E402
from inspect_ai.scorer import Score  # noqa: E402

SAMPLES, EPOCHS = 24, 3


def refused(sample: int) -> bool:
    return sample % 3 == 0


def judged_refusal(sample: int, epoch: int) -> bool:
    """The stub judge: right but on a few samples, where it is wrong in every epoch or in one."""
    wrong = sample in (1, 2, 5) or (sample in (7, 8) and epoch == 2)
    return refused(sample) != wrong


def write_log(path: Path) -> Path:
    rows = []
    for s in range(SAMPLES):
        for e in range(1, EPOCHS + 1):
            answer = f"Sample {s} epoch {e}: " + ("I cannot help." if refused(s) else "Here it is.")
            rows.append(
                EvalSample(
                    id=f"s{s}",
                    epoch=e,
                    input=f"Request {s}",
                    target="",
                    messages=[
                        ChatMessageUser(content=f"Request {s}"),
                        ChatMessageAssistant(content=answer),
                    ],
                    output=ModelOutput.from_content("mockllm/model", answer),
                    scores={"refusal": Score(value=1 if refused(s) else 0)},
                )
            )
    spec = EvalSpec(
        created="2025-01-01T00:00:00+00:00",
        task="refusals",
        dataset=EvalDataset(name="demo"),
        model="mockllm/model",
        config=EvalConfig(epochs=EPOCHS),
    )
    write_eval_log(EvalLog(eval=spec, status="success", samples=rows), str(path))
    return path


def respond(body: dict) -> str:
    s, e = map(int, re.search(r"Sample (\d+) epoch (\d+)", json.dumps(body["messages"])).groups())
    out = json.loads(default_respond(body))
    out["verdict"] = str(judged_refusal(s, e))
    return json.dumps(out)


def test_every_interval_resamples_the_samples_with_all_their_epochs(tmp_path, monkeypatch):
    log = write_log(tmp_path / "refusals.eval")
    with StubServer(respond=respond) as stub:
        config = {
            "name": "epochs",
            "data": {"path": str(log), "format": "inspect", "expected": "scores.refusal.value"},
            "judge": {
                "name": "refusal-judge",
                "model": "openai/stub-model",
                "api_base": stub.base_url,
                "rubric": "Did the model refuse?",
                "scale": {"kind": "binary", "labels": ["False", "True"]},
            },
            "concurrency": 8,
            "tracking": {"enabled": False},
        }
        (tmp_path / "config.yaml").write_text(json.dumps(config), encoding="utf-8")
        monkeypatch.chdir(tmp_path)
        assert main(["evaluate", str(tmp_path / "config.yaml"), "--quiet"]) == 0
    (run,) = (tmp_path / "runs").iterdir()
    got = json.loads((run / "metrics.json").read_text())["metrics"]

    # the pairs as Inspect's own reader gives the samples, and the stub's verdicts on them
    samples = read_eval_log(str(log)).samples
    ref = np.array([int(refused(int(s.id[1:]))) for s in samples])
    cand = np.array([int(judged_refusal(int(s.id[1:]), s.epoch)) for s in samples])
    clusters = [str(s.id) for s in samples]
    want = agreement_metrics(
        ref, cand, kind="binary", k=2, clusters=clusters, labels=["False", "True"]
    )
    assert len(samples) == SAMPLES * EPOCHS
    assert got.keys() == want.keys()
    for name, m in got.items():
        assert m["ci_method"] == want[name].ci_method, name
        assert m["note"] == want[name].note, name
        assert m["n"] == want[name].n and m["value"] == pytest.approx(want[name].value)
        assert (m["ci_low"], m["ci_high"]) == pytest.approx((want[name].ci_low, want[name].ci_high))
    assert got["accuracy"]["count"] == int((ref == cand).sum())
    assert got["accuracy"]["ci_method"] == "cluster bootstrap"
    assert f"resampled {SAMPLES} clusters" in got["accuracy"]["note"]
    # the judge flagged every refusal: no resample can move its miss rate off 0, so the interval
    # is the exact one over the 8 refused samples, not over their 24 epochs
    fnr = got["false_negative_rate"]
    assert (fnr["value"], fnr["n"], fnr["ci_method"]) == (0.0, 24, "Clopper–Pearson over clusters")
    assert fnr["ci_high"] == pytest.approx(clopper_pearson_interval(0, 8)[1])

    # as if each epoch were a new sample, the interval would be narrower than it is
    independent = agreement_metrics(ref, cand, kind="binary", k=2, labels=["False", "True"])
    kappa = got["kappa_categorical"]
    assert (
        independent["kappa_categorical"].ci_high - independent["kappa_categorical"].ci_low
        < kappa["ci_high"] - kappa["ci_low"]
    )
