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

import os
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from .errors import ConfigurationError

__all__ = ["AcceptEnvironment", "ConsumerEnvironment", "ExecutionFailuresEnvironment", "FunctionEnvironment",
           "IngestEnvironment", "StepEnvironment",
           "UnroutedEnvironment"]


def _names(value: Any) -> Any:
    if isinstance(value, str):
        return tuple(name.strip() for name in value.split(",") if name.strip())
    return value


ModelNames = Annotated[tuple[str, ...], BeforeValidator(_names)]


class FunctionEnvironment(BaseModel):
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

    # defer_build: a function builds the validator of its own environment model only, when it reads it.
    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)
    # Variables the Lambda service or an AWS tool sets, never inferbus's stack: the template
    # check (tests/infra) allows them beside the model's own fields.
    PLATFORM_VARIABLES: ClassVar[frozenset[str]] = frozenset({
        "AWS_LAMBDA_EXEC_WRAPPER", "AWS_FIS_CONFIGURATION_LOCATION", "AWS_FIS_POLL_MAX_WAIT_MILLISECONDS",
    })

    POWERTOOLS_SERVICE_NAME: Annotated[str, Field(min_length=1)]
    POWERTOOLS_METRICS_NAMESPACE: Annotated[str, Field(min_length=1)]
    POWERTOOLS_LOG_LEVEL: str = "INFO"
    INFERBUS_MODELS: ModelNames = ()

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> FunctionEnvironment:
        """Validate ``environ`` (default ``os.environ``).

        Raises
        ------
        ConfigurationError
            Naming every missing or malformed variable, on one line.
        """
        environ = os.environ if environ is None else environ
        try:
            return cls.model_validate(dict(environ))
        except ValidationError as error:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors(include_url=False))
            service = environ.get("POWERTOOLS_SERVICE_NAME", "this function")
            raise ConfigurationError(f"{service}: the function's environment is incomplete or wrong ({cls.__name__}): "
                                     f"{problems}. The CDK stack sets it; redeploy, or see docs/extending.md") from None

    def as_variables(self) -> dict[str, str]:
        """The Lambda ``Environment.Variables`` (strings; lists comma-separated; unset values left out)."""
        variables = {}
        for name, value in self.model_dump().items():
            if value is None or value == ():
                continue
            variables[name] = ",".join(value) if isinstance(value, tuple) else str(value)
        return variables


class StepEnvironment(FunctionEnvironment):
    """A workflow step: it returns its answer to the state machine and publishes nothing itself."""


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
    """

    IDEMPOTENCY_TABLE_NAME: Annotated[str, Field(min_length=1)]
    IDEMPOTENCY_TTL_SECONDS: Annotated[int, Field(ge=1)]
    CLAIM_STORE: Annotated[str, Field(min_length=1)] = "dynamodb"


class AcceptEnvironment(ClaimsEnvironment):
    """The workflows' first step: it validates the input event and claims its id for the execution."""


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
    INFERBUS_STATE_TABLES
        The state tables it reads, a JSON object: declared name -> ``{"table": physical name,
        "cache_s": seconds}`` (``inferbus_lambda.state``). Unset: it reads none.
    """

    EVENT_BUS_NAME: Annotated[str, Field(min_length=1)]
    RESULT_SOURCE: Annotated[str, Field(min_length=1)]
    CONSUMES: Annotated[str, Field(min_length=1)]
    PRODUCES: Annotated[str, Field(min_length=1)]
    INVALID_EVENTS_QUEUE_URL: str | None = None
    DEAD_LETTER_QUEUE_URL: str | None = None
    MAX_RECEIVE_COUNT: Annotated[int, Field(ge=1)] | None = None
    RECORD_SOURCE: Annotated[str, Field(min_length=1)] = "sqs"
    INFERBUS_STATE_TABLES: str | None = None


class IngestEnvironment(FunctionEnvironment):
    """The HTTP ingest endpoint: validates a CloudEvent and puts it on the bus.

    Attributes
    ----------
    EVENT_BUS_NAME
        Where accepted events go.
    RESERVED_SOURCES
        The ``source`` of every inferbus producer (comma-separated): an outside producer may not use them.
    """

    EVENT_BUS_NAME: Annotated[str, Field(min_length=1)]
    RESERVED_SOURCES: ModelNames = ()


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

    WORKFLOW_NAME: Annotated[str, Field(min_length=1)]
    FAILURE_TYPE: Annotated[str, Field(min_length=1)]
    RESULT_SOURCE: Annotated[str, Field(min_length=1)]
    EVENT_BUS_NAME: Annotated[str, Field(min_length=1)]
    INVALID_EVENTS_QUEUE_URL: Annotated[str, Field(min_length=1)]


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

    EVENT_BUS_NAME: Annotated[str, Field(min_length=1)]
    CATCH_ALL_RULE_NAME: str = ""
    RESULT_SOURCES: ModelNames = ()
    REJECTED_BY: Annotated[str, Field(min_length=1)]
    INVALID_EVENTS_QUEUE_URL: Annotated[str, Field(min_length=1)]
