"""The inferbus stack: the shared core (bus, table, alarm topic, invalid events) and one set of
constructs per declared component. It reads settings and declarations, nothing more."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, Duration, NestedStack, RemovalPolicy, Stack, Tags
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as lambda_destinations
from aws_cdk import aws_logs as logs
from aws_cdk import aws_logs_destinations as logs_destinations
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct
from inferbus_lambda.environment import (
    AcceptEnvironment,
    ConsumerEnvironment,
    ExecutionFailuresEnvironment,
    FunctionEnvironment,
    IngestEnvironment,
    StepEnvironment,
    UnroutedEnvironment,
)
from inferbus_lambda.errors import REJECTION_ERRORS
from inferbus_lambda.execution_failures import ENDED, LOGGED_ENDS, STATUS_CHANGE

from inferbus.model.declarations import Channel, Consumer, EventFilter, Pipeline, Route, StateTable
from inferbus.model.declarations import Workflow as WorkflowDeclaration
from inferbus.model.names import (
    ACCEPT_STEM,
    ALARM_TOPIC_OUTPUT,
    DEAD_LETTER_QUEUE_URL,
    EVENT_ARCHIVE_OUTPUT,
    EVENT_BUS_NAME_OUTPUT,
    FUNCTION_NAME,
    IDEMPOTENCY_TABLE_OUTPUT,
    INGEST_FUNCTION_OUTPUT,
    INGEST_PRODUCER_POLICY_OUTPUT,
    INGEST_URL_OUTPUT,
    INVALID_EVENTS_OUTPUT,
    QUEUE_URL,
    RESULTS_BUCKET_OUTPUT,
    SCHEMA_REGISTRY_OUTPUT,
    STATE_MACHINE_ARN,
    UNROUTED_CHECK_ID,
    UNROUTED_CHECK_NAME,
    UNROUTED_CHECK_SOURCE,
)
from inferbus.model.settings import (
    LOG_RETENTION_CHOICES,
    MAX_QUEUE_RETENTION_S,
    ConsumerSettings,
    FunctionSettings,
    InferbusSettings,
)

from .constructs import InferbusBus, QueueConsumer, RoutedQueue, Workflow, WorkflowFunction, python_lambda_code
from .constructs.alarms import PERIOD, Thresholds, add_alarm
from .constructs.bundling import container_image
from .constructs.claims_cache import ClaimsCache
from .constructs.consumer_monitoring import ConsumerMonitoring, RouteMonitoring, UnroutedCheckMonitoring
from .constructs.dashboard_pages import DashboardPages
from .constructs.event_bus import SOURCE_TAG
from .constructs.fault_injection import FaultInjectionExperiments
from .constructs.function import FunctionCode, FunctionSpec, add_function
from .constructs.ingest_api import IngestApi
from .constructs.kafka_consumer import KafkaConsumer
from .constructs.rabbitmq_consumer import RabbitMqConsumer
from .constructs.results_archive import ResultsArchive
from .constructs.schema_registry import EventSchemaRegistry
from .constructs.secure_queue import add_rule_with_dead_letter_queue, build_queue
from .constructs.workflow_monitoring import FAILURE_NET_ALARMS, WorkflowMonitoring
from .nag import (
    acknowledge_invalid_events_queue,
    acknowledge_on_failure_queue,
    acknowledge_review_queue,
    acknowledge_rule_listing,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
MANIFEST = REPO_ROOT / "models" / "manifest.json"
STATEMACHINES = REPO_ROOT / "statemachines"
METRICS_NAMESPACE = "Inferbus"
ACCEPT_SERVICE = "accept"  # the Powertools service of the workflows' shared Accept step
INGEST_SERVICE = "ingest"
# Idempotency claims (inferbus_lambda.claims.DynamoDBClaimStore): a consumer claims with TransactWriteItems of
# conditional Puts (authorised as dynamodb:PutItem) and completes and releases with BatchWriteItem;
# a workflow's Accept claims and completes in one conditional PutItem.
ACCEPT_CLAIM_ACTIONS = ("dynamodb:PutItem",)
CONSUMER_CLAIM_ACTIONS = ("dynamodb:PutItem", "dynamodb:BatchWriteItem")
# CloudWatch alarms on metric math take at most 10 metrics; FIS takes at most 5 stop conditions.
METRICS_PER_ALARM = 10
STATE_TABLE_READ_ACTIONS = ("dynamodb:GetItem", "dynamodb:BatchGetItem")
# The settings list the allowed day counts; this names each for CloudWatch Logs, in the same order.
LOG_RETENTION = dict(
    zip(
        LOG_RETENTION_CHOICES,
        (logs.RetentionDays.ONE_WEEK, logs.RetentionDays.TWO_WEEKS, logs.RetentionDays.ONE_MONTH,
         logs.RetentionDays.THREE_MONTHS, logs.RetentionDays.ONE_YEAR),
        strict=True,
    )
)


def _cache_name(name: str) -> str:
    """An ElastiCache name from a bus name: lowercase letters, digits and hyphens, at most 33 (its user adds "-claims")."""
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:33]


def _add_environment(function: lambda_.Function, model: type[FunctionEnvironment], **values: Any) -> None:
    """Add variables to a function after it exists, each a field of its environment model."""
    for name, value in values.items():
        if name not in model.variable_names():
            raise ValueError(f"{name} is not a variable of {model.__name__}")
        function.add_environment(name, str(value))


class InferbusStack(Stack):
    """Parameters
    ----------
    settings
        The deployment-wide settings.
    pipeline
        The declared components (``pipeline.load_pipeline()``), their settings overrides applied.
    """

    def __init__(self, scope: Construct, construct_id: str, *, settings: InferbusSettings, pipeline: Pipeline,
                 **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.settings = settings
        self.thresholds = Thresholds.from_settings(settings)
        self.pipeline = pipeline
        self.models = json.loads(MANIFEST.read_text())["models"]
        self._check_declarations()
        self.log_retention = LOG_RETENTION[settings.log_retention_days]
        self.runtime = lambda_.Runtime(f"python{settings.python_version}", lambda_.RuntimeFamily.PYTHON)
        self.architecture = (lambda_.Architecture.ARM_64 if settings.lambda_architecture == "arm64"
                             else lambda_.Architecture.X86_64)

        self.bus_construct = InferbusBus(self, "EventBus", bus_name=settings.staged(settings.bus_name),
                                         archive_retention_days=settings.archive_retention_days)
        self.bus = self.bus_construct.bus
        self.result_producers: dict[str, iam.IRole] = {}  # result source -> the role that publishes it
        self.idempotency_table = dynamodb.Table(
            self,
            "IdempotencyTable",
            partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING),
            time_to_live_attribute="expiration",
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(point_in_time_recovery_enabled=True),
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            removal_policy=RemovalPolicy.DESTROY,  # it holds only short-lived claims
        )
        self.state_tables = {table.name: self._state_table(table) for table in pipeline.state_tables}
        # claims_store=redis: the claims in a serverless Valkey cache, and the functions that claim in its VPC.
        self.claims_cache = (ClaimsCache(self, "ClaimsCache", cache_name=_cache_name(settings.staged(settings.bus_name)),
                                         log_retention=self.log_retention)
                             if settings.claims_store == "redis" else None)
        self.alarm_topic = sns.Topic(
            self,
            "AlarmTopic",
            display_name=f"{self.stack_name} alarms",
            master_key=kms.Alias.from_alias_name(self, "SnsManagedKey", "alias/aws/sns"),
            enforce_ssl=True,
        )
        self.dashboard = DashboardPages(self, "Dashboard", dashboard_name=f"{self.stack_name}-pipeline")
        self.invalid_events = self._invalid_events_queue()
        self.consumers: dict[str, QueueConsumer | RabbitMqConsumer] = {}
        self.kafka_consumers: dict[str, KafkaConsumer] = {}
        self.workflows: dict[str, Workflow] = {}
        self.routes: dict[str, RoutedQueue] = {}

        # Each component in a nested stack of its own (named after it, so adding or removing one never
        # moves another's resources): the core stays small and each component's resources and outputs
        # count against its own template's limits.
        self.component_stacks: dict[str, NestedStack] = {}
        for consumer in pipeline.consumers:
            if consumer.channel is Channel.KAFKA:
                self.kafka_consumers[consumer.name] = self._kafka_consumer(self._component_stack(consumer), consumer)
            else:
                self.consumers[consumer.name] = self._consumer(self._component_stack(consumer), consumer)
        if pipeline.workflows:
            accept = self._accept_function()
            for workflow in pipeline.workflows:
                self.workflows[workflow.name] = self._workflow(self._component_stack(workflow), workflow, accept)
            self._route_workflow_rejections()
        for route in pipeline.routes:
            self.routes[route.name] = self._route(self._component_stack(route), route)
        self.unrouted_check = self._unrouted_check()
        self.bus_construct.restrict_sources(self.result_producers)  # tags each role inferbus-source = its source

        # -- operating it: HTTP ingest, schemas, the cold tier ---------------------------------------
        self.ingest = self._ingest_api() if settings.ingest_api else None
        self.schema_registry = self._schema_registry() if settings.schema_registry else None
        self.results_archive = self._results_archive() if settings.results_archive else None

        if settings.fault_injection_experiments:
            self._fault_injection_experiments()
        CfnOutput(self, ALARM_TOPIC_OUTPUT, value=self.alarm_topic.topic_arn)
        CfnOutput(self, EVENT_BUS_NAME_OUTPUT, value=self.bus.event_bus_name)
        CfnOutput(self, EVENT_ARCHIVE_OUTPUT, value=self.bus_construct.archive.archive_name)
        CfnOutput(self, IDEMPOTENCY_TABLE_OUTPUT, value=self.idempotency_table.table_name)

    def _component_stack(self, declaration: Consumer | WorkflowDeclaration | Route) -> NestedStack:
        nested = NestedStack(self, f"{declaration.construct_id}Stack",
                             description=f"inferbus {self.stack_name}: {declaration.name}")
        self.component_stacks[declaration.name] = nested
        return nested

    # -- checks: a declaration that cannot deploy fails the synth, naming what is wrong -------------

    def _check_declarations(self) -> None:
        for component in self.pipeline.components:
            models = list(getattr(component, "models", ()))
            if isinstance(component, WorkflowDeclaration):
                models = [m for task in component.tasks.values() for m in task.models]
                if not (STATEMACHINES / component.definition).is_file():
                    raise ValueError(f"workflow {component.name}: no ASL file statemachines/{component.definition}")
            unknown = sorted(set(models) - set(self.models))
            if unknown:
                raise ValueError(f"{component.name}: models {unknown} are not in models/manifest.json "
                                 f"(known: {sorted(self.models)})")

    def _pattern(self, event_filter: EventFilter) -> events.EventPattern:
        pattern = self.pipeline.pattern(event_filter, self.settings)
        return events.EventPattern(detail_type=pattern["detail-type"], source=pattern.get("source"), detail=pattern["detail"])

    # -- functions: every one is built the same way ------------------------------------------------

    def _spec(self, handler: str, sizing: ConsumerSettings | FunctionSettings, description: str,
              environment: FunctionEnvironment, models: tuple[str, ...] = ()) -> FunctionSpec:
        if sizing.package == "image":
            code = FunctionCode(handler, image_code=container_image(
                handler, [self.models[name] for name in models], self.settings.lambda_architecture,
                self.settings.python_version))
        else:
            zip_code = python_lambda_code(self.settings.lambda_architecture, self.settings.python_version, handler=handler,
                                          models=models, environment=environment.as_variables())
            code = FunctionCode(handler, zip_code=zip_code, runtime=self.runtime)
        return FunctionSpec(
            code=code,
            architecture=self.architecture,
            memory_mb=sizing.memory_mb,
            timeout_s=sizing.timeout_s,
            environment=environment.as_variables(),
            log_retention=self.log_retention,
            description=description,
            # A workflow step's bound; a consumer's is its event source's MaximumConcurrency.
            reserved_concurrency=sizing.reserved_concurrency if isinstance(sizing, FunctionSettings) else None,
            insights=self.settings.insights_enabled,
        )

    def _common_environment(self, service: str, models: tuple[str, ...]) -> dict[str, Any]:
        return {"POWERTOOLS_SERVICE_NAME": service, "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
                "INFERBUS_MODELS": models}

    def _claims_environment(self, dlq_retention_days: int) -> dict[str, Any]:
        """A claim outlives every way its event can come back (see ``InferbusSettings.claim_lifetime_s``)."""
        environment: dict[str, Any] = {"IDEMPOTENCY_TABLE_NAME": self.idempotency_table.table_name,
                                       "IDEMPOTENCY_TTL_SECONDS": self.settings.claim_lifetime_s(dlq_retention_days),
                                       "CLAIM_STORE": self.settings.claims_store}
        if self.claims_cache is not None:
            environment |= {"REDIS_ENDPOINT": self.claims_cache.endpoint, "REDIS_USER": self.claims_cache.user_id,
                            "REDIS_CACHE_NAME": self.claims_cache.cache_name}
        return environment

    def _claiming(self, spec: FunctionSpec) -> FunctionSpec:
        """``spec`` in the claims cache's network, when the claims are there."""
        return spec if self.claims_cache is None else dataclasses.replace(spec, network=self.claims_cache.network_of())

    def _grant_claims(self, function: lambda_.Function, actions: tuple[str, ...]) -> None:
        """Let ``function`` keep claims in the stage's store (``actions``: what it does to the DynamoDB table)."""
        if self.claims_cache is None:
            self.idempotency_table.grant(function, *actions)
        else:
            self.claims_cache.connect(function)

    # -- components ----------------------------------------------------------------------------------

    def _kafka_consumer(self, scope: Construct, declaration: Consumer) -> KafkaConsumer:
        """A consumer fed by a Kafka topic (its event source mapping, not a rule): the same function and
        claims; records it refuses go to the invalid-events queue, what the mapping gives up to its on-failure queue."""
        environment = ConsumerEnvironment(
            **self._common_environment(declaration.name, declaration.models),
            **self._claims_environment(declaration.settings.dlq_retention_days),
            EVENT_BUS_NAME=self.bus.event_bus_name, RESULT_SOURCE=declaration.result_source,
            CONSUMES=declaration.accepts.type, PRODUCES=declaration.result_type,
            INVALID_EVENTS_QUEUE_URL=self.invalid_events.queue_url, RECORD_SOURCE="kafka",
            INFERBUS_STATE_TABLES=self._state_tables_variable(declaration),
        )
        consumer = KafkaConsumer(
            scope, declaration.construct_id, topic=declaration.broker, settings=declaration.settings,
            function=self._claiming(self._spec(declaration.handler, declaration.settings, declaration.description,
                                               environment, declaration.models)),
        )
        self.bus.grant_put_events_to(consumer.function)
        self.result_producers[declaration.result_source] = consumer.role
        self.invalid_events.grant_send_messages(consumer.function)
        self._grant_claims(consumer.function, CONSUMER_CLAIM_ACTIONS)
        self._grant_reads(consumer.function, declaration)
        # What the mapping gives up lands in its on-failure queue: that is its dead-letter queue for tools.
        self._waiting_and_failing_alarms(
            scope, declaration.construct_id, consumer.failure_queue, consumer.function,
            f"{declaration.name}: the mapping gave up on records after its retries (the on-failure queue says where "
            "they are in the topic)", f"{declaration.name}: invocations failed (the mapping retries their batches)")
        self._consumer_outputs(consumer, function=consumer.function, dead_letter_queue=consumer.failure_queue)
        return consumer

    def _consumer(self, scope: Construct, declaration: Consumer) -> QueueConsumer | RabbitMqConsumer:
        if declaration.channel is Channel.RABBITMQ:
            return self._rabbitmq_consumer(scope, declaration)
        environment = ConsumerEnvironment(
            **self._common_environment(declaration.name, declaration.models),
            **self._claims_environment(declaration.settings.dlq_retention_days),
            EVENT_BUS_NAME=self.bus.event_bus_name,
            RESULT_SOURCE=declaration.result_source,
            CONSUMES=declaration.accepts.type,
            PRODUCES=declaration.result_type,
            INVALID_EVENTS_QUEUE_URL=self.invalid_events.queue_url,
            INFERBUS_STATE_TABLES=self._state_tables_variable(declaration),
            MAX_EVENTS_PER_SECOND=declaration.settings.max_events_per_second,
        )
        consumer = QueueConsumer(
            scope,
            declaration.construct_id,
            bus=self.bus,
            event_pattern=self._pattern(declaration.accepts),
            settings=declaration.settings,
            function=self._claiming(self._spec(declaration.handler, declaration.settings, declaration.description,
                                               environment, declaration.models)),
            target_retry_attempts=self.settings.target_retry_attempts,
            target_max_event_age_s=self.settings.target_max_event_age_s,
            group_by=declaration.group_by,
        )
        # Known once the construct made its queues: a record failing on its last receive goes there with its reason.
        _add_environment(consumer.function, ConsumerEnvironment, DEAD_LETTER_QUEUE_URL=consumer.dead_letter_queue.queue_url,
                         MAX_RECEIVE_COUNT=declaration.settings.max_receive_count)
        consumer.dead_letter_queue.grant_send_messages(consumer.function)
        self.bus.grant_put_events_to(consumer.function)
        self.result_producers[declaration.result_source] = consumer.role
        self.invalid_events.grant_send_messages(consumer.function)
        # A rate-limited consumer's token bucket is an item of the claims table (read, then a conditional Put).
        rate_actions = ("dynamodb:GetItem",) if declaration.settings.max_events_per_second is not None else ()
        self._grant_claims(consumer.function, CONSUMER_CLAIM_ACTIONS + rate_actions)
        self._grant_reads(consumer.function, declaration)
        ConsumerMonitoring(
            scope,
            f"{declaration.construct_id}Monitoring",
            consumer=consumer,
            alarm_topic=self.alarm_topic,
            metrics_namespace=METRICS_NAMESPACE,
            service=declaration.name,
            thresholds=self.thresholds,
            max_concurrency=declaration.settings.max_concurrency,
            dashboard=self.dashboard,
        )
        self._queue_consumer_outputs(consumer)
        return consumer

    def _state_table(self, declaration: StateTable) -> dynamodb.Table:
        """A store consumers read (see :class:`~inferbus.model.declarations.StateTable`): encrypted, with
        point-in-time recovery, on demand, retained when the stack goes (it holds your data)."""
        table = dynamodb.Table(
            self,
            declaration.construct_id,
            partition_key=dynamodb.Attribute(name=StateTable.KEY, type=dynamodb.AttributeType.STRING),
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(point_in_time_recovery_enabled=True),
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            removal_policy=RemovalPolicy.RETAIN,
        )
        CfnOutput(self, declaration.output_key, value=table.table_name)
        return table

    def _state_tables_variable(self, declaration: Consumer) -> str | None:
        """``INFERBUS_STATE_TABLES``: each table the consumer reads, by declared name (``None``: it reads none)."""
        if not declaration.reads:
            return None
        return self.to_json_string(declaration.state_tables_setting(
            {name: table.table_name for name, table in self.state_tables.items()}))

    def _grant_reads(self, function: lambda_.IFunction, declaration: Consumer) -> None:
        """Each state table the consumer reads, whatever its channel: read-only, and only the two reads a
        state table's reader makes."""
        for table in declaration.reads:
            self.state_tables[table.name].grant(function, *STATE_TABLE_READ_ACTIONS)

    def _rabbitmq_consumer(self, scope: Construct, declaration: Consumer) -> RabbitMqConsumer:
        """A consumer reading a RabbitMQ queue (Amazon MQ): no rule, its records come from the broker."""
        environment = ConsumerEnvironment(
            **self._common_environment(declaration.name, declaration.models),
            **self._claims_environment(declaration.settings.dlq_retention_days),
            EVENT_BUS_NAME=self.bus.event_bus_name, RESULT_SOURCE=declaration.result_source,
            CONSUMES=declaration.accepts.type, PRODUCES=declaration.result_type,
            INVALID_EVENTS_QUEUE_URL=self.invalid_events.queue_url, RECORD_SOURCE="amazon-mq",
            INFERBUS_STATE_TABLES=self._state_tables_variable(declaration),
        )
        consumer = RabbitMqConsumer(scope, declaration.construct_id, queue=declaration.broker, settings=declaration.settings,
                                    function=self._claiming(self._spec(declaration.handler, declaration.settings,
                                                                       declaration.description, environment,
                                                                       declaration.models)))
        self.bus.grant_put_events_to(consumer.function)
        self.result_producers[declaration.result_source] = consumer.role
        self.invalid_events.grant_send_messages(consumer.function)
        self._grant_claims(consumer.function, CONSUMER_CLAIM_ACTIONS)
        self._grant_reads(consumer.function, declaration)
        self._waiting_and_failing_alarms(
            scope, declaration.construct_id, consumer.dead_letter_queue, consumer.function,
            f"{declaration.name}: a record failed on its last attempt (the DLQ holds it with the reason)",
            f"{declaration.name}: invocations failed (their batches went back to the RabbitMQ queue)")
        self._consumer_outputs(consumer, function=consumer.function, dead_letter_queue=consumer.dead_letter_queue)
        return consumer

    @staticmethod
    def _consumer_outputs(consumer: Construct, *, function: lambda_.IFunction, dead_letter_queue: sqs.IQueue,
                          queue: sqs.IQueue | None = None) -> None:
        """``<construct id>QueueUrl`` (a queue-fed consumer), ``...DeadLetterQueueUrl``, ``...FunctionName``: how
        tools find a consumer (outputs of the stack it is in), whatever its channel."""
        values = {QUEUE_URL: queue.queue_url} if queue is not None else {}
        values |= {DEAD_LETTER_QUEUE_URL: dead_letter_queue.queue_url, FUNCTION_NAME: function.function_name}
        for kind, value in values.items():
            CfnOutput(Stack.of(consumer), f"{consumer.node.id}{kind}", value=value)

    def _queue_consumer_outputs(self, consumer: QueueConsumer) -> None:
        """A queue-fed consumer's three outputs (:meth:`_consumer_outputs`)."""
        self._consumer_outputs(consumer, function=consumer.function, dead_letter_queue=consumer.dead_letter_queue,
                               queue=consumer.queue)

    def _accept_function(self) -> lambda_.IFunction:
        """The kit's first step of every workflow: validate the event, claim its id once."""
        environment = AcceptEnvironment(**self._common_environment(ACCEPT_SERVICE, ()),
                                        **self._claims_environment(self.settings.target_dlq_retention_days))
        spec = self._spec("accept_event.handler.lambda_handler", self.settings.accept_step,
                          "Every workflow's first step: validate the event, claim its id once", environment)
        accept = WorkflowFunction(self, "AcceptEvent", spec=self._claiming(spec)).function
        self._grant_claims(accept, ACCEPT_CLAIM_ACTIONS)  # a workflow owns what it accepted: it never releases
        return accept

    def _workflow(self, scope: Construct, declaration: WorkflowDeclaration, accept: lambda_.IFunction) -> Workflow:
        functions: dict[str, lambda_.IFunction] = {ACCEPT_STEM: accept}
        for stem, task in declaration.tasks.items():
            environment = StepEnvironment(**self._common_environment(declaration.task_service(stem), task.models))
            spec = self._spec(task.handler, task.settings, task.description, environment, task.models)
            functions[stem] = WorkflowFunction(scope, declaration.task_construct_id(stem), spec=spec).function
        queues: list[sqs.IQueue] = []
        substitutions = {
            "WorkflowName": declaration.name,
            "FailureType": declaration.failure,
            "TriggerType": declaration.accepts.type,
            **{key: str(value) for key, value in self.pipeline.resolve(dict(declaration.substitutions), self.settings).items()},
        }
        if declaration.review_queue:
            review_queue = self._review_queue(scope, declaration)
            queues.append(review_queue)
            substitutions[declaration.review_queue_output] = review_queue.queue_url
        workflow = Workflow(
            scope,
            declaration.construct_id,
            bus=self.bus,
            event_pattern=self._pattern(declaration.accepts),
            definition_file=STATEMACHINES / declaration.definition,
            emits=declaration.emits,
            accepts_from=self.pipeline.resolve(list(declaration.accepts.sources), self.settings),
            result_source=declaration.result_source,
            functions=functions,
            express=declaration.express,
            log_level=self.settings.workflow_log_level,
            log_execution_data=self.settings.workflow_log_execution_data,
            log_retention=self.log_retention,
            target_retry_attempts=self.settings.target_retry_attempts,
            target_max_event_age_s=self.settings.target_max_event_age_s,
            dlq_retention_days=self.settings.target_dlq_retention_days,
            description=declaration.description,
            substitutions=substitutions,
            send_to_queues=queues,
        )
        WorkflowMonitoring(scope, f"{declaration.construct_id}Monitoring", workflow=workflow, alarm_topic=self.alarm_topic,
                           metrics_namespace=METRICS_NAMESPACE,
                           accept_dimensions={"service": ACCEPT_SERVICE, "workflow": declaration.name},
                           stages={stem: declaration.task_service(stem) for stem in declaration.tasks},
                           functions=functions, thresholds=self.thresholds, dashboard=self.dashboard)
        CfnOutput(scope, declaration.output_key(STATE_MACHINE_ARN), value=workflow.state_machine.state_machine_arn)
        self.result_producers[declaration.result_source] = workflow.state_machine.role
        self._execution_failures(scope, declaration, workflow)
        return workflow

    def _execution_failures(self, scope: Construct, declaration: WorkflowDeclaration, workflow: Workflow) -> lambda_.IFunction:
        """The workflow's net for what its states cannot catch (``States.Runtime``, ``States.DataLimitExceeded``, its
        timeout, a stop): a function that publishes the workflow's failure event for each execution that ended FAILED,
        TIMED_OUT or ABORTED without one, and keeps what told of it with the reason in the invalid-events queue
        (``inferbus_lambda.execution_failures``). A Standard workflow's ends come from Step Functions' status changes
        (on the account's default bus, where AWS sends them) through a queue; an Express workflow's, for which AWS
        sends none, from its execution log through a subscription."""
        settings = self.settings.execution_failures
        construct_id = f"{declaration.construct_id}ExecutionFailures"
        environment = ExecutionFailuresEnvironment(
            **self._common_environment(f"{declaration.name}-execution-failures", ()),
            WORKFLOW_NAME=declaration.name, FAILURE_TYPE=declaration.failure, RESULT_SOURCE=declaration.result_source,
            EVENT_BUS_NAME=self.bus.event_bus_name, INVALID_EVENTS_QUEUE_URL=self.invalid_events.queue_url,
        )
        spec = self._spec("execution_failures.handler.lambda_handler", settings,
                          f"{declaration.name}: reports and keeps executions that ended outside its states", environment)
        if declaration.express:
            if self.settings.workflow_log_level == "OFF":
                raise ValueError(f"workflow {declaration.name}: workflow_log_level OFF hides how its Express executions "
                                 "end (AWS sends no status change for them): set it to FATAL, ERROR or ALL")
            # No event source to bound it: a reserved concurrency does (a burst of failures takes no more).
            spec = dataclasses.replace(spec, reserved_concurrency=settings.max_concurrency)
            function, role, _ = add_function(Construct(scope, construct_id), spec)
            ends = [logs.FilterPattern.string_value("$.type", "=", record_type) for record_type in LOGGED_ENDS]
            logs.SubscriptionFilter(scope, f"{declaration.construct_id}ExecutionEnds", log_group=workflow.log_group,
                                    destination=logs_destinations.LambdaDestination(function),
                                    filter_pattern=logs.FilterPattern.any(*ends))
            # A subscription invokes asynchronously: what still fails after Lambda's retries is kept in a DLQ.
            dead_letters = build_queue(scope, f"{construct_id}DeadLetterQueue",
                                       retention_period=Duration.days(settings.dlq_retention_days))
            acknowledge_on_failure_queue(dead_letters)
            function.configure_async_invoke(retry_attempts=2, on_failure=lambda_destinations.SqsDestination(dead_letters))
            CfnOutput(scope, f"{construct_id}{FUNCTION_NAME}", value=function.function_name)
            CfnOutput(scope, f"{construct_id}{DEAD_LETTER_QUEUE_URL}", value=dead_letters.queue_url)
        else:
            net = QueueConsumer(
                scope, construct_id,
                bus=events.EventBus.from_event_bus_name(scope, "DefaultBus", "default"),
                event_pattern=events.EventPattern(source=["aws.states"], detail_type=[STATUS_CHANGE], detail={
                    "stateMachineArn": [workflow.state_machine.state_machine_arn], "status": list(ENDED)}),
                settings=settings, function=spec,
                target_retry_attempts=self.settings.target_retry_attempts,
                target_max_event_age_s=self.settings.target_max_event_age_s,
            )
            function, role = net.function, net.role
            self._queue_consumer_outputs(net)  # <id>QueueUrl, <id>DeadLetterQueueUrl, <id>FunctionName
            dead_letters = net.dead_letter_queue
        # The net is the last place a failure is reported: what it cannot report waits in its DLQ, and says so.
        self._waiting_and_failing_alarms(
            scope, construct_id, dead_letters, function,
            f"{declaration.name}: ends of executions its failure net could not report wait in its DLQ",
            f"{declaration.name}: invocations of its failure net failed (they are retried, then kept in its DLQ)",
            names=FAILURE_NET_ALARMS)
        self.bus.grant_put_events_to(function)
        self.invalid_events.grant_send_messages(function)
        # It publishes the workflow's failure events: the bus lets only roles tagged with that source do so.
        Tags.of(role).add(SOURCE_TAG, declaration.result_source)
        return function

    def _waiting_and_failing_alarms(self, scope: Construct, prefix: str, queue: sqs.IQueue, function: lambda_.IFunction,
                                    waiting: str, failing: str,
                                    names: tuple[str, str] = ("DeadLetters", "Errors")) -> None:
        """The two alarms of a function whose failures wait in a queue: the queue's depth, and its errors."""
        waits, fails = names
        add_alarm(scope, f"{prefix}{waits}",
                  queue.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum"), 1, waiting,
                  self.alarm_topic)
        add_alarm(scope, f"{prefix}{fails}", function.metric_errors(period=PERIOD, statistic="Sum"), 1, failing,
                  self.alarm_topic)

    @staticmethod
    def _review_queue(scope: Construct, declaration: WorkflowDeclaration) -> sqs.Queue:
        # People read this queue: every listing is a receive, so a redrive policy would move
        # waiting cases to a DLQ after N looks. A case nobody decides times out in its workflow.
        assert declaration.review_queue_output is not None
        construct_id = declaration.review_queue_output.removesuffix("Url")
        queue = build_queue(scope, construct_id, retention_period=Duration.seconds(MAX_QUEUE_RETENTION_S))
        acknowledge_review_queue(queue)
        CfnOutput(scope, declaration.review_queue_output, value=queue.queue_url)
        return queue

    def _route(self, scope: Construct, declaration: Route) -> RoutedQueue:
        settings = declaration.settings
        route = RoutedQueue(
            scope, declaration.construct_id, bus=self.bus, event_pattern=self._pattern(declaration.accepts),
            visibility_timeout_s=settings.visibility_timeout_s, max_receive_count=settings.max_receive_count,
            dlq_retention_days=settings.dlq_retention_days, target_retry_attempts=self.settings.target_retry_attempts,
            target_max_event_age_s=self.settings.target_max_event_age_s, description=declaration.description,
        )
        RouteMonitoring(scope, f"{declaration.construct_id}Monitoring", route=route, alarm_topic=self.alarm_topic,
                        dashboard=self.dashboard)
        CfnOutput(scope, declaration.output_key(QUEUE_URL), value=route.queue.queue_url)
        CfnOutput(scope, declaration.output_key(DEAD_LETTER_QUEUE_URL), value=route.dead_letter_queue.queue_url)
        return route

    # -- invalid events -----------------------------------------------------------------------------

    def _invalid_events_queue(self) -> sqs.Queue:
        """Where events that break their contract wait, with the reason: consumers send them here
        at once (a retry would fail the same way), and a rule brings the workflows' rejections."""
        queue = build_queue(self, "InvalidEvents", retention_period=Duration.seconds(MAX_QUEUE_RETENTION_S))
        acknowledge_invalid_events_queue(queue)
        CfnOutput(self, INVALID_EVENTS_OUTPUT, value=queue.queue_url)
        return queue

    def _unrouted_check(self) -> QueueConsumer:
        """Every event on the bus also goes to one queue, whose function keeps, with the reason, each event
        that no other rule takes and that is no producer's result (EventBridge has no "else" rule)."""
        settings = self.settings.unrouted_check
        environment = UnroutedEnvironment(
            **self._common_environment(UNROUTED_CHECK_NAME, ()),
            EVENT_BUS_NAME=self.bus.event_bus_name,
            RESULT_SOURCES=tuple(sorted(self.result_producers)),
            REJECTED_BY=UNROUTED_CHECK_SOURCE,
            INVALID_EVENTS_QUEUE_URL=self.invalid_events.queue_url,
        )
        check = QueueConsumer(
            self, UNROUTED_CHECK_ID, bus=self.bus,
            event_pattern=events.EventPattern(account=[self.account]),  # every event on the bus
            settings=settings,
            function=self._spec("unrouted_events.handler.lambda_handler", settings,
                                "Every event on the bus: keeps, with the reason, those no rule takes", environment),
            target_retry_attempts=self.settings.target_retry_attempts,
            target_max_event_age_s=self.settings.target_max_event_age_s,
        )
        _add_environment(check.function, UnroutedEnvironment, CATCH_ALL_RULE_NAME=check.rule.rule_name)
        # Every rule on the bus counts, anyone's: ListRules takes no resource; ListTargetsByRule and DescribeRule
        # (a rule read again to confirm a verdict) are scoped to the bus's rules.
        check.function.add_to_role_policy(iam.PolicyStatement(actions=["events:ListRules"], resources=["*"]))
        bus_rules = self.format_arn(service="events", resource="rule", resource_name=f"{self.bus.event_bus_name}/*")
        check.function.add_to_role_policy(iam.PolicyStatement(actions=["events:ListTargetsByRule"], resources=[bus_rules]))
        check.function.add_to_role_policy(iam.PolicyStatement(actions=["events:DescribeRule"], resources=[bus_rules]))
        acknowledge_rule_listing(check.role, self.bus)
        self.invalid_events.grant_send_messages(check.function)
        UnroutedCheckMonitoring(self, f"{UNROUTED_CHECK_ID}Monitoring", check=check, alarm_topic=self.alarm_topic,
                                metrics_namespace=METRICS_NAMESPACE, service=environment.POWERTOOLS_SERVICE_NAME,
                                thresholds=self.thresholds, dashboard=self.dashboard)
        self._queue_consumer_outputs(check)
        return check

    # -- operating it ------------------------------------------------------------------------------

    def _ingest_api(self) -> IngestApi:
        """The HTTP ingest endpoint: IAM-authenticated, validates every CloudEvent, puts it on the bus."""
        environment = IngestEnvironment(**self._common_environment(INGEST_SERVICE, ()),
                                        EVENT_BUS_NAME=self.bus.event_bus_name,
                                        RESERVED_SOURCES=tuple(sorted(self.result_producers)))
        spec = self._spec("ingest.handler.lambda_handler", self.settings.ingest_function,
                          "HTTP ingest: validate one CloudEvent (structured or binary) and put it on the bus", environment)
        ingest = IngestApi(self, "IngestApi", bus=self.bus, function=spec)
        ingest.monitor(alarm_topic=self.alarm_topic, metrics_namespace=METRICS_NAMESPACE, service=INGEST_SERVICE,
                       insights=self.settings.insights_enabled, dashboard=self.dashboard)
        CfnOutput(self, INGEST_URL_OUTPUT, value=ingest.url.url)
        CfnOutput(self, INGEST_FUNCTION_OUTPUT, value=ingest.function.function_name)
        CfnOutput(self, INGEST_PRODUCER_POLICY_OUTPUT, value=ingest.producer_policy.managed_policy_arn)
        return ingest

    def _schema_registry(self) -> EventSchemaRegistry:
        """Every event type's JSON Schema (from the contracts), for producers in other languages."""
        from inferbus.model.schemas import draft4, event_schemas

        registry = EventSchemaRegistry(self, "SchemaRegistry", registry_name=self.settings.staged(self.settings.bus_name),
                                       schemas={name: draft4(schema) for name, schema in event_schemas().items()})
        CfnOutput(self, SCHEMA_REGISTRY_OUTPUT, value=registry.registry.attr_registry_name)
        return registry

    def _results_archive(self) -> ResultsArchive:
        """The cold tier: every producer's events to S3, colder with age."""
        settings = self.settings
        archive = ResultsArchive(
            self, "ResultsArchive", bus=self.bus, result_sources=sorted(self.result_producers),
            infrequent_access_after_days=settings.results_infrequent_access_after_days,
            glacier_after_days=settings.results_glacier_after_days, retention_days=settings.results_retention_days,
            target_retry_attempts=settings.target_retry_attempts, target_max_event_age_s=settings.target_max_event_age_s,
            dlq_retention_days=settings.target_dlq_retention_days, log_retention=self.log_retention,
        )
        add_alarm(archive, "UndeliveredEvents", archive.target_dead_letter_queue.metric_approximate_number_of_messages_visible(
            period=PERIOD, statistic="Maximum"), 1, "ResultsArchive: result events EventBridge could not deliver to Firehose",
            self.alarm_topic)
        CfnOutput(self, RESULTS_BUCKET_OUTPUT, value=archive.bucket.bucket_name)
        return archive

    def _route_workflow_rejections(self) -> None:
        workflows = self.pipeline.workflows
        add_rule_with_dead_letter_queue(
            Construct(self, "InvalidEventsRouting"),
            bus=self.bus,
            event_pattern=events.EventPattern(
                detail_type=sorted({w.failure for w in workflows}),
                source=[w.result_source for w in workflows],
                detail={"specversion": ["1.0"], "data": {"error": list(REJECTION_ERRORS)}},
            ),
            target=functools.partial(targets.SqsQueue, self.invalid_events),
            retry_attempts=self.settings.target_retry_attempts,
            max_event_age_s=self.settings.target_max_event_age_s,
            dlq_retention_days=self.settings.target_dlq_retention_days,
            description="Workflows' rejected inputs (...Failed with a rejection error) -> invalid events",
        )

    # -- experiments ----------------------------------------------------------------------------------

    def _fault_injection_experiments(self) -> FaultInjectionExperiments:
        """AWS FIS templates over every inferbus function, stopped as soon as work is lost: a record
        in a consumer's DLQ, or a failed workflow execution."""
        lost: dict[str, cloudwatch.IMetric] = {}
        for name, consumer in self.consumers.items():
            lost[f"dlq{len(lost)}"] = consumer.dead_letter_queue.metric_approximate_number_of_messages_visible(
                period=PERIOD, statistic="Maximum", label=f"{name}: DLQ depth")
        for name, kafka in self.kafka_consumers.items():
            lost[f"dlq{len(lost)}"] = kafka.failure_queue.metric_approximate_number_of_messages_visible(
                period=PERIOD, statistic="Maximum", label=f"{name}: on-failure queue depth")
        for name, workflow in self.workflows.items():
            lost[f"failed{len(lost)}"] = workflow.state_machine.metric_failed(period=PERIOD, statistic="Sum",
                                                                              label=f"{name}: failed executions")
        # One alarm per 10 metrics (the most a metric-math alarm takes).
        keys = list(lost)
        chunks = [keys[start:start + METRICS_PER_ALARM] for start in range(0, len(keys), METRICS_PER_ALARM)]
        stop_alarms = [
            add_alarm(self, f"FaultInjectionWorkLost{n}",
                      cloudwatch.MathExpression(expression=f"SUM([{', '.join(chunk)}])",
                                                using_metrics={key: lost[key] for key in chunk}, period=PERIOD,
                                                label="records dead-lettered + executions failed"),
                      1, "Work lost: a record in a consumer's DLQ or a failed execution (stops a running FIS experiment)",
                      self.alarm_topic)
            for n, chunk in enumerate(chunks, start=1)
        ]
        return FaultInjectionExperiments(
            self, "FaultInjection",
            functions=[c for c in self.node.find_all() if isinstance(c, lambda_.Function)],
            architecture=self.settings.lambda_architecture,
            stop_alarms=stop_alarms,
            log_retention=self.log_retention,
        )
