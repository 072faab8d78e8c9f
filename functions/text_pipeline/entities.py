"""Step 4 of the text pipeline: text -> entities, by the rules in :mod:`inferbus_lambda.entities`."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from inferbus_lambda.contracts import MAX_ENTITIES, TextSubmitted
from inferbus_lambda.entities import extract_entities
from inferbus_lambda.faults import inject_invocation_faults

logger = Logger()
tracer = Tracer()


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    inject_invocation_faults()
    text = TextSubmitted(text=event["text"]).text
    return {"entities": extract_entities(text, limit=MAX_ENTITIES)}
