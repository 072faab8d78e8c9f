"""The first step of every workflow: validate the input event and own it exactly once.

A state machine gets the EventBridge event as its input. Its ``Accept`` task calls
:func:`accept` with a small request that the ASL writes::

    {"event.$": "$", "workflow": "text-pipeline", "types": ["TextSubmitted"],
     "emits": ["TextAnalyzed"], "result_source": "inferbus.text-pipeline",
     "execution.$": "$$.Execution.Id"}

A workflow whose input is another producer's result also names ``sources``: the only
``source`` values it accepts, so a forged result is rejected even if it reaches the workflow.

and branches on the answer's ``status``:

============  ===============================================================
status        what the workflow does next
============  ===============================================================
``accepted``  its work; ``result_ids`` are the ids of the events it will emit
``duplicate`` nothing: another execution owns this event (at-least-once delivery)
``rejected``  emits its ``...Failed`` event with ``error`` and ``reason``
============  ===============================================================

Every answer carries ``failure``: the id, input id and correlation id its failure event
will use, so each failure path can emit one without reading the (maybe broken) input.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from .claims import ClaimStatus, ClaimStore
from .contracts.core import CloudEvent, from_eventbridge_event, is_identifier, result_event_id
from .errors import IdConflictError, InvalidEventError, TransientError

__all__ = ["AcceptRequest", "accept"]

AcceptRequest = Mapping[str, Any]


def _identifier_or_none(value: Any) -> str | None:
    return value if is_identifier(value) else None


def failure_context(event_id: str | None, correlationid: str | None, result_source: str,
                    input_source: str | None) -> dict[str, Any]:
    """Ids for the failure event: derived from the input's source and id when the id is readable."""
    failure_id = (result_event_id(event_id, f"{result_source}:failed", input_source=input_source) if event_id
                  else str(uuid.uuid4()))
    return {"id": failure_id, "input_id": event_id, "correlationid": correlationid or failure_id, "subject": event_id}


def _raw_attribute(event: Any, name: str) -> Any:
    detail = event.get("detail") if isinstance(event, Mapping) else None
    return detail.get(name) if isinstance(detail, Mapping) else None


def _rejected(request: AcceptRequest, error: str, reason: str, event_id: str | None, correlationid: str | None) -> dict[str, Any]:
    source = _raw_attribute(request["event"], "source")
    return {
        "status": "rejected",
        "error": error,
        "reason": reason,
        "event": None,
        "result_ids": {},
        "failure": failure_context(event_id, correlationid, request["result_source"],
                                   source if isinstance(source, str) else None),
    }


def accept(request: AcceptRequest, claims: ClaimStore) -> dict[str, Any]:
    """Validate ``request["event"]`` against the contracts and claim its id for this execution,
    in one conditional write (:meth:`~.claims.ClaimStore.accept_once`): no in-progress claim is left
    for a crash to strand.

    Raises
    ------
    TransientError
        When a consumer-style in-progress claim holds the id: retry shortly.
    """
    raw = request["event"]
    types: Sequence[str] = request["types"]
    try:
        event: CloudEvent[Any] = from_eventbridge_event(raw)
        if event.type not in types:
            raise InvalidEventError(f"type: this workflow takes {', '.join(types)}, not {event.type!r}", event.id)
        sources = request.get("sources")
        if sources and event.source not in sources:
            raise InvalidEventError(f"source: {event.type} is accepted only from {', '.join(sources)}, "
                                    f"not {event.source!r}", event.id)
    except InvalidEventError as invalid:
        event_id = _identifier_or_none(invalid.event_id)
        return _rejected(request, InvalidEventError.__name__, invalid.reason, event_id,
                         _identifier_or_none(_raw_attribute(raw, "correlationid")))

    status = claims.accept_once(event, owner=request["execution"])
    if status is ClaimStatus.IN_PROGRESS:
        raise TransientError(f"event {event.id} is being accepted by another execution")
    if status is ClaimStatus.CONFLICT:
        return _rejected(request, IdConflictError.__name__, IdConflictError.REASON, event.id, event.correlationid)
    source = request["result_source"]
    return {
        "status": "accepted" if status is ClaimStatus.CLAIMED else "duplicate",
        "error": None,
        "reason": None,
        "event": event.model_dump(mode="json"),
        "result_ids": {emitted: result_event_id(event.id, f"{source}:{emitted}", input_source=event.source)
                       for emitted in request.get("emits", ())},
        "failure": failure_context(event.id, event.correlationid, source, event.source),
    }
