"""Combining the vision workflow's branches into one answer.

Example
-------
>>> a = {"model": {"name": "a", "version": "1"}, "label": 3, "confidence": 0.9, "inference_ms": 0.1,
...      "probabilities": [0.0, 0.0, 0.0, 0.9, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0]}
>>> b = a | {"model": {"name": "b", "version": "1"}, "label": 4, "confidence": 0.6,
...          "probabilities": [0.0, 0.0, 0.0, 0.4, 0.6, 0.0, 0.0, 0.0, 0.0, 0.0]}
>>> combined = combine_scores([a, b])
>>> combined["label"], combined["confidence"], combined["agreement"]
(3, 0.65, False)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["combine_scores"]


def combine_scores(branches: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean of the branches' probability rows; its argmax is the label, its value there the confidence.

    Every branch is validated as a :class:`ModelScore` first.
    """
    from .contracts.images import ModelScore  # here: the merge step's init never imports pydantic

    scores = [ModelScore.model_validate(branch) for branch in branches]
    if len(scores) < 2:
        raise ValueError(f"a combination needs at least two branches, got {len(scores)}")
    # In Python, not numpy: a few rows of ten, and the merge step then never imports numpy (cold init).
    # Summed row by row and divided once, as numpy's mean over axis 0 does: the same floats.
    mean = [sum(column) / len(scores) for column in zip(*(score.probabilities for score in scores), strict=True)]
    label = max(range(len(mean)), key=mean.__getitem__)  # the first of equal maxima, as argmax
    return {
        "label": label,
        "confidence": round(float(mean[label]), 6),
        "agreement": len({score.label for score in scores}) == 1,
        "probabilities": [round(float(p), 6) for p in mean],
        "branches": [score.model_dump(mode="json") for score in scores],
    }
