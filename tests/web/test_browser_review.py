"""A person reviews probes in a real browser with the keyboard; the harness then judges only the
probes they accepted or edited (``review: {required: true}``)."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml

from assay.reliability import run_harness
from assay.reliability.review._review import read_reviews
from assay.reliability.review._review_files import export_review, import_review
from assay.scale import Scale
from tests.agent_review_run import FINAL, LABELS, MISSED, write_agent_run
from tests.web.conftest import Server, harness_config, make_harness_run, open_first_item

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def gated(tmp_path_factory) -> tuple[Path, Path]:
    """A run whose config requires review: before any decision only the sources are judged."""
    folder = tmp_path_factory.mktemp("gated")
    res = make_harness_run(folder, required=True)
    return folder, res.run_dir


def _judged(run_dir: Path) -> dict[str, list[str]]:
    out = {}
    for f in sorted((run_dir / "judgments").glob("*.jsonl")):
        out[f.stem.split("-")[0]] = [json.loads(x)["item_id"] for x in f.read_text().splitlines()]
    return out


def test_keyboard_review_is_recorded_and_gates_the_next_harness_run(browser, gated):
    folder, run_dir = gated
    assert all(
        all(i.startswith("source:") for i in ids) and len(ids) == 4
        for ids in _judged(run_dir).values()
    )
    with Server(run_dir) as server:
        context = browser.new_context(viewport={"width": 1180, "height": 760})
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(server.login)
        page.wait_for_selector("body[data-ready]")
        assert "token=" not in page.url  # the token left the address bar
        page.fill("#reviewer", "ana")
        page.press("#reviewer", "Escape")
        with page.expect_navigation():
            page.click("table.queue tbody tr:first-child a")
        page.wait_for_selector("body[data-ready]")
        first = page.get_attribute("#decide", "data-probe")

        def press(key: str) -> str:
            """Press a key that decides or moves, wait for the page it opens."""
            with page.expect_navigation():
                page.keyboard.press(key)
            page.wait_for_selector("body[data-ready]")
            return page.get_attribute("#decide", "data-probe")

        second = press("a")  # accept, and the next probe opens
        third = press("r")  # reject
        page.keyboard.press("e")
        assert page.is_visible("#edited_text")
        page.fill("#edited_text", "What a sum: 1000.")
        page.fill("#note", "made it plainly wrong")
        generated = page.input_value("#edited_target")
        flipped = "correct" if generated == "incorrect" else "incorrect"
        page.fill("#edited_target", flipped)
        press("Control+Enter")

        # undo the edit: a new decision puts the probe back to pending, and its page opens
        assert press("u") == third
        assert page.text_content("#status").strip() == "pending"
        page.keyboard.press("e")
        page.fill("#edited_target", "7")  # off the scale: a clear message, nothing written
        page.keyboard.press("Control+Enter")
        page.wait_for_selector("#message.error")
        assert "7 is not on the binary" in page.text_content("#message")
        assert len(read_reviews(run_dir)) == 4
        page.fill("#edited_text", "What a sum: 1000.")
        page.fill("#edited_target", flipped)
        press("Control+Enter")
        assert press("k") == third  # back to the edited probe
        page.reload()
        page.wait_for_selector("body[data-ready]")
        assert page.text_content("#status").strip() == "edited"
        assert "What a sum: 1000." in page.text_content("#probe-text")
        assert "4 / 16 reviewed" not in page.text_content("header")
        assert "3 / 16 reviewed" in page.text_content("header")
        assert errors == []
        context.close()

    reviews = read_reviews(run_dir)
    assert [(r["probe_id"], r["status"]) for r in reviews] == [
        (first, "accepted"),
        (second, "rejected"),
        (third, "edited"),
        (third, "pending"),
        (third, "edited"),
    ]
    for r in reviews:
        assert r["reviewer"] == "ana" and datetime.fromisoformat(r["timestamp"])
    assert reviews[2]["note"] == "made it plainly wrong" and reviews[4]["target"] == [
        "incorrect",
        "correct",
    ].index(flipped)
    assert reviews[3]["undo_of"] == 3

    # the harness again, same config: only the accepted and the edited probe are judged
    res = run_harness(harness_config(folder, required=True), workdir=folder, progress=False)
    assert res.run_dir == run_dir
    assert res.summary.review.model_dump() == {
        "pending": 13,
        "accepted": 1,
        "edited": 1,
        "rejected": 1,
        "required": True,
    }
    for ids in _judged(run_dir).values():
        probes = sorted(i for i in ids if not i.startswith("source:"))
        assert len(probes) == 2 and first in probes
        assert any(i.startswith(third + "@") for i in probes)  # the edit, under its new id
    for judge in res.summary.judges.values():
        assert sum(t.judged for t in judge.tests.values()) == 2


def test_a_shortcut_pressed_before_the_reviewer_is_named_types_nothing(browser, gated, tmp_path):
    """With no reviewer named, a decision's key asks for the name and puts the cursor in that
    field: the key itself is not typed there (an "a" once became the reviewer's name)."""
    run_dir = tmp_path / "run"
    shutil.copytree(gated[1], run_dir)
    before = len(read_reviews(run_dir))  # the module's other test may have decided some
    with Server(run_dir) as server:
        context, page = open_first_item(browser, server)  # no reviewer named yet
        probe = page.get_attribute("#decide", "data-probe")
        for key in ("a", "r"):
            page.keyboard.press("Escape")  # out of the field the last key focused
            page.keyboard.press(key)
            page.wait_for_selector("#message.error")
            assert page.evaluate("document.activeElement.id") == "reviewer", key
            assert page.input_value("#reviewer") == "", key
        # typed in the field (the last key focused it), the same keys are text, not shortcuts
        page.keyboard.type("ra")
        assert page.input_value("#reviewer") == "ra"
        assert page.get_attribute("#decide", "data-probe") == probe  # still here, undecided
        page.keyboard.press("Escape")
        with page.expect_navigation():
            page.keyboard.press("a")
        context.close()
    added = read_reviews(run_dir)[before:]
    assert [(r["probe_id"], r["reviewer"], r["status"]) for r in added] == [
        (probe, "ra", "accepted")
    ]


def test_undo_in_the_browser_brings_back_a_message_edited_in_the_review_file(browser, tmp_path):
    """A message of an agent transcript edited through the review file, the probe then accepted
    in the app: the undo key restores the edited message (it was refused with "edited_text and
    edited_target are both empty", and the edit was lost to the accept)."""
    run_dir = write_agent_run(tmp_path / "agent")
    scale = Scale(kind="binary", labels=LABELS)
    out = tmp_path / "review.yaml"
    export_review(run_dir, out, scale)
    entries = yaml.safe_load(out.read_text())
    entries[0].update(decision="edit", edited_messages={FINAL: "The sum is 9."}, reviewer="ana")
    out.write_text(yaml.safe_dump(entries))
    import_review(run_dir, out, scale)
    with Server(run_dir) as server:
        context = browser.new_context()
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(server.login)
        page.wait_for_selector("body[data-ready]")
        page.fill("#reviewer", "bo")
        page.press("#reviewer", "Escape")
        page.goto(f"{server.base}/probe/{quote(MISSED)}")
        page.wait_for_selector("body[data-ready]")

        def probe_side() -> str:
            return " ".join(page.locator(".transcript tbody tr td:nth-child(3)").all_inner_texts())

        assert "The sum is 9." in probe_side()
        with page.expect_navigation():
            page.keyboard.press("a")  # accept: the generated transcript, and the next probe
        page.wait_for_selector("body[data-ready]")
        assert page.get_attribute("#decide", "data-probe") != MISSED
        page.keyboard.press("u")
        page.wait_for_url(f"**/probe/{quote(MISSED)}", timeout=10_000)
        page.wait_for_selector("body[data-ready]")
        assert page.text_content("#status").strip() == "edited"
        assert "The sum is 9." in probe_side() and "The sum is 12." not in probe_side()
        assert errors == []
        context.close()
    assert [(r["status"], r["reviewer"], r.get("messages")) for r in read_reviews(run_dir)] == [
        ("edited", "ana", {str(FINAL): "The sum is 9."}),
        ("accepted", "bo", None),
        ("edited", "bo", {str(FINAL): "The sum is 9."}),
    ]
