"""The event a Lambda function URL sends its function (payload format 2.0), for invoking one in-process.

Locally there is no URL and no SigV4 check (both are cloud-only); the function behind it gets the
request as AWS would hand it over, with the IAM caller's identity in ``requestContext.authorizer``.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Mapping
from typing import Any

from .resources import ACCOUNT

__all__ = ["function_url_event"]

LOCAL_CALLER = f"arn:aws:iam::{ACCOUNT}:user/local-producer"


def function_url_event(method: str, path: str, headers: Mapping[str, str], body: bytes | str | None,
                       *, caller_arn: str = LOCAL_CALLER) -> dict[str, Any]:
    """A function URL request as the function receives it (headers lowercased, a binary body in base64).

    >>> event = function_url_event("POST", "/events", {"Content-Type": "application/json"}, b"{}")
    >>> event["requestContext"]["http"]["method"], event["headers"]["content-type"], event["isBase64Encoded"]
    ('POST', 'application/json', True)
    """
    raw = body.encode() if isinstance(body, str) else (body or b"")
    now = time.time()
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {key.lower(): value for key, value in headers.items()},
        "requestContext": {
            "accountId": ACCOUNT,
            "apiId": "local",
            "domainName": "local.lambda-url.localhost",
            "domainPrefix": "local",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1",
                     "userAgent": headers.get("user-agent", "inferbus")},
            "requestId": str(uuid.uuid4()),
            "routeKey": "$default",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
            "authorizer": {"iam": {"accessKey": "LOCAL", "accountId": ACCOUNT, "callerId": "LOCAL",
                                   "userArn": caller_arn, "userId": "LOCAL"}},
        },
        "body": base64.b64encode(raw).decode(),
        "isBase64Encoded": True,
    }
