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
- Work a service needs before its first call (``before_first``), done once, when that call arrives:
  the stack's CloudFormation record, whose import of moto's CloudFormation (and with it EC2 and
  Auto Scaling) cost every start 1.3 s, though most runs never ask for it.

Example
-------
>>> routes = TwinRoutes(app=None, region="us-east-1", ingest=None)
>>> routes.signed_for({"HTTP_AUTHORIZATION": "AWS4-HMAC-SHA256 Credential=AKID/20261205/us-east-1/lambda/aws4_request, "
...                    "SignedHeaders=host, Signature=abc"})
('us-east-1', 'lambda')
"""

from __future__ import annotations

import functools
import json
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


MOTO_MISSING_ACTION = re.compile(r"The (?P<action>\w+) action has not been implemented")


# Signing names that are not the botocore service's name, for the services a twin's client calls.
SERVICE_SIGNED_AS = {"states": "stepfunctions", "monitoring": "cloudwatch", "email": "ses", "execute-api": "apigateway"}


@functools.cache
def _operations_signed_as(signing_name: str) -> frozenset[str]:
    """The operations of the AWS service whose requests are signed as ``signing_name`` (``states``: Step Functions).

    Its model is the one named so, or named by :data:`SERVICE_SIGNED_AS`; only for another name are all of
    botocore's models read (seconds).
    """
    import botocore.session
    from botocore.exceptions import UnknownServiceError

    session = botocore.session.get_session()
    for service in (SERVICE_SIGNED_AS.get(signing_name), signing_name):
        try:
            model = session.get_service_model(service) if service else None
        except UnknownServiceError:
            continue
        if model is not None and model.signing_name == signing_name:
            return frozenset(model.operation_names)
    return frozenset(operation for service in session.get_available_services()
                     if (model := session.get_service_model(service)).signing_name == signing_name
                     for operation in model.operation_names)


def unimplemented_answer(environ: Mapping[str, Any], start_response: StartResponse, signing_name: str,
                         reason: str) -> list[bytes]:
    """An AWS-shaped error for a call moto does not answer, instead of a 500 and a traceback.

    An operation the service has is ``501 NotImplemented`` (not retried by the SDKs: the caller hears at once
    that the twin lacks it); one it has not is ``400 UnknownOperationException``, as AWS answers it. The body
    is in the request's protocol: JSON for ``application/x-amz-json-*``, else the query protocol's XML.
    """
    from inferbus.runtime.moto_patches import MOTO_VERSION

    found = MOTO_MISSING_ACTION.search(reason)
    operation = "".join(part.capitalize() for part in found["action"].split("_")) if found else "this operation"
    if found and operation in _operations_signed_as(signing_name):
        status, code = "501 Not Implemented", "NotImplemented"
        message = (f"{operation} ({signing_name}) is not implemented by the local twin (moto {MOTO_VERSION} lacks "
                   "it); it works in AWS. See README.md, 'A local endpoint for any AWS client', for what the twin answers")
    else:
        status, code = "400 Bad Request", "UnknownOperationException"
        message = f"{operation} is not an operation of {signing_name}"
    if environ.get("CONTENT_TYPE", "").startswith("application/x-amz-json"):
        payload = json.dumps({"__type": code, "message": message}).encode()
        content_type = environ["CONTENT_TYPE"]
    else:
        from xml.sax.saxutils import escape

        payload = (f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>{escape(message)}"
                   "</Message></Error><RequestId>00000000-0000-0000-0000-000000000000</RequestId>"
                   "</ErrorResponse>").encode()
        content_type = "text/xml"
    start_response(status, [("Content-Type", content_type), ("Content-Length", str(len(payload))),
                            ("X-Amzn-ErrorType", code)])
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
    before_first
        By service name as a request's signature names it (``cloudformation``): what to run once,
        before the first request signed for that service is answered. Requests that arrive while
        it runs wait for it.
    """

    def __init__(self, app: Any, *, region: str, ingest: Ingest | None, deliveries: Deliveries | None = None,
                 before_first: Mapping[str, Callable[[], None]] | None = None) -> None:
        self.app = app
        self.region = region
        self.ingest = ingest
        self.deliveries = deliveries
        self._before_first = dict(before_first or {})
        self._before_first_lock = threading.Lock()

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
        if path.startswith(MOTO_API_PATH):
            return self.app(environ, start_response)
        signed = self.signed_for(environ)
        if signed is not None:
            self._prepare(signed[1])
            try:
                return self.app(environ, start_response)
            except NotImplementedError as missing:
                return unimplemented_answer(environ, start_response, signed[1], str(missing))
        return _json(start_response, "404 Not Found", {
            "message": f"{environ.get('REQUEST_METHOD', '?')} {path}: nothing here. This endpoint answers AWS API calls "
                       f"signed with SigV4 (the AWS CLI, an SDK) and the ingest endpoint at {INGEST_PATH} "
                       "(POST a CloudEvent, signed for lambda); see `inferbus serve --help`"})

    def _prepare(self, service: str) -> None:
        if service not in self._before_first:
            return
        with self._before_first_lock:  # a request that comes while it runs waits for it
            prepare = self._before_first.get(service)
            if prepare is not None:
                prepare()
                del self._before_first[service]  # kept until done: if it failed, the next request tries again

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


# How long a kept connection may stay idle before the server closes it (botocore reopens one as needed).
IDLE_CONNECTION_S = 120.0


def _keep_alive_handler() -> type:
    """moto's request handler (werkzeug's, keeping header names with underscores) answering down a kept connection.

    werkzeug's ``run_wsgi`` answers every request with ``Connection: close``, since after the answer it reads
    whatever the client sent next to discard an unread body, which on a kept connection would be the next
    request. Here the body is bounded by its ``Content-Length`` (or its chunked framing) and whatever the
    application left unread is read to that bound, no further (a request with neither has no body); so the
    connection stays in step and its thread reads the next request. A request that asks to close (``Connection:
    close``, HTTP/1.0), an answer without a ``Content-Length`` and an application error close it after the answer.
    """
    from moto.moto_server.werkzeug_app import MotoRequestHandler
    from werkzeug.wsgi import LimitedStream

    class KeepAliveRequestHandler(MotoRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = IDLE_CONNECTION_S
        # An answer of several writes (a streamed body): on a kept connection, Nagle's algorithm would hold each
        # until the client acknowledged the one before, which it delays (40 ms).
        disable_nagle_algorithm = True

        def run_wsgi(self) -> None:
            environ = self.environ = self.make_environ()
            chunked = environ.get("wsgi.input_terminated", False)
            if not chunked:
                length = int(environ.get("CONTENT_LENGTH") or 0)
                environ["wsgi.input"] = LimitedStream(self.rfile, length)
                environ["wsgi.input_terminated"] = True
            answer: dict[str, Any] = {}

            def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], None]:
                if exc_info and answer.get("sent"):
                    raise exc_info[1].with_traceback(exc_info[2])
                answer["status"], answer["headers"] = status, headers
                return write

            def write(data: bytes) -> None:
                if answer.get("sent"):
                    if data:
                        self.wfile.write(data)
                    return
                answer["sent"] = True
                status, headers = answer["status"], answer["headers"]
                code = int(status.split(" ", 1)[0])
                head = [f"{self.protocol_version} {status}\r\n", f"Server: {self.version_string()}\r\n",
                        f"Date: {self.date_time_string()}\r\n"]
                names = set()
                for name, value in headers:
                    head.append(f"{name}: {value}\r\n")
                    names.add(name.lower())
                    if name.lower() == "connection" and value.lower() == "close":
                        self.close_connection = True
                if "content-length" not in names and self.command != "HEAD" and code not in (204, 304):
                    head.append("Connection: close\r\n")  # the answer ends where the connection does
                    self.close_connection = True
                head.append("\r\n")
                # The head and the first of the body in one write: the client reads the answer in one piece.
                self.wfile.write("".join(head).encode("latin-1") + data)

            result: Any = ()
            try:
                result = self.server.app(environ, start_response)
                for data in result:
                    write(data)
                if not answer.get("sent"):
                    write(b"")
                self.wfile.flush()
            except (ConnectionError, TimeoutError):
                raise  # the client is gone: werkzeug's handle() lets it go quietly
            except Exception:
                import traceback

                self.server.log("error", "Error on request %s %s:\n%s", self.command, self.path, traceback.format_exc())
                self.close_connection = True
                if not answer.get("sent"):
                    answer.update(status="500 Internal Server Error", headers=[("Content-Length", "0")])
                    write(b"")
                    self.wfile.flush()
                return
            finally:
                if hasattr(result, "close"):
                    result.close()
                body = environ["wsgi.input"]
                if chunked:
                    while body.read(65536):  # to the terminating chunk
                        pass
                else:
                    body.exhaust()

        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            """One line per request is noise beside serve's own lines."""

    return KeepAliveRequestHandler


class TwinServer:
    """A WSGI application served over HTTP/1.1 on a thread of its own, connections kept alive.

    moto's own server (werkzeug's) closed the connection after every answer, so each SDK call paid a TCP
    connect, a thread start and a teardown, on the client's side too. Here a connection is kept, as AWS's
    endpoints keep it, and its thread reads request after request (:func:`_keep_alive_handler`). A
    client's drain of 1,000 SQS messages took 0.86× the time with 0.77× of the server's CPU, and a burst of
    valid events went in 1.4–1.7× as fast (docs/performance.md). There is one thread per connection, as
    before, so long polls hold up no one. waitress was measured too and not kept: it hands each request
    from its I/O thread to a worker and back, and under a burst of valid events, with the consumers holding
    the GIL, those hand-overs cost PutEvents a fifth of its rate.

    The socket is bound when the server is made (a taken port fails there); :meth:`start` serves,
    :meth:`stop` stops accepting and closes every kept connection.
    """

    def __init__(self, app: Any, *, host: str, port: int) -> None:
        from werkzeug.serving import ThreadedWSGIServer

        connections: set[Any] = set()
        lock = threading.Lock()

        class Server(ThreadedWSGIServer):
            def process_request(self, request: Any, client_address: Any) -> None:
                with lock:
                    connections.add(request)
                super().process_request(request, client_address)

            def shutdown_request(self, request: Any) -> None:
                with lock:
                    connections.discard(request)
                super().shutdown_request(request)

        self._connections, self._lock = connections, lock
        self._server = Server(host, port, app, handler=_keep_alive_handler())
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.serve_forever, name="inferbus-serve-http", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        import socket

        if self._thread is not None and self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()
        with self._lock:
            kept = list(self._connections)
        for connection in kept:  # its thread's next read ends; a request in flight answers into a closed socket
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def twin_server(routes: Callable[[Any], TwinRoutes], *, host: str, port: int) -> TwinServer:
    """moto's application with ``routes(moto_app)`` in front of it, served by :class:`TwinServer`."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    return TwinServer(routes(DomainDispatcherApplication(create_backend_app)), host=host, port=port)
