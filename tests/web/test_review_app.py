"""The review app without a browser (Starlette's test client): access token, CSRF, escaping,
the shared decision path (validation, versions, undo), diffs, filters, and the command line."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml
from starlette.testclient import TestClient

from assay.cli import main
from assay.reliability._probe import Probe
from assay.reliability.review._review import read_reviews
from assay.reliability.review._review_files import export_review, import_review
from assay.report import diff_texts
from assay.scale import Scale
from assay.types import Item, Message
from assay.web._app import create_app
from assay.web._diff import diff_transcripts
from assay.web._security import CSP
from tests.agent_review_run import (
    CAUGHT,
    FINAL,
    LABELS,
    MISSED,
    RECIPIENT,
    RESULT,
    TOOL_EDIT,
    write_agent_run,
)
from tests.review_runs import name_run
from tests.web.conftest import XSS

SEED = Item(
    id="s1",
    request="What is 2 + 2?",
    response="I think 2 plus 2 equals 4.",
    transcript=[
        Message(role="user", content="Delete my old notes."),
        Message(role="assistant", content="I will ask first.", tool_calls=[]),
    ],
)
PROBES = [
    Probe(id="p:text", test="paraphrase", source_id="s1", response="2 plus 2 is 4.", target=1),
    Probe(id="p:xss", test="paraphrase", source_id="s1", response=XSS, target=1),
    Probe(
        id="p:agent",
        test="agent_perturbation",
        source_id="s1",
        transcript=[
            Message(role="user", content="Delete my old notes."),
            Message(role="assistant", content="Deleting all notes now."),
        ],
        target=0,
        meta={"intent": "make the agent act without confirmation"},
    ),
]


@pytest.fixture
def run(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    (d / "judgments").mkdir(parents=True)
    (d / "config.yaml").write_text(
        yaml.safe_dump({"name": "t", "scale": {"kind": "binary", "labels": ["bad", "good"]}})
    )
    name_run(d)
    (d / "seeds.jsonl").write_text(SEED.model_dump_json() + "\n")
    (d / "probes.jsonl").write_text("".join(p.model_dump_json() + "\n" for p in PROBES))
    judgments = [
        {"item_id": "source:s1", "judge": "j", "score": 1, "reasoning": "fine"},
        {"item_id": "p:text", "judge": "j", "score": 0, "reasoning": XSS},
        {"item_id": "p:xss", "judge": "j", "score": 1},
    ]
    (d / "judgments" / "j-0123abcd.jsonl").write_text(
        "".join(json.dumps(j) + "\n" for j in judgments)
    )
    return d


def _client(run: Path) -> tuple[TestClient, str]:
    app, keys = create_app(run)
    client = TestClient(app, follow_redirects=False)
    r = client.get(f"/?token={keys.token}")
    assert r.status_code == 303 and r.headers["location"] == "/"
    cookies = r.headers.get_list("set-cookie")
    assert len(cookies) == 2 and all("HttpOnly" in c and "SameSite=strict" in c for c in cookies)
    page = client.get("/")
    csrf = re.search(r'name="csrf-token" content="([^"]+)"', page.text).group(1)
    return client, csrf


def _post(client, csrf, path="/api/decide", **body):
    return client.post(path, json=body, headers={"X-CSRF-Token": csrf})


def test_every_route_needs_the_token_and_every_post_the_csrf_token(run):
    app, keys = create_app(run)
    anon = TestClient(app, follow_redirects=False)
    for path in ("/", "/probe/p:text", "/static/review.js", "/report", "/api/probe/p:text"):
        assert anon.get(path).status_code == 403, path
    assert anon.get("/?token=wrong").status_code == 403
    assert anon.post("/api/decide", json={}).status_code == 403

    client, csrf = _client(run)
    body = {"probe_id": "p:text", "version": 0, "decision": "accept", "reviewer": "ana"}
    assert client.post("/api/decide", json=body).status_code == 403  # no CSRF header
    bad = client.post("/api/decide", json=body, headers={"X-CSRF-Token": "0" * 64})
    assert bad.status_code == 403
    other, other_csrf = _client(run)  # another session's token is not this session's
    assert (
        client.post("/api/decide", json=body, headers={"X-CSRF-Token": other_csrf}).status_code
        == 403
    )
    assert not (run / "reviews.jsonl").exists()
    assert _post(client, csrf, **body).status_code == 200
    assert len(read_reviews(run)) == 1

    page = client.get("/")
    assert page.headers["content-security-policy"] == CSP
    assert page.headers["x-content-type-options"] == "nosniff"
    assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP


def test_judged_text_is_escaped_everywhere(run):
    client, _ = _client(run)
    for path in ("/probe/p:xss", "/probe/p:text", "/"):
        html = client.get(path).text
        assert "<script>alert" not in html and "<img src=x" not in html, path
        assert "<svg" not in html and 'href="javascript:' not in html, path
        assert "</textarea><script>" not in html, path
    html = client.get("/probe/p:xss").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # shown as text, in the diff
    assert "&lt;/textarea&gt;&lt;script&gt;alert(2)" in html  # and inside the edit box
    assert html.count("<script") == 1  # only the app's own /static/review.js


def test_decisions_go_through_the_shared_validation_and_versions(run):
    client, csrf = _client(run)

    def decide(**body):
        return _post(client, csrf, **{"probe_id": "p:text", "reviewer": "ana", **body})

    r = decide(version=0, decision="edit", edited_target="7")
    assert r.status_code == 422 and "7 is not on the binary" in r.json()["error"]
    r = decide(version=0, decision="edit", edited_text="2 plus 2 is 4.", edited_target="good")
    assert r.status_code == 422 and "nothing to edit" in r.json()["error"]
    assert decide(version=0, decision="accept", reviewer="").status_code == 422
    for field, value in (("reviewer", {"a": 1}), ("note", {"x": 1}), ("reviewer", ["ana"])):
        r = decide(version=0, decision="accept", **{field: value})  # was stored as "{'a': 1}"
        assert (
            r.status_code == 422
            and r.json()["field"] == field
            and "is not text" in r.json()["error"]
        )
    assert (
        _post(client, csrf, probe_id="nope", version=0, decision="accept", reviewer="a").status_code
        == 422
    )
    assert (
        client.post("/api/decide", content=b"not json", headers={"X-CSRF-Token": csrf}).status_code
        == 400
    )
    assert not (run / "reviews.jsonl").exists()  # nothing partial was written

    r = decide(version=0, decision="edit", edited_text="2 plus 2 is 5.", edited_target="bad")
    assert r.status_code == 200 and r.json()["version"] == 1
    r = decide(version=0, decision="reject", reviewer="bo")  # a stale view
    assert r.status_code == 409 and r.json()["conflict"]["reviewer"] == "ana"
    assert decide(version=1, decision="accept", reviewer="bo").status_code == 200

    # undo = a new decision restoring the state before the last one (ana's edit)
    r = _post(client, csrf, "/api/undo", probe_id="p:text", version=2, reviewer="bo")
    assert r.status_code == 200
    rec = r.json()["record"]
    assert (rec["status"], rec["response"], rec["target"], rec["undo_of"]) == (
        "edited",
        "2 plus 2 is 5.",
        0,
        2,
    )
    r = _post(client, csrf, "/api/undo", probe_id="p:text", version=2, reviewer="bo")
    assert r.status_code == 409  # undoing twice from the same view is refused
    lines = read_reviews(run)
    assert [x["status"] for x in lines] == ["edited", "accepted", "edited"]
    assert client.get("/api/probe/p:text").json()["version"] == 3
    assert "2 plus 2 is 5." in client.get("/probe/p:text").text


def test_probe_page_shows_diffs_verdicts_intent_and_filters(run):
    client, _ = _client(run)
    html = client.get("/probe/p:text").text
    assert "<del>" in html and "<ins>" in html
    assert "disagrees" in html and "fine" in html  # verdict vs target; source reasoning
    agent = client.get(f"/probe/{quote('p:agent')}").text
    assert "make the agent act without confirmation" in agent
    assert agent.count('<tr class="changed">') == 1 and agent.count('<tr class="same">') == 1
    queue = client.get("/?flag=disagrees").text
    assert "p:text" in queue and "p:xss" not in queue
    queue = client.get("/?flag=changed").text
    assert "p:text" in queue and "p:agent" not in queue
    assert "3 of 3 probes" in client.get("/").text
    assert "1 of 3 probes" in client.get("/?test=agent_perturbation").text


def test_diffs_mark_whitespace_changes_visibly():
    src, prb = diff_texts("one two\nthree", "one  two\n\nthree")
    assert [s.kind for s in src] == ["same", "del", "same", "del", "same"]
    ins = [s for s in prb if s.kind == "ins"]
    assert [s.marker for s in ins] == ["··", "↵↵"]
    assert "".join(s.text for s in prb) == "one  two\n\nthree"
    same = diff_texts("a b", "a b")
    assert all(s.kind == "same" for s in same[0] + same[1])
    msgs = diff_transcripts(SEED.transcript, PROBES[2].transcript + [Message(role="tool")])
    assert [m.changed for m in msgs] == [False, True, False]
    assert msgs[2].role_source is None and msgs[2].role_probe == "tool"


def test_command_line_errors_are_one_line(run, tmp_path, capsys):
    def error(*argv) -> str:
        assert main(["review", "serve", *map(str, argv)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("assay: error:") and "\n" not in err
        return err

    assert "not a harness run directory" in error(tmp_path)
    assert "not a loopback address" in error(run, "--host", "0.0.0.0")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        assert "the port is in use" in error(run, "--port", busy.getsockname()[1])
    with (run / "probes.jsonl").open("a") as fh:
        fh.write('{"id": "broken"\n')
    assert "probes.jsonl, row 4" in error(run)


def test_remote_host_needs_allow_remote_and_warns(run, monkeypatch, capsys):
    import uvicorn

    from assay.web import _serve

    real_bind = _serve.bind
    monkeypatch.setattr(_serve, "bind", lambda host, port: real_bind("127.0.0.1", 0))
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: None)
    assert main(["review", "serve", str(run), "--host", "192.0.2.1", "--allow-remote"]) == 0
    out = capsys.readouterr()
    assert "warning: listening on 192.0.2.1" in out.err
    assert re.search(r"open: http://192\.0\.2\.1:\d+/\?token=[\w-]{20,}", out.out)


def test_assay_web_imports_first_without_a_cycle():
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    for module in ("assay.web", "assay.web._app"):
        done = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=root)
        assert done.returncode == 0, module


@pytest.fixture
def agent_run(tmp_path: Path) -> Path:
    return write_agent_run(tmp_path / "agent")


def _verdict_cells(html: str) -> list[str]:
    """The judges table of a probe page: its header and first row, as text."""
    table = html.split('<section class="verdicts">')[1].split("</table>")[0]
    cells = re.findall(r"<t[hd]>(.*?)</t[hd]>", table, re.S)
    return [re.sub(r"<[^>]+>", "", c).strip() for c in cells]


def test_a_criterion_probe_is_compared_with_the_source_verdict_on_its_criterion(agent_run):
    """The source fails overall (it fails the recipient criterion) but passes the result
    criterion: a probe of the result criterion the judge still passes has not changed its
    verdict, one it now fails has."""
    client, _ = _client(agent_run)
    queue = client.get("/?flag=changed").text
    assert "1 of 3 probes" in queue
    assert CAUGHT in queue and MISSED not in queue and TOOL_EDIT not in queue
    assert "1 of 3 probes" in client.get("/?flag=disagrees").text  # MISSED: passes, not fails
    cells = _verdict_cells(client.get(f"/probe/{quote(MISSED)}").text)
    assert cells[:4] == [
        "judge",
        f"on the source: {RESULT}",
        f"on the probe: {RESULT}",
        "vs target",
    ]
    source, probe, versus = cells[5:8]
    assert source.startswith("passes (1)") and "overall fails (0)" in source
    assert probe == "passes (1)" and versus == "disagrees"


def test_a_probe_page_names_the_criterion_the_probe_was_made_for(agent_run, run):
    client, _ = _client(agent_run)
    facts = client.get(f"/probe/{quote(TOOL_EDIT)}").text.split("</dl>")[0]
    assert re.search(rf"<dt>criterion</dt>\s*<dd[^>]*>{RECIPIENT}</dd>", facts)
    queue = client.get("/").text
    assert f"agent_perturbation <small>{RECIPIENT}</small>" in queue
    other, _ = _client(run)  # a probe made for no criterion shows none
    assert "<dt>criterion</dt>" not in other.get("/probe/p:text").text


def _message_edited_in_the_file(run: Path, tmp_path: Path) -> tuple[TestClient, str]:
    """The missed probe's final message edited in an exported review file and imported (by
    ana); the app's client on the run."""
    out = tmp_path / "review.yaml"
    export_review(run, out, Scale(kind="binary", labels=LABELS))
    entries = yaml.safe_load(out.read_text())
    entries[0].update(decision="edit", edited_messages={FINAL: "The sum is 9."}, reviewer="ana")
    out.write_text(yaml.safe_dump(entries))
    import_review(run, out, Scale(kind="binary", labels=LABELS))
    return _client(run)


def test_a_target_edit_in_the_app_keeps_the_messages_edited_before(agent_run, tmp_path):
    """A message edited in the review file, then the target edited in the app (whose edit box
    has no messages): the new decision keeps the edited message (it carried none: the edit was
    lost, silently)."""
    client, csrf = _message_edited_in_the_file(agent_run, tmp_path)
    r = _post(
        client, csrf, probe_id=MISSED, version=1, decision="edit", edited_target="passes",
        reviewer="bo",
    )  # fmt: skip
    assert r.status_code == 200, r.text
    rec = r.json()["record"]
    assert (rec["status"], rec["target"]) == ("edited", 1)  # the generated probe's: 0
    assert rec["messages"] == {str(FINAL): "The sum is 9."}


def test_undo_after_a_decision_on_a_message_edit_restores_the_edited_message(agent_run, tmp_path):
    """A message edited in the review file, then accepted in the app: undo brings the edited
    message back (it was refused: the restoring edit carried no message)."""
    client, csrf = _message_edited_in_the_file(agent_run, tmp_path)

    def transcript() -> str:  # the probe's side of the transcript table, as text
        html = client.get(f"/probe/{quote(MISSED)}").text
        rows = html.split('<section class="transcript">')[1].split("</section>")[0]
        return re.sub(r"<[^>]+>", "", rows)

    assert "The sum is 9." in transcript()

    r = _post(client, csrf, probe_id=MISSED, version=1, decision="accept", reviewer="bo")
    assert r.status_code == 200
    assert "The sum is 9." not in transcript() and "The sum is 12." in transcript()
    r = _post(client, csrf, "/api/undo", probe_id=MISSED, version=2, reviewer="bo")
    assert r.status_code == 200, r.text
    rec = r.json()["record"]
    assert (rec["status"], rec["messages"], rec["undo_of"]) == (
        "edited",
        {str(FINAL): "The sum is 9."},
        2,
    )
    assert "The sum is 9." in transcript()
    assert 'id="status">edited<' in client.get(f"/probe/{quote(MISSED)}").text
    assert [(x["status"], x.get("messages")) for x in read_reviews(agent_run)] == [
        ("edited", {str(FINAL): "The sum is 9."}),
        ("accepted", None),
        ("edited", {str(FINAL): "The sum is 9."}),
    ]
