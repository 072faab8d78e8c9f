"""Returns what it was given, with the function's TAG; optionally sleeps, or invokes another function."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import boto3

from tests.runtime_fixtures import log, metric


def handler(event: Any, context: Any) -> dict[str, Any]:
    log("echo", function=context.function_name)
    metric("Echoes", 1)
    if isinstance(event, dict) and event.get("sleep_s"):
        time.sleep(event["sleep_s"])
    if isinstance(event, dict) and event.get("call"):
        # A handler invoking another function of the template (runs in-process too).
        response = boto3.client("lambda").invoke(FunctionName=event["call"], Payload=json.dumps({"from": context.function_name}))
        return {"called": json.load(response["Payload"]), "tag": os.environ.get("TAG")}
    return {"echo": event, "tag": os.environ.get("TAG")}
