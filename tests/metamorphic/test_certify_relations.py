"""Relations a certificate holds, through the command line on the stub server: the rows' order
and the items' names, and the order a scale lists its labels in (a binary scale with its
positive named; an unordered one), leave the decision and every bound as they were — the
certificate carries the new ids; and the items it consumed are matched on their normalised
text, so the same items shuffled, renamed and re-encoded (NFD, CRLF, trailing spaces, in a
terminal's colours or behind a hyperlink) are refused as consumed in one line.

Each run has its own runs folder (its own ledger) unless a relation is about the ledger."""

from __future__ import annotations

import csv
import json
import random
import re
import unicodedata
from pathlib import Path

import pytest

from assay.cli import main
from assay.lm import StubServer
from assay.lm._stub_server import default_respond
from tests.stub_judge import stub_config

N = 40
COLOURS = ["red", "green", "blue"]
BINARY = {"kind": "binary", "labels": ["False", "True"]}
POLICY = {
    "name": "gate",
    "confidence": 0.9,
    "positive": "True",
    "bars": {"tpr": 0.5, "tnr": 0.5, "kappa_categorical": 0.3},
    "n_resamples": 1000,
}


class Persona:
    """Item k's verdict: on a binary scale True when k is odd, on the colours scale colour
    k % 3 — wrong on a seeded random quarter of the items (a quarter of its own per model), no answer that parses on k % 13 == 5
    (unscored items count against the judge, so a relation must carry them too)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def wrong(self, model: str) -> set[int]:
        """The items the judge served as ``model`` gets wrong."""
        return set(random.Random(f"{self.seed}-{model}").sample(range(1000), 250))

    def __call__(self, body: dict) -> str:
        text = json.dumps(body["messages"])
        k = int(re.findall(r"item (\d+)\?", text)[-1])
        if k % 13 == 5:
            return "no idea"
        out = json.loads(default_respond(body))
        bad = k in self.wrong(body["model"])
        if "green" in text:
            out["verdict"] = COLOURS[(k + bad) % 3]
        else:
            out["verdict"] = str((k % 2 == 1) != bad)
        return json.dumps(out)


@pytest.fixture(scope="module")
def stub():
    with StubServer(respond=Persona(5)) as server:
        yield server


def rows_for(seed: int, *, colours: bool = False) -> list[dict[str, str]]:
    """N items with random ids, in a random order; the reference by label name."""
    rng = random.Random(seed)
    return [
        {
            "id": f"item-{rng.randrange(10**6)}-{k}",
            "request": f"What colour is item {k}?",
            "response": f"Item {k} is {COLOURS[k % 3] if colours else 'blue'}.",
            "expected": COLOURS[k % 3] if colours else str(bool(k % 2)),
        }
        for k in rng.sample(range(1000), N)
    ]


def evaluate(
    folder: Path, stub, rows, *, scale=BINARY, name: str = "cert", model: str = "openai/stub-model"
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / f"{name}.csv"
    with data.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=["id", "request", "response", "expected"])
        w.writeheader()
        w.writerows(rows)
    cfg = stub_config(
        folder,
        data,
        stub.base_url,
        name=name,
        file=f"{name}.yaml",
        retries=0,
        judge={"scale": scale, "model": model},
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        assert main(["evaluate", str(cfg), "--quiet"]) in (0, 1)
    (run_dir,) = (folder / "runs").glob(f"{name}-*")
    return run_dir


def certify(folder: Path, run_dir: Path, policy: dict, capsys) -> tuple[int, dict | str]:
    pol = folder / "policy.yaml"
    pol.write_text(json.dumps(policy))
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        # each folder's certificates on a machine of its own: the signing key's journal of the
        # certificates it signed spans every ledger, and these compare two ledgers' decisions
        # on the same items
        mp.setenv("XDG_STATE_HOME", str(folder / "state"))
        code = main(["certify", str(run_dir), "--policy", str(pol), "--json"])
    out = capsys.readouterr()
    return code, json.loads(out.out) if code in (0, 1) else out.err


def decided(cert: dict) -> dict:
    """What a certificate decided and on what figures (not where, when or on which names)."""
    return {
        "decision": cert["decision"],
        "results": cert["results"],
        "unscored": cert["unscored"],
        "n": len(cert["items"]),
    }


@pytest.mark.parametrize("seed", [0, 1])
def test_rows_order_and_ids_do_not_change_the_decision_or_a_bound(stub, tmp_path, capsys, seed):
    rows = rows_for(seed)
    code_a, base = certify(tmp_path / "a", evaluate(tmp_path / "a", stub, rows), POLICY, capsys)
    renamed = {r["id"]: f"renamed-{i:03d}" for i, r in enumerate(random.Random(9).sample(rows, N))}
    moved = [{**r, "id": renamed[r["id"]]} for r in random.Random(seed).sample(rows, N)]
    code_b, other = certify(tmp_path / "b", evaluate(tmp_path / "b", stub, moved), POLICY, capsys)
    assert code_a == code_b and decided(other) == decided(base)
    assert sorted(other["items"]) == sorted(renamed[i] for i in base["items"])  # the new ids
    assert base["unscored"] and base["results"][2]["method"] == "bootstrap"  # κ's bound, drawn


def test_a_binary_scale_s_label_order_with_the_positive_named_does_not_matter(
    stub, tmp_path, capsys
):
    rows = rows_for(2)
    listed = {"kind": "binary", "labels": ["True", "False"], "positive": "True"}
    _, base = certify(tmp_path / "a", evaluate(tmp_path / "a", stub, rows), POLICY, capsys)
    _, other = certify(
        tmp_path / "b", evaluate(tmp_path / "b", stub, rows, scale=listed), POLICY, capsys
    )
    assert decided(other) == decided(base)


def test_an_unordered_scale_s_label_order_does_not_matter(stub, tmp_path, capsys):
    """κ's bootstrap bound and the verdict an unscored item counts as do not follow the order
    the colours are listed in."""
    rows = rows_for(3, colours=True)
    policy = {
        "name": "colours",
        "confidence": 0.9,
        "bars": {"accuracy": 0.4, "kappa_categorical": 0.3},
        "n_resamples": 1000,
    }
    results = []
    for i, labels in enumerate([COLOURS, ["blue", "red", "green"], ["green", "blue", "red"]]):
        scale = {"kind": "categorical", "labels": labels}
        folder = tmp_path / f"listed-{i}"
        results.append(
            decided(certify(folder, evaluate(folder, stub, rows, scale=scale), policy, capsys)[1])
        )
    assert results[0]["unscored"]
    assert results[1] == results[0] and results[2] == results[0]


@pytest.mark.parametrize(
    "respell",
    [
        pytest.param(lambda t: unicodedata.normalize("NFD", t), id="NFD"),
        pytest.param(lambda t: t.replace(" ", "\r\n", 1), id="CRLF"),
        pytest.param(lambda t: t + "  ", id="trailing spaces"),
        pytest.param(lambda t: f"\x1b[1;32m{t}\x1b[0m", id="ANSI colours"),
        pytest.param(lambda t: f"\x1b]8;;https://x.example\x07{t}\x1b]8;;\x07", id="OSC 8 link"),
        pytest.param(lambda t: t.replace(" ", "\u3164", 1), id="Hangul filler for a space"),
    ],
)
def test_the_same_items_shuffled_renamed_and_re_encoded_are_consumed(
    stub, tmp_path, capsys, respell
):
    """Consumed items are matched on their normalised text: the same items in another order,
    under other ids and re-encoded are a new run (the judge read other bytes) whose items are
    all refused, in one line, and nothing is written to the ledger."""
    rows = [{**r, "response": r["response"].replace("blue", "bleu café")} for r in rows_for(4)]
    first = evaluate(tmp_path, stub, rows, name="first")
    assert certify(tmp_path, first, POLICY, capsys)[0] in (0, 1)
    again = [
        {**r, "id": f"other-{i}", "response": respell(r["response"])}
        for i, r in enumerate(random.Random(4).sample(rows, N))
    ]
    second = evaluate(tmp_path, stub, again, name="again")
    assert (
        json.loads((second / "run.json").read_text())["run_hash"]
        != json.loads((first / "run.json").read_text())["run_hash"]
    )
    ledger = sorted((tmp_path / "runs" / "certificates").iterdir())
    code, err = certify(tmp_path, second, POLICY, capsys)
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and f"{N} of these {N} items were already consumed" in lines[0]
    assert sorted((tmp_path / "runs" / "certificates").iterdir()) == ledger


def _not_in(rows: list[dict[str, str]], seed: int) -> list[dict[str, str]]:
    """Items of ``rows_for(seed)`` whose text none of ``rows`` has (fresh items)."""
    taken = {r["request"] for r in rows}
    return [r for r in rows_for(seed) if r["request"] not in taken]


@pytest.mark.parametrize(
    "other",
    [
        pytest.param({"tpr": 0.51, "tnr": 0.5, "kappa_categorical": 0.3}, id="a bar stricter"),
        pytest.param(
            {"tpr": 0.5, "tnr": 0.5, "kappa_categorical": 0.3, "accuracy": 0.5}, id="one more bar"
        ),
    ],
)
def test_two_comparable_claims_count_together_in_either_order(stub, tmp_path, capsys, other):
    """Two claims one of which admits the other are tried on fresh items, one after the other,
    in both orders (each order in a ledger of its own): whichever comes second is the judge's
    second attempt at one claim — refused in one line and not written — so the second's fate
    does not depend on which of the two the judge was tried under first."""
    stricter = {**POLICY, "name": "stricter", "bars": other}
    first_rows = rows_for(6)
    second_rows = _not_in(first_rows, 7)
    outcomes = []
    for folder, order in (
        (tmp_path / "a", (POLICY, stricter)),
        (tmp_path / "b", (stricter, POLICY)),
    ):
        one = evaluate(folder, stub, first_rows, name="one")
        two = evaluate(folder, stub, second_rows, name="two")
        assert certify(folder, one, order[0], capsys)[0] in (0, 1)
        ledger = sorted((folder / "runs" / "certificates").iterdir())
        code, err = certify(folder, two, order[1], capsys)
        unchanged = sorted((folder / "runs" / "certificates").iterdir()) == ledger
        outcomes.append((code, isinstance(err, str) and "attempt 2 for judge" in err, unchanged))
    assert outcomes[0] == outcomes[1] == (2, True, True)
