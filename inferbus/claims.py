"""Time passing for idempotency claims, where the embedded runtime compresses time (inferbus's
``after_failure`` hook for the runtime's event sources).

When records fail (a whole invocation: an error, a timeout, a crash; or single records of a
batch), SQS hides them for the queue's visibility timeout, which inferbus sets to six times
the function timeout: by the time they come back, every claim made on their events before
they failed has passed its hold (at most the claiming invocation's remaining time), whether
its invocation crashed or could not complete it (the store throttled the completion). The
local event source makes them visible again much sooner (as soon as the invocations running
when they failed have ended), so it ends those claims' hold then too; otherwise the
redeliveries would count as "held by another invocation" and drift to the DLQ, which would
not happen in AWS. A claim made after the failure (a duplicate in another batch) is left be.

The claims are the function's own store's (``CLAIM_STORE``, ``inferbus_lambda.claims``): this
module knows nothing of how a store lays them out.
"""

from __future__ import annotations

import json
import time
from typing import Any

from inferbus_lambda.claims import claim_key, claim_store
from inferbus_lambda.environment import ClaimsEnvironment
from inferbus_lambda.errors import ConfigurationError


def expire_claims_of(dynamodb: Any, function_environment: dict[str, str], messages: list[dict[str, Any]],
                     claimed_before_ms: int) -> int:
    """Expire the in-progress claims on these messages' events made before ``claimed_before_ms``
    (when the records failed); return how many.

    In AWS, a failed record comes back after the visibility timeout (six times the function
    timeout), when every claim made before it failed has passed its hold (at most the function
    timeout); a claim made since (a duplicate delivery in another batch) still holds. 0 for a
    function that claims nothing; a message that is not an EventBridge event has no claim.
    ``dynamodb`` is the client a DynamoDB store uses.
    """
    try:
        environment = ClaimsEnvironment.from_environ(function_environment)
    except ConfigurationError:
        return 0
    store = claim_store(environment, scope=environment.POWERTOOLS_SERVICE_NAME, client=dynamodb)
    now_ms = int(time.time() * 1000)
    expired = 0
    for message in messages:
        try:
            detail = json.loads(message["Body"])["detail"]
            key = claim_key(str(detail["source"]), str(detail["id"]))
        except (ValueError, KeyError, TypeError):
            continue
        expired += store.end_hold(key, claimed_before_ms=claimed_before_ms, now_ms=now_ms)
    return expired
