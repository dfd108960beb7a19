"""Active labelling with ``assay estimate``: ``--suggest N`` draws the items to label next with
probabilities ∝ √(p(1 − p)) of the judge's probability (checked by hand), a review queue
exported and imported — or served — like a selective run's abstained items, each verdict signed
with its reviewer and time; ``--queue`` reads them back into the inverse-probability-weighted
estimate (checked against the formula by hand), provisional until every drawn item is labelled;
an edited probability or verdict refused in one line. The runs are test_estimate.py's."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from starlette.testclient import TestClient

from assay.web._app import create_app
from tests.decisions.test_estimate import (  # noqa: F401  (the module's fixture)
    N,
    cli,
    cli_json,
    judgments,
    probability_predictions,
    references,
    row,
    runs,
    truth,
)

BUDGET = 40


def queue_records(queue_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (queue_dir / "label_queue.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def suggested(runs, tmp_path_factory):  # noqa: F811
    """The main run's queue of about 40 items, drawn once (seed 1)."""
    import os

    here = Path.cwd()
    os.chdir(runs["tmp"])
    try:
        from assay.decisions import estimate

        s = estimate(runs["main"], suggest=BUDGET, seed=1, workdir=runs["tmp"])
    finally:
        os.chdir(here)
    return Path(s.run_dir), s


def copy_of(queue_dir: Path, tmp_path: Path) -> Path:
    out = tmp_path / queue_dir.name
    shutil.copytree(queue_dir, out)
    return out


def test_the_draw_follows_the_judges_uncertainty(runs, suggested):  # noqa: F811
    queue_dir, s = suggested
    records = queue_records(queue_dir)
    refs, f = references(runs["tmp"] / "main.csv"), probability_predictions(runs["main"])
    ids = sorted(refs, key=lambda i: int(i[1:]))
    assert [r["item_id"] for r in records] == ids  # every item, in the run's order
    assert [r["labelled_before"] for r in records] == [refs[i] is not None for i in ids]
    # π₂ by hand: √(p(1 − p)) shares, 80% of the budget, plus a uniform 20%, over every item
    # (one the judge left unscored as unsure as the least sure), scaled so that the 320
    # unlabelled ones sum to the budget
    js = judgments(runs["main"])
    u = {i: f[i] * (1 - f[i]) for i in ids if js[i]["score"] is not None}
    root = np.sqrt([u.get(i, max(u.values())) for i in ids])
    share = 0.8 * root / root.sum() + 0.2 / N
    pool = np.array([refs[i] is None for i in ids])
    want = share * BUDGET / share[pool].sum()
    assert want.max() < 1  # no item capped at 1 here
    assert [r["inclusion"] for r in records] == pytest.approx(want.tolist(), rel=1e-8)
    drawn = [r for r in records if r["drawn"]]
    assert not any(r["drawn"] for r, unl in zip(records, pool, strict=True) if not unl)
    assert s.queue.drawn == len(drawn) and abs(len(drawn) - BUDGET) <= 2 * BUDGET**0.5
    assert s.queue.budget == pytest.approx(BUDGET) and s.queue.labelled_before == 80
    # the drawn items carry their texts and what the judge said; the others only their π₂
    assert all(r["request"] and r["judge"]["prediction"] for r in drawn)
    assert not any("request" in r for r in records if not r["drawn"])
    # the queue is sealed with the run
    state = json.loads((queue_dir / "run.json").read_text())
    assert "label_queue.jsonl" in state["seal"]["files"]


def label_all(queue_dir: Path, capsys, *, skip: int = 0, wrong: bool = False) -> list[str]:
    """Export the queue, give every drawn item but the first ``skip`` its true label (the
    other one with ``wrong``), import."""
    out = queue_dir / "review.yaml"
    text = cli(["review", "export", str(queue_dir), "-o", str(out), "--all"], capsys)
    assert "items to label written to" in text
    entries = yaml.safe_load(out.read_text())
    assert "# Items to label, drawn by `assay estimate --suggest`" in out.read_text()
    assert all(set(e) >= {"inclusion", "judge", "verdict", "reviewer"} for e in entries)
    for e in entries[skip:]:
        e["verdict"] = "True" if truth(int(e["item_id"][1:])) != wrong else "False"
    out.write_text(yaml.safe_dump(entries, sort_keys=False))
    done = cli(["review", "import", str(queue_dir), str(out), "--reviewer", "ana"], capsys)
    assert f"recorded {len(entries) - skip} verdicts ({skip} entries left blank)" in done
    assert "--queue" in done
    return [e["item_id"] for e in entries]


def test_labelled_queue_gives_the_inverse_probability_weighted_estimate(
    runs,  # noqa: F811
    suggested,
    tmp_path,
    capsys,
    monkeypatch,
):
    monkeypatch.chdir(runs["tmp"])
    queue_dir = copy_of(suggested[0], tmp_path)
    label_all(queue_dir, capsys)
    verdicts = [
        json.loads(x) for x in (queue_dir / "human_verdicts.jsonl").read_text().split("\n") if x
    ]
    assert all(v["reviewer"] == "ana" and v["timestamp"] and v["signature"] for v in verdicts)

    s = cli_json(["estimate", str(runs["main"]), "--queue", str(queue_dir)], capsys)
    assert s["headline"] == "active_ppi++" and s["queue"]["pending"] == 0
    assert "drawn once, each with its recorded probability" in s["sampling"]
    # by hand (Zrnic & Candès): every item of the run, labelled in the first phase (80 of
    # 400, uniformly) or drawn in the second: π = p₁ + (1 − p₁) π₂
    refs, f = references(runs["tmp"] / "main.csv"), probability_predictions(runs["main"])
    records = {r["item_id"]: r for r in queue_records(queue_dir)}
    ids = [f"i{k}" for k in range(N)]
    drawn_with = json.loads((queue_dir / "metrics.json").read_text())["queue"]
    p1 = drawn_with["first_phase"]  # recorded with the queue, sealed with it
    assert p1 == 80 / N
    pi = np.array([p1 + (1 - p1) * records[i]["inclusion"] for i in ids])
    xi = np.array([refs[i] is not None or records[i]["drawn"] for i in ids], float)
    y = np.array([truth(int(i[1:])) for i in ids], float)
    fx = np.array([f[i] for i in ids])
    a, b = fx * (1 - xi / pi), y * xi / pi
    lam = np.clip(-np.mean((a - a.mean()) * (b - b.mean())) / np.var(a), 0, 1)
    z = lam * a + b
    se = z.std() / np.sqrt(N)
    active = s["estimates"][0]
    assert active["method"] == "active_ppi++"
    assert active["value"] == pytest.approx(z.mean(), abs=1e-12)
    assert active["ci_low"] == pytest.approx(z.mean() - 1.959963984540054 * se, abs=1e-9)
    assert active["lam"] == pytest.approx(lam, abs=1e-12)
    assert active["ci_low"] <= np.mean([truth(k) for k in range(N)]) <= active["ci_high"]
    text = cli(["estimate", str(runs["main"]), "--queue", str(queue_dir)], capsys)
    assert "estimate (active PPI++)" in text and "### Label queue" in text


def test_until_every_drawn_item_is_labelled_the_estimate_is_provisional(
    runs,  # noqa: F811
    suggested,
    tmp_path,
    capsys,
    monkeypatch,
):
    monkeypatch.chdir(runs["tmp"])
    queue_dir = copy_of(suggested[0], tmp_path)
    label_all(queue_dir, capsys, skip=5)
    s = cli_json(["estimate", str(runs["main"]), "--queue", str(queue_dir)], capsys)
    assert s["headline"] == "ppi++" and s["queue"]["pending"] == 5
    (active,) = [e for e in s["estimates"] if e["method"] == "active_ppi++"]
    assert active["note"].startswith("provisional: 5 of the")


def test_an_edited_probability_or_verdict_is_refused(
    runs,  # noqa: F811
    suggested,
    tmp_path,
    capsys,
    monkeypatch,
):
    monkeypatch.chdir(runs["tmp"])
    queue_dir = copy_of(suggested[0], tmp_path)
    label_all(queue_dir, capsys)
    # a verdict edited by hand: its signature no longer holds
    path = queue_dir / "human_verdicts.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[2])
    record["score"] = 1 - record["score"]
    lines[2] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    err = cli(["estimate", str(runs["main"]), "--queue", str(queue_dir)], capsys, code=2)
    assert err.count("\n") == 1 and "human_verdicts.jsonl, row 3" in err
    assert "not signed by the signing key" in err
    # a probability edited in the queue: the run's seal refuses it, for review and estimate
    queue_dir = copy_of(suggested[0], tmp_path / "b")
    text = (queue_dir / "label_queue.jsonl").read_text()
    edited = re.sub(r'"inclusion": [0-9.e-]+', '"inclusion": 0.5', text, count=1)
    (queue_dir / "label_queue.jsonl").write_text(edited)
    for args in (
        ["review", "export", str(queue_dir)],
        ["estimate", str(runs["main"]), "--queue", str(queue_dir)],
    ):
        err = cli(args, capsys, code=2)
        assert err.count("\n") == 1 and "label_queue.jsonl is not the file the run sealed" in err


def test_a_queue_is_drawn_without_validation_labels_and_read_with_its_own_probabilities(
    runs,  # noqa: F811
    tmp_path,
    capsys,
    monkeypatch,
):
    """A queue drawn with --validation counted the validation run's 150 labels as RUN's first
    phase (p₁ = 150 / 550 at the draw) and was read back with p₁ = 150 / 400 over RUN's items,
    none of which they were: biased (over 4,000 redraws: 51% coverage at 95%). The draw is
    refused in one line; a queue an older assay drew so is refused when read, naming an item
    the run does not have, rather than read with probabilities it was not drawn with."""
    import assay.decisions._estimate as command

    monkeypatch.chdir(runs["tmp"])
    main_run, validation = str(runs["main"]), str(runs["validation"])
    err = cli(["estimate", main_run, "--validation", validation, "--suggest", "40"], capsys, 2)
    assert err.count("\n") == 1 and "--suggest with --validation" in err
    assert "draw the queue without --validation" in err
    monkeypatch.setattr(command, "refuse_options", lambda **_: None)  # the older assay
    older = command.estimate(main_run, validation, suggest=40, seed=3, workdir=runs["tmp"])
    monkeypatch.undo()
    monkeypatch.chdir(runs["tmp"])
    queue_dir = copy_of(Path(older.run_dir), tmp_path)
    label_all(queue_dir, capsys)
    err = cli(["estimate", main_run, "--queue", str(queue_dir)], capsys, code=2)
    assert err.count("\n") == 1 and "not drawn from these items (its item i400" in err


def test_a_queue_of_another_run_is_refused(runs, suggested, capsys, monkeypatch):  # noqa: F811
    monkeypatch.chdir(runs["tmp"])
    err = cli(["estimate", str(runs["longest"]), "--queue", str(suggested[0])], capsys, code=2)
    assert "a label queue drawn from another run" in err and err.count("\n") == 1


def test_verdicts_of_another_queue_of_the_same_run_are_refused(
    runs,  # noqa: F811
    suggested,
    tmp_path,
    capsys,
    monkeypatch,
):
    """The same draw made again in another folder (the same run hash): the verdicts labelled in
    one queue, copied into the other, are not that queue's — each is bound to the queue's run
    instance, not only to its hash."""
    from assay.decisions import estimate

    monkeypatch.chdir(runs["tmp"])
    ours = copy_of(suggested[0], tmp_path / "ours")
    label_all(ours, capsys)
    theirs = Path(estimate(runs["main"], suggest=BUDGET, seed=1, workdir=tmp_path).run_dir)
    assert theirs.name == ours.name and theirs != ours  # one hash, two instances
    shutil.copy(ours / "human_verdicts.jsonl", theirs / "human_verdicts.jsonl")
    err = cli(["estimate", str(runs["main"]), "--queue", str(theirs)], capsys, code=2)
    assert err.count("\n") == 1 and "human_verdicts.jsonl, row 1" in err
    assert "not signed by the signing key" in err


def test_the_review_app_serves_the_queue_and_signs_each_verdict(
    runs,  # noqa: F811
    suggested,
    tmp_path,
):
    queue_dir = copy_of(suggested[0], tmp_path)
    app, keys = create_app(queue_dir)
    client = TestClient(app, follow_redirects=False)
    assert client.get("/").status_code == 403
    assert client.get(f"/?token={keys.token}").status_code == 303
    page = client.get("/").text
    drawn = suggested[1].queue.drawn
    assert f"0 / {drawn} items to label with a human verdict" in page
    first = next(r for r in queue_records(queue_dir) if r["drawn"])["item_id"]
    item = client.get(f"/item/{first}").text
    assert "probability it was drawn" in item and "your label" in item
    csrf = re.search(r'name="csrf-token" content="([^"]+)"', page).group(1)
    answer = client.post(
        "/api/verdict",
        json={"item_id": first, "verdict": 1, "reviewer": "bo", "version": 0},
        headers={"X-CSRF-Token": csrf},
    )
    assert answer.status_code == 200, answer.text
    (record,) = [
        json.loads(x) for x in (queue_dir / "human_verdicts.jsonl").read_text().splitlines()
    ]
    assert (record["item_id"], record["score"], record["reviewer"]) == (first, 1, "bo")
    assert record["signature"] and record["timestamp"]
    assert f"1 / {drawn} items to label with a human verdict" in client.get("/").text


def test_a_queue_drawn_with_a_target_half_width_shows_the_plans_budget(
    runs,  # noqa: F811
    capsys,
    monkeypatch,
):
    """``--suggest`` with ``--target-half-width``: beside the drawn queue, the new labels PPI++'s
    plan asks for (the planner's count from the labelled items as a pilot, less those)."""
    from assay.metrics import labels_needed, pilot_moments

    monkeypatch.chdir(runs["tmp"])
    refs, f = references(runs["tmp"] / "main.csv"), probability_predictions(runs["main"])
    lab = [i for i in sorted(refs) if refs[i] is not None]
    unl = [i for i in sorted(refs) if refs[i] is None]
    pilot = pilot_moments([refs[i] for i in lab], [f[i] for i in lab], [f[i] for i in unl])
    (ppi,) = [p for p in labels_needed(pilot, 0.05) if p.method == "ppi++"]
    planned = ppi.n_labels - len(lab)
    assert 0 < planned < len(unl)

    args = ["estimate", str(runs["main"]), "--target-half-width", "0.05", "--seed", "1"]
    text = cli([*args, "--suggest", str(planned)], capsys)
    line = (
        f"| the plan's budget (PPI++ for ± 0.05) | {planned} new labels ({ppi.n_labels} in all) |"
    )
    assert line in text
    assert f"| ± 0.05 | PPI++ | {ppi.n_labels} | {planned} |" in text  # the plan's own table
    assert "The plan counts uniform labels" in text
    fewer = cli([*args, "--suggest", str(planned - 5)], capsys)
    assert line in fewer and "is below the plan's: expect an interval wider than ± 0.05" in fewer
    plain = cli(["estimate", str(runs["main"]), "--suggest", str(BUDGET), "--seed", "1"], capsys)
    assert "the plan's budget" not in plain


def test_a_queue_drawn_before_any_label(runs, tmp_path, capsys, monkeypatch):  # noqa: F811
    """No item labelled yet: the queue is drawn from them all; its labels alone estimate."""
    monkeypatch.chdir(runs["tmp"])
    text = cli(["estimate", str(runs["unlabelled"]), "--suggest", "30", "--seed", "2"], capsys)
    assert "no estimate yet" in text and "### Label queue" in text
    queue_dir = Path(re.search(r"\| queue \| (\S+) \|", text).group(1))
    queue_dir = copy_of(queue_dir, tmp_path)
    label_all(queue_dir, capsys)
    s = cli_json(["estimate", str(runs["unlabelled"]), "--queue", str(queue_dir)], capsys)
    assert s["headline"] == "active_ppi++" and s["n_labelled"] == 0
    assert [e["method"] for e in s["estimates"]] == ["active_ppi++"]
    assert s["queue"]["labelled"] == s["queue"]["drawn"]


def test_a_verdict_signed_by_hand_off_the_scale_is_refused(
    runs,  # noqa: F811
    suggested,
    tmp_path,
    capsys,
    monkeypatch,
):
    """A ``human_verdicts.jsonl`` line off the scale, signed by hand with the key past
    ``assay review import`` (which refuses one), is refused as the queue reads it, naming file,
    row and field; on the scale, the same hand-signed line is read."""
    from assay.decisions.review_queue import LabelQueue
    from assay.errors import DataError

    monkeypatch.chdir(runs["tmp"])
    queue_dir = copy_of(suggested[0], tmp_path)
    label_all(queue_dir, capsys)
    queue = LabelQueue(queue_dir)
    chain = queue.signed_history()
    path = queue_dir / "human_verdicts.jsonl"
    lines = path.read_text().splitlines()

    def resign(score: int) -> None:  # the line and every one after it, and the head
        records = [json.loads(x) for x in lines]
        records[1]["score"] = score
        last = records[0]["signature"]
        for k in range(1, len(records)):
            body = {f: v for f, v in records[k].items() if f not in ("signature", "previous")}
            records[k] = chain.link(body, last)
            last = records[k]["signature"]
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        chain.write_head(len(records), last)

    resign(7)
    with pytest.raises(DataError, match=r"row 2, field 'score': 7 is not on the binary"):
        queue.verdicts()
    resign(0)
    assert queue.verdicts()[json.loads(lines[1])["item_id"]]["score"] == 0


def test_the_verdict_history_is_refused_moved_cut_or_copied_and_read_whole(
    runs,  # noqa: F811
    suggested,
    tmp_path,
    capsys,
    monkeypatch,
):
    """Every drawn item labelled wrong, then corrected: the last line of an item is its verdict,
    so the file's order and end decide the estimate (the corrections moved above the originals,
    or deleted, read 0.637 where the truth is 0.265). Each line is signed over the one before it
    and the count kept beside the key: moving lines, removing one from the middle, cutting the
    end off and appending a copied line are each refused in one line naming the file and the
    first bad row; the genuine history gives the estimate of labelling once with the truth."""
    monkeypatch.chdir(runs["tmp"])
    once = copy_of(suggested[0], tmp_path / "once")
    label_all(once, capsys)
    queue_dir = copy_of(suggested[0], tmp_path / "twice")
    label_all(queue_dir, capsys, wrong=True)
    label_all(queue_dir, capsys)
    args = ["estimate", str(runs["main"]), "--queue", str(queue_dir)]
    want = row(
        cli_json(["estimate", str(runs["main"]), "--queue", str(once)], capsys), "active_ppi++"
    )
    got = row(cli_json(args, capsys), "active_ppi++")
    assert (got["value"], got["ci_low"], got["ci_high"]) == pytest.approx(
        (want["value"], want["ci_low"], want["ci_high"]), abs=1e-12
    )
    path = queue_dir / "human_verdicts.jsonl"
    genuine = path.read_text().splitlines(keepends=True)
    half = len(genuine) // 2
    tampered = {
        "corrections moved above the originals": (genuine[half:] + genuine[:half], "row 1"),
        "a middle line removed": (genuine[:5] + genuine[6:], "row 6"),
        "the corrections cut off": (genuine[:half], f"holds {half} verdicts, but {2 * half}"),
        "the last line cut off": (genuine[:-1], f"but {len(genuine)} were recorded"),
        "a line copied to the end": (genuine + [genuine[3]], f"row {len(genuine) + 1}"),
    }
    for what, (lines, where) in tampered.items():
        path.write_text("".join(lines))
        err = cli(args, capsys, code=2)
        assert err.count("\n") == 1 and "human_verdicts.jsonl" in err and where in err, what
    path.write_text("".join(genuine))
    assert row(cli_json(args, capsys), "active_ppi++")["value"] == got["value"]


def test_a_history_written_before_the_chain_is_adopted_once_then_guarded(
    runs,  # noqa: F811
    suggested,
    tmp_path,
    capsys,
    monkeypatch,
):
    """A human_verdicts.jsonl of the earlier format (each line signed alone, no ``previous``,
    no head) is read as it is, its lines chained in place the first time, and guarded from
    then on; a line of it edited by hand is still refused, not adopted."""
    from assay import _signing
    from assay.decisions.review_queue import LabelQueue

    monkeypatch.chdir(runs["tmp"])
    queue_dir = copy_of(suggested[0], tmp_path)
    label_all(queue_dir, capsys)
    args = ["estimate", str(runs["main"]), "--queue", str(queue_dir)]
    want = row(cli_json(args, capsys), "active_ppi++")["value"]
    chain = LabelQueue(queue_dir).signed_history()
    identity = chain.identity
    path = queue_dir / "human_verdicts.jsonl"
    old = []
    for line in path.read_text().splitlines():
        r = {k: v for k, v in json.loads(line).items() if k not in ("previous", "signature")}
        old.append({**r, "signature": _signing.sign({**r, "queue": identity})})
    chain.head_file().unlink()
    edited = [dict(r) for r in old]
    edited[2]["score"] = 1 - edited[2]["score"]
    path.write_text("".join(json.dumps(r) + "\n" for r in edited))
    err = cli(args, capsys, code=2)
    assert "row 3" in err and "not signed by the signing key" in err
    path.write_text("".join(json.dumps(r) + "\n" for r in old))
    assert row(cli_json(args, capsys), "active_ppi++")["value"] == pytest.approx(want, abs=1e-12)
    assert all("previous" in json.loads(x) for x in path.read_text().splitlines())
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]))
    assert "were recorded" in cli(args, capsys, code=2)
    # once chained, an older-format file put back in its place is not adopted again: the queue
    # has a head, so the unchained file (its lines reordered, each still signed alone) is refused
    path.write_text("".join(json.dumps(r) + "\n" for r in reversed(old)))
    err = cli(args, capsys, code=2)
    assert err.count("\n") == 1 and "holds no chained verdicts" in err
