"""An SQS consumer that sends some records back with a backoff of its own, as a consumer over its rate does.

A record whose body holds ``"back_off": true`` is, on its first receive, hidden ``BACKOFF_S`` seconds
(``ChangeMessageVisibility``) and reported failed; one with ``"fail": true`` fails once plainly (no backoff).
Every record is consumed on a later receive (logged with its receive count and the time).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import boto3

from tests.runtime_fixtures import log


def _queue_url(arn: str) -> str:
    _, _, _, region, account, name = arn.split(":", 5)
    return f"https://sqs.{region}.amazonaws.com/{account}/{name}"


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    failed = []
    for record in event["Records"]:
        body = json.loads(record["body"])
        receives = int(record["attributes"]["ApproximateReceiveCount"])
        if receives == 1 and body.get("back_off"):
            boto3.client("sqs").change_message_visibility(QueueUrl=_queue_url(record["eventSourceARN"]),
                                                          ReceiptHandle=record["receiptHandle"],
                                                          VisibilityTimeout=int(os.environ.get("BACKOFF_S", "1")))
            log("backed off", n=body["n"], at=time.time())
            failed.append(record["messageId"])
        elif receives == 1 and body.get("fail"):
            failed.append(record["messageId"])
        else:
            log("consumed", n=body["n"], receives=receives, at=time.time())
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failed]}
