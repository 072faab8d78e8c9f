"""An SQS batch consumer that logs and counts every record (partial batch response, nothing fails)."""

from __future__ import annotations

import time
from typing import Any

from tests.runtime_fixtures import log, metric


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    for record in event["Records"]:
        log("consumed", message_id=record["messageId"])
        time.sleep(0.01)  # long enough for an execution thread to want the lock meanwhile
    metric("Consumed", len(event["Records"]))
    return {"batchItemFailures": []}
