"""What a component of the pipeline is, declared once: a consumer, a workflow or a route.

Your components are declared in ``pipeline/`` (one module each, see ``pipeline/__init__.py``).
Everything else derives from a declaration: the stack builds its queues, rules, functions,
alarms and outputs; the embedded runtime runs it; the demo sends its samples and accounts for
them; the tests check it. A component's ``name`` (kebab-case) is the only name you choose:

======================  ==================================================================
derived from ``name``   e.g. for ``image-classifier``
======================  ==================================================================
construct id            ``ImageClassifier`` (logical ids start with it)
result ``source``       ``inferbus.image-classifier`` (reserved to its role on the bus)
Powertools service      ``image-classifier`` (logs, metrics, traces, idempotency keys)
stack outputs           ``ImageClassifierQueueUrl``, ``ImageClassifierDeadLetterQueueUrl``, ...
======================  ==================================================================

Values known only at synth are written as markers: ``Setting("review_threshold")`` (a field of
:class:`~infra.settings.InferbusSettings`) and ``Producer("risk-scorer")`` (another component's
result ``source``).

Example
-------
>>> consumer = Consumer(name="iris-classifier", handler="iris_classifier.handler.lambda_handler",
...                     consumes=EventFilter("IrisSubmitted"), produces="IrisClassified", models=("iris-logreg",))
>>> consumer.construct_id, consumer.result_source, consumer.output_key(QUEUE_URL)
('IrisClassifier', 'inferbus.iris-classifier', 'IrisClassifierQueueUrl')
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .settings import ConsumerSettings, FunctionSettings, QueueSettings, SettingsError

__all__ = [
    "ALARM_TOPIC_OUTPUT", "EVENT_ARCHIVE_OUTPUT", "EVENT_BUS_NAME_OUTPUT", "IDEMPOTENCY_TABLE_OUTPUT", "INGEST_FUNCTION_OUTPUT",
    "INGEST_PRODUCER_POLICY_OUTPUT", "INGEST_URL_OUTPUT", "INVALID_EVENTS_OUTPUT", "RESULTS_BUCKET_OUTPUT",
    "SCHEMA_REGISTRY_OUTPUT",
    "Component", "Consumer", "Corruption", "DEAD_LETTER_QUEUE_URL", "DemoInputs", "EventFilter", "FUNCTION_NAME",
    "Pipeline", "Producer", "QUEUE_URL", "RESULT_SOURCE_PREFIX", "Route", "STATE_MACHINE_ARN", "Sample", "Setting",
    "Task", "UNROUTED_CHECK_ID", "UNROUTED_CHECK_NAME", "UNROUTED_CHECK_SOURCE", "Workflow", "pascal",
]

NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
MAX_NAME = 40
STEM = re.compile(r"^[A-Z][A-Za-z0-9]*$")
RESULT_SOURCE_PREFIX = "inferbus."
# Stack outputs of the shared core.
EVENT_BUS_NAME_OUTPUT = "EventBusName"
INVALID_EVENTS_OUTPUT = "InvalidEventsQueueUrl"
ALARM_TOPIC_OUTPUT = "AlarmTopicArn"
IDEMPOTENCY_TABLE_OUTPUT = "IdempotencyTableName"
EVENT_ARCHIVE_OUTPUT = "EventArchiveName"
INGEST_URL_OUTPUT = "IngestUrl"
INGEST_FUNCTION_OUTPUT = "IngestFunctionName"
INGEST_PRODUCER_POLICY_OUTPUT = "IngestProducerPolicyArn"
SCHEMA_REGISTRY_OUTPUT = "SchemaRegistryName"
RESULTS_BUCKET_OUTPUT = "ResultsArchiveBucketName"
# The shared core's unrouted-events check: a catch-all rule -> queue -> function, outputs <id>QueueUrl, ...
UNROUTED_CHECK_NAME = "unrouted-events"  # its service name; its construct id is UNROUTED_CHECK_ID (below)
UNROUTED_CHECK_SOURCE = RESULT_SOURCE_PREFIX + UNROUTED_CHECK_NAME  # signs the rejections it keeps
# Stack outputs of a component: <construct id><kind>.
QUEUE_URL = "QueueUrl"
DEAD_LETTER_QUEUE_URL = "DeadLetterQueueUrl"
FUNCTION_NAME = "FunctionName"
STATE_MACHINE_ARN = "StateMachineArn"
# The kit's first step of every workflow: its ASL calls ${AcceptFunctionArn}.
ACCEPT_STEM = "Accept"


def pascal(name: str) -> str:
    """``image-classifier`` -> ``ImageClassifier``.

    >>> pascal("risk-review")
    'RiskReview'
    """
    return "".join(part.capitalize() for part in name.split("-"))


UNROUTED_CHECK_ID = pascal(UNROUTED_CHECK_NAME)


def kebab(stem: str) -> str:
    """``ScoreMlp`` -> ``score-mlp``.

    >>> kebab("ScoreMlp")
    'score-mlp'
    """
    return re.sub(r"(?<!^)(?=[A-Z])", "-", stem).lower()


@dataclass(frozen=True)
class Setting:
    """A field of :class:`~infra.settings.InferbusSettings`, read at synth."""

    name: str


@dataclass(frozen=True)
class Producer:
    """The result ``source`` of the component named ``name``, resolved at synth."""

    name: str


@dataclass(frozen=True)
class EventFilter:
    """Which events a component takes: CloudEvents 1.0 of one ``type``.

    Parameters
    ----------
    type
        The CloudEvents ``type`` (the bus's ``DetailType``); a contract must define it.
    sources
        Only from these producers (``Producer("risk-scorer")`` or a literal source). Default: any.
    data
        An EventBridge pattern on the event's ``data`` (content-based routing), with markers
        where a value comes from the settings.
    """

    type: str
    sources: tuple[Producer | str, ...] = ()
    data: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Sample:
    """One held-out input for the demo: the event's ``data`` and, if known, the true answer."""

    data: dict[str, Any]
    truth: Any = None


@dataclass(frozen=True)
class Corruption:
    """A malformed input for the demo: ``change`` breaks a valid CloudEvent (a dict) in place."""

    why: str
    change: Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class DemoInputs:
    """What the demo sends to a component.

    Parameters
    ----------
    samples
        ``samples(count) -> [Sample]``: the first ``count`` held-out inputs (data that ships
        with the repository, never a download).
    count
        How many the demo sends by default (``inferbus demo --<name> N`` changes it).
    limit
        How many there are.
    malformed
        Broken copies of the first sample, each kept aside with its reason.
    duplicates
        How many of the samples the demo delivers a second time.
    truth_field
        Dotted path in the result's ``data`` to compare with :attr:`Sample.truth` (accuracy).
    """

    samples: Callable[[int], Sequence[Sample]]
    count: int
    limit: int
    malformed: tuple[Corruption, ...] = ()
    duplicates: int = 0
    truth_field: str | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.count <= self.limit:
            raise SettingsError(f"DemoInputs.count must be in [0, limit={self.limit}], got {self.count}")
        if not 0 <= self.duplicates <= self.count:
            raise SettingsError(f"DemoInputs.duplicates must be in [0, count={self.count}], got {self.duplicates}")


@dataclass(frozen=True, kw_only=True)
class Component:
    """What every component has: its name and a one-line description."""

    name: str
    description: str = ""

    def __post_init__(self) -> None:
        if not (NAME.fullmatch(self.name) and len(self.name) <= MAX_NAME):
            raise SettingsError(f"component name {self.name!r} must be kebab-case (lowercase words joined by '-', "
                                f"starting with a letter), at most {MAX_NAME} characters")

    @property
    def construct_id(self) -> str:
        return pascal(self.name)

    def output_key(self, kind: str) -> str:
        """The stack output this component publishes for ``kind`` (:data:`QUEUE_URL`, ...)."""
        return f"{self.construct_id}{kind}"


@dataclass(frozen=True, kw_only=True)
class Consumer(Component):
    """A queue consumer: rule -> SQS queue (+ DLQ) -> Lambda running ONE batched inference per batch.

    Parameters
    ----------
    name, description
        See :class:`Component`.
    handler
        ``module.function`` under ``functions/`` (``functions/<module>.py``), made with
        ``inferbus_lambda.handlers.consumer_handler``.
    consumes
        The events it takes.
    produces
        The type of its result events.
    models
        The models it loads, by name in ``models/manifest.json``.
    settings
        Batch size, window, concurrency, retries, memory, timeout, package.
    demo
        What ``inferbus demo`` sends it.
    """

    handler: str
    consumes: EventFilter
    produces: str
    models: tuple[str, ...] = ()
    settings: ConsumerSettings = ConsumerSettings()
    demo: DemoInputs | None = None

    @property
    def result_source(self) -> str:
        return RESULT_SOURCE_PREFIX + self.name

    @property
    def result_types(self) -> tuple[str, ...]:
        return (self.produces,)


@dataclass(frozen=True)
class Task:
    """A Lambda function a workflow's ASL invokes as ``${<Stem>FunctionArn}``.

    Parameters
    ----------
    handler
        ``module.function`` under ``functions/``, made with ``inferbus_lambda.handlers.step_handler``.
    models
        The models it loads (manifest names).
    settings
        Memory, timeout, package.
    description
        One line for the function's description.
    """

    handler: str
    models: tuple[str, ...] = ()
    settings: FunctionSettings = FunctionSettings()
    description: str = ""


@dataclass(frozen=True, kw_only=True)
class Workflow(Component):
    """A Step Functions workflow from an ASL file in ``statemachines/``, started by a rule.

    Parameters
    ----------
    name, description
        See :class:`Component`.
    definition
        The ASL file's name in ``statemachines/``: the workflow's own states, which the kit wraps
        at synth (``inferbus.model.workflow_protocol``: Accept, Route, ..., EmitFailure). It may
        use ``${EventBusName}``, ``${ResultSource}``, ``${WorkflowName}``, ``${FailureType}``,
        ``${<Stem>FunctionArn}`` for each task, ``${<Queue>QueueUrl}`` for its review queue and
        the keys of ``substitutions``.
    trigger
        The events that start an execution; its type and sources are also what Accept takes.
    produces
        The types of its result events.
    failure
        The type of the event its failure path emits (a ``WorkflowFailure`` contract).
    tasks
        Its Lambda tasks, by placeholder stem.
    express
        Express (short, high-rate, at-least-once) or Standard (exactly-once starts; may wait
        days for a person).
    substitutions
        More ``${Key}`` values, literal or markers.
    review_queue
        The name of a queue people read (manual review): created with the workflow, TLS-only,
        encrypted, kept 14 days; ``${<Name>QueueUrl}`` in the ASL.
    reviewer
        For the demo: ``reviewer(case, truth) -> (approve, note)`` plays the person.
    demo
        What ``inferbus demo`` sends it.
    """

    definition: str
    trigger: EventFilter
    produces: tuple[str, ...]
    failure: str
    tasks: Mapping[str, Task] = field(default_factory=dict)
    express: bool = True
    substitutions: Mapping[str, Any] = field(default_factory=dict)
    review_queue: str | None = None
    reviewer: Callable[[Any, Any], tuple[bool, str | None]] | None = None
    demo: DemoInputs | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        for stem in self.tasks:
            if not STEM.fullmatch(stem) or stem == ACCEPT_STEM:
                raise SettingsError(f"workflow {self.name}: task stem {stem!r} must be PascalCase and not "
                                    f"{ACCEPT_STEM!r} (the kit's first step)")
        if self.review_queue is not None and not NAME.fullmatch(self.review_queue):
            raise SettingsError(f"workflow {self.name}: review_queue {self.review_queue!r} must be kebab-case")

    @property
    def result_source(self) -> str:
        return RESULT_SOURCE_PREFIX + self.name

    @property
    def result_types(self) -> tuple[str, ...]:
        return (*self.produces, self.failure)

    @property
    def review_queue_output(self) -> str | None:
        """The stack output (and ASL placeholder) of its review queue's URL."""
        return f"{pascal(self.review_queue)}{QUEUE_URL}" if self.review_queue else None

    def task_construct_id(self, stem: str) -> str:
        return f"{self.construct_id}{stem}"

    def task_service(self, stem: str) -> str:
        return f"{self.name}-{kebab(stem)}"


@dataclass(frozen=True, kw_only=True)
class Route(Component):
    """A rule that routes matching events to a queue (+ DLQ) that your own service consumes.

    Parameters
    ----------
    name, description
        See :class:`Component`.
    routes
        The events it takes.
    settings
        Visibility timeout, retries, DLQ retention.
    """

    routes: EventFilter
    settings: QueueSettings = QueueSettings()


@dataclass(frozen=True)
class Pipeline:
    """Every component, checked as a whole: unique names, producers that exist, one reviewer queue each.

    Build it with :func:`pipeline.load_pipeline` (your declarations) or directly in a test.
    """

    consumers: tuple[Consumer, ...] = ()
    workflows: tuple[Workflow, ...] = ()
    routes: tuple[Route, ...] = ()

    def __post_init__(self) -> None:
        names = [component.name for component in self.components]
        duplicated = sorted({name for name in names if names.count(name) > 1})
        if duplicated:
            raise SettingsError(f"component names must be unique; declared more than once: {duplicated}")
        ids = [c.construct_id for c in self.components] + [pascal(w.review_queue) for w in self.workflows if w.review_queue]
        clashing = sorted({i for i in ids if ids.count(i) > 1})
        if clashing:
            raise SettingsError(f"names that differ only by '-' give the same construct id: {clashing}")
        producers = set(names)
        for component, event_filter in self.filters():
            for source in event_filter.sources:
                if isinstance(source, Producer) and source.name not in producers:
                    raise SettingsError(f"{component.name}: Producer({source.name!r}) names no component "
                                        f"(known: {sorted(producers)})")

    @property
    def components(self) -> tuple[Component, ...]:
        return (*self.consumers, *self.workflows, *self.routes)

    @property
    def producers(self) -> tuple[Consumer | Workflow, ...]:
        """The components that put results on the bus."""
        return (*self.consumers, *self.workflows)

    def filters(self) -> list[tuple[Component, EventFilter]]:
        """Each component's event filter."""
        found: list[tuple[Component, EventFilter]] = [(c, c.consumes) for c in self.consumers]
        found += [(w, w.trigger) for w in self.workflows]
        found += [(r, r.routes) for r in self.routes]
        return found

    def component(self, name: str) -> Component:
        """The component named ``name``.

        Raises
        ------
        KeyError
            Naming the components there are.
        """
        for component in self.components:
            if component.name == name:
                return component
        raise KeyError(f"no component named {name!r} (declared: {', '.join(c.name for c in self.components)})")

    def source_of(self, name: str) -> str:
        component = self.component(name)
        if not isinstance(component, Consumer | Workflow):
            raise KeyError(f"{name} is a route: it publishes nothing")
        return component.result_source

    def resolved_sources(self, event_filter: EventFilter) -> set[str] | None:
        """The ``source`` values ``event_filter`` takes, each :class:`Producer` named by its result source;
        ``None`` for any source."""
        if not event_filter.sources:
            return None
        return {source if isinstance(source, str) else self.source_of(source.name) for source in event_filter.sources}

    def resolve(self, value: Any, settings: Any) -> Any:
        """``value`` with every :class:`Setting` and :class:`Producer` marker replaced."""
        if isinstance(value, Setting):
            if not hasattr(settings, value.name):
                raise SettingsError(f"Setting({value.name!r}) is not a field of {type(settings).__name__}")
            return getattr(settings, value.name)
        if isinstance(value, Producer):
            return self.source_of(value.name)
        if isinstance(value, Mapping):
            return {key: self.resolve(item, settings) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.resolve(item, settings) for item in value]
        return value

    def pattern(self, event_filter: EventFilter, settings: Any) -> dict[str, Any]:
        """The EventBridge pattern of ``event_filter`` (CloudEvents 1.0 of its type)."""
        detail: dict[str, Any] = {"specversion": ["1.0"]}
        if event_filter.data:
            detail["data"] = self.resolve(event_filter.data, settings)
        pattern: dict[str, Any] = {"detail-type": [event_filter.type], "detail": detail}
        if event_filter.sources:
            pattern["source"] = self.resolve(list(event_filter.sources), settings)
        return pattern

    def with_overrides(self, overrides: Mapping[str, Any]) -> Pipeline:
        """A copy with component settings replaced: ``{"image-classifier.batch_size": 50,
        "text-pipeline.Embed.memory_mb": 4096}`` (values already of the field's type).

        Raises
        ------
        SettingsError
            For an unknown component, task or field, naming what there is.
        """
        pipeline = self
        for key, value in overrides.items():
            pipeline = pipeline._override(key, value)
        return pipeline

    def setting_of(self, key: str) -> tuple[Any, str]:
        """The settings object and field a key names: ``image-classifier.batch_size`` -> (its
        ``ConsumerSettings``, ``"batch_size"``); ``text-pipeline.Embed.memory_mb`` -> (that task's
        ``FunctionSettings``, ``"memory_mb"``).

        Raises
        ------
        SettingsError
            For an unknown component, task or field, naming what there is.
        """
        name, _, rest = key.partition(".")
        try:
            component = self.component(name)
        except KeyError as error:
            raise SettingsError(f"-c {key}: {error.args[0]}") from None
        if isinstance(component, Workflow):
            stem, _, field_name = rest.partition(".")
            if stem not in component.tasks or not field_name:
                raise SettingsError(f"-c {key}: workflow {name} has tasks {sorted(component.tasks)}; "
                                    f"write {name}.<Task>.<setting>")
            settings = component.tasks[stem].settings
        else:
            settings, field_name = component.settings, rest  # type: ignore[attr-defined]
        known = {f.name for f in dataclasses.fields(settings)}
        if field_name not in known:
            raise SettingsError(f"-c {key}: {type(settings).__name__} has no {field_name!r} (known: {sorted(known)})")
        return settings, field_name

    def _override(self, key: str, value: Any) -> Pipeline:
        settings, field_name = self.setting_of(key)
        changed = dataclasses.replace(settings, **{field_name: value})
        name, _, rest = key.partition(".")
        component = self.component(name)
        if isinstance(component, Workflow):
            stem = rest.partition(".")[0]
            tasks = {**component.tasks, stem: dataclasses.replace(component.tasks[stem], settings=changed)}
            updated: Component = dataclasses.replace(component, tasks=tasks)
        else:
            updated = dataclasses.replace(component, settings=changed)
        replace = {c.name: (updated if c.name == name else c) for c in self.components}
        return Pipeline(tuple(replace[c.name] for c in self.consumers), tuple(replace[w.name] for w in self.workflows),
                        tuple(replace[r.name] for r in self.routes))
