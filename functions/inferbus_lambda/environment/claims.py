"""The models of the functions that claim event ids: the consumers and the workflows' first step."""

from __future__ import annotations

from dataclasses import dataclass

from .base import FunctionEnvironment, _nonempty_text, _optional, _positive_int, _positive_number, _text, variable

__all__ = ["AcceptEnvironment", "ClaimsEnvironment", "ConsumerEnvironment"]


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
