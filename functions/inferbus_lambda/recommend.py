"""What both recommenders share: a customer's profile as the model's input, its output as ``Recommendation`` items.

Profiles are items of the ``customer-profiles`` state table: ``{"id", "age", "gender",
"history"?}`` (``history``: MovieLens-100K item ids, returning customers only). The segment
layout (age bands x genders) is the popularity model's manifest entry, ``segments``.

Example
-------
>>> segments = {"age_bands": [[0, 17], [18, 24]], "genders": ["F", "M"]}
>>> segment_row({"age": 20, "gender": "M"}, segments), segment_row(None, segments)
(3, 4)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .contracts.recommendations import Recommendation

__all__ = ["PROFILES", "history_matrix", "recommendations", "segment_row"]

PROFILES = "customer-profiles"  # the state table both read


def segment_row(profile: Mapping[str, Any] | None, segments: Mapping[str, Any]) -> int:
    """The popularity table's row for this profile: its age band x gender, or the last row (everyone)
    when the profile is absent or outside every band."""
    bands, genders = segments["age_bands"], segments["genders"]
    unknown = len(bands) * len(genders)
    if not profile or profile.get("gender") not in genders or not isinstance(profile.get("age"), int):
        return unknown
    for band, (low, high) in enumerate(bands):
        if low <= profile["age"] <= high:
            return band * len(genders) + genders.index(profile["gender"])
    return unknown


def history_matrix(profiles: Sequence[Mapping[str, Any] | None], n_items: int) -> np.ndarray:
    """[len(profiles), n_items] float32: 1 where the customer's history has the item (ids 1..n_items;
    ids outside the catalogue are ignored, so a store ahead of the model does not break it)."""
    matrix = np.zeros((len(profiles), n_items), dtype=np.float32)
    for row, profile in enumerate(profiles):
        items = [item for item in (profile or {}).get("history", ()) if isinstance(item, int) and 1 <= item <= n_items]
        matrix[row, np.array(items, dtype=np.int64) - 1] = 1.0
    return matrix


def recommendations(items: np.ndarray, scores: np.ndarray) -> list[Recommendation]:
    """One row of the models' ``items`` / ``scores`` outputs, best first."""
    return [Recommendation(item_id=int(item), score=round(float(score), 6)) for item, score in zip(items, scores, strict=True)]
