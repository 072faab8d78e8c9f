"""The inferbus event bus and its archive.

Secure defaults
---------------
- A custom bus: only principals of this account may put events (the default policy of a
  custom bus); nothing is shared with the default bus.
- Every event of the account is archived for ``archive_retention_days`` so any window can be
  replayed (encrypted by EventBridge with an AWS owned key).
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_events as events
from constructs import Construct


class InferbusBus(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, bus_name: str, archive_retention_days: int) -> None:
        super().__init__(scope, construct_id)
        self.bus = events.EventBus(self, "Bus", event_bus_name=bus_name)
        self.archive = self.bus.archive(
            "Archive",
            description=f"Every event on {bus_name}, for replay",
            event_pattern=events.EventPattern(account=[Stack.of(self).account]),
            retention=Duration.days(archive_retention_days),
        )
