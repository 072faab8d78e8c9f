"""ONNX model sessions, loaded once per container and run once per batch.

Example
-------
>>> import numpy as np
>>> model = OnnxClassifier.load("models/digits-mlp.onnx", name="digits-mlp", version="1.0.0")  # doctest: +SKIP
>>> labels, probabilities = model.classify(np.zeros((3, 64), dtype=np.float32))  # doctest: +SKIP
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["BatchPrediction", "OnnxClassifier", "load_session", "resolve_model_path"]


def resolve_model_path(path: str | os.PathLike[str]) -> Path:
    """Resolve a model path relative to the code root (``LAMBDA_TASK_ROOT`` on Lambda)."""
    candidate = Path(path)
    if candidate.is_absolute():
        return candidate
    return Path(os.environ.get("LAMBDA_TASK_ROOT", ".")) / candidate


@dataclass(frozen=True)
class BatchPrediction:
    labels: np.ndarray
    probabilities: np.ndarray
    inference_ms: float

    def __len__(self) -> int:
        return len(self.labels)


def load_session(path: str | os.PathLike[str], *, threads: int | None = None) -> Any:
    """Open an ONNX file with full graph optimisation and no thread spinning.

    ``threads`` defaults to the container's vCPUs (``os.cpu_count()``).
    """
    import onnxruntime as ort  # heavy: imported here, at init, not by tools that only parse events

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads or os.cpu_count() or 1
    options.inter_op_num_threads = 1
    # Spinning threads burn the CPU a Lambda pays for while it waits on I/O.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(resolve_model_path(path)), options, providers=["CPUExecutionProvider"])


class OnnxClassifier:
    """A classifier graph with outputs ``label`` [n] and ``probabilities`` [n, classes].

    Parameters
    ----------
    session
        An ``onnxruntime.InferenceSession``.
    name, version
        What results are stamped with, from the model manifest.
    """

    def __init__(self, session: Any, *, name: str, version: str) -> None:
        self.session = session
        self.name = name
        self.version = version
        self.input_name = session.get_inputs()[0].name

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, name: str, version: str, threads: int | None = None) -> OnnxClassifier:
        """Open the ONNX file (see :func:`load_session`)."""
        return cls(load_session(path, threads=threads), name=name, version=version)

    def classify(self, features: np.ndarray) -> BatchPrediction:
        """Run ONE ``session.run`` over the whole batch ``features`` [n, inputs]."""
        started = time.perf_counter()
        labels, probabilities = self.session.run(None, {self.input_name: np.ascontiguousarray(features, dtype=np.float32)})
        return BatchPrediction(labels, probabilities, (time.perf_counter() - started) * 1000.0)
