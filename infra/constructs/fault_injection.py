"""AWS FIS experiment templates that fail or delay inferbus's Lambda functions.

The cloud twin of the embedded runtime's fault wrappers (``inferbus/chaos/faults.py``, which
the deployed functions do not carry): invocations that fail and invocations that start late,
run by AWS FIS through its Lambda extension.

Secure defaults
---------------
- Templates only: nothing is injected until someone starts an experiment
  (``aws fis start-experiment --experiment-template-id ...``), and every experiment stops as
  soon as one of its stop-condition alarms goes off.
- Targets are the functions named by ARN, never a tag query that could sweep in other functions.
- The experiment role (trusted by ``fis.amazonaws.com`` for experiments of this account only)
  may write and delete fault configurations under one prefix of one bucket, read the targeted
  functions' configuration, and deliver the experiment log; nothing else.
- The configuration bucket: SSE-S3, TLS 1.2 or newer only, all public access blocked, ACLs
  off, and configurations expire after a day (an experiment lasts at most 12 hours).
- Each targeted function may list and read that one prefix, nothing else of the bucket.
- Container-image functions cannot carry a layer: they are not targeted (the FIS extension
  would have to be built into the image).

How it works (AWS FIS user guide, "Use the AWS FIS aws:lambda:function actions"): every
targeted function carries the AWS FIS extension layer, ``AWS_LAMBDA_EXEC_WRAPPER`` points at
its bootstrap and ``AWS_FIS_CONFIGURATION_LOCATION`` at the S3 prefix; during an experiment
FIS writes the fault configuration there and the extension polls it.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration, Names, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_fis as fis
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from ..nag import (
    acknowledge_fault_configuration_bucket,
    acknowledge_fault_configuration_reads,
    acknowledge_fault_experiment_role,
)

CONFIGURATION_PREFIX = "fis-configurations/"
# AWS publishes the extension's layer ARN per Region and architecture as public SSM
# parameters; "1.x.x" follows the newest 1.x release, resolved at each deploy.
EXTENSION_LAYER_PARAMETER = "/aws/service/fis/lambda-extension/AWS-FIS-extension-{architecture}/1.x.x"
EXTENSION_WRAPPER = "/opt/aws-fis/bootstrap"
# How long the extension may wait for an in-flight poll before it decides an invocation's fate.
# AWS recommends a non-zero value with preventExecution; it delays only invocations that race a poll.
POLL_MAX_WAIT_MS = 2000
# FIS quotas: at most 5 resource ARNs per target, 5 stop conditions per template.
MAX_ARNS_PER_TARGET = 5
MAX_STOP_CONDITIONS = 5
LOG_SCHEMA_VERSION = 2


class FaultInjectionExperiments(Construct):
    """Two FIS experiment templates over the given functions: invocation errors and added delay.

    Parameters
    ----------
    functions
        The functions to target (zip functions; image functions are skipped, see above).
        At least one.
    architecture
        ``arm64`` or ``x86_64``: picks the extension layer built for it.
    stop_alarms
        1-5 alarms; any of them in ALARM stops a running experiment.
    log_retention
        How long the experiments' own log (FIS log schema 2) is kept.
    duration_minutes
        How long each action injects, 1-720 minutes (an action lasts at most 12 h). Default 10.
    error_percentage
        Share of invocations that fail, 1-100 %. Default 20. They fail before the handler
        runs (``preventExecution``), as the local switch's ``error_rate`` does, so a failed
        invocation has no side effects and the retries decide what happens next.
    delay_percentage
        Share of invocations that start late, 1-100 %. Default 25.
    delay_ms
        The added start-up delay, 1-900,000 ms. Default 3,000 (well inside every function's
        timeout; raise it past a timeout to rehearse timeouts).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: Sequence[lambda_.Function],
        architecture: str,
        stop_alarms: Sequence[cloudwatch.IAlarm],
        log_retention: logs.RetentionDays,
        duration_minutes: int = 10,
        error_percentage: int = 20,
        delay_percentage: int = 25,
        delay_ms: int = 3000,
    ) -> None:
        super().__init__(scope, construct_id)
        _check_range("duration_minutes", duration_minutes, 1, 720)
        _check_range("error_percentage", error_percentage, 1, 100)
        _check_range("delay_percentage", delay_percentage, 1, 100)
        _check_range("delay_ms", delay_ms, 1, 900_000)
        if architecture not in ("arm64", "x86_64"):
            raise ValueError(f"architecture must be arm64 or x86_64, got {architecture!r}")
        if not 1 <= len(stop_alarms) <= MAX_STOP_CONDITIONS:
            raise ValueError(f"stop_alarms: FIS takes 1-{MAX_STOP_CONDITIONS} stop conditions, got {len(stop_alarms)}")
        self.functions = [f for f in functions if not isinstance(f, lambda_.DockerImageFunction)]
        if not self.functions:
            raise ValueError("functions: no zip function to target (container-image functions cannot carry the layer)")
        stack = Stack.of(self)

        self.bucket = s3.Bucket(
            self,
            "ConfigurationBucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            minimum_tls_version=1.2,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            # FIS deletes a configuration when its action ends; this catches any it could not.
            lifecycle_rules=[s3.LifecycleRule(prefix=CONFIGURATION_PREFIX, expiration=Duration.days(1))],
            # Holds nothing worth keeping; emptied by FIS and the lifecycle rule.
            removal_policy=RemovalPolicy.DESTROY,
        )
        acknowledge_fault_configuration_bucket(self.bucket)
        configuration_objects = self.bucket.arn_for_objects(f"{CONFIGURATION_PREFIX}*")
        # cdk-nag names a wildcard resource by the bucket's logical id: acknowledge exactly that one.
        bucket_id = stack.resolve(stack.get_logical_id(self.bucket.node.default_child))
        objects_finding = f"<{bucket_id}.Arn>/{CONFIGURATION_PREFIX}*"
        self.configuration_location = f"{self.bucket.bucket_arn}/{CONFIGURATION_PREFIX}"

        self.layer = lambda_.LayerVersion.from_layer_version_arn(
            self,
            "ExtensionLayer",
            ssm.StringParameter.value_for_string_parameter(
                self, EXTENSION_LAYER_PARAMETER.format(architecture=architecture)),
        )
        for function in self.functions:
            function.add_layers(self.layer)
            function.add_environment("AWS_LAMBDA_EXEC_WRAPPER", EXTENSION_WRAPPER)
            function.add_environment("AWS_FIS_CONFIGURATION_LOCATION", self.configuration_location)
            function.add_environment("AWS_FIS_POLL_MAX_WAIT_MILLISECONDS", str(POLL_MAX_WAIT_MS))
            # What the extension reads, in the function's own role: the prefix, nothing else.
            function.add_to_role_policy(iam.PolicyStatement(
                actions=["s3:ListBucket"], resources=[self.bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{CONFIGURATION_PREFIX}*"]}}))
            function.add_to_role_policy(iam.PolicyStatement(
                actions=["s3:GetObject"], resources=[configuration_objects]))
            if function.role is not None:
                # A function in a nested stack sees the bucket's ARN as the parameter CDK passes it in.
                finding = objects_finding if Stack.of(function) is stack else (
                    f"<referenceto{Names.unique_id(self.bucket.node.default_child)}Arn>/{CONFIGURATION_PREFIX}*")
                acknowledge_fault_configuration_reads(function.role, finding)

        self.log_group = logs.LogGroup(self, "ExperimentLogs", retention=log_retention)
        self.role = iam.Role(
            self,
            "ExperimentRole",
            description="AWS FIS experiments on inferbus's functions: fault configurations, targets, experiment log",
            assumed_by=iam.ServicePrincipal("fis.amazonaws.com", conditions={
                # Confused-deputy guard: only FIS experiments of this account may assume it.
                "StringEquals": {"aws:SourceAccount": stack.account},
                "ArnLike": {"aws:SourceArn": stack.format_arn(service="fis", resource="experiment", resource_name="*")},
            }),
        )
        self.role.add_to_policy(iam.PolicyStatement(
            actions=["s3:PutObject", "s3:DeleteObject"], resources=[configuration_objects]))
        # FIS reads each target's configuration (AWS_FIS_CONFIGURATION_LOCATION) before it injects.
        self.role.add_to_policy(iam.PolicyStatement(
            actions=["lambda:GetFunction"], resources=[f.function_arn for f in self.functions]))
        # Required by the aws:lambda:invocation-* actions (FIS actions reference); the Resource
        # Groups Tagging API has no resource-level permissions.
        self.role.add_to_policy(iam.PolicyStatement(actions=["tag:GetResources"], resources=["*"]))
        # Experiment logging to CloudWatch Logs is a vended log delivery: these actions set it up
        # and support no resource-level permissions.
        self.role.add_to_policy(iam.PolicyStatement(
            actions=["logs:CreateLogDelivery", "logs:PutResourcePolicy", "logs:DescribeResourcePolicies",
                     "logs:DescribeLogGroups"],
            resources=["*"]))
        acknowledge_fault_experiment_role(self.role, objects_finding)

        # One target per 5 functions (the ARN limit of a target); each action takes one target,
        # so each experiment runs one action per target, all at the same time.
        chunks = [self.functions[i:i + MAX_ARNS_PER_TARGET] for i in range(0, len(self.functions), MAX_ARNS_PER_TARGET)]
        targets = {
            f"Functions{n}": fis.CfnExperimentTemplate.ExperimentTemplateTargetProperty(
                resource_type="aws:lambda:function", selection_mode="ALL",
                resource_arns=[f.function_arn for f in chunk])
            for n, chunk in enumerate(chunks, start=1)
        }
        duration = f"PT{duration_minutes}M"
        stop_conditions = [fis.CfnExperimentTemplate.ExperimentTemplateStopConditionProperty(
            source="aws:cloudwatch:alarm", value=alarm.alarm_arn) for alarm in stop_alarms]
        log_configuration = fis.CfnExperimentTemplate.ExperimentTemplateLogConfigurationProperty(
            log_schema_version=LOG_SCHEMA_VERSION,
            cloud_watch_logs_configuration={"LogGroupArn": self.log_group.log_group_arn})

        def template(template_id: str, action_id: str, action_name: str, description: str,
                     parameters: dict[str, str]) -> fis.CfnExperimentTemplate:
            return fis.CfnExperimentTemplate(
                self,
                template_id,
                description=description,
                role_arn=self.role.role_arn,
                targets=targets,
                actions={
                    f"{action_name}{n}": fis.CfnExperimentTemplate.ExperimentTemplateActionProperty(
                        action_id=action_id, parameters=parameters, targets={"Functions": target})
                    for n, target in enumerate(targets, start=1)
                },
                stop_conditions=stop_conditions,
                log_configuration=log_configuration,
                tags={"Name": f"{stack.stack_name}-{template_id}"},
            )

        self.invocation_errors = template(
            "InvocationErrors", "aws:lambda:invocation-error", "FailInvocations",
            f"{error_percentage}% of inferbus's function invocations fail before the handler runs, for "
            f"{duration_minutes} min; stops when work is lost (a DLQ fills or a workflow fails)",
            {"duration": duration, "invocationPercentage": str(error_percentage), "preventExecution": "true"},
        )
        self.invocation_delay = template(
            "InvocationDelay", "aws:lambda:invocation-add-delay", "DelayInvocations",
            f"{delay_percentage}% of inferbus's function invocations start {delay_ms} ms late, for "
            f"{duration_minutes} min; stops when work is lost (a DLQ fills or a workflow fails)",
            {"duration": duration, "invocationPercentage": str(delay_percentage),
             "startupDelayMilliseconds": str(delay_ms)},
        )


def _check_range(name: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {value}")
