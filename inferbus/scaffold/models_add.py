"""``inferbus models add PATH.onnx``: check a model against the kit's I/O contract and record it.

The step for a model without a new consumer: a new version of a model a component loads, or one
your own consumer will name in its ``models``. It reads the graph as ``inferbus new consumer``
does (:func:`.graph.read_inputs`: the same rules, the same messages), then

1. checks the contract: every input float, int or string with a dynamic first (batch) dimension;
   every output batched too, declared so and on a real run (32 rows in, 32 rows out);
2. measures a quick benchmark with onnxruntime on this machine: the median time of one run on a
   batch of 1 and of 32 (seeded random inputs, or rows of ``--samples``), with the CPU named;
3. copies the file into ``models/`` and writes its manifest entry: ``sha256``, ``bytes``,
   ``inputs``, ``outputs``, ``benchmark``, and ``metrics.holdout_<metric>`` for each
   ``--scores metric=value`` measured on ``--data`` (how :mod:`inferbus.model.scores` finds them).

Example
-------
>>> added = add_model(Path("iris.onnx"), scores={"accuracy": 0.96}, data="iris, 30 held out")  # doctest: +SKIP
>>> added.name, added.entry["benchmark"]["batch_32_ms_median"]  # doctest: +SKIP
('iris', 0.021)
"""

from __future__ import annotations

import hashlib
import math
import os
import platform
import re
import shutil
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from inferbus.model.names import NAME
from inferbus.model.scores import HOLDOUT_PREFIX

from .errors import ScaffoldError
from .graph import (
    TENSOR_KINDS,
    GraphInput,
    dims,
    keeps_external_data,
    open_session,
    probe_feeds,
    read_inputs,
    sample_feeds,
    with_widths,
)
from .names import model_name_of
from .project import Project
from .samples import read_samples

__all__ = ["BENCH_BATCHES", "AddedModel", "add_model", "cpu_name", "parse_scores"]

# Metrics that are a share of the held-out rows, so between 0 and 1 (an error such as mae is not).
FRACTION_METRICS = re.compile(r"(^|_)(accuracy|f1|precision|recall|auc|map\d*)$")
OPTION = "PATH.onnx"  # what the messages call the file (the CLI names the command before them)
BENCH_BATCHES = (1, 32)
BENCH_RUNS = 25
# The width an input gets in the benchmark when the graph leaves it open ([batch, None]) and no --samples say it.
OPEN_WIDTH = 16
FIRST_VERSION = "1.0.0"
DYNAMIC_BATCH_FIX = "export it with a dynamic batch axis on every input and output"
METRIC = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class AddedModel:
    """What ``models add`` wrote.

    Attributes
    ----------
    name
        The model's name in the manifest (what a declaration's ``models`` names).
    file
        Its copy, relative to the repository (``models/iris.onnx``).
    entry
        Its manifest entry as written.
    replaced
        It took the place of an entry of the same name (``--replace``).
    notes
        One line per thing decided for you.
    """

    name: str
    file: str
    entry: dict[str, Any]
    replaced: bool
    notes: tuple[str, ...]


def parse_scores(pairs: Sequence[str]) -> dict[str, float]:
    """``["accuracy=0.93", "entity_f1=0.81"]`` -> ``{"accuracy": 0.93, "entity_f1": 0.81}``.

    Raises
    ------
    ScaffoldError
        For a pair that is not ``metric=number`` with a snake_case metric and a finite number.
    """
    scores = {}
    for pair in pairs:
        metric, _, text = pair.partition("=")
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not METRIC.fullmatch(metric) or metric.startswith(HOLDOUT_PREFIX) or not math.isfinite(value):
            raise ScaffoldError(f"--scores {pair}: give metric=value, a snake_case metric and a number, e.g. "
                                "accuracy=0.93 or entity_f1=0.81 (the manifest stores it as holdout_<metric>)")
        if FRACTION_METRICS.search(metric) and not 0 <= value <= 1:
            raise ScaffoldError(f"--scores {pair}: {metric} is a fraction, 0 to 1 (write 93 % as 0.93)")
        scores[metric] = value
    return scores


def cpu_name() -> str:
    """This machine's CPU model, as the kernel names it (``/proc/cpuinfo``), and how many cores it has."""
    name = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    name = name or platform.processor() or platform.machine() or "unknown CPU"
    return f"{name}, {os.cpu_count()} cores"


def add_model(path: Path, name: str | None = None, *, samples: Path | None = None,
              scores: Mapping[str, float] | None = None, data: str | None = None, replace: bool = False,
              project: Project | None = None, runs: int = BENCH_RUNS) -> AddedModel:
    """Check ``path`` against the kit's I/O contract, benchmark it, copy it into ``models/`` and write
    its manifest entry.

    Parameters
    ----------
    path
        The ``.onnx`` file.
    name
        Its manifest name; default from the file name (``Iris_LogReg.onnx`` -> ``iris-logreg``).
    samples
        Held-out rows (``.npz``, ``.csv``, ``.jsonl``, as for ``new consumer``): the benchmark runs on them,
        and they give the width of an input the graph leaves open.
    scores, data
        What the model scored on held-out data, ``metric -> value``, and that data's name (required with
        ``scores``).
    replace
        Take the place of the entry of the same name: a new version of that model.
    project
        The repository written into (default: the one this ``inferbus`` comes from).
    runs
        Timed runs per batch size.

    Raises
    ------
    ScaffoldError
        When the file is not an ONNX model onnxruntime opens, breaks the contract, or the name is taken;
        nothing has been written.
    """
    project = project or Project.here()
    path = Path(path)
    if path.suffix.lower() != ".onnx":
        raise ScaffoldError(f"{OPTION} {path}: give an .onnx file (export your model with torch.onnx.export, "
                            "skl2onnx or tf2onnx first)")
    scores = dict(scores or {})
    if scores and not (data and data.strip()):
        raise ScaffoldError("--scores needs --data NAME: the held-out data they were measured on")
    name = name or model_name_of(path, OPTION)
    if not NAME.fullmatch(name):
        raise ScaffoldError(f"--name {name}: give lowercase words joined by '-', e.g. iris-logreg")
    models = project.manifest_models()
    previous = models.get(name)
    if previous is not None and not replace:
        raise ScaffoldError(f"models/manifest.json has a model named {name!r} already: pass --replace to put "
                            f"{path.name} in its place (a new version), or --name another")
    target = project.models / (previous["file"] if previous else f"{name}.onnx")
    if previous is None and target.exists():
        raise ScaffoldError(f"{project.relative(target)} exists and is no model of the manifest: pass --name another")

    session = open_session(path, OPTION)
    inputs = read_inputs(session)
    outputs = _batched_outputs(session)
    inputs, feeds, fed_with, hint, notes = _bench_feeds(inputs, samples)
    _check_rows(session, outputs, feeds[max(BENCH_BATCHES)], hint)

    inlined = _inlined(path)
    sha256 = hashlib.sha256(inlined).hexdigest() if inlined is not None else project.manifest_io().sha256_of(path)
    if inlined is not None:
        notes.append(f"{path.name} keeps weights in external data files; models/{target.name} holds them inline (one "
                     "file, as a function's bundle takes it)")
    for other, entry in models.items():
        if other != name and entry.get("sha256") == sha256:
            notes.append(f"the same file is in the manifest already as {other!r}")
    entry = _entry(path, session, inputs, outputs, previous, file=target.name, sha256=sha256, scores=scores, data=data)
    entry["benchmark"] = _benchmark(session, feeds, runs, fed_with)
    if inlined is not None:
        entry["bytes"] = len(inlined)  # of the file in models/, its weights inside
    if previous is not None:
        kept = sorted(set(previous) - set(entry) - {"metrics", "built_with"})
        entry.update({key: previous[key] for key in kept})
        notes.append(f"version {previous.get('version')} -> {entry['version']}"
                     + (f"; kept from the previous entry: {', '.join(kept)}" if kept else ""))
        if not scores:
            notes.append("the previous metrics measured the previous file and are dropped: record this one's with "
                         "--scores metric=value --data NAME")
    _write(project, path, target, name, entry, content=inlined)
    return AddedModel(name=name, file=project.relative(target), entry=entry, replaced=previous is not None,
                      notes=tuple(notes))


def _bench_feeds(inputs: list[GraphInput], samples: Path | None) -> tuple[
        list[GraphInput], dict[int, dict[str, np.ndarray]], str, str, list[str]]:
    """The inputs with every width known, a feed per benchmark batch size, what they hold, what to do if the
    graph does not run on them, and a note when a width was guessed."""
    if samples is not None:
        held_out = read_samples(Path(samples), inputs)
        inputs = with_widths(inputs, held_out.widths)
        feeds = {size: sample_feeds(inputs, _cycled(held_out.inputs, size), 0, size) for size in BENCH_BATCHES}
        return inputs, feeds, f"rows of {Path(samples).name}", DYNAMIC_BATCH_FIX, []
    open_widths = {i.name: OPEN_WIDTH for i in inputs if i.record_shape == (None,)}
    inputs = with_widths(inputs, open_widths)
    feeds = {size: probe_feeds(inputs, rows=size) for size in BENCH_BATCHES}
    if not open_widths:
        return inputs, feeds, "seeded random values", DYNAMIC_BATCH_FIX, []
    named = ", ".join(sorted(open_widths))
    note = (f"benchmarked with {OPEN_WIDTH} values per row for {named} (the graph leaves the width open); pass "
            "--samples to measure on real rows")
    return (inputs, feeds, "seeded random values",
            f"pass --samples FILE with real rows: the graph leaves the width of {named} open", [note])


def _inlined(path: Path) -> bytes | None:
    """The model with the weights it keeps in external data files (``torch.onnx.export`` writes ``.onnx.data``
    beside large models) inside it, serialized; None when it keeps none (the file is copied as it is)."""
    import onnx
    from onnx.external_data_helper import convert_model_from_external_data

    if not keeps_external_data(path):
        return None

    whole = onnx.load(str(path))  # with its external data, read from beside the file
    convert_model_from_external_data(whole)
    try:
        return bytes(whole.SerializeToString())
    except ValueError as error:  # protobuf's 2 GB limit
        raise ScaffoldError(f"{OPTION} {path}: its weights do not fit in one ONNX file ({error}); a model this large "
                            "needs a container image that holds its data files beside it") from None


def _write(project: Project, path: Path, target: Path, name: str, entry: dict[str, Any], *,
           content: bytes | None = None) -> None:
    """Copy the model to ``target`` (or write ``content``, the model made whole) and write its manifest entry; on
    any failure put ``target`` back as it was."""
    copied = path.resolve() != target.resolve() or content is not None
    before = target.read_bytes() if copied and target.exists() else None
    try:
        if content is not None:
            target.write_bytes(content)
        elif copied:
            shutil.copyfile(path, target)
        project.manifest_io().update_manifest(models={name: entry}, path=project.manifest)
    except BaseException:
        if copied and before is None:
            target.unlink(missing_ok=True)
        elif copied and before is not None:
            target.write_bytes(before)
        raise


def _batched_outputs(session: Any) -> list[dict[str, Any]]:
    """Each output's manifest record; refuses an output whose declared first dimension is not the batch."""
    found = []
    for output in session.get_outputs():
        dtype = TENSOR_KINDS[output.type][1] if output.type in TENSOR_KINDS else output.type
        shape = list(dims(output.shape or []))
        if output.type.startswith("tensor("):
            if not shape:
                raise ScaffoldError(f"output {output.name!r} is a single value with no batch dimension: export it with "
                                    "a dynamic first dimension, one row per input row")
            if shape[0] is not None:
                raise ScaffoldError(f"output {output.name!r} has a fixed batch dimension {shape[0]} (shape {shape}): "
                                    "the kit runs a whole batch at once; export with a dynamic first dimension "
                                    "(torch.onnx.export dynamic_axes={'<name>': {0: 'batch'}})")
        found.append({"name": output.name, "dtype": dtype, "shape": shape})
    return found


def _cycled(values: Mapping[str, np.ndarray], rows: int) -> dict[str, np.ndarray]:
    """``rows`` rows of each array, repeating the file's rows when it has fewer."""
    return {key: np.resize(array, (rows, *array.shape[1:])) for key, array in values.items()}


def _check_rows(session: Any, outputs: Sequence[dict[str, Any]], feeds: Mapping[str, np.ndarray], hint: str) -> None:
    """Run the graph once on a batch and check every output has one row per input row."""
    rows = len(next(iter(feeds.values())))
    try:
        values = session.run(None, dict(feeds))
    except Exception as error:  # noqa: BLE001 - onnxruntime's errors have no common base
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ScaffoldError(f"the graph does not run on a batch of {rows} rows ({reason}): {hint}") from None
    for output, value in zip(outputs, values, strict=True):
        got = len(value) if isinstance(value, list) else (np.shape(value)[0] if np.ndim(value) else 0)
        if got != rows:
            raise ScaffoldError(f"output {output['name']!r} gives {got} rows for a batch of {rows}: the kit needs one "
                                "row per input row; export with a dynamic batch axis on the outputs too")


def _benchmark(session: Any, feeds: Mapping[int, Mapping[str, np.ndarray]], runs: int, fed_with: str) -> dict[str, Any]:
    import onnxruntime

    record: dict[str, Any] = {}
    for size, feed in feeds.items():
        session.run(None, dict(feed))  # the first run allocates; it is not what a warm function pays
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            session.run(None, dict(feed))
            times.append((time.perf_counter() - started) * 1000)
        record[f"batch_{size}_ms_median"] = round(statistics.median(times), 4)
    record.update({"runs": runs, "inputs": fed_with, "cpu": cpu_name(),
                   "onnxruntime": f"{onnxruntime.__version__}, CPUExecutionProvider",
                   "note": "measured by `inferbus models add` on the machine that ran it; Lambda's CPU differs"})
    return record


def _next_version(version: Any) -> str:
    parts = str(version).split(".")
    if all(part.isdigit() for part in parts):
        return ".".join([*parts[:-1], str(int(parts[-1]) + 1)])
    return FIRST_VERSION


def _entry(path: Path, session: Any, inputs: Sequence[GraphInput], outputs: list[dict[str, Any]],
           previous: Mapping[str, Any] | None, *, file: str, sha256: str, scores: Mapping[str, float],
           data: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "version": _next_version(previous["version"]) if previous and "version" in previous else FIRST_VERSION,
        "file": file,
        "sha256": sha256,
        "bytes": path.stat().st_size,
        "task": (previous or {}).get("task", "say what it predicts, from what, and for whom"),
        "inputs": [graph_input.manifest() for graph_input in inputs],
        "outputs": outputs,
    }
    if scores:
        entry["metrics"] = {**{f"{HOLDOUT_PREFIX}{metric}": value for metric, value in scores.items()},
                            "evaluated_with": f"{data}, as given to `{OPTION}`"}
    else:
        entry["metrics"] = {"note": ("not yet recorded: measure the model on held-out rows it never saw in training, "
                                     f"then run `{OPTION} {path.name} --replace --scores metric=value --data NAME`, "
                                     "or write holdout_<metric> here")}
    producer = session.get_modelmeta().producer_name or "unknown"
    entry["built_with"] = {"onnx_file": path.name, "producer": producer, "added_by": OPTION}
    if data:
        entry["built_with"]["dataset"] = data
    return entry
