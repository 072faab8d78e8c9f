"""The inferbus stack: it wires constructs and reads settings, nothing more."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from .constructs import InferbusBus, QueueConsumer, RoutedQueue, Workflow, WorkflowFunction, python_lambda_code
from .constructs.alarms import PERIOD, add_alarm
from .constructs.bundling import text_encoder_image
from .constructs.consumer_monitoring import ConsumerMonitoring
from .constructs.fault_injection import FaultInjectionExperiments
from .constructs.function import FunctionCode, FunctionSpec
from .constructs.queue_consumer import consumer_environment
from .constructs.secure_queue import add_rule_with_dead_letter_queue, build_queue
from .constructs.workflow_monitoring import WorkflowMonitoring
from .nag import acknowledge_invalid_events_queue, acknowledge_review_queue
from .settings import LOG_RETENTION_CHOICES, MAX_QUEUE_RETENTION_S, ConsumerSettings, FunctionSettings, InferbusSettings

REPO_ROOT = Path(__file__).resolve().parents[1]
MANIFEST = REPO_ROOT / "models" / "manifest.json"
STATEMACHINES = REPO_ROOT / "statemachines"
METRICS_NAMESPACE = "Inferbus"
# The `source` of each producer's events. Rules on results match these, so an outside
# producer cannot start a workflow by forging a result.
RESULT_SOURCES = {
    "image-classifier": "inferbus.image-classifier",
    "risk-scorer": "inferbus.risk-scorer",
    "text-pipeline": "inferbus.text-pipeline",
    "vision-fanout": "inferbus.vision-fanout",
    "auto-approve": "inferbus.auto-approve",
    "risk-review": "inferbus.risk-review",
}
# Idempotency claims (inferbus_lambda.idempotency): claim = PutItem, read = GetItem, complete =
# UpdateItem; a consumer also releases a claim after a failure (DeleteItem).
CLAIM_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem")
RELEASE_CLAIM_ACTION = "dynamodb:DeleteItem"
WORKFLOW_SERVICES = ("text-pipeline", "vision-fanout", "auto-approve", "risk-review")
WORKFLOW_FAILURE_TYPES = ("TextAnalysisFailed", "ImageAnalysisFailed", "ApprovalFailed", "ReviewFailed")
# The settings list the allowed day counts; this names each for CloudWatch Logs, in the same order.
LOG_RETENTION = dict(
    zip(
        LOG_RETENTION_CHOICES,
        (logs.RetentionDays.ONE_WEEK, logs.RetentionDays.TWO_WEEKS, logs.RetentionDays.ONE_MONTH,
         logs.RetentionDays.THREE_MONTHS, logs.RetentionDays.ONE_YEAR),
        strict=True,
    )
)


def cloud_event_pattern(event_type: str, *, sources: list[str] | None = None, data: dict[str, Any] | None = None) -> events.EventPattern:
    """Match CloudEvents 1.0 of one type (optionally from given sources, with ``data`` content)."""
    detail: dict[str, Any] = {"specversion": ["1.0"]}
    if data:
        detail["data"] = data
    return events.EventPattern(detail_type=[event_type], source=sources, detail=detail)


class InferbusStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, settings: InferbusSettings, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.settings = settings
        self.models = json.loads(MANIFEST.read_text())["models"]
        self.log_retention = LOG_RETENTION[settings.log_retention_days]
        self.runtime = lambda_.Runtime(f"python{settings.python_version}", lambda_.RuntimeFamily.PYTHON)
        self.architecture = (lambda_.Architecture.ARM_64 if settings.lambda_architecture == "arm64"
                             else lambda_.Architecture.X86_64)
        self.code = python_lambda_code(settings.lambda_architecture, settings.python_version)

        self.bus_construct = InferbusBus(self, "EventBus", bus_name=settings.bus_name,
                                         archive_retention_days=settings.archive_retention_days)
        self.bus = self.bus_construct.bus
        self.result_producers: dict[str, iam.IRole] = {}  # service -> the role that publishes its results
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
        alarm_topic = sns.Topic(
            self,
            "AlarmTopic",
            display_name="inferbus alarms",
            master_key=kms.Alias.from_alias_name(self, "SnsManagedKey", "alias/aws/sns"),
            enforce_ssl=True,
        )
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=f"{self.stack_name}-pipeline")
        self.alarm_topic = alarm_topic

        self.invalid_events = self._invalid_events_queue()
        self._image_classifier()
        accept = self._accept_function()
        self._text_pipeline(accept)
        self._vision_fanout(accept)
        self._risk_routing(accept)
        self._restrict_result_sources()
        if settings.fault_injection_experiments:
            self._fault_injection_experiments()
        CfnOutput(self, "AlarmTopicArn", value=alarm_topic.topic_arn)
        CfnOutput(self, "EventBusName", value=self.bus.event_bus_name)

    # -- helpers: every function and consumer is built the same way -----------------------------

    def _model_environment(self, model_name: str) -> dict[str, str]:
        model = self.models[model_name]
        return {"MODEL_PATH": f"models/{model['file']}", "MODEL_NAME": model_name, "MODEL_VERSION": model["version"]}

    def _spec(self, handler: str, sizing: ConsumerSettings | FunctionSettings, description: str,
              image_code: lambda_.DockerImageCode | None = None, **environment: Any) -> FunctionSpec:
        code = (FunctionCode(handler, image_code=image_code) if image_code is not None
                else FunctionCode(handler, zip_code=self.code, runtime=self.runtime))
        return FunctionSpec(
            code=code,
            architecture=self.architecture,
            memory_mb=sizing.memory_mb,
            timeout_s=sizing.timeout_s,
            environment=consumer_environment(POWERTOOLS_METRICS_NAMESPACE=METRICS_NAMESPACE, POWERTOOLS_LOG_LEVEL="INFO",
                                             **environment),
            log_retention=self.log_retention,
            description=description,
        )

    def _consumer(self, construct_id: str, *, service: str, handler: str, settings: ConsumerSettings,
                  pattern: events.EventPattern, description: str, **environment: Any) -> QueueConsumer:
        consumer = QueueConsumer(
            self,
            construct_id,
            bus=self.bus,
            event_pattern=pattern,
            settings=settings,
            function=self._spec(
                handler, settings, description,
                EVENT_BUS_NAME=self.bus.event_bus_name,
                INVALID_EVENTS_QUEUE_URL=self.invalid_events.queue_url,
                IDEMPOTENCY_TABLE_NAME=self.idempotency_table.table_name,
                IDEMPOTENCY_TTL_SECONDS=self.settings.idempotency_ttl_s,
                RESULT_SOURCE=RESULT_SOURCES[service],
                POWERTOOLS_SERVICE_NAME=service,
                **environment,
            ),
            target_retry_attempts=self.settings.target_retry_attempts,
            target_max_event_age_s=self.settings.target_max_event_age_s,
        )
        self.bus.grant_put_events_to(consumer.function)
        self.result_producers[service] = consumer.role
        self.invalid_events.grant_send_messages(consumer.function)
        self.idempotency_table.grant(consumer.function, *CLAIM_ACTIONS, RELEASE_CLAIM_ACTION)
        ConsumerMonitoring(
            self,
            f"{construct_id}Monitoring",
            consumer=consumer,
            alarm_topic=self.alarm_topic,
            metrics_namespace=METRICS_NAMESPACE,
            service=service,
            max_message_age_s=self.settings.max_message_age_s,
            dashboard=self.dashboard,
        )
        return consumer

    def _step(self, construct_id: str, handler: str, description: str, *, sizing: FunctionSettings | None = None,
              image_code: lambda_.DockerImageCode | None = None, **environment: Any) -> lambda_.IFunction:
        spec = self._spec(handler, sizing or self.settings.workflow_step, description, image_code=image_code,
                          POWERTOOLS_SERVICE_NAME=construct_id, **environment)
        return WorkflowFunction(self, construct_id, spec=spec).function

    def _workflow(self, construct_id: str, *, service: str, asl: str, pattern: events.EventPattern, express: bool,
                  functions: dict[str, lambda_.IFunction], description: str, **props: Any) -> Workflow:
        workflow = Workflow(
            self,
            construct_id,
            bus=self.bus,
            event_pattern=pattern,
            definition_file=STATEMACHINES / asl,
            result_source=RESULT_SOURCES[service],
            functions=functions,
            express=express,
            log_level=self.settings.workflow_log_level,
            log_execution_data=self.settings.workflow_log_execution_data,
            log_retention=self.log_retention,
            target_retry_attempts=self.settings.target_retry_attempts,
            target_max_event_age_s=self.settings.target_max_event_age_s,
            dlq_retention_days=self.settings.target_dlq_retention_days,
            description=description,
            **props,
        )
        WorkflowMonitoring(self, f"{construct_id}Monitoring", workflow=workflow, alarm_topic=self.alarm_topic,
                           dashboard=self.dashboard)
        CfnOutput(self, f"{construct_id}StateMachineArn", value=workflow.state_machine.state_machine_arn)
        self.result_producers[service] = workflow.state_machine.role
        return workflow

    def _invalid_events_queue(self) -> sqs.Queue:
        """Where events that break their contract wait, with the reason: consumers send them here
        at once (a retry would fail the same way), and a rule brings the workflows' rejections."""
        queue = build_queue(self, "InvalidEvents", retention_period=Duration.seconds(MAX_QUEUE_RETENTION_S))
        acknowledge_invalid_events_queue(queue)
        add_rule_with_dead_letter_queue(
            Construct(self, "InvalidEventsRouting"),
            bus=self.bus,
            event_pattern=events.EventPattern(
                detail_type=list(WORKFLOW_FAILURE_TYPES),
                source=[RESULT_SOURCES[service] for service in WORKFLOW_SERVICES],
                detail={"specversion": ["1.0"], "data": {"error": ["InvalidEventError", "IdConflictError"]}},
            ),
            target=functools.partial(targets.SqsQueue, queue),
            retry_attempts=self.settings.target_retry_attempts,
            max_event_age_s=self.settings.target_max_event_age_s,
            dlq_retention_days=self.settings.target_dlq_retention_days,
            description="Workflows' rejected inputs (...Failed with InvalidEventError or IdConflictError) -> invalid events",
        )
        CfnOutput(self, "InvalidEventsQueueUrl", value=queue.queue_url)
        return queue

    # -- the pipelines --------------------------------------------------------------------------

    def _image_classifier(self) -> None:
        consumer = self._consumer(
            "ImageClassifier",
            service="image-classifier",
            handler="image_classifier.handler.lambda_handler",
            settings=self.settings.image_consumer,
            # Images that ask for the full analysis go to the vision workflow instead.
            pattern=cloud_event_pattern("ImageSubmitted", data={
                "$or": [{"analysis": [{"exists": False}]}, {"analysis": ["classify"]}]}),
            description="ImageSubmitted -> digits ONNX model -> ImageClassified",
            **self._model_environment("digits-mlp"),
        )
        CfnOutput(self, "ImageQueueUrl", value=consumer.queue.queue_url)
        CfnOutput(self, "ImageDeadLetterQueueUrl", value=consumer.dead_letter_queue.queue_url)

    def _accept_function(self) -> lambda_.IFunction:
        accept = self._step("AcceptEvent", "accept_event.handler.lambda_handler",
                            "Every workflow's first step: validate the event, claim its id once",
                            IDEMPOTENCY_TABLE_NAME=self.idempotency_table.table_name,
                            IDEMPOTENCY_TTL_SECONDS=self.settings.idempotency_ttl_s)
        self.idempotency_table.grant(accept, *CLAIM_ACTIONS)  # a workflow owns what it accepted: it never releases
        return accept

    def _text_pipeline(self, accept: lambda_.IFunction) -> None:
        encoder, head = self.models["minilm-l6-int8"], self.models["text-sentiment"]
        image_code = (text_encoder_image(self.settings.lambda_architecture, self.settings.python_version)
                      if self.settings.text_encoder_package == "image" else None)
        functions = {
            "Accept": accept,
            "Tokenize": self._step("TextTokenize", "text_pipeline.tokenize.lambda_handler", "Text -> MiniLM token ids",
                                   TOKENIZER_PATH=f"models/{encoder['tokenizer']['file']}", MAX_TOKENS=encoder["max_tokens"]),
            "Embed": self._step("TextEmbed", "text_pipeline.embed.lambda_handler", "Token ids -> sentence embedding",
                                sizing=self.settings.text_encoder, image_code=image_code,
                                **self._model_environment("minilm-l6-int8")),
            "Classify": self._step("TextClassify", "text_pipeline.classify.lambda_handler", "Embedding -> sentiment",
                                   MODEL_LABELS=",".join(head["labels"]), **self._model_environment("text-sentiment")),
            "Entities": self._step("TextEntities", "text_pipeline.entities.lambda_handler", "Text -> entities (rules)"),
        }
        self._workflow("TextPipeline", service="text-pipeline", asl="text_pipeline.asl.json",
                       pattern=cloud_event_pattern("TextSubmitted"), express=True, functions=functions,
                       description="TextSubmitted -> tokenize -> embed -> classify -> entities -> TextAnalyzed")

    def _vision_fanout(self, accept: lambda_.IFunction) -> None:
        functions = {
            "Accept": accept,
            "ScoreMlp": self._step("VisionScoreMlp", "vision.score.lambda_handler", "One image, the digits MLP",
                                   **self._model_environment("digits-mlp")),
            "ScoreSvc": self._step("VisionScoreSvc", "vision.score.lambda_handler", "One image, the digits SVM",
                                   **self._model_environment("digits-svc")),
            "Merge": self._step("VisionMerge", "vision.merge.lambda_handler", "Branch scores -> combined confidence"),
        }
        self._workflow("VisionFanout", service="vision-fanout", asl="vision_fanout.asl.json",
                       pattern=cloud_event_pattern("ImageSubmitted", data={"analysis": ["full"]}), express=True,
                       functions=functions, description="ImageSubmitted (analysis=full) -> two models in parallel -> ImageAnalyzed")

    def _risk_routing(self, accept: lambda_.IFunction) -> None:
        settings = self.settings
        scorer = self._consumer(
            "RiskScorer",
            service="risk-scorer",
            handler="risk_scorer.handler.lambda_handler",
            settings=settings.risk_consumer,
            pattern=cloud_event_pattern("TransactionSubmitted"),
            description="TransactionSubmitted -> risk ONNX model -> RiskScored",
            RISK_COLUMN=self.models["risk-logreg"]["risk_column"],
            **self._model_environment("risk-logreg"),
        )
        scored = [RESULT_SOURCES["risk-scorer"]]
        self._workflow(
            "AutoApprove", service="auto-approve", asl="auto_approve.asl.json", express=True,
            pattern=cloud_event_pattern("RiskScored", sources=scored,
                                        data={"risk_score": [{"numeric": ["<", settings.review_threshold]}]}),
            functions={"Accept": accept}, substitutions={"InputSource": RESULT_SOURCES["risk-scorer"]},
            description="RiskScored below the review threshold -> TransactionApproved",
        )
        # People read this queue: every listing is a receive, so a redrive policy would move
        # waiting cases to a DLQ after N looks. A case nobody decides times out in its workflow.
        review_queue = build_queue(self, "ReviewQueue", retention_period=Duration.seconds(MAX_QUEUE_RETENTION_S))
        acknowledge_review_queue(review_queue)
        self._workflow(
            "RiskReview", service="risk-review", asl="risk_review.asl.json", express=False,
            pattern=cloud_event_pattern("RiskScored", sources=scored,
                                        data={"risk_score": [{"numeric": [">=", settings.review_threshold]}]}),
            functions={"Accept": accept}, send_to_queues=[review_queue],
            substitutions={"ReviewQueueUrl": review_queue.queue_url, "ReviewTimeoutSeconds": str(settings.review_timeout_s),
                           "InputSource": RESULT_SOURCES["risk-scorer"]},
            description="RiskScored at or above the review threshold -> manual review (task token) -> ReviewCompleted",
        )
        # Content-based routing at the bus: approved transactions go to the offers consumer of
        # their customer segment (integration points for recommendation services).
        deciders = [RESULT_SOURCES["auto-approve"], RESULT_SOURCES["risk-review"]]
        offers = {}
        for segment in ("new", "returning"):
            offers[segment] = RoutedQueue(
                self, f"{segment.capitalize()}CustomerOffers", bus=self.bus,
                event_pattern=cloud_event_pattern("TransactionApproved", sources=deciders,
                                                  data={"customer": {"segment": [segment]}}),
                visibility_timeout_s=settings.offers_queue.visibility_timeout_s,
                max_receive_count=settings.offers_queue.max_receive_count,
                dlq_retention_days=settings.offers_queue.dlq_retention_days,
                target_retry_attempts=settings.target_retry_attempts, target_max_event_age_s=settings.target_max_event_age_s,
                description=f"TransactionApproved for a {segment} customer -> {segment}-customer offers",
            )
            CfnOutput(self, f"{segment.capitalize()}CustomerOffersQueueUrl", value=offers[segment].queue.queue_url)
        CfnOutput(self, "RiskQueueUrl", value=scorer.queue.queue_url)
        CfnOutput(self, "RiskDeadLetterQueueUrl", value=scorer.dead_letter_queue.queue_url)
        CfnOutput(self, "ReviewQueueUrl", value=review_queue.queue_url)

    # -- guards and experiments -------------------------------------------------------------------

    def _restrict_result_sources(self) -> None:
        """Reserve each internal result ``source`` on the bus to the role that produces it."""
        unguarded = set(RESULT_SOURCES) - set(self.result_producers)
        if unguarded:
            raise ValueError(f"RESULT_SOURCES without a producer to reserve them to: {sorted(unguarded)}")
        self.bus_construct.restrict_sources({RESULT_SOURCES[s]: role for s, role in self.result_producers.items()})

    def _fault_injection_experiments(self) -> FaultInjectionExperiments:
        """AWS FIS templates over every inferbus function, stopped as soon as work is lost: a record
        in a consumer's DLQ, or a failed workflow execution."""
        tree = self.node.find_all()
        dead_letters = [alarm for c in tree if isinstance(c, ConsumerMonitoring) for alarm in c.alarms
                        if alarm.node.id == "DeadLetters"]
        failed = {f"failed{i}": c.state_machine.metric_failed(period=PERIOD, statistic="Sum")
                  for i, c in enumerate(c for c in tree if isinstance(c, Workflow))}
        # One alarm for the four workflows: FIS takes at most 5 stop conditions per template.
        workflows_failed = add_alarm(
            self, "FaultInjectionWorkflowsFailed",
            cloudwatch.MathExpression(expression=f"SUM([{', '.join(failed)}])", using_metrics=failed, period=PERIOD,
                                      label="failed executions, all workflows"),
            1, "Any workflow: executions that failed (stops a running FIS experiment)", self.alarm_topic)
        return FaultInjectionExperiments(
            self, "FaultInjection",
            functions=[c for c in tree if isinstance(c, lambda_.Function)],
            architecture=self.settings.lambda_architecture,
            stop_alarms=[*dead_letters, workflows_failed],
            log_retention=self.log_retention,
        )
