"""The plain logic behind the workflow steps: entity rules, merging parallel branches, text batching."""

from __future__ import annotations

import json

import numpy as np
import pytest
from inferbus_lambda.contracts import Entity, ImageAnalyzed, TextAnalyzed
from inferbus_lambda.entities import extract_entities
from inferbus_lambda.text import pad_batch
from inferbus_lambda.parallel import merge_branches
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


DETECTED = {"boxes": [[1.0, 2.0, 9.5, 12.0], [20.0, 20.0, 30.0, 33.0]], "classes": [7, 1], "scores": [0.98, 0.91],
            "detector": {"name": "scene-detector", "version": "1"}}
LABELLED = {"scene": "two", "scene_confidence": 0.97, "scene_classifier": {"name": "scene-classifier", "version": "1"}}


def test_the_branches_answers_join_into_one_valid_result():
    merged = merge_branches(ImageAnalyzed, [DETECTED, LABELLED], input_id="scene-1")
    assert merged == {"input_id": "scene-1", **DETECTED, **LABELLED}
    json.dumps(merged)
    # Any contract, any number of branches: the text flow's answer from three.
    text = merge_branches(TextAnalyzed, [
        {"sentiment": {"label": "positive", "confidence": 0.9, "model": {"name": "s", "version": "1"}}},
        {"entities": []}, {"tokens": 3, "truncated": False, "encoder": {"name": "e", "version": "1"}},
        {"words": [], "tagger": {"name": "p", "version": "1"}, "recogniser": {"name": "n", "version": "1"}}], input_id="t-1")
    assert set(text) == set(TextAnalyzed.model_fields)


def test_merging_rejects_two_branches_answering_one_field_and_a_result_that_breaks_its_contract():
    with pytest.raises(ValueError, match="branches 0 and 1 both answer 'scene'"):
        merge_branches(ImageAnalyzed, [DETECTED | {"scene": "one"}, LABELLED], input_id="scene-1")
    with pytest.raises(ValueError, match="the caller and 1 both answer 'input_id'"):
        merge_branches(ImageAnalyzed, [DETECTED, LABELLED | {"input_id": "x"}], input_id="scene-1")
    with pytest.raises(ValidationError, match="scene_classifier"):
        merge_branches(ImageAnalyzed, [DETECTED], input_id="scene-1")  # the scene branch's answer is missing
    with pytest.raises(ValidationError, match="as long as each other"):
        merge_branches(ImageAnalyzed, [DETECTED | {"scores": [0.9]}, LABELLED], input_id="scene-1")
    with pytest.raises(ValidationError, match="x1 >= x0"):
        merge_branches(ImageAnalyzed, [DETECTED | {"boxes": [[9.0, 2.0, 1.0, 12.0], [0, 0, 1, 1]]}, LABELLED],
                       input_id="scene-1")


def test_a_batch_is_padded_to_its_own_longest_text_only():
    ids, mask = pad_batch([[101, 5, 6, 102], [101, 102]])
    assert ids.shape == mask.shape == (2, 4) and ids.dtype == np.int64
    assert mask.sum(axis=1).tolist() == [4, 2]
    with pytest.raises(ValueError):
        pad_batch([[101], []])
