"""The console's HTTP side: a WSGI middleware that answers ``/_inferbus/...`` and hands every
other request to the AWS endpoint it wraps.

Security, for a page any other web page in the same browser could try to reach:

- **Host check.** Every console request must name the address the server listens on (``localhost``
  or ``127.0.0.1`` when bound to loopback) in its ``Host`` header, so a DNS-rebinding page
  cannot read the console (nor its token) as if it were same-origin.
- **Token.** The page carries a random per-server token; the mutating endpoints (approve,
  reject, redrive) take only ``POST`` with ``Content-Type: application/json`` and the token in
  ``X-Inferbus-Token``. Another origin cannot read the page to learn it, and a cross-origin
  request with that header or content type needs a CORS preflight the console never grants.
  A present ``Origin`` must be the console's own.
- **Other sites, on every path.** moto's endpoint grants any origin's CORS preflight, so any page
  the user opens could read the review queue's task tokens and answer them through the AWS API,
  around the console. A browser request from a page that is not on loopback (nor on the address
  the server listens on) is refused on every path: an ``Origin`` elsewhere, or no ``Origin`` and
  ``Sec-Fetch-Site: cross-site`` (an image, a link). AWS clients send neither header; a web
  app on ``localhost`` using the JavaScript SDK still works (LocalStack allows the same).
- **Rendering.** The script builds the page with ``textContent`` only (no HTML from data), and
  a Content-Security-Policy allows no inline script and no other origin; the page may not be framed.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Callable, Iterable
from importlib import resources
from string import Template
from typing import Any
from urllib.parse import urlsplit

from ..twin_http import INGEST_PATH
from .state import ConsoleError, ConsoleState

__all__ = ["CONSOLE_PATH", "ConsoleApp"]

CONSOLE_PATH = "/_inferbus/"
TOKEN_HEADER = "X-Inferbus-Token"
MAX_BODY_BYTES = 64 * 1024  # a decision or a redrive is a few hundred bytes
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
LOOPBACK_HOSTNAMES = ("localhost", "127.0.0.1", "::1")
WILDCARD_HOSTS = ("0.0.0.0", "::", "")
STATIC = {"console.js": "text/javascript; charset=utf-8", "console.css": "text/css; charset=utf-8"}
HEADERS = [
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
    ("Content-Security-Policy", ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                                 "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")),
]
StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class Refused(Exception):
    """A console request answered with an error status and a one-line reason."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def allowed_hosts(host: str, port: int) -> frozenset[str] | None:
    """The ``Host`` header values the console answers; None: any (bound to every address)."""
    if host in WILDCARD_HOSTS:
        return None
    names = {*LOOPBACK_NAMES} if host in ("127.0.0.1", "localhost", "::1") else {host if ":" not in host else f"[{host}]"}
    return frozenset(f"{name}:{port}" for name in names)


class ConsoleApp:
    """``/_inferbus/`` in front of ``inner`` (moto's WSGI app).

    Parameters
    ----------
    state
        What the console reads and acts on.
    inner
        The application every other path goes to.
    host, port
        Where the server listens (the ``Host`` values the console accepts).
    """

    def __init__(self, state: ConsoleState, inner: WsgiApp, *, host: str, port: int) -> None:
        self.state = state
        self.inner = inner
        self.token = secrets.token_urlsafe(32)
        self.hosts = allowed_hosts(host, port)
        self.local_names = None if host in WILDCARD_HOSTS else frozenset({*LOOPBACK_HOSTNAMES, host})
        self.reads: dict[str, Callable[[], Any]] = {
            "overview": state.overview, "dead-letters": state.dead_letters, "reviews": state.reviews,
            "executions": state.executions, "events": state.recent_events,
        }
        self.actions: dict[str, Callable[[dict[str, Any]], Any]] = {
            "reviews/decide": self._decide, "dead-letters/redrive": self._redrive,
        }

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        headers = list(HEADERS)
        try:
            self._refuse_other_sites(environ)
            if not (path + "/").startswith(CONSOLE_PATH) or (path + "/").startswith(INGEST_PATH):
                return self.inner(environ, start_response)  # AWS APIs, and the ingest endpoint (inferbus.twin_http)
            self._check_host(environ)
            if path == CONSOLE_PATH.rstrip("/"):
                status, content_type, body = "308 Permanent Redirect", "text/plain", b""
                headers.append(("Location", CONSOLE_PATH))
            else:
                status, content_type, body = self._route(environ, path)
        except Refused as refused:
            status, content_type, body = refused.status, "application/json", json.dumps({"error": str(refused)}).encode()
        except ConsoleError as error:
            status, content_type, body = "400 Bad Request", "application/json", json.dumps({"error": str(error)}).encode()
        start_response(status, [("Content-Type", content_type), ("Content-Length", str(len(body))), *headers])
        return [body]

    def _refuse_other_sites(self, environ: dict[str, Any]) -> None:
        """Refuse a request from another site's page in a browser (see the module doc)."""
        origin = environ.get("HTTP_ORIGIN")
        if origin is None:
            if environ.get("HTTP_SEC_FETCH_SITE") == "cross-site":
                raise Refused("403 Forbidden", "a request from another site's page is refused")
            return
        name = urlsplit(origin).hostname if origin.startswith(("http://", "https://")) else None
        # Bound to every address: a page on the address the request was sent to is on this machine too.
        local = self.local_names or {*LOOPBACK_HOSTNAMES, urlsplit("http://" + environ.get("HTTP_HOST", "")).hostname}
        if name not in local:
            raise Refused("403 Forbidden", f"a request from a page at {origin} is refused: only pages on this machine may call")

    def _check_host(self, environ: dict[str, Any]) -> None:
        if self.hosts is not None and environ.get("HTTP_HOST", "") not in self.hosts:
            raise Refused("403 Forbidden", f"the console answers only at {', '.join(sorted(self.hosts))}")

    def _route(self, environ: dict[str, Any], path: str) -> tuple[str, str, bytes]:
        method = environ.get("REQUEST_METHOD", "GET")
        name = path.removeprefix(CONSOLE_PATH)
        if name.startswith("api/"):
            endpoint = name.removeprefix("api/")
            if endpoint in self.reads:
                self._expect(method, "GET")
                return "200 OK", "application/json", json.dumps(self.reads[endpoint](), default=str).encode()
            if endpoint in self.actions:
                self._expect(method, "POST")
                return "200 OK", "application/json", json.dumps(self.actions[endpoint](self._body(environ))).encode()
            raise Refused("404 Not Found", f"no console endpoint {endpoint!r}")
        self._expect(method, "GET")
        if name == "":
            page = Template(_static("index.html")).substitute(token=self.token)
            return "200 OK", "text/html; charset=utf-8", page.encode()
        if name in STATIC:
            return "200 OK", STATIC[name], _static(name).encode()
        raise Refused("404 Not Found", f"no console page {name!r}")

    @staticmethod
    def _expect(method: str, allowed: str) -> None:
        if method != allowed:
            raise Refused("405 Method Not Allowed", f"use {allowed}")

    def _body(self, environ: dict[str, Any]) -> dict[str, Any]:
        """A mutating request's JSON body, once it has shown it comes from the console's own page."""
        origin = environ.get("HTTP_ORIGIN")
        if origin is not None and origin != f"{environ.get('wsgi.url_scheme', 'http')}://{environ.get('HTTP_HOST', '')}":
            raise Refused("403 Forbidden", "cross-origin request refused")
        if not hmac.compare_digest(environ.get("HTTP_" + TOKEN_HEADER.upper().replace("-", "_"), ""), self.token):
            raise Refused("403 Forbidden", f"missing or wrong {TOKEN_HEADER}: reload the console page")
        if environ.get("CONTENT_TYPE", "").split(";")[0].strip() != "application/json":
            raise Refused("415 Unsupported Media Type", "send application/json")
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = -1
        if not 0 < length <= MAX_BODY_BYTES:
            raise Refused("400 Bad Request", f"a JSON body of 1 to {MAX_BODY_BYTES} bytes is expected")
        try:
            body = json.loads(environ["wsgi.input"].read(length))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise Refused("400 Bad Request", "the body is not JSON") from None
        if not isinstance(body, dict):
            raise Refused("400 Bad Request", "the body must be a JSON object")
        return body

    def _decide(self, body: dict[str, Any]) -> dict[str, str]:
        decision = body.get("decision")
        if decision not in ("approve", "reject"):
            raise ConsoleError("decision must be approve or reject")
        fields = {key: body.get(key) for key in ("workflow", "transaction_id", "reviewer")}
        if not all(isinstance(value, str) and value for value in fields.values()):
            raise ConsoleError("workflow, transaction_id and reviewer are required strings")
        note = body.get("note")
        return self.state.decide(fields["workflow"], fields["transaction_id"], approve=decision == "approve",
                                 reviewer=fields["reviewer"], note=note if isinstance(note, str) and note else None)

    def _redrive(self, body: dict[str, Any]) -> dict[str, Any]:
        queue = body.get("queue")
        if not isinstance(queue, str):
            raise ConsoleError("queue (the dead-letter queue's name) is required")
        return self.state.redrive(queue)


def _static(name: str) -> str:
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")
