"""What ``inferbus serve`` answers besides the AWS APIs: the ingest endpoint, and a 404 for what is nothing.

moto's server answers any request it can read as an AWS API call, and anything else as S3 (a
``POST /`` got a ListBuckets answer) or with a traceback (``POST /events``). In front of it:

- ``/_inferbus/ingest/`` (and ``/_inferbus/ingest/events``): the stack's ingest endpoint, locally.
  In AWS it is a Lambda function URL with IAM auth (``IngestUrl``); here it is the same function,
  invoked in-process with the request as the URL would hand it over. Auth as the URL's: a request
  must be signed with SigV4 for the ``lambda`` service in the twin's region, or it gets the URL's
  ``403 {"Message": "Forbidden"}``. The signature itself is not checked against a secret: the twin,
  like moto, takes any credentials (a documented local difference, as for every AWS API here).
- A request that is no AWS API call (neither SigV4 in an ``Authorization`` header nor a presigned
  query) and not one of the twin's own paths gets ``404`` with what the endpoint does serve.

Example
-------
>>> routes = TwinRoutes(app=None, region="us-east-1", ingest=None)
>>> routes.signed_for({"HTTP_AUTHORIZATION": "AWS4-HMAC-SHA256 Credential=AKID/20261205/us-east-1/lambda/aws4_request, "
...                    "SignedHeaders=host, Signature=abc"})
('us-east-1', 'lambda')
"""

from __future__ import annotations

import json
import logging
import re
import threading
from http import HTTPStatus
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inferbus.runtime.deliveries import Deliveries

INGEST_PATH = "/_inferbus/ingest/"
MOTO_API_PATH = "/moto-api"
CREDENTIAL_SCOPE = re.compile(r"Credential=[^/,\s]+/\d{8}/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request")

# The ingest function's HTTP answer for one request: (status code, headers, body).
Ingest = Callable[[str, Mapping[str, str], bytes], tuple[int, Mapping[str, str], bytes]]
StartResponse = Callable[..., Any]


def _json(start_response: StartResponse, status: str, body: Mapping[str, Any]) -> list[bytes]:
    payload = json.dumps(body).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))])
    return [payload]


class TwinRoutes:
    """A WSGI middleware: the twin's own paths, then moto's app for every AWS API call.

    Parameters
    ----------
    app
        moto's WSGI application.
    region
        The twin's region: what a signed ingest request must name.
    ingest
        Runs the ingest function for ``(path, headers, body)``; ``None``: no ingest endpoint.
    deliveries
        Where a client's ``PutEvents`` hands its rule deliveries, to be made after it answered
        (:mod:`inferbus.runtime.deliveries`); ``None``: they are made inside the request.
    """

    def __init__(self, app: Any, *, region: str, ingest: Ingest | None, deliveries: Deliveries | None = None) -> None:
        self.app = app
        self.region = region
        self.ingest = ingest
        self.deliveries = deliveries

    @staticmethod
    def signed_for(environ: Mapping[str, Any]) -> tuple[str, str] | None:
        """``(region, service)`` of a SigV4 ``Authorization`` header or presigned query; ``None`` if unsigned."""
        found = CREDENTIAL_SCOPE.search(environ.get("HTTP_AUTHORIZATION", ""))
        if found is None:
            query = environ.get("QUERY_STRING", "")
            credential = re.search(r"X-Amz-Credential=([^&]+)", query)
            if credential is None:
                return None
            from urllib.parse import unquote

            found = CREDENTIAL_SCOPE.search("Credential=" + unquote(credential.group(1)))
            if found is None:
                return None
        return found["region"], found["service"]

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if self.deliveries is None:
            return self._route(environ, start_response)
        with self.deliveries.answering_client():
            return self._route(environ, start_response)

    def _route(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path.startswith(INGEST_PATH.rstrip("/")):
            return self._ingest(environ, start_response, path)
        if path.startswith(MOTO_API_PATH) or self.signed_for(environ) is not None:
            return self.app(environ, start_response)
        return _json(start_response, "404 Not Found", {
            "message": f"{environ.get('REQUEST_METHOD', '?')} {path}: nothing here. This endpoint answers AWS API calls "
                       f"signed with SigV4 (the AWS CLI, an SDK) and the ingest endpoint at {INGEST_PATH} "
                       "(POST a CloudEvent, signed for lambda); see `inferbus serve --help`"})

    def _ingest(self, environ: dict[str, Any], start_response: StartResponse, path: str) -> Iterable[bytes]:
        if self.ingest is None:
            return _json(start_response, "404 Not Found", {"message": "this template has no ingest endpoint"})
        if self.signed_for(environ) != (self.region, "lambda"):
            # What a function URL with AWS_IAM auth answers an unsigned request (or one signed for another
            # service or region).
            return _json(start_response, "403 Forbidden", {"Message": "Forbidden"})
        relative = "/" + path[len(INGEST_PATH):] if path.startswith(INGEST_PATH) else "/"
        if relative not in ("/", "/events"):
            return _json(start_response, "404 Not Found", {"message": f"the ingest endpoint takes POST / or /events, "
                                                                      f"not {relative}"})
        headers = {key[5:].replace("_", "-").lower(): value for key, value in environ.items() if key.startswith("HTTP_")}
        for key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            if environ.get(key):
                headers[key.replace("_", "-").lower()] = environ[key]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        status, answer_headers, payload = self.ingest(relative, headers, body)
        start_response(f"{status} {HTTPStatus(status).phrase}", [*answer_headers.items(), ("Content-Length", str(len(payload)))])
        return [payload]


# Requests served at once. A long poll (ReceiveMessage with WaitTimeSeconds, up to 20 s) holds one for its wait, so this
# many clients may long-poll at a time before a request queues behind them.
SERVER_THREADS = 64
# Open connections at once (each idle keep-alive connection counts); polled, so not bound by select()'s 1,024 descriptors.
SERVER_CONNECTIONS = 1000
# At a stop: how long the requests in flight may take to finish (an ordinary one takes milliseconds; a long poll is
# cut short, its client told the connection closed), then how long the server's thread may take to return.
REQUESTS_STOP_S = 1.0
THREAD_STOP_S = 5.0


class TwinServer:
    """A WSGI application served over HTTP/1.1 on a thread of its own, by waitress.

    Connections are kept alive between requests, as AWS's endpoints keep them, and requests run on a
    pool of :data:`SERVER_THREADS` threads. moto's own server (werkzeug's) closed the connection after
    every answer and started a new thread per request: each SDK call paid a TCP connect, a thread and a
    teardown (docs/performance.md: a client's drain of an SQS queue took 0.89× the time, with 0.81× of the
    server's CPU). One difference from it: waitress drops a request header whose name has an underscore
    (as WSGI cannot tell ``X_A`` from ``X-A``), where moto's server kept them for S3 metadata.

    The socket is bound when the server is made (a taken port fails there); :meth:`start` serves,
    :meth:`stop` closes every connection and waits for the thread.
    """

    def __init__(self, app: Any, *, host: str, port: int, threads: int = SERVER_THREADS) -> None:
        import waitress

        self._server = waitress.create_server(app, host=host, port=port, threads=threads,
                                              connection_limit=SERVER_CONNECTIONS, asyncore_use_poll=True)
        self._thread: threading.Thread | None = None
        self._stopping = False
        logging.getLogger("waitress").addFilter(self._quiet_when_stopping)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.run, name="inferbus-serve-http", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        from waitress import wasyncore

        self._stopping = True
        # Requests in flight finish first; then every socket is closed, and the loop, with nothing left to watch, returns.
        self._server.task_dispatcher.shutdown(timeout=REQUESTS_STOP_S)
        wasyncore.close_all(self._server._map, ignore_all=True)
        if self._thread is not None:
            self._thread.join(timeout=THREAD_STOP_S)

    def _quiet_when_stopping(self, record: logging.LogRecord) -> bool:
        """A request still running at the stop fails on its closed socket: not news to whoever stopped the server."""
        return not self._stopping


def twin_server(routes: Callable[[Any], TwinRoutes], *, host: str, port: int) -> TwinServer:
    """moto's application with ``routes(moto_app)`` in front of it, served by :class:`TwinServer`."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    return TwinServer(routes(DomainDispatcherApplication(create_backend_app)), host=host, port=port)
