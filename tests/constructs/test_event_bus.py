"""InferbusBus on a bare Stack: the archive, and a resource policy that only ever denies."""

from __future__ import annotations

import pytest
from aws_cdk import aws_iam as iam

from infra.constructs.event_bus import PRINCIPAL_SOURCE, SOURCE_TAG, InferbusBus


def _producers(stack, sources):
    return {source: iam.Role(stack, f"Role{n}", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
            for n, source in enumerate(sources)}


def test_the_bus_is_archived_and_its_policy_denies_other_accounts_and_forged_sources(synth):
    template = synth(lambda stack: InferbusBus(stack, "Bus", bus_name="bare-bus", archive_retention_days=30)
                     .restrict_sources(_producers(stack, ("inferbus.b", "inferbus.a"))))
    template.has_resource_properties("AWS::Events::Archive", {"RetentionDays": 30})
    (bus,) = template.find_resources("AWS::Events::EventBus").values()
    statements = bus["Properties"]["Policy"]["Statement"]
    assert {s["Effect"] for s in statements} == {"Deny"}  # it can take access away, never grant it
    assert [s["Sid"] for s in statements] == ["DenyPutEventsFromOtherAccounts", "ReservedSourcesNeedAProducerTag",
                                              "ProducersPutOnlyTheirOwnSource"]
    reserved = {"events:source": ["inferbus.a", "inferbus.b"]}
    assert statements[1]["Condition"] == {"ForAnyValue:StringEquals": reserved,
                                          "Null": {f"aws:PrincipalTag/{SOURCE_TAG}": "true"}}
    assert statements[2]["Condition"] == {"ForAnyValue:StringEquals": reserved,
                                          "ForAnyValue:StringNotLike": {"events:source": PRINCIPAL_SOURCE}}
    assert PRINCIPAL_SOURCE == "${aws:PrincipalTag/inferbus-source}"
    tags = {role_id: role["Properties"]["Tags"] for role_id, role in template.find_resources("AWS::IAM::Role").items()}
    assert sorted(tags.values(), key=str) == [[{"Key": SOURCE_TAG, "Value": "inferbus.a"}],
                                              [{"Key": SOURCE_TAG, "Value": "inferbus.b"}]]


def test_the_policy_does_not_grow_by_a_statement_per_producer(synth):
    def statements(count):
        sources = [f"inferbus.c{n}" for n in range(count)]
        template = synth(lambda stack: InferbusBus(stack, "Bus", bus_name="b", archive_retention_days=1)
                         .restrict_sources(_producers(stack, sources)))
        (bus,) = template.find_resources("AWS::Events::EventBus").values()
        return bus["Properties"]["Policy"]["Statement"]

    assert len(statements(1)) == len(statements(30)) == 3


@pytest.mark.parametrize(("producers", "says"), [({}, "needs at least one source"), ({"aws.s3": None}, "aws.* belongs to AWS"),
                                                 ({"inferbus.*": None}, "no wildcard or \\$"),
                                                 ({"inferbus.${x}": None}, "no wildcard or \\$")])
def test_a_source_that_cannot_be_reserved_is_refused_naming_it(synth, producers, says):
    with pytest.raises(ValueError, match=says):
        synth(lambda stack: InferbusBus(stack, "Bus", bus_name="b", archive_retention_days=1).restrict_sources(producers))


def test_a_producer_must_be_a_role_of_the_app_that_produces_one_source(synth):
    def imported(stack):
        role = iam.Role.from_role_arn(stack, "Imported", "arn:aws:iam::111111111111:role/elsewhere")
        InferbusBus(stack, "Bus", bus_name="b", archive_retention_days=1).restrict_sources({"inferbus.a": role})

    def shared(stack):
        role = iam.Role(stack, "Shared", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
        InferbusBus(stack, "Bus", bus_name="b", archive_retention_days=1).restrict_sources(
            {"inferbus.a": role, "inferbus.b": role})

    with pytest.raises(TypeError, match="not a role made in this app"):
        synth(imported)
    with pytest.raises(ValueError, match=r"Shared.*inferbus.a', 'inferbus.b'"):
        synth(shared)
