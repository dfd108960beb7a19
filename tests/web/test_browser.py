"""The review app and report.html in headless chromium: hostile text stays inert, requests
without the token or the CSRF token change nothing, concurrent reviewers lose nothing, and the
report opens offline without a single external request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.reliability.review._review import read_reviews

pytestmark = pytest.mark.browser

LOOP = """async ([who, probes, n]) => {
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  let conflicts = 0;
  for (let i = 0; i < n; i++) {
    const id = probes[i % probes.length];
    for (;;) {
      const state = await (await fetch("/api/probe/" + encodeURIComponent(id))).json();
      const r = await fetch("/api/decide", {
        method: "POST",
        headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf},
        body: JSON.stringify({probe_id: id, version: state.version, reviewer: who,
                              decision: i % 2 ? "accept" : "reject", note: who + "-" + i}),
      });
      if (r.status === 200) break;
      if (r.status !== 409) throw new Error("status " + r.status);
      conflicts++;
    }
  }
  window.loopDone = {conflicts};
}"""


@pytest.fixture
def page(browser, server):
    context = browser.new_context(viewport={"width": 1180, "height": 760})
    page = context.new_page()
    page.dialogs = []
    page.errors = []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.goto(server.login)
    page.wait_for_selector("body[data-ready]")
    yield page
    context.close()


def _xss_probe(run_dir: Path) -> str:
    for line in (run_dir / "probes.jsonl").read_text().splitlines():
        probe = json.loads(line)
        if "<script>" in probe["response"]:
            return probe["id"]
    raise AssertionError("no hostile probe in the fixture run")


def test_hostile_text_renders_as_text_and_runs_nothing(page, server, harness_run):
    pid = _xss_probe(harness_run)
    page.goto(f"{server.base}/?test=paraphrase")
    with page.expect_navigation():
        page.click(f'a[href*="{pid.split(":")[1]}"]')
    page.wait_for_selector("body[data-ready]")
    page.keyboard.press("e")
    page.click("details:has(summary:text('reasoning')) >> nth=1")
    text = page.text_content("#probe-text")
    assert "<script>alert(1)</script>" in text and "<img src=x onerror=alert(1)>" in text
    edited = page.input_value("#edited_text")
    assert (
        edited
        == json.loads(
            next(x for x in (harness_run / "probes.jsonl").read_text().splitlines() if pid in x)
        )["response"]
    )  # the </textarea> inside did not break out of the edit box
    assert "My reasoning: <script>" in page.text_content(".verdicts")
    found = page.evaluate(
        """() => ({
          scripts: document.scripts.length,
          img: document.querySelectorAll('img').length,
          svg: document.querySelectorAll('svg').length,
          js: document.querySelectorAll('a[href^="javascript"]').length,
          areas: document.querySelectorAll('textarea').length })"""
    )
    assert found == {"scripts": 1, "img": 0, "svg": 0, "js": 0, "areas": 1}
    page.wait_for_timeout(200)
    assert page.dialogs == [] and page.errors == []


def test_a_probe_a_judge_gets_wrong_is_found_by_the_filter(page, server, shots):
    page.goto(f"{server.base}/?flag=disagrees&test=verbosity_long")
    rows = page.locator("table.queue tbody tr")
    assert rows.count() >= 1 and "≠ target" in rows.first.inner_text()
    with page.expect_navigation():
        page.keyboard.press("j")  # the first probe of the filtered queue
    page.wait_for_selector("body[data-ready]")
    assert "verbosity_long" in page.get_attribute("#decide", "data-probe")
    assert "disagrees" in page.text_content(".verdicts")
    assert page.locator("#probe-text ins").count() >= 1  # the expansion is highlighted
    page.fill("#reviewer", "ana")
    page.screenshot(path=str(shots / "review.png"))


def test_requests_without_token_or_csrf_are_refused_and_change_nothing(
    browser, page, server, harness_run
):
    reviews = harness_run / "reviews.jsonl"
    before = reviews.read_bytes() if reviews.exists() else b""
    stranger = browser.new_context()
    anon = stranger.new_page()
    assert anon.goto(f"{server.base}/").status == 403
    assert anon.goto(f"{server.base}/static/review.js").status == 403
    assert anon.goto(f"{server.base}/?token=guess").status == 403
    stranger.close()
    pid = _xss_probe(harness_run)
    statuses = page.evaluate(
        """async (id) => {
          const body = JSON.stringify({probe_id: id, version: 0, decision: "accept", reviewer: "x"});
          const post = (headers) => fetch("/api/decide", {method: "POST", body,
              headers: {"Content-Type": "application/json", ...headers}}).then(r => r.status);
          return [await post({}), await post({"X-CSRF-Token": "forged"})];
        }""",
        pid,
    )
    assert statuses == [403, 403]
    assert (reviews.read_bytes() if reviews.exists() else b"") == before


def test_two_reviewers_post_100_decisions_concurrently_and_none_is_lost(
    browser, server, harness_run
):
    before = len(read_reviews(harness_run))
    probes = [json.loads(x)["id"] for x in (harness_run / "probes.jsonl").read_text().splitlines()]
    pages = []
    for who in ("ana", "bo"):
        context = browser.new_context()  # its own cookies: its own session and CSRF token
        p = context.new_page()
        p.goto(server.login)
        p.wait_for_selector("body[data-ready]")
        pages.append((who, p))
    for who, p in pages:  # start both loops, then wait: they run at the same time
        p.evaluate(f"() => {{ ({LOOP})([{json.dumps(who)}, {json.dumps(probes[:6])}, 50]); }}")
    for _, p in pages:
        p.wait_for_function("() => window.loopDone !== undefined", timeout=60_000)
    for _, p in pages:
        p.context.close()

    lines = (harness_run / "reviews.jsonl").read_text().splitlines()
    records = [json.loads(x) for x in lines]  # every line is whole JSON
    new = records[before:]
    assert len(new) == 100
    assert sorted(r["note"] for r in new) == sorted(
        f"{who}-{i}" for who in ("ana", "bo") for i in range(50)
    )
    # stale views were refused with 409 and retried (window.loopDone.conflicts): none written
    assert all(r["reviewer"] in ("ana", "bo") and r["timestamp"] for r in new)


def test_report_opens_offline_with_no_external_request(browser, harness_run, server, shots):
    context = browser.new_context(viewport={"width": 1180, "height": 800})
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))
    context.route(
        "**/*",
        lambda route: (
            route.continue_() if route.request.url.startswith(("file:", "data:")) else route.abort()
        ),
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto((harness_run / "report.html").as_uri())
    widths = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.naturalWidth)")
    assert len(widths) == 2 and all(w > 0 for w in widths)  # heatmap and cost plot
    row = page.locator("details.row").nth(8)
    row.locator("summary").click()
    assert row.evaluate("d => d.open") and row.locator(".body").is_visible()
    assert "on the probe" in row.locator(".body").inner_text()
    # sorting is done by the inline script the page's CSP allows by hash
    page.click("button.sort[data-col='1']")
    page.click("button.sort[data-col='1']")  # descending
    tests = page.eval_on_selector_all("details.row", "ds => ds.map(d => d.dataset.k1)")
    assert tests == sorted(tests, reverse=True) and tests[0] == "verbosity_long"
    page.click("button.sort[data-col='0']")
    page.evaluate("() => window.scrollTo(0, 0)")
    page.screenshot(path=str(shots / "report.html.png"))
    assert all(u.startswith(("file:", "data:")) for u in requests), requests
    assert errors == []
    context.close()

    # the review app links to the same report, under the report's own policy
    review = browser.new_context()
    p = review.new_page()
    p.goto(server.login)
    with p.expect_popup() as popup:
        p.click("a.report-link")
    report = popup.value
    report.wait_for_load_state()
    assert report.eval_on_selector("img", "i => i.naturalWidth") > 0
    report.click("button.sort[data-col='1']")
    assert report.eval_on_selector(".sort[data-col='1']", "b => b.dataset.dir") == "asc"
    review.close()
