"""Who may use the review app: the per-server token, the session and its CSRF token, headers.

- The server prints a URL carrying a random token (``secrets.token_urlsafe``). The first
  request with it gets two HttpOnly, SameSite=Strict cookies — the token and a new random
  session id — and a redirect to the same URL without the token (so it stays out of the
  history and of any Referer). Every later request must carry the token cookie: 403 otherwise.
- Every state-changing request (POST) must carry the session's CSRF token in the
  ``X-CSRF-Token`` header: an HMAC of the session id under a per-server secret, put in the
  page. 403 otherwise, before any handler runs, so nothing is written.
- Every response carries a strict Content-Security-Policy (no inline script, nothing from
  another origin) and ``no-store``: judged text is attacker-controlled.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import parse_qsl, urlencode

from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

TOKEN_COOKIE = "assay_token"
SESSION_COOKIE = "assay_session"
CSRF_HEADER = "x-csrf-token"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
SAFE_METHODS = ("GET", "HEAD")


class Keys:
    """The server's secrets: the access token it prints and the key CSRF tokens derive from."""

    def __init__(self, token: str | None = None):
        self.token = token or secrets.token_urlsafe(24)
        self._secret = secrets.token_bytes(32)

    def csrf(self, session: str) -> str:
        return hmac.new(self._secret, session.encode(), hashlib.sha256).hexdigest()

    def token_ok(self, value: str | None) -> bool:
        return bool(value) and hmac.compare_digest(value.encode(), self.token.encode())

    def csrf_ok(self, session: str | None, value: str | None) -> bool:
        return bool(session and value) and hmac.compare_digest(
            value.encode(), self.csrf(session).encode()
        )


def _denied(message: str) -> Response:
    return PlainTextResponse(message, status_code=403, headers=HEADERS)


class Guard(BaseHTTPMiddleware):
    """Token, session and CSRF checks in front of every route; security headers on every
    response."""

    def __init__(self, app, keys: Keys):
        super().__init__(app)
        self.keys = keys

    async def dispatch(self, request: Request, call_next) -> Response:
        given = request.query_params.get("token")
        if given is not None:
            if not self.keys.token_ok(given) or request.method not in SAFE_METHODS:
                return _denied("forbidden: wrong token")
            rest = [(k, v) for k, v in parse_qsl(request.url.query) if k != "token"]
            target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
            response = RedirectResponse(target, status_code=303, headers=HEADERS)
            for name, value in (
                (TOKEN_COOKIE, self.keys.token),
                (SESSION_COOKIE, request.cookies.get(SESSION_COOKIE) or secrets.token_urlsafe(24)),
            ):
                response.set_cookie(name, value, httponly=True, samesite="strict", path="/")
            return response
        if not self.keys.token_ok(request.cookies.get(TOKEN_COOKIE)):
            return _denied(
                "forbidden: open the URL (with its token) that `assay review serve` printed"
            )
        session = request.cookies.get(SESSION_COOKIE)
        if not session:
            return _denied("forbidden: no session; open the printed URL again")
        request.state.csrf = self.keys.csrf(session)
        if request.method not in SAFE_METHODS and not self.keys.csrf_ok(
            session, request.headers.get(CSRF_HEADER)
        ):
            return _denied("forbidden: missing or wrong CSRF token; reload the page")
        response = await call_next(request)
        for k, v in HEADERS.items():
            response.headers.setdefault(k, v)
        return response
