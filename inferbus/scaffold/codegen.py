"""The source a new consumer is made of: contract module, handler, declaration and functional test.

Every function here takes a :class:`ConsumerPlan` (what :mod:`.consumer` decided) and returns
the text of one file; nothing is read or written. The generated code is what a person would
write by hand, following the shipped image classifier: short, typed, one ``session.run`` per
batch, the contract doing all the validation.
"""

from __future__ import annotations

import dataclasses
import json
import re
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from string import Template
from typing import Any

from inferbus.model.declarations import FIFO_MAX_BATCH
from inferbus.model.kafka import MAX_POLL_RECORDS, KafkaTopic

from .graph import GraphOutput, GraphSpec, Kind
from .samples import HeldOut

__all__ = ["ConsumerPlan", "contract_source", "corruptions", "declaration_source", "functional_test_head",
           "functional_test_source", "handler_source", "InputField", "literal", "paragraph", "SampleSource",
           "scores_handler_source", "source_text", "type_imports"]

SYNTHETIC_SEED = 7
SYNTHETIC_COUNT, SYNTHETIC_LIMIT = 20, 100
DEMO_COUNT = 100  # most held-out samples the demo sends by default
TEST_SAMPLES = 25  # samples the functional test sends
PYTHON_TYPES = {"float": "float", "int": "int", "str": "str", "bool": "bool"}


@dataclass(frozen=True)
class InputField:
    """A graph input and the event field that carries it.

    Attributes
    ----------
    graph_name
        The graph's input name (the feed key).
    field
        The event data field.
    kind
        ``float``, ``int`` or ``str``: what the field holds.
    width
        Values per event: ``None`` for one value.
    graph_shape
        One event's part of the graph input (``(4,)``, ``(1, 8, 8)``, or ``()`` for one value).
    """

    graph_name: str
    field: str
    kind: Kind
    width: int | None
    graph_shape: tuple[int, ...]

    @property
    def constant(self) -> str:
        """The module constant holding its width (``FEATURES``)."""
        return self.field.upper()


@dataclass(frozen=True)
class SampleSource:
    """Where the demo's samples come from: a held-out file, another component's demo, or seeded random values."""

    held_out: HeldOut | None = None
    file: str | None = None  # its name in models/
    component: str | None = None  # another component that takes the same event type
    component_module: str | None = None


@dataclass(frozen=True)
class ConsumerPlan:
    """Everything the files of one new consumer are written from.

    Attributes
    ----------
    name, module
        ``iris-classifier``, ``iris_classifier``.
    event_type, result_type
        What it takes and what it publishes.
    model_name, model_file
        Its model's name in the manifest and file in ``models/``.
    graph
        What :func:`~.graph.read_graph` read.
    fields
        The input fields, in the graph's input order.
    input_module
        Where the input type is defined when it already existed (``inferbus_lambda.contracts.risk``);
        ``None`` when the new contract module defines it.
    samples
        Where the demo's samples come from.
    value_limit
        The largest magnitude a numeric input field accepts.
    channel, group_by, broker, queue
        How its events reach it (``sqs``, ``fifo`` ordered by ``group_by``, ``kafka`` from the topic
        ``broker``, or ``rabbitmq`` from ``queue``): see :class:`~inferbus.model.declarations.Consumer`.
    """

    name: str
    module: str
    event_type: str
    result_type: str
    model_name: str
    model_file: str
    graph: GraphSpec
    fields: tuple[InputField, ...]
    input_module: str | None
    samples: SampleSource
    value_limit: int
    channel: str = "sqs"
    group_by: str | None = None
    broker: KafkaTopic | None = None
    queue: str | None = None  # a rabbitmq consumer's RabbitMQ queue

    @property
    def contract_module(self) -> str:
        return f"inferbus_lambda.contracts.{self.module}"

    @property
    def classifier(self) -> bool:
        return self.graph.task == "classifier"

    @property
    def from_scores(self) -> bool:
        """A classifier whose one output is class scores: the handler computes label, probability and scores."""
        return self.graph.head is not None


# What one model call takes, per channel (docs/channels.md): an ordered batch runs in rounds, one call each.
BATCH_CALLS = {"sqs": "ONE inference per SQS batch", "fifo": "ONE inference per round of an ordered batch (the k-th "
               "event of each key)", "kafka": "ONE inference per Kafka batch", "rabbitmq": "ONE inference per RabbitMQ batch"}


def literal(value: Any) -> str:
    """A Python literal for ``value``, strings in double quotes (the project's style).

    >>> literal(("setosa", 1)), literal(None), literal(2.5)
    ('("setosa", 1)', 'None', '2.5')
    """
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, tuple):
        inner = ", ".join(literal(item) for item in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return f"[{', '.join(literal(item) for item in value)}]"
    return repr(value)


def wrapped(head: str, items: Sequence[str], tail: str, indent: int = 0, width: int = 116) -> str:
    """``head + items joined + tail`` on one line if it fits, else one continuation line per chunk."""
    one_line = f"{' ' * indent}{head}{', '.join(items)}{tail}"
    if len(one_line) <= width:
        return one_line
    body = textwrap.fill(", ".join(items), width=width - indent - 4, break_long_words=False, break_on_hyphens=False)
    lines = textwrap.indent(body, " " * (indent + 4))
    return f"{' ' * indent}{head}\n{lines},\n{' ' * indent}{tail.lstrip(',')}"


def paragraph(text: str, width: int = 116, indent: str = "") -> list[str]:
    """A docstring paragraph, wrapped to ``width`` columns (continuation lines indented by ``indent``)."""
    return textwrap.wrap(text, width=width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)


def type_imports(contract_module: str, input_module: str | None, input_type: str, types: Sequence[str]) -> list[str]:
    """The ``from ... import`` lines of the event types a file uses, one block per module, wrapped when long."""
    by_module: dict[str, list[str]] = {contract_module: list(types)}
    by_module.setdefault(input_module or contract_module, []).append(input_type)
    lines = []
    for module in sorted(by_module):
        names = sorted(set(by_module[module]))
        line = f"from {module} import {', '.join(names)}"
        lines += [line] if len(line) <= 120 else [f"from {module} import (", *(f"    {n}," for n in names), ")"]
    return lines


def _signature(line: str) -> list[str]:
    """A ``def`` line, its parameters on a line of their own when it is over 120 columns."""
    if len(line) <= 120:
        return [line]
    head, _, rest = line.partition("(")
    parameters, _, tail = rest.rpartition(")")
    return [f"{head}(", f"    {parameters},", f"){tail}"]


def functional_test_head(summary: str, about: str, types: list[str], ours: list[str]) -> list[str]:
    """The docstring and imports of a generated functional test: ``types`` (event contracts), then ``ours``."""
    return [
        *paragraph(f'"""{summary}'),
        "",
        *paragraph(about),
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import json",
        "",
        "import pytest",
        "from inferbus_lambda.contracts import from_eventbridge_event, new_event, to_put_events_entry",
        *types,
        "",
        *ours,
    ]


def source_text(parts: Iterable[str]) -> str:
    return "\n".join(parts).rstrip() + "\n"


# -- the contract module ----------------------------------------------------------------------------


def _element_alias(kind: Kind) -> str:
    return {"float": "Number", "int": "Whole", "str": "Text", "bool": "bool"}[kind]


def _input_annotation(field: InputField) -> str:
    element = _element_alias(field.kind)
    if field.width is None:
        return element
    return f"Annotated[list[{element}], Field(min_length={field.constant}, max_length={field.constant})]"


def _shape_text(shape: Sequence[int | None]) -> str:
    return "[" + ", ".join("N" if dim is None else str(dim) for dim in shape) + "]"


def _output_annotation(output: GraphOutput) -> str:
    """Outputs are not bounded like inputs: any finite number (EventData refuses NaN and Infinity)."""
    element = PYTHON_TYPES[output.kind]
    if output.width is None:
        return element
    if output.width == 0:
        return f"list[{element}]"
    return f"Annotated[list[{element}], Field(min_length={output.width}, max_length={output.width})]"


def contract_source(plan: ConsumerPlan) -> str:
    """``functions/inferbus_lambda/contracts/<module>.py``: the input type (unless it existed) and the result type."""
    graph = plan.graph
    classes = (_input_class(plan) + ["", ""] if plan.input_module is None else []) + _result_class(plan)
    text = "\n".join(classes)
    distribution = plan.classifier and graph.distribution
    defined = sorted([plan.result_type] + ([plan.event_type] if plan.input_module is None else []))
    defined += ["CLASSES"] if plan.from_scores else []
    typing_names = ["Annotated", "ClassVar"] + (["Literal"] if graph.labels is not None else [])
    typing_names += ["get_args"] if plan.from_scores else []
    core = ["EventData", "Identifier", "ModelRef"] + (["Probability", "check_distribution"] if distribution else [])
    source_line = f"models/{plan.model_file}" + (f" ({graph.producer})" if graph.producer else "")
    taken = (f"{plan.event_type} in, " if plan.input_module is None else "") + f"{plan.result_type} out"
    out = [
        f'"""Events of {plan.name}: {taken}.',
        "",
        f"Written by ``inferbus new consumer`` from the graph of {source_line}: an input field per graph",
        "input, a result field per output. Tighten what you know better than the graph does (each",
        "value's real range, field names, descriptions): the consumer, the CLI, the demo and the",
        "tests all validate with these models.",
        '"""',
        "",
        # no postponed annotations: pydantic would compile each from its text (cold init)
        f"from typing import {', '.join(typing_names)}",
        "",
        f"from pydantic import {', '.join(['Field'] + (['field_validator'] if distribution else []))}",
        "",
        f"from .core import {', '.join(core)}",
        "",
        f"__all__ = [{', '.join(json.dumps(name) for name in defined)}]",
        "",
    ]
    uses = {alias for alias in ("Number", "Whole", "Text") if re.search(rf"\b{alias}\b", text)}
    if uses & {"Number", "Whole"}:
        out += ["# Larger magnitudes are input errors, not samples: set the range your values really take.",
                f"VALUE_LIMIT = {plan.value_limit:_}"]
    if "Number" in uses:
        out.append("Number = Annotated[float, Field(strict=True, ge=-VALUE_LIMIT, le=VALUE_LIMIT)]  # finite: no NaN, "
                   "no Infinity")
    if "Whole" in uses:
        out.append("Whole = Annotated[int, Field(strict=True, ge=-VALUE_LIMIT, le=VALUE_LIMIT)]")
    if "Text" in uses:
        out += ["TEXT_MAX_CHARS = 10_000", "Text = Annotated[str, Field(min_length=1, max_length=TEXT_MAX_CHARS)]"]
    if plan.input_module is None:
        out += [f"{field.constant} = {field.width}  # values per event: graph input {json.dumps(field.graph_name)}"
                for field in plan.fields if field.width is not None]
    if graph.labels is not None:
        out.append(wrapped("LABELS = Literal[", [literal(label) for label in graph.labels],
                           "]  # the model's classes, in the order of its probability columns"))
    if plan.from_scores:
        out.append("CLASSES: tuple[LABELS, ...] = get_args(LABELS)  # the handler labels its scores with these")
    return source_text(out + ["", "", *classes])


def _input_class(plan: ConsumerPlan) -> list[str]:
    total = sum(field.width or 1 for field in plan.fields)
    what = f"{total} value{'s' if total != 1 else ''}" if all(f.kind != "str" for f in plan.fields) else "its inputs"
    out = [
        f"class {plan.event_type}(EventData):",
        f'    """One input of the {plan.model_name} model: {what}, in the order it was trained on."""',
        "",
        f'    EVENT_TYPE: ClassVar[str] = "{plan.event_type}"',
    ]
    graph_inputs = {graph_input.name: graph_input for graph_input in plan.graph.inputs}
    for field in plan.fields:
        shape = _shape_text(graph_inputs[field.graph_name].shape)
        flat = " (flattened row by row)" if len(field.graph_shape) > 1 else ""
        description = f"graph input {field.graph_name!r} {shape}{flat}"
        annotation = _input_annotation(field)
        if annotation.endswith(")]"):
            annotation = annotation[:-2] + f", description={json.dumps(description)})]"
            out.append(f"    {field.field}: {annotation}")
        else:
            out.append(f"    {field.field}: {annotation} = Field(description={json.dumps(description)})")
    return [line if len(line) <= 120 else _split_field(line) for line in out]


def _split_field(line: str) -> str:
    """A field line over 120 characters, its ``description=`` on a line of its own."""
    if ", description=" in line:  # Annotated[..., Field(..., description=...)]
        head, _, tail = line.partition(", description=")
        return f"{head},\n{' ' * 8}description={tail}"
    head, _, tail = line.partition("Field(description=")  # ... = Field(description=...)
    return f"{head}Field(\n{' ' * 8}description={tail}"


def _result_class(plan: ConsumerPlan) -> list[str]:
    graph = plan.graph
    out = [
        f"class {plan.result_type}(EventData):",
        f'    """The {plan.model_name} model\'s answer for one ``{plan.event_type}`` event."""',
        "",
        f'    EVENT_TYPE: ClassVar[str] = "{plan.result_type}"',
        f'    input_id: Identifier = Field(description="id of the {plan.event_type} event")',
    ]
    if plan.from_scores:
        out += _scores_fields(plan)
    elif plan.classifier:
        label_output, score_output = graph.label_output, graph.score_output
        assert label_output is not None and score_output is not None
        label_type = "LABELS" if graph.labels is not None else (
            "int" if label_output.kind == "int" else "Annotated[str, Field(min_length=1, max_length=256)]")
        out.append(f"    label: {label_type} = Field(description=\"the predicted class (graph output "
                   f"'{label_output.name}')\")")
        k = score_output.width
        if graph.distribution:
            out += [
                '    confidence: Probability = Field(description="the highest class probability")',
                (f"    probabilities: Annotated[list[Probability], Field(min_length={k}, max_length={k}, "
                "description=\"one per class, in the order of LABELS\")]"),
            ]
        else:
            description = f"graph output '{score_output.name}': one score per class (they do not sum to 1)"
            out.append(f"    scores: Annotated[list[float], Field(min_length={k}, max_length={k}, "
                       f"description={json.dumps(description)})]")
    else:
        for output in graph.outputs:
            annotation = _output_annotation(output)
            description = f"graph output {output.name!r}"
            if annotation.endswith(")]"):
                out.append(f"    {output.field}: {annotation[:-2]}, description={json.dumps(description)})]")
            else:
                out.append(f"    {output.field}: {annotation} = Field(description={json.dumps(description)})")
    out += [
        "    model: ModelRef",
        ('    inference_ms: Annotated[float, Field(ge=0.0, description="time of the batched session.run that scored '
        'this input")]'),
        '    batch_size: Annotated[int, Field(ge=1, description="inputs scored in that one session.run")]',
    ]
    if plan.from_scores:
        out += SCORES_VALIDATOR.splitlines()
    elif plan.classifier and graph.distribution:
        out += ["", '    _sums_to_one = field_validator("probabilities")(check_distribution)']
    return [line if len(line) <= 120 else _split_field(line) for line in out]


HEAD_WHAT = {"logits": "softmax over graph output {name!r}", "probabilities": "graph output {name!r}",
             "logit": "sigmoid of graph output {name!r}", "probability": "graph output {name!r} and its complement"}

SCORES_VALIDATOR = """
    @field_validator("scores")
    @classmethod
    def _one_probability_per_class(cls, scores: dict[str, float]) -> dict[str, float]:
        if set(scores) != {str(label) for label in CLASSES}:
            raise ValueError(f"scores must hold every class once: {', '.join(map(str, CLASSES))}")
        return dict(zip(scores, check_distribution(list(scores.values())), strict=True))"""


def _scores_fields(plan: ConsumerPlan) -> list[str]:
    """``label``, ``probability``, ``scores``: the result of a classifier that ends in scores."""
    assert plan.graph.score_output is not None
    how = HEAD_WHAT[plan.graph.head or "logits"].format(name=plan.graph.score_output.name)
    description = json.dumps(f"every class's probability, by label ({how})")
    return [
        '    label: LABELS = Field(description="the most probable class")',
        '    probability: Probability = Field(description="the probability of that class")',
        f"    scores: dict[str, Probability] = Field(description={description})",
    ]


# -- the handler ------------------------------------------------------------------------------------


def _feed(field: InputField) -> str:
    values = f"[event.data.{field.field} for event in events]"
    if field.kind == "str":
        rows = f"[[event.data.{field.field}] for event in events]" if field.graph_shape == (1,) else values
        return f"np.array({rows}, dtype=object)"
    if len(field.graph_shape) > 1:
        return f"np.array({values}).reshape(len(events), {', '.join(map(str, field.graph_shape))})"
    return f"np.array({values})"


def _value(kind: Kind, expression: str) -> str:
    return f"{PYTHON_TYPES[kind]}({expression})"


def handler_source(plan: ConsumerPlan) -> str:
    """``functions/<module>/handler.py``: ``infer`` (ONE ``session.run`` per batch) and ``lambda_handler``."""
    if plan.from_scores:
        return scores_handler_source(plan)
    graph = plan.graph
    imports = type_imports(plan.contract_module, plan.input_module, plan.event_type, [plan.result_type])
    feeds = [f"        {json.dumps(field.graph_name)}: {_feed(field)}," for field in plan.fields]
    body: list[str]
    if plan.classifier:
        label_output, score_output = graph.label_output, graph.score_output
        assert label_output is not None and score_output is not None
        scores = "probabilities" if graph.distribution else "scores"
        body = [
            f"    labels, {scores} = batch[{json.dumps(label_output.name)}], batch[{json.dumps(score_output.name)}]",
            "    return [",
            f"        {plan.result_type}(",
            "            input_id=event.id,",
            f"            label={_value(label_output.kind, 'label')},",
        ]
        if graph.distribution:
            body += [
                "            confidence=round(float(row.max()), 6),",
                "            probabilities=[round(float(p), 6) for p in row],",
            ]
        else:
            body.append("            scores=[float(s) for s in row],")
        loop = f"        for event, label, row in zip(events, labels, {scores}, strict=True)"
        envelope = True
    else:
        columns = []
        for output in graph.outputs:
            shape = "len(events)" if output.width is None else "len(events), -1"
            columns.append(f"    {output.field} = batch[{json.dumps(output.name)}].reshape({shape})")
        body = columns + ["    return [", f"        {plan.result_type}(", "            input_id=event.id,"]
        for output in graph.outputs:
            item = f"{output.field}[i]"
            value = _value(output.kind, item) if output.width is None else \
                f"[{_value(output.kind, 'v')} for v in {item}]"
            body.append(f"            {output.field}={value},")
        loop = "        for i, event in enumerate(events)"
        envelope = True
    assert envelope
    body += [
        "            model=model.ref,",
        "            inference_ms=round(batch.inference_ms, 3),",
        "            batch_size=len(events),",
        "        )",
        loop,
        "    ]",
    ]
    what = "the predicted class and its probabilities" if plan.classifier and graph.distribution else (
        "the predicted class and its scores" if plan.classifier else "the model's outputs")
    out = [
        *paragraph(f'"""``{plan.event_type}`` batches from SQS in, ``{plan.result_type}`` events out: ONE '
                   "``session.run`` per batch."),
        "",
        "Written by ``inferbus new consumer``. The kit does the rest around ``infer``",
        "(:func:`inferbus_lambda.handlers.consumer_handler`): validation, claims, publishing, rejections,",
        f"the partial batch response. The declaration is ``pipeline/{plan.module}.py``; the contract",
        f"``{plan.contract_module}``.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from collections.abc import Sequence",
        "",
        "import numpy as np",
        "",
        "from inferbus_lambda.contracts import CloudEvent",
        *imports,
        "from inferbus_lambda.handlers import ConsumerRuntime, consumer_handler",
        "from inferbus_lambda.inference import OnnxModel",
        "",
        "",
        *_signature(f"def infer(events: Sequence[CloudEvent[{plan.event_type}]], runtime: ConsumerRuntime) "
                    f"-> list[{plan.result_type}]:"),
        f'    """Score every event in ONE ``session.run``: one ``{plan.result_type}`` per event, in order, with',
        f"    {what}.",
        "",
        "    A non-finite output breaks the result contract: the batch fails, is retried, then dead-lettered.",
        '    """',
        "    model = runtime.models.only",
        "    batch = model.run({",
        *feeds,
        "    })",
        *body,
        "",
        "",
        "lambda_handler = consumer_handler(infer, load=OnnxModel.from_info)",
    ]
    return source_text(out)


SCORES_HANDLER = Template('''"""$summary

$about
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from inferbus_lambda.contracts import CloudEvent
$imports
from inferbus_lambda.handlers import ConsumerRuntime, consumer_handler
from inferbus_lambda.inference import OnnxModel$helper


$signature
    """Score every event in ONE ``session.run``: one result per event, in order, with the most
    probable class, its probability and every class's probability.

    A non-finite output breaks the result contract: the batch fails, is retried, then dead-lettered.
    """
    model = runtime.models.only
    batch = model.run({
$feeds
    })
$probabilities
    best = probabilities.argmax(axis=1)
    return [
        $result_type(
            input_id=event.id,
            label=CLASSES[k],
            probability=round(float(row[k]), 6),
            scores={str(label): round(float(p), 6) for label, p in zip(CLASSES, row, strict=True)},
            model=model.ref,
            inference_ms=round(batch.inference_ms, 3),
            batch_size=len(events),
        )
        for event, k, row in zip(events, best, probabilities, strict=True)
    ]


lambda_handler = consumer_handler(infer, load=OnnxModel.from_info)
''')

SOFTMAX = '''


def softmax(logits: np.ndarray) -> np.ndarray:
    """Class probabilities from logits, row by row; each row's largest logit is subtracted first, so exp
    cannot overflow however large the logits are."""
    exponentials = np.exp(logits - logits.max(axis=1, keepdims=True))
    return exponentials / exponentials.sum(axis=1, keepdims=True)'''

SIGMOID = '''


def sigmoid(logits: np.ndarray) -> np.ndarray:
    """1 / (1 + e^-x), written as exp(-log(1 + e^-x)) so that neither tail overflows."""
    return np.exp(-np.logaddexp(0.0, -logits))'''

# Each head: what the model ends in, how the handler makes probabilities of it, the helper it needs,
# and the lines that turn the graph's output ($output) into [N, classes] probabilities.
HEAD_PROBABILITIES = {
    "logits": ("logits", "a softmax", SOFTMAX,
               "    probabilities = softmax(batch[$output].reshape(len(events), -1).astype(np.float64))"),
    "probabilities": ("class probabilities", "renormalized against float32 rounding", "",
                      ("    probabilities = batch[$output].reshape(len(events), -1).astype(np.float64)\n"
                       "    probabilities /= probabilities.sum(axis=1, keepdims=True)")),
    "logit": ("one logit, of its second class", "a sigmoid", SIGMOID,
              ("    positive = sigmoid(batch[$output].reshape(len(events)).astype(np.float64))\n"
               "    probabilities = np.stack([1.0 - positive, positive], axis=1)  # in the order of CLASSES")),
    "probability": ("the probability of its second class", "the first's is its complement", "",
                    ("    positive = np.clip(batch[$output].reshape(len(events)).astype(np.float64), 0.0, 1.0)\n"
                     "    probabilities = np.stack([1.0 - positive, positive], axis=1)  # in the order of CLASSES")),
}


def scores_handler_source(plan: ConsumerPlan) -> str:
    """The handler of a classifier that ends in scores: numpy softmax (or sigmoid), argmax, label and probability."""
    graph = plan.graph
    assert graph.head is not None and graph.score_output is not None
    ends, how, helper, probabilities = HEAD_PROBABILITIES[graph.head]
    summary = (f"``{plan.event_type}`` batches from SQS in, ``{plan.result_type}`` events out: ONE ``session.run`` "
               "per batch.")
    signature = (f"def infer(events: Sequence[CloudEvent[{plan.event_type}]], runtime: ConsumerRuntime) "
                 f"-> list[{plan.result_type}]:")
    about = (f"Written by ``inferbus new consumer``. The model ends in {ends}: the class probabilities are computed "
             f"here with numpy ({how}), and each result carries the most probable label, its probability and every "
             "class's probability. The kit does the rest around ``infer`` "
             "(:func:`inferbus_lambda.handlers.consumer_handler`): validation, claims, publishing, rejections, the "
             f"partial batch response. The declaration is ``pipeline/{plan.module}.py``; the contract "
             f"``{plan.contract_module}``.")
    text = SCORES_HANDLER.substitute(
        summary="\n".join(paragraph(f"\"\"\"{summary}"))[3:],
        about="\n".join(paragraph(about)),
        imports="\n".join(type_imports(plan.contract_module, plan.input_module, plan.event_type,
                                       [plan.result_type, "CLASSES"])),
        helper=helper,
        signature="\n".join(_signature(signature)),
        result_type=plan.result_type,
        feeds="\n".join(f"        {json.dumps(field.graph_name)}: {_feed(field)}," for field in plan.fields),
        probabilities=Template(probabilities).substitute(output=json.dumps(graph.score_output.name)),
    )
    return source_text(text.splitlines())


# -- the declaration --------------------------------------------------------------------------------


def _corruption(field: InputField) -> tuple[str, str]:
    """A way to break a valid event's ``field``: (why, Python expression changing ``d``)."""
    data = 'd["data"]'
    if field.width is not None and field.width > 1:
        why = f"{field.width - 1} values in {field.field}, not {field.width}"
        return why, f'{data}.update({field.field}={data}["{field.field}"][:-1])'
    if field.kind == "str":
        return f"a number as {field.field}", f"{data}.update({field.field}=42)"
    if field.width is not None:
        return f"a string in {field.field}", f'{data}["{field.field}"].__setitem__(0, "1.5")'
    return f"a string as {field.field}", f'{data}.update({field.field}="1.5")'


def corruptions(plan: ConsumerPlan) -> list[tuple[str, str]]:
    """One or two malformed inputs: a list one value short (or a wrong type), and a value as a string."""
    first = plan.fields[0]
    found = [_corruption(first)]
    numeric = next((f for f in plan.fields if f.kind != "str" and f.width is not None), None)
    if numeric is not None and numeric.width and numeric.width > 1:
        found.append((f"a string in {numeric.field}", f'd["data"]["{numeric.field}"].__setitem__(0, "1.5")'))
    return found


LOADER_NAMES = frozenset({"count", "data", "handle", "i", "labels", "line", "lines", "row", "rows", "v", "np", "csv",
                          "json", "Path", "Sample", "HELD_OUT"})


def _local(field: InputField) -> str:
    """The loader's variable for a field's values: the field's name unless the loader uses that name."""
    return f"{field.field}_values" if field.field in LOADER_NAMES else field.field


def _read_value(held_out: HeldOut, field: InputField, key: str) -> str:
    """One sample's value of ``field``: from ``<field>[i]`` (``.npz``) or ``row`` (``.csv``, ``.jsonl``)."""
    cast = "int(float({}))" if field.kind == "int" and held_out.format == "csv" else PYTHON_TYPES[field.kind] + "({})"
    if held_out.format == "npz":
        item = f"{_local(field)}[i]"
        return cast.format(f"{item}.item()") if field.width is None else f"[{cast.format('v')} for v in {item}.ravel()]"
    if held_out.format == "csv":
        start, stop = key.split(":")
        if field.width is None:
            return cast.format(f"row[{start}]")
        return f"[{cast.format('v')} for v in row[{start}:{stop}]]"
    item = f"row[{json.dumps(key)}]"
    return cast.format(item) if field.width is None else f"[{cast.format('v')} for v in {item}]"


def _read_truth(held_out: HeldOut) -> str | None:
    if held_out.labels is None or held_out.truth_kind is None:
        return None
    if held_out.format == "npz":
        return f"{held_out.truth_kind}(labels[i])"
    if held_out.format == "csv":
        text = f"row[{held_out.label_key}]"
        return {"int": f"int(float({text}))", "float": f"float({text})", "str": text}[held_out.truth_kind]
    return f"{held_out.truth_kind}(row[{json.dumps(held_out.label_key)}])"


def _samples_list(values: Sequence[str], truth: str | None, loop: str) -> list[str]:
    """``return [Sample({...}, truth) for ...]``, the dict one item per line when it is long."""
    one_line = f"        Sample({{{', '.join(values)}}}{', ' + truth if truth else ''})"
    if len(one_line) <= 120:
        return ["    return [", one_line, f"        {loop}", "    ]"]
    items = [f"                {value}," for value in values]
    return ["    return [", "        Sample(", "            {", *items, "            },",
            *([f"            {truth},"] if truth else []), "        )", f"        {loop}", "    ]"]


def _samples_function(plan: ConsumerPlan) -> tuple[list[str], list[str], str, int, int]:
    """(imports, function lines, samples expression, count, limit) for the demo."""
    source = plan.samples
    held_out = source.held_out
    if held_out is not None and source.file is not None:
        values = [f"{json.dumps(f.field)}: {_read_value(held_out, f, held_out.keys[f.graph_name])}"
                  for f in plan.fields]
        truth = _read_truth(held_out)
        truth_note = "with their true labels" if truth else "(the file has no true labels)"
        lines = [
            f'HELD_OUT = Path(__file__).resolve().parents[1] / "models" / "{source.file}"',
            "",
            "",
            "def held_out(count: int) -> list[Sample]:",
            f'    """The first ``count`` held-out samples in ``models/{source.file}``, {truth_note}."""',
        ]
        if held_out.format == "npz":
            imports = ["from pathlib import Path", "", "import numpy as np"]
            lines.append("    with np.load(HELD_OUT) as data:")
            lines += [f"        {_local(f)} = data[{json.dumps(held_out.keys[f.graph_name])}][:count]"
                      for f in plan.fields]
            if truth:
                lines.append(f"        labels = data[{json.dumps(held_out.label_key)}][:count]")
            lines += _samples_list(values, truth, f"for i in range(len({_local(plan.fields[0])}))")
        elif held_out.format == "csv":
            imports = ["import csv", "from pathlib import Path"]
            skip = 1 if held_out.header else 0
            lines += ['    with HELD_OUT.open(newline="", encoding="utf-8") as handle:',
                      f"        rows = [row for row in csv.reader(handle) if row][{skip}:{skip} + count]"]
            lines += _samples_list(values, truth, "for row in rows")
        else:
            imports = ["import json", "from pathlib import Path"]
            lines.append('    lines = [line for line in HELD_OUT.read_text(encoding="utf-8").splitlines() '
                         "if line.strip()]")
            lines += _samples_list(values, truth, "for row in map(json.loads, lines[:count])")
        return imports, lines, "held_out", min(held_out.rows, DEMO_COUNT), held_out.rows
    if source.component is not None:
        return [], [], "SAME_EVENTS.samples", 0, 0
    generators = []
    for field in plan.fields:
        if field.kind == "str":
            value = 'f"sample text {i}"' if field.width is None else f'[f"sample text {{i}}"] * {field.width}'
        elif field.kind == "int":
            value = "int(rng.integers(0, 10))" if field.width is None else \
                f"[int(v) for v in rng.integers(0, 10, size={field.width})]"
        else:
            value = "round(float(rng.normal()), 4)" if field.width is None else \
                f"[round(float(v), 4) for v in rng.normal(size={field.width})]"
        generators.append(f"{json.dumps(field.field)}: {value}")
    lines = [
        "def synthetic(count: int) -> list[Sample]:",
        '    """Seeded random inputs of the right shape, so the demo runs before you have data.',
        "",
        "    REPLACE THEM with held-out samples of your own (rows the model never saw in training, with",
        "    their true labels): random inputs show that the plumbing works, not that the model does.",
        "    ``inferbus new consumer ... --samples FILE`` writes such a loader (see docs/extending.md).",
        '    """',
        f"    rng = np.random.default_rng({SYNTHETIC_SEED})",
        *_samples_list(generators, None, "for i in range(count)"),
    ]
    return ["import numpy as np"], lines, "synthetic", SYNTHETIC_COUNT, SYNTHETIC_LIMIT


def declaration_source(plan: ConsumerPlan) -> str:
    """``pipeline/<module>.py``: the ``Consumer`` declaration with its demo inputs."""
    imports, function, samples, count, limit = _samples_function(plan)
    reused = plan.samples.component is not None
    truth_field = "label" if plan.classifier and plan.samples.held_out is not None and \
        plan.samples.held_out.labels is not None else None
    kinds = {"classifier": "classifier", "regressor": "regressor", "generic": "model"}
    header = [
        *paragraph(f'"""{plan.name}: {plan.event_type} -> {plan.model_name} (ONNX {kinds[plan.graph.task]}) -> '
                   f"{plan.result_type}, {BATCH_CALLS[str(plan.channel)]}."),
        "",
        *paragraph(f"Written by ``inferbus new consumer``: the handler is ``functions/{plan.module}/handler.py``, the "
                   f"contract ``{plan.contract_module}``."),
        '"""',
        "",
        "from __future__ import annotations",
        "",
    ]
    names = ["Corruption", "DemoInputs"] + ([] if reused else ["Sample"])
    ordered = plan.channel == "fifo"
    body_imports = ([*imports, ""] if imports else []) + ["from inferbus.model.declarations import Consumer, EventFilter",
                                                         f"from inferbus.model.demo import {', '.join(names)}"]
    if plan.broker is not None:
        body_imports.append("from inferbus.model.kafka import KafkaTopic")
    if ordered or plan.broker is not None:  # both declare their batch
        body_imports.append("from inferbus.model.settings import ConsumerSettings")
    if plan.channel == "rabbitmq":
        body_imports.insert(body_imports.index("from inferbus.model.declarations import Consumer, EventFilter") + 2,
                            "from inferbus.model.rabbitmq import RabbitMqQueue")
    if reused:
        body_imports += ["", (f"from .{plan.samples.component_module} import DEMO as "
                         f"{plan.samples.component_module.upper()}_DEMO")]
    out = header + body_imports + ["", ""]
    if reused:
        out += [
            *paragraph(f"# The held-out {plan.event_type} events that {plan.samples.component}'s demo sends: this "
                       "consumer takes the same type. (Their true answers are that component's, so no accuracy is "
                       "computed here.)", indent="# "),
            (f"SAME_EVENTS = next(d for d in {plan.samples.component_module.upper()}_DEMO "
             f"if d.component == {json.dumps(plan.samples.component)})"),
            "",
            "",
        ]
    elif function:
        out += function + ["", ""]
    malformed = []
    for why, change in corruptions(plan):
        line = f"            Corruption({json.dumps(why)}, lambda d: {change}),"
        malformed.append(line if len(line) <= 120 else f"            Corruption({json.dumps(why)},\n"
                         f"                       lambda d: {change}),")
    count_text = "min(SAME_EVENTS.count, 40)" if reused else str(count)
    limit_text = "SAME_EVENTS.limit" if reused else str(limit)
    demo = [
        "    DemoInputs(",
        f'        "{plan.name}",',
        f"        samples={samples},",
        f"        count={count_text},",
        f"        limit={limit_text},",
    ]
    if truth_field:
        demo.append(f'        truth_field="{truth_field}",')
    demo += ["        malformed=(", *malformed, "        ),", "    ),"]
    out += [
        "COMPONENTS = [",
        "    Consumer(",
        f'        name="{plan.name}",',
        f'        description="{plan.event_type} -> {plan.model_name} ONNX model -> {plan.result_type}",',
        f'        handler="{plan.module}.handler.lambda_handler",',
        f'        accepts=EventFilter("{plan.event_type}"),',
        f'        emits="{plan.result_type}",',
        f'        models=("{plan.model_name}",),',
        *([f'        channel="{plan.channel}",', f"        group_by={json.dumps(plan.group_by)},",
           f"        settings=ConsumerSettings(batch_size={FIFO_MAX_BATCH}),  # Lambda's most for a FIFO queue"]
          if ordered else []),
        *(['        channel="kafka",', f"        broker={kafka_topic_source(plan.broker)},",
           f"        settings=ConsumerSettings(batch_size={MAX_POLL_RECORDS}),  # the article's max.poll.records"]
          if plan.broker is not None else []),
        *(['        channel="rabbitmq",', f"        broker=RabbitMqQueue(queue={json.dumps(plan.queue)}),  # docs/channels.md"]
          if plan.channel == "rabbitmq" else []),
        "    ),",
        "]",
        "",
        "DEMO = [",
        *demo,
        "]",
    ]
    return source_text(out)


# -- the functional test ----------------------------------------------------------------------------

# A kafka consumer's test writes to its topic on the embedded runtime's local Kafka cluster (a mock, or a real broker).
KAFKA_PRODUCE = [
    "def produce(pipeline, values: list[str]) -> None:",
    '    """Write each value (a structured CloudEvent) to the consumer\'s topic on the local Kafka cluster."""',
    '    producer = Producer({"bootstrap.servers": pipeline.kafka_bootstrap_servers})',
    "    for value in values:",
    "        producer.produce(CONSUMER.broker.topic, value=value)",
    "    assert producer.flush(10) == 0",
    "",
    "",
]


def kafka_topic_source(topic: KafkaTopic) -> str:
    """The declaration of ``topic`` as Python source (the fields that differ from their defaults)."""
    defaults = {f.name: f.default for f in dataclasses.fields(KafkaTopic)}
    given = {f.name: getattr(topic, f.name) for f in dataclasses.fields(KafkaTopic)
             if f.name == "topic" or getattr(topic, f.name) != defaults[f.name]}
    return "KafkaTopic(" + ", ".join(f"{name}={value!r}" for name, value in given.items()) + ")"



def functional_test_source(plan: ConsumerPlan) -> str:
    """``tests/functional/test_<module>.py``: the consumer embedded on moto, its samples and a malformed input."""
    why, change = _corruption(plan.fields[0])
    field = plan.fields[0].field
    kafka = plan.broker is not None
    out = [
        *functional_test_head(
            f"{plan.name}, embedded on moto: its demo samples in, one valid {plan.result_type} per input out; a "
            "malformed input kept aside with its reason.",
            "Written by ``inferbus new consumer``. The stack is synthesized with this consumer alone, provisioned in "
            "moto and run in this process: no AWS account, no network.",
            type_imports(plan.contract_module, plan.input_module, plan.event_type, [plan.result_type]),
            [*(["from confluent_kafka import Producer"] if kafka else []),
             "from inferbus.local import LocalPipeline", "from inferbus.model.declarations import Consumer, Pipeline",
             *(["from inferbus.runtime.rabbitmq import publish_cloudevents"] if plan.channel == "rabbitmq" else []),
             f"from pipeline.{plan.module} import COMPONENTS, DEMO",
             *(["from tests.rabbitmq_broker import rabbitmq_or_skip"] if plan.channel == "rabbitmq" else [])]),
        "",
        f'(CONSUMER,) = [c for c in COMPONENTS if isinstance(c, Consumer) and c.name == "{plan.name}"]',
        f'(INPUTS,) = [d for d in DEMO if d.component == "{plan.name}"]',
        f"SAMPLES = {TEST_SAMPLES}",
        "",
        "",
        '@pytest.fixture(scope="module")',
        "def pipeline():",
        *(["    rabbitmq_or_skip()  # its events come from a real RabbitMQ broker"] if plan.channel == "rabbitmq" else []),
        "    with LocalPipeline(pipeline=Pipeline(consumers=(CONSUMER,))) as running:",
        "        yield running",
        "",
        "",
        "def send(pipeline, entries: list[dict]) -> None:",
        *(['    """Publish the CloudEvents to the consumer\'s RabbitMQ queue, structured (``application/cloudevents+json``)."""',
           '    publish_cloudevents(CONSUMER.broker.queue, [entry["Detail"] for entry in entries], CONSUMER.broker.virtual_host)']
          if plan.channel == "rabbitmq" else
          ['    """Write the CloudEvents to the consumer\'s Kafka topic, structured (the value is the CloudEvent)."""',
           '    produce(pipeline, [entry["Detail"] for entry in entries])']
          if kafka else
          ['    """Put the events on the bus: its rule routes them to the consumer."""',
           "    assert pipeline.put_events(entries) == []"]),
        "",
        "",
        "def submitted(count: int) -> list:",
        "    samples = INPUTS.samples(min(count, INPUTS.limit))",
        f'    return [new_event({plan.event_type}.model_validate(sample.data), source="inferbus.test")',
        "            for sample in samples]",
        "",
        "",
        "def results(delivered: list[dict], input_ids: set[str]) -> list:",
        *paragraph(f'    """The {plan.result_type} events among ``delivered`` for these inputs, each validated by its '
                   'contract."""', indent="    "),
        "    found = []",
        "    for event in delivered:",
        f'        if event["detail-type"] == "{plan.result_type}" and event["detail"].get("subject") in input_ids:',
        "            found.append(from_eventbridge_event(event))",
        "    return found",
        "",
        "",
        *(KAFKA_PRODUCE if kafka else []),
        "def test_one_valid_result_per_input_from_one_inference_per_batch(pipeline):",
        "    events = submitted(SAMPLES)",
        "    send(pipeline, [to_put_events_entry(event, pipeline.bus_name) for event in events])",
        "    pipeline.drain()",
        "",
        "    delivered = pipeline.tapped_events()  # every event the bus carried since the last look",
        "    published = results(delivered, {event.id for event in events})",
        "    assert sorted(result.data.input_id for result in published) == sorted(event.id for event in events)",
        f"    assert all(isinstance(result.data, {plan.result_type}) for result in published)",
        "    assert {result.source for result in published} == {CONSUMER.result_source}",
        ("    (function,) = [source.function for source in pipeline.event_sources if source.spec.kafka is not None]"
         if kafka else "    function = pipeline.consumer(CONSUMER.name).function"),
        "    batches = [invocation for invocation in function.invocations if invocation.records]",
        *(['    assert len(function.metrics["InferenceMs"]) == len(batches)  # ONE session.run per batch']
          if plan.channel not in ("fifo", "kafka") else
          ['    # ordered: one session.run per round of a batch (the k-th event of every key), so one per batch at',
           '    # best and one per event when every event has the same key',
           '    assert len(batches) <= len(function.metrics["InferenceMs"]) <= sum(b.records for b in batches)']),
        "    assert all(messages == [] for messages in pipeline.dead_letters().values())",
        "",
        "",
        "def test_a_malformed_input_is_kept_aside_with_its_reason(pipeline):",
        "    entry = to_put_events_entry(submitted(1)[0], pipeline.bus_name)",
        "    d = json.loads(entry[\"Detail\"])",
        f'    d["id"] = "malformed-{plan.name}"',
        f"    {change}  # {why}",
        '    send(pipeline, [entry | {"Detail": json.dumps(d)}])',
        "    pipeline.drain()",
        "",
        f'    (kept,) = [m for m in pipeline.invalid_events() if m.get("event_id") == "malformed-{plan.name}"]',
        '    assert kept["error"] == "InvalidEventError" and kept["consumer"] == CONSUMER.result_source',
        f'    assert kept["reason"].startswith("data.{field}")',
        f'    assert results(pipeline.tapped_events(), {{"malformed-{plan.name}"}}) == []',
    ]
    return source_text(out)
