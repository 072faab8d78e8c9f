"""``inferbus demo`` and ``inferbus chaos`` on consumers fed by Kafka and RabbitMQ: their inputs go through their
own channel (the Kafka cluster's topic, the local broker's queue), and every one is accounted for as for the bus's.

The pipelines are the declared consumers with demo samples, re-declared on a broker channel (as a user would
change one field); what each test expects comes from what it sent. Kafka runs on librdkafka's mock cluster;
RabbitMQ needs the local broker (``tests/rabbitmq_broker.py``: skipped without one, failed in CI).
"""

from __future__ import annotations

import dataclasses
import socket
import uuid

import pytest

from inferbus.chaos import FaultRates, run_chaos
from inferbus.cli_support import explain
from inferbus.demo import run_demo
from inferbus.demo.inputs import UNROUTED
from inferbus.model.declarations import Channel, Consumer, Pipeline
from inferbus.model.kafka import KafkaTopic
from inferbus.model.rabbitmq import RabbitMqQueue
from inferbus.runtime.rabbitmq import BROKER_URL_VARIABLE, START_COMMAND, BrokerUnavailable
from infra.stages.channels import PLACEHOLDER_MQ_BROKER_ARN, PLACEHOLDER_MQ_SECRET_ARN, PLACEHOLDER_MSK_CLUSTER_ARN
from tests.declared import DEMO, PIPELINE
from tests.rabbitmq_broker import rabbitmq_or_skip

pytest.importorskip("confluent_kafka")
# The declared consumers the demo sends samples to, each alone in its flow (nothing downstream in a bare pipeline).
PLAIN = [c for c in PIPELINE.consumers if c.name in DEMO and c.channel is Channel.SQS]
RATES = FaultRates(record_error_rate=0.15, timeout_rate=0.08, crash_after_publish_rate=0.05,
                   crash_before_complete_rate=0.05, claim_throttle_rate=0.1, complete_throttle_rate=0.1,
                   put_events_throttle_rate=0.1, duplicate_rate=0.15)
EVENTS = 120


def on_channel(consumer: Consumer, channel: Channel) -> Consumer:
    """``consumer`` fed by a fresh topic or queue of its own (a fresh name: nothing left from another run)."""
    name = f"{consumer.name}-{uuid.uuid4().hex[:8]}"
    if channel is Channel.KAFKA:
        return dataclasses.replace(consumer, channel=channel, broker=KafkaTopic(topic=name, cluster_arn=PLACEHOLDER_MSK_CLUSTER_ARN))
    return dataclasses.replace(consumer, channel=channel, broker=RabbitMqQueue(
        queue=name, broker_arn=PLACEHOLDER_MQ_BROKER_ARN, credentials_secret_arn=PLACEHOLDER_MQ_SECRET_ARN))


@pytest.mark.slow
def test_the_demo_sends_each_broker_fed_consumer_its_samples_through_its_channel_and_accounts_for_every_one():
    rabbitmq_or_skip()
    # every consumer with samples, on Kafka and RabbitMQ in turn
    fed = [on_channel(c, (Channel.KAFKA, Channel.RABBITMQ)[n % 2]) for n, c in enumerate(PLAIN)]
    counts = {c.name: min(DEMO[c.name].count, 40) for c in fed}
    report = run_demo(counts=counts, pipeline=Pipeline(consumers=tuple(fed)))
    assert report.balanced, {name: kind.as_dict() for name, kind in report.kinds.items()}
    for consumer in fed:
        kind = report.kinds[consumer.name]
        malformed = len(DEMO[consumer.name].malformed) + len(UNROUTED)
        assert (kind.sent, kind.results, kind.duplicates, kind.duplicate_results) == (
            counts[consumer.name], counts[consumer.name], min(DEMO[consumer.name].duplicates, counts[consumer.name]), 0)
        # its malformed copies reached it through its channel and were refused with their reasons; the copies no
        # rule takes stayed on the bus, whose check kept them
        assert (kind.malformed, kind.rejected, kind.unrouted) == (malformed, malformed - len(UNROUTED), len(UNROUTED))
        assert kind.ordered == (consumer.channel is Channel.KAFKA) and kind.out_of_order == 0  # each partition's order
    assert {c.channel for c in fed} == {Channel.KAFKA, Channel.RABBITMQ} or len(PLAIN) < 2


@pytest.mark.slow
@pytest.mark.parametrize("channel", [Channel.KAFKA, Channel.RABBITMQ])
def test_chaos_on_a_broker_fed_consumer_processes_each_input_once_or_keeps_it_with_its_reason(channel):
    if channel is Channel.RABBITMQ:
        rabbitmq_or_skip()
    consumer = on_channel(PLAIN[0], channel)
    report = run_chaos(events=EVENTS, rates=RATES, flow=consumer.name, seed=5, pipeline=Pipeline(consumers=(consumer,)))
    flow = report.flows[consumer.name]
    ledger = flow.ledger
    assert flow.channel == channel.value
    assert ledger.processed_once + ledger.processed_twice + ledger.in_dead_letter_queue == EVENTS and ledger.lost == 0
    assert ledger.repeats_unexplained == 0 and ledger.repeated_results <= sum(flow.republishable.values())
    assert ledger.out_of_order == 0  # Kafka: each partition's results in offset order, through every fault
    # the faults happened, through this channel
    assert flow.injected_errors > 0 and flow.duplicates_delivered > 0 and flow.duplicates_skipped > 0
    assert sum(flow.failed_invocations.values()) > 0 and flow.claims_expired > 0
    # what it gave up was kept where its channel keeps it, each with a reason, and a redrive moved each back
    kept = sum(flow.kept_reasons.values())
    assert kept == ledger.in_dead_letter_queue + ledger.dead_lettered_after_processing == flow.redriven
    assert all(reason and not reason.startswith("none recorded") for reason in flow.kept_reasons)
    final = flow.after_redrive or ledger
    assert final.processed_once + final.processed_twice == EVENTS and final.in_dead_letter_queue == 0
    assert final.lost == 0 and final.repeats_unexplained == 0 and flow.balanced


def test_the_demo_without_a_rabbitmq_broker_says_in_one_line_how_to_start_one(monkeypatch):
    with socket.socket() as probe:  # a port where nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv(BROKER_URL_VARIABLE, f"amqp://guest:guest@127.0.0.1:{port}/")
    consumer = on_channel(PLAIN[0], Channel.RABBITMQ)
    with pytest.raises(BrokerUnavailable) as raised:
        run_demo(counts={consumer.name: 1}, pipeline=Pipeline(consumers=(consumer,)))
    code, line = explain(raised.value)
    assert code != 0 and "\n" not in line and f"`{START_COMMAND}`" in line and str(port) in line
