"""Functions run at once, as Lambda runs them: up to the mapping's MaximumConcurrency, Parallel
branches side by side, and no more than a function's reserved concurrency."""

from __future__ import annotations

import json
import threading
import time

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.runtime_fixtures import runtime
from tests.runtime_fixtures import templates as t

SLEEP_S = 0.3


def peak_running(function, until: threading.Event) -> list[int]:
    seen = [0]

    def sample() -> None:
        while not until.is_set():
            seen[0] = max(seen[0], function.running)
            time.sleep(0.005)

    threading.Thread(target=sample, daemon=True).start()
    return seen


def test_a_mapping_runs_up_to_its_maximum_concurrency_batches_at_once():
    template = t.template(Work=t.queue(), Consumer=t.function("consumer", SLEEP_S=str(SLEEP_S)),
                         Mapping=t.event_source("Consumer", "Work", batch_size=1, max_concurrency=2))
    with runtime(template, tap=False) as pipeline:
        url = pipeline.deployment.queues["Work"].url
        for i in range(6):
            pipeline.sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"n": i}))
        function = pipeline.functions["Consumer"]
        done = threading.Event()
        peak = peak_running(function, done)
        pipeline.drain(timeout_s=10)
        done.set()
        assert len(function.invocations) == 6 and peak[0] == 2  # two at a time, never three


def test_parallel_branches_run_at_once():
    branch = {"StartAt": "Sleep", "States": {"Sleep": t.task("Echo")}}
    asl = {"StartAt": "Both", "States": {"Both": {"Type": "Parallel", "Branches": [branch, branch], "End": True}}}
    template = t.template(Echo=t.function("echo", tag="echo"), Machine=t.state_machine(asl, t.function_arn("Echo")))
    with runtime(template, tap=False) as pipeline:
        done = threading.Event()
        peak = peak_running(pipeline.functions["Echo"], done)
        pipeline.stepfunctions.start_execution(stateMachineArn=pipeline.state_machines["Machine"].arn, name="both",
                                               input=json.dumps({"sleep_s": 1.0}))
        pipeline.drain(timeout_s=30)
        done.set()
        (execution,) = pipeline.executions("Machine")
        assert execution.status == "SUCCEEDED" and len(pipeline.functions["Echo"].invocations) == 2
        assert peak[0] == 2  # both branches' tasks were running at the same moment


def test_an_invoke_beyond_reserved_concurrency_is_throttled():
    echo = t.function("echo", tag="echo")
    echo["Properties"]["ReservedConcurrentExecutions"] = 1
    with runtime(t.template(Echo=echo), tap=False) as pipeline:
        name = pipeline.functions["Echo"].spec.name
        errors: list[str] = []

        def call() -> None:
            try:
                boto3.client("lambda").invoke(FunctionName=name, Payload=json.dumps({"sleep_s": SLEEP_S}))
            except ClientError as error:
                errors.append(error.response["Error"]["Code"])

        threads = [threading.Thread(target=call) for _ in range(2)]
        for thread in threads:
            thread.start()
            time.sleep(0.05)
        for thread in threads:
            thread.join()
        assert errors == ["TooManyRequestsException"]
        assert len(pipeline.functions["Echo"].invocations) == 1


@pytest.mark.parametrize("sends", [1, 25])
def test_drain_returns_only_when_every_message_is_consumed(sends):
    template = t.template(Work=t.queue(), Consumer=t.function("consumer", SLEEP_S="0"),
                          Mapping=t.event_source("Consumer", "Work", batch_size=10, max_concurrency=3))
    with runtime(template, tap=False) as pipeline:
        url = pipeline.deployment.queues["Work"].url
        for i in range(sends):
            pipeline.sqs.send_message(QueueUrl=url, MessageBody=str(i))
        pipeline.drain(timeout_s=10)
        consumed = [line for line in pipeline.functions["Consumer"].logs if line.get("message") == "consumed"]
        assert len(consumed) == sends and pipeline.event_sources[0].backlog() == 0


def test_a_message_wakes_the_pollers_of_its_own_queue_only():
    """A poller sleeps until its queue changes: with many mappings, a message is not a wake-up for each of them."""
    names = [f"Work{n}" for n in range(5)]
    resources = {"Consumer": t.function("consumer")}
    for name in names:
        resources[name] = t.queue()
        resources[f"Mapping{name}"] = t.event_source("Consumer", name, batch_size=1)
    with runtime(t.template(**resources), tap=False) as pipeline:
        sources = {source.queue.logical_id: source for source in pipeline.event_sources}
        assert set(sources) == set(names) and len({id(source.wakeup) for source in sources.values()}) == len(names)
        pipeline.start()  # started here, so the drains leave the pollers running (a stop wakes each one)
        pipeline.drain(timeout_s=10)
        before = {name: source.wakeup.generation for name, source in sources.items()}
        for i in range(20):
            pipeline.sqs.send_message(QueueUrl=pipeline.deployment.queues["Work0"].url, MessageBody=json.dumps({"n": i}))
        pipeline.drain(timeout_s=10)
        assert len(pipeline.functions["Consumer"].invocations) == 20
        woken = {name: source.wakeup.generation - before[name] for name, source in sources.items()}
        assert woken["Work0"] >= 20  # each message, and each invocation's end
        assert all(woken[name] == 0 for name in names[1:]), woken
