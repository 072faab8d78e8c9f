"""The model manifest: which file, version and metadata each model name stands for.

``models/manifest.json`` (in the bundle, under ``LAMBDA_TASK_ROOT``) is the one record of each
model: its file, version, labels and whatever else its build wrote. A function names the
models it uses (``INFERBUS_MODELS``); :func:`model_info` finds them. Reading it needs neither
numpy nor onnxruntime (a tokenizer step loads no ONNX model); running a model is :mod:`.inference`.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigurationError

if TYPE_CHECKING:
    from .contracts.core import ModelRef

__all__ = ["MANIFEST_PATH", "ModelInfo", "model_info", "resolve_model_path"]

MANIFEST_PATH = "models/manifest.json"


def resolve_model_path(path: str | os.PathLike[str]) -> Path:
    """Resolve a model path relative to the code root (``LAMBDA_TASK_ROOT`` on Lambda)."""
    candidate = Path(path)
    if candidate.is_absolute():
        return candidate
    return Path(os.environ.get("LAMBDA_TASK_ROOT", ".")) / candidate


@dataclass(frozen=True)
class ModelInfo:
    """One model of the manifest: ``metadata`` is its whole entry (labels, tokenizer, ...)."""

    name: str
    version: str
    path: Path
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def ref(self) -> ModelRef:
        """What results are stamped with."""
        from .contracts.core import ModelRef  # here: a step that stamps nothing never imports pydantic

        return ModelRef(name=self.name, version=self.version)

    @property
    def labels(self) -> list[Any]:
        """The class labels, in the order of the model's probability columns (empty if it has none)."""
        return list(self.metadata.get("labels", []))


@functools.cache
def _manifest(root: str) -> dict[str, Any]:
    path = Path(root) / MANIFEST_PATH
    try:
        return json.loads(path.read_text())["models"]
    except FileNotFoundError:
        raise ConfigurationError(f"no model manifest at {path}: the bundle ships models/manifest.json") from None


def model_info(name: str) -> ModelInfo:
    """The manifest's entry for ``name``.

    Raises
    ------
    ConfigurationError
        When the manifest has no such model.
    """
    models = _manifest(str(resolve_model_path(".")))
    if name not in models:
        raise ConfigurationError(f"model {name!r} is not in {MANIFEST_PATH} (known: {', '.join(sorted(models))}); "
                                 "add it with `inferbus new consumer ... --model FILE.onnx`")
    entry = models[name]
    return ModelInfo(name, str(entry["version"]), resolve_model_path(f"models/{entry['file']}"), entry)
