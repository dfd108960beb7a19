"""``assay rank`` through the command line: a pairwise panel's run (the stub personas of
examples/stub_pairwise.py on a small essay set) ranked as choix ranks the votes its judgments
hold, the first-position persona's order effect found and the others' not, the ranking's run
(metrics.json, report.md, report.html, MLflow) found again by a second call; a table of pairs;
a run whose systems are named by item columns; bad input in one line each."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import importlib.util
import json
import shutil
from itertools import pairwise
from pathlib import Path

import choix
import numpy as np
import pytest

from assay.cli import main
from assay.lm import ScriptedEngine, StubServer, register_script
from tests.web.test_report_parity import assert_same_sections

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NAMES = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()


def _stub_module():
    spec = importlib.util.spec_from_file_location("stub_pairwise", EXAMPLES / "stub_pairwise.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def essay_rows() -> list[dict[str, str]]:
    return [
        {
            "essay_id": f"e{k:02d}",
            "holistic_essay_score": str(k + 1),
            "full_text": f"Essay {name}: the {name} argument for school uniforms, told by writer "
            f"{name} in {k + 3} paragraphs.",
            "prompt_name": "Uniforms",
            "assignment": "Should students wear uniforms? Write a persuasive essay.",
        }
        for k, name in enumerate(NAMES)
    ]


@pytest.fixture(scope="module")
def stub():
    with StubServer(respond=_stub_module().persona(essay_rows())) as server:
        yield server


@pytest.fixture(scope="module")
def panel_run(stub, tmp_path_factory):
    """A finished evaluate run: the three personas on all 66 pairs of 12 essays."""
    folder = tmp_path_factory.mktemp("panel")
    data = folder / "essays.csv"
    with data.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(essay_rows()[0]))
        writer.writeheader()
        writer.writerows(essay_rows())
    member = {
        "task": "pairwise",
        "api_base": stub.base_url,
        "rubric": "The better essay argues more clearly.",
        "scale": {"kind": "categorical", "labels": ["A", "B"]},
        "adapter": "json",
    }
    config = {
        "name": "essays",
        "data": {
            "path": str(data),
            "columns": {"id": "essay_id", "request": "assignment", "response": "full_text"},
            "pairs": {"score": "holistic_essay_score", "group_by": "prompt_name"},
        },
        "judge": {
            "name": "panel",
            "program": "panel",
            "task": "pairwise",
            "scale": {"kind": "categorical", "labels": ["A", "B"]},
            "members": [
                {**member, "name": p, "model": f"openai/{p}"} for p in ("careful", "hasty", "first")
            ],
        },
        "concurrency": 8,
        "tracking": {"enabled": False},
    }
    path = folder / "essays.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        assert main(["evaluate", str(path), "--quiet"]) == 0
    (run_dir,) = (folder / "runs").glob("essays-*")
    return run_dir


def votes_of(run_dir: Path) -> list[tuple[str, str, str, str, str]]:
    """(a, b, winner, first, judge) per member verdict, read from judgments.jsonl directly."""
    out = []
    for line in (run_dir / "judgments.jsonl").read_text().splitlines():
        j = json.loads(line)
        a, b = j["item_id"].split("~")
        for m in j["members"]:
            winner = a if m["label"] == "A" else b
            out.append((a, b, winner, a if m["order"] == "AB" else b, m["judge"]))
    return out


def rank_json(capsys, *argv: str) -> dict:
    capsys.readouterr()  # what ran before (a fixture's evaluate run)
    assert main(["rank", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_panel_run_is_ranked_as_choix_ranks_its_votes(panel_run, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    votes = votes_of(panel_run)
    assert len(votes) == 66 * 3
    out = rank_json(capsys, str(panel_run), "--no-order-effect", "--no-log")
    systems = sorted({v[0] for v in votes} | {v[1] for v in votes})
    index = {s: k for k, s in enumerate(systems)}
    data = [(index[w], index[b if w == a else a]) for a, b, w, _, _ in votes]
    reference = choix.opt_pairwise(len(systems), data, alpha=0.0)
    reference -= reference.mean()
    got = {r["system"]: r["strength"] for r in out["strengths"]}
    np.testing.assert_allclose([got[s] for s in systems], reference, atol=1e-4)
    # choix's order: systems with one record (equal strengths) come by name
    ranked = [(reference[index[r["system"]]], r["system"]) for r in out["strengths"]]
    for (s1, name1), (s2, name2) in pairwise(ranked):
        assert s2 <= s1 + 1e-4 and (abs(s1 - s2) > 1e-6 or name1 < name2)
    # the essays' human scores rise with their number: the ranking follows them
    top = [r["system"] for r in out["strengths"][:3]]
    assert set(top) <= {"e09", "e10", "e11", "e08"}
    assert out["sources"][0]["judges"] == {"careful": 66, "first": 66, "hasty": 66}


def test_the_first_position_persona_is_found(panel_run, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = rank_json(capsys, str(panel_run), "--prior", "0.05", "--tracking-uri", uri)
    effects = {e["judge"]: e for e in out["order_effects"]}
    assert effects["first"]["ci_low"] > 0
    for fair in ("careful", "hasty"):
        assert effects[fair]["ci_low"] < 0 < effects[fair]["ci_high"]
    # the raw share the first shown won, from the votes themselves
    votes = votes_of(panel_run)
    mine = [w == f for _, _, w, f, j in votes if j == "first"]
    assert effects["first"]["first_share"] == pytest.approx(sum(mine) / len(mine))
    judges = {j["judge"]: j for j in out["judges"]}
    assert judges["careful"]["agreement"] > judges["hasty"]["agreement"]

    run_dir = Path(out["run_dir"])
    assert json.loads((run_dir / "run.json").read_text())["kind"] == "rank"
    assert (
        json.loads((run_dir / "metrics.json").read_text())["order_effects"] == out["order_effects"]
    )
    report = (run_dir / "report.md").read_text()
    assert "## Strengths" in report and "## Order effect (first position)" in report
    html = (run_dir / "report.html").read_text()
    assert "e11" in html
    assert_same_sections(run_dir, "Strengths", "Order effect (first position)", "Judges")
    assert len((run_dir / "comparisons.jsonl").read_text().splitlines()) == 198

    import mlflow

    logged = mlflow.MlflowClient(tracking_uri=uri).get_run(out["mlflow_run_id"])
    assert logged.data.metrics["order_effect.first"] == pytest.approx(effects["first"]["gamma"])
    best = out["strengths"][0]
    assert logged.data.metrics[f"strength.{best['system']}"] == pytest.approx(best["strength"])
    assert logged.data.tags["assay.command"] == "rank"

    # the same votes and options: the finished run is found, nothing logged again
    again = rank_json(capsys, str(panel_run), "--prior", "0.05", "--tracking-uri", uri)
    assert again["run_dir"] == out["run_dir"] and again["mlflow_run_id"] == out["mlflow_run_id"]


def test_an_edited_run_is_refused(panel_run, tmp_path, capsys, monkeypatch):
    """The votes are the run's as it sealed them: a judgments.jsonl edited since is refused."""
    monkeypatch.chdir(tmp_path)
    copy = tmp_path / panel_run.name
    shutil.copytree(panel_run, copy)
    lines = (copy / "judgments.jsonl").read_text().splitlines()
    forged = json.loads(lines[0])
    forged["members"][0]["label"] = "B" if forged["members"][0]["label"] == "A" else "A"
    (copy / "judgments.jsonl").write_text("\n".join([json.dumps(forged), *lines[1:]]) + "\n")
    assert main(["rank", str(copy), "--no-log"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(copy) in err
    assert "judgments.jsonl is not the file the run sealed when it finished" in err


def test_without_a_prior_an_unbeaten_system_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pairs.csv").write_text("a,b,winner\nx,y,x\nx,z,x\ny,z,z\nz,y,y\n")
    assert main(["rank", "pairs.csv", "--no-log"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert err.startswith(
        "assay: error: pairs.csv: x never lost nor tied against the rest of its connected set "
        "(y, z), which never beat it"
    )
    assert "--prior > 0" in err
    out = rank_json(capsys, "pairs.csv", "--prior", "0.5", "--no-log")
    reference = choix.opt_pairwise(3, [(0, 1), (0, 2), (2, 1), (1, 2)], alpha=0.5)
    got = {r["system"]: r["strength"] for r in out["strengths"]}
    np.testing.assert_allclose([got[s] for s in "xyz"], reference - reference.mean(), atol=1e-6)


def test_a_table_of_pairs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(2)
    truth = {"x": 1.0, "y": 0.0, "z": -1.0}
    rows = ["a,b,winner,first,judge"]
    for k in range(300):
        a, b = rng.choice(list(truth), 2, replace=False)
        p = 1 / (1 + np.exp(-(truth[a] - truth[b])))
        winner = "tie" if k % 10 == 0 else (a if rng.random() < p else b)
        rows.append(f"{a},{b},{winner},{a if k % 2 else ''},{'j1' if k % 3 else 'j2'}")
    table = tmp_path / "pairs.csv"
    table.write_text("\n".join(rows) + "\n")
    out = rank_json(capsys, str(table), "--no-log")
    assert [r["system"] for r in out["strengths"]] == ["x", "y", "z"]
    assert sum(r["ties"] for r in out["strengths"]) == 2 * 30
    effects = {e["judge"]: e["ordered"] for e in out["order_effects"]}
    assert sum(effects.values()) == 150  # the rows with a first
    assert out["sources"] == [
        {
            "named": str(table),
            "kind": "table",
            "votes": 300,
            "judges": {"j1": 200, "j2": 100},
            "left_out": {},
            "mlflow_run_id": None,
            "config_hash": None,
            "digest": hashlib.sha256(table.read_bytes()).hexdigest(),
        }
    ]
    # the same table twice (or a copy) would count its votes twice: refused in one line
    copy = tmp_path / "copy.csv"
    copy.write_bytes(table.read_bytes())
    assert main(["rank", str(table), str(copy), "--no-log"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"{table} and {copy} are one source (the same bytes)" in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a,b,winner\nx,y,x\nx,y,z\n", "pairs.csv, row 2, field 'winner': 'z' is neither"),
        ("a,b,winner\nx,,x\n", "pairs.csv, row 1, field 'b': empty cell"),
        ("a,b,winner,first\nx,y,x,w\n", "pairs.csv, row 1, field 'first': 'w' is neither"),
        ("a,b\nx,y\n", "pairs.csv: no column 'winner'"),
        ("a,b,winner\nx,x,x\n", "pairs.csv, row 1, field 'b': 'x' against itself"),
        # a system named as the tie could never win (its wins were ties): refused, whatever
        # the spaces around it, as every cell is read
        ("a,b,winner\ntie,y,tie\n", "pairs.csv, row 1, field 'a': 'tie' is the winner column's"),
        ("a,b,winner\nx,y,x\nx, tie ,x\n", "pairs.csv, row 2, field 'b': 'tie' is the winner"),
    ],
)
def test_a_bad_table_is_one_line(tmp_path, capsys, monkeypatch, text, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pairs.csv").write_text(text)
    assert main(["rank", "pairs.csv", "--no-log"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and err.count("\n") == 0 and "Traceback" not in err


def test_a_system_named_tie_in_another_case_is_a_system(tmp_path, capsys, monkeypatch):
    """The tie is written ``tie`` and compared as written: ``Tie`` is a system's name, and its
    wins count as wins."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pairs.csv").write_text("a,b,winner\nTie,y,Tie\nTie,y,Tie\ny,Tie,y\nTie,y,tie\n")
    out = rank_json(capsys, "pairs.csv", "--prior", "0.5", "--no-log")
    got = {r["system"]: (r["wins"], r["losses"], r["ties"]) for r in out["strengths"]}
    assert got == {"Tie": (2, 1, 1), "y": (1, 2, 1)}


def test_the_headline_says_which_order_effects_were_fitted(tmp_path, capsys, monkeypatch):
    """A table without a ``first`` column has no vote of known order: no γ is fitted, and the
    headline said "an order effect per judge" all the same. It says what was fitted: none, or
    a γ for the judges with ordered votes only."""
    monkeypatch.chdir(tmp_path)
    rows = [("x", "y", "x"), ("y", "z", "y"), ("x", "z", "x"), ("y", "x", "y"), ("z", "x", "z")]
    (tmp_path / "pairs.csv").write_text(
        "a,b,winner,judge\n"
        + "".join(f"{a},{b},{w},j{k % 2}\n" for k in range(40) for a, b, w in rows)
    )
    assert main(["rank", "pairs.csv", "--no-log"]) == 0
    headline = capsys.readouterr().out.splitlines()[0]
    assert "no order effect (no vote's first position is known), ties" in headline, headline
    assert "per judge" not in headline
    out = rank_json(capsys, "pairs.csv", "--no-log")
    assert out["order_effect"] and out["order_effects"] == []
    # j0 shows its pairs in both orders, j1 says nothing of the order: one γ, j0's
    (tmp_path / "pairs.csv").write_text(
        "a,b,winner,first,judge\n"
        + "".join(
            f"{a},{b},{w},{(a if k % 4 else b) if k % 2 == 0 else ''},j{k % 2}\n"
            for k in range(40)
            for a, b, w in rows
        )
    )
    assert main(["rank", "pairs.csv", "--no-log"]) == 0
    headline = capsys.readouterr().out.splitlines()[0]
    assert "an order effect for 1 of 2 judges (the others' votes have no known first" in headline
    assert main(["rank", "pairs.csv", "--no-log", "--no-order-effect"]) == 0
    assert "maximum likelihood, no order effect, ties" in capsys.readouterr().out


def test_systems_named_by_item_columns(tmp_path, capsys, monkeypatch):
    """Responses of models m1 > m2 > m3 (by how many 'good' words they hold), judged by a
    scripted pairwise judge: without --systems the run names no systems; with the columns, the
    models are ranked, the verdicts left unscored counted apart, and the run read by its MLflow
    run id gives the same ranking."""
    monkeypatch.chdir(tmp_path)
    models_data(tmp_path / "pairs.csv", "sample")

    def respond(call):
        first, second = call.field("response_a"), call.field("response_b")
        count = first.count("good"), second.count("good")
        if abs(count[0] - count[1]) == 2 and "3" in first:  # m1 against m3 on question 3
            return "no verdict in this answer"
        # prefers more 'good' words; a pair one word apart on questions 0 and 1 goes to the
        # one shown first
        if abs(count[0] - count[1]) == 1 and ("0" in first or "1" in first):
            return {"verdict": "A"}
        return {"verdict": "A" if count[0] > count[1] else "B"}

    register_script("rank-judge", lambda: ScriptedEngine(respond=respond))
    config = {
        "name": "models",
        "data": {"path": "pairs.csv", "columns": {"id": "id", "expected": None}},
        "judge": {"name": "pairer", "task": "pairwise", "model": "scripted:rank-judge"},
    }
    (tmp_path / "models.yaml").write_text(json.dumps(config))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert main(["evaluate", "models.yaml", "--quiet", "--tracking-uri", uri]) in (0, 1)
    capsys.readouterr()
    (run_dir,) = (tmp_path / "runs").glob("models-*")
    run_id = json.loads((run_dir / "run.json").read_text())["mlflow_run_id"]

    assert main(["rank", str(run_dir), "--no-log"]) == 2
    err = capsys.readouterr().err.strip()
    assert "names no systems" in err and "--systems" in err and err.count("\n") == 0

    # so few votes are separable with an order effect in the model: a prior keeps them finite
    out = rank_json(
        capsys, str(run_dir), "--systems", "model_a,model_b", "--prior", "0.1", "--no-log"
    )
    assert [r["system"] for r in out["strengths"]] == ["m1", "m2", "m3"]
    (effect,) = out["order_effects"]
    assert effect["judge"] == "pairer" and effect["gamma"] > 0
    # the verdicts left unscored are no votes, counted by their reason
    assert out["n_votes"] == 22
    assert out["sources"][0]["left_out"] == {"unscored (parse_error)": 2}
    # the same run by its MLflow run id: its logged files, checked against its seal
    by_id = rank_json(
        capsys, run_id, "--systems", "model_a,model_b", "--prior", "0.1", "--tracking-uri", uri
    )
    assert by_id["strengths"] == out["strengths"]
    assert by_id["sources"][0]["mlflow_run_id"] == run_id

    assert main(["rank", str(run_dir), "--systems", "model_a", "--no-log"]) == 2
    assert "two columns" in capsys.readouterr().err


def _console_block(page: str, command: str) -> list[str]:
    """The lines docs/rank.md shows after ``$ <command>`` in its console block."""
    block = page.split("```console\n", 1)[1].split("```", 1)[0].splitlines()
    start = block.index(f"$ {command}") + 1
    end = next((i for i in range(start, len(block)) if block[i].startswith("$ ")), len(block))
    return block[start:end]


def test_the_docs_run_prints_what_the_page_shows(tmp_path, capsys, monkeypatch):
    """docs/rank.md's run, made again: the PERSUADE panel of examples/persuade_rank.yaml served by
    examples/stub_pairwise.py, then assay rank without and with a prior — every line the page
    shows is printed, in order (the page leaves strengths out where it says "…")."""
    page = (EXAMPLES.parent / "docs" / "rank.md").read_text(encoding="utf-8")
    rows = list(csv.DictReader((EXAMPLES / "data/jrh/persuade/persuade_sample.csv").open()))
    shutil.copytree(EXAMPLES / "data", tmp_path / "examples" / "data")
    config = (EXAMPLES / "persuade_rank.yaml").read_text(encoding="utf-8")
    with StubServer(respond=_stub_module().persona(rows)) as stub:
        config = config.replace("http://127.0.0.1:8783/v1", stub.base_url)
        (tmp_path / "examples" / "persuade_rank.yaml").write_text(config, encoding="utf-8")
        monkeypatch.chdir(tmp_path)
        assert main(["evaluate", "examples/persuade_rank.yaml", "--quiet"]) == 0
    capsys.readouterr()
    (run_dir,) = (tmp_path / "runs").glob("persuade-rank-*")
    shown_dir = "runs/persuade-rank-81ba042c40"

    assert main(["rank", f"runs/{run_dir.name}"]) == 2
    (error,) = _console_block(page, f"assay rank {shown_dir}")
    assert capsys.readouterr().err.strip() == error.replace(shown_dir, f"runs/{run_dir.name}")

    assert main(["rank", f"runs/{run_dir.name}", "--prior", "0.1", "--no-log"]) == 0
    printed = iter(capsys.readouterr().out.splitlines())
    for line in _console_block(page, f"assay rank {shown_dir} --prior 0.1"):
        if line.startswith(("| … |", "run: ", "MLflow run: ")):
            continue
        assert any(line == out for out in printed), line


@pytest.mark.parametrize(
    ("rows", "named"),
    [
        # 60 votes of X against Y, X always shown first and winning 40
        ([f"X,Y,{'X' if k < 40 else 'Y'},X,J" for k in range(60)], "judge 'J' from the strengths"),
        # four candidates each against one baseline, the candidate always shown first
        (
            [
                f"c{c},base,{'base' if k % 3 == 0 else f'c{c}'},c{c},gpt"
                for c in range(4)
                for k in range(30)
            ],
            "judge 'gpt' from the strengths of base, c0, c1 and 2 more",
        ),
    ],
)
def test_an_order_effect_the_votes_cannot_separate_is_one_line(
    tmp_path, capsys, monkeypatch, rows, named
):
    """Only the sum of the first system's strength and the judge's order effect is measured:
    refused (the exit code of bad data), naming the judge and what to do; with
    --no-order-effect the same votes are ranked."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pairs.csv").write_text("\n".join(["a,b,winner,first,judge", *rows]) + "\n")
    assert main(["rank", "pairs.csv", "--no-log"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert err.startswith("assay: error: pairs.csv: the votes cannot tell the order effect of")
    assert named in err and "show pairs in both orders" in err
    assert "rank with --no-order-effect (any first-position advantage is then folded" in err
    out = rank_json(capsys, "pairs.csv", "--no-order-effect", "--no-log")
    assert out["order_effects"] == [] and all(abs(r["strength"]) < 5 for r in out["strengths"])


def test_systems_whose_names_clean_to_one_key_keep_a_key_each_in_mlflow(
    tmp_path, capsys, monkeypatch
):
    """MLflow keys allow few characters: 'm+1' and 'm_1', 'модель-а' and 'модель-б', 'gpt-4o
    (v2)' and 'gpt-4o [v2]' cleaned to one key each, and one system's figures overwrote the
    other's. Each now has its own key, every figure is in the store, and mlflow_keys.json says
    which name each cleaned key stands for."""
    import mlflow

    monkeypatch.chdir(tmp_path)
    names = ["m+1", "m_1", "модель-а", "модель-б", "gpt-4o (v2)", "gpt-4o [v2]"]
    judges = ["judge:a", "judge;a"]
    rng = np.random.default_rng(1)
    rows = ["a,b,winner,first,judge"]
    for k in range(600):
        a, b = rng.choice(len(names), 2, replace=False)
        winner = names[a] if rng.random() < 1 / (1 + np.exp(0.3 * (a - b))) else names[b]
        first = names[a] if k % 2 else names[b]
        rows.append(f'"{names[a]}","{names[b]}","{winner}","{first}",{judges[k % 2]}')
    (tmp_path / "pairs.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = rank_json(capsys, "pairs.csv", "--tracking-uri", uri)

    client = mlflow.MlflowClient(tracking_uri=uri)
    logged = client.get_run(out["mlflow_run_id"]).data.metrics
    by_name = json.loads(
        Path(
            client.download_artifacts(out["mlflow_run_id"], "mlflow_keys.json", tmp_path)
        ).read_text()
    )
    strength = {
        v.removeprefix("strength."): k
        for k, v in by_name.items()
        if v.startswith("strength.") and v.count(".") == 1
    }
    assert set(strength) == set(names) - {"m_1"}  # 'm_1' is a valid key: kept as it is
    strength["m_1"] = "strength.m_1"
    assert len(set(strength.values())) == len(names)
    for row in out["strengths"]:
        key = strength[row["system"]]
        assert logged[key] == pytest.approx(row["strength"])
        assert logged[f"{key}.ci_low"] == pytest.approx(row["ci_low"])
        assert logged[key.replace("strength.", "rank.")] == row["rank"]
    for e in out["order_effects"]:
        key = next((k for k, v in by_name.items() if v == f"order_effect.{e['judge']}"))
        assert logged[key] == pytest.approx(e["gamma"])
    assert sum(k.startswith("strength.") and k.count(".") == 1 for k in logged) == len(names)
    assert sum(k.startswith("order_effect.") and k.count(".") == 1 for k in logged) == 2


def test_a_ranking_made_with_no_log_is_logged_once_by_a_later_call_that_logs(
    tmp_path, capsys, monkeypatch
):
    """The run's name leaves out whether it logs, so a call after --no-log found the finished
    run and logged nothing. It now logs it, once: a third call finds it logged."""
    import mlflow

    monkeypatch.chdir(tmp_path)
    rows = ["a,b,winner,first"]
    rows += [f"x,y,{'x' if k % 3 else 'y'},{'x' if k % 2 else 'y'}" for k in range(40)]
    rows += [f"y,z,{'y' if k % 3 else 'z'},{'y' if k % 2 else 'z'}" for k in range(40)]
    (tmp_path / "pairs.csv").write_text("\n".join(rows) + "\n")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    quiet = rank_json(capsys, "pairs.csv", "--no-log", "--tracking-uri", uri)
    assert quiet["mlflow_run_id"] is None
    logged = rank_json(capsys, "pairs.csv", "--tracking-uri", uri)
    assert logged["run_dir"] == quiet["run_dir"] and logged["mlflow_run_id"] is not None
    state = json.loads((Path(logged["run_dir"]) / "run.json").read_text())
    assert state["mlflow_run_id"] == logged["mlflow_run_id"]
    client = mlflow.MlflowClient(tracking_uri=uri)
    run = client.get_run(logged["mlflow_run_id"])
    best = logged["strengths"][0]
    assert run.data.metrics[f"strength.{best['system']}"] == pytest.approx(best["strength"])
    assert run.data.tags["assay.command"] == "rank" and "assay.seal" in run.data.tags
    again = rank_json(capsys, "pairs.csv", "--tracking-uri", uri)
    assert again["mlflow_run_id"] == logged["mlflow_run_id"]
    assert len(client.search_runs([run.info.experiment_id])) == 1


def test_a_level_of_97_5_percent_is_labelled_so(tmp_path, capsys, monkeypatch):
    """--confidence 0.975: the headline, every table and report.md said "98%" (``:.0%``); they
    say 97.5% now, and the intervals are the 97.5% ones."""
    monkeypatch.chdir(tmp_path)
    rows = [("x", "y", "x"), ("y", "z", "y"), ("x", "z", "x"), ("y", "x", "y"), ("z", "x", "z")]
    (tmp_path / "pairs.csv").write_text(
        "a,b,winner,first\n"
        + "".join(f"{a},{b},{w},{a if k % 2 else b}\n" for k in range(40) for a, b, w in rows)
    )
    assert main(["rank", "pairs.csv", "--no-log", "--confidence", "0.975"]) == 0
    printed = capsys.readouterr().out
    assert "98%" not in printed
    assert printed.splitlines()[0].endswith("; 97.5% Wald (observed Fisher information) intervals")
    assert printed.count("| 97.5% CI |") == 3  # strengths, order effect, judges
    (run_dir,) = (tmp_path / "runs").glob("rank-*")
    report = (run_dir / "report.md").read_text()
    assert "98%" not in report and "97.5% Wald" in report


# -- votes of several runs: which are one item ----------------------------------------------

QUALITY = {"m1": 3, "m2": 2, "m3": 1}  # how many 'good' words each model's responses hold


def models_data(path: Path, topic: str, ids: str = "p") -> None:
    """Every ordered pair of m1, m2, m3 on four questions of ``topic``: 24 items named
    ``<ids>0`` … ``<ids>23`` in the same order whatever the topic."""
    lines = ["id,request,response,response_b,model_a,model_b"]
    k = 0
    for a in QUALITY:
        for b in QUALITY:
            if a != b:
                for r in range(4):
                    ra = " ".join(["good"] * QUALITY[a]) + f" {topic} answer {r}"
                    rb = " ".join(["good"] * QUALITY[b]) + f" {topic} reply {r}"
                    lines.append(f"{ids}{k},{topic} question {r}?,{ra},{rb},{a},{b}")
                    k += 1
    path.write_text("\n".join(lines) + "\n")


def hashing_judge(salt: str):
    """A pairwise judge preferring the response with more 'good' words, wrong on the pairs
    (one in three) a hash of ``salt`` and the texts picks."""

    def respond(call):
        first, second = call.field("response_a"), call.field("response_b")
        digest = hashlib.sha256(f"{salt}:{first}:{second}".encode()).hexdigest()
        wrong = int(digest, 16) % 3 == 0
        better = first.count("good") > second.count("good")
        return {"verdict": "A" if better != wrong else "B"}

    return respond


def models_run(tmp_path: Path, name: str, topic: str, judge: str, ids: str = "p") -> str:
    """A finished pairwise run named ``name`` of the scripted judge ``judge`` on
    :func:`models_data`; its directory, relative to ``tmp_path``."""
    models_data(tmp_path / f"{name}.csv", topic, ids)
    register_script(judge, lambda: ScriptedEngine(respond=hashing_judge(judge)))
    config = {
        "name": name,
        "data": {"path": f"{name}.csv", "columns": {"id": "id", "expected": None}},
        "judge": {"name": judge, "task": "pairwise", "model": f"scripted:{judge}"},
        "tracking": {"enabled": False},
    }
    (tmp_path / f"{name}.yaml").write_text(json.dumps(config))
    assert main(["evaluate", f"{name}.yaml", "--quiet"]) in (0, 1)
    (run_dir,) = (tmp_path / "runs").glob(f"{name}-*")
    return f"runs/{run_dir.name}"


def as_table(comparisons: Path, table: Path) -> None:
    """A ranking's votes (its comparisons.jsonl) written as a table of pairs: a row each."""
    with table.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["a", "b", "winner", "first", "judge"])
        for line in comparisons.read_text().splitlines():
            v = json.loads(line)
            writer.writerow([v["a"], v["b"], v["winner"] or "tie", v["first"] or "", v["judge"]])


RANK = ("--systems", "model_a,model_b", "--prior", "0.1", "--no-log")


def test_two_runs_different_items_under_the_same_ids_are_two_items(tmp_path, capsys, monkeypatch):
    """One judge over cats (p0 … p23), then over dogs under the same ids: 48 items, a vote
    each. Pooled, the votes were clustered by id — "cluster-robust over 24 clusters", each a
    cat and a dog —, m1's interval [-0.125, +1.192] where its votes, independent, give
    [-0.001, +1.068]. Each vote is now an item of its own: the ranking is that of the same 48
    votes as a table of pairs, whose rows are votes of their own, to the last bit."""
    monkeypatch.chdir(tmp_path)
    cats = models_run(tmp_path, "cats", "Cats", "pairer")
    dogs = models_run(tmp_path, "dogs", "Dogs", "pairer")
    capsys.readouterr()
    pooled = rank_json(capsys, cats, dogs, *RANK)
    assert pooled["n_votes"] == 48
    assert pooled["interval"] == "Wald (observed Fisher information)"
    as_table(Path(pooled["run_dir"]) / "comparisons.jsonl", tmp_path / "votes.csv")
    table = rank_json(capsys, "votes.csv", "--prior", "0.1", "--no-log")
    assert table["interval"] == pooled["interval"]
    assert table["strengths"] == pooled["strengths"]
    assert table["order_effects"] == pooled["order_effects"]


def test_one_item_under_two_ids_in_two_runs_is_one_item(tmp_path, capsys, monkeypatch):
    """Two judges over the same 24 cat items: their votes on an item are one cluster whether
    the second run names the items as the first (p0 …) or anew (q0 …). They were clustered by
    id: renamed, they were 48 votes of their own, m3's interval [-0.831, +0.135] where the
    items' clusters give [-0.866, +0.170]."""
    monkeypatch.chdir(tmp_path)
    first = models_run(tmp_path, "first", "Cats", "pairer")
    same_ids = models_run(tmp_path, "again", "Cats", "other")
    new_ids = models_run(tmp_path, "renamed", "Cats", "other", ids="q")
    capsys.readouterr()
    by_id = rank_json(capsys, first, same_ids, *RANK)
    by_text = rank_json(capsys, first, new_ids, *RANK)
    clustered = (
        "Wald (observed Fisher information or, where wider, cluster-robust over 24 clusters)"
    )
    assert by_id["interval"] == by_text["interval"] == clustered
    assert by_text["strengths"] == by_id["strengths"]
    assert by_text["order_effects"] == by_id["order_effects"]


def test_a_single_run_is_clustered_by_item_id_as_before(panel_run, tmp_path, capsys, monkeypatch):
    """One run, three members voting on each of 66 items: the clusters are the items, named by
    their ids as before items' texts were read — the strengths and intervals are
    bradley_terry's with the votes (as comparisons.jsonl keeps them) clustered by item id, bit
    for bit."""
    from assay.metrics import bradley_terry

    monkeypatch.chdir(tmp_path)
    out = rank_json(capsys, str(panel_run), "--prior", "0.05", "--no-log")
    votes = [
        json.loads(line)
        for line in (Path(out["run_dir"]) / "comparisons.jsonl").read_text().splitlines()
    ]
    assert "item_keys" not in votes[0]
    fit = bradley_terry(
        [v["a"] for v in votes],
        [v["b"] for v in votes],
        [v["winner"] for v in votes],
        first=[v["first"] for v in votes],
        judges=[v["judge"] for v in votes],
        alpha=0.05,
        clusters=[f"item {v['where']}" for v in votes],
    )
    assert out["interval"] == fit.interval and "over 66 clusters" in fit.interval
    assert out["strengths"] == [
        json.loads(json.dumps(dataclasses.asdict(s))) for s in fit.strengths
    ]
