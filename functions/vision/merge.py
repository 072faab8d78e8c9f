"""The vision workflow's merge step: every branch's score -> one label and a combined confidence."""

from __future__ import annotations

from typing import Any

from inferbus_lambda.handlers import StepRuntime, step_handler
from inferbus_lambda.vision import combine_scores


def merge(event: dict[str, Any], runtime: StepRuntime) -> dict[str, Any]:
    return combine_scores(event["branches"])


lambda_handler = step_handler(merge)
