"""The review app on a run's review queue — a ``selective apply`` run's abstained items, or the
items an ``estimate --suggest`` run drew to be labelled —, pending first, one page each (the
request, the response or transcript, and what the run says of the item: every stage of the
cascade beside its threshold, or the judge's verdict and the item's sampling probability), and
one JSON endpoint that records a person's verdict on the scale — all through the decisions'
public read side, :class:`~assay.decisions.review_queue.ReviewQueue`. The security (token,
session, CSRF, headers) is the same :class:`~assay.web._security.Guard` in front.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from assay.decisions.review_queue import ReviewQueue, VerdictConflict
from assay.errors import DataError
from assay.report import REPORT
from assay.web._app import _env, _json, report_response, static


class QueueApp:
    """The pages and endpoints over one run's review queue (the checks are the Guard's)."""

    def __init__(self, run: ReviewQueue):
        self.run = run
        self.env = _env()

    def routes(self) -> list[Route]:
        return [
            Route("/", self.queue),
            Route("/item/{item_id:path}", self.item_page),
            Route("/api/verdict", self.verdict, methods=["POST"]),
            Route("/api/item/{item_id:path}", self.item_state),
            Route("/report", self.report),
            Route("/static/{name}", static),
            Route("/favicon.ico", lambda request: Response(status_code=204)),
        ]

    def page(self, request: Request, template: str, status_code: int = 200, **context) -> Response:
        items = context.pop("items", None) or self.run.items()
        body = self.env.get_template(template).render(
            run=self.run,
            csrf=request.state.csrf,
            counts=self.run.counts(items),
            total=len(items),
            items=items,
            has_report=(self.run.path / REPORT).is_file(),
            **context,
        )
        return HTMLResponse(body, status_code=status_code)

    def queue(self, request: Request) -> Response:
        return self.page(request, "abstained_queue.html")

    def item_page(self, request: Request) -> Response:
        item_id = request.path_params["item_id"]
        items = self.run.items()
        ids = [it.item_id for it in items]
        if item_id not in ids:
            return self.page(
                request,
                "abstained_error.html",
                404,
                items=items,
                message=f"no {self.run.item_noun} {item_id!r}",
            )
        at = ids.index(item_id)
        return self.page(
            request,
            "abstained_item.html",
            items=items,
            item=items[at],
            position=(at + 1, len(ids)),
            next_id=ids[at + 1] if at + 1 < len(ids) else None,
            prev_id=ids[at - 1] if at > 0 else None,
        )

    async def verdict(self, request: Request) -> Response:
        body = await _json(request)
        if isinstance(body, Response):
            return body
        return await run_in_threadpool(self._record, body)

    def _record(self, body: dict[str, Any]) -> Response:
        version = body.get("version")
        if not isinstance(version, int):
            return JSONResponse({"error": "missing version: reload the page"}, status_code=400)
        try:
            rec = self.run.record(
                body.get("item_id"),
                body.get("verdict"),
                reviewer=body.get("reviewer"),
                note=body.get("note"),
                version=version,
            )
        except VerdictConflict as exc:
            latest = exc.latest or {}
            conflict = {k: latest.get(k) for k in ("reviewer", "score", "timestamp")}
            return JSONResponse(
                {"error": str(exc), "conflict": {**conflict, "version": exc.count}}, 409
            )
        except DataError as exc:
            return JSONResponse({"error": str(exc), "field": exc.field}, status_code=422)
        return JSONResponse({"ok": True, "record": rec, "version": version + 1})

    def item_state(self, request: Request) -> Response:
        item_id = request.path_params["item_id"]
        history = [r for r in self.run.history() if r["item_id"] == item_id]
        latest = history[-1] if history else None
        return JSONResponse({"item_id": item_id, "version": len(history), "latest": latest})

    def report(self, request: Request) -> Response:
        return report_response(self.run.path) or self.page(
            request, "abstained_error.html", 404, message="this run has no report.html yet"
        )

    async def on_error(self, request: Request, exc: Exception) -> Response:
        return HTMLResponse(
            self.env.get_template("abstained_error.html").render(
                run=self.run, message=str(exc), total=0, counts={}
            ),
            status_code=500,
        )
