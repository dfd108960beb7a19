"""The judge's own prompt, asked another way, through the harness: ``prompt_paraphrase`` (its
instruction and rubric in other words, against the placebo) flags a judge whose verdicts
follow the wording and not one that is only noisy; every paraphrase and re-judgment is a
counted call, a re-run makes none, an edited paraphrase is judged anew, a rejected one is
written again or dropped, never used. ``scale_granularity`` (its rubric on a coarser and a
finer scale) maps each verdict back as stated and reports the agreement ``assay evaluate``
would, per granularity, checked against scikit-learn."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from html import unescape

import pytest

from assay.cli import main
from assay.errors import ConfigError, DataError
from assay.reliability import HarnessConfig, get_test, run_harness
from assay.scale import Scale
from tests.reliability.test_bias_probes import truth
from tests.reliability.test_placebo_effects import persona, read_jsonl, register, write_items

N = 30
RUBRIC = "State the correct sum."


def judge_metrics(uri: str, run_id: str) -> dict[str, float]:
    """The metrics of the one judge's MLflow child run under the harness run ``run_id``."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    parent = client.get_run(run_id)
    (child,) = client.search_runs(
        [parent.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{run_id}'"
    )
    return child.data.metrics


def config(
    folder, judges: dict[str, str], tests: dict, n: int = N, instruction: str | None = None, **kw
) -> HarnessConfig:
    task = {"rubric": RUBRIC} | ({"instruction": instruction} if instruction else {})
    return HarnessConfig.model_validate(
        {
            "name": "prompt",
            "data": {"path": str(write_items(folder, n)), "columns": {"id": "id"}},
            "scale": {"kind": "binary", "labels": ["incorrect", "correct"]},
            "generator": {"model": "scripted:ps-gen"},
            "validator": {"model": "scripted:ps-val"},
            "judges": [{"name": k, "model": m, **task} for k, m in judges.items()],
            "tests": tests,
            "retries": 0,
            "concurrency": 1,
            "tracking": {"enabled": False},
            "output_dir": str(folder / "runs"),
            **kw,
        }
    )


def writer(calls: list | None = None):
    """The generator: the k-th paraphrase (k = the earlier ones it is shown, plus one)."""

    def respond(call):
        if calls is not None:
            calls.append(call)
        k = (call.field("earlier") or "").count("---") + 1 + bool(call.field("earlier"))
        return {"paraphrased_instruction": "", "paraphrased_rubric": f"Rewording {k}: is it right?"}

    return respond


def accept(call):
    return {"same_meaning": True, "reason": "same criteria"}


def wordy(seed: int, share: float = 0.5):
    """A judge that follows the words of its task: the right verdict under its own rubric,
    the other one on a share of the items (drawn per prompt, seeded) under any other."""

    def respond(call):
        v = truth(call)
        digest = hashlib.sha256(repr((seed, call.prompt)).encode()).digest()
        if RUBRIC not in call.prompt and int.from_bytes(digest[:8], "big") / 2**64 < share:
            v = 1 - v
        return {"verdict": "correct" if v else "incorrect"}

    return respond


# -- prompt_paraphrase -------------------------------------------------------------------------
def test_a_wording_follower_is_flagged_and_a_noisy_judge_is_not_over_seeds(tmp_path):
    """A simulation over 5 seeds (30 sources, 3 paraphrases each): a judge that flips a coin
    on 30% of its calls, whatever it is asked, has each paraphrase's 95% interval of the effect
    against the placebo around 0; a judge that gives the other verdict on half the items
    whenever its rubric is reworded (true effect 0.5: its placebo never moves) is flagged in
    every cell, its interval covering 0.5. A source and its placebo ask the same prompt, so
    which of them draws which verdict follows the threads' order: the bounds are set for that
    (at 40 seeds the noisy judge was covered in 115 of 120 cells and flagged in 1 run of 40, the
    follower's interval covered 0.5 in 117 of 120 — each bound below fails with probability
    < 0.001 at those rates)."""
    register_writer = register("ps-gen", writer())
    register("ps-val", accept)
    assert register_writer.n_calls == 0
    covered, found, hit, noisy_flagged = [], [], [], []
    for seed in range(5):
        folder = tmp_path / str(seed)
        folder.mkdir()
        register(f"ps-noisy-{seed}", persona(100 + seed, noise=0.3))
        register(f"ps-wordy-{seed}", wordy(200 + seed))
        judges = {"noisy": f"scripted:ps-noisy-{seed}", "wordy": f"scripted:ps-wordy-{seed}"}
        res = run_harness(
            config(folder, judges, {"prompt_paraphrase": {}}), workdir=folder, progress=False
        )
        noisy = res.summary.judges["noisy"].tests["prompt_paraphrase"].placebo
        follower = res.summary.judges["wordy"].tests["prompt_paraphrase"].placebo
        assert set(noisy.effects) == set(follower.effects) == {"p1", "p2", "p3"}
        covered += [e.ci_low <= 0 <= e.ci_high and not e.flagged for e in noisy.effects.values()]
        found += [e.flagged and e.ci_low > 0 for e in follower.effects.values()]
        hit += [e.ci_low <= 0.5 <= e.ci_high for e in follower.effects.values()]
        assert follower.flagged
        noisy_flagged.append(noisy.flagged)
    assert sum(covered) >= 11, covered
    assert sum(noisy_flagged) <= 2, noisy_flagged
    assert all(found), found
    assert sum(hit) >= 11, hit


def test_every_paraphrase_is_a_counted_call_and_the_figures_equal_a_count_by_hand(tmp_path):
    gen_calls: list = []
    register("ps-gen", writer(gen_calls))
    register("ps-val", accept)
    engine = register("ps-wordy", wordy(7))
    cfg = config(tmp_path, {"wordy": "scripted:ps-wordy"}, {"prompt_paraphrase": {}})
    cfg.tracking.enabled = True
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    res = run_harness(cfg, workdir=tmp_path, progress=False, tracking_uri=uri)
    run = res.run_dir

    # written once for the judges' task (not per item), each shown the earlier ones
    assert len(gen_calls) == 3
    assert "Rewording 1" in gen_calls[2].field("earlier")
    assert "Rewording 2" in gen_calls[2].field("earlier")
    probes = read_jsonl(run / "probes.jsonl")
    asked = [p for p in probes if not p["meta"].get("placebo")]
    assert len(asked) == 3 * N and len(probes) == 4 * N
    assert {p["meta"]["judge_task"]["rubric"] for p in asked} == {
        f"Rewording {k}: is it right?" for k in (1, 2, 3)
    }
    assert all(p["validation"]["verdict"] for p in asked)
    # every call counted: lm_calls, the ledger, the judge's prompts
    judge_calls = N + 3 * N + N  # sources, paraphrased, placebos
    assert res.summary.lm_calls == {
        "generate:prompt_paraphrase": 3,
        "validate:prompt_paraphrase": 3,
        "judge:wordy": judge_calls,
    }
    assert len(read_jsonl(run / "calls.jsonl")) == judge_calls + 6
    assert engine.n_calls == judge_calls
    assert sum("Rewording 2: is it right?" in c.prompt for c in engine.calls) == N

    # the figures, recomputed from the judgment files
    (path,) = run.glob("judgments/wordy-*.jsonl")
    score = {j["item_id"]: j["score"] for j in read_jsonl(path)}
    m = res.summary.judges["wordy"].tests["prompt_paraphrase"]
    ways = m.scoring_metrics["paraphrases"]
    rates = {}
    for cell in ("p1", "p2", "p3"):
        rows = [p for p in asked if p["meta"]["paraphrase"] == cell]
        changed = [score[p["id"]] != score[f"source:{p['source_id']}"] for p in rows]
        right = [score[p["id"]] == p["target"] for p in rows]
        rates[cell] = sum(changed) / N
        assert ways[cell].changed.value == pytest.approx(rates[cell])
        assert ways[cell].agreement["accuracy"].value == pytest.approx(sum(right) / N)
        assert ways[cell].rubric == f"Rewording {cell[1]}: is it right?"
        e = m.placebo.effects[cell]
        assert e.cue_rate == pytest.approx(rates[cell]) and e.n == N
    worst = max(rates, key=lambda c: (rates[c], c))
    assert m.scoring_metrics["worst_paraphrase"] == worst
    assert ways["original"].agreement["accuracy"].value == pytest.approx(
        sum(score[f"source:{s['id']}"] == s["expected"] for s in read_jsonl(run / "seeds.jsonl"))
        / N
    )

    # in every report and in MLflow
    report = (run / "report.md").read_text()
    assert "## Prompt paraphrase (the judge's own instruction and rubric in other words)" in report
    assert f"| wordy | {worst} (worst) | {N} |" in report
    assert "| prompt_paraphrase | wordy | p1 |" in report  # the effects against the placebo
    assert "Prompt paraphrase" in (run / "report.html").read_text()
    got = judge_metrics(uri, res.mlflow_run_id)
    assert got["prompt_paraphrase.paraphrases.p2.changed"] == pytest.approx(rates["p2"])
    assert got["prompt_paraphrase.placebo.p2.effect"] == pytest.approx(
        m.placebo.effects["p2"].effect
    )
    assert got["prompt_paraphrase.worst_change_rate"] == pytest.approx(rates[worst])

    # a re-run makes no call and reads the same figures back
    before = (engine.n_calls, len(gen_calls))
    again = run_harness(cfg, workdir=tmp_path, progress=False, tracking_uri=uri)
    assert (engine.n_calls, len(gen_calls)) == before
    same = [json.dumps(r.summary.model_dump(mode="json")["judges"]) for r in (again, res)]
    assert same[0] == same[1]  # as text: an undirected effect's shares are nan


def test_a_changed_paraphrase_in_the_config_is_judged_anew(tmp_path):
    """An edited paraphrase is a new probe (a new id) judged under the new text. (The test's
    settings are part of the run's identity: the edited config is a run of its own, whose
    unchanged calls the LM cache answers where one is kept.)"""
    engine = register("ps-judge", wordy(3))
    given = [{"rubric": "Is the stated sum right?"}, {"rubric": "Check the sum."}]
    cfg = config(
        tmp_path, {"j": "scripted:ps-judge"}, {"prompt_paraphrase": {"paraphrases": given}}
    )
    res = run_harness(cfg, workdir=tmp_path, progress=False)
    assert res.summary.lm_calls == {"judge:j": N + 2 * N + N}  # none written, none validated
    first = engine.n_calls
    edited = [given[0], {"rubric": "Verify the addition."}]
    cfg2 = config(
        tmp_path, {"j": "scripted:ps-judge"}, {"prompt_paraphrase": {"paraphrases": edited}}
    )
    res2 = run_harness(cfg2, workdir=tmp_path, progress=False)
    new = engine.calls[first:]
    assert sum("Verify the addition." in c.prompt for c in new) == N
    assert not any("Check the sum." in c.prompt for c in new)
    old = {p["id"] for p in read_jsonl(res.run_dir / "probes.jsonl")}
    p2 = [
        p for p in read_jsonl(res2.run_dir / "probes.jsonl") if p["meta"].get("paraphrase") == "p2"
    ]
    assert {p["meta"]["judge_task"]["rubric"] for p in p2} == {"Verify the addition."}
    assert not old & {p["id"] for p in p2}  # no judgment of the old text is reused
    ways = res2.summary.judges["j"].tests["prompt_paraphrase"].scoring_metrics["paraphrases"]
    assert ways["p2"].rubric == "Verify the addition." and ways["p2"].probes == N


INSTRUCTION = "Grade the stated sum."


def test_a_judges_instruction_is_paraphrased_with_its_rubric(tmp_path):
    """A judge with an instruction: the generator is shown it and writes its paraphrase too;
    each paraphrased instruction (beside its rubric) is what the judge is asked, and is the
    run's recorded paraphrase, in the probes, the metrics and the report."""
    gen_calls: list = []
    plain = writer(gen_calls)

    def respond(call):
        out = plain(call)
        k = out["paraphrased_rubric"].split(":")[0].split()[-1]
        return out | {"paraphrased_instruction": f"Say whether the sum is right ({k})."}

    register("ps-gen", respond)
    register("ps-val", accept)
    engine = register("ps-judge", persona(1, noise=0.0))
    tests = {"prompt_paraphrase": {"n": 2}}
    cfg = config(tmp_path, {"j": "scripted:ps-judge"}, tests, n=4, instruction=INSTRUCTION)
    res = run_harness(cfg, workdir=tmp_path, progress=False)

    assert {c.field("instruction") for c in gen_calls} == {INSTRUCTION}
    probes = read_jsonl(res.run_dir / "probes.jsonl")
    ways = res.summary.judges["j"].tests["prompt_paraphrase"].scoring_metrics["paraphrases"]
    report = (res.run_dir / "report.html").read_text()
    for k in (1, 2):
        said = f"Say whether the sum is right ({k})."
        rubric = f"Rewording {k}: is it right?"
        cell = [p for p in probes if p["meta"].get("paraphrase") == f"p{k}"]
        assert {tuple(p["meta"]["judge_task"].values()) for p in cell} == {(said, rubric)}
        asked = [c for c in engine.calls if said in c.prompt]
        assert len(asked) == 4  # each source, under this paraphrase's instruction and rubric
        assert all(rubric in c.prompt and INSTRUCTION not in c.prompt for c in asked)
        assert (ways[f"p{k}"].instruction, ways[f"p{k}"].rubric) == (said, rubric)
        assert f"Paraphrase p{k} (instruction)" in report and said in unescape(report)
    # the judge's own instruction asks the sources and their placebos, and no paraphrase does
    own = [c for c in engine.calls if INSTRUCTION in c.prompt]
    assert len(own) == 4 + 4 and not any("Rewording" in c.prompt for c in own)


def test_paraphrases_given_in_the_config_carry_their_instruction_to_the_judge(tmp_path):
    engine = register("ps-judge", persona(1, noise=0.0))
    given = [
        {"instruction": "Check the addition.", "rubric": "Is the stated sum right?"},
        {"instruction": "Verify the total.", "rubric": "Is the total correct?"},
    ]
    tests = {"prompt_paraphrase": {"paraphrases": given}}
    cfg = config(tmp_path, {"j": "scripted:ps-judge"}, tests, n=4, instruction=INSTRUCTION)
    res = run_harness(cfg, workdir=tmp_path, progress=False)

    assert res.summary.lm_calls == {"judge:j": 4 + 2 * 4 + 4}  # none written, none validated
    ways = res.summary.judges["j"].tests["prompt_paraphrase"].scoring_metrics["paraphrases"]
    metrics = json.loads((res.run_dir / "metrics.json").read_text())
    recorded = metrics["judges"]["j"]["tests"]["prompt_paraphrase"]["paraphrases"]
    for k, text in enumerate(given, 1):
        asked = [c for c in engine.calls if text["instruction"] in c.prompt]
        assert len(asked) == 4 and all(text["rubric"] in c.prompt for c in asked)
        assert (ways[f"p{k}"].instruction, ways[f"p{k}"].rubric) == tuple(text.values())
        assert recorded[f"p{k}"]["instruction"] == text["instruction"]
    assert ways["original"].instruction is None  # the judge's own task is not a paraphrase


def test_a_rejected_paraphrase_is_written_again_or_dropped_never_used(tmp_path):
    """The validator rejects the second paraphrase's first writing (it is written again and
    used) and every writing of the third (dropped, counted with the reason, never judged)."""
    gen_calls: list = []
    register("ps-gen", writer(gen_calls))

    def check(call):
        text = call.field("paraphrase") or ""
        bad = "Rewording 3" in text or ("Rewording 2" in text and not check.retried)
        check.retried = check.retried or "Rewording 2" in text
        return {"same_meaning": not bad, "reason": "drops a criterion" if bad else "same"}

    check.retried = False
    register("ps-val", check)
    engine = register("ps-judge", persona(1, noise=0.0))
    cfg = config(tmp_path, {"j": "scripted:ps-judge"}, {"prompt_paraphrase": {}}, n=4)
    res = run_harness(cfg, workdir=tmp_path, progress=False)
    assert len(gen_calls) == 1 + 2 + 2  # p1 once, p2 twice, p3 twice (attempts: 2)
    assert res.summary.dropped == {"prompt_paraphrase": {"validator_rejected": 4}}
    probes = read_jsonl(res.run_dir / "probes.jsonl")
    cells = Counter(p["meta"].get("paraphrase") for p in probes if not p["meta"].get("placebo"))
    assert cells == {"p1": 4, "p2": 4}
    assert {p["generation"]["attempt"] for p in probes if p["meta"].get("paraphrase") == "p2"} == {
        2
    }
    assert not any("Rewording 3" in c.prompt for c in engine.calls)
    units = read_jsonl(res.run_dir / "units.jsonl")
    details = [d["detail"] for u in units for d in u.get("dropped", [])]
    assert details and all("drops a criterion (after 2 writings)" in d for d in details)


def test_paraphrase_probes_are_reviewable_like_any_probe(tmp_path):
    import yaml

    from assay.reliability import export_review, import_review

    register("ps-gen", writer())
    register("ps-val", accept)
    register("ps-judge", persona(1, noise=0.0))
    cfg = config(tmp_path, {"j": "scripted:ps-judge"}, {"prompt_paraphrase": {"n": 1}}, n=3)
    res = run_harness(cfg, workdir=tmp_path, progress=False)
    out = tmp_path / "review.yaml"
    scale = Scale(kind="binary", labels=["incorrect", "correct"])
    assert export_review(res.run_dir, out, scale) == 3  # the placebos are not sent
    entries = yaml.safe_load(out.read_text())
    assert entries[0]["judge_task"]["rubric"] == "Rewording 1: is it right?"
    entries[0].update(decision="reject", reviewer="ana")
    # the task the judge is asked is read-only: a rewording changed here would not be asked
    task = entries[0]["judge_task"]
    out.write_text(yaml.safe_dump([{**entries[0], "judge_task": {**task, "rubric": "Right?"}}]))
    with pytest.raises(DataError, match=r"row 1, field 'judge_task': is read-only"):
        import_review(res.run_dir, out, scale)
    out.write_text(yaml.safe_dump(entries))
    assert import_review(res.run_dir, out, scale)["rejected"] == 1


def test_prompt_paraphrase_settings_and_judges_are_one_line_errors():
    with pytest.raises(ConfigError, match=r"tests.prompt_paraphrase.n: 2, but 1 paraphrases"):
        get_test("prompt_paraphrase", {"n": 2, "paraphrases": [{"rubric": "x"}]})
    with pytest.raises(ConfigError, match=r"tests.prompt_paraphrase: field 'n'"):
        get_test("prompt_paraphrase", {"n": 0})
    t = get_test("prompt_paraphrase", {"paraphrases": [{"rubric": "x"}]})
    from assay.programs import JudgeConfig

    judge = [JudgeConfig(name="a", model="m", instruction="Grade.", rubric="r", scale=ORDINAL)]
    with pytest.raises(ConfigError, match=r"paraphrases.0.instruction: the judges have an"):
        t.check_judges(judge)


# -- scale_granularity -------------------------------------------------------------------------
ORDINAL = Scale(kind="ordinal", min=1, max=5)


def test_the_mapping_back_by_hand():
    from assay.reliability.probes.scale_granularity import default_points, maps_back

    assert default_points(ORDINAL) == [3, 10]
    assert maps_back(3, ORDINAL) == [1, 3, 5]
    assert maps_back(10, ORDINAL) == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    binary = Scale(kind="binary", labels=["no", "yes"])
    assert default_points(binary) == [4]
    assert maps_back(4, binary) == [0, 0, 1, 1]
    assert default_points(Scale(kind="ordinal", min=0, max=6)) == [4, 14]
    assert maps_back(4, Scale(kind="ordinal", min=0, max=6)) == [0, 2, 4, 6]
    with pytest.raises(ConfigError, match="point 2 of 1-3 falls exactly between"):
        maps_back(3, binary)


def graded(call) -> dict:
    """A grader of how far the stated sum is off (0 → best), on whatever scale it is asked:
    it reads the scale's ends from the prompt and answers a point of it."""
    a, b = (int(x) for x in re.findall(r"\d+", call.field("request") or ""))
    stated = int(re.search(r"The sum is (\d+)", call.field("response") or "").group(1))
    top = int(re.search(r"from 1 \(lowest\) to (\d+) \(highest\)", call.prompt).group(1))
    quality = 1.0 if stated == a + b else 0.3 + 0.1 * (a % 3)  # in [0, 1]
    return {"verdict": 1 + round(quality * (top - 1))}


def ordinal_items(folder, n: int = 24):
    lines = ["id,request,response,expected"]
    for i in range(n):
        a, b = 3 + i, 11 + 2 * i
        c = a + b if i % 3 == 0 else a + b + 1
        lines.append(f"s{i:02d},What is {a} + {b}?,The sum is {c}.,{1 + (i * 7) % 5}")
    path = folder / "items.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_scale_granularity_maps_back_and_reports_the_agreement_evaluate_would(tmp_path):
    from sklearn.metrics import accuracy_score, cohen_kappa_score

    engine = register("ps-graded", graded)
    cfg = HarnessConfig.model_validate(
        {
            "name": "granularity",
            "data": {"path": str(ordinal_items(tmp_path)), "columns": {"id": "id"}},
            "scale": {"kind": "ordinal", "min": 1, "max": 5},
            "judges": [{"name": "g", "model": "scripted:ps-graded", "rubric": RUBRIC}],
            "tests": {"scale_granularity": {}},
            "retries": 0,
            "output_dir": str(tmp_path / "runs"),
        }
    )
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    res = run_harness(cfg, workdir=tmp_path, progress=False, tracking_uri=uri)
    n = 24
    assert res.summary.lm_calls == {"judge:g": n + 2 * n}  # sources, 1-3, 1-10
    assert engine.n_calls == 3 * n
    probes = read_jsonl(res.run_dir / "probes.jsonl")
    assert {p["meta"]["points"] for p in probes} == {3, 10}
    assert all(p["meta"]["judge_task"]["rubric"] == RUBRIC for p in probes)  # the same rubric
    (path,) = res.run_dir.glob("judgments/g-*.jsonl")
    score = {j["item_id"]: j["score"] for j in read_jsonl(path)}
    seeds = {s["id"]: s for s in read_jsonl(res.run_dir / "seeds.jsonl")}
    ways = res.summary.judges["g"].tests["scale_granularity"].scoring_metrics["granularities"]
    by_hand = {3: {1: 1, 2: 3, 3: 5}, 10: {v: (v + 1) // 2 for v in range(1, 11)}}
    for points in (3, 10):
        rows = [p for p in probes if p["meta"]["points"] == points]
        answered = [score[p["id"]] for p in rows]
        mapped = [by_hand[points][v] for v in answered]
        ref = [seeds[p["source_id"]]["expected"] for p in rows]
        w = ways[f"{points}-point"]
        assert w.maps_back == {str(k): v for k, v in by_hand[points].items()}
        assert w.verdicts == {str(k): v for k, v in sorted(Counter(answered).items())}
        assert w.mapped == {str(v): mapped.count(v) for v in range(1, 6)}
        kappa = cohen_kappa_score(ref, mapped, weights="quadratic", labels=[1, 2, 3, 4, 5])
        assert w.agreement["kappa_quadratic"].value == pytest.approx(kappa)
        assert w.agreement["accuracy"].value == pytest.approx(accuracy_score(ref, mapped))
        own = [score[f"source:{p['source_id']}"] for p in rows]
        changed = sum(x != y for x, y in zip(mapped, own, strict=True)) / n
        assert w.changed.value == pytest.approx(changed)
    own = [score[f"source:{s}"] for s in seeds]
    kappa = cohen_kappa_score([seeds[s]["expected"] for s in seeds], own, weights="quadratic")
    assert ways["original"].agreement["kappa_quadratic"].value == pytest.approx(kappa)
    report = (res.run_dir / "report.md").read_text()
    assert "## Scale granularity" in report
    assert "| g | 1-3 | 1→1, 2→3, 3→5 |" in report
    assert "Scale granularity" in (res.run_dir / "report.html").read_text()

    # the judge's MLflow child run holds every granularity's agreement as metrics.json does
    logged = judge_metrics(uri, res.mlflow_run_id)
    metrics = json.loads((res.run_dir / "metrics.json").read_text())
    recorded = metrics["judges"]["g"]["tests"]["scale_granularity"]["granularities"]
    assert set(recorded) == {"original", "3-point", "10-point"}
    checked = 0
    for way, w in recorded.items():
        assert set(w["agreement"]) >= {"accuracy", "kappa_quadratic"}
        for name, m in w["agreement"].items():
            key = f"scale_granularity.granularities.{way}.agreement.{name}"
            for part, suffix in (("value", ""), ("ci_low", "_ci_low"), ("ci_high", "_ci_high")):
                if m.get(part) is not None:
                    assert logged[key + suffix] == pytest.approx(m[part]), key + suffix
                    checked += 1
    assert checked >= 3 * 2 * 3
    assert logged["scale_granularity.granularities.3-point.agreement.accuracy"] == pytest.approx(
        ways["3-point"].agreement["accuracy"].value
    )


def test_a_categorical_scale_is_refused_in_one_line(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_text(
        json.dumps(
            {
                "name": "c",
                "data": {"path": str(write_items(tmp_path, 4)), "columns": {"id": "id"}},
                "scale": {"kind": "categorical", "labels": ["a", "b", "c"]},
                "judges": [{"name": "j", "model": "scripted:ps-none", "rubric": RUBRIC}],
                "tests": {"scale_granularity": {}},
                "tracking": {"enabled": False},
                "output_dir": str(tmp_path / "runs"),
            }
        )
    )
    assert main(["harness", str(path)]) != 0
    err = capsys.readouterr().err.strip()
    assert "tests.scale_granularity: needs a binary or ordinal scale" in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    with pytest.raises(ConfigError, match=r"points: 5 must be 2..101 and not the 5 points"):
        get_test("scale_granularity", {"points": [5]}).check([], ORDINAL)


def test_every_figure_of_both_tests_is_in_both_reports(tmp_path):
    from assay.metrics import fmt_ci
    from tests.web.test_report_parity import assert_same_sections, both, shown

    register("ps-gen", writer())
    register("ps-val", accept)

    def judge(call):  # wordy under a paraphrase; on a scale of points, its ends
        said = wordy(5)(call)["verdict"] == "correct"
        top = re.search(r"from 1 \(lowest\) to (\d+) \(highest\)", call.prompt)
        if top is None:
            return {"verdict": "correct" if said else "incorrect"}
        return {"verdict": int(top.group(1)) if said else 1}

    register("ps-both", judge)
    tests = {"prompt_paraphrase": {"n": 2}, "scale_granularity": {}}
    res = run_harness(
        config(tmp_path, {"j": "scripted:ps-both"}, tests, n=12), workdir=tmp_path, progress=False
    )
    metrics = json.loads((res.run_dir / "metrics.json").read_text())["judges"]["j"]["tests"]
    titles = {"prompt_paraphrase": "Prompt paraphrase", "scale_granularity": "Scale granularity"}
    fields = {"prompt_paraphrase": "paraphrases", "scale_granularity": "granularities"}
    checked = 0
    for name, tables in both(res.run_dir).items():
        for test, title in titles.items():
            flat = metrics[test]
            for way, w in flat[fields[test]].items():
                if test == "prompt_paraphrase":
                    label = way + (" (worst)" if way == flat["worst_paraphrase"] else "")
                else:
                    label = "the judge's (2 points)" if way == "original" else f"1-{w['points']}"
                cells = {
                    "verdicts": str(w["probes"]),
                    "labelled": str(w["agreement_n"]),
                    "verdicts given": " ".join(f"{k}:{n}" for k, n in w["verdicts"].items()),
                    "mapped back": " ".join(f"{k}:{n}" for k, n in w["mapped"].items()),
                    "changed from the source verdict": fmt_ci(w["changed"], 2)
                    if w["changed"]
                    else "—",
                    **{k: fmt_ci(m, 2) for k, m in w["agreement"].items()},
                }
                if w.get("maps_back"):
                    back = ", ".join(f"{a}→{b}" for a, b in w["maps_back"].items())
                    cells["mapped to the judge's"] = back
                for column, text in cells.items():
                    assert shown(tables, title, column, text, ("j", label)), (name, way, column)
                    checked += 1
                section = next(t[3] for t in tables if title in t[0])
                for text in (w.get("instruction"), w.get("rubric"), w.get("agreement_note")):
                    assert not text or text in unescape(section), (name, way, text)
            if test == "prompt_paraphrase":
                worst = flat["worst_paraphrase"]
                assert worst and flat["worst_change_rate"] == flat["paraphrases"][worst]["changed"]
    assert checked > 2 * 40
    assert_same_sections(
        res.run_dir,
        titles["prompt_paraphrase"] + " (the judge's own instruction and rubric in other words)",
    )
