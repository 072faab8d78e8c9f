"""Held-out data that ships in ``models/`` (never seen in training), as demo samples."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from inferbus.model.demo import Sample

MODELS = Path(__file__).resolve().parents[1] / "models"
DIGITS = MODELS / "digits-holdout.npz"
SCENES = MODELS / "scenes-holdout.npz"
TEXTS = MODELS / "text-holdout.jsonl"
TRANSACTIONS = MODELS / "risk-holdout.npz"
CUSTOMERS = "models/recs-customers.jsonl"  # the demo's customer profiles (synthetic; models/build_recs.py), from the repo root
RISKY_LABEL = 0  # risk-holdout.npz: 0 = malignant (the stand-in for risky), scikit-learn's coding


def digit_images(count: int, *, offset: int = 0, analysis: str | None = None) -> list[Sample]:
    """8x8 digits (pixels 0-16) with their true labels."""
    digits = np.load(DIGITS)
    extra = {"analysis": analysis} if analysis else {}
    return [Sample({"pixels": [int(v) for v in digits["images"][i]], **extra}, int(digits["labels"][i]))
            for i in range(offset, offset + count)]


def scenes(count: int) -> list[Sample]:
    """48x48 scenes of held-out digits (models/build_scenes.py) with their true scene label, as the
    scene classifier names it in the manifest (``scene-classifier``'s ``labels``)."""
    held_out = np.load(SCENES)
    labels = json.loads((MODELS / "manifest.json").read_text())["models"]["scene-classifier"]["labels"]
    height, width = held_out["images"].shape[1:]
    return [Sample({"width": int(width), "height": int(height), "pixels": [int(v) for v in held_out["images"][i].ravel()]},
                   labels[int(held_out["scene"][i])])
            for i in range(count)]


def review_sentences(count: int) -> list[Sample]:
    """Movie and product review sentences with their human-rated sentiment (negative/positive)."""
    lines = TEXTS.read_text().splitlines()[:count]
    return [Sample({"text": row["text"]}, row["label"]) for row in map(json.loads, lines)]


def transactions(count: int) -> list[Sample]:
    """Rows of the risk model's held-out set, each with a customer of the seeded profiles in turn (returning
    when the profile has a history, else new); truth: 'risky' or 'not risky'."""
    risk = np.load(TRANSACTIONS)
    lines = (MODELS.parent / CUSTOMERS).read_text().splitlines()
    customers = [{"id": profile["id"], "segment": "returning" if profile.get("history") else "new"}
                 for profile in map(json.loads, lines)]
    return [
        Sample({"customer": customers[i % len(customers)], "features": [float(v) for v in risk["features"][i]]},
               "risky" if int(risk["labels"][i]) == RISKY_LABEL else "not risky")
        for i in range(count)
    ]
