"""The ``Accept`` step every state machine starts with: validate the event, own its id once.

The request names the workflow; each workflow claims event ids under its own key prefix.
See :mod:`inferbus_lambda.workflow`.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from inferbus_lambda.claims import ClaimStore, claim_store
from inferbus_lambda.environment import AcceptEnvironment
from inferbus_lambda.handlers import StepRuntime, aws_client, step_handler
from inferbus_lambda.workflow import accept

CLAIMS: dict[str, ClaimStore] = {}  # one per workflow, made on first use, sharing one client
DYNAMODB = aws_client("dynamodb")


def claims_for(workflow: str, environment: AcceptEnvironment) -> ClaimStore:
    if workflow not in CLAIMS:
        CLAIMS[workflow] = claim_store(environment, scope=workflow, client=DYNAMODB)
    return CLAIMS[workflow]


def accept_event(request: dict[str, Any], runtime: StepRuntime) -> dict[str, Any]:
    workflow = request["workflow"]
    answer = accept(request, claims_for(workflow, runtime.environment))
    runtime.metrics.add_dimension(name="workflow", value=workflow)
    runtime.metrics.add_metric(name=f"Events{answer['status'].capitalize()}", unit=MetricUnit.Count, value=1)
    if answer["status"] == "rejected":
        failure = answer["failure"]
        runtime.logger.warning("event rejected", extra={"workflow": workflow, "error": answer["error"], "reason": answer["reason"],
                                                        "event_id": failure["input_id"], "correlation_id": failure["correlationid"]})
    else:
        runtime.record_event_latency(answer["event"]["time"])
        runtime.logger.info(f"event {answer['status']}", extra={"workflow": workflow, "event_id": answer["event"]["id"],
                                                                "correlation_id": answer["event"]["correlationid"]})
    return answer


lambda_handler = step_handler(accept_event, environment=AcceptEnvironment)
