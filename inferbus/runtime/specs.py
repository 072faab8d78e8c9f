"""What provisioning found in a template and made in moto: names, ARNs and specs, by logical id."""

from __future__ import annotations

from dataclasses import dataclass, field

from .resources import Resolver


class UnsupportedTemplateError(ValueError):
    """The template asks for something the embedded runtime cannot run faithfully."""


@dataclass(frozen=True)
class QueueInfo:
    logical_id: str
    name: str
    url: str
    arn: str
    visibility_timeout_s: int
    max_receive_count: int | None
    dead_letter_arn: str | None


@dataclass(frozen=True)
class FunctionSpec:
    logical_id: str
    name: str
    arn: str
    handler: str
    environment: dict[str, str]
    timeout_s: int
    memory_mb: int
    package_type: str = "Zip"
    reserved_concurrency: int | None = None
    role_arn: str | None = None  # what it acts as: a bus policy reads this role's tags


@dataclass(frozen=True)
class KafkaMappingSpec:
    """What a Kafka event source mapping reads (MSK by cluster ARN, or self-managed by bootstrap servers)."""

    topic: str
    group_id: str
    starting_position: str
    max_retry_attempts: int
    cluster_arn: str | None = None
    bootstrap_servers: tuple[str, ...] = ()
    on_failure_arn: str | None = None  # an SQS queue of the template, if any


@dataclass(frozen=True)
class EventSourceSpec:
    logical_id: str
    function_logical_id: str
    queue_arn: str
    batch_size: int
    max_batching_window_s: int
    report_batch_item_failures: bool
    max_concurrency: int | None
    kafka: KafkaMappingSpec | None = None  # set for a Kafka mapping (queue_arn is then its cluster's ARN, or "")
    queues: tuple[str, ...] = ()  # an Amazon MQ mapping's queue (its EventSourceArn is the broker)
    virtual_host: str = "/"  # and the virtual host it is in (SourceAccessConfigurations VIRTUAL_HOST)

    @property
    def amazon_mq(self) -> bool:
        """Whether it reads a queue of an Amazon MQ broker (a RabbitMQ queue locally), not an SQS queue."""
        return ":mq:" in self.queue_arn


@dataclass(frozen=True)
class StateMachineInfo:
    """A provisioned state machine: ``definition`` is the ASL with its substitutions applied."""

    logical_id: str
    name: str
    arn: str
    type: str
    role_arn: str
    definition: str
    substitutions: dict[str, str] = field(default_factory=dict)
    log_group_arn: str | None = None  # where its execution log goes (LoggingConfiguration), if anywhere
    log_level: str = "OFF"


@dataclass(frozen=True)
class LogSubscriptionSpec:
    """A CloudWatch Logs subscription of a function to a log group (a state machine's execution log)."""

    logical_id: str
    log_group_arn: str
    function_logical_id: str


@dataclass(frozen=True)
class BridgeSpec:
    """A rule target that is a state machine, reached locally through an in-process bridge.

    ``input``/``input_path`` are the target's ``Input``/``InputPath`` (at most one is set).
    """

    rule_logical_id: str
    rule_name: str
    rule_arn: str
    target_id: str
    state_machine_arn: str
    input: str | None
    input_path: str | None
    dead_letter_arn: str | None


@dataclass(frozen=True)
class PipeSpec:
    """An SQS -> SQS EventBridge pipe, run in-process (:mod:`.pipes`): where from and to, and how each
    message is sent (``MessageGroupId``/``MessageDeduplicationId``: fixed, or a path into the record)."""

    logical_id: str
    source_arn: str
    target_arn: str
    batch_size: int
    message_group_id: str | None
    message_deduplication_id: str | None
    input_template: str | None


@dataclass
class Deployment:
    """What was provisioned, by logical id."""

    resolver: Resolver
    bus_names: dict[str, str] = field(default_factory=dict)
    queues: dict[str, QueueInfo] = field(default_factory=dict)
    tables: dict[str, str] = field(default_factory=dict)
    rules: dict[str, str] = field(default_factory=dict)
    functions: dict[str, FunctionSpec] = field(default_factory=dict)
    event_sources: list[EventSourceSpec] = field(default_factory=list)
    state_machines: dict[str, StateMachineInfo] = field(default_factory=dict)
    bridges: list[BridgeSpec] = field(default_factory=list)
    log_subscriptions: list[LogSubscriptionSpec] = field(default_factory=list)

    pipes: list[PipeSpec] = field(default_factory=list)
    target_dead_letter_arns: set[str] = field(default_factory=set)
    outputs: dict[str, str] = field(default_factory=dict)
    role_tags: dict[str, dict[str, str]] = field(default_factory=dict)  # role ARN -> its IAM tags
    cloud_only: list[tuple[str, str, str]] = field(default_factory=list)
    partly_local: list[tuple[str, str, str]] = field(default_factory=list)

    def queue_by_arn(self, arn: str) -> QueueInfo:
        return next(queue for queue in self.queues.values() if queue.arn == arn)

    def queue_by_url(self, url: str) -> QueueInfo:
        found = [queue for queue in self.queues.values() if queue.url == url]
        if not found:
            raise KeyError(f"no queue of the template has the URL {url}")
        return found[0]

    def function_by_name(self, name: str) -> FunctionSpec:
        """A function by its name or ARN (what a stack output or a state machine names)."""
        found = [spec for spec in self.functions.values() if name in (spec.name, spec.arn)]
        if not found:
            raise KeyError(f"no function of the template is named {name}")
        return found[0]

    def output(self, key: str) -> str:
        """A stack output's value, resolved as CloudFormation would."""
        if key not in self.outputs:
            raise KeyError(f"the template has no output {key!r} (it has: {', '.join(sorted(self.outputs))})")
        return self.outputs[key]

    def state_machine_by_arn(self, arn: str) -> StateMachineInfo:
        return next(machine for machine in self.state_machines.values() if machine.arn == arn)

    @property
    def dead_letter_queues(self) -> list[QueueInfo]:
        arns = {queue.dead_letter_arn for queue in self.queues.values()} | self.target_dead_letter_arns
        return [queue for queue in self.queues.values() if queue.arn in arns]
