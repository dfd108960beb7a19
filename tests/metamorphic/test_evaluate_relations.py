"""Relations an evaluate run's figures hold, through the command line on the stub server: what
must not matter (the rows' order, the items' names, the order a binary scale lists its labels
when the positive class is named, a run split into a limited run and its resumption, a warm LM
cache) leaves every metric, interval and count as it was; what the judge reads (a text re-spaced
or re-cased) makes a new run with new calls, and the figures of the same verdicts are equal.

Each relation is checked on seeded random item sets (a judge persona wrong on a random subset),
so a figure that depends on anything else fails here."""

from __future__ import annotations

import csv
import json
import os
import random
import re
import shutil
import signal
from pathlib import Path

import pytest

from assay.cli import main
from assay.lm import StubServer
from assay.lm._stub_server import default_respond
from tests.processes import assay_process
from tests.stub_judge import stub_config

SEEDS = [0, 1, 2]
N = 30


def rows_for(seed: int, *, names: bool = False) -> list[dict[str, str]]:
    """N items (``Item k is blue.``; reference: k odd, as 0/1 or, with ``names``, as the
    label's name), shuffled, with random ids."""
    rng = random.Random(seed)
    ks = rng.sample(range(1000), N)
    return [
        {
            "id": f"item-{rng.randrange(10**6)}-{k}",
            "request": f"What colour is item {k}?",
            "response": f"Item {k} is blue.",
            "expected": str(bool(k % 2)) if names else str(k % 2),
        }
        for k in ks
    ]


def write_csv(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=["id", "request", "response", "expected"])
        w.writeheader()
        w.writerows(rows)
    return path


def run(folder: Path, stub, rows, *, name: str, argv=(), **judge) -> tuple[Path, int]:
    """An evaluate run of ``rows`` through the CLI in ``folder`` (its own runs folder and LM
    cache unless shared); its directory and the requests the stub served for it."""
    folder.mkdir(parents=True, exist_ok=True)
    data = write_csv(folder / f"{name}.csv", rows)
    cfg = stub_config(folder, data, stub.base_url, name=name, file=f"{name}.yaml", judge=judge)
    before = stub.n_requests
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        assert main(["evaluate", str(cfg), "--quiet", *argv]) in (0, 1)
    (run_dir,) = (folder / "runs").glob(f"{name}-*")
    return run_dir, stub.n_requests - before


def metrics(run_dir: Path) -> dict:
    return json.loads((run_dir / "metrics.json").read_text())["metrics"]


def verdicts(run_dir: Path) -> dict[str, object]:
    out = {}
    for line in (run_dir / "judgments.jsonl").read_text().splitlines():
        j = json.loads(line)
        out[j["item_id"]] = j["score"]
    return out


class Persona:
    """The stub as judges, one per served model name: item k's verdict is True when k is odd,
    except on the model's ``wrong`` items (found by the request, which no relation re-spells)."""

    def __init__(self) -> None:
        self.wrong: dict[str, set[int]] = {}
        self.names: dict[str, tuple[str, str]] = {}  # a model's words for False and True

    def __call__(self, body: dict) -> str:
        k = int(re.findall(r"item (\d+)\?", json.dumps(body["messages"]))[-1])
        out = json.loads(default_respond(body))
        true = (k % 2 == 1) != (k in self.wrong.get(body["model"], ()))
        out["verdict"] = self.names.get(body["model"], ("False", "True"))[true]
        return json.dumps(out)


@pytest.fixture(scope="module")
def stub():
    with StubServer(respond=(persona := Persona())) as server:
        server.persona = persona
        yield server


@pytest.fixture
def persona(stub):
    """A judge (a served model name) wrong on a seeded random third of the possible items."""

    def make(seed: int, model: str) -> str:
        stub.persona.wrong[model] = set(random.Random(seed + 100).sample(range(1000), 333))
        return f"openai/{model}"

    return make


@pytest.mark.parametrize("seed", SEEDS)
def test_the_rows_order_and_the_items_names_do_not_matter(stub, persona, tmp_path, seed):
    model = persona(seed, f"m-order-{seed}")
    rows = rows_for(seed)
    base, _ = run(tmp_path / "a", stub, rows, name="base", model=model)
    shuffled = random.Random(seed).sample(rows, len(rows))
    renamed = {r["id"]: f"renamed-{i:03d}" for i, r in enumerate(random.Random(7).sample(rows, N))}
    moved = [{**r, "id": renamed[r["id"]]} for r in shuffled]
    other, _ = run(tmp_path / "b", stub, moved, name="base", model=model)
    assert metrics(other) == metrics(base)  # every value, interval, count and note
    # the per-item files carry the new names, with the same verdicts
    assert verdicts(other) == {renamed[i]: v for i, v in verdicts(base).items()}


@pytest.mark.parametrize("seed", SEEDS)
def test_a_binary_scale_s_label_order_with_the_positive_named_does_not_matter(
    stub, persona, tmp_path, seed
):
    model = persona(seed, f"m-labels-{seed}")
    rows = rows_for(seed, names=True)  # references by name: 0/1 would be the scale's indices
    usual = {"kind": "binary", "labels": ["False", "True"]}
    listed = {"kind": "binary", "labels": ["True", "False"], "positive": "True"}
    a, _ = run(tmp_path / "a", stub, rows, name="labels", model=model, scale=usual)
    b, _ = run(tmp_path / "b", stub, rows, name="labels", model=model, scale=listed)
    assert metrics(b) == metrics(a)
    # without naming the positive class, the other label is positive: FPR and FNR swap
    c, _ = run(
        tmp_path / "c", stub, rows, name="labels", model=model, scale={**listed, "positive": None}
    )
    mc, ma = metrics(c), metrics(a)
    for same in ("accuracy", "kappa_categorical", "balanced_accuracy"):
        assert mc[same]["value"] == ma[same]["value"]
    fields = ("value", "count", "n", "ci_low", "ci_high")
    assert [mc["false_positive_rate"][f] for f in fields] == [
        ma["false_negative_rate"][f] for f in fields
    ]


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_numeral_label_names_read_the_same_from_a_csv_s_numbers_and_from_text(
    stub, persona, tmp_path, seed
):
    """A binary scale named ``["1", "0"]`` (the failure label ``1``, score 0): a CSV's
    reference column is read as integers, a JSONL's as text; both are the label they spell,
    as the judge's verdict ``"1"`` is, so the figures are equal — and equal to the accuracy
    counted from the files (every κ was inverted when a CSV's 1 was read as the score 1)."""
    model = persona(seed, f"m-numerals-{seed}")
    stub.persona.names[model.removeprefix("openai/")] = ("0", "1")  # True (k odd) says "1"
    rows = rows_for(seed)  # expected: "1" for k odd, "0" else
    scale = {"kind": "binary", "labels": ["1", "0"]}
    a, _ = run(tmp_path / "csv", stub, rows, name="numerals", model=model, scale=scale)
    folder = tmp_path / "jsonl"
    folder.mkdir()
    data = folder / "numerals.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cfg = stub_config(
        folder, data, stub.base_url, name="numerals", judge={"model": model, "scale": scale}
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        assert main(["evaluate", str(cfg), "--quiet"]) == 0
    (b,) = (folder / "runs").glob("numerals-*")
    assert metrics(a) == metrics(b)
    said = {j: "1" if score == 0 else "0" for j, score in verdicts(a).items()}  # "1" is score 0
    right = sum(said[r["id"]] == r["expected"] for r in rows)
    assert metrics(a)["accuracy"]["value"] == pytest.approx(right / N)
    assert metrics(a)["accuracy"]["count"] == right


@pytest.mark.parametrize(
    "respell",
    [lambda t: t + "  ", lambda t: t.replace("blue", "BLUE"), lambda t: t.replace(" ", "\u00a0")],
    ids=["trailing-spaces", "case", "no-break-space"],
)
def test_what_the_judge_reads_makes_a_new_run_with_the_same_figures(
    stub, persona, tmp_path, respell
):
    model = persona(3, "m-respell")
    rows = rows_for(3)
    base, served = run(tmp_path, stub, rows, name="respell", model=model)
    assert served == N
    respelled = [{**r, "response": respell(r["response"])} for r in rows]
    shutil.move(base, tmp_path / "first")  # the runs folder holds one run per name
    other, served = run(tmp_path, stub, respelled, name="respell", model=model)
    assert other.name != base.name  # another run: the judge read other text
    assert served == N  # asked again, not taken from the LM cache: the prompt differs
    assert metrics(other) == metrics(tmp_path / "first")


@pytest.mark.slow
@pytest.mark.parametrize("kill_at", [7, 19])
def test_a_run_killed_then_resumed_equals_one_run(stub, persona, tmp_path, kill_at):
    """A run killed (SIGKILL) while request ``kill_at`` is on the wire, then resumed, ends
    with the judgments, metrics and cost of the work of one uninterrupted run; every answer
    the server gave is either in a judgment or counted as paid and not used."""
    model = persona(kill_at, f"m-kill-{kill_at}")
    rows = rows_for(kill_at)
    one, _ = run(tmp_path / "one", stub, rows, name="resume", model=model)

    folder = tmp_path / "two"
    folder.mkdir()
    cfg = stub_config(
        folder,
        write_csv(folder / "resume.csv", rows),
        stub.base_url,
        name="resume",
        file="resume.yaml",
        judge={"model": model},
        retries=0,
    )
    served, proc = {"n": 0}, {}
    answer = stub.respond

    def killing(body):
        served["n"] += 1
        if served["n"] == kill_at and "pid" in proc:
            os.kill(proc["pid"], signal.SIGKILL)
            raise RuntimeError("killed while this request was in flight")
        return answer(body)

    stub.respond = killing
    try:
        first = assay_process("evaluate", str(cfg), "--quiet", cwd=folder)
        proc["pid"] = first.pid
        first.wait(timeout=300)
        assert first.returncode == -signal.SIGKILL, first.stderr.read()[-800:]
    finally:
        stub.respond = answer
    (half,) = (folder / "runs").iterdir()
    # none may be kept: on a busy machine the kill can come before the first answers' commit
    written = half / "judgments.jsonl"
    kept = [x for x in written.read_text().splitlines() if x] if written.exists() else []
    assert len(kept) < N
    whole, _ = run(folder, stub, rows, name="resume", model=model)  # the resume
    assert whole == half
    assert metrics(whole) == metrics(one)
    assert verdicts(whole) == verdicts(one)
    assert len((whole / "judgments.jsonl").read_text().splitlines()) == N  # each item once
    done, ref = (
        json.loads((whole / "metrics.json").read_text()),
        json.loads((one / "metrics.json").read_text()),
    )
    assert done["work"] == ref["work"]  # the cost of the work: what one run costs


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_a_warm_lm_cache_changes_what_was_paid_not_the_figures(stub, persona, tmp_path, seed):
    model = persona(seed, f"m-cache-{seed}")
    rows = rows_for(seed)
    cold, served_cold = run(tmp_path, stub, rows, name="cache", model=model)
    moved = tmp_path / "cold"
    shutil.move(cold, moved)  # a new run of the same config: the LM cache answers
    warm, served_warm = run(tmp_path, stub, rows, name="cache", model=model)
    assert (served_cold, served_warm) == (N, 0)
    assert metrics(warm) == metrics(moved)
    assert verdicts(warm) == verdicts(moved)
    m_cold = json.loads((moved / "metrics.json").read_text())
    m_warm = json.loads((warm / "metrics.json").read_text())
    # the cost of the work is the same; what was paid is not
    assert m_warm["work"] == m_cold["work"]
    assert (m_cold["usage"]["calls"], m_warm["usage"]["calls"]) == (N, 0)
    assert m_warm["usage"]["cached_calls"] == N


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_a_panel_s_member_order_does_not_change_its_figures(stub, persona, tmp_path, seed):
    common = {
        "api_base": stub.base_url,
        "rubric": "A good response names a colour.",
        "scale": {"kind": "binary", "labels": ["False", "True"]},
    }
    members = [
        {"name": f"m{i}", "model": persona(seed + 10 * i, f"m-panel-{seed}-{i}"), **common}
        for i in range(3)
    ]
    rows = rows_for(seed)
    panel = {"program": "panel", "model": members[0]["model"]}
    a, _ = run(tmp_path / "a", stub, rows, name="panel", members=members, **panel)
    order = random.Random(seed).sample(members, 3)
    b, _ = run(tmp_path / "b", stub, rows, name="panel", members=order, **panel)
    assert metrics(b) == metrics(a)
    assert verdicts(b) == verdicts(a)
