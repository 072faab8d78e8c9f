"""InferbusBus on a bare Stack: the archive, and a resource policy that only ever denies."""

from __future__ import annotations

import pytest
from aws_cdk import aws_iam as iam

from infra.constructs.event_bus import InferbusBus


def test_the_bus_is_archived_and_its_policy_denies_other_accounts_and_forged_sources(synth):
    def build(stack):
        bus = InferbusBus(stack, "Bus", bus_name="bare-bus", archive_retention_days=30)
        roles = {source: iam.Role(stack, f"Role{n}", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
                 for n, source in enumerate(("inferbus.a", "inferbus.b"))}
        bus.restrict_sources(roles)

    template = synth(build)
    template.has_resource_properties("AWS::Events::Archive", {"RetentionDays": 30})
    (bus,) = template.find_resources("AWS::Events::EventBus").values()
    statements = bus["Properties"]["Policy"]["Statement"]
    assert {s["Effect"] for s in statements} == {"Deny"}  # it can take access away, never grant it
    assert [s["Sid"] for s in statements] == ["DenyPutEventsFromOtherAccounts", "OnlyItsProducerPutsInferbusA",
                                              "OnlyItsProducerPutsInferbusB"]
    forged = statements[1]["Condition"]
    assert forged["ForAnyValue:StringEquals"] == {"events:source": ["inferbus.a"]} and "ArnNotEquals" in forged


@pytest.mark.parametrize(("producers", "says"), [({}, "needs at least one source"), ({"aws.s3": None}, "aws.* belongs to AWS")])
def test_a_source_that_cannot_be_reserved_is_refused_naming_it(synth, producers, says):
    with pytest.raises(ValueError, match=says):
        synth(lambda stack: InferbusBus(stack, "Bus", bus_name="b", archive_retention_days=1).restrict_sources(producers))
