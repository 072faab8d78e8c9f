"""The inferbus stack: it wires constructs and reads settings, nothing more."""

from __future__ import annotations

import json
from pathlib import Path

from aws_cdk import CfnOutput, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from constructs import Construct

from .constructs import InferbusBus, QueueConsumer, python_lambda_code
from .constructs.consumer_monitoring import ConsumerMonitoring
from .constructs.queue_consumer import consumer_environment
from .settings import LOG_RETENTION_CHOICES, InferbusSettings

MANIFEST = Path(__file__).resolve().parents[1] / "models" / "manifest.json"
IMAGE_MODEL = "digits-mlp"
IMAGE_RESULT_SOURCE = "inferbus.image-classifier"
IMAGE_SERVICE = "image-classifier"
METRICS_NAMESPACE = "Inferbus"
# The settings list the allowed day counts; this names each for CloudWatch Logs, in the same order.
LOG_RETENTION = dict(
    zip(
        LOG_RETENTION_CHOICES,
        (logs.RetentionDays.ONE_WEEK, logs.RetentionDays.TWO_WEEKS, logs.RetentionDays.ONE_MONTH,
         logs.RetentionDays.THREE_MONTHS, logs.RetentionDays.ONE_YEAR),
        strict=True,
    )
)


class InferbusStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, settings: InferbusSettings, **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)
        model = json.loads(MANIFEST.read_text())["models"][IMAGE_MODEL]

        bus = InferbusBus(self, "EventBus", bus_name=settings.bus_name, archive_retention_days=settings.archive_retention_days)
        idempotency_table = dynamodb.Table(
            self,
            "IdempotencyTable",
            partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING),
            time_to_live_attribute="expiration",
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(point_in_time_recovery_enabled=True),
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            removal_policy=RemovalPolicy.DESTROY,  # it holds only short-lived claims
        )

        runtime = lambda_.Runtime(f"python{settings.python_version}", lambda_.RuntimeFamily.PYTHON)
        architecture = lambda_.Architecture.ARM_64 if settings.lambda_architecture == "arm64" else lambda_.Architecture.X86_64
        image_classifier = QueueConsumer(
            self,
            "ImageClassifier",
            bus=bus.bus,
            event_pattern=events.EventPattern(detail_type=["ImageSubmitted"], detail={"specversion": ["1.0"]}),
            settings=settings.image_consumer,
            code=python_lambda_code(settings.lambda_architecture, settings.python_version),
            handler="image_classifier.handler.lambda_handler",
            runtime=runtime,
            architecture=architecture,
            environment=consumer_environment(
                EVENT_BUS_NAME=bus.bus.event_bus_name,
                IDEMPOTENCY_TABLE_NAME=idempotency_table.table_name,
                IDEMPOTENCY_TTL_SECONDS=settings.idempotency_ttl_s,
                MODEL_PATH=f"models/{model['file']}",
                MODEL_NAME=IMAGE_MODEL,
                MODEL_VERSION=model["version"],
                RESULT_SOURCE=IMAGE_RESULT_SOURCE,
                POWERTOOLS_SERVICE_NAME=IMAGE_SERVICE,
                POWERTOOLS_METRICS_NAMESPACE=METRICS_NAMESPACE,
                POWERTOOLS_LOG_LEVEL="INFO",
            ),
            log_retention=LOG_RETENTION[settings.log_retention_days],
            target_retry_attempts=settings.target_retry_attempts,
            target_max_event_age_s=settings.target_max_event_age_s,
            description="ImageSubmitted -> digits ONNX model -> ImageClassified",
        )
        bus.bus.grant_put_events_to(image_classifier.function)
        idempotency_table.grant(
            image_classifier.function, "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"
        )

        alarm_topic = sns.Topic(
            self,
            "AlarmTopic",
            display_name="inferbus alarms",
            master_key=kms.Alias.from_alias_name(self, "SnsManagedKey", "alias/aws/sns"),
            enforce_ssl=True,
        )
        dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=f"{self.stack_name}-pipeline")
        ConsumerMonitoring(
            self,
            "ImageClassifierMonitoring",
            consumer=image_classifier,
            alarm_topic=alarm_topic,
            metrics_namespace=METRICS_NAMESPACE,
            service=IMAGE_SERVICE,
            max_message_age_s=settings.max_message_age_s,
            dashboard=dashboard,
        )

        CfnOutput(self, "AlarmTopicArn", value=alarm_topic.topic_arn)
        CfnOutput(self, "EventBusName", value=bus.bus.event_bus_name)
        CfnOutput(self, "ImageQueueUrl", value=image_classifier.queue.queue_url)
        CfnOutput(self, "ImageDeadLetterQueueUrl", value=image_classifier.dead_letter_queue.queue_url)
