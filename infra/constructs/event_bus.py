"""The inferbus event bus, its archive, and the resource policy that guards who may put what on it.

Secure defaults
---------------
- A custom bus whose resource policy denies ``events:PutEvents`` to every principal outside
  this account (``aws:PrincipalAccount``). A custom bus without a policy already refuses other
  accounts; the explicit deny keeps it so even if someone later adds an allow statement.
- :meth:`InferbusBus.restrict_sources` reserves each internal ``source`` to the one role that
  produces it: a PutEvents that carries that source from any other principal is denied, so an
  in-account caller cannot forge a result that starts a review or an approval either.
- The policy holds only ``Deny`` statements: it can take access away, never grant it. Producers
  still need their own ``events:PutEvents`` grant (``bus.grant_put_events_to``).
- Every event of the account is archived for ``archive_retention_days`` so any window can be
  replayed (encrypted by EventBridge with an AWS owned key).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from constructs import Construct

PUT_EVENTS = "events:PutEvents"


class InferbusBus(Construct):
    """Parameters
    ----------
    bus_name
        The custom bus's name.
    archive_retention_days
        How long the archive keeps every event, 1-3,650 days.
    """

    def __init__(self, scope: Construct, construct_id: str, *, bus_name: str, archive_retention_days: int) -> None:
        super().__init__(scope, construct_id)
        self.bus = events.EventBus(self, "Bus", event_bus_name=bus_name)
        self.archive = self.bus.archive(
            "Archive",
            description=f"Every event on {bus_name}, for replay",
            event_pattern=events.EventPattern(account=[Stack.of(self).account]),
            retention=Duration.days(archive_retention_days),
        )
        stack = Stack.of(self)
        # Built from the name, not the bus's own Arn attribute: the policy is a property of
        # the bus, and a resource cannot reference its own attributes.
        self.bus_arn_for_policy = stack.format_arn(service="events", resource="event-bus", resource_name=bus_name)
        self.reserved_sources: dict[str, iam.IRole] = {}
        self._statements = [iam.PolicyStatement(
            sid="DenyPutEventsFromOtherAccounts",
            effect=iam.Effect.DENY,
            principals=[iam.StarPrincipal()],
            actions=[PUT_EVENTS],
            resources=[self.bus_arn_for_policy],
            # aws:PrincipalAccount is in the request context of every request, so this
            # never depends on a key being absent.
            conditions={"StringNotEquals": {"aws:PrincipalAccount": stack.account}},
        )]
        self._apply_policy()

    def restrict_sources(self, producers: Mapping[str, iam.IRole]) -> None:
        """Reserve each ``source`` to its producer: PutEvents with it from anyone else is denied.

        Parameters
        ----------
        producers
            ``{source: role}``: the role whose sessions alone may put events with that source
            (a Lambda function's execution role, a state machine's role).

        Each source gets one ``Deny`` statement: ``events:source`` contains the source
        (``ForAnyValue:StringEquals``, so one forged entry among several is enough) and
        ``aws:PrincipalArn`` is not the producer's role (for a role session the request
        context holds the role's ARN, not the session's). A producer is never denied its own
        source, and no producer may use another's. Call it once, after every producer exists.
        """
        if self.reserved_sources:
            raise ValueError(f"{self.node.path}: sources already restricted to {sorted(self.reserved_sources)}")
        if not producers:
            raise ValueError(f"{self.node.path}: restrict_sources needs at least one source and its producer")
        for source, role in sorted(producers.items()):
            if not source or source.startswith("aws."):
                raise ValueError(f"{self.node.path}: {source!r} is not a custom source (aws.* belongs to AWS)")
            self._statements.append(iam.PolicyStatement(
                sid=f"OnlyItsProducerPuts{_camel(source)}",
                effect=iam.Effect.DENY,
                principals=[iam.StarPrincipal()],
                actions=[PUT_EVENTS],
                resources=[self.bus_arn_for_policy],
                conditions={
                    "ForAnyValue:StringEquals": {"events:source": [source]},
                    "ArnNotEquals": {"aws:PrincipalArn": role.role_arn},
                },
            ))
        self.reserved_sources = dict(producers)
        self._apply_policy()

    @property
    def policy_document(self) -> dict[str, Any]:
        """The bus's resource policy, as the template carries it (with unresolved tokens)."""
        return {"Version": "2012-10-17", "Statement": [s.to_statement_json() for s in self._statements]}

    def _apply_policy(self) -> None:
        # One document on the bus itself (AWS::Events::EventBus Policy), not one
        # AWS::Events::EventBusPolicy per statement: it is replaced as a whole, and
        # EventBusPolicy statement ids must be unique across every stack of the account.
        cfn_bus: events.CfnEventBus = self.bus.node.default_child  # type: ignore[assignment]
        cfn_bus.policy = self.policy_document


def _camel(source: str) -> str:
    """``inferbus.risk-scorer`` -> ``InferbusRiskScorer`` (a Sid is letters and digits only)."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", source) if part)
