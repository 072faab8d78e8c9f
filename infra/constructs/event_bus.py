"""The inferbus event bus, its archive, and the resource policy that guards who may put what on it.

Secure defaults
---------------
- A custom bus whose resource policy denies ``events:PutEvents`` to every principal outside
  this account (``aws:PrincipalAccount``). A custom bus without a policy already refuses other
  accounts; the explicit deny keeps it so even if someone later adds an allow statement.
- :meth:`InferbusBus.restrict_sources` reserves each internal ``source`` to the one role that
  produces it. The role carries an IAM tag ``inferbus-source`` = that source, and two statements
  (however many producers there are) deny a PutEvents that carries a reserved source from a
  principal without the tag, or that carries any source other than the caller's tag next to a
  reserved one. An in-account caller cannot forge a result that starts a review or an approval,
  and no producer can put another's results.
- Who can still forge a source: whoever may act as its producer role (pass it to a function, or
  assume it), and whoever may put the ``inferbus-source`` tag on a principal they use:
  ``iam:TagRole`` / ``iam:TagUser`` on that principal, or a session tag with that key
  (``sts:TagSession`` when assuming a role, or an identity provider's ``PrincipalTag``
  attribute; a session tag replaces the role's tag of the same key). No role of the stack is
  granted any of these; guard them account-wide (an SCP or permissions boundary denying them
  when ``aws:TagKeys`` holds ``inferbus-source``) where people hold broad IAM rights.
- The policy holds only ``Deny`` statements: it can take access away, never grant it. Producers
  still need their own ``events:PutEvents`` grant (``bus.grant_put_events_to``).
- Every event of the account is archived for ``archive_retention_days`` so any window can be
  replayed (encrypted by EventBridge with an AWS owned key).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from aws_cdk import Duration, Stack, Tags
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from constructs import Construct

from inferbus.model.names import SOURCE_TAG

PUT_EVENTS = "events:PutEvents"
PRINCIPAL_SOURCE = f"${{aws:PrincipalTag/{SOURCE_TAG}}}"
"""The caller's tag, as an IAM policy variable (resolved per request)."""
# IAM tag values: up to 256 of these characters. It also keeps wildcards (* ?) and $ out of the
# names the policy lists and compares with StringNotLike.
_TAG_VALUE = re.compile(r"[A-Za-z0-9 _.:/=+\-@]{1,256}")


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
            (a Lambda function's execution role, a state machine's role). Each role is made in
            this app (it gets the ``inferbus-source`` tag) and produces one source.

        Each role is tagged ``inferbus-source`` = its source, and two ``Deny`` statements cover
        every producer, so the policy grows only by the list of reserved names (twice), not by
        a statement per producer (EventBridge's default policy quota is 10,240 characters):

        - ``events:source`` holds a reserved source (``ForAnyValue:StringEquals``, so one
          forged entry among several is enough) and the caller has no ``inferbus-source`` tag
          (``Null``);
        - ``events:source`` holds a reserved source and any of its sources is not the caller's
          tag (``ForAnyValue:StringNotLike`` against ``${aws:PrincipalTag/inferbus-source}``).

        A producer may put its own source, alone or repeated; never another's, nor anything
        next to a reserved source. Call it once, after every producer exists.
        """
        # What this rests on (AWS documentation):
        # - policy variables are allowed in resource policies and in the values of string
        #   conditions (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_variables.html,
        #   "Where you can use policy variables"); EventBridge's conditions take them
        #   (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-use-conditions.html);
        # - only single-valued keys can be variables (aws:PrincipalTag/<key> is; events:source,
        #   ArrayOfString, is not), and a multivalued key compared with a variable takes the
        #   StringLike family (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-single-vs-multi-valued-context-keys.html);
        # - a variable whose key is absent does not match and may make its statement invalid
        #   (the variables page): statement 2 (Null) denies the untagged caller on its own;
        # - a role session's aws:PrincipalTag holds the role's tags, and session tags replace
        #   a role tag with the same key (https://docs.aws.amazon.com/IAM/latest/UserGuide/id_session-tags.html).
        if self.reserved_sources:
            raise ValueError(f"{self.node.path}: sources already restricted to {sorted(self.reserved_sources)}")
        if not producers:
            raise ValueError(f"{self.node.path}: restrict_sources needs at least one source and its producer")
        for source in producers:
            if not source or source.startswith("aws."):
                raise ValueError(f"{self.node.path}: {source!r} is not a custom source (aws.* belongs to AWS)")
            if not _TAG_VALUE.fullmatch(source):
                raise ValueError(f"{self.node.path}: {source!r} cannot be reserved: an IAM tag value holds at most "
                                 "256 letters, digits, spaces and _ . : / = + - @ (no wildcard or $)")
        sources_of_role: dict[str, list[str]] = {}
        for source, role in producers.items():
            if not isinstance(role.node.default_child, iam.CfnRole):
                raise TypeError(f"{self.node.path}: the producer of {source!r} is not a role made in this app "
                                f"({role.node.path}): it cannot be given the {SOURCE_TAG!r} tag")
            sources_of_role.setdefault(role.node.path, []).append(source)
        shared = {path: sorted(sources) for path, sources in sources_of_role.items() if len(sources) > 1}
        if shared:
            raise ValueError(f"{self.node.path}: a role carries one {SOURCE_TAG!r} tag, but {shared} would produce "
                             "several sources: give each source a role of its own")
        for source, role in producers.items():
            Tags.of(role).add(SOURCE_TAG, source)
        reserved = {"ForAnyValue:StringEquals": {"events:source": sorted(producers)}}
        self._statements += [
            iam.PolicyStatement(
                sid="ReservedSourcesNeedAProducerTag",
                effect=iam.Effect.DENY,
                principals=[iam.StarPrincipal()],
                actions=[PUT_EVENTS],
                resources=[self.bus_arn_for_policy],
                conditions={**reserved, "Null": {f"aws:PrincipalTag/{SOURCE_TAG}": "true"}},
            ),
            iam.PolicyStatement(
                sid="ProducersPutOnlyTheirOwnSource",
                effect=iam.Effect.DENY,
                principals=[iam.StarPrincipal()],
                actions=[PUT_EVENTS],
                resources=[self.bus_arn_for_policy],
                conditions={**reserved, "ForAnyValue:StringNotLike": {"events:source": PRINCIPAL_SOURCE}},
            ),
        ]
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

