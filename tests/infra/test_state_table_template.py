"""Each declared state table in the template: encrypted, recoverable, kept, read-only to the consumers that read it."""

from __future__ import annotations

import json

from inferbus.model.names import FUNCTION_NAME
from tests.declared import PIPELINE
from tests.infra.test_template import of_type, output_id

READ_ACTIONS = {"dynamodb:GetItem", "dynamodb:BatchGetItem"}


def as_list(value):
    return value if isinstance(value, list) else [value]


def table_id(template, table):
    return output_id(template, table.output_key)


def role_statements(template, consumer):
    function = of_type(template, "AWS::Lambda::Function")[output_id(template, f"{consumer.construct_id}{FUNCTION_NAME}")]
    role = {"Ref": function["Role"]["Fn::GetAtt"][0]}
    return function, [s for p in of_type(template, "AWS::IAM::Policy").values() if role in p["Roles"]
                      for s in p["PolicyDocument"]["Statement"]]


def names_table(statement, logical_id):
    return logical_id in json.dumps(statement["Resource"])


def test_every_state_table_is_encrypted_recoverable_and_kept(template):
    assert PIPELINE.state_tables, "the shipped pipeline reads a state table"
    for table in PIPELINE.state_tables:
        resource = template["Resources"][table_id(template, table)]
        properties = resource["Properties"]
        assert resource["Type"] == "AWS::DynamoDB::Table" and resource["DeletionPolicy"] == "Retain"
        assert properties["SSESpecification"]["SSEEnabled"] is True
        assert properties["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
        assert properties["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]


def test_only_consumers_that_declare_a_table_may_read_it_and_only_read_it(template):
    for table in PIPELINE.state_tables:
        logical_id = table_id(template, table)
        for consumer in PIPELINE.consumers:
            function, statements = role_statements(template, consumer)
            granted = {action for s in statements if names_table(s, logical_id) for action in as_list(s["Action"])}
            variables = function["Environment"]["Variables"]
            if table in consumer.reads:
                assert granted == READ_ACTIONS, (consumer.name, granted)
                assert table.name in json.dumps(variables["INFERBUS_STATE_TABLES"])
                assert logical_id in json.dumps(variables["INFERBUS_STATE_TABLES"])
            else:
                assert granted == set(), (consumer.name, granted)
                assert "INFERBUS_STATE_TABLES" not in variables
