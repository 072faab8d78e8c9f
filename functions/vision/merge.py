"""The vision workflow's merge step: the detector's objects and the scene's label -> one ImageAnalyzed."""

from __future__ import annotations

from typing import Any

from inferbus_lambda.contracts import ImageAnalyzed
from inferbus_lambda.handlers import StepRuntime, step_handler
from inferbus_lambda.parallel import merge_branches


def merge(event: dict[str, Any], runtime: StepRuntime) -> dict[str, Any]:
    return merge_branches(ImageAnalyzed, event["branches"], input_id=event["input_id"])


lambda_handler = step_handler(merge)
