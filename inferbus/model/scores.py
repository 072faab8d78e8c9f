"""How good each component's models are on held-out data, read from the model manifest.

A model's manifest entry records what it scored on data it never saw in training as
``metrics.holdout_<metric>`` (``holdout_accuracy``, ``holdout_entity_f1``, ``holdout_map50`` …):
each such number is a score named ``<metric>``. Counts (``holdout_size``: whole numbers) and
baselines (``holdout_majority_baseline``) say how to read a score and are not scores themselves;
nested figures (``holdout_accuracy_by_corpus``) stay in the manifest. The data's name is the
leading phrase of ``built_with.dataset`` and, when recorded, how many rows were held out.

Example
-------
>>> entry = {"metrics": {"holdout_accuracy": 0.98, "holdout_size": 360, "holdout_majority_baseline": 0.1},
...          "built_with": {"dataset": "sklearn.datasets.load_digits (UCI optical digits)"}}
>>> model_scores(entry), scores_data(entry)
({'accuracy': 0.98}, 'sklearn.datasets.load_digits, 360 held out')
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .declarations import Component, Consumer, Workflow

__all__ = ["HOLDOUT_PREFIX", "MANIFEST", "component_models", "component_scores", "manifest_models", "model_scores", "scores_data"]

MANIFEST = Path("models") / "manifest.json"
HOLDOUT_PREFIX = "holdout_"
NOT_SCORES = ("_baseline", "_size")
# Where a dataset's description stops naming it: "load_digits (UCI ...)", "VADER ground truth (...), ...", "x: a copy".
NAME_END = re.compile(r" \(|: |, |; ")


def manifest_models(root: Path) -> dict[str, dict[str, Any]]:
    """The ``models`` of the manifest of the repository at ``root`` (empty when it has none)."""
    path = Path(root) / MANIFEST
    return json.loads(path.read_text()).get("models", {}) if path.is_file() else {}


def model_scores(entry: Mapping[str, Any]) -> dict[str, float]:
    """A manifest entry's held-out scores, ``metric -> value`` (``holdout_accuracy`` -> ``accuracy``)."""
    scores = {}
    for key, value in (entry.get("metrics") or {}).items():
        if (key.startswith(HOLDOUT_PREFIX) and isinstance(value, float) and not key.endswith(NOT_SCORES)):
            scores[key[len(HOLDOUT_PREFIX):]] = value
    return scores


def scores_data(entry: Mapping[str, Any]) -> str | None:
    """The name of the data a model was trained and scored on, ``None`` when the entry does not say."""
    dataset = (entry.get("built_with") or {}).get("dataset")
    if not isinstance(dataset, str) or not dataset.strip():
        return None
    name = NAME_END.split(dataset.strip(), maxsplit=1)[0]
    held_out = (entry.get("metrics") or {}).get(f"{HOLDOUT_PREFIX}size")
    return f"{name}, {held_out} held out" if isinstance(held_out, int) and not isinstance(held_out, bool) else name


def component_models(component: Component) -> tuple[str, ...]:
    """The manifest names of the models a component loads (a workflow's: every task's), in order, once each."""
    if isinstance(component, Consumer):
        names: Sequence[str] = component.models
    elif isinstance(component, Workflow):
        names = [name for task in component.tasks.values() for name in task.models]
    else:
        names = ()
    return tuple(dict.fromkeys(names))


def component_scores(component: Component, models: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``{"scores": {metric: value}, "scores_data": str | None}``: the held-out scores of the models
    ``component`` loads, from the manifest's ``models``.

    When one model has scores, its metric names are the keys; when several do, a metric two of them
    share is kept apart as ``<metric> (<model>)``. ``scores_data`` joins the data names with ``; ``.
    """
    scored = [(name, model_scores(models[name]), scores_data(models[name]))
              for name in component_models(component) if name in models]
    scored = [(name, scores, data) for name, scores, data in scored if scores]
    counts: dict[str, int] = {}
    for _, scores, _ in scored:
        for metric in scores:
            counts[metric] = counts.get(metric, 0) + 1
    merged = {(metric if counts[metric] == 1 else f"{metric} ({name})"): value
              for name, scores, _ in scored for metric, value in scores.items()}
    data = "; ".join(dict.fromkeys(data for _, _, data in scored if data)) or None
    return {"scores": merged, "scores_data": data}
