"""Step 4 of the text pipeline: text -> entities, by the rules in :mod:`inferbus_lambda.entities`."""

from __future__ import annotations

from typing import Any

from inferbus_lambda.contracts import MAX_ENTITIES, TextSubmitted
from inferbus_lambda.entities import extract_entities
from inferbus_lambda.handlers import StepRuntime, step_handler


def entities(event: dict[str, Any], runtime: StepRuntime) -> dict[str, Any]:
    text = TextSubmitted(text=event["text"]).text
    return {"entities": extract_entities(text, limit=MAX_ENTITIES)}


lambda_handler = step_handler(entities)
