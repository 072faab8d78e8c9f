"""Time passing for idempotency claims, where the embedded runtime compresses time (inferbus's
``after_failure`` hook for the runtime's event sources).

When an invocation fails as a whole (an error, a timeout, a crash), SQS hides its messages
for the queue's visibility timeout, which inferbus sets to six times the function timeout:
by the time they come back, every claim the invocation left ``INPROGRESS`` has expired (a
claim holds for the invocation's remaining time at most), and the redelivery may claim them
again. The local event source makes the messages visible again at once instead, so it ends
those claims' hold at once too; otherwise the redeliveries would count as "held by another
invocation" and drift to the DLQ, which would not happen in AWS.

The claims are Powertools idempotency records: ``status`` and ``in_progress_expiration``
(epoch milliseconds) are its attribute names. Handlers run one at a time locally, so when
an invocation has failed no other invocation holds a claim.
"""

from __future__ import annotations

import time
from typing import Any

from inferbus_lambda.environment import ClaimsEnvironment
from pydantic import ValidationError

IN_PROGRESS = "INPROGRESS"


def expire_in_progress_claims(dynamodb: Any, table_name: str) -> int:
    """Let every ``INPROGRESS`` claim in ``table_name`` expire now; return how many there were."""
    now_ms = int(time.time() * 1000)
    expired = 0
    for page in dynamodb.get_paginator("scan").paginate(
        TableName=table_name,
        FilterExpression="#status = :in_progress",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={":in_progress": {"S": IN_PROGRESS}},
        ProjectionExpression="id",
    ):
        for item in page["Items"]:
            dynamodb.update_item(
                TableName=table_name,
                Key={"id": item["id"]},
                UpdateExpression="SET in_progress_expiration = :past",
                ExpressionAttributeValues={":past": {"N": str(now_ms - 1)}},
            )
            expired += 1
    return expired


def expire_claims_of(dynamodb: Any, function_environment: dict[str, str]) -> int:
    """Expire the in-progress claims of a function's table; 0 for a function that claims nothing."""
    try:
        environment = ClaimsEnvironment.model_validate(function_environment)
    except ValidationError:
        return 0
    return expire_in_progress_claims(dynamodb, environment.IDEMPOTENCY_TABLE_NAME)
