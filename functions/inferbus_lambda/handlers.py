"""Make a Lambda handler from your function: the kit supplies everything around it.

A queue consumer is its ``infer``; a workflow step is its ``step``. The factories read the
function's environment (validated, see :mod:`.environment`), load its models once per
container, and wrap your function with the Powertools logger, metrics and tracer, and, for a
consumer, the clients, its record source and claims store (both chosen by the environment:
``RECORD_SOURCE``, ``CLAIM_STORE``), publishing, rejections and the batch response
(:class:`~.consumer.InferenceConsumer`).

Example
-------
A consumer (``functions/my_classifier/handler.py``)::

    from inferbus_lambda.handlers import consumer_handler

    def infer(events, runtime):
        prediction = runtime.models.only.classify(np.array([e.data.features for e in events], dtype=np.float32))
        return [MyResult(input_id=e.id, label=int(label), ...) for e, label in zip(events, prediction.labels)]

    lambda_handler = consumer_handler(infer)

A workflow step (``functions/my_workflow/score.py``)::

    from inferbus_lambda.handlers import step_handler

    def score(event, runtime):
        return {"score": float(runtime.models.only.classify(...).probabilities[0, 1])}

    lambda_handler = step_handler(score)
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider

from .cold_start import release_collection
from .environment import FunctionEnvironment, StepEnvironment
from .errors import ConfigurationError
from .metric_names import (
    EVENT_LATENCY_MS,
    EVENT_TIME_KEY,
    INFERENCE_MS,
    PROCESSING_MS,
    PUT_EVENTS_FAILED_ENTRIES,
    age_ms,
)

if TYPE_CHECKING:
    from .contracts.core import CloudEvent, EventData
    from .environment import ConsumerEnvironment
    from .manifest import ModelInfo
    from .publishing import PublishFailure
    from .rejections import Rejection
    from .state import StateTableReader

__all__ = ["ConsumerRuntime", "FunctionRuntime", "Models", "StepRuntime", "Untraced", "aws_client", "consumer_handler",
           "load_onnx_classifier", "step_handler", "tracing_enabled"]

ModelT = TypeVar("ModelT")
Handler = Callable[[dict[str, Any], Any], Any]


class Models(Mapping[str, ModelT], Generic[ModelT]):
    """A function's loaded models, by manifest name; :attr:`only` when it has exactly one."""

    def __init__(self, loaded: Mapping[str, ModelT]) -> None:
        self._loaded = dict(loaded)

    def __getitem__(self, name: str) -> ModelT:
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded)

    def __len__(self) -> int:
        return len(self._loaded)

    @property
    def only(self) -> ModelT:
        """The one model of a function that declares exactly one."""
        if len(self._loaded) != 1:
            raise ConfigurationError(f"this function loads {len(self._loaded)} models ({', '.join(self._loaded) or 'none'}), "
                                     "not one: pick one by name, models['name']")
        return next(iter(self._loaded.values()))


def load_onnx_classifier(info: ModelInfo) -> Any:
    """The default model loader: an :class:`~.inference.OnnxClassifier` (numpy and onnxruntime are
    imported here, so a function that loads no model never imports them)."""
    from .inference import OnnxClassifier

    return OnnxClassifier.from_info(info)


def load_models(names: Sequence[str], load: Callable[[ModelInfo], Any]) -> Models[Any]:
    if not names:
        return Models({})
    from .manifest import model_info

    return Models({name: load(model_info(name)) for name in names})


def aws_client(service: str) -> Any:
    """A boto3 client for the function's whole life (made once per container, at init).

    botocore's client-side parameter validation is off: the kit builds every request itself,
    AWS validates them again anyway, and validating costs about a third of a batch's CPU
    (``bench/speed.py``). A malformed request still fails, with AWS's ``ValidationException``.
    """
    import boto3
    from botocore.config import Config

    return boto3.client(service, config=Config(parameter_validation=False))


def tracing_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether X-Ray tracing is on: in Lambda, unless ``POWERTOOLS_TRACE_DISABLED`` says otherwise."""
    environ = os.environ if environ is None else environ
    disabled = environ.get("POWERTOOLS_TRACE_DISABLED", "false").strip().lower() in {"1", "true", "yes", "on", "y", "t"}
    return not disabled and "AWS_LAMBDA_FUNCTION_NAME" in environ and "AWS_SAM_LOCAL" not in environ


class Untraced:
    """Stands in for Powertools' ``Tracer`` when tracing is off: its decorators change nothing, and
    the X-Ray SDK (which a disabled ``Tracer`` still imports) is never imported."""

    def capture_method(self, method: Callable[..., Any]) -> Callable[..., Any]:
        return method

    def capture_lambda_handler(self, handler: Callable[..., Any]) -> Callable[..., Any]:
        return handler

    def put_annotation(self, key: str, value: Any) -> None:
        """Nothing to annotate without a trace."""


def make_tracer(service: str) -> Any:
    """Powertools' ``Tracer`` when tracing is on (:func:`tracing_enabled`), else :class:`Untraced`."""
    if not tracing_enabled():
        return Untraced()
    from aws_lambda_powertools import Tracer

    return Tracer(service=service)


class FunctionRuntime:
    """What every handler the kit makes holds: its environment, models and the Powertools trio.

    Attributes
    ----------
    environment
        The validated environment (:mod:`.environment`).
    models
        The models named in ``INFERBUS_MODELS``, loaded once per container.
    logger, metrics, tracer
        Powertools, named after the function's service (``tracer`` is :class:`Untraced` when
        tracing is off).
    context
        The Lambda context of the invocation running now (``None`` between invocations).
    """

    def __init__(self, environment: FunctionEnvironment, load: Callable[[ModelInfo], Any]) -> None:
        service = environment.POWERTOOLS_SERVICE_NAME
        self.environment = environment
        self.logger = Logger(service=service)
        self.tracer = make_tracer(service)
        # A metric set of its own: Powertools' Metrics share one per process, and functions that
        # share a process (the embedded runtime runs them side by side) must not flush each other's.
        self.metrics = Metrics(provider=AmazonCloudWatchEMFProvider(
            service=service, namespace=environment.POWERTOOLS_METRICS_NAMESPACE, metric_set={}, dimension_set={},
            metadata_set={}, default_dimensions={}))
        self.models: Models[Any] = load_models(environment.INFERBUS_MODELS, load)
        self.context: Any = None

    def remaining_ms(self) -> int | None:
        """Time left in the running invocation, in milliseconds."""
        return self.context.get_remaining_time_in_millis() if self.context is not None else None

    def wrap(self, handler: Handler) -> Handler:
        def invoke(event: Any, context: Any) -> Any:
            release_collection()  # the init is over (cold_start)
            self.context = context
            try:
                return handler(event, context)
            finally:
                self.context = None

        return self.logger.inject_lambda_context(self.tracer.capture_lambda_handler(self.metrics.log_metrics(invoke)))


Infer = Callable[[Sequence["CloudEvent[Any]"], "ConsumerRuntime"], Sequence["EventData | Exception"]]


class ConsumerRuntime(FunctionRuntime):
    """What a consumer's handler holds, made once per container by :func:`consumer_handler`.

    Attributes
    ----------
    state(name)
        The reader of a state table the consumer declares it ``reads`` (:mod:`.state`).
    events, dynamodb, sqs
        The EventBridge, DynamoDB and SQS clients, one each per container (tests may replace them
        to simulate an outage). ``sqs`` is made on first use: only a batch with a record to
        reject, or to dead-letter on its last receive, needs it.
    consumer
        The :class:`~.consumer.InferenceConsumer` that runs each batch; its ``source`` and
        ``claims`` are the record source and claims store the environment names.
    """

    def __init__(self, infer: Infer, *, load: Callable[[ModelInfo], Any] = load_onnx_classifier,
                 environ: Mapping[str, str] | None = None) -> None:
        # A consumer's machinery, imported here: a workflow step never needs it (cold init, bench/speed.py).
        from .claims import claim_store
        from .consumer import InferenceConsumer, expect_type
        from .rate_limit import token_bucket
        from .contracts.core import data_model
        from .environment import ConsumerEnvironment
        from .sources import record_source

        environment = ConsumerEnvironment.from_environ(environ)
        for event_type in (environment.CONSUMES, environment.PRODUCES):
            if data_model(event_type) is None:
                raise ConfigurationError(f"{environment.POWERTOOLS_SERVICE_NAME}: no contract defines event type "
                                         f"{event_type!r}; add an EventData subclass to inferbus_lambda/contracts/")
        super().__init__(environment, load)
        self.environment: ConsumerEnvironment = environment
        self.result_model = data_model(environment.PRODUCES)
        self.infer = infer
        # Made after the environment is known good: a broken deployment fails fast.
        self.events = aws_client("events")
        self.dynamodb = aws_client("dynamodb")
        self._state_readers: dict[str, StateTableReader] = {}
        claims = claim_store(environment, scope=environment.POWERTOOLS_SERVICE_NAME, client=self.dynamodb)
        self.consumer = InferenceConsumer(
            source=record_source(environment, self._client),
            parse=expect_type(environment.CONSUMES),
            infer=self.tracer.capture_method(self._infer),
            claims=claims,
            rate_limit=token_bucket(claims, rate=environment.MAX_EVENTS_PER_SECOND, scope=environment.POWERTOOLS_SERVICE_NAME),
            publish=self.tracer.capture_method(self._publish),
            result_source=environment.RESULT_SOURCE,
            bus_name=environment.EVENT_BUS_NAME,
            metrics=self.metrics,
            logger=self.logger,
            reject=self.tracer.capture_method(self._reject) if environment.INVALID_EVENTS_QUEUE_URL else None,
        )

    def state(self, name: str) -> StateTableReader:
        """The reader of the state table the consumer declares as ``reads=(StateTable(name),)``, made
        once per container (so its cache lives as long as the container).

        Raises
        ------
        ConfigurationError
            When the consumer does not declare that table.
        """
        if name not in self._state_readers:
            from .state import StateTableReader, state_tables

            tables = state_tables(self.environment.INFERBUS_STATE_TABLES, self.environment.POWERTOOLS_SERVICE_NAME)
            if name not in tables:
                raise ConfigurationError(f"{self.environment.POWERTOOLS_SERVICE_NAME} reads no state table {name!r} "
                                         f"(declared: {', '.join(tables) or 'none'}); add StateTable({name!r}) to its "
                                         "reads in pipeline/")
            self._state_readers[name] = StateTableReader(self.dynamodb, tables[name]["table"], tables[name]["cache_s"])
        return self._state_readers[name]

    @cached_property
    def sqs(self) -> Any:
        """Made on first use (a batch with a record to set aside); assigning one replaces it."""
        return aws_client("sqs")

    def _client(self, service: str) -> Any:
        """The function's client for ``service`` (what a record source asks for, on first use)."""
        return self.sqs if service == "sqs" else aws_client(service)

    def _infer(self, events: Sequence[CloudEvent[Any]]) -> Sequence[EventData | Exception]:
        started = time.perf_counter()
        results = self.infer(events, self)
        self.metrics.add_metric(name=INFERENCE_MS, unit=MetricUnit.Milliseconds, value=(time.perf_counter() - started) * 1000)
        if len(results) != len(events):
            raise ValueError(f"infer returned {len(results)} results for {len(events)} events: one per event, in order")
        wrong = {type(result).__name__ for result in results if not isinstance(result, (self.result_model, Exception))}
        if wrong:
            raise TypeError(f"infer returned {', '.join(sorted(wrong))}; this consumer produces "
                            f"{self.environment.PRODUCES}")
        return results

    def _publish(self, entries: Sequence[dict[str, Any]]) -> list[PublishFailure]:
        from .publishing import publish_events

        failures = publish_events(self.events, entries)
        self.metrics.add_metric(name=PUT_EVENTS_FAILED_ENTRIES, unit=MetricUnit.Count, value=len(failures))
        return failures

    def _reject(self, rejections: Sequence[Rejection]) -> set[str]:
        from .rejections import send_rejections

        assert self.environment.INVALID_EVENTS_QUEUE_URL is not None
        return send_rejections(self.sqs, self.environment.INVALID_EVENTS_QUEUE_URL, self.environment.RESULT_SOURCE,
                               rejections)

    def handle(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        return self.consumer.handle(event, context)


def consumer_handler(infer: Infer, *, load: Callable[[ModelInfo], Any] = load_onnx_classifier) -> Handler:
    """A queue consumer's Lambda handler around ``infer``.

    Parameters
    ----------
    infer
        ``infer(events, runtime) -> results``: the claimed, valid events of one SQS batch (in
        order) and the :class:`ConsumerRuntime` (``runtime.models``, ``runtime.metrics``); returns one result ``data`` (of the type the consumer
        produces) per event, in order, from ONE model call. Raising fails these records; they
        are retried, then dead-lettered. An exception *in a result's place* fails that record
        alone (an input the model cannot score), with the exception as its reason.
    load
        How each model named in ``INFERBUS_MODELS`` is loaded, once per container. Default
        :func:`load_onnx_classifier`.

    Returns
    -------
    Callable
        ``lambda_handler(event, context)``; its ``runtime`` attribute is the :class:`ConsumerRuntime`.
    """
    runtime = ConsumerRuntime(infer, load=load)
    handler = runtime.wrap(runtime.handle)
    handler.runtime = runtime  # type: ignore[attr-defined]
    return handler


Step = Callable[[Any, "StepRuntime"], Any]


class StepRuntime(FunctionRuntime):
    """What a workflow step's handler holds, made once per container by :func:`step_handler`."""

    def __init__(self, step: Step, *, load: Callable[[ModelInfo], Any] = load_onnx_classifier,
                 environment_model: type[FunctionEnvironment] = StepEnvironment,
                 environ: Mapping[str, str] | None = None) -> None:
        super().__init__(environment_model.from_environ(environ), load)
        self.step = step

    def handle(self, event: Any, context: Any) -> Any:
        started = time.perf_counter()
        produced_at = event.pop(EVENT_TIME_KEY, None) if isinstance(event, dict) else None
        if isinstance(produced_at, str):
            self.record_event_latency(produced_at)
        try:
            return self.step(event, self)
        finally:
            self.metrics.add_metric(name=PROCESSING_MS, unit=MetricUnit.Milliseconds,
                                    value=(time.perf_counter() - started) * 1000)

    def record_event_latency(self, produced_at: str) -> None:
        """Add ``EventLatencyMs``: now minus ``produced_at`` (an event's ISO 8601 ``time``); ignores a malformed one."""
        try:
            moment = datetime.fromisoformat(produced_at.replace("Z", "+00:00"))
        except ValueError:
            return
        if moment.tzinfo is not None:
            self.metrics.add_metric(name=EVENT_LATENCY_MS, unit=MetricUnit.Milliseconds, value=age_ms(moment))


def step_handler(step: Step, *, load: Callable[[ModelInfo], Any] = load_onnx_classifier,
                 environment: type[FunctionEnvironment] = StepEnvironment) -> Handler:
    """A workflow step's Lambda handler around ``step``.

    Parameters
    ----------
    step
        ``step(event, runtime) -> answer``: the task's input as the ASL passes it, and the
        :class:`StepRuntime` (``runtime.models``, ``runtime.metrics``, ``runtime.remaining_ms()``); returns what the state machine gets back (JSON-serialisable). Raise
        :class:`~.errors.TransientError` for what a retry may fix; anything else is caught
        into the workflow's failure path.
    load
        How each model named in ``INFERBUS_MODELS`` is loaded, once per container.
    environment
        The environment model to validate (default :class:`~.environment.StepEnvironment`).

    Returns
    -------
    Callable
        ``lambda_handler(event, context)``; its ``runtime`` attribute is the :class:`StepRuntime`.
    """
    runtime = StepRuntime(step, load=load, environment_model=environment)
    handler = runtime.wrap(runtime.handle)
    handler.runtime = runtime  # type: ignore[attr-defined]
    return handler
