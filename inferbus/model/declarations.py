"""What a component of the pipeline is, declared once: a consumer, a workflow or a route.

Your components are declared in ``pipeline/`` (one module each, see ``pipeline/__init__.py``).
Everything else derives from a declaration: the stack builds its queues, rules, functions,
alarms and outputs; the embedded runtime runs it; the demo sends its samples and accounts for
them; the tests check it. A component's ``name`` (kebab-case) is the only name you choose
(:mod:`inferbus.model.names` lists what derives from it). Every component says what it
``accepts`` (an :class:`EventFilter`) and what it ``emits`` (result types).

Values known only at synth are written as markers: ``Setting("review_threshold")`` (a field of
:class:`~inferbus.model.settings.InferbusSettings`) and ``Producer("risk-scorer")`` (another component's
result ``source``).

Example
-------
>>> consumer = Consumer(name="iris-classifier", handler="iris_classifier.handler.lambda_handler",
...                     accepts=EventFilter("IrisSubmitted"), emits="IrisClassified", models=("iris-logreg",))
>>> consumer.construct_id, consumer.result_source, consumer.output_key(QUEUE_URL), consumer.emits
('IrisClassifier', 'inferbus.iris-classifier', 'IrisClassifierQueueUrl', ('IrisClassified',))
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .names import (
    ACCEPT_STEM,
    MAX_NAME,
    NAME,
    QUEUE_URL,
    STEM,
    kebab,
    pascal,
    result_source,
)
from .settings import BATCH_LIMITS, ConsumerSettings, FunctionSettings, QueueSettings, SettingsError, batch_problem

if TYPE_CHECKING:  # its module imports DeclarationError from here
    from .kafka import KafkaTopic
    from .rabbitmq import RabbitMqQueue

__all__ = ["DEFAULT_GROUP_BY", "PLANNED_CHANNELS", "Channel", "Component", "Consumer", "DeclarationError", "EventFilter", "Pipeline", "Producer", "ResultProducer", "Route",
           "Setting", "StateTable", "Task", "Workflow"]


class DeclarationError(SettingsError):
    """A declaration that cannot be deployed as written; the message names the declaration.

    >>> str(DeclarationError("iris-classifier", "emits nothing"))
    'iris-classifier: emits nothing'
    """

    def __init__(self, declaration: str, problem: str) -> None:
        super().__init__(f"{declaration}: {problem}")
        self.declaration = declaration
        self.problem = problem


class Channel(str, enum.Enum):
    """How a consumer's events reach it: its rule's target and its function's event source
    (guarantees and limits in ``docs/channels.md``)."""

    SQS = "sqs"  # a standard queue: at-least-once, unordered, nearly unlimited throughput
    FIFO = "fifo"  # a FIFO queue, one message group per key (``group_by``): in order per key
    KAFKA = "kafka"  # a Kafka topic (``broker=KafkaTopic(...)``): in order per partition
    RABBITMQ = "rabbitmq"  # a queue on Amazon MQ for RabbitMQ (``broker=RabbitMqQueue(...)``), not the bus's rules

    def __str__(self) -> str:
        return self.value


PLANNED_CHANNELS: tuple[str, ...] = ()  # declared names that answer "not available yet"
FIFO_MAX_BATCH = BATCH_LIMITS["fifo"].most  # Lambda reads a FIFO queue in batches of at most 10, with no batching window
DEFAULT_GROUP_BY = "$.detail.source"  # the CloudEvent's source: always set, so every producer's events keep their order
# A path into the EventBridge event (the CloudEvent is its ``detail``): fields only, as EventBridge Pipes resolves it.
GROUP_BY = re.compile(r"\$\.detail(\.[A-Za-z0-9_-]+)+")


@dataclass(frozen=True)
class Setting:
    """A field of :class:`~inferbus.model.settings.InferbusSettings`, read at synth."""

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
class StateTable:
    """An external store a consumer reads (the stateless consumer's profiles, histories, features):
    a DynamoDB table of items keyed by a string ``id``.

    The stack makes one table per name (encrypted with an AWS-managed key, point-in-time
    recovery on, on-demand, kept when the stack is deleted) and grants each consumer that
    reads it ``GetItem`` and ``BatchGetItem`` only; the function finds it by its name
    (``runtime.state("<name>")``) and caches what it read for ``cache_s`` per container. The
    embedded runtime makes it in moto and writes the ``seed`` into it; ``inferbus seed`` writes
    the seed into a deployed stack's table. See ``docs/extending.md``.

    Parameters
    ----------
    name
        Kebab-case; the table's construct id and output derive from it (``customer-profiles`` ->
        ``CustomerProfilesStateTable``, output ``CustomerProfilesStateTableName``).
    seed
        A JSON Lines file, relative to the repository root: one item per line, each with a
        string ``"id"``. Default: none (you fill the table yourself).
    cache_s
        How long a function keeps an item it read (or learnt is absent), 0-86400 seconds.
        Default 300.

    >>> StateTable("customer-profiles", seed="models/recs-customers.jsonl").construct_id
    'CustomerProfilesStateTable'
    """

    name: str
    seed: str | None = None
    cache_s: int = 300

    KEY = "id"  # every state table's partition key (a string)

    def __post_init__(self) -> None:
        if not (isinstance(self.name, str) and NAME.fullmatch(self.name) and len(self.name) <= MAX_NAME):
            raise DeclarationError(repr(self.name), f"a state table name must be kebab-case, at most {MAX_NAME} characters")
        if not (isinstance(self.cache_s, int) and 0 <= self.cache_s <= MAX_CACHE_S):
            raise DeclarationError(self.name, f"cache_s must be whole seconds from 0 to {MAX_CACHE_S}, got {self.cache_s!r}")
        if self.seed is not None and not (isinstance(self.seed, str) and self.seed.endswith(".jsonl")):
            raise DeclarationError(self.name, f"seed must be a .jsonl file relative to the repository root, got {self.seed!r}")

    @property
    def construct_id(self) -> str:
        return f"{pascal(self.name)}StateTable"

    @property
    def output_key(self) -> str:
        """The stack output holding the table's physical name."""
        return f"{self.construct_id}Name"


MAX_CACHE_S = 86_400


@dataclass(frozen=True, kw_only=True)
class Component:
    """What every component has: its name, a one-line description, and the events it accepts."""

    name: str
    description: str = ""
    accepts: EventFilter

    def __post_init__(self) -> None:
        if not (NAME.fullmatch(self.name) and len(self.name) <= MAX_NAME):
            raise DeclarationError(repr(self.name), f"a component name must be kebab-case (lowercase words joined by "
                                   f"'-', starting with a letter), at most {MAX_NAME} characters")
        if not isinstance(self.accepts, EventFilter):
            raise DeclarationError(self.name, f"accepts must be an EventFilter, got {self.accepts!r}")

    @property
    def construct_id(self) -> str:
        return pascal(self.name)

    def output_key(self, kind: str) -> str:
        """The stack output this component publishes for ``kind`` (:data:`~inferbus.model.names.QUEUE_URL`, ...)."""
        return f"{self.construct_id}{kind}"


@dataclass(frozen=True, kw_only=True)
class ResultProducer(Component):
    """A component that puts results on the bus: what it ``emits``, signed with its result ``source``."""

    emits: tuple[str, ...]

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.emits, str):  # one result type may be written bare
            object.__setattr__(self, "emits", (self.emits,))
        if not self.emits or not all(isinstance(kind, str) and kind for kind in self.emits):
            raise DeclarationError(self.name, f"emits must name at least one result type, got {self.emits!r}")

    @property
    def result_source(self) -> str:
        return result_source(self.name)

    @property
    def result_types(self) -> tuple[str, ...]:
        """Every type it puts on the bus."""
        return self.emits


@dataclass(frozen=True, kw_only=True)
class Consumer(ResultProducer):
    """A queue consumer: rule -> SQS queue (+ DLQ) -> Lambda running ONE batched inference per batch.

    Parameters
    ----------
    name, description
        See :class:`Component`.
    handler
        ``module.function`` under ``functions/`` (``functions/<module>.py``), made with
        ``inferbus_lambda.handlers.consumer_handler``.
    accepts
        The events it takes.
    emits
        The type of its result events (one).
    models
        The models it loads, by name in ``models/manifest.json``.
    settings
        Batch size, window, concurrency, retries, memory, timeout, package.
    channel
        How its events reach it (:class:`Channel`, or its name): ``"sqs"`` (default) or
        ``"fifo"`` (in order per key). See ``docs/channels.md``.
    group_by
        A ``fifo`` channel's key: a path into the EventBridge event, whose CloudEvent is its
        ``detail`` (``"$.detail.data.customer_id"``). The events of one key are processed in the
        order they reached the queue. Default :data:`DEFAULT_GROUP_BY`, the CloudEvent's ``source``.
        A ``fifo`` consumer's ``batch_size`` is at most 10 and its ``max_batching_window_s`` is not
        used (Lambda's rules for FIFO queues).
    broker
        The connection of a broker channel: a ``kafka`` channel's :class:`~inferbus.model.kafka.KafkaTopic`
        (the topic and its cluster; the batch is ``settings``' as on every channel, and ``settings.max_receive_count``
        bounds the retries), a
        ``rabbitmq`` channel's :class:`~inferbus.model.rabbitmq.RabbitMqQueue`. ``None`` for ``sqs`` and ``fifo``.
    reads
        The external stores it reads (:class:`StateTable`): ``runtime.state("<name>")`` in its
        ``infer``. Default: none.
    """

    handler: str
    models: tuple[str, ...] = ()
    settings: ConsumerSettings = ConsumerSettings()
    channel: Channel = Channel.SQS
    group_by: str | None = None
    broker: KafkaTopic | RabbitMqQueue | None = None
    reads: tuple[StateTable, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.emits) != 1:
            raise DeclarationError(self.name, f"a consumer emits one result type, got {list(self.emits)}")
        if isinstance(self.reads, StateTable):  # one table may be written bare
            object.__setattr__(self, "reads", (self.reads,))
        if not all(isinstance(table, StateTable) for table in self.reads):
            raise DeclarationError(self.name, f"reads must be StateTable declarations, got {self.reads!r}")
        names = [table.name for table in self.reads]
        if len(set(names)) != len(names):
            raise DeclarationError(self.name, f"reads names a state table more than once: {names}")
        object.__setattr__(self, "channel", channel_named(self.name, self.channel))
        _check_rabbitmq_broker(self)
        if self.channel is Channel.FIFO:
            if self.group_by is None:
                object.__setattr__(self, "group_by", DEFAULT_GROUP_BY)
            if not (isinstance(self.group_by, str) and GROUP_BY.fullmatch(self.group_by)):
                raise DeclarationError(self.name, f"group_by must be a path of fields into the event, starting "
                                       f"'$.detail.' (e.g. '$.detail.data.customer_id'), got {self.group_by!r}")
        elif self.group_by is not None:
            raise DeclarationError(self.name, f"group_by orders a 'fifo' channel; this consumer's channel is "
                                   f"{self.channel.value!r}")
        if problem := batch_problem(self.settings, self.channel):  # one place for a batch, each channel's limits
            raise DeclarationError(self.name, problem)
        if self.channel is Channel.KAFKA:
            self._check_kafka()
        elif self.channel in (Channel.SQS, Channel.FIFO) and self.broker is not None:
            raise DeclarationError(self.name, f"broker connects a broker channel; this consumer's channel is "
                                   f"{self.channel.value!r}")

    def _check_kafka(self) -> None:
        from .kafka import KafkaTopic  # its module imports DeclarationError from here

        if not isinstance(self.broker, KafkaTopic):
            raise DeclarationError(self.name, f"a 'kafka' channel needs broker=KafkaTopic(topic=..., cluster_arn=... or "
                                   f"bootstrap_servers=...), got {self.broker!r}")
        object.__setattr__(self, "broker", self.broker.with_group(self.name))

    @property
    def ordered(self) -> bool:
        """Whether its events are processed in order per key (a ``fifo`` channel)."""
        return self.channel is Channel.FIFO

    @property
    def result_type(self) -> str:
        """The type of its result events."""
        return self.emits[0]

    def state_tables_setting(self, table_names: Mapping[str, str]) -> dict[str, dict[str, Any]]:
        """What its function is told of the state tables it reads (``INFERBUS_STATE_TABLES``, as JSON):
        declared name -> ``{"table": physical name, "cache_s": seconds}``; ``table_names`` maps each declared
        name to its physical one (a stack's tables, or a harness's own)."""
        return {table.name: {"table": table_names[table.name], "cache_s": table.cache_s} for table in self.reads}


def _check_rabbitmq_broker(consumer: Consumer) -> None:
    """A ``rabbitmq`` channel names its queue (``broker=RabbitMqQueue(...)``); no other channel takes one."""
    from .rabbitmq import RabbitMqQueue  # it imports DeclarationError from here

    if consumer.channel is Channel.RABBITMQ and not isinstance(consumer.broker, RabbitMqQueue):
        raise DeclarationError(consumer.name, f"a 'rabbitmq' channel reads a queue: declare "
                               f"broker=RabbitMqQueue(queue=...), got broker={consumer.broker!r}")
    if isinstance(consumer.broker, RabbitMqQueue) and consumer.channel is not Channel.RABBITMQ:
        raise DeclarationError(consumer.name, f"broker=RabbitMqQueue(...) is a 'rabbitmq' channel's queue; this "
                               f"consumer's channel is {consumer.channel.value!r}: declare channel='rabbitmq'")


def channel_named(declaration: str, name: Channel | str) -> Channel:
    """The :class:`Channel` called ``name``.

    Raises
    ------
    DeclarationError
        For a channel not available yet (``kafka``) or unknown, naming those there are.

    >>> channel_named("x", "fifo")
    <Channel.FIFO: 'fifo'>
    """
    try:
        return Channel(name)
    except ValueError:
        available = ", ".join(channel.value for channel in Channel)
        if name in PLANNED_CHANNELS:
            raise DeclarationError(declaration, f"channel {name!r} is not available yet (available: {available})") from None
        raise DeclarationError(declaration, f"unknown channel {name!r} (available: {available})") from None


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
class Workflow(ResultProducer):
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
    accepts
        The events that start an execution; its type and sources are also what Accept takes.
    emits
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
    """

    definition: str
    failure: str
    tasks: Mapping[str, Task] = field(default_factory=dict)
    express: bool = True
    substitutions: Mapping[str, Any] = field(default_factory=dict)
    review_queue: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        for stem in self.tasks:
            if not STEM.fullmatch(stem) or stem == ACCEPT_STEM:
                raise DeclarationError(self.name, f"task stem {stem!r} must be PascalCase and not "
                                       f"{ACCEPT_STEM!r} (the kit's first step)")
        if self.review_queue is not None and not NAME.fullmatch(self.review_queue):
            raise DeclarationError(self.name, f"review_queue {self.review_queue!r} must be kebab-case")

    @property
    def result_types(self) -> tuple[str, ...]:
        return (*self.emits, self.failure)

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
    """A rule that routes the events it ``accepts`` to a queue (+ DLQ) that your own service consumes.

    Parameters
    ----------
    name, description
        See :class:`Component`.
    accepts
        The events it takes.
    settings
        Visibility timeout, retries, DLQ retention.
    """

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
            raise DeclarationError(duplicated[0], f"component names must be unique; declared more than once: {duplicated}")
        ids = [c.construct_id for c in self.components] + [pascal(w.review_queue) for w in self.workflows if w.review_queue]
        clashing = sorted({i for i in ids if ids.count(i) > 1})
        if clashing:
            raise DeclarationError(clashing[0], f"names that differ only by '-' give the same construct id: {clashing}")
        tables: dict[str, StateTable] = {}
        for consumer in self.consumers:
            for table in consumer.reads:
                if tables.setdefault(table.name, table) != table:
                    raise DeclarationError(consumer.name, f"state table {table.name!r} is declared differently by two "
                                           f"consumers ({tables[table.name]} and {table}): declare it once and share it")
        producers = set(names)
        for component, event_filter in self.filters():
            for source in event_filter.sources:
                if isinstance(source, Producer) and source.name not in producers:
                    raise DeclarationError(component.name, f"Producer({source.name!r}) names no component "
                                           f"(known: {sorted(producers)})")

    @property
    def components(self) -> tuple[Component, ...]:
        return (*self.consumers, *self.workflows, *self.routes)

    @property
    def state_tables(self) -> tuple[StateTable, ...]:
        """Every state table a consumer reads, once each, in the order first read."""
        return tuple({table.name: table for consumer in self.consumers for table in consumer.reads}.values())

    @property
    def producers(self) -> tuple[ResultProducer, ...]:
        """The components that put results on the bus."""
        return (*self.consumers, *self.workflows)

    def filters(self) -> list[tuple[Component, EventFilter]]:
        """Each component's event filter."""
        return [(component, component.accepts) for component in self.components]

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
        if not isinstance(component, ResultProducer):
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
