"""The plain logic behind the workflow steps: entity rules, combining branches, text batching."""

from __future__ import annotations

import json

import numpy as np
import pytest
from inferbus_lambda.contracts import Entity, ModelRef
from inferbus_lambda.entities import extract_entities
from inferbus_lambda.text import pad_batch
from inferbus_lambda.vision import combine_scores
from pydantic import ValidationError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Ada Lovelace paid $12.50 on 2 December 2026 at 14:30.",
         [("NAME", "Ada Lovelace"), ("MONEY", "$12.50"), ("DATE", "2 December 2026"), ("TIME", "14:30")]),
        ("Write to jane.doe@example.com or see https://example.org/help.",
         [("EMAIL", "jane.doe@example.com"), ("URL", "https://example.org/help")]),
        ("Prices rose 15% to 40 EUR on Monday.", [("PERCENT", "15%"), ("MONEY", "40 EUR"), ("DATE", "Monday")]),
        ("We met Dr. Smith at the Bank of England on Dec 2, 2026 at 10:15am.",
         [("NAME", "Dr. Smith"), ("NAME", "Bank of England"), ("DATE", "Dec 2, 2026"), ("TIME", "10:15am")]),
        ("The film was dull. I left early.", []),  # sentence openers are not names
        ("Overall, Paris was lovely.", [("NAME", "Paris")]),
        ("Maria von Trapp sang at 7 pm for 3 dollars.", [("NAME", "Maria von Trapp"), ("TIME", "7 pm"), ("MONEY", "3 dollars")]),
    ],
)
def test_entity_rules(text, expected):
    found = extract_entities(text)
    assert [(e["type"], e["text"]) for e in found] == expected
    for entity in found:
        assert text[entity["start"]:entity["end"]] == entity["text"]
        Entity.model_validate(entity)  # what the step returns fits the TextAnalyzed contract


def test_entities_never_overlap_and_respect_the_limit():
    text = " ".join(f"Alice{i} Smith paid ${i}.00 on 2026-01-{i % 28 + 1:02d}." for i in range(60))
    found = extract_entities(text, limit=100)
    assert len(found) == 100
    spans = sorted((e["start"], e["end"]) for e in found)
    assert all(end <= next_start for (_, end), (next_start, _) in zip(spans, spans[1:]))


def score(name, probabilities):
    probabilities = list(probabilities)
    label = int(np.argmax(probabilities))
    return {"model": ModelRef(name=name, version="1").model_dump(), "label": label,
            "confidence": probabilities[label], "probabilities": probabilities, "inference_ms": 0.2}


def test_agreeing_branches_keep_their_confidence_and_disagreeing_ones_lower_it():
    sure = [0.0] * 10
    sure[7] = 1.0
    agree = combine_scores([score("a", sure), score("b", sure)])
    assert (agree["label"], agree["confidence"], agree["agreement"]) == (7, 1.0, True)

    other = [0.0] * 10
    other[1] = 0.7
    other[7] = 0.3
    disagree = combine_scores([score("a", sure), score("b", other)])
    assert (disagree["label"], disagree["confidence"], disagree["agreement"]) == (7, 0.65, False)
    assert [branch["model"]["name"] for branch in disagree["branches"]] == ["a", "b"]
    json.dumps(disagree)


def test_combining_rejects_a_malformed_branch_and_a_lone_branch():
    sure = [0.0] * 9 + [1.0]
    with pytest.raises(ValidationError):
        combine_scores([score("a", sure), score("b", sure) | {"probabilities": [0.5] * 10}])
    with pytest.raises(ValueError, match="at least two"):
        combine_scores([score("a", sure)])


def test_a_batch_is_padded_to_its_own_longest_text_only():
    ids, mask = pad_batch([[101, 5, 6, 102], [101, 102]])
    assert ids.shape == mask.shape == (2, 4) and ids.dtype == np.int64
    assert mask.sum(axis=1).tolist() == [4, 2]
    with pytest.raises(ValueError):
        pad_batch([[101], []])
