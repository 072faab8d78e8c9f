"""Read an ONNX graph with onnxruntime and say how its inputs and outputs map to event fields.

Only onnxruntime is needed (``InferenceSession.get_inputs()/get_outputs()``: names, types,
shapes), plus one run of the graph on a small batch (the held-out samples if you gave some,
else seeded random values) to learn what the shapes leave open: how many classes, ZipMap
keys, whether the second output is a distribution. ``onnx`` is used if it is installed, only to
read class labels that no output shows.

What maps, and to what:

======================================  ==============================================================
graph                                   event field
======================================  ==============================================================
input float/int ``[batch, k]``          ``list[float]`` / ``list[int]`` of exactly k values
input ``[batch, None]``                 the same, k read from your samples (a batch must be rectangular)
input ``[batch, d1, d2, ...]``          a flat list of d1*d2*... values, reshaped for the graph
input ``[batch]``                       one number per event
input string ``[batch, 1]``             one string per event
outputs ``label [batch]`` + probabilities  a classifier: ``label``, ``confidence``, ``probabilities``
  ``[batch, k]`` or a ZipMap            (``scores`` when the rows do not sum to 1)
one float output ``[batch, k]`` of      a classifier: ``label``, ``probability``, ``scores`` (label ->
  logits, scores or probabilities       probability); which outputs are scores: :mod:`.heads`
one float output ``[batch]`` / ``[batch, k]``  a regressor: ``prediction`` (a number or k numbers)
anything else with a batch dimension    one field per output
======================================  ==============================================================

Example
-------
>>> spec = read_graph(open_session("models/digits-mlp.onnx"))  # doctest: +SKIP
>>> spec.task, spec.inputs[0].field, spec.inputs[0].width, spec.labels  # doctest: +SKIP
('classifier', 'pixels', 64, (0, 1, 2, 3, 4, 5, 6, 7, 8, 9))
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .errors import ScaffoldError
from .heads import Head, Task, choose_head, head_labels
from .names import identifier, unique

__all__ = ["GraphInput", "GraphOutput", "GraphSpec", "Kind", "open_session", "probe_feeds", "read_graph",
           "dims", "read_inputs", "RESULT_ENVELOPE_FIELDS", "run_samples", "sample_feeds", "TENSOR_KINDS", "with_widths"]

Kind = Literal["float", "int", "str", "bool"]
TENSOR_KINDS: dict[str, tuple[Kind, str]] = {
    "tensor(float)": ("float", "float32"), "tensor(double)": ("float", "float64"),
    "tensor(float16)": ("float", "float16"),
    "tensor(int64)": ("int", "int64"), "tensor(int32)": ("int", "int32"), "tensor(int16)": ("int", "int16"),
    "tensor(int8)": ("int", "int8"), "tensor(uint8)": ("int", "uint8"), "tensor(uint16)": ("int", "uint16"),
    "tensor(uint32)": ("int", "uint32"), "tensor(uint64)": ("int", "uint64"), "tensor(string)": ("str", "string"),
    "tensor(bool)": ("bool", "bool"),
}
# Input names that say nothing: a model with one such input gets the field name ``features``.
GENERIC_INPUT_NAMES = frozenset({"x", "input", "inputs", "float_input", "input_1", "input_0", "data", "input_data",
                                 "tensor", "features", "feature", "double_input", "int_input", "input_x"})
# Every result carries these beside the model's outputs (see codegen).
RESULT_ENVELOPE_FIELDS = frozenset({"input_id", "model", "inference_ms", "batch_size"})
PROBE_ROWS = 2
PROBE_SEED = 7
MAX_PROBE_ROWS = 1000


@dataclass(frozen=True)
class GraphInput:
    """One graph input and the event field that carries it.

    Attributes
    ----------
    name
        The graph's name for it (the feed key).
    field
        The event field (a Python identifier).
    kind, dtype
        ``float``/``int``/``str``; the numpy dtype name of the graph's type (``float32``).
    shape
        As the graph declares it; ``None`` for a dynamic dimension.
    record_shape
        One event's part of the batch: ``()`` for one value, ``(k,)`` or ``(d1, d2, ...)``;
        ``None`` where a dimension is still unknown (read from samples).
    """

    name: str
    field: str
    kind: Kind
    dtype: str
    shape: tuple[int | None, ...]
    record_shape: tuple[int | None, ...]

    @property
    def scalar(self) -> bool:
        """One value per event (the graph input is ``[batch]``)."""
        return self.record_shape == ()

    @property
    def width(self) -> int | None:
        """Values per event (a flat list), ``None`` while a dimension is unknown or for a scalar."""
        if self.scalar or any(dim is None for dim in self.record_shape):
            return None
        return math.prod(self.record_shape)  # type: ignore[arg-type]

    @property
    def flat(self) -> bool:
        """The event carries a flat list that the handler reshapes for the graph."""
        return len(self.record_shape) > 1

    def manifest(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape)}


@dataclass(frozen=True)
class GraphOutput:
    """One graph output and the result field that carries it.

    Attributes
    ----------
    name, field, kind, dtype
        As for :class:`GraphInput`; a ZipMap output has kind ``float``.
    width
        Values per result: ``None`` for one value, ``0`` for a list whose length varies.
    zipmap
        A ZipMap (``seq(map(...))``): the kit turns it into a ``[batch, classes]`` array.
    declared
        The graph's type and shape, for the manifest.
    """

    name: str
    field: str
    kind: Kind
    dtype: str
    width: int | None
    zipmap: bool = False
    declared: tuple[str, tuple[int | None, ...]] = ("", ())

    def manifest(self) -> dict[str, Any]:
        graph_type, shape = self.declared
        dtype = self.dtype if graph_type in TENSOR_KINDS else graph_type
        return {"name": self.name, "dtype": dtype, "shape": list(shape)}


@dataclass(frozen=True)
class GraphSpec:
    """What the scaffold read from a graph.

    Attributes
    ----------
    task
        ``classifier`` (a label and probabilities or scores, or one output of class scores),
        ``regressor`` (one float output) or ``generic`` (one result field per output).
    labels
        A classifier's class labels in the order of its probability columns; ``None`` when the
        graph does not show them (then any label of the right type is accepted).
    distribution
        A classifier's scores are probabilities (each row sums to 1).
    label_output, score_output
        A classifier's two outputs; a classifier from scores has only ``score_output``.
    head
        For a classifier whose one output is class scores: how the handler turns them into
        probabilities (``logits``: softmax; ``logit``: sigmoid; see :mod:`.heads`); else ``None``.
    reading
        Lines to print about how the graph was read when the evidence was not certain, each naming
        the flag that changes it.
    producer
        Who exported the graph (``skl2onnx``), from its metadata.
    """

    inputs: tuple[GraphInput, ...]
    outputs: tuple[GraphOutput, ...]
    task: Literal["classifier", "regressor", "generic"]
    labels: tuple[int | str, ...] | None = None
    distribution: bool = False
    label_output: GraphOutput | None = None
    score_output: GraphOutput | None = None
    head: Head | None = None
    reading: tuple[str, ...] = ()
    producer: str = ""

    @property
    def classes(self) -> int | None:
        if self.head is not None:
            return len(self.labels or ())
        return self.score_output.width if self.score_output else None


def open_session(path: Path | str, option: str = "--model") -> Any:
    """An onnxruntime session on ``path`` (``option`` names where the path came from, in errors).

    Raises
    ------
    ScaffoldError
        When the file is missing or onnxruntime cannot load it.
    """
    path = Path(path)
    if not path.is_file():
        raise ScaffoldError(f"{option} {path}: no such file; give the path of your .onnx file")
    import onnxruntime as ort

    try:
        options = ort.SessionOptions()
        options.log_severity_level = 4  # errors reach the user as one line (ours), not as onnxruntime's log too
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as error:  # noqa: BLE001 - onnxruntime raises several types; all mean "cannot load"
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ScaffoldError(f"{option} {path}: onnxruntime {ort.__version__} cannot load it ({reason}); export it "
                            "again (e.g. skl2onnx with target_opset<=17) and check it loads with "
                            "onnxruntime.InferenceSession") from None


def keeps_external_data(path: Path) -> bool:
    """Whether the model keeps tensors in external data files beside it (``.onnx.data``, as ``torch.onnx.export``
    writes a large model): then the ``.onnx`` file alone is not the model."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    tensors = [*model.graph.initializer, *(attribute.t for node in model.graph.node for attribute in node.attribute
                                           if attribute.HasField("t"))]
    return any(tensor.data_location == onnx.TensorProto.EXTERNAL for tensor in tensors)


def dims(shape: Sequence[Any]) -> tuple[int | None, ...]:
    """onnxruntime shapes: ints for fixed dimensions; ``None`` or a symbol (``'N'``) for dynamic ones."""
    return tuple(dim if isinstance(dim, int) and dim >= 0 else None for dim in shape)


def read_inputs(session: Any) -> list[GraphInput]:
    """The graph's inputs as event fields; a dimension other than the batch may still be unknown.

    Raises
    ------
    ScaffoldError
        For an input the scaffold cannot carry in an event (a map, a fixed batch, no batch dimension).
    """
    found = []
    graph_inputs = session.get_inputs()
    for graph_input in graph_inputs:
        name, graph_type, shape = graph_input.name, graph_input.type, dims(graph_input.shape)
        if graph_type not in TENSOR_KINDS or TENSOR_KINDS[graph_type][0] == "bool":
            raise ScaffoldError(f"input {name!r} is {graph_type}: the scaffold maps float, int and string tensors; "
                                "export the model with numeric tensor inputs (skl2onnx: FloatTensorType)")
        if not shape:
            raise ScaffoldError(f"input {name!r} is a single value with no batch dimension: export it with a dynamic "
                                "first dimension, e.g. skl2onnx initial_types=[('X', FloatTensorType([None, k]))]")
        if shape[0] is not None:
            raise ScaffoldError(f"input {name!r} has a fixed batch dimension {shape[0]} (shape {list(shape)}): a "
                                "consumer scores a whole batch in ONE run; export with a dynamic first dimension "
                                "(None), e.g. skl2onnx FloatTensorType([None, k]) or torch.onnx.export "
                                "dynamic_axes={'<input>': {0: 'batch'}}")
        record = shape[1:]
        if len(record) > 1 and any(dim is None for dim in record):
            raise ScaffoldError(f"input {name!r} has shape {list(shape)}: with more than two dimensions every one but "
                                "the batch must be fixed; export with fixed sizes, or flatten to [None, k]")
        kind, dtype = TENSOR_KINDS[graph_type]
        found.append(GraphInput(name=name, field=identifier(name), kind=kind, dtype=dtype, shape=shape,
                                record_shape=record))
    if len(found) == 1 and found[0].field in GENERIC_INPUT_NAMES and found[0].kind != "str":
        found[0] = replace(found[0], field="features")
    fields = unique([graph_input.field for graph_input in found])
    return [replace(graph_input, field=field) for graph_input, field in zip(found, fields, strict=True)]


def with_widths(inputs: Sequence[GraphInput], widths: Mapping[str, int]) -> list[GraphInput]:
    """``inputs`` with each unknown width (``[batch, None]``) set from ``widths`` (by input name).

    Raises
    ------
    ScaffoldError
        When an input's width is unknown and ``widths`` does not give it.
    """
    resolved = []
    for graph_input in inputs:
        if graph_input.record_shape == (None,):
            if graph_input.name not in widths:
                raise ScaffoldError(f"input {graph_input.name!r} has shape {list(graph_input.shape)}: its width is "
                                    "not in the graph; pass --samples FILE (a few rows of real inputs) so the scaffold "
                                    "can read it, or export with a fixed width [None, k]")
            graph_input = replace(graph_input, record_shape=(int(widths[graph_input.name]),))
        resolved.append(graph_input)
    return resolved


def probe_feeds(inputs: Sequence[GraphInput], rows: int = PROBE_ROWS) -> dict[str, np.ndarray]:
    """Seeded random values of the right shapes: what the graph is run on when no samples are given."""
    rng = np.random.default_rng(PROBE_SEED)
    feeds = {}
    for graph_input in inputs:
        shape = (rows, *graph_input.record_shape)
        if graph_input.kind == "str":
            feeds[graph_input.name] = np.full(shape, "probe", dtype=object)
        elif graph_input.kind == "int":
            feeds[graph_input.name] = rng.integers(0, 4, size=shape).astype(graph_input.dtype)
        else:
            feeds[graph_input.name] = rng.normal(size=shape).astype(graph_input.dtype)
    return feeds


def sample_feeds(inputs: Sequence[GraphInput], samples: Mapping[str, np.ndarray], start: int,
                 stop: int) -> dict[str, np.ndarray]:
    """Rows ``start:stop`` of held-out inputs (by graph input name), shaped and typed as the graph takes them."""
    return {i.name: np.asarray(samples[i.name][start:stop]).reshape(-1, *i.record_shape).astype(
        object if i.kind == "str" else i.dtype) for i in inputs}


def run_samples(session: Any, spec: GraphSpec, samples: Mapping[str, np.ndarray]) -> dict[str, list[Any]]:
    """Every output of the graph on every held-out row (in runs of up to 1,000 rows), by output name."""
    total = min(len(values) for values in samples.values())
    outputs: dict[str, list[Any]] = {output.name: [] for output in spec.outputs}
    for start in range(0, total, MAX_PROBE_ROWS):
        values = _run(session, sample_feeds(spec.inputs, samples, start, min(total, start + MAX_PROBE_ROWS)))
        for output, value in zip(spec.outputs, values, strict=True):
            outputs[output.name].extend(value if output.zipmap else list(np.asarray(value)))
    return outputs


def _run(session: Any, feeds: Mapping[str, np.ndarray]) -> list[Any]:
    try:
        return session.run(None, dict(feeds))
    except Exception as error:  # noqa: BLE001 - onnxruntime's errors have no common base
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        shapes = ", ".join(f"{name} {list(np.shape(value))}" for name, value in feeds.items())
        raise ScaffoldError(f"the graph does not run on a batch of inputs ({shapes}): {reason}; check the input widths "
                            "(--samples rows must have as many values as the model was trained on)") from None


def _python(value: Any) -> int | str | float:
    return value.item() if isinstance(value, np.generic) else value


def _nodes(path: Path | None) -> list[Any] | None:
    """The graph's nodes, if ``onnx`` is installed to read them (``None`` otherwise: the callers fall back)."""
    if path is None:
        return None
    try:
        import onnx
    except ImportError:
        return None
    try:
        return list(onnx.load(str(path), load_external_data=False).graph.node)
    except Exception:  # noqa: BLE001 - a file onnxruntime loads but onnx cannot: fall back to the other ways
        return None


def _final_op(path: Path | None, output: str) -> str | None:
    """The type of the node that makes graph output ``output`` (``Softmax``), when the nodes can be read."""
    return next((node.op_type for node in _nodes(path) or () if output in node.output), None)


def _declared_labels(path: Path | None) -> tuple[int | str, ...] | None:
    """Class labels from the graph's classifier or ZipMap node, if ``onnx`` is installed to read them."""
    for node in _nodes(path) or ():
        for attribute in node.attribute:
            if attribute.name == "classlabels_int64s" and attribute.ints:
                return tuple(int(v) for v in attribute.ints)
            if attribute.name == "classlabels_strings" and attribute.strings:
                return tuple(v.decode() for v in attribute.strings)
    return None


def _output(graph_output: Any, value: Any, field: str, batch: int) -> GraphOutput:
    name, graph_type, shape = graph_output.name, graph_output.type, dims(graph_output.shape)
    if graph_type.startswith("seq(map(") and isinstance(value, list):
        width = len(value[0]) if value else 0
        return GraphOutput(name=name, field=field, kind="float", dtype="float32", width=width, zipmap=True,
                           declared=(graph_type, shape))
    if graph_type not in TENSOR_KINDS:
        raise ScaffoldError(f"output {name!r} is {graph_type}: the scaffold maps tensors and ZipMaps; export the model "
                            "without it, or write the result fields and infer() by hand (docs/extending.md)")
    array = np.asarray(value)
    if array.ndim == 0 or array.shape[0] != batch:
        raise ScaffoldError(f"output {name!r} has shape {list(array.shape)} for a batch of {batch} inputs, not one row "
                            "per input: export per-row outputs, or write infer() by hand (docs/extending.md)")
    kind, dtype = TENSOR_KINDS[graph_type]
    record = shape[1:] if len(shape) == array.ndim else (None,) * (array.ndim - 1)
    if array.ndim == 1 or (array.ndim == 2 and array.shape[1] == 1 and record == (1,)):
        width = None
    elif all(dim is not None for dim in record):
        width = math.prod(record)  # type: ignore[arg-type]
    else:
        width = 0  # a length the graph leaves open
    return GraphOutput(name=name, field=field, kind=kind, dtype=dtype, width=width, declared=(graph_type, shape))


def _is_distribution(rows: np.ndarray) -> bool:
    return bool(rows.size) and bool(np.all((rows >= -1e-6) & (rows <= 1 + 1e-6))) and bool(
        np.allclose(rows.sum(axis=1), 1.0, atol=1e-3))


def read_graph(session: Any, inputs: Sequence[GraphInput] | None = None, *,
               samples: Mapping[str, np.ndarray] | None = None, sample_labels: Sequence[Any] | None = None,
               path: Path | None = None, task: Task | None = None,
               labels: Sequence[int | str] | None = None) -> GraphSpec:
    """Read ``session``'s graph and run it once to see what its outputs hold.

    Parameters
    ----------
    session
        From :func:`open_session`.
    inputs
        From :func:`read_inputs` and :func:`with_widths`; default, read them (every width fixed).
    samples
        Held-out inputs by graph input name (``[n, ...]``): the graph runs on up to 1,000 of
        them instead of random values.
    sample_labels
        Their true labels: for a classifier with string labels the graph does not show, the
        labels are these, sorted, if there are as many as it has classes.
    path
        The ONNX file, to read class labels and the node that makes an output with ``onnx`` if it
        is installed.
    task, labels
        ``--task`` and ``--labels``: how to read one float output (:func:`~.heads.choose_head`).

    Raises
    ------
    ScaffoldError
        For a graph it cannot map, saying what to do.
    """
    inputs = list(inputs if inputs is not None else with_widths(read_inputs(session), {}))
    if samples:
        rows = min(MAX_PROBE_ROWS, *(len(values) for values in samples.values()))
        feeds = sample_feeds(inputs, samples, 0, rows)
    else:
        rows, feeds = PROBE_ROWS, probe_feeds(inputs)
    values = _run(session, feeds)
    graph_outputs = session.get_outputs()
    fields = unique([identifier(o.name) for o in graph_outputs], set(RESULT_ENVELOPE_FIELDS))
    outputs = [_output(o, v, f, rows) for o, v, f in zip(graph_outputs, values, fields, strict=True)]
    meta = session.get_modelmeta()
    producer = meta.producer_name or ""

    classifier = _classifier(outputs, values)
    if classifier is not None and (task == "regressor" or labels is not None):
        flag = "--task regressor" if task == "regressor" else "--labels"
        raise ScaffoldError(f"{flag}: this graph outputs a label ({classifier[0].name!r}) and class scores "
                            f"({classifier[1].name!r}), so it is a classifier that names its own classes; drop {flag}")
    if classifier is not None:
        label_output, score_output = classifier
        scores = values[outputs.index(score_output)]
        rows_of_scores = [[row[key] for key in sorted(row)] for row in scores] if score_output.zipmap else scores
        score_rows = np.asarray(rows_of_scores, dtype=np.float64)
        distribution = _is_distribution(score_rows)
        labels = _labels(path, label_output, score_output, scores, np.asarray(values[outputs.index(label_output)]),
                         sample_labels)
        renamed = {label_output.name: replace(label_output, field="label"),
                   score_output.name: replace(score_output, field="probabilities" if distribution else "scores")}
        return GraphSpec(tuple(inputs), tuple(renamed[o.name] for o in outputs), "classifier", labels=labels,
                         distribution=distribution, label_output=renamed[label_output.name],
                         score_output=renamed[score_output.name], producer=producer)
    if len(outputs) == 1 and outputs[0].kind == "float" and not outputs[0].zipmap and outputs[0].width != 0:
        return _one_float_output(inputs, outputs[0], values[0], producer, path=path, sample_labels=sample_labels,
                                 task=task, labels=labels)
    if task is not None or labels is not None:
        flag = f"--task {task}" if task is not None else "--labels"
        found = ", ".join(f"{o.name} ({o.kind})" for o in outputs)
        wanted = ("a regressor from ONE float output" if task == "regressor" else "a classifier from a label output "
                  "with class scores, or from ONE float output of scores")
        raise ScaffoldError(f"{flag}: the scaffold reads {wanted}; this graph has {found}; drop {flag} (each output "
                            "becomes a result field) or write infer() by hand (docs/extending.md)")
    return GraphSpec(tuple(inputs), tuple(outputs), "generic", producer=producer)


def _one_float_output(inputs: Sequence[GraphInput], output: GraphOutput, value: Any, producer: str, *,
                      path: Path | None, sample_labels: Sequence[Any] | None, task: Task | None,
                      labels: Sequence[int | str] | None) -> GraphSpec:
    """One float output: class scores (a classifier with a head, see :mod:`.heads`) or a regressor's prediction."""
    rows = np.asarray(value, dtype=np.float64).reshape(len(value), -1)
    columns = output.width or 1
    head, reading = choose_head(output.name, columns, final_op=_final_op(path, output.name),
                                distribution=columns > 1 and _is_distribution(rows), sample_labels=sample_labels,
                                labels=labels, task=task)
    lines = (reading,) if reading else ()
    if head is None:
        return GraphSpec(tuple(inputs), (replace(output, field="prediction"),), "regressor", reading=lines,
                         producer=producer)
    classes, labels_note = head_labels(head, columns, labels, sample_labels)
    scores = replace(output, field="scores")
    return GraphSpec(tuple(inputs), (scores,), "classifier", labels=classes, distribution=True, score_output=scores,
                     head=head, reading=lines + ((labels_note,) if labels_note else ()), producer=producer)


def _classifier(outputs: list[GraphOutput], values: list[Any]) -> tuple[GraphOutput, GraphOutput] | None:
    """A label output ``[batch]`` (int or string), a score output ``[batch, k>=2]`` or a ZipMap, and nothing else."""
    if len(outputs) != 2:
        return None
    for label_output, score_output in (outputs, outputs[::-1]):
        is_label = label_output.kind in ("int", "str") and label_output.width is None and not label_output.zipmap
        is_scores = score_output.zipmap or (score_output.kind == "float" and (score_output.width or 0) >= 2)
        if is_label and is_scores:
            return label_output, score_output
    return None


def _labels(path: Path | None, label_output: GraphOutput, score_output: GraphOutput, scores: Any,
            predicted: np.ndarray, sample_labels: Sequence[Any] | None) -> tuple[int | str, ...] | None:
    """The class labels in the order of the score columns, or ``None`` when nothing shows them for sure."""
    k = score_output.width or 0
    if score_output.zipmap and scores:
        return tuple(_python(key) for key in sorted(scores[0]))
    declared = _declared_labels(path)
    if declared is not None and len(declared) == k:
        return declared
    seen = {_python(v) for v in predicted.tolist()}
    if label_output.kind == "int":
        guess = tuple(range(k))
        return guess if seen <= set(guess) else None
    if sample_labels is not None:
        distinct = tuple(sorted({str(v) for v in sample_labels}))
        if len(distinct) == k and seen <= set(distinct):
            return distinct
    return None
