"""Batched exactly-once claims on a moto DynamoDB table: few requests per batch, the same outcomes per record."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError
from inferbus_lambda.claims import ClaimStatus, DynamoDBClaimStore, claim_key
from inferbus_lambda.contracts import ImageSubmitted, new_event
from moto import mock_aws

from inferbus.chaos.faults import ThrottledDynamoDB

TABLE = "claims"


@pytest.fixture
def dynamodb():
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(TableName=TABLE, KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                            BillingMode="PAY_PER_REQUEST")
        yield client


def make_claims(client, **options) -> DynamoDBClaimStore:
    return DynamoDBClaimStore(TABLE, scope="image-classifier", expires_after_seconds=3600, client=client,
                       sleep=lambda _: None, **options)


def images(count: int, start: int = 0):
    return [new_event(ImageSubmitted(pixels=[(i + start) % 17] * 64), source="claims.test", event_id=f"img-{i + start}")
            for i in range(count)]


def statuses(claims: DynamoDBClaimStore, events, **options) -> list[str]:
    return [status.value for status in claims.claim(events, remaining_ms=30_000, **options)]


def test_a_batch_of_100_is_claimed_in_one_request_and_completed_in_groups_of_25(dynamodb):
    claims = make_claims(dynamodb)
    events = images(100)
    assert statuses(claims, events) == ["claimed"] * 100
    # and one read of the claims written before keys held the source (see test_claims_under_the_old_key_...)
    assert claims.requests == {"batch_get_item": 1, "transact_write_items": 1}
    assert claims.complete([(event, {"result_id": f"r-{event.id}"}) for event in events]) == []
    assert claims.requests == {"batch_get_item": 1, "transact_write_items": 1, "batch_write_item": 4}


def test_duplicates_conflicts_and_claims_held_elsewhere_are_told_apart(dynamodb):
    claims = make_claims(dynamodb)
    done, held, fresh = images(3), images(2, start=3), images(5, start=5)
    claims.claim(done + held, remaining_ms=30_000)
    claims.complete([(event, {"result_id": "r"}) for event in done])
    forged = new_event(ImageSubmitted(pixels=[16] * 64), source="claims.test", event_id=done[0].id)
    claims.requests.clear()

    answer = statuses(claims, [forged, *done[1:], *held, *fresh])
    assert answer == ["conflict", "already_done", "already_done", "in_progress", "in_progress"] + ["claimed"] * 5
    # one cancelled transaction told every taken id at once; the retry without them claimed the rest
    assert claims.requests == {"batch_get_item": 1, "transact_write_items": 2}


def test_the_same_id_twice_in_one_batch_is_claimed_once(dynamodb):
    claims = make_claims(dynamodb)
    (event,) = images(1)
    other_data = new_event(ImageSubmitted(pixels=[9] * 64), source="claims.test", event_id=event.id)
    assert statuses(claims, [event, event, other_data]) == ["claimed", "in_progress", "conflict"]


def test_a_released_claim_and_a_crashed_invocations_claim_can_be_taken_again(dynamodb):
    claims = make_claims(dynamodb)
    released, crashed = images(2)
    claims.claim([released], remaining_ms=30_000)
    assert claims.release([released]) == []
    claims.claim([crashed], remaining_ms=0)  # its holder's deadline has passed
    assert statuses(claims, [released, crashed]) == ["claimed", "claimed"]


def test_a_throttled_claim_fails_its_records_not_the_batch(dynamodb):
    events = images(10)
    assert statuses(make_claims(ThrottledDynamoDB(dynamodb, claim_rate=1.0)), events) == ["unavailable"] * 10
    assert dynamodb.scan(TableName=TABLE)["Count"] == 0  # nothing held: a redelivery claims them
    assert statuses(make_claims(dynamodb), events) == ["claimed"] * 10


class ThrottledOnce:
    """A DynamoDB client whose first request of each kind is throttled (after the SDK's own retries)."""

    def __init__(self, client):
        self.client, self.seen = client, set()

    def _once(self, api: str, **request):
        if api not in self.seen:
            self.seen.add(api)
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}}, api)
        return getattr(self.client, api)(**request)

    def transact_write_items(self, **request):
        return self._once("transact_write_items", **request)

    def batch_get_item(self, **request):
        return self._once("batch_get_item", **request)

    def batch_write_item(self, **request):
        if "batch_write_item" not in self.seen:  # the first time, DynamoDB takes nothing
            self.seen.add("batch_write_item")
            return {"UnprocessedItems": request["RequestItems"]}
        return self.client.batch_write_item(**request)


def test_throttled_requests_and_unprocessed_items_are_retried(dynamodb):
    claims = make_claims(ThrottledOnce(dynamodb))
    events = images(30)
    assert statuses(claims, events) == ["claimed"] * 30
    assert claims.complete([(event, {"result_id": "r"}) for event in events]) == []
    assert statuses(make_claims(dynamodb), events) == ["already_done"] * 30


def test_a_completion_that_cannot_be_written_is_reported_and_its_claim_stays_in_progress(dynamodb):
    claims = make_claims(dynamodb)
    events = images(3)
    claims.claim(events, remaining_ms=30_000)
    throttled = make_claims(ThrottledDynamoDB(dynamodb, complete_rate=1.0))
    not_completed = throttled.complete([(event, {"result_id": "r"}) for event in events])
    assert sorted(not_completed) == sorted(claim_key(event.source, event.id) for event in events)
    assert statuses(claims, events) == ["in_progress"] * 3  # until the holder's deadline, then claimable


def test_a_workflow_accepts_in_one_write_and_leaves_nothing_in_progress(dynamodb):
    claims = make_claims(dynamodb)
    (event,) = images(1)
    assert claims.accept_once(event, owner="execution-1") is ClaimStatus.CLAIMED
    assert claims.accept_once(event, owner="execution-1") is ClaimStatus.CLAIMED  # its own retried step
    assert claims.accept_once(event, owner="execution-2") is ClaimStatus.ALREADY_DONE
    (item,) = dynamodb.scan(TableName=TABLE)["Items"]
    assert item["status"]["S"] == "COMPLETED" and claims.requests == {"get_item": 3, "put_item": 3}


def test_the_embedded_runtime_rolls_back_a_cancelled_transaction_as_moto_does(template):
    from inferbus.local import LocalPipeline
    from inferbus.model.names import IDEMPOTENCY_TABLE_OUTPUT

    with LocalPipeline(template) as pipeline:  # its transactions copy each table once, not once per item
        table = pipeline.outputs[IDEMPOTENCY_TABLE_OUTPUT]
        claims = DynamoDBClaimStore(table, scope="image-classifier", expires_after_seconds=3600,
                             client=pipeline.session.client("dynamodb"), sleep=lambda _: None)
        done, fresh = images(2), images(3, start=2)
        claims.claim(done, remaining_ms=30_000)
        claims.complete([(event, {"result_id": "r"}) for event in done])
        claims.requests.clear()
        assert statuses(claims, done + fresh) == ["already_done"] * 2 + ["claimed"] * 3
        assert claims.requests == {"batch_get_item": 1, "transact_write_items": 2}  # the first was cancelled, and left nothing
        assert pipeline.session.client("dynamodb").scan(TableName=table)["Count"] == 5


def test_the_store_owns_its_item_layout_and_reads_back_what_it_writes(dynamodb):
    claims = make_claims(dynamodb)
    (event,) = images(1)
    claims.claim([event], remaining_ms=30_000)
    (item,) = dynamodb.scan(TableName=TABLE)["Items"]
    assert item["id"]["S"] == f"image-classifier#{claim_key(event.source, event.id)}" and item["status"]["S"] == "INPROGRESS"
    assert set(item) == {"id", "status", "expiration", "in_progress_expiration", "claimed_at", "validation"}
    record = claims.record(item)
    assert claims.item(record) == item and record.key == claim_key(event.source, event.id)


def test_end_hold_frees_a_claim_taken_before_the_failure_and_no_other(dynamodb):
    import time

    claims = make_claims(dynamodb)
    before, after = images(2)
    claims.claim([before], remaining_ms=30_000)
    moment = int(time.time() * 1000) + 1
    time.sleep(0.003)
    claims.claim([after], remaining_ms=30_000)
    now = int(time.time() * 1000)
    assert claims.end_hold(claim_key(before.source, before.id), claimed_before_ms=moment, now_ms=now)
    assert not claims.end_hold(claim_key(after.source, after.id), claimed_before_ms=moment, now_ms=now)
    assert not claims.end_hold("never-claimed", claimed_before_ms=moment, now_ms=now)
    assert statuses(claims, [before, after]) == ["claimed", "in_progress"]


def test_the_in_memory_store_answers_as_dynamodb_does(dynamodb):
    """The policy is the stores' common part: one script, the same statuses on both."""
    from inferbus_lambda.claims import InMemoryClaimStore

    def script(claims) -> list[str]:
        done, held, released = images(3)
        forged = new_event(ImageSubmitted(pixels=[16] * 64), source="claims.test", event_id=done.id)
        answers = statuses(claims, [done, held, released, done])
        claims.complete([(done, {"result_id": "r"})])
        claims.release([released])
        answers += statuses(claims, [done, held, released]) + statuses(claims, [forged])
        answers.append(claims.accept_once(images(1, start=9)[0], owner="x").value)
        answers += statuses(claims, [forged.model_copy(update={"source": "another.producer"})])  # another event
        return answers

    memory = script(InMemoryClaimStore(scope="image-classifier", expires_after_seconds=3600))
    assert memory == script(make_claims(dynamodb)) == [
        "claimed", "claimed", "claimed", "in_progress", "already_done", "in_progress", "claimed", "conflict", "claimed",
        "claimed"]


def test_the_same_id_from_another_source_is_another_event_in_the_table(dynamodb):
    claims = make_claims(dynamodb)
    (event,) = images(1)
    foreign = event.model_copy(update={"source": "another.producer/" + "é" * 200})  # long and not ASCII: still one key
    claims.claim([event], remaining_ms=30_000)
    claims.complete([(event, {"result_id": "r"})])
    assert statuses(claims, [foreign, event]) == ["claimed", "already_done"]
    forged = new_event(ImageSubmitted(pixels=[16] * 64), source=event.source, event_id=event.id)
    assert statuses(claims, [forged]) == ["conflict"]  # the same source and id with other data
    assert claims.accept_once(foreign.model_copy(update={"source": "third.producer"}), owner="x") is ClaimStatus.CLAIMED


def old_claim(claims: DynamoDBClaimStore, event, state: str, **fields) -> None:
    """A claim as the store wrote it before keys held the source: ``<scope>#<event id>``."""
    import time

    from inferbus_lambda.claims import data_hash

    now_ms = int(time.time() * 1000)
    item = {"id": {"S": f"{claims.scope}#{event.id}"}, "status": {"S": state},
            "expiration": {"N": str(now_ms // 1000 + 3600)}, "validation": {"S": data_hash(event)}}
    item |= {name: {"N": str(value)} if isinstance(value, int) else {"S": value} for name, value in fields.items()}
    claims.client.put_item(TableName=TABLE, Item=item)


def test_claims_under_the_old_key_carry_over_until_they_expire(dynamodb):
    """A claim written before the upgrade (keyed by the id alone) still answers for its event: a redelivery
    straddling the deploy is a duplicate, not a second result; other data with that id is a new event."""
    import time

    claims = make_claims(dynamodb)
    done, held, expired, other = images(4)
    old_claim(claims, done, "COMPLETED", result='{"owner": "execution-1"}')
    old_claim(claims, held, "INPROGRESS", in_progress_expiration=int(time.time() * 1000) + 60_000)
    old_claim(claims, expired, "COMPLETED")
    dynamodb.update_item(TableName=TABLE, Key={"id": {"S": f"image-classifier#{expired.id}"}},
                         UpdateExpression="SET expiration = :past", ExpressionAttributeValues={":past": {"N": "1"}})
    old_claim(claims, other, "COMPLETED")
    relabelled = new_event(ImageSubmitted(pixels=[16] * 64), source=other.source, event_id=other.id)
    assert statuses(claims, [done, held, expired, relabelled]) == ["already_done", "in_progress", "claimed", "claimed"]
    assert claims.accept_once(done, owner="execution-1") is ClaimStatus.CLAIMED  # its own retried step, across the deploy
    assert claims.accept_once(done, owner="execution-2") is ClaimStatus.ALREADY_DONE
    # Reading the old keys is one BatchGetItem per batch; without it, the old claims are not seen.
    assert statuses(make_claims(dynamodb, legacy_keys=False), [held]) == ["claimed"]
