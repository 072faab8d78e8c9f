"""``inferbus new consumer``: a queue consumer for your ONNX model, from its graph, in one command.

It reads the graph (:mod:`.graph`; whether one float output is class scores: :mod:`.heads`),
decides the event fields, copies the model (and your held-out samples) into ``models/`` with
their manifest entries (a classifier's held-out accuracy measured on the samples that carry
labels), and writes the contract, the handler, the declaration and a functional test
(:mod:`.codegen`). Nothing is written unless everything can be; nothing existing is
overwritten; the new files are imported once before the command returns, and removed again if
they do not load. Then the generated docs are rewritten (:mod:`.generated_docs`), as ``make docs``
does.

Example
-------
>>> written = new_consumer("iris-classifier", Path("iris.onnx"), "IrisSubmitted")  # doctest: +SKIP
>>> [path for path, _ in written.files][:2]  # doctest: +SKIP
['models/iris.onnx', 'functions/inferbus_lambda/contracts/iris_classifier.py']
"""

from __future__ import annotations

import math
import typing
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from inferbus.model.declarations import FIFO_MAX_BATCH, Consumer, DeclarationError, EventFilter
from inferbus.model.kafka import MAX_POLL_RECORDS, KafkaTopic
from inferbus.model.names import NAME
from inferbus.model.rabbitmq import RabbitMqQueue
from inferbus.model.settings import ConsumerSettings

from .codegen import (
    ConsumerPlan,
    InputField,
    SampleSource,
    contract_source,
    declaration_source,
    functional_test_source,
    handler_source,
)
from .errors import ScaffoldError
from .generated_docs import refresh_or_note
from .graph import GraphInput, GraphSpec, keeps_external_data, open_session, read_graph, read_inputs, run_samples, with_widths
from .heads import HeldOutAccuracy, Task, held_out_accuracy, parse_labels, predicted_labels
from .names import check_event_type, derived_result_type, model_name_of, module_name
from .project import Declared, Project, Writes, Written, open_project
from .samples import HeldOut, read_samples

__all__ = ["new_consumer"]

MODEL_VERSION = "1.0.0"
VALUE_LIMIT = 1_000_000  # the default range of a numeric input: larger magnitudes are input errors


def new_consumer(name: str, model: Path, event_type: str, result_type: str | None = None, samples: Path | None = None,
                 *, task: Task | None = None, labels: str | Sequence[int | str] | None = None,
                 project: Project | None = None, known: Declared | None = None, refresh_docs: bool = True,
                 channel: str = "sqs", group_by: str | None = None, broker: KafkaTopic | None = None,
                 queue: str | None = None) -> Written:
    """Add a queue consumer ``name`` that runs ``model`` on ``event_type`` events.

    Parameters
    ----------
    name
        The component's kebab-case name, not yet declared.
    model
        An ONNX file.
    event_type
        PascalCase. An existing event type's contract is reused; a new one is written from the
        graph's inputs.
    result_type
        The type of its results; default ``<Stem>Classified`` for a classifier, else
        ``<Stem>Scored`` (``IrisSubmitted`` -> ``IrisClassified``). Must not exist yet.
    samples
        Held-out samples (``.npz``, ``.csv``, ``.jsonl``, see :mod:`.samples`) for the demo and
        the test; default: seeded random inputs. A classifier's accuracy on the rows that carry a
        label goes into the manifest.
    task
        ``classifier`` or ``regressor``: how to read a model whose one float output could be either
        (``[N, K]`` logits or K targets); default, decided from the graph and the samples
        (:mod:`.heads`), with a note saying what was chosen.
    labels
        The classes of a classifier that ends in scores, in the order of its scores (``"a,b,c"``
        or a sequence); implies ``task="classifier"``.
    project
        Where to write; default, the repository this ``inferbus`` comes from.
    known
        What is declared there; default, read by importing it (:func:`~.project.declared`).
    refresh_docs
        Rewrite the generated docs afterwards (:func:`~.generated_docs.refresh_generated_docs`).
    channel, group_by
        How its events reach it: ``sqs`` (default), or ``fifo``, in order per key ``group_by`` (a
        path into the event: a field of its data, ``$.detail.data.<field>``, or a CloudEvent
        attribute; default the CloudEvent's source), ``kafka``, from the topic ``broker``, or ``rabbitmq``.
        See ``docs/channels.md``.
    broker
        A ``kafka`` consumer's topic (:class:`~inferbus.model.kafka.KafkaTopic`).
    queue
        A ``rabbitmq`` consumer's RabbitMQ queue; default its name.

    Returns
    -------
    Written
        The files written and the next steps.

    Raises
    ------
    ScaffoldError
        Naming what is wrong and what to do; nothing has been written.
    """
    project, known = open_project(project, known, name)
    check_event_type(event_type, "--event")
    group_by = _ordering(name, event_type, channel, group_by, broker, queue)
    if result_type is not None:
        check_event_type(result_type, "--result")
    if task not in (None, "classifier", "regressor"):
        raise ScaffoldError(f"--task {task}: choose classifier or regressor")
    if isinstance(labels, str):
        labels = parse_labels(labels)
    if labels is not None and task == "regressor":
        raise ScaffoldError("--labels names the classes of a classifier: drop it, or drop --task regressor")
    existing = known.event_types.get(event_type)
    graph, inputs, held_out, unfilled, session = _read(Path(model), samples, existing, event_type, task,
                                                       tuple(labels) if labels is not None else None)
    result_type = _result_type(result_type, event_type, graph, known)
    sample_source = _sample_source(name, event_type, existing, held_out, unfilled, known)
    accuracy = _accuracy(session, graph, held_out)
    model_name, model_entry = _model_entry(Path(model), graph, event_type, result_type, name, project,
                                           accuracy=accuracy, samples_file=sample_source.file)
    plan = ConsumerPlan(
        name=name, module=module_name(name), event_type=event_type, result_type=result_type, model_name=model_name,
        model_file=f"{model_name}.onnx", graph=graph, fields=tuple(_input_field(i) for i in inputs),
        input_module=existing.__module__ if existing is not None else None,
        samples=sample_source,
        value_limit=_value_limit(held_out),
        channel=channel, group_by=group_by, broker=broker, queue=(queue or name) if channel == "rabbitmq" else None,
    )
    _check_group_by(plan)
    writes = Writes(project)
    models: dict[str, Any] = {}
    if model_entry is not None:
        labels = ", labels" if "labels" in model_entry else ""
        measured = "held-out accuracy" if accuracy is not None else "accuracy to record"
        writes.copy(Path(model), project.models / plan.model_file, f"the model; manifest entry {model_name!r} (sha256, "
                    f"inputs, outputs{labels}; {measured})")
        models[model_name] = model_entry
    datasets: dict[str, Any] = {}
    if held_out is not None and plan.samples.file is not None:
        writes.copy(held_out.path, project.models / plan.samples.file,
                    f"your {held_out.rows} held-out samples; manifest datasets entry")
        datasets[plan.samples.file] = held_out.manifest(name, project.manifest_io().sha256_of(held_out.path))
    module = plan.module
    writes.add(project.contracts / f"{module}.py", contract_source(plan), _contract_note(plan))
    writes.add(project.functions / module / "__init__.py", "", "makes the handler folder a package")
    writes.add(project.functions / module / "handler.py", handler_source(plan), "infer(): ONE session.run per batch")
    writes.add(project.pipeline / f"{module}.py", declaration_source(plan), _declaration_note(plan))
    writes.add(project.functional_tests / f"test_{module}.py", functional_test_source(plan),
               "runs it embedded on moto: a result per sample, a malformed input kept aside")
    writes.commit(name, plan.contract_module, models=models, datasets=datasets)
    notes = _notes(plan, held_out, accuracy, recorded=model_entry is not None)
    refreshed = refresh_or_note(project, notes) if refresh_docs else None
    return Written(name, writes.files, notes, _next_steps(plan, accuracy, docs_current=refreshed is not None))


def _ordering(name: str, event_type: str, channel: str, group_by: str | None, broker: KafkaTopic | None = None,
              queue: str | None = None) -> str | None:
    """The consumer's ``group_by`` as its declaration will hold it, checked (with its channel, broker and queue) by
    the declaration itself."""
    if queue is not None and channel != "rabbitmq":
        raise ScaffoldError(f"--queue names a RabbitMQ queue: add --channel rabbitmq, or drop --queue {queue}")
    settings = {"fifo": ConsumerSettings(batch_size=FIFO_MAX_BATCH),
                "kafka": ConsumerSettings(batch_size=MAX_POLL_RECORDS)}.get(channel, ConsumerSettings())
    try:
        if channel == "rabbitmq":
            broker = RabbitMqQueue(queue=queue or name)
        declared = Consumer(name=name, handler="scaffold.check", accepts=EventFilter(event_type), emits="Checked",
                            channel=channel, group_by=group_by, settings=settings, broker=broker)
    except DeclarationError as error:
        if error.declaration == RabbitMqQueue.__name__:
            raise ScaffoldError(f"--queue {queue or name}: {error.problem}") from None
        raise ScaffoldError(f"--channel {channel}: {error.problem}" if group_by is None or "channel" in error.problem
                            else f"--group-by {group_by}: {error.problem}") from None
    return declared.group_by


def _check_group_by(plan: ConsumerPlan) -> None:
    """A key in the event's data must be one of its fields: else no event would have a group, and none would pass."""
    prefix = "$.detail.data."
    if plan.group_by is None or not plan.group_by.startswith(prefix):
        return
    field = plan.group_by.removeprefix(prefix).split(".")[0]
    keys = [f.field for f in plan.fields if f.width is None]  # one value each: a list is no message group
    if field not in keys:
        raise ScaffoldError(f"--group-by {plan.group_by}: {plan.event_type} has no single-valued field {field!r} (those it "
                            f"has: {', '.join(keys) or 'none'}); name one, or a CloudEvent attribute such as $.detail.source")


def _read(model: Path, samples: Path | None, existing: type | None, event_type: str, task: Task | None,
          labels: tuple[int | str, ...] | None) -> tuple[GraphSpec, list[GraphInput], HeldOut | None, list[str], Any]:
    """The graph, its inputs as event fields, the held-out samples (every width checked), the required
    fields of an existing input type that no graph input fills, and the onnxruntime session."""
    if model.suffix.lower() != ".onnx":
        raise ScaffoldError(f"--model {model}: give an .onnx file (export your model with skl2onnx, tf2onnx or "
                            "torch.onnx first)")
    session = open_session(model)
    if keeps_external_data(model):
        raise ScaffoldError(f"--model {model}: it keeps its weights in external data files beside it; add it first with "
                            f"`inferbus models add {model}` (which writes it whole into models/), then give --model "
                            "models/<its name>.onnx")
    inputs = read_inputs(session)
    widths: dict[str, int] = {}
    unfilled: list[str] = []
    if existing is not None:
        inputs, widths, unfilled = _map_existing(existing, inputs, event_type)
    held_out = read_samples(samples, with_widths(inputs, widths) if widths else inputs) if samples else None
    inputs = with_widths(inputs, {**widths, **(held_out.widths if held_out else {})})
    if samples is not None:
        held_out = read_samples(samples, inputs)  # again, with every width known, to check each
    truths = list(held_out.labels) if held_out is not None and held_out.labels is not None else None
    graph = read_graph(session, inputs, samples=held_out.inputs if held_out else None, sample_labels=truths,
                       path=model, task=task, labels=labels)
    return graph, inputs, held_out, unfilled, session


def _accuracy(session: Any, graph: GraphSpec, held_out: HeldOut | None) -> HeldOutAccuracy | None:
    """A classifier's accuracy on the held-out rows that carry a label, as the generated handler labels them."""
    if graph.task != "classifier" or held_out is None or held_out.labels is None:
        return None
    outputs = run_samples(session, graph, held_out.inputs)
    if graph.head is not None:
        assert graph.score_output is not None
        predicted = predicted_labels(graph.head, graph.labels, None, outputs[graph.score_output.name])
    else:
        assert graph.label_output is not None
        predicted = predicted_labels(None, None, outputs[graph.label_output.name], None)
    return held_out_accuracy(predicted, list(held_out.labels), graph.labels)


def _input_field(graph_input: GraphInput) -> InputField:
    """One graph input as an event field: one value (a ``[N]`` input, or one string ``[N, 1]``) or a list."""
    one_value = graph_input.scalar or (graph_input.kind == "str" and graph_input.record_shape == (1,))
    return InputField(graph_input.name, graph_input.field, graph_input.kind, None if one_value else graph_input.width,
                      tuple(dim or 0 for dim in graph_input.record_shape))


def _map_existing(model: type, inputs: list[GraphInput],
                  event_type: str) -> tuple[list[GraphInput], dict[str, int], list[str]]:
    """The graph inputs carried by an existing event type's fields: the inputs renamed to those fields,
    the widths they fix, and the type's other required fields (which no graph input fills)."""
    fields = {name: _field_shape(info) for name, info in model.model_fields.items()}  # type: ignore[attr-defined]
    mapped, widths, used = [], {}, set()
    for graph_input in inputs:
        fitting = [name for name, shape in fields.items()
                   if shape is not None and name not in used and _fits(graph_input, *shape)]
        chosen = next((name for name in (graph_input.field, graph_input.name) if name in fitting), None)
        if chosen is None and len(inputs) == 1 and len(fitting) == 1:
            chosen = fitting[0]
        if chosen is None:
            width = "1" if graph_input.scalar else graph_input.width or "k"
            raise ScaffoldError(f"--event {event_type} exists ({model.__module__}) but none of its fields carries "
                                f"graph input {graph_input.name!r} ({graph_input.kind} x {width}): choose a new event "
                                f"type, or give a model whose input matches {event_type}")
        used.add(chosen)
        width = fields[chosen][1]  # type: ignore[index]
        if graph_input.record_shape == (None,) and width is not None:
            widths[graph_input.name] = width
        # The event carries the field as its contract types it (a float graph input may take an int field: the
        # feed is cast to the graph's dtype at inference), so samples are read and written in the contract's kind.
        mapped.append(replace(graph_input, field=chosen, kind=fields[chosen][0]))  # type: ignore[index]
    unfilled = [name for name, info in model.model_fields.items()  # type: ignore[attr-defined]
                if info.is_required() and name not in used]
    return mapped, widths, unfilled


def _strip(annotation: Any) -> tuple[Any, list[Any]]:
    if typing.get_origin(annotation) is typing.Annotated:
        base, *extra = typing.get_args(annotation)
        return base, extra
    return annotation, []


def _field_shape(info: Any) -> tuple[str, int | None] | None:
    """(kind, width) of a numeric or text field (a list with a fixed length, or one value); else ``None``."""
    annotation, _ = _strip(info.annotation)
    lengths = {type(m).__name__: getattr(m, "min_length", getattr(m, "max_length", None)) for m in info.metadata}
    if typing.get_origin(annotation) is list:
        element, _ = _strip(typing.get_args(annotation)[0])
        kind = {float: "float", int: "int", str: "str"}.get(element)
        if kind is None or lengths.get("MinLen") is None or lengths.get("MinLen") != lengths.get("MaxLen"):
            return None
        return kind, int(lengths["MinLen"])
    kind = {float: "float", int: "int", str: "str"}.get(annotation)
    return (kind, None) if kind else None


def _fits(graph_input: GraphInput, kind: str, width: int | None) -> bool:
    if graph_input.kind == "str" or kind == "str":
        if graph_input.kind != kind:
            return False
        return width is None and graph_input.record_shape in ((), (1,))
    if graph_input.kind == "int" and kind == "float":
        return False
    if graph_input.scalar:
        return width is None
    return width is not None and (graph_input.width is None or graph_input.width == width)


def _result_type(result_type: str | None, event_type: str, graph: GraphSpec, known: Declared) -> str:
    chosen = result_type or derived_result_type(event_type, classifier=graph.task == "classifier")
    if chosen == event_type:
        raise ScaffoldError(f"the result type must differ from the input type {event_type}: pass --result TYPE")
    existing = known.event_types.get(chosen)
    if existing is not None:
        what = f"--result {chosen}" if result_type else f"the result type {chosen} (derived from --event {event_type})"
        raise ScaffoldError(f"{what} is an event type already ({existing.__module__}): pass --result with a new "
                            "PascalCase name")
    return chosen


def _model_entry(model: Path, graph: GraphSpec, event_type: str, result_type: str, name: str, project: Project, *,
                 accuracy: HeldOutAccuracy | None = None,
                 samples_file: str | None = None) -> tuple[str, dict[str, Any] | None]:
    """The model's manifest name and its new entry (``None`` when the manifest holds this very file already);
    a classifier's ``metrics`` are its accuracy on the held-out samples when they carry labels."""
    sha256 = project.manifest_io().sha256_of(model)
    models = project.manifest_models()
    for existing_name, entry in models.items():
        if entry.get("sha256") == sha256:
            return existing_name, None
    model_name = model_name_of(model, "--model")
    if model_name in models:
        raise ScaffoldError(f"models/manifest.json has a model named {model_name!r} already (another file): rename "
                            f"your file, e.g. {model_name}-2.onnx")
    kind = {"classifier": "classifier", "regressor": "regressor", "generic": "model"}[graph.task]
    if graph.head is not None and graph.score_output is not None:
        how = {"logits": "softmax over", "probabilities": "the probabilities of", "logit": "sigmoid of",
               "probability": "the probability of"}[graph.head]
        kind = f"classifier ({how} output {graph.score_output.name!r})"
    entry: dict[str, Any] = {
        "version": MODEL_VERSION,
        "file": f"{model_name}.onnx",
        "sha256": sha256,
        "bytes": model.stat().st_size,
        "task": f"{kind}: {event_type} -> {result_type}, run by {name}. Say what it predicts, from what, and for whom",
        "inputs": [graph_input.manifest() for graph_input in graph.inputs],
        "outputs": [output.manifest() for output in graph.outputs],
    }
    if graph.labels is not None:
        entry["labels"] = list(graph.labels)
    measure = {"classifier": "holdout_accuracy", "regressor": "holdout_mae"}.get(graph.task, "holdout_<metric>")
    if accuracy is not None and samples_file is not None:
        import onnxruntime

        entry["metrics"] = accuracy.metrics(samples_file, name, f"onnxruntime {onnxruntime.__version__}")
    else:
        entry["metrics"] = {
            measure: None,
            "note": (f"not yet recorded: run the model with onnxruntime on held-out rows it never saw in training, "
                     f"then set {measure}, holdout_size and evaluated_with here (docs/extending.md, 'Record how good "
                     "the model is')"),
        }
    entry["built_with"] = {"onnx_file": model.name, "producer": graph.producer or "unknown",
                           "added_by": f"inferbus new consumer {name}"}
    return model_name, entry


def _sample_source(name: str, event_type: str, existing: type | None, held_out: HeldOut | None,
                   unfilled: list[str], known: Declared) -> SampleSource:
    if held_out is not None:
        if unfilled:
            raise ScaffoldError(f"--samples cannot fill the other required fields of {event_type} "
                                f"({', '.join(unfilled)}): drop --samples to reuse the demo samples of a component "
                                "that takes it, or choose a new event type")
        return SampleSource(held_out=held_out, file=f"{name}-holdout{held_out.path.suffix.lower()}")
    if existing is not None:
        takers = known.demo_sources.get(event_type, [])
        if takers:
            return SampleSource(component=takers[0], component_module=known.component_modules[takers[0]])
        if unfilled:
            raise ScaffoldError(f"no declared component sends demo {event_type} events, and the scaffold cannot make "
                                f"up its fields {', '.join(unfilled)}: pass --samples FILE")
    return SampleSource()


def _value_limit(held_out: HeldOut | None) -> int:
    """Ten times the largest magnitude in the samples' numeric inputs, rounded up to a whole number (1,680 ->
    16,800); 1,000,000 without samples (or when every sample value is 0)."""
    largest = 0.0
    for values in (held_out.inputs.values() if held_out else ()):
        if values.dtype.kind in "iuf" and values.size:
            largest = max(largest, float(np.abs(values).max()))
    return math.ceil(largest * 10) if largest > 0 else VALUE_LIMIT


def _contract_note(plan: ConsumerPlan) -> str:
    fields = ", ".join(f"{f.field}: {f.width or 1} {f.kind}" for f in plan.fields)
    made = f"{plan.event_type} ({fields}) and " if plan.input_module is None else ""
    return f"{made}{plan.result_type}"


def _declaration_note(plan: ConsumerPlan) -> str:
    source = plan.samples
    if source.held_out is not None:
        samples = f"{source.held_out.rows} held-out samples"
    elif source.component is not None:
        samples = f"{source.component}'s samples"
    else:
        samples = "seeded RANDOM samples: replace them"
    return f"the Consumer declaration (demo: {samples}, malformed copies)"


def _notes(plan: ConsumerPlan, held_out: HeldOut | None, accuracy: HeldOutAccuracy | None = None, *,
           recorded: bool = True) -> list[str]:
    graph, notes = plan.graph, []
    notes.append(f"graph: {graph.task}; inputs " + ", ".join(f"{i.name} {list(i.shape)} -> {f.field}"
                                                            for i, f in zip(graph.inputs, plan.fields, strict=True))
                 + "; outputs " + ", ".join(f"{o.name} -> {o.field}" for o in graph.outputs))
    notes += graph.reading
    if accuracy is not None:
        where = ("in the manifest" if recorded else f"NOT in the manifest, whose entry {plan.model_name!r} for this "
                 "very file keeps its own figures (edit them there if these samples are the better measure)")
        notes.append(f"held-out accuracy {accuracy.accuracy:.4f} on {accuracy.size} labelled samples (always "
                     f"answering {accuracy.majority_class!r}: {accuracy.majority_accuracy:.4f}); {where}")
    if plan.classifier and graph.labels is None:
        notes.append("the graph does not show its class labels: any label of its type is accepted; add them to the "
                     "manifest entry and the contract (LABELS) if you know them")
    if plan.classifier and graph.head is None and not graph.distribution:
        notes.append("its second output does not sum to 1: results carry `scores`, not probabilities")
    if plan.classifier and held_out is not None and held_out.labels is not None and graph.labels is not None:
        stray = sorted({str(v) for v in held_out.labels.tolist()} - {str(v) for v in graph.labels})
        if stray:
            notes.append(f"your samples' labels {stray[:5]} are not the model's {list(graph.labels)[:5]}: the demo's "
                         "accuracy will read low; fix the labels in the samples file")
    return notes


def _next_steps(plan: ConsumerPlan, accuracy: HeldOutAccuracy | None = None, *, docs_current: bool = True) -> list[str]:
    steps = [
        (f"Read functions/inferbus_lambda/contracts/{plan.module}.py: set VALUE_LIMIT (if any) to your values' real "
        "range, rename fields, describe them."),
    ]
    if accuracy is None:
        steps.append(f"Record how good the model is in models/manifest.json, models.{plan.model_name}.metrics (see "
                     "docs/extending.md).")
    else:
        steps.append(f"Check models/manifest.json, models.{plan.model_name}: the accuracy was measured on your "
                     "samples; say what the data is (task, built_with) and that the model never saw these rows.")
    if plan.samples.held_out is None and plan.samples.component is None:
        steps.append(f"Replace the random demo samples in pipeline/{plan.module}.py with held-out data (or run this "
                     "again with --samples FILE).")
    if not docs_current:
        steps.append("make docs   (the README's event table, docs/schemas/ and the topology picture are generated "
                     "from the declarations; make test checks that they are current)")
    else:
        steps.append("After you edit the contract or the declaration: make docs   (the generated docs are current "
                     "now; make test checks that they stay so)")
    steps += [
        f".venv/bin/python -m pytest tests/functional/test_{plan.module}.py -q   (then: make test)",
        f".venv/bin/inferbus demo   ({plan.name} is in the summary and the ledger)",
    ]
    return steps
