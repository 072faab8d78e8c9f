"""The one Lambda adapter: Lambda ``Invoke`` calls run the template's handlers in-process.

moto has no supported hook to run a Python handler, and its Step Functions interpreter
invokes Lambda tasks (``arn:aws:states:::lambda:invoke`` and plain function ARNs) through
``boto3.client("lambda")``, a client made from boto3's DEFAULT session on the
execution's worker thread (``moto/stepfunctions/parser/asl/utils/boto_client.py`` in
moto 5.2.5, the version ``pyproject.toml`` pins). This adapter registers a botocore
``before-call.lambda.Invoke`` handler on that default session; a handler that returns
``(http_response, parsed)`` short-circuits the call, so the request never reaches moto's
Lambda backend. If moto changes how its interpreter builds clients, this module (and
only it) must change: ``tests/functional/test_runtime_lambda_adapter.py`` tells.

Any client of the default session is covered, so a handler that calls ``Invoke`` on
another function of the template runs it in-process too. An ``Invoke`` that reaches moto
instead (a real client of ``inferbus serve`` over HTTP, or a client of another session) is
answered the same way through :data:`~.moto_patches.Hooks.invoke`. Invoking a function the
template does not declare falls through to moto (``ResourceNotFoundException``).

The response is what Lambda returns: ``StatusCode`` 200 and the handler's JSON result,
or, for an unhandled exception, ``FunctionError: "Unhandled"`` and a payload
``{"errorType", "errorMessage", "stackTrace"}``. Step Functions names the error after
``errorType``, so ``Retry``/``Catch`` on ``"TransientError"`` catch a handler's
``TransientError``. ``InvocationType: Event`` runs the handler at once on the caller's
thread (locally there is no async queue) and returns 202; ``DryRun`` returns 204.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

import boto3
from botocore.awsrequest import AWSResponse

from .lambda_host import Invocation, LocalFunction, ThrottledError

EVENT_NAME = "before-call.lambda.Invoke"
UNIQUE_ID = "inferbus-local-lambda-adapter"


def function_name_of(url_path: str) -> str:
    """The function name in an Invoke request path (name, full or partial ARN; qualifier dropped).

    Examples
    --------
    >>> function_name_of("/2015-03-31/functions/arn%3Aaws%3Alambda%3Aus-east-1%3A1%3Afunction%3Afn%3A%24LATEST/invocations")
    'fn'
    >>> function_name_of("/2015-03-31/functions/fn/invocations")
    'fn'
    """
    identifier = unquote(url_path.split("/functions/", 1)[1].rsplit("/invocations", 1)[0])
    if ":function:" in identifier:
        identifier = identifier.split(":function:", 1)[1]
    return identifier.split(":", 1)[0]


def lambda_response(response: Any, invocation: Invocation) -> dict[str, Any]:
    """The parsed ``Invoke`` response Lambda gives for a handler's result or unhandled error."""
    if invocation.error is None:
        try:
            return {"StatusCode": 200, "ExecutedVersion": "$LATEST", "Payload": io.BytesIO(json.dumps(response).encode())}
        except (TypeError, ValueError) as exc:
            error = {"errorType": "Runtime.MarshalError", "errorMessage": f"Unable to marshal response: {exc}"}
    else:
        error = {"errorType": invocation.error_type, "errorMessage": invocation.error_message,
                 "stackTrace": invocation.stack_trace}
    return {"StatusCode": 200, "FunctionError": "Unhandled", "ExecutedVersion": "$LATEST",
            "Payload": io.BytesIO(json.dumps(error).encode())}


class LambdaAdapter:
    """Routes ``lambda.Invoke`` on boto3's default session to in-process functions.

    Parameters
    ----------
    functions
        The template's functions, by logical id.
    """

    def __init__(self, functions: Mapping[str, LocalFunction]) -> None:
        self._by_name = {function.spec.name: function for function in functions.values()}
        self._session: Any = None

    def install(self) -> None:
        """Register on the current default session (made if there is none); again if it was replaced. Answer the
        ``Invoke`` requests that reach moto too."""
        from . import moto_patches

        if boto3.DEFAULT_SESSION is None:
            boto3.setup_default_session()
        if self._session is not boto3.DEFAULT_SESSION:
            self.uninstall()
            self._session = boto3.DEFAULT_SESSION
            self._session.events.register(EVENT_NAME, self._before_call, unique_id=UNIQUE_ID)
        moto_patches.HOOKS.invoke = self._invoke_reaching_moto

    def _invoke_reaching_moto(self, function_name: str, invocation_type: str,
                              body: bytes) -> tuple[int, dict[str, str], bytes] | None:
        function = self._by_name.get(function_name_of(f"/functions/{function_name}/invocations"))
        if function is None:
            return None
        status, parsed = self._run(function, invocation_type, body)
        if "Error" in parsed:  # throttled: the error in the body, as Lambda's REST answer holds it
            return status, {"x-amzn-ErrorType": parsed["Error"]["Code"]}, json.dumps(
                {"message": parsed["Error"]["Message"], "Reason": parsed["Reason"]}).encode()
        headers = {"Content-Type": "application/json", "X-Amz-Executed-Version": "$LATEST"}
        if "FunctionError" in parsed:
            headers["X-Amz-Function-Error"] = parsed["FunctionError"]
        return status, headers, parsed["Payload"].read() if "Payload" in parsed else b""

    def uninstall(self) -> None:
        from . import moto_patches

        if moto_patches.HOOKS.invoke == self._invoke_reaching_moto:
            moto_patches.HOOKS.invoke = None
        if self._session is not None:
            self._session.events.unregister(EVENT_NAME, unique_id=UNIQUE_ID)
            self._session = None

    def _before_call(self, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        function = self._by_name.get(function_name_of(params["url_path"]))
        if function is None:
            return None  # not ours: moto answers (ResourceNotFoundException)
        headers = {key.lower(): value for key, value in params.get("headers", {}).items()}
        status, parsed = self._run(function, headers.get("x-amz-invocation-type", "RequestResponse"), params.get("body"))
        return AWSResponse(params["url"], status, {}, None), parsed

    @staticmethod
    def _run(function: LocalFunction, invocation_type: str, body: bytes | str | None) -> tuple[int, dict[str, Any]]:
        """One ``Invoke`` of ``function``: the HTTP status and the response as botocore parses it (both ways in
        answer from it)."""
        if invocation_type == "DryRun":
            return 204, {"StatusCode": 204}
        try:
            response, invocation = function.invoke(json.loads(body or b"{}"), trigger="invoke")
        except ThrottledError as throttled:  # as Lambda answers beyond reserved concurrency
            error = {"Code": "TooManyRequestsException", "Message": str(throttled)}
            return 429, {"Error": error, "Reason": "ReservedFunctionConcurrentInvocationLimitExceeded",
                         "ResponseMetadata": {"HTTPStatusCode": 429}}
        if invocation_type == "Event":
            return 202, {"StatusCode": 202, "Payload": io.BytesIO(b"")}
        return 200, lambda_response(response, invocation)
