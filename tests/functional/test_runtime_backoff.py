"""The local poller honours a backoff the function asks for: a record it hid (``ChangeMessageVisibility``, as a
consumer over its rate does) is not delivered again before the backoff ends, whereas a record that simply failed
is retried at once (the runtime's shortcut for the visibility timeout); the receive count, and so the DLQ, is
SQS's either way."""

from __future__ import annotations

import json
import time

from tests.runtime_fixtures import runtime
from tests.runtime_fixtures import templates as t

BACKOFF_S = 1


def backoff_template(*, max_receive_count: int = 2) -> dict:
    return t.template(Work=t.queue("Dead", max_receive_count=max_receive_count), Dead=t.queue(),
                      Consumer=t.function("backoff", BACKOFF_S=str(BACKOFF_S)),
                      Mapping=t.event_source("Consumer", "Work", batch_size=10))


def consumed(pipeline) -> list[tuple[int, int]]:
    return sorted((line["n"], line["receives"]) for line in pipeline.functions["Consumer"].logs
                  if line.get("message") == "consumed")


def send(pipeline, bodies: list[dict]) -> None:
    url = pipeline.deployment.queues["Work"].url
    for n, body in enumerate(bodies):
        pipeline.sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"n": n, **body}))


def test_a_record_the_function_hid_is_not_redelivered_before_its_backoff():
    with runtime(backoff_template(), tap=False) as pipeline:
        send(pipeline, [{"back_off": True}, {"fail": True}, {"back_off": True}, {}])
        source = pipeline.event_sources[0]
        first = source.pump()
        assert first is not None and first.records == 4
        hid_at = time.monotonic()
        # At once, only the record that failed plainly comes back; the two hidden by the function do not.
        again = source.pump()
        assert again is not None and again.records == 1
        assert consumed(pipeline) == [(1, 2), (3, 1)]
        assert source.pump() is None and source.backlog() == 2 and source.backed_off == 2
        while time.monotonic() - hid_at < BACKOFF_S + 0.2:  # the backoff is SQS's clock (moto's), in whole seconds
            time.sleep(0.1)
        last = source.pump()
        assert last is not None and last.records == 2
        # Delivered twice each, as SQS counts receives; consumed on the second, under maxReceiveCount: none dead.
        assert consumed(pipeline) == [(0, 2), (1, 2), (2, 2), (3, 1)]
        assert source.backlog() == 0 and not pipeline.peek(pipeline.deployment.queues["Dead"].url)


def test_a_started_poller_waits_out_every_backoff_and_loses_nothing():
    bodies = [{"back_off": n % 3 != 0} for n in range(25)]
    with runtime(backoff_template(), tap=False) as pipeline:
        send(pipeline, bodies)
        pipeline.drain(timeout_s=30)
        source = pipeline.event_sources[0]
        assert consumed(pipeline) == [(n, 2 if body["back_off"] else 1) for n, body in enumerate(bodies)]
        logs = pipeline.functions["Consumer"].logs
        hidden_at = {line["n"]: line["at"] for line in logs if line.get("message") == "backed off"}
        back_at = {line["n"]: line["at"] for line in logs if line.get("message") == "consumed" and line["n"] in hidden_at}
        assert hidden_at.keys() == back_at.keys()
        assert min(back_at[n] - hidden_at[n] for n in hidden_at) >= BACKOFF_S  # never sooner (a bound, not a speed)
        assert source.backed_off == sum(body["back_off"] for body in bodies)
        assert not pipeline.peek(pipeline.deployment.queues["Dead"].url)
