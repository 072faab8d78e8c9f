"""The vision workflow's merge step: every branch's score -> one label and a combined confidence."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from inferbus_lambda.faults import inject_invocation_faults
from inferbus_lambda.vision import combine_scores

logger = Logger()
tracer = Tracer()


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    inject_invocation_faults()
    return combine_scores(event["branches"])
