"""An ordered consumer (SQS FIFO, a message group per key) publishes each key's results in the order
the key's events were sent, through injected transient failures, none lost and none repeated."""

from __future__ import annotations

import json
from collections import defaultdict

from inferbus_lambda.contracts import ImageSubmitted, new_event

from inferbus.chaos.faults import inject_faults
from inferbus.chaos.rates import FaultRates
from tests.runtime_fixtures import runtime
from tests.runtime_fixtures import templates as t

KEYS = ("customer-a", "customer-b", "customer-c", "customer-d")


def fifo_queue(dead_letter: str | None = None, *, max_receive_count: int = 2) -> dict:
    queue = t.queue(dead_letter, max_receive_count=max_receive_count)
    queue["Properties"] |= {"FifoQueue": True, "ContentBasedDeduplication": True}
    return queue


def interleaved(per_key: int) -> list[tuple[str, str, str]]:
    """(key, event id, EventBridge body) for ``per_key`` events of every key, the keys taking turns."""
    sent = []
    for n in range(per_key):
        for key in KEYS:
            event = new_event(ImageSubmitted(pixels=[n % 17] * 64), source="test", event_id=f"{key}-{n:03d}")
            body = json.dumps({"source": event.source, "detail-type": event.type, "detail": event.model_dump(mode="json")})
            sent.append((key, event.id, body))
    return sent


def by_key(ids: list[str]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = defaultdict(list)
    for event_id in ids:
        grouped[event_id.rsplit("-", 1)[0]].append(event_id)
    return dict(grouped)


def fifo_template(*, max_receive_count: int = 50, **environment) -> dict:
    return t.template(Dlq=fifo_queue(), Work=fifo_queue("Dlq", max_receive_count=max_receive_count), Claims=t.claims_table(),
                      Consumer=t.function("ordered", IDEMPOTENCY_TABLE_NAME={"Ref": "Claims"}, **environment),
                      Mapping=t.event_source("Consumer", "Work", batch_size=10, max_concurrency=2))


def published(pipeline) -> list[str]:
    """The ledger: the input id of every result, in the order PutEvents accepted them."""
    return [line["subject"] for line in pipeline.functions["Consumer"].logs if line.get("message") == "published"]


def test_each_keys_results_come_out_in_send_order_through_transient_failures():
    template = fifo_template()
    sent = interleaved(per_key=15)
    with runtime(template, tap=False) as pipeline:
        url = pipeline.deployment.queues["Work"].url
        assert url.endswith(".fifo")  # provisioned as the template's FIFO queue
        injector = inject_faults(pipeline.functions["Consumer"],
                                 FaultRates.only(record_error_rate=0.25, put_events_throttle_rate=0.3), seed=11)
        key_of = {}
        for key, event_id, body in sent:
            key_of[pipeline.sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=key,
                                             MessageDeduplicationId=event_id)["MessageId"]] = key
        pipeline.drain(timeout_s=60)
        dead = pipeline.sqs.receive_message(QueueUrl=pipeline.deployment.queues["Dlq"].url).get("Messages", [])
        invocations = list(pipeline.functions["Consumer"].invocations)
        ledger = published(pipeline)

    expected = by_key([event_id for _, event_id, _ in sent])
    assert by_key(ledger) == expected  # every key in send order, none lost, none repeated
    assert len(ledger) == len(sent) and dead == []
    assert injector.counts.record_errors > 0  # failures happened, so order was kept through retries
    # Later records of a failed key were held back, not processed ahead of it: in every batch, a failed record
    # takes every later record of its key with it into the batch response. How many batches held two records of
    # one key depends on how the poller's receives interleave with the sends, so each batch is checked.
    held_back = 0
    for invocation in invocations:
        received = next((line["message_ids"] for line in invocation.logs if line.get("message") == "received"), [])
        failed = set(invocation.failed_ids)
        for position, message_id in enumerate(received):
            if message_id in failed:
                later = [m for m in received[position + 1:] if key_of[m] == key_of[message_id]]
                assert set(later) <= failed, (invocation.request_id, message_id, later)
                held_back += len(later)
    waited = [line for invocation in invocations for line in invocation.logs if line.get("status") == "waiting"]
    assert len(waited) <= held_back  # a record waits only behind a failed one of its key


def test_duplicate_deliveries_on_a_fifo_queue_come_back_in_place_and_publish_nothing_twice_or_out_of_order():
    sent = interleaved(per_key=8)
    with runtime(fifo_template(), tap=False) as pipeline:
        url = pipeline.deployment.queues["Work"].url
        (source,) = pipeline.event_sources
        source.redeliver(0.5, seed=3)
        message_ids = {pipeline.sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=key,
                                                 MessageDeduplicationId=event_id)["MessageId"]
                       for key, event_id, body in sent}
        pipeline.drain(timeout_s=60)
        ledger = published(pipeline)
        received = [i for line in pipeline.functions["Consumer"].logs if line.get("message") == "received"
                    for i in line["message_ids"]]
    assert source.duplicates_delivered > 0
    assert set(received) == message_ids and len(received) == len(sent) + source.duplicates_delivered  # no copies
    assert by_key(ledger) == by_key([event_id for _, event_id, _ in sent])


def test_records_failing_on_their_last_receive_are_dead_lettered_in_their_group_with_the_reason():
    sent = interleaved(per_key=3)
    template = fifo_template(max_receive_count=2, DEAD_LETTER_QUEUE_URL={"Ref": "Dlq"}, MAX_RECEIVE_COUNT="2")
    with runtime(template, tap=False) as pipeline:
        url = pipeline.deployment.queues["Work"].url
        inject_faults(pipeline.functions["Consumer"], FaultRates.only(record_error_rate=1.0), seed=1)
        for key, event_id, body in sent:
            pipeline.sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=key, MessageDeduplicationId=event_id)
        pipeline.drain(timeout_s=60)
        dead = []
        while batch := pipeline.sqs.receive_message(
                QueueUrl=pipeline.deployment.queues["Dlq"].url, MaxNumberOfMessages=10, AttributeNames=["All"],
                MessageAttributeNames=["All"]).get("Messages", []):
            dead += batch
            pipeline.sqs.delete_message_batch(QueueUrl=pipeline.deployment.queues["Dlq"].url, Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)])
        ledger = published(pipeline)
    assert ledger == []
    dead_ids = [json.loads(m["Body"])["detail"]["id"] for m in dead]
    assert by_key(dead_ids) == by_key([event_id for _, event_id, _ in sent])  # each key's in send order, all kept
    assert all(m["Attributes"]["MessageGroupId"] == json.loads(m["Body"])["detail"]["id"].rsplit("-", 1)[0] for m in dead)
    assert all("inference" in m["MessageAttributes"]["inferbus-reason"]["StringValue"] for m in dead)  # set aside by the consumer


def ordered_by_pipe_template(group_by: str = "$.body.detail.source") -> dict:
    """What a ``fifo`` consumer synthesizes (infra/constructs/queue_consumer.py): rule -> arrivals FIFO queue in
    one group -> pipe grouping by the key -> the consumer's FIFO queue -> its function."""
    rule = t.rule("ImageSubmitted", [t.queue_target("Arrivals") | {"SqsParameters": {"MessageGroupId": "Ordered"}}])
    pipe = {"Type": "AWS::Pipes::Pipe", "Properties": {
        "RoleArn": {"Fn::GetAtt": ["FunctionRole", "Arn"]},
        "Source": {"Fn::GetAtt": ["Arrivals", "Arn"]}, "Target": {"Fn::GetAtt": ["Work", "Arn"]},
        "SourceParameters": {"SqsQueueParameters": {"BatchSize": 10}},
        "TargetParameters": {"InputTemplate": "<$.body>", "SqsQueueParameters": {
            "MessageGroupId": group_by, "MessageDeduplicationId": "$.body.detail.id"}}}}
    return fifo_template() | {"Resources": fifo_template()["Resources"] | {
        "ArrivalsDlq": fifo_queue(), "Arrivals": fifo_queue("ArrivalsDlq", max_receive_count=3), "Rule": rule, "Pipe": pipe}}


def put(pipeline, sent: list[tuple[str, str, str]]) -> None:
    """Each event on the bus as its producer (the key) publishes it, one PutEvents each, in send order."""
    for _, _, body in sent:
        event = json.loads(body)
        pipeline.put_events([{"EventBusName": pipeline.bus_name, "Source": event["detail"]["source"],
                              "DetailType": event["detail-type"], "Detail": json.dumps(event["detail"])}])


def keyed(per_key: int) -> list[tuple[str, str, str]]:
    """As :func:`interleaved`, each key also the CloudEvent's source (the default ``group_by``)."""
    sent = []
    for key, event_id, body in interleaved(per_key):
        event = json.loads(body)
        event["detail"]["source"] = event["source"] = key
        sent.append((key, event_id, json.dumps(event)))
    return sent


def test_from_the_bus_a_pipe_groups_each_event_by_its_key_and_the_consumer_keeps_each_keys_order():
    sent = keyed(per_key=10)
    with runtime(ordered_by_pipe_template(), tap=False) as pipeline:
        assert [pipe.spec.logical_id for pipe in pipeline.pipes] == ["Pipe"]
        injector = inject_faults(pipeline.functions["Consumer"], FaultRates.only(record_error_rate=0.25), seed=5)
        put(pipeline, sent)
        put(pipeline, sent[:8])  # a producer republishes: the CloudEvent id deduplicates them in the consumer's queue
        pipeline.drain(timeout_s=60)
        ledger = published(pipeline)
        moved = pipeline.pipes[0].moved
    assert by_key(ledger) == by_key([event_id for _, event_id, _ in sent])
    assert injector.counts.record_errors > 0 and moved == len(sent) + 8


def test_an_event_without_the_key_waits_on_the_arrivals_queue_and_is_dead_lettered_there_not_reordered():
    sent = keyed(per_key=2)
    with runtime(ordered_by_pipe_template(group_by="$.body.detail.data.customer_id"), tap=False) as pipeline:
        put(pipeline, sent)
        pipeline.drain(timeout_s=60)
        ledger = published(pipeline)
        dead = pipeline.dead_letters()
    assert ledger == [] and len(dead["ArrivalsDlq"]) == len(sent)


def test_redrive_puts_a_fifo_dlqs_messages_back_in_their_own_groups():
    from inferbus.redrive import redrive

    sent = interleaved(per_key=2)
    template = fifo_template(max_receive_count=2, DEAD_LETTER_QUEUE_URL={"Ref": "Dlq"}, MAX_RECEIVE_COUNT="2")
    with runtime(template, tap=False) as pipeline:
        url, dlq = pipeline.deployment.queues["Work"].url, pipeline.deployment.queues["Dlq"].url
        injector = inject_faults(pipeline.functions["Consumer"], FaultRates.only(record_error_rate=1.0), seed=1)
        for key, event_id, body in sent:
            pipeline.sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=key, MessageDeduplicationId=event_id)
        pipeline.drain(timeout_s=60)
        injector.rates = None  # the fault is gone: what was dead-lettered can succeed now
        assert redrive(pipeline.sqs, dlq, url) == len(sent)
        pipeline.drain(timeout_s=60)
        ledger = published(pipeline)
    assert by_key(ledger) == by_key([event_id for _, event_id, _ in sent])


def test_a_fifo_queue_drops_a_deduplication_id_sent_in_the_last_five_minutes_even_once_deleted():
    with runtime(fifo_template(), tap=False) as pipeline:
        url = pipeline.deployment.queues["Dlq"].url  # a FIFO queue no function reads
        pipeline.sqs.send_message(QueueUrl=url, MessageBody="first", MessageGroupId="k", MessageDeduplicationId="event-1")
        (message,) = pipeline.sqs.receive_message(QueueUrl=url)["Messages"]
        pipeline.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        pipeline.sqs.send_message(QueueUrl=url, MessageBody="again", MessageGroupId="k", MessageDeduplicationId="event-1")
        pipeline.sqs.send_message(QueueUrl=url, MessageBody="other", MessageGroupId="k", MessageDeduplicationId="event-2")
        bodies = [m["Body"] for m in pipeline.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]]
    assert bodies == ["other"]  # as SQS does: the republished event-1 is dropped, a new id is not
