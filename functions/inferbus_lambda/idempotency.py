"""Exactly-once claims on events, keyed by the CloudEvent ``id``, in DynamoDB.

Built on Powertools' ``DynamoDBPersistenceLayer`` (conditional writes, expiry,
payload validation), used record by record so that a whole SQS batch can be
claimed first and then scored in ONE inference call. The ``idempotent``
decorators wrap one function call each, which would force one inference per
record.

A claim is INPROGRESS until :meth:`EventClaims.complete` (result published) or
:meth:`EventClaims.release` (processing failed, so a retry may claim it again).
An INPROGRESS claim left by a crashed invocation expires with that invocation's
remaining time, so a redelivery after the timeout can claim it.

Example
-------
>>> claims = EventClaims("idempotency-table", scope="image_classifier")  # doctest: +SKIP
>>> claims.claim(event, remaining_ms=context.get_remaining_time_in_millis())  # doctest: +SKIP
<ClaimStatus.CLAIMED: 'claimed'>
"""

from __future__ import annotations

import enum
from typing import Any

from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, IdempotencyConfig
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyItemAlreadyExistsError,
    IdempotencyValidationError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import STATUS_CONSTANTS

from .contracts.core import CloudEvent

__all__ = ["ClaimStatus", "EventClaims"]


class ClaimStatus(enum.Enum):
    CLAIMED = "claimed"
    """This invocation owns the event: process it, then complete or release."""
    ALREADY_DONE = "already_done"
    """A result was published before (a duplicate delivery): skip it, report success."""
    IN_PROGRESS = "in_progress"
    """Another invocation holds it: report failure so SQS redelivers it later."""
    CONFLICT = "conflict"
    """Same id as a processed event but different data: a bad event, never processed."""


class EventClaims:
    """Claims on events in the idempotency table.

    Parameters
    ----------
    table_name
        The DynamoDB table (partition key ``id``, TTL attribute ``expiration``).
    scope
        Prefix of the keys, so consumers sharing a table do not collide.
    expires_after_seconds
        How long a completed claim suppresses duplicates. Default 1 hour,
        longer than SQS redelivery and EventBridge retry windows of a healthy queue.
    client
        A boto3 DynamoDB client; default, a new one.
    """

    def __init__(self, table_name: str, *, scope: str, expires_after_seconds: int = 3600, client: Any = None) -> None:
        if client is None:  # from the default session: Powertools would build a Session of its own (~50 ms more)
            import boto3

            client = boto3.client("dynamodb")
        self.store = DynamoDBPersistenceLayer(table_name=table_name, boto3_client=client)
        self.store.configure(
            IdempotencyConfig(
                event_key_jmespath="id",
                payload_validation_jmespath="data",
                raise_on_no_idempotency_key=True,
                expires_after_seconds=expires_after_seconds,
            ),
            key_prefix=scope,
        )

    @staticmethod
    def _payload(event: CloudEvent[Any]) -> dict[str, Any]:
        return {"id": event.id, "data": event.data.model_dump(mode="json")}

    def claim(self, event: CloudEvent[Any], *, remaining_ms: int | None) -> ClaimStatus:
        """Try to own ``event``; ``remaining_ms`` bounds how long an INPROGRESS claim holds."""
        payload = self._payload(event)
        try:
            self.store.save_inprogress(payload, remaining_time_in_millis=remaining_ms)
        except IdempotencyValidationError:
            return ClaimStatus.CONFLICT
        except IdempotencyItemAlreadyExistsError as existing:
            try:
                record = existing.old_data_record or self.store.get_record(payload)
            except IdempotencyValidationError:
                return ClaimStatus.CONFLICT
            if record is not None and record.status == STATUS_CONSTANTS["COMPLETED"]:
                return ClaimStatus.ALREADY_DONE
            return ClaimStatus.IN_PROGRESS
        return ClaimStatus.CLAIMED

    def complete(self, event: CloudEvent[Any], result: dict[str, Any]) -> None:
        """Mark ``event`` done, storing a small ``result`` (e.g. the id of the event published)."""
        self.store.save_success(self._payload(event), result)

    def key(self, event_id: str) -> str:
        """The table key of ``event_id``'s claim (the claim is keyed by the event id alone)."""
        return self.store._get_hashed_idempotency_key({"id": event_id})  # noqa: SLF001 - Powertools' own hashing

    def release(self, event: CloudEvent[Any], error: Exception) -> None:
        """Give the claim back after a failure, so a redelivery can process ``event``."""
        self.store.delete_record(self._payload(event), error)

    def accept_once(self, event: CloudEvent[Any], *, owner: str, remaining_ms: int | None) -> ClaimStatus:
        """Claim and complete at once, recording ``owner``: for workflows, which own an event
        from the moment they accept it (their failure path reports what happens next).

        ``owner`` (e.g. the execution ARN) asking again, as a retried step does, gets
        ``CLAIMED`` again; anyone else gets ``ALREADY_DONE``.
        """
        status = self.claim(event, remaining_ms=remaining_ms)
        if status is ClaimStatus.CLAIMED:
            self.complete(event, {"owner": owner})
        elif status is ClaimStatus.ALREADY_DONE:
            record = self.store.get_record(self._payload(event))
            if record is not None and (record.response_json_as_dict() or {}).get("owner") == owner:
                return ClaimStatus.CLAIMED
        return status
