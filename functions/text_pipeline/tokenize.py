"""Step 1 of the text pipeline: text -> token ids of the encoder's tokenizer, truncated at its max tokens."""

from __future__ import annotations

from typing import Any

from inferbus_lambda.contracts import TextSubmitted
from inferbus_lambda.handlers import StepRuntime, step_handler
from inferbus_lambda.text import TextTokenizer


def tokenize(event: dict[str, Any], runtime: StepRuntime) -> dict[str, Any]:
    text = TextSubmitted(text=event["text"]).text  # the step checks its own input, whoever calls it
    (tokenized,) = runtime.models.only.encode([text])
    return {"input_ids": tokenized.input_ids, "tokens": tokenized.tokens, "truncated": tokenized.truncated}


lambda_handler = step_handler(tokenize, load=TextTokenizer.from_info)
