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
(epoch milliseconds) are its attribute names. Invocations run concurrently, so only the
claims of the failed invocation's own events are expired: another invocation may hold others.
"""

from __future__ import annotations

import json
import time
from typing import Any

from botocore.exceptions import ClientError
from inferbus_lambda.environment import ClaimsEnvironment
from inferbus_lambda.idempotency import EventClaims
from pydantic import ValidationError

IN_PROGRESS = "INPROGRESS"


def expire_claims_of(dynamodb: Any, function_environment: dict[str, str], messages: list[dict[str, Any]]) -> int:
    """Expire the in-progress claims a failed invocation held on its messages' events; return how many.

    0 for a function that claims nothing. A message that is not an EventBridge event has no claim.
    """
    try:
        environment = ClaimsEnvironment.model_validate(function_environment)
    except ValidationError:
        return 0
    claims = EventClaims(environment.IDEMPOTENCY_TABLE_NAME, scope=environment.POWERTOOLS_SERVICE_NAME, client=dynamodb)
    now_ms = int(time.time() * 1000)
    expired = 0
    for message in messages:
        try:
            event_id = json.loads(message["Body"])["detail"]["id"]
        except (ValueError, KeyError, TypeError):
            continue
        try:
            dynamodb.update_item(
                TableName=environment.IDEMPOTENCY_TABLE_NAME, Key={"id": {"S": claims.key(str(event_id))}},
                UpdateExpression="SET in_progress_expiration = :past", ConditionExpression="#status = :in_progress",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={":past": {"N": str(now_ms - 1)}, ":in_progress": {"S": IN_PROGRESS}},
            )
        except ClientError as error:
            if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
                continue  # not claimed, or already completed: nothing held
            raise
        expired += 1
    return expired
