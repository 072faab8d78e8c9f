"""The workflows' Accept step on a moto DynamoDB table: validate, claim once, and answer with the ids to use."""

from __future__ import annotations

import json

import boto3
import pytest
from inferbus_lambda.claims import DynamoDBClaimStore
from inferbus_lambda.consumer import result_event_id
from inferbus_lambda.contracts import ImageSubmitted, TextSubmitted, new_event
from inferbus_lambda.errors import TransientError
from inferbus_lambda.workflow import accept
from moto import mock_aws

SOURCE = "inferbus.text-pipeline"


@pytest.fixture
def claims():
    with mock_aws():
        boto3.client("dynamodb", region_name="us-east-1").create_table(
            TableName="claims", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")
        yield DynamoDBClaimStore("claims", scope="text-pipeline", expires_after_seconds=3600,
                                 client=boto3.client("dynamodb", region_name="us-east-1"))


def delivered(detail: dict) -> dict:
    """What EventBridge hands a state machine target."""
    return {"version": "0", "id": "eb-1", "source": detail.get("source"), "detail-type": detail.get("type"),
            "account": "123456789012", "time": "2026-12-02T00:00:00Z", "region": "us-east-1", "resources": [],
            "detail": detail}


def request(detail: dict, execution: str = "arn:execution:1") -> dict:
    return {"event": delivered(detail), "workflow": "text-pipeline", "types": ["TextSubmitted"],
            "emits": ["TextAnalyzed"], "result_source": SOURCE, "execution": execution}


def text_detail(text: str = "The parcel arrived on time.") -> dict:
    return json.loads(new_event(TextSubmitted(text=text), source="inferbus.test", correlationid="req-9").model_dump_json())


def test_a_valid_event_is_accepted_once_with_derived_result_ids(claims):
    detail = text_detail()
    answer = accept(request(detail), claims)
    assert answer["status"] == "accepted"
    assert answer["event"]["data"]["text"] == "The parcel arrived on time."
    assert answer["result_ids"] == {"TextAnalyzed": result_event_id(detail["id"], f"{SOURCE}:TextAnalyzed",
                                                                     input_source=detail["source"])}
    assert answer["failure"]["input_id"] == detail["id"] and answer["failure"]["correlationid"] == "req-9"
    json.dumps(answer)  # the answer travels through Step Functions as JSON

    assert accept(request(detail, execution="arn:execution:2"), claims)["status"] == "duplicate"


def test_the_owning_execution_retrying_its_accept_is_accepted_again(claims):
    detail = text_detail()
    assert accept(request(detail), claims)["status"] == "accepted"
    assert accept(request(detail), claims)["status"] == "accepted"  # same execution, retried step


def test_an_invalid_event_is_rejected_with_its_reason_and_usable_failure_ids(claims):
    detail = text_detail() | {"data": {"text": "   "}}
    answer = accept(request(detail), claims)
    assert answer["status"] == "rejected" and answer["error"] == "InvalidEventError"
    assert answer["reason"].startswith("data.text: Value error, text must not be blank")
    assert answer["failure"]["input_id"] == detail["id"] and answer["failure"]["correlationid"] == "req-9"


def test_an_unreadable_id_is_not_echoed_into_the_failure_event(claims):
    detail = text_detail() | {"id": "has spaces", "correlationid": "also bad"}
    answer = accept(request(detail), claims)
    assert answer["status"] == "rejected"
    assert answer["failure"]["input_id"] is None
    assert answer["failure"]["correlationid"] == answer["failure"]["id"]  # the failure event starts its own trail


def test_another_workflows_event_type_is_rejected(claims):
    detail = json.loads(new_event(ImageSubmitted(pixels=[0] * 64), source="s").model_dump_json())
    answer = accept(request(detail), claims)
    assert answer["status"] == "rejected"
    assert answer["reason"] == "type: this workflow takes TextSubmitted, not 'ImageSubmitted'"


def test_the_same_id_with_other_data_is_a_conflict(claims):
    detail = text_detail()
    accept(request(detail), claims)
    forged = detail | {"data": {"text": "something else"}}
    answer = accept(request(forged, execution="arn:execution:2"), claims)
    assert (answer["status"], answer["error"]) == ("rejected", "IdConflictError")


def test_a_result_scored_again_is_a_duplicate_not_a_conflict(claims):
    """A consumer that crashed between publishing and completing scores the input again: the same
    result id, the same answer, other timings. Downstream that is a duplicate; another answer is a conflict."""
    from inferbus_lambda.contracts import Customer, ModelRef, RiskScored

    def scored(risk_score: float, inference_ms: float, batch_size: int) -> dict:
        data = RiskScored(input_id="txn-1", customer=Customer(id="c-1", segment="new"), risk_score=risk_score,
                          model=ModelRef(name="risk", version="1"), inference_ms=inference_ms, batch_size=batch_size)
        return json.loads(new_event(data, source="inferbus.risk-scorer", event_id="result-1").model_dump_json())

    def accepting(detail: dict, execution: str) -> dict:
        return {"event": delivered(detail), "workflow": "auto-approve", "types": ["RiskScored"],
                "emits": ["TransactionApproved"], "result_source": "inferbus.auto-approve", "execution": execution}

    assert accept(accepting(scored(0.2, 1.5, 10), "arn:execution:1"), claims)["status"] == "accepted"
    assert accept(accepting(scored(0.2, 9.0, 3), "arn:execution:2"), claims)["status"] == "duplicate"
    answer = accept(accepting(scored(0.9, 1.5, 10), "arn:execution:3"), claims)
    assert (answer["status"], answer["error"]) == ("rejected", "IdConflictError")


def test_an_event_being_accepted_elsewhere_is_a_transient_error(claims):
    detail = text_detail()
    event = new_event(TextSubmitted(text=detail["data"]["text"]), source=detail["source"]).model_copy(
        update={"id": detail["id"]})  # the same event: its source and id
    claims.claim([event], remaining_ms=30_000)  # an in-progress claim, as a queue consumer holds one
    with pytest.raises(TransientError):
        accept(request(detail), claims)
