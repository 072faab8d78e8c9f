"""``inferbus new consumer --channel rabbitmq``, end to end in a copy of this repository: the declaration reads
the named queue, the generated functional test passes as written against a real broker (it publishes the
demo's samples to the queue), the demo feeds it through the broker and balances, and a wrong ``--queue``
is refused in one line, writing nothing."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.declared import DEMO
from tests.functional.test_scaffold import FIXTURES, REPO, SKIPPED, files_in, run
from tests.rabbitmq_broker import rabbitmq_or_skip


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory):
    rabbitmq_or_skip()
    copy = tmp_path_factory.mktemp("scaffold-rabbitmq") / "repo"
    shutil.copytree(REPO, copy, ignore=SKIPPED)
    (copy / "node_modules").symlink_to(REPO / "node_modules")
    return copy


@pytest.mark.slow
def test_a_rabbitmq_consumer_is_declared_on_its_queue_and_its_generated_test_passes_on_the_broker(copy):
    finished = run(copy, "-m", "inferbus.cli", "new", "consumer", "sc-rabbit", "--model", FIXTURES / "iris-tensor.onnx",
                   "--event", "ScRabbitSubmitted", "--channel", "rabbitmq", "--queue", "sc-rabbit-orders")
    assert finished.returncode == 0, finished.stderr
    declared = run(copy, "-c", "from pipeline import load_pipeline; c = load_pipeline().component('sc-rabbit'); "
                   "print(c.channel.value, c.broker.queue, c.broker.virtual_host, c.broker.stack_broker)")
    assert declared.stdout.split() == ["rabbitmq", "sc-rabbit-orders", "/", "True"], declared.stderr
    tested = run(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "tests/functional/test_sc_rabbit.py",
                 timeout=900)
    assert tested.returncode == 0 and "2 passed" in tested.stdout, tested.stdout[-4000:] + tested.stderr[-2000:]

    # The demo publishes the consumer's samples (and their duplicates) to its queue, and its ledger balances.
    smaller = [option for name in DEMO for option in ("--count", f"{name}={min(DEMO[name].count, 8)}")]
    demo = run(copy, "-m", "inferbus.cli", "demo", "--json", *smaller, "--count", "sc-rabbit=12",
               "--duplicates", "sc-rabbit=4", timeout=900)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    report = json.loads(demo.stdout)
    kind = report["kinds"]["sc-rabbit"]
    assert report["balanced"] and kind["balanced"], kind
    assert (kind["sent"], kind["results"], kind["duplicate_deliveries"], kind["duplicate_results"]) == (12, 12, 4, 0)
    assert kind["rejected"] > 0  # its malformed copies, rejected by the consumer that read them from the queue


@pytest.mark.parametrize("options, message", [
    (["--channel", "rabbitmq", "--queue", "amq.orders"], "--queue amq.orders: queue 'amq.orders': a name starting 'amq.'"),
    (["--queue", "orders"], "--queue names a RabbitMQ queue: add --channel rabbitmq"),
])
def test_a_wrong_queue_is_refused_in_one_line_and_nothing_is_written(copy, options, message):
    before = files_in(copy)
    finished = run(copy, "-m", "inferbus.cli", "new", "consumer", "sc-rabbit-wrong", "--model",
                   FIXTURES / "iris-tensor.onnx", "--event", "ScRabbitWrongSubmitted", *options)
    assert finished.returncode == 2 and finished.stderr.count("\n") == 1 and message in finished.stderr, finished.stderr
    assert files_in(copy) == before
