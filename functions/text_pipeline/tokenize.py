"""Step 1 of the text pipeline: text -> MiniLM token ids (truncated at the encoder's max tokens).

Configuration: ``TOKENIZER_PATH``, ``MAX_TOKENS``.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from inferbus_lambda.contracts import TextSubmitted
from inferbus_lambda.faults import inject_invocation_faults
from inferbus_lambda.text import TextTokenizer

logger = Logger()
tracer = Tracer()
TOKENIZER = TextTokenizer.load(os.environ["TOKENIZER_PATH"], max_tokens=int(os.environ["MAX_TOKENS"]))


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    inject_invocation_faults()
    text = TextSubmitted(text=event["text"]).text  # the step checks its own input, whoever calls it
    (tokenized,) = TOKENIZER.encode([text])
    return {"input_ids": tokenized.input_ids, "tokens": tokenized.tokens, "truncated": tokenized.truncated}
