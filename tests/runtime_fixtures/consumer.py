"""An SQS batch consumer that logs and counts every record (partial batch response, nothing fails)."""

from __future__ import annotations

import os
import time
from typing import Any

from tests.runtime_fixtures import log, metric


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    for record in event["Records"]:
        log("consumed", message_id=record["messageId"])
        time.sleep(float(os.environ.get("SLEEP_S", "0.01")))  # long enough for others to run meanwhile
    metric("Consumed", len(event["Records"]))
    return {"batchItemFailures": []}
