"""A consumer fed by a RabbitMQ queue on a real broker, through the embedded runtime's Amazon MQ mapping:
none lost and each published once through failures and redeliveries; bad records rejected or
dead-lettered with their reason. Needs a broker (``tests/rabbitmq_broker.py``: skips without one,
fails in CI)."""

from __future__ import annotations

import json
from collections import Counter

from inferbus_lambda.contracts import ImageSubmitted, new_event

from inferbus.chaos.faults import InjectedCrash, InjectedTimeout, inject_faults
from inferbus.chaos.rates import FaultRates
from inferbus.claims import expire_claims_of
from inferbus.model.rabbitmq import PLACEHOLDER_BROKER_ARN, PLACEHOLDER_SECRET_ARN
from inferbus.runtime import RUNTIME_EXITED, TIMED_OUT, EmbeddedPipeline, HostConfig
from tests import rabbitmq_broker
from tests.rabbitmq_broker import publish
from tests.runtime_fixtures import REPO_ROOT
from tests.runtime_fixtures import templates as t

rabbitmq_queue = rabbitmq_broker.rabbitmq_queue  # the fixture: a fresh queue on the running broker


def rabbit_template(queue: str, *, max_receive_count: int, batch_size: int = 10) -> dict:
    """An Amazon MQ mapping as CDK writes one: the broker's ARN, one queue, the credential and the virtual host."""
    mapping = {"Type": "AWS::Lambda::EventSourceMapping", "Properties": {
        "BatchSize": batch_size, "EventSourceArn": PLACEHOLDER_BROKER_ARN, "FunctionName": {"Ref": "Consumer"},
        "Queues": [queue], "MaximumBatchingWindowInSeconds": 0,
        "SourceAccessConfigurations": [{"Type": "BASIC_AUTH", "URI": PLACEHOLDER_SECRET_ARN},
                                       {"Type": "VIRTUAL_HOST", "URI": "/"}]}}
    function = t.function("rabbit", DEAD_LETTER_QUEUE_URL={"Ref": "Dlq"}, MAX_RECEIVE_COUNT=str(max_receive_count),
                          IDEMPOTENCY_TABLE_NAME={"Ref": "Claims"}, INVALID_EVENTS_QUEUE_URL={"Ref": "Invalid"},
                          # what the runtime's after-failure hook reads to find the function's claims
                          POWERTOOLS_SERVICE_NAME="rabbit", POWERTOOLS_METRICS_NAMESPACE="Test",
                          IDEMPOTENCY_TTL_SECONDS="600")
    return t.template(Dlq=t.queue(), Invalid=t.queue(), Claims=t.claims_table(), Consumer=function, Mapping=mapping)


def cloudevent(event_id: str, pixel: int = 1) -> dict:
    return new_event(ImageSubmitted(pixels=[pixel] * 64), source="test", event_id=event_id).model_dump(mode="json")


def as_message(event: dict, form: str) -> tuple[bytes, dict]:
    """One CloudEvent as a producer sends it: structured, binary (CloudEvents AMQP binding), or an EventBridge event."""
    if form == "structured":
        return json.dumps(event).encode(), {"content_type": "application/cloudevents+json", "delivery_mode": 2}
    if form == "binary":
        headers = {f"cloudEvents:{name}": value for name, value in event.items() if name != "data"}
        return json.dumps(event["data"]).encode(), {"content_type": "application/json", "headers": headers}
    envelope = {"source": event["source"], "detail-type": event["type"], "detail": event}
    return json.dumps(envelope).encode(), {"message_id": event["id"]}


def rabbit_runtime(template: dict):
    """The runtime with the hook ``inferbus serve`` and the demo use: a failed batch's claims end their hold
    when it comes back (the time a real redelivery takes has passed for them)."""
    def expire(function, messages, failed_at_ms):
        return expire_claims_of(pipeline.session.client("dynamodb"), function.spec.environment, messages, failed_at_ms)

    host = HostConfig(code_root=REPO_ROOT, task_root=REPO_ROOT,
                      service_failures={InjectedTimeout.__name__: TIMED_OUT, InjectedCrash.__name__: RUNTIME_EXITED})
    pipeline = EmbeddedPipeline(template, stack_name="RabbitTest", host=host, tap=False, after_failure=expire)
    return pipeline


def published(pipeline) -> list[str]:
    return [line["subject"] for line in pipeline.functions["Consumer"].logs if line.get("message") == "published"]


def receive_all(pipeline, logical_id: str) -> list[dict]:
    url = pipeline.deployment.queues[logical_id].url
    found = []
    while messages := pipeline.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"],
                                                   WaitTimeSeconds=0).get("Messages", []):
        found += messages
        pipeline.sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                                                                 for i, m in enumerate(messages)])
    return found


def test_every_event_is_published_once_through_failed_batches_and_duplicate_deliveries(rabbitmq_queue):
    forms = ("structured", "binary", "eventbridge")
    sent = [cloudevent(f"evt-{n:03d}", pixel=n % 7) for n in range(150)]
    with rabbit_runtime(rabbit_template(rabbitmq_queue, max_receive_count=50)) as pipeline:
        source = pipeline.event_sources[0]
        source.redeliver(0.2, seed=3)
        injector = inject_faults(pipeline.functions["Consumer"],
                                 FaultRates.only(record_error_rate=0.05, put_events_throttle_rate=0.1,
                                                 crash_after_publish_rate=0.05, timeout_rate=0.03), seed=5)
        publish(rabbitmq_queue, [as_message(event, forms[n % 3]) for n, event in enumerate(sent)])
        pipeline.drain(timeout_s=120)
        received = sum(line["records"] for line in pipeline.functions["Consumer"].logs if line.get("message") == "received")
        failed_invocations = sum(1 for invocation in pipeline.functions["Consumer"].invocations if invocation.error)
        dead, invalid, backlog = receive_all(pipeline, "Dlq"), receive_all(pipeline, "Invalid"), source.backlog()

    ledger = Counter(published(pipeline))
    assert ledger == Counter(event["id"] for event in sent)  # every event once: none lost, none repeated
    assert dead == [] and invalid == [] and backlog == 0
    # the channel was exercised as an MQ mapping is: whole batches failed and came back, copies were delivered
    assert failed_invocations > 0 and injector.counts.record_errors > 0
    assert source.duplicates_delivered > 0 and received > len(sent)


def test_bad_records_are_rejected_and_a_record_failing_every_attempt_is_dead_lettered_with_its_reason(rabbitmq_queue):
    good = [cloudevent(f"good-{n}") for n in range(12)]
    poison = cloudevent("poison-1", pixel=13)  # the fixture's model refuses pixel 13 every time
    wrong_type = new_event(ImageSubmitted(pixels=[1] * 64), source="test", event_id="wrong-1").model_dump(mode="json")
    wrong_type["type"] = "TextSubmitted"
    messages = [as_message(event, "structured") for event in good[:6]]
    messages += [(b"not json at all", {}), as_message(wrong_type, "structured"), as_message(poison, "binary")]
    messages += [as_message(event, "binary") for event in good[6:]]
    with rabbit_runtime(rabbit_template(rabbitmq_queue, max_receive_count=3, batch_size=5)) as pipeline:
        publish(rabbitmq_queue, messages)
        pipeline.drain(timeout_s=120)
        dead, invalid = receive_all(pipeline, "Dlq"), receive_all(pipeline, "Invalid")
        backlog = pipeline.event_sources[0].backlog()

    assert Counter(published(pipeline)) == Counter(event["id"] for event in good)
    assert backlog == 0
    (letter,) = dead
    attributes = {name: value["StringValue"] for name, value in letter["MessageAttributes"].items()}
    assert json.loads(letter["Body"])["detail"]["id"] == "poison-1"
    assert "pixel 13" in attributes["inferbus-reason"] and attributes["inferbus-receives"] == "3"
    reasons = {json.loads(m["Body"])["event_id"]: json.loads(m["Body"])["reason"] for m in invalid}
    assert set(reasons) == {None, "wrong-1"}
    assert "data.text: Field required" in reasons["wrong-1"]  # read as the type it says it is: TextSubmitted's contract
    assert reasons[None].startswith("body: ")  # not JSON: no event id to name
