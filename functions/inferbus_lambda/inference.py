"""ONNX models, found by name in the model manifest, loaded once per container and run once per batch.

A function names the models it uses (``INFERBUS_MODELS``); :func:`model_info` finds them in
``models/manifest.json`` (:mod:`.manifest`).

Example
-------
>>> import numpy as np
>>> model = OnnxClassifier.from_info(model_info("digits-mlp"))  # doctest: +SKIP
>>> prediction = model.classify(np.zeros((3, 64), dtype=np.float32))  # doctest: +SKIP
>>> prediction.labels.shape, prediction.probabilities.shape  # doctest: +SKIP
((3,), (3, 10))
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from .manifest import MANIFEST_PATH, ModelInfo, model_info, resolve_model_path

if TYPE_CHECKING:
    from .contracts.core import ModelRef

__all__ = ["BatchOutputs", "BatchPrediction", "MANIFEST_PATH", "ModelInfo", "OnnxClassifier", "OnnxModel", "load_session",
           "model_info", "resolve_model_path", "zipmap_rows"]

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
    # Read by Python, not by onnxruntime's C++: the bundler's audit hook then sees which model
    # files a function opens, and ships only those.
    model = resolve_model_path(path).read_bytes()
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


# onnxruntime's input types -> the numpy dtype a feed is cast to.
FEED_DTYPES = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int16)": np.int16, "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_, "tensor(string)": np.object_,
}


def zipmap_rows(rows: list[dict[Any, float]]) -> np.ndarray:
    """scikit-learn's ZipMap output (one ``{class: probability}`` per row) as an array [n, classes],
    its columns in the order of the sorted keys (the order of the manifest's ``labels``)."""
    keys = sorted(rows[0]) if rows else []
    return np.array([[row[key] for key in keys] for row in rows], dtype=np.float32).reshape(len(rows), len(keys))


@dataclass(frozen=True)
class BatchOutputs:
    """Every output of ONE ``session.run``, by the graph's output names; a ZipMap output as an
    array [n, classes] (see :func:`zipmap_rows`)."""

    outputs: dict[str, np.ndarray]
    inference_ms: float

    def __getitem__(self, name: str) -> np.ndarray:
        return self.outputs[name]


class OnnxModel:
    """Any ONNX graph: named inputs in, named outputs out, ONE ``session.run`` per batch.

    Parameters
    ----------
    session
        An ``onnxruntime.InferenceSession``.
    name, version
        What results are stamped with, from the model manifest.
    metadata
        The model's manifest entry.

    Example
    -------
    >>> model = OnnxModel.from_info(model_info("risk-logreg"))  # doctest: +SKIP
    >>> batch = model.run({"features": np.zeros((3, 30))})  # doctest: +SKIP
    >>> batch["probabilities"].shape  # doctest: +SKIP
    (3, 2)
    """

    def __init__(self, session: Any, *, name: str, version: str, metadata: dict[str, Any] | None = None) -> None:
        self.session = session
        self.info = ModelInfo(name, version, Path(), metadata or {})
        self.name, self.version, self.metadata = name, version, self.info.metadata
        self.labels = self.info.labels
        self.input_types = {graph_input.name: FEED_DTYPES.get(graph_input.type, np.float32)
                            for graph_input in session.get_inputs()}
        self.output_names = [graph_output.name for graph_output in session.get_outputs()]

    @cached_property
    def ref(self) -> ModelRef:
        """What results are stamped with (made on first use: a step that stamps nothing never imports pydantic)."""
        return self.info.ref

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, name: str, version: str, threads: int | None = None) -> Self:
        """Open the ONNX file (see :func:`load_session`)."""
        return cls(load_session(path, threads=threads), name=name, version=version)

    @classmethod
    def from_info(cls, info: ModelInfo) -> Self:
        """Open a model of the manifest."""
        return cls(load_session(info.path), name=info.name, version=info.version, metadata=info.metadata)

    def run(self, feeds: Mapping[str, Any]) -> BatchOutputs:
        """Run ONE ``session.run`` over the whole batch: each graph input by name, cast to its type."""
        arrays = {name: np.ascontiguousarray(value, dtype=self.input_types[name]) for name, value in feeds.items()}
        started = time.perf_counter()
        values = self.session.run(None, arrays)
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        outputs = {name: zipmap_rows(value) if isinstance(value, list) else np.asarray(value)
                   for name, value in zip(self.output_names, values, strict=True)}
        return BatchOutputs(outputs, elapsed_ms)


class OnnxClassifier(OnnxModel):
    """A classifier graph with one input [n, features] and outputs ``label`` [n] and probabilities.

    The probabilities are the second output: a tensor [n, classes], or scikit-learn's ZipMap
    (a list of ``{class: probability}``), which is read in the order of its keys; export with
    ``zipmap=False`` to skip that conversion (about 5x faster at a batch of 1,000). Parameters as
    for :class:`OnnxModel`, whose ``run`` it has too.
    """

    def __init__(self, session: Any, *, name: str, version: str, metadata: dict[str, Any] | None = None) -> None:
        super().__init__(session, name=name, version=version, metadata=metadata)
        self.input_name = next(iter(self.input_types))

    def classify(self, features: np.ndarray) -> BatchPrediction:
        """Run ONE ``session.run`` over the whole batch ``features`` [n, inputs] (:meth:`run`, whose
        first two outputs are the labels and the probabilities)."""
        batch = self.run({self.input_name: features})
        labels, probabilities = (batch[name] for name in self.output_names[:2])
        return BatchPrediction(labels, probabilities, batch.inference_ms)
