"""The models of the functions that serve the bus itself: the ingest endpoint, a workflow's net for
executions that end outside its states, and the unrouted-events check."""

from __future__ import annotations

from dataclasses import dataclass

from .base import FunctionEnvironment, _names, _nonempty_text, _text, variable

__all__ = ["ExecutionFailuresEnvironment", "IngestEnvironment", "UnroutedEnvironment"]


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
