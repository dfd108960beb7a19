"""A confidence per judgment: the verdict's probability from token logprobs,
the share of k samples agreeing with their majority, the share of a panel agreeing with its
verdict — asked for in the judge config (and then in its hash), recorded in judgments.jsonl."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from assay.cli import main
from assay.lm import StubServer
from assay.lm._stub_server import verdict_token_logprobs
from assay.programs import JudgeConfig
from assay.programs._expected import verdict_distribution
from tests.stub_judge import stub_config, write_items


def test_verdict_distribution_renormalises_over_the_options():
    lps = verdict_token_logprobs(
        '{"verdict": 3}', {"3": 0.5, "4": 0.3, "2": 0.1, "x": 0.1}
    )  # "x" starts no option: left out
    dist = verdict_distribution(lps, {str(i): i for i in range(1, 7)})
    assert dist == pytest.approx({2: 0.1 / 0.9, 3: 0.5 / 0.9, 4: 0.3 / 0.9})
    assert verdict_distribution([], {"0": 0}) is None


def test_the_hash_changes_only_when_a_confidence_is_asked_for():
    base = {"scale": "binary", "rubric": "r"}
    plain = JudgeConfig(**base).config_hash()
    assert JudgeConfig(**base, confidence=None).config_hash() == plain
    probability = JudgeConfig(**base, confidence={"source": "probability"}).config_hash()
    samples = JudgeConfig(**base, confidence={"source": "samples", "samples": 3}).config_hash()
    assert len({plain, probability, samples}) == 3
    assert "confidence" not in JudgeConfig(**base).flat_params()


@pytest.mark.parametrize(
    ("judge", "message"),
    [
        ({"confidence": {"source": "panel"}}, "program: panel"),
        ({"confidence": {"source": "probability", "samples": 3}}, "only for source: samples"),
        ({"confidence": {"source": "samples"}, "score_mode": "expected"}, "source: probability"),
    ],
)
def test_a_confidence_that_cannot_be_read_is_refused(judge, message):
    with pytest.raises(ValueError, match=message):
        JudgeConfig(scale="binary", **judge)


@pytest.mark.parametrize(
    "confidence",
    [{"source": "probability"}, {"source": "samples", "samples": 3, "temperature": 0.7}],
)
def test_a_judge_with_a_confidence_reads_back_as_a_run_writes_it(confidence):
    """A run's ``config.yaml`` is the judge's full dump: it reads back as the same judge (the
    sampling settings were dumped for every source, and refused on reading for all but
    ``samples``: no run of a judge with a probability confidence could be certified)."""
    judge = JudgeConfig(scale="binary", rubric="r", confidence=confidence)
    again = JudgeConfig.model_validate(json.loads(json.dumps(judge.model_dump(mode="json"))))
    assert again == judge and again.config_hash() == judge.config_hash()


def judgments(folder: Path) -> list[dict]:
    (run_dir,) = (folder / "runs").iterdir()
    lines = (run_dir / "judgments.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_probability_confidence_is_the_verdicts_probability(tmp_path, monkeypatch):
    """Item k answers True with P(True) = 0.6 + 0.1·k: the confidence is that probability
    (max(p, 1 − p) of the verdict given); logprobs were asked for on the wire."""
    monkeypatch.chdir(tmp_path)

    def probs(request):
        k = int(request["messages"][-1]["content"].split("item ")[1][0])
        p = 0.6 + 0.1 * k
        return {"True": p, "False": 1 - p}

    answer = json.dumps({"verdict": "True"})
    with StubServer(respond=lambda _r: answer, verdict_probs=probs) as stub:
        cfg = stub_config(
            tmp_path,
            write_items(tmp_path),
            stub.base_url,
            name="conf",
            judge={"confidence": {"source": "probability"}},
        )
        assert main(["evaluate", str(cfg), "--quiet"]) == 0
        assert all(r.get("logprobs") is True for r in stub.requests)
    got = {
        j["item_id"]: (j["score"], j["confidence"], j["confidence_source"])
        for j in judgments(tmp_path)
    }
    assert got == {f"i{k}": (1, pytest.approx(0.6 + 0.1 * k), "probability") for k in range(4)}
    from assay.decisions._finished import read_evaluate_run

    (run_dir,) = (tmp_path / "runs").iterdir()
    config, _, _ = read_evaluate_run(run_dir)  # its config.yaml reads back
    assert config.judge.confidence.source == "probability"


def test_sampled_confidence_is_the_majoritys_share(tmp_path, monkeypatch):
    """Five samples per item (five requests each: distinct rollout ids are not served from the
    cache); item i0's samples say True, True, False, True, False → verdict True, 3/5."""
    monkeypatch.chdir(tmp_path)
    seen: Counter = Counter()
    script = ["True", "True", "False", "True", "False"]

    def respond(request):
        prompt = request["messages"][-1]["content"]
        n = seen[prompt]
        seen[prompt] += 1
        verdict = script[n % 5] if "item 0" in prompt else "False"
        return json.dumps({"verdict": verdict})

    with StubServer(respond=respond) as stub:
        cfg = stub_config(
            tmp_path,
            write_items(tmp_path),
            stub.base_url,
            name="conf",
            concurrency=1,
            judge={"confidence": {"source": "samples", "samples": 5, "temperature": 0.7}},
        )
        assert main(["evaluate", str(cfg), "--quiet"]) == 0
        assert stub.n_requests == 4 * 5
        assert {r["temperature"] for r in stub.requests} == {0.7}
    got = {j["item_id"]: (j["score"], j["confidence"]) for j in judgments(tmp_path)}
    assert got == {"i0": (1, 0.6), "i1": (0, 1.0), "i2": (0, 1.0), "i3": (0, 1.0)}
    assert [s["score"] for s in judgments(tmp_path)[0]["raw"]["samples"]] == [1, 1, 0, 1, 0]


def test_panel_confidence_is_the_members_agreement(tmp_path, monkeypatch):
    """Three members; the one on the "strict" model answers False: 2/3 agree."""
    monkeypatch.chdir(tmp_path)

    def respond(request):
        strict = request["model"] == "stub-strict"
        return json.dumps({"verdict": "False" if strict else "True"})

    with StubServer(respond=respond) as stub:
        scale = {"kind": "binary", "labels": ["False", "True"]}
        member = {"api_base": stub.base_url, "scale": scale}
        members = [
            {**member, "name": "a", "model": "openai/stub-a"},
            {**member, "name": "b", "model": "openai/stub-b"},
            {**member, "name": "c", "model": "openai/stub-strict"},
        ]
        cfg = stub_config(
            tmp_path,
            write_items(tmp_path),
            stub.base_url,
            name="conf",
            judge={
                "program": "panel",
                "members": members,
                "confidence": {"source": "panel"},
            },
        )
        assert main(["evaluate", str(cfg), "--quiet"]) == 0
        assert stub.n_requests == 4 * 3
    got = [(j["score"], j["confidence"], j["confidence_source"]) for j in judgments(tmp_path)]
    assert got == [(1, pytest.approx(2 / 3), "panel")] * 4


@pytest.mark.parametrize(("tie_break", "score"), [("lower", 0), ("higher", 1)])
def test_a_tie_among_samples_is_broken_by_the_judges_tie_rule(
    tmp_path, monkeypatch, tie_break, score
):
    """Two samples, True then False: the verdict is the tie rule's, the confidence 1/2."""
    monkeypatch.chdir(tmp_path)
    seen: Counter = Counter()

    def respond(request):
        prompt = request["messages"][-1]["content"]
        seen[prompt] += 1
        return json.dumps({"verdict": "True" if seen[prompt] % 2 else "False"})

    with StubServer(respond=respond) as stub:
        judge = {"confidence": {"source": "samples", "samples": 2}, "tie_break": tie_break}
        cfg = stub_config(
            tmp_path,
            write_items(tmp_path, 1),
            stub.base_url,
            name="tie",
            concurrency=1,
            judge=judge,
        )
        assert main(["evaluate", str(cfg), "--quiet"]) == 0
    (j,) = judgments(tmp_path)
    assert (j["score"], j["confidence"]) == (score, 0.5)
