"""The review app: a queue of probes, one page per probe, and two JSON endpoints that record a
decision or undo one — both through
:func:`assay.reliability.record_decision`, the same validation and
locked append as ``assay review import``.

Pages are rendered on the server with Jinja2 (autoescaping on: judged text is untrusted);
the only script is ``static/review.js``, served by the app.
"""

from __future__ import annotations

import re
from html import unescape
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from assay.errors import AssayError, DataError, RunError
from assay.reliability import (
    FLAGS,
    STATUSES,
    ProbeView,
    ReviewConflict,
    ReviewRun,
    record_decision,
)
from assay.report import REPORT, diff_texts
from assay.web._diff import diff_transcripts
from assay.web._security import HEADERS, Guard, Keys

STATIC = {
    "review.css": "text/css; charset=utf-8",
    "review.js": "text/javascript; charset=utf-8",
    "abstained.js": "text/javascript; charset=utf-8",
}


def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("assay.web", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["q"] = lambda s: quote(str(s), safe="")
    return env


def _filters(request: Request) -> dict[str, str]:
    p = request.query_params
    return {k: p.get(k, "") for k in ("test", "status", "flag")}


def _query(filters: dict[str, str]) -> str:
    kept = {k: v for k, v in filters.items() if v}
    return f"?{urlencode(kept)}" if kept else ""


def _conflict_body(exc: ReviewConflict) -> dict[str, Any]:
    latest = exc.latest or {}
    return {
        "error": str(exc),
        "conflict": {
            "reviewer": latest.get("reviewer"),
            "status": latest.get("status"),
            "timestamp": latest.get("timestamp"),
            "version": exc.count,
        },
    }


def create_app(run_dir: Path, keys: Keys | None = None) -> tuple[Starlette, Keys]:
    """The review app for one run (validated now: a one-line error if it is not one): a
    harness run's probes, the abstained items of a ``selective apply`` run, or the items an
    ``estimate --suggest`` run drew to be labelled."""
    from assay.decisions.review_queue import LabelQueue, is_label_queue
    from assay.decisions.selective.review import AbstentionQueue, is_abstention_run

    review: ReviewApp | Any
    if is_abstention_run(run_dir) or is_label_queue(run_dir):
        from assay.web._abstained import QueueApp

        queue = AbstentionQueue if is_abstention_run(run_dir) else LabelQueue
        review = QueueApp(queue(run_dir))
    else:
        try:
            review = ReviewApp(ReviewRun(run_dir))
        except RunError as exc:
            if "not a harness run directory" not in str(exc):
                raise
            raise RunError(
                f"{exc}, nor a selective apply run (no abstained.jsonl), nor an estimate run "
                "with a label queue (no label_queue.jsonl)"
            ) from None
    keys = keys or Keys()
    app = Starlette(
        routes=review.routes(),
        middleware=[Middleware(Guard, keys=keys)],
        exception_handlers={AssayError: review.on_error},
    )
    return app, keys


class ReviewApp:
    """The pages and endpoints over one run: one method per route (the token and CSRF checks
    are the :class:`Guard` middleware's)."""

    def __init__(self, run: ReviewRun):
        self.run = run
        self.env = _env()

    def routes(self) -> list[Route]:
        return [
            Route("/", self.queue),
            Route("/probe/{probe_id:path}", self.probe_page),
            Route("/api/decide", self.decide, methods=["POST"]),
            Route("/api/undo", self.undo, methods=["POST"]),
            Route("/api/probe/{probe_id:path}", self.probe_state),
            Route("/report", self.report),
            Route("/static/{name}", static),
            Route("/favicon.ico", lambda request: Response(status_code=204)),
        ]

    def page(
        self, request: Request, template: str, status_code: int = 200, **context
    ) -> HTMLResponse:
        run = self.run
        views = context.pop("all_views", None) or run.views()
        body = self.env.get_template(template).render(
            run=run,
            csrf=request.state.csrf,
            counts=run.counts(views),
            total=len(views),
            has_report=(run.path / REPORT).is_file(),
            **context,
        )
        return HTMLResponse(body, status_code=status_code)

    def queue(self, request: Request) -> Response:
        filters = _filters(request)
        views = self.run.views()
        shown = self.run.select(views, **filters)
        return self.page(
            request,
            "queue.html",
            all_views=views,
            views=shown,
            filters=filters,
            query=_query(filters),
            tests=sorted({v.probe.test for v in views}),
            statuses=STATUSES,
            flags=FLAGS,
        )

    def probe_page(self, request: Request) -> Response:
        pid = request.path_params["probe_id"]
        filters = _filters(request)
        views = self.run.views()
        view = next((v for v in views if v.probe.id == pid), None)
        if view is None:
            return self.page(
                request, "error.html", 404, all_views=views, message=f"no probe {pid!r}"
            )
        queue = self.run.select(views, **filters)
        ids = [v.probe.id for v in queue]
        at = ids.index(pid) if pid in ids else -1
        nxt = ids[at + 1] if 0 <= at < len(ids) - 1 else (ids[0] if at < 0 and ids else None)
        prev = ids[at - 1] if at > 0 else None
        return self.page(
            request,
            "probe.html",
            all_views=views,
            view=view,
            diff=_diff(view),
            position=(at + 1, len(ids)),
            next_id=nxt if nxt != pid else None,
            prev_id=prev,
            filters=filters,
            query=_query(filters),
        )

    async def decide(self, request: Request) -> Response:
        body = await _json(request)
        if isinstance(body, Response):
            return body
        entry = {
            k: body.get(k)
            for k in ("probe_id", "decision", "edited_text", "edited_target", "reviewer", "note")
        }
        if entry["decision"] == "edit":  # the page edits no message: it keeps those edited
            entry["edited_messages"] = await run_in_threadpool(self._edited_messages, entry)
        return await run_in_threadpool(self._record, entry, body.get("version"))

    def _edited_messages(self, entry: dict[str, Any]) -> dict[str, str] | None:
        """The transcript messages the probe's latest decision edited (None: none), which an
        edit made on the page — its text or target — keeps."""
        history = self.run.history(entry["probe_id"])
        latest = history[-1] if history else None
        return latest.get("messages") if latest and latest["status"] == "edited" else None

    async def undo(self, request: Request) -> Response:
        body = await _json(request)
        if isinstance(body, Response):
            return body
        return await run_in_threadpool(self._undo, body)

    def _undo(self, body: dict[str, Any]) -> Response:
        """Undo = a new decision restoring the probe's state before its latest decision."""
        pid, version = body.get("probe_id"), body.get("version")
        if not isinstance(version, int) or version < 1:
            return JSONResponse({"error": "nothing to undo"}, status_code=400)
        reviews = self.run.reviews()
        history = [r for r in reviews if r["probe_id"] == pid]
        if len(history) != version:
            latest = history[-1] if history else None
            return JSONResponse(
                _conflict_body(ReviewConflict(str(pid), version, latest, len(history))), 409
            )
        last, before = history[-1], (history[-2] if len(history) > 1 else None)
        entry = _restore(before)
        entry.update(
            probe_id=pid,
            reviewer=body.get("reviewer"),
            note=f"undo of '{last['status']}' by {last.get('reviewer')} at {last.get('timestamp')}",
            undo_of=next(i for i, r in enumerate(reviews, start=1) if r is last),
        )
        return self._record(entry, version)

    def _record(self, entry: dict[str, Any], version: Any) -> Response:
        if not isinstance(version, int):
            return JSONResponse({"error": "missing version: reload the page"}, status_code=400)
        run = self.run
        try:
            rec = record_decision(
                run.path, entry, run.scale, version=version, probes=run.probes(), allow_reset=True
            )
        except ReviewConflict as exc:
            return JSONResponse(_conflict_body(exc), status_code=409)
        except DataError as exc:
            return JSONResponse({"error": str(exc), "field": exc.field}, status_code=422)
        return JSONResponse({"ok": True, "record": rec, "version": version + 1})

    def probe_state(self, request: Request) -> Response:
        pid = request.path_params["probe_id"]
        history = self.run.history(pid)
        latest = history[-1] if history else None
        return JSONResponse({"probe_id": pid, "version": len(history), "latest": latest})

    def report(self, request: Request) -> Response:
        return report_response(self.run.path) or self.page(
            request, "error.html", 404, message="this run has no report.html yet"
        )

    async def on_error(self, request: Request, exc: Exception) -> Response:
        return HTMLResponse(
            self.env.get_template("error.html").render(
                run=self.run, message=str(exc), total=0, counts={}
            ),
            status_code=500,
        )


def report_response(run_dir: Path) -> Response | None:
    """The run's report.html under its own policy, or None when it has none yet."""
    path = run_dir / REPORT
    if not path.is_file():
        return None
    html = path.read_text(encoding="utf-8")
    # The report's own policy (inline style and script allowed by hash only) replaces ours.
    m = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    csp = unescape(m.group(1)) if m else "default-src 'none'; img-src data:"
    return HTMLResponse(html, headers={**HEADERS, "Content-Security-Policy": csp})


def static(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in STATIC:
        return Response("not found", status_code=404, media_type="text/plain")
    data = resources.files("assay.web").joinpath("static", name).read_bytes()
    return Response(data, media_type=STATIC[name])


def _restore(decision: dict[str, Any] | None) -> dict[str, Any]:
    """The entry that brings a probe back to the state ``decision`` left it in (an edit's
    text, target and transcript messages)."""
    if decision is None or decision["status"] == "pending":
        return {"decision": "reset"}
    if decision["status"] == "edited":
        return {
            "decision": "edit",
            "edited_text": decision.get("response"),
            "edited_target": decision.get("target"),
            "edited_messages": decision.get("messages"),
        }
    return {"decision": {"accepted": "accept", "rejected": "reject"}[decision["status"]]}


async def _json(request: Request) -> dict[str, Any] | Response:
    try:
        body = await request.json()
    except ValueError:
        return JSONResponse({"error": "the body is not JSON"}, status_code=400)
    if not isinstance(body, dict):
        return JSONResponse({"error": "the body is not a JSON object"}, status_code=400)
    return body


def _diff(view: ProbeView) -> dict[str, Any]:
    seed = view.seed
    if view.probe.transcript is not None:
        return {
            "kind": "transcript",
            "messages": diff_transcripts(
                (seed.transcript or []) if seed else [], view.probe.transcript
            ),
        }
    source, probe = diff_texts(seed.response if seed else "", view.probe.response)
    return {"kind": "text", "source": source, "probe": probe}
