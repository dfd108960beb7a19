"""The abstained items of a ``selective apply`` run in the review app: served
as a queue behind the same token and CSRF checks, a person's verdict recorded on the judges'
scale and kept across a restart, and a re-run of ``apply`` merging it into ``verdicts.jsonl``.
The run is the stub cascade of tests/decisions/test_selective.py (abstaining on i108, i111)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from assay.cli import main
from assay.web._app import create_app
from tests.decisions.test_selective import cli_json, finished_cascade
from tests.web.conftest import XSS, Server, open_first_item
from tests.web.test_report_parity import assert_same_sections


@pytest.fixture(scope="module")
def selective(tmp_path_factory) -> tuple[list[str], Path]:
    """(the apply command line, its run directory) of a finished stub cascade."""
    return finished_cascade(tmp_path_factory.mktemp("selective"))


def _client(run_dir: Path) -> tuple[TestClient, str]:
    app, keys = create_app(run_dir)
    client = TestClient(app, follow_redirects=False)
    assert client.get(f"/?token={keys.token}").status_code == 303
    csrf = re.search(r'name="csrf-token" content="([^"]+)"', client.get("/").text).group(1)
    return client, csrf


def _post(client: TestClient, csrf: str | None, **body) -> object:
    headers = {"X-CSRF-Token": csrf} if csrf else {}
    return client.post("/api/verdict", json=body, headers=headers)


def _verdicts(run_dir: Path) -> dict[str, dict]:
    lines = (run_dir / "verdicts.jsonl").read_text().splitlines()
    return {r["item_id"]: r for r in map(json.loads, lines)}


def test_abstained_items_get_a_human_verdict_that_survives_a_restart_and_a_rerun(
    selective, tmp_path, monkeypatch
):
    apply, run_dir = selective
    before = _verdicts(run_dir)
    assert [k for k, r in before.items() if r["source"] is None] == ["i108", "i111"]
    assert {r["source"] for r in before.values()} == {"cheap", "strong", None}

    app, _ = create_app(run_dir)
    anon = TestClient(app, follow_redirects=False)
    for path in ("/", "/item/i108", "/api/item/i108", "/static/abstained.js"):
        assert anon.get(path).status_code == 403, path
    client, csrf = _client(run_dir)
    queue = client.get("/").text
    assert re.findall(r'<a href="/item/(i\d+)"', queue) == ["i108", "i111"]
    assert "0 / 2 abstained items with a human verdict" in queue
    page = client.get("/item/i108").text
    assert "What colour is item 108?" in page and "Item 108 is blue." in page
    for shown in ("cheap", "strong", "0.5500", "0.9500", "0.6000", "0.9000"):
        assert shown in page  # each stage's verdict beside its confidence and threshold

    body = {"item_id": "i108", "verdict": "True", "reviewer": "ana", "note": "blue is a colour"}
    assert _post(client, None, **body, version=0).status_code == 403  # no CSRF token
    assert _post(client, csrf, **{**body, "reviewer": " "}, version=0).json()["field"] == "reviewer"
    assert (
        _post(client, csrf, **{**body, "verdict": "maybe"}, version=0).json()["field"] == "verdict"
    )
    assert _post(client, csrf, **{**body, "item_id": "i100"}, version=0).status_code == 422
    assert not (run_dir / "human_verdicts.jsonl").exists()  # nothing written by a refusal
    ok = _post(client, csrf, **body, version=0)
    assert ok.status_code == 200 and ok.json()["record"]["score"] == 1
    stale = _post(client, csrf, **{**body, "verdict": "False"}, version=0)
    assert stale.status_code == 409 and stale.json()["conflict"]["reviewer"] == "ana"

    client, csrf = _client(run_dir)  # a restart: a new app on the same directory
    queue = client.get("/").text
    assert re.findall(r'<a href="/item/(i\d+)"', queue) == ["i111", "i108"]  # pending first
    assert "1 / 2 abstained items with a human verdict" in queue
    assert client.get("/api/item/i108").json()["version"] == 1
    assert "blue is a colour" in client.get("/item/i108").text

    monkeypatch.chdir(selective[1].parents[1])
    out = cli_json(apply)  # finished: re-read, no LM call; the human verdicts merged
    assert out["human_verdicts"] == 1
    after = _verdicts(run_dir)
    assert after["i108"] == {**after["i108"], "source": "human", "score": 1, "reviewer": "ana"}
    assert after["i111"]["source"] is None and after["i111"]["score"] is None
    assert {k: r for k, r in after.items() if k not in ("i108",)} == {
        k: r for k, r in before.items() if k != "i108"
    }
    report = (run_dir / "report.md").read_text()
    assert "Final verdicts" in report and "| human | True | 1 |" in report
    assert_same_sections(run_dir, "Final verdicts")

    back = {"item_id": "i108", "verdict": None, "reviewer": "ana"}
    assert _post(client, csrf, **back, version=1).status_code == 200  # taken back: pending
    assert "0 / 2 abstained items with a human verdict" in client.get("/").text
    assert _post(client, csrf, **back, version=2).json()["field"] == "verdict"  # nothing to take
    assert cli_json(apply)["human_verdicts"] == 0
    assert _verdicts(run_dir)["i108"]["source"] is None


def test_a_verdict_or_an_item_added_by_hand_is_refused(selective, tmp_path, monkeypatch, capsys):
    """The human verdicts become final verdicts: a line written into human_verdicts.jsonl past
    the review app (a hand-made verdict with no reviewer, an edited label) was merged as given;
    an item appended to abstained.jsonl (one the cascade kept) was open to review. Each is
    refused now, in one line naming the file (and the row)."""
    from assay.cli import main

    apply, original = selective
    run_dir = tmp_path / "run"
    shutil.copytree(original, run_dir)
    (run_dir / "human_verdicts.jsonl").unlink(missing_ok=True)
    client, csrf = _client(run_dir)
    body = {"item_id": "i108", "verdict": "True", "reviewer": "ana"}
    assert _post(client, csrf, **body, version=0).status_code == 200
    path = run_dir / "human_verdicts.jsonl"
    signed = path.read_text()
    forged = {"item_id": "i111", "score": 0, "label": "True", "reviewer": "", "timestamp": "x"}
    path.write_text(signed + json.dumps(forged) + "\n")
    from assay.decisions.selective.review import refresh_verdicts

    with pytest.raises(
        Exception, match=r"human_verdicts.jsonl, row 2: verdict on item 'i111' is not signed"
    ):
        refresh_verdicts(run_dir)
    path.write_text(
        signed.replace('"label": "True"', '"label": "False"').replace('"score": 1', '"score": 0')
    )
    with pytest.raises(Exception, match=r"row 1: verdict on item 'i108' is not signed"):
        refresh_verdicts(run_dir)
    path.write_text(signed)
    assert refresh_verdicts(run_dir) == (1, 2)
    queue = run_dir / "abstained.jsonl"
    kept = json.loads(queue.read_text().splitlines()[0]) | {"item_id": "i100"}
    queue.write_text(queue.read_text() + json.dumps(kept) + "\n")
    assert main(["review", "export", str(run_dir), "-o", str(tmp_path / "out.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert "abstained.jsonl is not the file the run sealed" in err and "\n" not in err


def _reseal(run_dir: Path) -> None:
    """Seal ``run_dir`` again over its files as they now are (a test standing in for a run
    that judged other texts)."""
    from assay.decisions.selective._report import SEALED_FILES
    from assay.runs._seal import seal

    state = json.loads((run_dir / "run.json").read_text())
    state["seal"] = seal(
        run_dir,
        SEALED_FILES,
        kind=state["kind"],
        run_hash=state["run_hash"],
        instance=state.get("instance"),
    )
    (run_dir / "run.json").write_text(json.dumps(state))


def test_judged_text_of_an_abstained_item_stays_text(selective, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(selective[1], run_dir)
    path = run_dir / "abstained.jsonl"
    records = [json.loads(x) for x in path.read_text().splitlines()]
    records[0].update(request=XSS, response=XSS)
    records[0]["stages"][1]["reasoning"] = XSS
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    _reseal(run_dir)  # as if the judged texts had been these (the queue is sealed)
    client, _ = _client(run_dir)
    for url in ("/", "/item/i108"):
        html = client.get(url).text
        assert "<script>alert" not in html and "<img src=x" not in html, url
        assert "<svg" not in html and 'href="javascript:' not in html, url
        assert html.count("<script") == 1  # only the app's own /static/abstained.js
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in client.get("/item/i108").text


def test_serve_refuses_a_directory_that_is_neither_run(tmp_path, capsys):
    assert main(["review", "serve", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "not a harness run directory" in err and "nor a selective apply run" in err


@pytest.mark.browser
def test_a_reviewer_records_a_verdict_in_the_browser(browser, selective, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(selective[1], run_dir)
    (run_dir / "human_verdicts.jsonl").unlink(missing_ok=True)
    with Server(run_dir) as server:
        page = browser.new_context().new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(server.login)
        page.wait_for_selector("body[data-ready]")
        page.fill("#reviewer", "ben")
        page.press("#reviewer", "Escape")
        with page.expect_navigation():
            page.click("table.queue tbody tr:first-child a")
        page.wait_for_selector("body[data-ready]")
        first = page.get_attribute("#verdict", "data-item")
        page.fill("#note", "not sure either")
        page.press("#note", "Escape")
        with page.expect_navigation():
            page.keyboard.press("1")  # the first value of the scale: False
        page.wait_for_selector("body[data-ready]")
        assert page.get_attribute("#verdict", "data-item") != first  # moved to the next one
        page.goto(server.base + "/")
        assert "1 / 2 abstained items with a human verdict" in page.inner_text("header")
    assert not errors
    (record,) = [json.loads(x) for x in (run_dir / "human_verdicts.jsonl").read_text().splitlines()]
    assert (record["item_id"], record["score"], record["reviewer"]) == (first, 0, "ben")
    assert record["note"] == "not sure either"


def test_a_verdict_key_pressed_before_the_reviewer_is_named_types_nothing(
    browser, selective, tmp_path
):
    """A digit with no reviewer named asks for the name and focuses that field; the digit is
    not typed into it."""
    run_dir = tmp_path / "run"
    shutil.copytree(selective[1], run_dir)
    (run_dir / "human_verdicts.jsonl").unlink(missing_ok=True)
    with Server(run_dir) as server:
        context, page = open_first_item(browser, server)
        page.keyboard.press("1")
        page.wait_for_selector("#message.error")
        assert page.evaluate("document.activeElement.id") == "reviewer"
        assert page.input_value("#reviewer") == ""
        context.close()
    assert not (run_dir / "human_verdicts.jsonl").exists()


@pytest.mark.browser
def test_a_long_item_id_wraps_instead_of_widening_the_page(browser, selective, tmp_path):
    """Ids come from the user's data: one of 300 letters made the queue 3,000 px wide, pushing
    the request, judges and verdict columns off screen, and the item's heading past the edge."""
    run_dir = tmp_path / "run"
    shutil.copytree(selective[1], run_dir)
    (run_dir / "human_verdicts.jsonl").unlink(missing_ok=True)
    path = run_dir / "abstained.jsonl"
    long_id = "long" + "é" * 300
    path.write_text(path.read_text().replace('"item_id": "i108"', f'"item_id": "{long_id}"'))
    _reseal(run_dir)
    with Server(run_dir) as server:
        page = browser.new_context(viewport={"width": 1200, "height": 800}).new_page()
        page.goto(server.login)
        page.wait_for_selector("body[data-ready]")
        assert long_id in page.content()
        width = "document.documentElement.scrollWidth"
        assert page.evaluate(width) <= 1200
        with page.expect_navigation():
            page.click('a[href*="/item/long"]')
        page.wait_for_selector("body[data-ready]")
        assert page.evaluate(width) <= 1200
