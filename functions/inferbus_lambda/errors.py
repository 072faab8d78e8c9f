"""The errors that cross layers, named once: handlers raise them, the stack routes on their names,
the state machines retry on them and the tools report them.

========================  =====================================================================
error                     meaning
========================  =====================================================================
``InvalidEventError``     an event breaks its contract: a retry would fail the same way, so it
                          goes to the invalid-events destination with the reason
``IdConflictError``       an event reuses the id of an earlier event with other data
``UnroutedEventError``    the bus carried an event that no rule takes (and that is no result)
``TransientError``        a failure worth retrying (Step Functions retriers match this name)
``ConfigurationError``    a function's environment is incomplete or wrong: fix the deployment
========================  =====================================================================

Example
-------
>>> REJECTION_ERRORS
('InvalidEventError', 'IdConflictError')
>>> str(InvalidEventError("data.pixels: too short", "img-7"))
'event img-7: data.pixels: too short'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

__all__ = ["ConfigurationError", "IdConflictError", "InvalidEventError", "REJECTION_ERRORS", "TransientError",
           "UnroutedEventError", "registered"]


class InvalidEventError(ValueError):
    """An event that does not meet its contract.

    Parameters
    ----------
    reason
        What is wrong, naming the field (``data.pixels.3: Input should be ...``).
    event_id
        The event's ``id`` when it could be read, else ``None``.
    """

    def __init__(self, reason: str, event_id: str | None = None) -> None:
        super().__init__(reason if event_id is None else f"event {event_id}: {reason}")
        self.reason = reason
        self.event_id = event_id


class IdConflictError(InvalidEventError):
    """An event whose id an earlier event with different data already used: never processed."""

    REASON = "id already used by an event with different data"

    def __init__(self, event_id: str | None = None) -> None:
        super().__init__(self.REASON, event_id)


class UnroutedEventError(InvalidEventError):
    """A valid event that no rule of the bus takes: nothing would ever process it."""


class TransientError(Exception):
    """A failure worth retrying. Step Functions retriers match it by this class name."""


T = TypeVar("T")


class ConfigurationError(RuntimeError):
    """A function's configuration (its environment, its models) is missing or wrong."""


def registered(registry: Mapping[str, T], variable: str, name: str, *, service: str, what: str) -> T:
    """The implementation ``registry`` holds under ``name`` (an environment variable's value: ``CLAIM_STORE``,
    ``RECORD_SOURCE``), or a :class:`ConfigurationError` naming the known ones.

    >>> registered({"sqs": 1}, "RECORD_SOURCE", "kafka", service="scorer", what="record source")
    Traceback (most recent call last):
    ...
    inferbus_lambda.errors.ConfigurationError: scorer: RECORD_SOURCE='kafka' names no record source; known: sqs
    """
    if name not in registry:
        known = ", ".join(sorted(registry))
        raise ConfigurationError(f"{service}: {variable}={name!r} names no {what}; known: {known}")
    return registry[name]


# The errors that mean "the input was refused": such inputs wait in the invalid-events destination.
REJECTION_ERRORS = (InvalidEventError.__name__, IdConflictError.__name__)
