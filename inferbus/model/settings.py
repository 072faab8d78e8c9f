"""The one place where inferbus's tunable numbers live.

:class:`InferbusSettings` holds the deployment-wide ones; each component's own
(:class:`ConsumerSettings`, :class:`FunctionSettings`, :class:`QueueSettings`) sit in its
declaration in ``pipeline/``. The CDK stack reads them; the embedded runtime reads the template
the stack synthesizes from them, so a number is never written twice. Any of them can be
overridden from CDK context (``-c review_threshold=0.6``, ``-c image-classifier.batch_size=50``,
see :mod:`infra.configuration`).

Example
-------
>>> from inferbus.model.settings import InferbusSettings, ConsumerSettings
>>> ConsumerSettings(batch_size=50).visibility_timeout_s
181
>>> InferbusSettings(stage="dev").staged("Inferbus")
'Inferbus-dev'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["ConsumerSettings", "FunctionSettings", "InferbusSettings", "QueueSettings", "SettingsError"]


LOG_RETENTION_CHOICES = (7, 14, 30, 90, 365)
PACKAGES = ("zip", "image")
STAGE = re.compile(r"^[a-z][a-z0-9]{0,11}$")
WORKFLOW_LOG_LEVELS = ("ALL", "ERROR", "FATAL", "OFF")
CLAIMS_STORES = ("dynamodb", "redis")  # inferbus_lambda.claims.CLAIM_STORES that a stack can make
MAX_QUEUE_RETENTION_S = 14 * 86_400


class SettingsError(ValueError):
    """A setting out of its range, or two settings that conflict; the message names them."""


def _check_range(owner: str, name: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise SettingsError(f"{owner}.{name} must be in [{low}, {high}], got {value}")


def _check_package(owner: str, package: str) -> None:
    if package not in PACKAGES:
        raise SettingsError(f"{owner}.package must be zip or image, got {package!r}")


@dataclass(frozen=True)
class ConsumerSettings:
    """An SQS-fed Lambda consumer.

    Attributes
    ----------
    batch_size
        Records per invocation, 1-10,000. Default 100: one inference call scores
        them all. Above 10 the batching window must be at least 1 s (an SQS rule).
    max_batching_window_s
        Seconds SQS may wait to fill a batch, 0-300. Default 1.
    max_concurrency
        Most concurrent invocations the event source may run, 2-1,000. Default 10:
        the backpressure valve that protects what the consumer calls.
    max_receive_count
        Deliveries before a record moves to the DLQ, 1-1,000. Default 3.
    memory_mb
        Lambda memory, 128-10,240 MB; vCPUs scale with it. Default 1,024.
    timeout_s
        Lambda timeout, 1-900 s. Default 30.
    dlq_retention_days
        How long failed records wait in the DLQ, 1-14 days. Default 14 (the maximum).
    package
        ``zip`` (default: the shared code bundle) or ``image``: a container image built at
        deploy from ``functions/Dockerfile`` (Docker where you deploy), for models too big
        for a zip (250 MB unzipped; an image may hold 10 GB).
    max_events_per_second
        The most events per second all the consumer's invocations take together, (0, 100,000]: a
        token bucket in the claims store (``inferbus_lambda.rate_limit``); records over it go back
        to their queue with a backoff, never to the DLQ (see docs/channels.md). Default None: no rate,
        only ``max_concurrency``.
    """

    batch_size: int = 100
    max_batching_window_s: int = 1
    max_concurrency: int = 10
    max_receive_count: int = 3
    memory_mb: int = 1024
    timeout_s: int = 30
    dlq_retention_days: int = 14
    package: Literal["zip", "image"] = "zip"
    max_events_per_second: float | None = None

    def __post_init__(self) -> None:
        owner = type(self).__name__
        _check_package(owner, self.package)
        if self.max_events_per_second is not None and not 0 < self.max_events_per_second <= 100_000:
            raise SettingsError(f"{owner}.max_events_per_second must be in (0, 100000] or None (no rate), "
                                f"got {self.max_events_per_second}")
        _check_range(owner, "batch_size", self.batch_size, 1, 10_000)
        _check_range(owner, "max_batching_window_s", self.max_batching_window_s, 0, 300)
        _check_range(owner, "max_concurrency", self.max_concurrency, 2, 1000)
        _check_range(owner, "max_receive_count", self.max_receive_count, 1, 1000)
        _check_range(owner, "memory_mb", self.memory_mb, 128, 10_240)
        _check_range(owner, "timeout_s", self.timeout_s, 1, 900)
        _check_range(owner, "dlq_retention_days", self.dlq_retention_days, 1, 14)
        if self.batch_size > 10 and self.max_batching_window_s < 1:
            raise SettingsError(
                f"{owner}.batch_size={self.batch_size} needs max_batching_window_s >= 1 (SQS allows more than 10 "
                f"records per batch only with a batching window), got {self.max_batching_window_s}"
            )

    @property
    def visibility_timeout_s(self) -> int:
        """Six times the function timeout plus the batching window, as AWS advises for Lambda consumers."""
        return 6 * self.timeout_s + self.max_batching_window_s


@dataclass(frozen=True)
class QueueSettings:
    """A routed queue that inferbus fills but your own service consumes.

    Attributes
    ----------
    visibility_timeout_s
        How long a received message stays hidden, 0-43,200 s. Default 180.
    max_receive_count
        Deliveries before a message moves to the DLQ, 1-1,000. Default 3.
    dlq_retention_days
        How long failed messages wait in the DLQ, 1-14 days. Default 14.
    """

    visibility_timeout_s: int = 180
    max_receive_count: int = 3
    dlq_retention_days: int = 14

    def __post_init__(self) -> None:
        owner = type(self).__name__
        _check_range(owner, "visibility_timeout_s", self.visibility_timeout_s, 0, 43_200)
        _check_range(owner, "max_receive_count", self.max_receive_count, 1, 1000)
        _check_range(owner, "dlq_retention_days", self.dlq_retention_days, 1, 14)


@dataclass(frozen=True)
class FunctionSettings:
    """A Lambda function that a workflow step invokes.

    Attributes
    ----------
    memory_mb
        Lambda memory, 128-10,240 MB; vCPUs scale with it. Default 1,024.
    timeout_s
        Lambda timeout, 1-900 s. Default 30. A timed-out step is retried by its workflow.
    package
        ``zip`` (default) or ``image`` (see :class:`ConsumerSettings`).
    reserved_concurrency
        Reserved concurrency, 1-1,000: the most instances that may run at once, so a burst of
        executions cannot take the account's whole Lambda concurrency (and this much is always
        there for it). Default 10. A throttled invocation is retried by its workflow
        (``Lambda.TooManyRequestsException``), then fails into the workflow's failure event. AWS
        keeps at least 100 of an account's concurrency unreserved: an account whose quota is the
        new-account 10 must ask for more before it deploys.
    """

    memory_mb: int = 1024
    timeout_s: int = 30
    package: Literal["zip", "image"] = "zip"
    reserved_concurrency: int = 10

    def __post_init__(self) -> None:
        owner = type(self).__name__
        _check_package(owner, self.package)
        _check_range(owner, "reserved_concurrency", self.reserved_concurrency, 1, 1000)
        _check_range(owner, "memory_mb", self.memory_mb, 128, 10_240)
        _check_range(owner, "timeout_s", self.timeout_s, 1, 900)


@dataclass(frozen=True)
class InferbusSettings:
    """The whole deployment.

    Attributes
    ----------
    stage
        Empty (default) or a short lowercase name (``dev``, ``prod``; letters and digits, at most
        12): the stack and bus names get ``-<stage>``, and with them every generated name (queues,
        table, functions), so stages deploy side by side in one account.
    stack_name
        CloudFormation stack name, before the stage. Default ``Inferbus``.
    bus_name
        The custom event bus, before the stage. Default ``inferbus``.
    archive_retention_days
        Days the archive keeps every event for replay, 1-3,650. Default 30.
    log_retention_days
        Lambda log retention: 7, 14, 30, 90 or 365. Default 30.
    lambda_architecture
        ``arm64`` (Graviton, cheaper per ms for onnxruntime) or ``x86_64``. Default ``arm64``.
    python_version
        The Lambda Python runtime, 3.12 or newer. Default ``3.14``.
    target_retry_attempts
        EventBridge retries to a rule target before its DLQ, 0-185. Default 8.
    target_max_event_age_s
        Oldest event EventBridge still retries, 60-86,400 s. Default 86,400 (24 h).
    target_dlq_retention_days
        How long events EventBridge could not deliver to a workflow wait in its target DLQ,
        1-14 days. Default 14. (Consumers' target DLQs use their own ``dlq_retention_days``.)
    max_message_age_s
        Age of the oldest queued message that raises a consumer's latency alarm, 1 s or more.
        Default 300.
    review_threshold
        Risk score, in (0, 1), at or above which a transaction waits for a person (manual
        review); below it, it is approved automatically. Default 0.5. The bus rules route on it.
    review_timeout_s
        How long a case waits for a reviewer before its workflow gives up and emits
        ``ReviewFailed``, 60 s to 14 days (the review queue keeps messages 14 days). Default 3 days.
    workflow_log_level
        Step Functions execution logging: ALL, ERROR, FATAL or OFF. Default ALL.
    workflow_log_execution_data
        Also log each state's input and output (may hold users' data). Default False.
    accept_step
        Memory and timeout of the kit's ``Accept`` step, which every workflow starts with.
    unrouted_check
        Batch, concurrency, memory and timeout of the unrouted-events check, which reads every event
        on the bus and keeps, with the reason, those no rule takes (``inferbus_lambda.unrouted``).
    execution_failures
        Batch, concurrency, memory and timeout of each workflow's net: the function that reports, with
        a failure event, and keeps each execution that ended outside the workflow's states
        (``inferbus_lambda.execution_failures``).
    ingest_function
        Memory and timeout of the HTTP ingest endpoint's function. Default 512 MB, 10 s.
    schema_registry
        Add an EventBridge schema registry holding every event type's JSON Schema (draft 4), from
        the contracts, for producers in other languages. Default True.
    ingest_api
        Add the HTTP ingest endpoint: a Lambda function URL with IAM auth that validates a
        CloudEvent (structured or binary mode) and puts it on the bus. Default True.
    lambda_insights
        CloudWatch Lambda Insights on every function (CPU, memory, network per invocation; about
        $0.30 per function per month plus the extension's metrics). Default ``None``: on in the
        ``prod`` stage, off elsewhere (see :attr:`insights_enabled`).
    error_rate_alarm_percent
        Error rate, in percent of a consumer's records or a workflow's executions per minute,
        that raises its error-rate alarm, (0, 100]. Default 5.
    event_latency_alarm_ms
        p95 event latency (now minus the event's ``time``, when a consumer or a workflow takes
        it) that raises the latency alarm, 1 ms or more. Default 60,000.
    processing_latency_alarm_ms
        p95 processing latency (a consumer's batch, a workflow's execution) that raises its
        alarm, 1 ms or more. Default 20,000.
    concurrency_alarm_percent
        A consumer's concurrent executions, in percent of its ``max_concurrency``, that raise
        its saturation alarm, (0, 100]. Default 90.
    memory_alarm_percent
        Memory use (Lambda Insights, when on) that raises a function's memory alarm, (0, 100].
        Default 90.
    results_archive
        Deliver every result event to S3 (Firehose, gzip), the cold tier. Default True.
    results_infrequent_access_after_days, results_glacier_after_days, results_retention_days
        The archive's lifecycle: S3 Standard, then Standard-IA after this many days (30 or more),
        then Glacier Flexible Retrieval (after more days than that), deleted after
        ``results_retention_days`` (after that, up to 3,650). Defaults 30, 90, 365.
    fault_injection_experiments
        Add AWS FIS experiment templates (invocation errors, added delay) over the zip functions,
        with the FIS Lambda extension layer, its configuration bucket and an experiment role.
        Default False: the template then has none of them. Templates only: an experiment runs
        when someone starts it, and stops when work is lost (see ``constructs/fault_injection.py``).
    claims_store
        Where consumers and workflows keep their exactly-once claims: ``dynamodb`` (default: the
        idempotency table, no fixed cost) or ``redis`` (ElastiCache Serverless Valkey in a VPC the
        claiming functions join; locally a redis-server, see docs/channels.md).
    """

    stage: str = ""
    stack_name: str = "Inferbus"
    bus_name: str = "inferbus"
    archive_retention_days: int = 30
    log_retention_days: int = 30
    lambda_architecture: Literal["arm64", "x86_64"] = "arm64"
    python_version: str = "3.14"
    target_retry_attempts: int = 8
    target_max_event_age_s: int = 86_400
    target_dlq_retention_days: int = 14
    max_message_age_s: int = 300
    review_threshold: float = 0.5
    review_timeout_s: int = 3 * 86_400
    workflow_log_level: Literal["ALL", "ERROR", "FATAL", "OFF"] = "ALL"
    workflow_log_execution_data: bool = False
    accept_step: FunctionSettings = FunctionSettings()
    unrouted_check: ConsumerSettings = ConsumerSettings(batch_size=100, max_batching_window_s=1, max_concurrency=5,
                                                        memory_mb=256, timeout_s=30)
    execution_failures: ConsumerSettings = ConsumerSettings(batch_size=10, max_batching_window_s=1, max_concurrency=2,
                                                            memory_mb=256, timeout_s=30)
    ingest_function: FunctionSettings = FunctionSettings(memory_mb=512, timeout_s=10)
    schema_registry: bool = True
    ingest_api: bool = True
    lambda_insights: bool | None = None
    error_rate_alarm_percent: float = 5.0
    event_latency_alarm_ms: int = 60_000
    processing_latency_alarm_ms: int = 20_000
    concurrency_alarm_percent: float = 90.0
    memory_alarm_percent: float = 90.0
    results_archive: bool = True
    results_infrequent_access_after_days: int = 30
    results_glacier_after_days: int = 90
    results_retention_days: int = 365
    fault_injection_experiments: bool = False
    claims_store: Literal["dynamodb", "redis"] = "dynamodb"

    def __post_init__(self) -> None:
        owner = type(self).__name__
        _check_range(owner, "archive_retention_days", self.archive_retention_days, 1, 3650)
        _check_range(owner, "target_retry_attempts", self.target_retry_attempts, 0, 185)
        _check_range(owner, "target_max_event_age_s", self.target_max_event_age_s, 60, 86_400)
        _check_range(owner, "target_dlq_retention_days", self.target_dlq_retention_days, 1, 14)
        _check_range(owner, "max_message_age_s", self.max_message_age_s, 1, 1_209_600)
        if self.log_retention_days not in LOG_RETENTION_CHOICES:
            raise SettingsError(f"{owner}.log_retention_days must be one of {LOG_RETENTION_CHOICES}, got {self.log_retention_days}")
        if self.lambda_architecture not in ("arm64", "x86_64"):
            raise SettingsError(f"{owner}.lambda_architecture must be arm64 or x86_64, got {self.lambda_architecture!r}")
        if not 0.0 < self.review_threshold < 1.0:
            raise SettingsError(f"{owner}.review_threshold must be in (0, 1), got {self.review_threshold}")
        _check_range(owner, "review_timeout_s", self.review_timeout_s, 60, MAX_QUEUE_RETENTION_S)
        if self.workflow_log_level not in WORKFLOW_LOG_LEVELS:
            raise SettingsError(f"{owner}.workflow_log_level must be one of {WORKFLOW_LOG_LEVELS}, got {self.workflow_log_level!r}")
        if self.stage and not STAGE.fullmatch(self.stage):
            raise SettingsError(f"{owner}.stage must be empty or 1-12 lowercase letters and digits starting with a "
                                f"letter (dev, prod, test1), got {self.stage!r}")
        for switch in ("fault_injection_experiments", "schema_registry", "ingest_api", "results_archive"):
            if not isinstance(getattr(self, switch), bool):
                raise SettingsError(f"{owner}.{switch} must be True or False, got {getattr(self, switch)!r}")
        if self.claims_store not in CLAIMS_STORES:
            raise SettingsError(f"{owner}.claims_store must be one of {', '.join(CLAIMS_STORES)}, got {self.claims_store!r}")
        if self.lambda_insights not in (None, True, False):
            raise SettingsError(f"{owner}.lambda_insights must be True, False or None (on in prod), got {self.lambda_insights!r}")
        for percent in ("error_rate_alarm_percent", "concurrency_alarm_percent", "memory_alarm_percent"):
            if not 0.0 < getattr(self, percent) <= 100.0:
                raise SettingsError(f"{owner}.{percent} must be in (0, 100], got {getattr(self, percent)}")
        _check_range(owner, "event_latency_alarm_ms", self.event_latency_alarm_ms, 1, 86_400_000)
        _check_range(owner, "processing_latency_alarm_ms", self.processing_latency_alarm_ms, 1, 86_400_000)
        # S3 lifecycle rules: Standard-IA no sooner than 30 days, Glacier after it, expiry after both.
        _check_range(owner, "results_infrequent_access_after_days", self.results_infrequent_access_after_days, 30, 3650)
        _check_range(owner, "results_glacier_after_days", self.results_glacier_after_days,
                     self.results_infrequent_access_after_days + 30, 3650)
        _check_range(owner, "results_retention_days", self.results_retention_days, self.results_glacier_after_days + 90, 3650)
        major, _, minor = self.python_version.partition(".")
        if not (major == "3" and minor.isdigit() and int(minor) >= 12):
            raise SettingsError(f"{owner}.python_version must be 3.12 or newer, got {self.python_version!r}")

    @property
    def insights_enabled(self) -> bool:
        """Lambda Insights on: as set, else only in the ``prod`` stage."""
        return self.stage == "prod" if self.lambda_insights is None else self.lambda_insights

    def claim_lifetime_s(self, dlq_retention_days: int) -> int:
        """How long a processed event id must suppress duplicates: the longest way the same event can
        come back. A replay may resend any archived event (``archive_retention_days``); EventBridge
        then retries its delivery for up to ``target_max_event_age_s``; and it may wait in a queue
        and its DLQ for ``dlq_retention_days`` (SQS counts a dead-lettered message's age from its
        first enqueue) before someone redrives it.

        >>> InferbusSettings().claim_lifetime_s(14) / 86_400  # 30 days of archive + 1 of retries + 14 in a DLQ
        45.0
        """
        return (self.archive_retention_days + dlq_retention_days) * 86_400 + self.target_max_event_age_s

    def staged(self, name: str) -> str:
        """``name`` with this stage: ``Inferbus`` -> ``Inferbus-dev`` (unchanged without a stage)."""
        return f"{name}-{self.stage}" if self.stage else name
