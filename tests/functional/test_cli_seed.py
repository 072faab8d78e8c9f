"""``inferbus seed``: a declared state table's seed (or a file of your own) into a deployed table; errors in one line."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from inferbus.cli import main
from inferbus.state_seed import REPO_ROOT, read_seed
from tests.declared import PIPELINE

SEEDED = [table for table in PIPELINE.state_tables if table.seed]


@pytest.fixture
def dynamodb():
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(TableName="Deployed", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")
        yield client


@pytest.mark.parametrize("table", SEEDED, ids=lambda t: t.name)
def test_seed_writes_every_item_of_the_declared_seed_and_again_changes_nothing(dynamodb, table, capsys):
    expected = {item["id"] for item in read_seed(REPO_ROOT / table.seed)}
    for _ in range(2):
        assert main(["seed", table.name, "--table", "Deployed"]) == 0
    assert {item["id"]["S"] for item in dynamodb.scan(TableName="Deployed")["Items"]} == expected
    assert f"wrote {len(expected)} items" in capsys.readouterr().out


def test_seed_takes_a_file_of_your_own(dynamodb, tmp_path):
    own = tmp_path / "own.jsonl"
    own.write_text('{"id": "x", "age": 40}\n')
    assert main(["seed", SEEDED[0].name, "--table", "Deployed", "--file", str(own)]) == 0
    assert dynamodb.get_item(TableName="Deployed", Key={"id": {"S": "x"}})["Item"]["age"] == {"N": "40"}


def test_seed_refuses_an_undeclared_table_and_a_bad_file_in_one_line(dynamodb, tmp_path, capsys):
    assert main(["seed", "no-such-table", "--table", "Deployed"]) == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"name": "no id"}\n')
    assert main(["seed", SEEDED[0].name, "--table", "Deployed", "--file", str(bad)]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 2 and "no consumer reads a state table named 'no-such-table'" in errors[0]
    assert "bad.jsonl:1: each line must be a JSON object" in errors[1] and "Traceback" not in "".join(errors)
