"""Step 2 of the text pipeline: words -> their Universal part-of-speech tags (a BiLSTM tagger, ONNX).

The tagger and its features: :mod:`inferbus_lambda.tagging`; how it was trained and what it
scores: ``models/build_tagging.py`` and the manifest's ``text-upos`` entry.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from inferbus_lambda.contracts import TextSubmitted
from inferbus_lambda.handlers import StepRuntime, step_handler
from inferbus_lambda.tagging import SequenceTagger, read_words


def tag(event: dict[str, Any], runtime: StepRuntime) -> dict[str, Any]:
    text = TextSubmitted(text=event["text"]).text
    words = read_words(text, event["words"])
    tagger = runtime.models.only
    upos = tagger.tag_text([w.text for w in words])
    runtime.metrics.add_metric(name="TaggedWords", unit=MetricUnit.Count, value=len(words))
    return {"upos": upos, "model": {"name": tagger.name, "version": tagger.version}}


lambda_handler = step_handler(tag, load=SequenceTagger.from_info)
