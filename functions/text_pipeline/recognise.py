"""Step 3 of the text pipeline: words and their part of speech -> named entities (PER, ORG, LOC).

A BiLSTM recogniser (ONNX) tags each word in BIO, decoded under BIO's rule in numpy
(:func:`inferbus_lambda.tagging.decode_bio`); each entity's offsets are its words' offsets in
the submitted text. The documented patterns of :mod:`inferbus_lambda.entities` add what a
model of people, organisations and places does not tag (e-mail addresses, URLs, money,
percentages, dates, times) where they do not overlap an entity of the model; their NAME rule
is left out, the model answers for names.
"""

from __future__ import annotations

from typing import Any

from inferbus_lambda.contracts import MAX_ENTITIES, TextSubmitted
from inferbus_lambda.entities import extract_entities
from inferbus_lambda.handlers import StepRuntime, step_handler
from inferbus_lambda.tagging import SequenceTagger, bio_spans, read_words


def recognise(event: dict[str, Any], runtime: StepRuntime) -> dict[str, Any]:
    text = TextSubmitted(text=event["text"]).text
    words = read_words(text, event["words"])
    upos = event["upos"]
    if not (isinstance(upos, list) and len(upos) == len(words)):
        raise ValueError(f"upos must hold one tag per word ({len(words)})")
    recogniser = runtime.models.only
    tags = recogniser.tag_text([w.text for w in words], upos)
    found = [{"text": text[words[s.first].start:words[s.last].end], "type": s.type,
              "start": words[s.first].start, "end": words[s.last].end} for s in bio_spans(tags)]
    taken = [(e["start"], e["end"]) for e in found]
    found += [e for e in extract_entities(text, limit=MAX_ENTITIES) if e["type"] != "NAME"
              and all(e["end"] <= start or e["start"] >= end for start, end in taken)]
    found.sort(key=lambda e: e["start"])
    return {
        "words": [{"text": w.text, "start": w.start, "end": w.end, "upos": p, "ner": t}
                  for w, p, t in zip(words, upos, tags, strict=True)],
        "entities": found[:MAX_ENTITIES],
        "model": {"name": recogniser.name, "version": recogniser.version},
    }


lambda_handler = step_handler(recognise, load=SequenceTagger.from_info)
