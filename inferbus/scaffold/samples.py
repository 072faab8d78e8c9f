"""Held-out samples given with ``--samples``: read them, match them to the graph's inputs, record them.

Three formats, each with optional true labels:

=========  ======================================================================================
format     layout
=========  ======================================================================================
``.npz``   one array per input, named like the input (for a one-input model also ``inputs``,
           ``features`` or ``X``, or the only array there is), ``[n, ...]``; labels in
           ``labels`` (or ``label``, ``target``, ``y``)
``.csv``   one row per sample; a header row is optional; a column named ``label`` (or
           ``target``, ``class``, ``y``) holds the labels, the other columns are the inputs' values
           in order
``.jsonl`` one JSON object per line: a key per input (its name or its event field) holding a
           list (or one value), and ``label``
=========  ======================================================================================

The file is copied into ``models/`` as held-out data and listed in the manifest's
``datasets``; the declaration's demo reads it back (:func:`loader_source` writes that code).

Example
-------
>>> held_out = read_samples(Path("iris.npz"), inputs)  # doctest: +SKIP
>>> held_out.rows, held_out.inputs["X"].shape, held_out.truth_kind  # doctest: +SKIP
(30, (30, 4), 'int')
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .errors import ScaffoldError
from .graph import GraphInput

__all__ = ["MAX_SAMPLES_BYTES", "HeldOut", "read_samples"]

MAX_SAMPLES_BYTES = 10 * 1024 * 1024  # the file is committed and ships in models/ with the Lambda bundle
LABEL_NAMES = ("labels", "label", "target", "class", "y")
ONE_INPUT_NAMES = ("inputs", "features", "X", "x")
Format = Literal["npz", "csv", "jsonl"]
TruthKind = Literal["int", "float", "str"]


@dataclass(frozen=True)
class HeldOut:
    """Samples read from a file, by graph input name, and how to read them back.

    Attributes
    ----------
    path, format
        The file given and its format.
    inputs
        By graph input name: ``[n, width]`` (flattened per sample) or ``[n]`` for a one-value input.
    labels, truth_kind
        The true labels (``None`` if the file has none) and their type.
    keys
        Where each input is in the file: an array or JSON key (``.npz``, ``.jsonl``) or a
        ``start:stop`` column range (``.csv``).
    label_key
        Where the labels are (a key, or a column index for ``.csv``).
    header
        A ``.csv`` file starts with a header row.
    """

    path: Path
    format: Format
    inputs: dict[str, np.ndarray]
    labels: np.ndarray | None
    truth_kind: TruthKind | None
    keys: dict[str, str] = field(default_factory=dict)
    label_key: str | None = None
    header: bool = False

    @property
    def rows(self) -> int:
        return len(next(iter(self.inputs.values())))

    @property
    def widths(self) -> dict[str, int]:
        """Values per sample of each input that carries a list."""
        return {name: values.shape[1] for name, values in self.inputs.items() if values.ndim == 2}

    def manifest(self, component: str, sha256: str) -> dict[str, Any]:
        """Its entry in the manifest's ``datasets`` (``sha256`` of the copy in ``models/``)."""
        entry: dict[str, Any] = {"sha256": sha256}
        described = {self.keys[name]: f"{values.dtype} {list(values.shape)}" for name, values in self.inputs.items()}
        if self.labels is not None:
            kind = self.labels.dtype if self.format == "npz" else self.truth_kind
            described[str(self.label_key)] = f"{kind} [{self.rows}] (true labels)"
        entry["arrays" if self.format == "npz" else "columns" if self.format == "csv" else "fields"] = described
        entry["rows"] = self.rows
        entry["source"] = (f"given to `inferbus new consumer {component}` as {self.path.name}; say where these rows "
                           "come from, and that the model never saw them in training")
        return entry


def read_samples(path: Path, inputs: Sequence[GraphInput]) -> HeldOut:
    """Read ``path`` (``.npz``, ``.csv`` or ``.jsonl``) as samples of ``inputs``.

    Raises
    ------
    ScaffoldError
        For a missing, too large or unreadable file, or one that does not match the inputs.
    """
    path = Path(path)
    if not path.is_file():
        raise ScaffoldError(f"--samples {path}: no such file")
    if path.stat().st_size > MAX_SAMPLES_BYTES:
        raise ScaffoldError(f"--samples {path}: {path.stat().st_size / 2**20:.1f} MB; give at most "
                            f"{MAX_SAMPLES_BYTES // 2**20} MB of held-out rows (the file is committed and ships in "
                            "models/)")
    suffix = path.suffix.lower()
    try:
        if suffix == ".npz":
            held_out = _read_npz(path, inputs)
        elif suffix == ".csv":
            held_out = _read_csv(path, inputs)
        elif suffix == ".jsonl":
            held_out = _read_jsonl(path, inputs)
        else:
            raise ScaffoldError(f"--samples {path}: use a .npz, .csv or .jsonl file (see `inferbus new consumer "
                                "--help`)")
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as error:
        if isinstance(error, ScaffoldError):
            raise
        raise ScaffoldError(f"--samples {path}: cannot read it ({error}); see `inferbus new consumer --help` for the "
                            "formats") from None
    return _checked(held_out, inputs)


def _label_kind(labels: np.ndarray) -> TruthKind:
    if labels.dtype.kind in "iub":
        return "int"
    if labels.dtype.kind == "f":
        return "int" if np.all(np.mod(labels, 1) == 0) else "float"
    return "str"


def _read_npz(path: Path, inputs: Sequence[GraphInput]) -> HeldOut:
    with np.load(path, allow_pickle=False) as data:
        arrays = {key: data[key] for key in data.files}
    label_key = next((key for key in LABEL_NAMES if key in arrays), None)
    rest = [key for key in arrays if key != label_key]
    found, keys = {}, {}
    for graph_input in inputs:
        candidates = [graph_input.name, graph_input.field, *(ONE_INPUT_NAMES if len(inputs) == 1 else ())]
        key = next((c for c in candidates if c in arrays and c != label_key), None)
        if key is None and len(inputs) == 1 and len(rest) == 1:
            key = rest[0]
        if key is None:
            alternative = " or inputs" if len(inputs) == 1 else ""
            raise ScaffoldError(f"--samples {path}: no array for input {graph_input.name!r}; name it "
                                f"{graph_input.name!r}{alternative} (arrays found: {', '.join(arrays) or 'none'})")
        found[graph_input.name], keys[graph_input.name] = arrays[key], key
    labels = arrays[label_key].reshape(-1) if label_key else None
    return HeldOut(path, "npz", found, labels, _label_kind(labels) if labels is not None else None, keys, label_key)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _read_csv(path: Path, inputs: Sequence[GraphInput]) -> HeldOut:
    with path.open(newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.reader(handle) if row]
    if not rows:
        raise ScaffoldError(f"--samples {path}: the file is empty")
    first = [cell.strip() for cell in rows[0]]
    lowered = [cell.lower() for cell in first]
    named = {name.lower() for i in inputs for name in (i.name, i.field)} | set(LABEL_NAMES)
    if any(i.kind == "str" for i in inputs):
        header = any(cell in named for cell in lowered)  # text cells do not mark a header: known names do
    else:
        header = any(_number(cell) is None for cell in first)
    body = rows[1:] if header else rows
    label_column = next((lowered.index(n) for n in LABEL_NAMES if n in lowered), None) if header else None
    value_columns = [i for i in range(len(rows[0])) if i != label_column]
    unknown = [graph_input for graph_input in inputs if graph_input.width is None and not graph_input.scalar]
    if len(unknown) > 1:
        raise ScaffoldError(f"--samples {path}: inputs {', '.join(i.name for i in unknown)} have open widths; a .csv "
                            "cannot say where one ends: give a .npz or .jsonl with one array or key per input")
    known = sum(1 if i.scalar else (i.width or 0) for i in inputs)
    found, keys, start = {}, {}, 0
    for graph_input in inputs:
        width = 1 if graph_input.scalar else graph_input.width or len(value_columns) - known
        columns = value_columns[start:start + width]
        if len(columns) != width or width <= 0:
            raise ScaffoldError(f"--samples {path}: {len(value_columns)} value columns, but the model takes {known} "
                                "values per sample; put one sample per row (a header with a 'label' column marks the "
                                "labels)")
        text = [[row[i] for i in columns] for row in body]
        values = np.array(text, dtype=object) if graph_input.kind == "str" else np.array(text, dtype=np.float64)
        found[graph_input.name] = values.reshape(-1) if graph_input.scalar else values
        keys[graph_input.name] = f"{columns[0]}:{columns[-1] + 1}"
        start += width
    if start != len(value_columns):
        raise ScaffoldError(f"--samples {path}: {len(value_columns)} value columns, but the model takes {start} values "
                            "per sample; mark the label column with a header ('label')")
    labels = None
    if label_column is not None:
        raw = [row[label_column] for row in body]
        parsed = [_number(v) for v in raw]
        labels = np.array(raw, dtype=object) if any(v is None for v in parsed) else np.array(parsed, dtype=np.float64)
    kind = _label_kind(labels) if labels is not None else None
    return HeldOut(path, "csv", found, labels, kind, keys, None if label_column is None else str(label_column), header)


def _read_jsonl(path: Path, inputs: Sequence[GraphInput]) -> HeldOut:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not lines or not all(isinstance(line, dict) for line in lines):
        raise ScaffoldError(f"--samples {path}: write one JSON object per line, e.g. "
                            f"{{\"{inputs[0].field}\": [...], \"label\": ...}}")
    first = lines[0]
    label_key = next((key for key in LABEL_NAMES if key in first), None)
    found, keys = {}, {}
    for graph_input in inputs:
        candidates = [graph_input.field, graph_input.name, *(ONE_INPUT_NAMES if len(inputs) == 1 else ())]
        key = next((c for c in candidates if c in first), None)
        if key is None:
            raise ScaffoldError(f"--samples {path}: no key for input {graph_input.name!r}; name it "
                                f"{graph_input.field!r} (keys found: {', '.join(first)})")
        values = [line[key] for line in lines]
        if graph_input.kind == "str":
            found[graph_input.name] = np.array(values, dtype=object).reshape(len(lines), -1)
        else:
            found[graph_input.name] = np.array(values, dtype=np.float64).reshape(len(lines), -1)
        if graph_input.scalar:
            found[graph_input.name] = found[graph_input.name].reshape(-1)
        keys[graph_input.name] = key
    labels = None
    if label_key is not None:
        raw = [line.get(label_key) for line in lines]
        labels = np.array(raw, dtype=object if any(isinstance(v, str) for v in raw) else np.float64)
    return HeldOut(path, "jsonl", found, labels, _label_kind(labels) if labels is not None else None, keys, label_key)


def _checked(held_out: HeldOut, inputs: Sequence[GraphInput]) -> HeldOut:
    """Every input has one row per sample, of its width and type, and the labels as many."""
    path, rows = held_out.path, held_out.rows
    flat = {}
    for graph_input in inputs:
        values = np.asarray(held_out.inputs[graph_input.name])
        if len(values) != rows or rows == 0:
            raise ScaffoldError(f"--samples {path}: inputs have different numbers of rows (or none)")
        values = values.reshape(rows) if graph_input.scalar else values.reshape(rows, -1)
        if graph_input.width is not None and not graph_input.scalar and values.shape[1] != graph_input.width:
            raise ScaffoldError(f"--samples {path}: input {graph_input.name!r} takes {graph_input.width} values per "
                                f"sample, the file has {values.shape[1]}; give samples of the model's own input (the "
                                "rows it was evaluated on)")
        if graph_input.kind != "str":
            if values.dtype.kind not in "iufb":
                raise ScaffoldError(f"--samples {path}: input {graph_input.name!r} takes numbers; the file holds "
                                    f"{values.dtype}")
            if not np.all(np.isfinite(values.astype(np.float64))):
                raise ScaffoldError(f"--samples {path}: input {graph_input.name!r} holds NaN or infinite values; drop "
                                    "those rows (an event cannot carry them)")
            if graph_input.kind == "int" and not np.all(np.mod(values, 1) == 0):
                raise ScaffoldError(f"--samples {path}: input {graph_input.name!r} takes integers; the file holds "
                                    "fractions")
        flat[graph_input.name] = values
    if held_out.labels is not None and len(held_out.labels) != rows:
        raise ScaffoldError(f"--samples {path}: {len(held_out.labels)} labels for {rows} samples")
    return HeldOut(held_out.path, held_out.format, flat, held_out.labels, held_out.truth_kind, held_out.keys,
                   held_out.label_key, held_out.header)
