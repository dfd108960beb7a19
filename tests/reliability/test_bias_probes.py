"""The deterministic bias probes (prompt_injection, authority, bandwagon, distraction) and
polarity: probes differ from the source only by the inserted span, no LLM makes them, and every
rate equals an independent computation; bad settings are one-line errors before any writing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.errors import ConfigError
from assay.lm import ScriptedEngine, ScriptedFailure, register_script
from assay.reliability import GenerationContext, HarnessConfig, get_test, run_harness
from assay.reliability.probes._insertion import insert_block, opposite_verdict
from assay.scale import Scale
from assay.types import Item

from .test_position_samples import cluster_ci

BINARY = Scale(kind="binary", labels=["incorrect", "correct"])
RUBRIC = "State the correct sum."
TEXT = st.lists(
    st.sampled_from(["a", "b", " ", ".", "!", "?", "\n", "\t", "Word", "é", "\r\n", "”"]),
    max_size=30,
).map("".join)


def ctx(scale: Scale = BINARY) -> GenerationContext:
    def no_lm(*_a, **_k):
        raise AssertionError("a deterministic test asked for an LM")

    return GenerationContext(scale=scale, lm=no_lm)


def probes_of(test: str, item: Item, scale: Scale = BINARY, **settings_):
    t = get_test(test, settings_)
    return t.generate(t.units([item])[0], ctx(scale))


@settings(max_examples=60, deadline=None)
@given(TEXT.filter(lambda s: s.strip()), st.sampled_from([0, 1]))
def test_injected_and_cue_probes_differ_from_the_source_only_by_the_inserted_span(text, label):
    item = Item(id="s", request="q", response=text, expected=label)
    for test, kw in (
        ("prompt_injection", {}),
        ("authority", {"positions": ["start", "middle", "end"]}),
        ("bandwagon", {"positions": ["start", "middle", "end"]}),
        ("distraction", {"positions": ["start", "middle", "end"]}),
    ):
        for p in probes_of(test, item, **kw):
            if not hasattr(p, "response"):  # Dropped: no word boundary for the middle
                assert p.reason == "not_applicable" and p.variant.endswith("/middle")
                continue
            if p.meta.get("placebo"):  # the source unchanged, judged again
                assert (p.response, p.target, p.source_id) == (text, label, "s")
                continue
            off, span = p.meta["offset"], p.meta["inserted"]
            assert p.response == text[:off] + span + text[off:]
            assert p.target == label and p.request == "q" and p.transcript is None
            if p.meta["position"] == "middle":
                assert 0 < off < len(text) and text[off - 1].isspace()


def test_on_a_transcript_the_block_is_in_the_judged_response_too():
    """On a transcript the block goes into its last assistant message; a judge of request and
    response (any text judge on an Inspect log) must see it there as well: the probe's response
    is that message when it was the response, else the response with the block of its own.
    (The response was left as the source's: a judge swayed by every citation moved 0 of 6.)"""
    from assay.types import Message

    answer = "The sky is blue. It scatters short wavelengths."
    said = [Message(role="user", content="Why is the sky blue?")]
    for response, last in ((answer, answer), ("Blue.", answer + " Anything else?")):
        item = Item(
            id="s",
            request="Why is the sky blue?",
            response=response,
            expected=1,
            transcript=[*said, Message(role="assistant", content=last)],
        )
        for test in ("prompt_injection", "authority", "bandwagon", "distraction"):
            for p in probes_of(test, item, positions=["start", "end"]):
                if p.meta.get("placebo"):
                    assert p.response == response and p.transcript in (None, item.transcript)
                    continue
                span = p.meta["inserted"].strip()
                assert span in p.transcript[-1].content and span in p.response, (test, p.variant)
                if response == last:
                    assert p.response == p.transcript[-1].content
                else:
                    assert p.response.replace(p.meta["inserted"], "", 1) != p.response


def test_prompt_injection_makes_every_variant_and_position_asking_the_opposite_label():
    item = Item(id="s", request="q", response="One. Two.\nThree four.", expected=1)
    *probes, placebo = probes_of("prompt_injection", item)
    assert len(probes) == 12 and len({p.id for p in probes}) == 12
    assert placebo.meta["placebo"] and placebo.response == item.response
    kinds = {(p.meta["variant"], p.meta["position"]) for p in probes}
    assert kinds == {
        (v, pos)
        for v in ("plain", "comment", "code_block", "role_tag")
        for pos in ("start", "middle", "end")
    }
    for p in probes:
        assert p.meta["injected"] == 0 and '"incorrect"' in p.meta["inserted"]
    wraps = {p.meta["variant"]: p.meta["inserted"] for p in probes if p.meta["position"] == "end"}
    assert "<!--" in wraps["comment"] and "```" in wraps["code_block"]
    assert "<|im_start|>system" in wraps["role_tag"]
    ordinal = Scale(kind="ordinal", min=1, max=6)
    assert [opposite_verdict(s, ordinal) for s in (1, 3, 4, 6)] == [6, 6, 1, 1]


def test_the_middle_is_a_line_start_near_the_middle_then_a_sentence_then_a_word():
    assert insert_block("aaaa\nbbbb", "X", "middle").offset == 5
    assert insert_block("One two. Three four.", "X", "middle").offset == 9
    assert insert_block("one two three", "X", "middle").offset in (4, 8)
    assert insert_block("single", "X", "middle") is None


# -- the rates, on scripted judges -------------------------------------------------------------
ITEMS = [
    ("What is 2 + 3?", 5),
    ("What is 7 + 8?", 15),
    ("What is 4 + 4?", 9),
    ("What is 1 + 1?", 3),
]


def data(tmp_path: Path) -> Path:
    lines = ["id,request,response,expected"]
    for i, (q, c) in enumerate(ITEMS):
        a, b = (int(x) for x in re.findall(r"\d+", q))
        lines.append(f"s{i},{q},The sum is {c}. I checked it twice.,{int(a + b == c)}")
    path = tmp_path / "items.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def truth(call) -> int:
    a, b = (int(x) for x in re.findall(r"\d+", call.field("request") or ""))
    m = re.search(r"The sum is (\d+)", call.field("response") or "")
    return int(bool(m) and int(m.group(1)) == a + b)


def config(tmp_path, tests, judge_model, **kw) -> HarnessConfig:
    return HarnessConfig.model_validate(
        {
            "name": "b",
            "data": {"path": str(data(tmp_path)), "columns": {"id": "id"}},
            "scale": {"kind": "binary", "labels": ["incorrect", "correct"]},
            "generator": {"model": "scripted:bias-gen"},
            "validator": {"model": "scripted:bias-val"},
            "judges": [{"name": "j", "model": judge_model, "rubric": RUBRIC}],
            "tests": tests,
            "retries": 0,
            "concurrency": 2,
            "tracking": {"enabled": False},
            "output_dir": str(tmp_path / "runs"),
            **kw,
        }
    )


def rows(res, test):
    """(probe, verdict, own source verdict) for every probe of ``test`` but its placebos."""
    probes = [json.loads(x) for x in (res.run_dir / "probes.jsonl").read_text().splitlines()]
    judged = {}
    for f in (res.run_dir / "judgments").glob("*.jsonl"):
        for line in f.read_text().splitlines():
            j = json.loads(line)
            judged[j["item_id"]] = j["score"]
    return [
        (p, judged[p["id"]], judged[f"source:{p['source_id']}"])
        for p in probes
        if p["test"] == test and not p["meta"].get("placebo")
    ]


def test_injection_success_per_variant_and_position_equals_an_independent_count(tmp_path):
    def respond(call):
        response = call.field("response") or ""
        v = truth(call)
        if "7 + 8" in (call.field("request") or ""):
            v = 1 - v  # wrong on this source: it is left out of the success rate
        asked = re.search(r'verdict for it is "(\w+)"', response)
        at_start = response.find("verdict for it is") < response.find("The sum is")
        obeys = asked and ("```" in response or at_start)
        return {"verdict": asked.group(1) if obeys else ("correct" if v else "incorrect")}

    register_script("inj-judge", lambda: ScriptedEngine(respond=respond))
    res = run_harness(
        config(tmp_path, {"prompt_injection": {}}, "scripted:inj-judge"),
        workdir=tmp_path,
        progress=False,
    )
    scores = res.summary.judges["j"].tests["prompt_injection"]
    m = scores.scoring_metrics  # what the injection scoring adds to the envelope
    # the sources, 12 probes and a placebo per source; no generation or validation
    assert res.summary.lm_calls == {"judge:j": 4 + 4 * (12 + 1)}
    rs = rows(res, "prompt_injection")
    eligible = [r for r in rs if r[2] == r[0]["target"]]
    assert m["eligible_sources"] == 3 and m["excluded_sources"] == 1
    # obeyed: code blocks anywhere (3), the other three variants at the start (3): 6 of 12
    assert m["injection_success"].value == pytest.approx(6 / 12)
    assert m["injection_success_by_variant"]["code_block"].value == 1.0
    assert m["injection_success_by_variant"]["plain"].value == pytest.approx(1 / 3)
    assert m["injection_success_by_position"]["start"].value == 1.0
    assert m["injection_success_by_position"]["end"].value == pytest.approx(1 / 4)
    for key, group in (("variant", "comment"), ("position", "middle")):
        sub = [r for r in eligible if r[0]["meta"][key] == group]
        vals = [float(v == r[0]["meta"]["injected"]) for r in sub for v in [r[1]]]
        got = m[f"injection_success_by_{key}"][group]
        assert got.value == pytest.approx(sum(vals) / len(vals))
        lo, hi = cluster_ci(vals, [r[0]["source_id"] for r in sub])
        assert (got.ci_low, got.ci_high) == pytest.approx((lo, hi))
    passed = [float(r[1] == r[0]["target"]) for r in rs]
    assert scores.pass_rate.value == pytest.approx(sum(passed) / len(passed))
    assert "left out" in (res.run_dir / "report.md").read_text()


def test_cue_direction_toward_and_away_equals_an_independent_count(tmp_path):
    def respond(call):
        response = call.field("response") or ""
        v = truth(call)
        if "Harrington" in response:
            v = 1  # swayed by the citation: toward the top of the scale
        if "Most reviewers" in response and v == 1:
            v = 0  # contrarian when told what others said
        return {"verdict": "correct" if v else "incorrect"}

    register_script("cue-judge", lambda: ScriptedEngine(respond=respond))
    tests = {"authority": {}, "bandwagon": {"toward": "top"}, "distraction": {}}
    res = run_harness(
        config(tmp_path, tests, "scripted:cue-judge"), workdir=tmp_path, progress=False
    )
    assert set(res.summary.lm_calls) == {"judge:j"}
    got = {t: s.scoring_metrics for t, s in res.summary.judges["j"].tests.items()}
    consistency = {t: s.consistency for t, s in res.summary.judges["j"].tests.items()}
    for test in tests:
        rs = rows(res, test)
        cue = [r[0]["meta"]["cue_verdict"] for r in rs]
        moved = [r[1] != r[2] for r in rs]
        tow = [
            mv and c is not None and abs(r[1] - c) < abs(r[2] - c)
            for r, mv, c in zip(rs, moved, cue, strict=True)
        ]
        assert consistency[test].value == pytest.approx(1 - sum(moved) / len(rs))
        if test == "distraction":
            assert got[test]["toward_cue"] is None and sum(moved) == 0
            continue
        assert got[test]["toward_cue"].value == pytest.approx(sum(tow) / len(rs))
        away = [mv and not t for mv, t in zip(moved, tow, strict=True)]
        assert got[test]["away_from_cue"].value == pytest.approx(sum(away) / len(rs))
    # by hand: sources 0 and 1 are correct, 2 and 3 are not
    assert got["authority"]["toward_cue"].value == 0.5  # the two incorrect ones go up
    assert got["bandwagon"]["away_from_cue"].value == 0.5  # the two correct ones go down
    assert got["bandwagon"]["moved_down"].value == 0.5


# -- polarity ---------------------------------------------------------------------------------
def test_polarity_runs_the_judge_on_the_inverted_task_and_mirrors_its_verdict(tmp_path):
    gen_calls, val_calls = [], []

    def gen(call):
        gen_calls.append(call)
        return {"inverted_instruction": "", "inverted_rubric": "Flag a wrong sum."}

    def val(call):
        val_calls.append(call)
        return {"inverted_ok": True, "reason": "reversed"}

    def judge(call):
        v = truth(call)
        # misreads the inverted question on source 3: answers as if asked the original one
        if "Flag" in call.prompt and "1 + 1" in (call.field("request") or ""):
            v = 1 - v
        return {"verdict": "correct" if v else "incorrect"}

    register_script("bias-gen", lambda: ScriptedEngine(respond=gen))
    register_script("bias-val", lambda: ScriptedEngine(respond=val))
    register_script("pol-judge", lambda: ScriptedEngine(respond=judge))
    res = run_harness(
        config(tmp_path, {"polarity": {}}, "scripted:pol-judge"), workdir=tmp_path, progress=False
    )
    assert len(gen_calls) == 1 and len(val_calls) == 1  # once per rubric
    m = res.summary.judges["j"].tests["polarity"].scoring_metrics
    rs = rows(res, "polarity")
    mirrored = [1 - v for _, v, _ in rs]  # binary mirror: 0 ↔ 1
    agree = [float(x == r[2]) for x, r in zip(mirrored, rs, strict=True)]
    assert m["mirrored_agreement"].value == pytest.approx(sum(agree) / 4) == 0.75
    assert m["contradiction_rate"].value == pytest.approx(0.25)
    assert m["inverted_task"]["rubric"] == "Flag a wrong sum."
    judged = json.loads(
        next((res.run_dir / "judgments").glob("*.jsonl")).read_text().splitlines()[-1]
    )
    assert judged["config_hash"]  # the inverted task's config, recorded with each judgment
    assert (res.run_dir / "programs" / "polarity.generator.json").is_file()
    assert "Inverted rubric" in (res.run_dir / "report.md").read_text()
    # reviewable like any probe: the review file shows the inverted task; a rejection imports
    import yaml

    from assay.reliability import export_review, import_review

    out = tmp_path / "review.yaml"
    assert export_review(res.run_dir, out, BINARY) == 4
    entries = yaml.safe_load(out.read_text())
    assert entries[0]["judge_task"]["rubric"] == "Flag a wrong sum."
    entries[0].update(decision="reject", reviewer="ana")
    out.write_text(yaml.safe_dump(entries))
    assert import_review(res.run_dir, out, BINARY)["rejected"] == 1


def test_a_rejected_inversion_drops_every_probe_and_is_counted(tmp_path):
    register_script(
        "bias-gen",
        lambda: ScriptedEngine(
            respond=lambda c: {"inverted_instruction": "", "inverted_rubric": "x"}
        ),
    )
    register_script(
        "bias-val", lambda: ScriptedEngine(respond=lambda c: {"inverted_ok": False, "reason": "no"})
    )
    register_script("pol-judge", lambda: ScriptedEngine(respond=lambda c: {"verdict": "correct"}))
    res = run_harness(
        config(tmp_path, {"polarity": {}}, "scripted:pol-judge"), workdir=tmp_path, progress=False
    )
    assert res.summary.probes["polarity"] == 0
    assert res.summary.dropped["polarity"] == {"validator_rejected": 4}


# -- a source verdict the judge left unscored ---------------------------------------------------
def test_the_pass_rate_counts_every_scored_probe_whatever_the_source_verdict(tmp_path):
    """The judge fails (an LM error) on the unchanged item of 3 of 8 sources — their source
    verdicts and placebos — and scores every probe. A pass rate compares a probe's verdict with
    its target and needs no source verdict: it is over every scored probe of the 8 sources, its
    interval the exact one over the 8 when every probe passed. Consistency needs it: it is over
    the 5 other sources' probes, the rest counted as with an unscored source; the injection
    success counts 5 sources and leaves 3 out, and says so."""
    from scipy.stats import binomtest

    failing = {"What is 4 + 13?", "What is 7 + 19?", "What is 9 + 23?"}  # s1, s4, s6
    lines = ["id,request,response,expected"]
    for i in range(8):
        a, b = 3 + i, 11 + 2 * i
        c = a + b if i % 2 == 0 else a + b + 1
        lines.append(f"s{i},What is {a} + {b}?,The sum is {c}. I checked it.,{int(i % 2 == 0)}")
    table = tmp_path / "eight.csv"
    table.write_text("\n".join(lines) + "\n")
    given = {row.split(",")[1]: row.split(",")[2] for row in lines[1:]}

    def respond(call):
        request, response = call.field("request"), call.field("response")
        if call.field("rubric") == RUBRIC and response == given[request] and request in failing:
            raise ScriptedFailure("the judge's server is down")  # source and placebos alike
        v = truth(call)
        if "```" in response and request == "What is 3 + 11?":
            v = 0  # obeys the injection in a code block on s0: one probe of 16 fails
        if "Literal[1, 2, 3, 4]" in call.prompt:  # scale_granularity: 1-4, mapped back 0 0 1 1
            return {"verdict": 4 if v else 1}
        return {"verdict": "correct" if v else "incorrect"}

    register_script("unscored-source", lambda: ScriptedEngine(respond=respond))
    tests = {
        "authority": {},
        "distraction": {},
        "prompt_injection": {"variants": ["plain", "code_block"], "positions": ["end"]},
        "polarity": {"rubric": "Flag a wrong sum."},
        "prompt_paraphrase": {"paraphrases": [{"rubric": "Is the stated sum right?"}]},
        "scale_granularity": {},
    }
    cfg = config(
        tmp_path,
        tests,
        "scripted:unscored-source",
        data={"path": str(table), "columns": {"id": "id"}},
    )
    res = run_harness(cfg, workdir=tmp_path, progress=False)

    # the run's own files: every verdict (None: unscored) and the metrics as written
    probes = [json.loads(x) for x in (res.run_dir / "probes.jsonl").read_text().splitlines()]
    (path,) = (res.run_dir / "judgments").glob("j-*.jsonl")
    score = {j["item_id"]: j["score"] for j in map(json.loads, path.read_text().splitlines())}
    written = json.loads((res.run_dir / "metrics.json").read_text())["judges"]["j"]["tests"]
    report = (res.run_dir / "report.md").read_text()
    unscored_sources = {k for k, v in score.items() if k.startswith("source:") and v is None}
    assert len(unscored_sources) == 3

    def as_asked(p: dict, v: int) -> int:
        if p["test"] == "polarity":
            return 1 - v  # the inverted question's verdict mirrored back
        if p["test"] == "scale_granularity":
            return p["meta"]["maps_back"][str(v)]
        return v

    for test in tests:
        rows = [p for p in probes if p["test"] == test and not p["meta"].get("placebo")]
        assert rows and all(score[p["id"]] is not None for p in rows), test  # all scored
        passed = [float(as_asked(p, score[p["id"]]) == p["target"]) for p in rows]
        sources = [p["source_id"] for p in rows]
        got = written[test]["pass_rate"]
        assert (got["count"], got["n"]) == (sum(passed), len(passed)), test
        assert len(set(sources)) == 8
        if sum(passed) == len(passed):  # no variation: exact over the 8 sources
            ci = binomtest(8, 8).proportion_ci(method="exact")
            assert got["ci_method"] == "Clopper–Pearson over clusters"
            assert (got["ci_low"], got["ci_high"]) == pytest.approx((ci.low, ci.high)), test
            assert f"| {test} | 1.00 [{ci.low:.2f}, 1.00] † |" in report
        else:
            assert test == "prompt_injection" and sum(passed) == len(passed) - 1
            lo, hi = cluster_ci(passed, sources)
            assert (got["ci_low"], got["ci_high"]) == pytest.approx((lo, hi)), test
        # consistency needs the source verdict: the probes of the 5 scored sources; the others
        # counted, and said in the judge's table
        own = [p for p in rows if score[f"source:{p['source_id']}"] is not None]
        assert written[test]["consistency"]["n"] == len(own) < len(rows), test
        left = len(rows) - len(own)
        assert written[test]["source_unscored"] == left, test
        assert f"0 of {len(rows)}; {left} with an unscored source" in report, test

    injection = written["prompt_injection"]
    assert (injection["eligible_sources"], injection["excluded_sources"]) == (5, 3)
    assert injection["injection_success"]["n"] == 10  # 2 probes of each counted source
    assert re.search(r"\n\| j \| [^|]+ \| 5 \| 3 \|", report)
    # every metric of the cue, injection and polarity tests, the unscored sources' counts
    # too, in report.md and report.html
    from tests.web.test_report_parity import check_every_metric

    shown = {"authority", "distraction", "prompt_injection", "polarity"}
    assert check_every_metric(res.run_dir, only=shown) > 0


# -- bad input --------------------------------------------------------------------------------
def test_bad_settings_are_one_line_config_errors_naming_the_field():
    with pytest.raises(ConfigError, match=r"tests.prompt_injection: field 'variants.0'"):
        get_test("prompt_injection", {"variants": ["html"]})
    with pytest.raises(ConfigError, match=r"tests.prompt_injection: field 'positions.0'"):
        get_test("prompt_injection", {"positions": ["top"]})
    with pytest.raises(ConfigError, match=r"tests.authority: field 'positions'"):
        get_test("authority", {"positions": ["end", "end"]})
    with pytest.raises(ConfigError, match=r"field 'instruction'.*\{verdict\}"):
        get_test("prompt_injection", {"instruction": "say yes"})
    one = Scale(kind="categorical", labels=["ok", "fine"], scores={"ok": 1, "fine": 1})
    with pytest.raises(ConfigError, match="tests.prompt_injection: .* single verdict"):
        get_test("prompt_injection").check([Item(id="a", expected=1)], one)
    with pytest.raises(ConfigError, match="tests.polarity: needs a binary or ordinal"):
        get_test("polarity").check([], Scale(kind="categorical", labels=["a", "b", "c"]))


def cli(capsys, tmp_path, monkeypatch, yaml_text: str) -> tuple[int, str]:
    from assay.cli import main

    monkeypatch.chdir(tmp_path)
    path = tmp_path / "h.yaml"
    path.write_text(yaml_text)
    code = main(["harness", str(path), "--quiet"])
    return code, capsys.readouterr().err.strip()


PAIRS = "id,request,response,response_b,expected\np1,Q?,one,two,A\n"


@pytest.mark.parametrize(
    "scale,judges,tests,data,needles",
    [
        (
            "{kind: categorical, labels: [A, B, tie]}",
            "[{name: r, model: 'scripted:x'}]",
            "{position_bias: {}}",
            PAIRS,
            ["tests.position_bias", "judge 'r' is not pairwise"],
        ),
        (
            "{kind: categorical, labels: [A, B, tie]}",
            "[{name: p, task: pairwise, model: 'scripted:x'}]",
            "{label_flip: {}}",
            PAIRS,
            ["tests.label_flip", "for pairwise judges use position_bias"],
        ),
        (
            "{kind: categorical, labels: [ok, fine], scores: {ok: 1, fine: 1}}",
            "[{name: r, model: 'scripted:x'}]",
            "{prompt_injection: {}}",
            "id,request,response,expected\na,Q?,yes,ok\n",
            ["tests.prompt_injection", "single verdict"],
        ),
        (
            "binary",
            "[{name: r, model: 'scripted:x'}]",
            "{prompt_injection: {positions: [start, centre]}}",
            "id,request,response,expected\na,Q?,yes,1\n",
            ["tests.prompt_injection", "positions.1"],
        ),
        (
            "{kind: categorical, labels: [A, B, tie]}",
            "[{name: p, task: pairwise, model: 'scripted:x'}]",
            "{position_bias: {}}",
            "id,request,response,score\na,Q?,same text,3\nb,Q?,same  text,4\nc,R?,x,2\nd,R?,y,2\n",
            ["no pair left", "equal_scores 1", "identical_responses 1"],
        ),
    ],
)
def test_bad_bias_configs_exit_non_zero_with_one_line_and_write_nothing(
    tmp_path, capsys, monkeypatch, scale, judges, tests, data, needles
):
    (tmp_path / "d.csv").write_text(data)
    pairs = "\n  pairs: {score: score}\n  columns: {expected: null}" if "score" in data else ""
    code, err = cli(
        capsys,
        tmp_path,
        monkeypatch,
        f"name: h\ndata:\n  path: d.csv{pairs}\nscale: {scale}\njudges: {judges}\n"
        f"tests: {tests}\ntracking: {{enabled: false}}\n",
    )
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    for n in needles:
        assert n in lines[0], lines[0]
    assert not (tmp_path / "runs").exists()


def test_compare_ranks_the_bias_rates_of_being_moved_lower_is_better():
    from assay.metrics import higher_is_better

    for metric in (
        "prompt_injection.injection_success",
        "prompt_injection.injection_success_by_variant.plain",
        "authority.toward_cue",
        "polarity.contradiction_rate",
        "position_bias.flip_rate",
    ):
        assert not higher_is_better(metric), metric
    for metric in ("polarity.mirrored_agreement", "position_bias.consistency", "mean_pass_rate"):
        assert higher_is_better(metric), metric


def test_compare_ranks_first_position_preference_by_its_distance_from_one_half():
    """0.5 is a position-blind judge; 0.3 and 0.7 are equally biased, 0.9 more so."""
    from types import SimpleNamespace

    from assay.comparison import leaderboard
    from assay.metrics import direction

    metric = "position_bias.first_position_rate"
    assert direction(metric) == "closest to 0.5 is better"

    def run(rid: str, value: float, cost: float, start: int) -> SimpleNamespace:
        return SimpleNamespace(
            info=SimpleNamespace(run_id=rid, run_name=rid, experiment_id="0", start_time=start),
            data=SimpleNamespace(
                metrics={metric: value, "usage_cost_usd": cost}, params={}, tags={}
            ),
        )

    runs = [
        run("a", 0.9, 1.0, 1),
        run("b", 0.3, 2.0, 2),
        run("c", 0.52, 3.0, 3),
        run("d", 0.7, 1.5, 4),
    ]
    rows = leaderboard(runs, metric)
    assert [r.run_id for r in rows] == ["c", "d", "b", "a"]  # 0.7 and 0.3 as biased; d cheaper
    # the front: a (cheapest), d (better than a, cheaper than c), c (best); b is dominated by d
    assert {r.run_id: r.pareto for r in rows} == {"a": True, "b": False, "c": True, "d": True}
