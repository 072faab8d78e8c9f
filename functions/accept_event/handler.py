"""Lambda handler: the ``Accept`` step every state machine starts with.

Configuration (set by the CDK stack): ``IDEMPOTENCY_TABLE_NAME``, ``IDEMPOTENCY_TTL_SECONDS``
and the ``POWERTOOLS_*`` variables. The request names the workflow; each workflow claims
event ids under its own key prefix. See :mod:`inferbus_lambda.workflow`.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from inferbus_lambda.faults import inject_invocation_faults
from inferbus_lambda.idempotency import EventClaims, claims_from_environment
from inferbus_lambda.workflow import accept

logger = Logger()
tracer = Tracer()
metrics = Metrics()

CLAIMS: dict[str, EventClaims] = {}  # one persistence layer per workflow, made on first use


def claims_for(workflow: str) -> EventClaims:
    if workflow not in CLAIMS:
        CLAIMS[workflow] = claims_from_environment(workflow)
    return CLAIMS[workflow]


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    inject_invocation_faults()
    workflow = event["workflow"]
    answer = accept(event, claims_for(workflow), remaining_ms=context.get_remaining_time_in_millis())
    metrics.add_dimension(name="workflow", value=workflow)
    metrics.add_metric(name=f"Events{answer['status'].capitalize()}", unit=MetricUnit.Count, value=1)
    if answer["status"] == "rejected":
        logger.warning("event rejected", extra={"workflow": workflow, "error": answer["error"], "reason": answer["reason"],
                                                "event_id": answer["failure"]["input_id"],
                                                "correlation_id": answer["failure"]["correlationid"]})
    else:
        logger.info(f"event {answer['status']}", extra={"workflow": workflow, "event_id": answer["event"]["id"],
                                                        "correlation_id": answer["event"]["correlationid"]})
    return answer
