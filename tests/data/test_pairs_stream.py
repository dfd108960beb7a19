"""Labelled pairs built a group at a time from rows sorted on disk are the pairs of the plain
in-memory procedure, kept here as the reference: the same ids, A and B, references, meta and
order, and every count, cap and seed — on random tables through the list API and through the
run's loader, with sorted runs of a few rows so the merges read many of them."""

from __future__ import annotations

import csv
import gc
import json
import math
import random
from collections import defaultdict
from itertools import combinations
from pathlib import Path

import pytest

import assay.data._pairs as pairs_module
from assay.data import ColumnMap, PairsConfig, build_pairs, iter_pairs, load_table
from assay.errors import DataError
from assay.inputs import stream_items
from assay.inputs._config import DataConfig
from assay.programs import PAIRWISE
from assay.types import Item, stable_hash

# --- the reference: the procedure as a list in, a list out, every pair held ----------------


def reference_pairs(items: list[Item], config: PairsConfig, path="data"):
    counts = {
        "candidates": 0,
        "skipped_missing_score": 0,
        "skipped_equal_scores": 0,
        "skipped_identical_responses": 0,
        "skipped_different_requests": 0,
        "left_out_by_cap": 0,
        "pairs": 0,
    }
    groups: dict[str, list] = defaultdict(list)
    for it in items:
        score = pairs_module._score(it, config.score, path)  # a score read as it was
        if score is None:
            counts["skipped_missing_score"] += 1
            continue
        groups[pairs_module._group_of(it, config, path)].append((it, score))  # as it was
    by_group: dict[str, list[Item]] = {}
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda m: m[0].id)
        kept = []
        for (a, sa), (b, sb) in combinations(members, 2):
            counts["candidates"] += 1
            if sa == sb:
                counts["skipped_equal_scores"] += 1
            elif " ".join(a.response.split()) == " ".join(b.response.split()):
                counts["skipped_identical_responses"] += 1
            elif a.request != b.request:
                counts["skipped_different_requests"] += 1
            else:
                kept.append(reference_pair(a, sa, b, sb, key, config.seed))
        if kept:
            by_group[key] = kept
    pairs = reference_cap(by_group, config.max_pairs, config.seed)
    counts["left_out_by_cap"] = sum(len(v) for v in by_group.values()) - len(pairs)
    counts["pairs"] = len(pairs)
    if not pairs:
        skipped = ", ".join(f"{k} {v}" for k, v in counts.items() if k.startswith("skipped") and v)
        raise DataError(
            f"no pair left to judge ({counts['candidates']} candidate pairs; {skipped or 'none'})",
            path=path,
            field="pairs",
        )
    return pairs, counts


def reference_pair(a: Item, sa: float, b: Item, sb: float, group: str, seed: int) -> Item:
    if random.Random(stable_hash([seed, a.id, b.id])).random() < 0.5:
        (a, sa), (b, sb) = (b, sb), (a, sa)
    shared = {k: v for k, v in a.meta.items() if b.meta.get(k) == v}
    return Item(
        id=f"{a.id}~{b.id}",
        request=a.request,
        response=a.response,
        expected=0 if sa > sb else 1,
        meta={
            **shared,
            "response_b": b.response,
            "pair": {"a": a.id, "b": b.id, "score_a": sa, "score_b": sb, "group": group},
        },
    )


def reference_cap(by_group: dict[str, list[Item]], cap: int | None, seed: int) -> list[Item]:
    if cap is None:
        return sorted((p for ps in by_group.values() for p in ps), key=lambda p: p.id)
    rng = random.Random(seed)
    queues = []
    for key in sorted(by_group):
        q = list(by_group[key])
        rng.shuffle(q)
        queues.append(q)
    out: list[Item] = []
    while len(out) < cap and any(queues):
        for q in queues:
            if q and len(out) < cap:
                out.append(q.pop())
    return sorted(out, key=lambda p: p.id)


# --- random tables -------------------------------------------------------------------------

SCORES = [1, 2, 2.0, 3, "3", "4.5", 5, None, "", float("nan")]


def random_rows(rng: random.Random, grouped: bool) -> list[dict]:
    """Rows of a scored table: many groups of 1 to 30 rows, missing and equal scores, the same
    response spelt with other whitespace, and (``grouped``) other requests within a topic."""
    rows = []
    for g in range(rng.randint(1, 25)):
        prompt = f"Prompt {g:02d}?"
        texts = [f"answer {g} {k}" for k in range(rng.randint(1, 8))]
        for k in range(rng.randint(1, 30)):
            text = rng.choice(texts)
            text = rng.choice([text, f"  {text} ", text.replace(" ", "\t", 1), text])
            request = prompt if not grouped or rng.random() < 0.8 else f"Other {g}?"
            score = rng.choice(SCORES)
            rows.append(
                {
                    "id": f"r{rng.randrange(10**6):06d}-{g}-{k}",
                    "request": request,
                    "response": text,
                    "score": score,
                    "topic": f"t{g % 13}",
                    "k": k % 3,
                }
            )
    rng.shuffle(rows)
    return rows


def as_items(rows: list[dict]) -> list[Item]:
    return [
        Item(
            id=r["id"],
            request=r["request"],
            response=r["response"],
            meta={c: v for c, v in r.items() if c not in ("id", "request", "response")},
        )
        for r in rows
    ]


def caps(rng: random.Random, total: int) -> list[int | None]:
    return [None, 1, rng.randint(1, max(total, 1)), max(total, 1), total + 5]


@pytest.fixture
def small_runs(monkeypatch):
    def use(rows: int, size: int = 10**9) -> None:
        monkeypatch.setattr(pairs_module, "_RUN_ROWS", rows)
        monkeypatch.setattr(pairs_module, "_RUN_BYTES", size)

    return use


def same(streamed, reference) -> None:
    """The same pairs in the same order, field by field and meta key by meta key."""
    assert [p.model_dump_json() for p in streamed] == [p.model_dump_json() for p in reference]


def outcome(build, items, config):
    try:
        pairs, counts = build(items, config)
    except DataError as err:
        return None, str(err)
    return pairs, counts


@pytest.mark.parametrize("table", range(8))
def test_streamed_pairs_are_the_reference_s_on_random_tables(table, small_runs):
    rng = random.Random(table)
    grouped = table % 2 == 1
    items = as_items(random_rows(rng, grouped))
    small_runs(max(2, len(items) // rng.randint(5, 40)), rng.choice([10**9, 20_000]))
    group_by = "topic" if grouped else None
    uncapped = outcome(reference_pairs, items, PairsConfig(score="score", group_by=group_by))
    total = uncapped[1]["pairs"] if uncapped[0] is not None else 0
    for seed in (0, 7):
        for cap in caps(rng, total):
            config = PairsConfig(score="score", group_by=group_by, max_pairs=cap, seed=seed)
            want, want_counts = outcome(reference_pairs, items, config)
            got, got_counts = outcome(build_pairs, items, config)
            if want is None:
                assert got is None and got_counts == want_counts  # the same one-line error
                continue
            same(got, want)
            assert list(got_counts.items()) == list(want_counts.items())


def test_every_cap_over_groups_of_every_size():
    """Groups of 1, 3, 6, 10 and 15 pairs in mixed key order, every cap from one pair to past
    them all: the round-robin's last round is partial, and reaches groups with exactly as many
    pairs as the full rounds took, with fewer and with more."""
    sizes = [2, 5, 3, 6, 2, 4, 3, 2, 6]  # members per group
    items = [
        Item(id=f"{g}-{i}", request=f"Q{g}", response=f"{g} {i}", meta={"s": i})
        for g, n in zip("kcxamqbzf", sizes, strict=True)
        for i in range(n)
    ]
    total = sum(n * (n - 1) // 2 for n in sizes)
    for cap in [None, *range(1, total + 2)]:
        for seed in range(2):
            config = PairsConfig(score="s", max_pairs=cap, seed=seed)
            want, want_counts = reference_pairs(items, config)
            got, got_counts = build_pairs(items, config)
            same(got, want)
            assert got_counts == want_counts


def test_errors_are_the_reference_s():
    good = [Item(id="a", request="Q", response="x", meta={"s": 1, "t": "p"})]
    cases = [
        ([*good, Item(id="b", request="Q", response="y", meta={"s": "high"})], {"score": "s"}),
        (good, {"score": "nope"}),
        (good, {"score": "s", "group_by": "nope"}),
        (good, {"score": "s"}),  # no pair left
    ]
    for items, config in cases:
        with pytest.raises(DataError) as want:
            reference_pairs(items, PairsConfig(**config))
        with pytest.raises(DataError) as got:
            build_pairs(items, PairsConfig(**config))
        assert str(got.value) == str(want.value) and "\n" not in str(got.value)
        assert got.value.field == want.value.field


def write_csv(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.DictWriter(f, fieldnames=list(rows[0]))
        out.writeheader()
        for r in rows:
            score = r["score"]
            missing = score is None or (isinstance(score, float) and math.isnan(score))
            out.writerow({**r, "score": "" if missing else score})


@pytest.mark.parametrize("table", [4, 11])  # ungrouped, grouped
def test_the_run_s_loader_streams_the_reference_s_pairs(table, tmp_path, small_runs, monkeypatch):
    """Through ``stream_items``: the table read row by row, the pairs in a spool file read
    again on each pass, the notes' counts; no temporary folder left behind, and the spool goes
    with its stream."""
    rng = random.Random(table)
    grouped = table % 2 == 1
    path = tmp_path / "scored.csv"
    write_csv(path, random_rows(rng, grouped))
    small_runs(5, 3000)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    columns = {"id": "id", "request": "request", "response": "response"}
    rows = load_table(
        str(path), columns=ColumnMap(**columns, expected=None), cache_dir=tmp_path / "hf"
    )
    group_by = "topic" if grouped else None
    _, uncapped = reference_pairs(rows, PairsConfig(score="score", group_by=group_by))
    for cap in (None, max(uncapped["pairs"] // 2, 1)):
        pairs = {"score": "score", "group_by": group_by, "max_pairs": cap, "seed": table}
        data = DataConfig(path=str(path), columns=columns, pairs=pairs)
        want, want_counts = reference_pairs(rows, data.pairs)
        notes: dict = {}
        stream = stream_items(data, PAIRWISE, cache_dir=tmp_path / "hf", notes=notes)
        same(list(stream), want)
        same(list(stream), want)  # read again from the spool
        loose = (it.id for it in stream_items(data, PAIRWISE, cache_dir=tmp_path / "hf"))
        gc.collect()
        assert list(loose) == [p.id for p in want]  # the reading holds its stream and spool
        assert notes["pairs"] == want_counts
        limited = stream_items(data, PAIRWISE, cache_dir=tmp_path / "hf", limit=3)
        same(list(limited), want[:3])
        (spool, other) = sorted((tmp_path / "items").glob("pairs-*.jsonl"))
        assert json.loads(spool.read_text().splitlines()[0])["id"] == want[0].id
        assert not list(scratch.iterdir())  # the sorted runs' folder is gone
        del stream, limited
        gc.collect()
        assert not list((tmp_path / "items").glob("pairs-*.jsonl"))


def test_iter_pairs_counts_before_the_first_pair_and_reads_the_items_once():
    items = [Item(id=f"r{i}", request="Q", response=f"t{i}", meta={"s": i}) for i in range(6)]
    reads = []

    def once():
        for it in items:
            reads.append(it.id)
            yield it

    counts: dict = {}
    pairs = iter_pairs(once(), PairsConfig(score="s", max_pairs=4), counts=counts)
    first = next(pairs)
    assert counts["pairs"] == 4 and counts["left_out_by_cap"] == 15 - 4
    assert [first, *pairs] == reference_pairs(items, PairsConfig(score="s", max_pairs=4))[0]
    assert reads == [it.id for it in items]
