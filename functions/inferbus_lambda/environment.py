"""Each function's environment, as a typed model: the one definition of every variable's name.

The CDK stack builds a function's ``Environment`` from these models and the function
validates its own at init (:meth:`FunctionEnvironment.from_environ`), so a variable cannot
be renamed on one side only, and a missing or malformed one stops the cold start with a
message that names it instead of a ``KeyError`` deep in a handler.

=========================  ====================================================================
model                      the functions that read it
=========================  ====================================================================
:class:`StepEnvironment`   workflow steps (``inferbus_lambda.handlers.step_handler``)
:class:`AcceptEnvironment` the workflows' shared first step (it claims event ids)
:class:`ConsumerEnvironment`  queue consumers (``inferbus_lambda.handlers.consumer_handler``)
:class:`IngestEnvironment` the HTTP ingest endpoint (``functions/ingest``)
:class:`UnroutedEnvironment`  the bus's unrouted-events check (``functions/unrouted_events``)
=========================  ====================================================================

Example
-------
>>> env = StepEnvironment.from_environ({"POWERTOOLS_SERVICE_NAME": "text-pipeline-embed",
...                                     "POWERTOOLS_METRICS_NAMESPACE": "Inferbus", "INFERBUS_MODELS": "minilm-l6-int8"})
>>> env.INFERBUS_MODELS
('minilm-l6-int8',)
>>> ConsumerEnvironment.from_environ({"POWERTOOLS_SERVICE_NAME": "x"})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
inferbus_lambda.errors.ConfigurationError: x: the function's environment is incomplete or wrong ...
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar

from .errors import ConfigurationError

__all__ = ["AcceptEnvironment", "ConsumerEnvironment", "ExecutionFailuresEnvironment", "FunctionEnvironment",
           "IngestEnvironment", "StepEnvironment",
           "UnroutedEnvironment"]

# Plain dataclasses, not pydantic models: every function validates its environment at init, and
# importing pydantic and building a validator cost a step more than the whole of the rest of the
# kit's init (bench/speed.py --cold). The checks and their messages are pydantic's lax ones.


class _Invalid(ValueError):
    """One variable's problem, worded as pydantic words it."""


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise _Invalid("Input should be a valid string")
    return value


def _nonempty_text(value: Any) -> str:
    if not _text(value):
        raise _Invalid("String should have at least 1 character")
    return value


def _positive_int(value: Any) -> int:
    """An int of at least 1, from an int or its decimal text (``" 60 "``, ``"1_000"``, ``"60.0"``, as pydantic reads them)."""
    number: Any = value
    if isinstance(value, str):
        text = value.strip()
        try:
            number = int(text)
        except ValueError:
            whole, dot, zeros = text.partition(".")
            number = int(whole) if dot and whole.lstrip("+-").isdigit() and set(zeros) <= {"0"} else None
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    if not isinstance(number, int):
        raise _Invalid("Input should be a valid integer, unable to parse string as an integer"
                       if isinstance(value, str) else "Input should be a valid integer")
    if number < 1:
        raise _Invalid("Input should be greater than or equal to 1")
    return int(number)


def _positive_number(value: Any) -> float:
    """A number above 0, from a number or its decimal text (``"2.5"``, as pydantic reads a float)."""
    number: Any = value
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise _Invalid("Input should be a valid number, unable to parse string as a number") from None
    if isinstance(number, bool) or not isinstance(number, int | float) or math.isnan(number):
        raise _Invalid("Input should be a valid number")
    if number <= 0:
        raise _Invalid("Input should be greater than 0")
    return float(number)


def _optional(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else check(value)


def _names(value: Any) -> tuple[str, ...]:
    """Names from a comma-separated text, or from a sequence of texts."""
    if isinstance(value, str):
        return tuple(name.strip() for name in value.split(",") if name.strip())
    if not isinstance(value, list | tuple):
        raise _Invalid("Input should be a valid tuple")
    return tuple(_text(name) for name in value)


def variable(check: Callable[[Any], Any], default: Any = MISSING) -> Any:
    """An environment variable: ``check`` validates (and converts) its value; no ``default``: required."""
    return field(default=default, metadata={"check": check})


@dataclass(frozen=True, kw_only=True)
class FunctionEnvironment:
    """What every inferbus function reads.

    Attributes
    ----------
    POWERTOOLS_SERVICE_NAME
        The component (and step) the function belongs to: logs, metrics and traces carry it.
    POWERTOOLS_METRICS_NAMESPACE
        The CloudWatch namespace of its EMF metrics.
    POWERTOOLS_LOG_LEVEL
        ``INFO`` unless you change it.
    INFERBUS_MODELS
        The models it loads, by their names in ``models/manifest.json`` (comma-separated).
    """

    # Variables the Lambda service or an AWS tool sets, never inferbus's stack: the template
    # check (tests/infra) allows them beside the model's own fields.
    PLATFORM_VARIABLES: ClassVar[frozenset[str]] = frozenset({
        "AWS_LAMBDA_EXEC_WRAPPER", "AWS_FIS_CONFIGURATION_LOCATION", "AWS_FIS_POLL_MAX_WAIT_MILLISECONDS",
    })

    POWERTOOLS_SERVICE_NAME: str = variable(_nonempty_text)
    POWERTOOLS_METRICS_NAMESPACE: str = variable(_nonempty_text)
    POWERTOOLS_LOG_LEVEL: str = variable(_text, "INFO")
    INFERBUS_MODELS: tuple[str, ...] = variable(_names, ())

    def __post_init__(self) -> None:
        values, problems = self._checked({item.name: getattr(self, item.name) for item in fields(self)})
        if problems:
            raise ValueError(f"{type(self).__name__}: {'; '.join(problems)}")
        for name, value in values.items():
            object.__setattr__(self, name, value)  # the converted value (frozen: set once, here)

    @classmethod
    def variable_names(cls) -> frozenset[str]:
        """The names of the variables it reads."""
        return frozenset(item.name for item in fields(cls))

    @classmethod
    def _checked(cls, environ: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """Each variable's converted value, and a ``"NAME: problem"`` per missing or malformed one (in
        declaration order); variables it does not read are ignored."""
        values, problems = {}, []
        for item in fields(cls):
            if item.name not in environ:
                if item.default is MISSING:
                    problems.append(f"{item.name}: Field required")
                continue
            try:
                values[item.name] = item.metadata["check"](environ[item.name])
            except _Invalid as error:
                problems.append(f"{item.name}: {error}")
        return values, problems

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> FunctionEnvironment:
        """Validate ``environ`` (default ``os.environ``).

        Raises
        ------
        ConfigurationError
            Naming every missing or malformed variable, on one line.
        """
        environ = os.environ if environ is None else environ
        values, problems = cls._checked(environ)
        if problems:
            service = environ.get("POWERTOOLS_SERVICE_NAME", "this function")
            raise ConfigurationError(f"{service}: the function's environment is incomplete or wrong ({cls.__name__}): "
                                     f"{'; '.join(problems)}. The CDK stack sets it; redeploy, or see docs/extending.md")
        return cls(**values)

    def as_variables(self) -> dict[str, str]:
        """The Lambda ``Environment.Variables`` (strings; lists comma-separated; unset values left out)."""
        variables = {}
        for item in fields(self):
            value = getattr(self, item.name)
            if value is None or value == ():
                continue
            variables[item.name] = ",".join(value) if isinstance(value, tuple) else str(value)
        return variables


@dataclass(frozen=True, kw_only=True)
class StepEnvironment(FunctionEnvironment):
    """A workflow step: it returns its answer to the state machine and publishes nothing itself."""


@dataclass(frozen=True, kw_only=True)
class ClaimsEnvironment(FunctionEnvironment):
    """A function that claims event ids in the idempotency table.

    Attributes
    ----------
    IDEMPOTENCY_TABLE_NAME
        The table (partition key ``id``, TTL attribute ``expiration``).
    IDEMPOTENCY_TTL_SECONDS
        How long a completed claim suppresses duplicates.
    CLAIM_STORE
        Which claims store keeps them (``inferbus_lambda.claims.CLAIM_STORES``). Default ``dynamodb``.
    REDIS_ENDPOINT
        ``redis`` store: the server (``host:port``); TLS unless it is a loopback address.
    REDIS_USER, REDIS_CACHE_NAME
        ``redis`` store: the ElastiCache user and serverless cache that IAM authentication signs for
        (both unset: no authentication, as a local server).
    """

    IDEMPOTENCY_TABLE_NAME: str = variable(_nonempty_text)
    IDEMPOTENCY_TTL_SECONDS: int = variable(_positive_int)
    CLAIM_STORE: str = variable(_nonempty_text, "dynamodb")
    REDIS_ENDPOINT: str | None = variable(_optional(_text), None)
    REDIS_USER: str | None = variable(_optional(_text), None)
    REDIS_CACHE_NAME: str | None = variable(_optional(_text), None)


@dataclass(frozen=True, kw_only=True)
class AcceptEnvironment(ClaimsEnvironment):
    """The workflows' first step: it validates the input event and claims its id for the execution."""


@dataclass(frozen=True, kw_only=True)
class ConsumerEnvironment(ClaimsEnvironment):
    """A queue consumer: batches in, one result event per valid record out.

    Attributes
    ----------
    EVENT_BUS_NAME
        Where results are published.
    RESULT_SOURCE
        The ``source`` of its results (reserved to this function's role on the bus).
    CONSUMES, PRODUCES
        The event type it takes, and the type of its results.
    INVALID_EVENTS_QUEUE_URL
        Where records that break their contract are kept with the reason; unset: such
        records fail and are retried until the DLQ takes them.
    DEAD_LETTER_QUEUE_URL, MAX_RECEIVE_COUNT
        The consumer's DLQ and its queue's ``maxReceiveCount``: a record that fails on its last
        receive is sent there by the consumer itself, with its reason as message attributes
        (SQS's own redrive would move it without one). Unset: SQS moves it, reason unknown.
    RECORD_SOURCE
        The channel its records come from (``inferbus_lambda.sources.RECORD_SOURCES``). Default ``sqs``.
    MAX_EVENTS_PER_SECOND
        Events per second all its invocations take together (``inferbus_lambda.rate_limit``); unset: no rate.
    INFERBUS_STATE_TABLES
        The state tables it reads, a JSON object: declared name -> ``{"table": physical name,
        "cache_s": seconds}`` (``inferbus_lambda.state``). Unset: it reads none.
    """

    EVENT_BUS_NAME: str = variable(_nonempty_text)
    RESULT_SOURCE: str = variable(_nonempty_text)
    CONSUMES: str = variable(_nonempty_text)
    PRODUCES: str = variable(_nonempty_text)
    INVALID_EVENTS_QUEUE_URL: str | None = variable(_optional(_text), None)
    DEAD_LETTER_QUEUE_URL: str | None = variable(_optional(_text), None)
    MAX_RECEIVE_COUNT: int | None = variable(_optional(_positive_int), None)
    RECORD_SOURCE: str = variable(_nonempty_text, "sqs")
    MAX_EVENTS_PER_SECOND: float | None = variable(_optional(_positive_number), None)
    INFERBUS_STATE_TABLES: str | None = variable(_optional(_text), None)


@dataclass(frozen=True, kw_only=True)
class IngestEnvironment(FunctionEnvironment):
    """The HTTP ingest endpoint: validates a CloudEvent and puts it on the bus.

    Attributes
    ----------
    EVENT_BUS_NAME
        Where accepted events go.
    RESERVED_SOURCES
        The ``source`` of every inferbus producer (comma-separated): an outside producer may not use them.
    """

    EVENT_BUS_NAME: str = variable(_nonempty_text)
    RESERVED_SOURCES: tuple[str, ...] = variable(_names, ())


@dataclass(frozen=True, kw_only=True)
class ExecutionFailuresEnvironment(FunctionEnvironment):
    """A workflow's net: its executions that ended outside the protocol, reported and kept.

    Attributes
    ----------
    WORKFLOW_NAME, FAILURE_TYPE, RESULT_SOURCE
        The workflow, the type of its failure event and its ``source`` (reserved to the workflow's
        state machine and to this function on the bus).
    EVENT_BUS_NAME
        Where the failure events go.
    INVALID_EVENTS_QUEUE_URL
        Where each such execution's status change (its input inside) is kept with the reason.
    """

    WORKFLOW_NAME: str = variable(_nonempty_text)
    FAILURE_TYPE: str = variable(_nonempty_text)
    RESULT_SOURCE: str = variable(_nonempty_text)
    EVENT_BUS_NAME: str = variable(_nonempty_text)
    INVALID_EVENTS_QUEUE_URL: str = variable(_nonempty_text)


@dataclass(frozen=True, kw_only=True)
class UnroutedEnvironment(FunctionEnvironment):
    """The unrouted-events check: every event on the bus, checked against the bus's rules.

    Attributes
    ----------
    EVENT_BUS_NAME
        The bus whose rules it reads (``events:ListRules``, ``events:DescribeRule``, ``events:ListTargetsByRule``): every
        enabled rule with a target counts, the stack's or another application's on the same bus.
    CATCH_ALL_RULE_NAME
        Its own catch-all rule, which takes every event and so does not count.
    RESULT_SOURCES
        The sources of the pipeline's producers (comma-separated): their events are results,
        taken or not.
    REJECTED_BY
        The name it signs the rejections it keeps with (it publishes nothing on the bus).
    INVALID_EVENTS_QUEUE_URL
        Where an unrouted event is kept, with the reason.
    """

    EVENT_BUS_NAME: str = variable(_nonempty_text)
    CATCH_ALL_RULE_NAME: str = variable(_text, "")
    RESULT_SOURCES: tuple[str, ...] = variable(_names, ())
    REJECTED_BY: str = variable(_nonempty_text)
    INVALID_EVENTS_QUEUE_URL: str = variable(_nonempty_text)
