"""Every channel's failure queue is listed, inspected and redriven like an SQS consumer's DLQ: a RabbitMQ
consumer's own DLQ goes back to its RabbitMQ queue, a Kafka mapping's on-failure records (where the records are)
have their records read again from the topic and written back to their partition; both reach the consumer again
and publish their results. The consumers are the ``channels`` stage's declarations, run embedded (a real local
RabbitMQ, librdkafka's mock cluster); the queues to expect come from those declarations and the stack's outputs."""

from __future__ import annotations

import json

import pytest

from inferbus.chaos.faults import inject_faults
from inferbus.chaos.rates import FaultRates
from inferbus.cli import main
from inferbus.console.state import ConsoleState
from inferbus.demo.inputs import sample_event
from inferbus.local import LocalPipeline
from inferbus.model.declarations import Channel
from inferbus.model.names import DEAD_LETTER_QUEUE_URL, QUEUE_URL, kebab
from inferbus.redrive import inspect_dead_letters, redrive, resolve_target
from inferbus.redrive.targets import KafkaRedrive
from inferbus.runtime.provision import register_stack
from inferbus.runtime.queue_ops import peek_messages
from inferbus.runtime.rabbitmq import publish_cloudevents
from infra.stages import STAGES, stage_pipeline
from tests.declared import PIPELINE
from tests.rabbitmq_broker import rabbitmq_or_skip

confluent_kafka = pytest.importorskip("confluent_kafka")
DECLARED = stage_pipeline(STAGES["channels"])
BROKER_FED = [c for c in DECLARED.consumers if c.channel in (Channel.KAFKA, Channel.RABBITMQ)]


@pytest.fixture(scope="module")
def pipeline():
    rabbitmq_or_skip()
    with LocalPipeline(pipeline=DECLARED) as running:
        yield running


def send(pipeline, consumer, count: int) -> list[str]:
    """``count`` of the consumer's sample events into its broker, as a producer writes them; their ids."""
    sampled = next(c for c in PIPELINE.consumers if c.accepts.type == consumer.accepts.type)  # the stage's are copies
    events = [sample_event(sampled, n, source="redrive.test")[0] for n in range(count)]
    bodies = [event.model_dump_json(exclude_none=True) for event in events]
    if consumer.channel is Channel.KAFKA:
        producer = confluent_kafka.Producer({"bootstrap.servers": pipeline.kafka_bootstrap_servers, "log_level": 3})
        for n, body in enumerate(bodies):
            producer.produce(consumer.broker.topic, key=str(n), value=body)
        assert producer.flush(10) == 0
    else:
        publish_cloudevents(consumer.broker.queue, bodies, consumer.broker.virtual_host)
    return [event.id for event in events]


def results(pipeline, consumer) -> list[str]:
    return [e["detail"]["subject"] for e in pipeline.tapped_events() if e["detail-type"] == consumer.result_type]


@pytest.mark.parametrize("consumer", BROKER_FED, ids=lambda c: c.name)
def test_a_broker_fed_consumers_failures_are_listed_and_redriven_back_through_its_channel(pipeline, consumer, capsys):
    running = pipeline.consumer(consumer.name)
    dlq_url = pipeline.outputs[consumer.output_key(DEAD_LETTER_QUEUE_URL)]
    assert running.dead_letter_queue_url == dlq_url
    injector = inject_faults(running.function, FaultRates.only(record_error_rate=1.0), seed=1)  # an outage
    sent = send(pipeline, consumer, 3)
    pipeline.drain(timeout_s=180)
    assert not set(sent) & set(results(pipeline, consumer))
    letters = inspect_dead_letters(pipeline.sqs, dlq_url)
    assert letters and all(letter.valid for letter in letters)  # failed for a reason that may have passed

    # The console lists the queue as its consumer's dead letters, with where a redrive sends them.
    (listed,) = [q for q in ConsoleState(pipeline).dead_letters() if q["url"] == dlq_url]
    assert listed["component"] == consumer.name and not listed["why_not"]
    assert (consumer.broker.queue if consumer.channel is Channel.RABBITMQ else "Kafka partitions") in listed["source"]
    assert len(listed["messages"]) == len(letters)

    # `inferbus redrive` finds where they go from the stage's declarations (no SQS queue dead-letters into it).
    assert main(["redrive", dlq_url, "--dry-run", "--stage", "channels", "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert dry["would_move"] == len(letters) and dry["moved"] is None
    injector.rates = None  # the outage is over
    assert main(["redrive", dlq_url, "--stage", "channels"]) == 0
    assert f"moved {len(letters)} of {len(letters)}" in capsys.readouterr().out
    pipeline.drain(timeout_s=180)
    assert sorted(set(sent) & set(results(pipeline, consumer))) == sorted(sent)  # every one published in the end
    assert peek_messages(pipeline.sqs, dlq_url) == []


def test_a_kafka_failure_record_whose_cluster_cannot_be_reached_stays_with_the_reason(pipeline):
    """An MSK cluster in its VPC is not reachable from a laptop: the record stays, saying which offsets to read."""
    (kafka,) = [c for c in DECLARED.consumers if c.channel is Channel.KAFKA]
    dlq_url = pipeline.outputs[kafka.output_key(DEAD_LETTER_QUEUE_URL)]
    record = {"requestContext": {"condition": "RetryAttemptsExhausted"}, "version": "1.0",
              "KafkaBatchInfo": {"batchSize": 2, "topic": "images", "partition": 3, "firstOffset": 40, "lastOffset": 41,
                                 "bootstrapServers": "127.0.0.1:9"}}  # the discard port: nothing listens
    pipeline.sqs.send_message(QueueUrl=dlq_url, MessageBody=json.dumps(record))
    (letter,) = inspect_dead_letters(pipeline.sqs, dlq_url)
    assert "images partition 3 offsets 40-41" in letter.verdict and letter.last_reason.startswith("RetryAttemptsExhausted")
    found_url, target = resolve_target(pipeline.sqs, dlq_url)  # no declarations needed: the record says it is Kafka
    assert found_url == dlq_url and isinstance(target, KafkaRedrive)
    assert redrive(pipeline.sqs, dlq_url, target) == 0
    (problem,) = target.problems
    assert "images partition 3 offsets 40-41" in problem and "no Kafka cluster answers at 127.0.0.1:9" in problem
    assert len(peek_messages(pipeline.sqs, dlq_url)) == 1  # kept, not lost
    pipeline.sqs.purge_queue(QueueUrl=dlq_url)


def test_a_queue_nothing_names_is_refused_with_what_to_pass(pipeline, capsys):
    (rabbit,) = [c for c in DECLARED.consumers if c.channel is Channel.RABBITMQ]
    dlq_url = pipeline.outputs[rabbit.output_key(DEAD_LETTER_QUEUE_URL)]
    pipeline.sqs.send_message(QueueUrl=dlq_url, MessageBody='{"detail": "unsigned"}')
    assert main(["redrive", dlq_url, "--dry-run"]) != 0  # pipeline/'s consumers: none signed it, nothing says where
    assert "name the queue to move them to with --source-url" in capsys.readouterr().err
    pipeline.sqs.purge_queue(QueueUrl=dlq_url)


def test_redrive_lists_every_declared_consumers_failure_queue_whatever_its_channel(pipeline, capsys):
    """From the declarations and the stack's outputs (describe-stacks, as `inferbus serve` answers it and AWS does)."""
    register_stack(pipeline.session, pipeline.stack_name, pipeline.outputs)
    assert main(["redrive", "--list", "--stage", "channels", "--json"]) == 0
    listed = {queue["consumer"]: queue for queue in json.loads(capsys.readouterr().out)}
    consumers = {consumer.output_key(DEAD_LETTER_QUEUE_URL) for consumer in DECLARED.consumers}
    kits_own = {kebab(key.removesuffix(DEAD_LETTER_QUEUE_URL)) for key in pipeline.outputs
                if key.endswith(DEAD_LETTER_QUEUE_URL) and key not in consumers}  # the unrouted check's, the nets'
    assert set(listed) == {consumer.name for consumer in DECLARED.consumers} | kits_own
    for consumer in DECLARED.consumers:
        queue = listed[consumer.name]
        assert queue["channel"] == consumer.channel.value
        assert queue["dead_letter_queue"] == pipeline.outputs[consumer.output_key(DEAD_LETTER_QUEUE_URL)]
        if consumer.channel is Channel.RABBITMQ:
            assert consumer.broker.queue in queue["goes_back_to"]
        elif consumer.channel is Channel.KAFKA:
            assert "Kafka partitions" in queue["goes_back_to"]
        else:  # the queue its DLQ takes failures from: the consumer's own
            assert queue["goes_back_to"] == pipeline.outputs[consumer.output_key(QUEUE_URL)]
    assert main(["redrive", "--list"]) == 2  # pipeline/'s declarations: this stack is not theirs
    assert "is it deployed from these declarations" in capsys.readouterr().err
