"""Step 1 of the text pipeline: text -> its words with character offsets (for the taggers) and the
token ids of the encoder's tokenizer, truncated at its max tokens (for the sentiment)."""

from __future__ import annotations

from typing import Any

from inferbus_lambda.contracts import TextSubmitted
from inferbus_lambda.handlers import StepRuntime, step_handler
from inferbus_lambda.text import TextTokenizer
from inferbus_lambda.words import split_words


def tokenize(event: dict[str, Any], runtime: StepRuntime) -> dict[str, Any]:
    text = TextSubmitted(text=event["text"]).text  # the step checks its own input, whoever calls it
    (tokenized,) = runtime.models.only.encode([text])
    words = [{"text": w.text, "start": w.start, "end": w.end} for w in split_words(text)]
    return {"input_ids": tokenized.input_ids, "tokens": tokenized.tokens, "truncated": tokenized.truncated,
            "words": words}


lambda_handler = step_handler(tokenize, load=TextTokenizer.from_info)
