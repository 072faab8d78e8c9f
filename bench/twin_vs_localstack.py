"""The local twin (``inferbus serve``) under repeated load, side by side with LocalStack, in one run.

One boto3 client, per server and per run: 1,000 events in 100 PutEvents of 10 to a bus where a rule
of the client's own sends them to a queue of its own, then it drains that queue (receive 10, delete
in a batch). Printed per run and server: events/s (events delivered over the time from the first put
to the last message received), the PutEvents p50, the last delivery's lag after the last put
returned (when the last event reached the client's queue, 0 if before the put answered: the latest ``SentTimestamp`` among the
run's messages, which both servers stamp from this machine's clock as the message is enqueued), the
drain (from the last put to the last message received: the client's 200 receive and delete requests
after the puts, so mostly how fast a server answers SQS), the server's CPU time (user + system) per
event and its resident memory; then the ratio inferbus / LocalStack, and each server's last run
against its first.

The runs go to the same servers one after the other, so a server that slows as its queues fill or
its memory grows shows it run after run. On a shared machine the rates move with the others' load;
the CPU per event moves little with it, so it tells a server whose work per event grows from a busy
machine. LocalStack (``localstack-core[runtime]`` from PyPI, in a
venv of its own, started in host mode without Docker, events and SQS only) is given
``--localstack-python``; when it is not given or does not start, one line says so and the inferbus
figures are printed all the same. Loopback only; every wait is bounded.

LocalStack 2026.3 from PyPI needs Python 3.13 and, on this machine's registry, older pins of four
of its dependencies (newer ones removed what it imports)::

    python3.13 -m venv /tmp/ls313
    /tmp/ls313/bin/pip install 'localstack-core[runtime]' 'cbor2<6' 'pyopenssl<24.3' 'cryptography<44' 'service_identity<24.2'

Usage::

    .venv/bin/python bench/twin_vs_localstack.py [--runs 10] [--events 1000] [--template cdk.out/x.template.json]
        [--localstack-python /tmp/ls313/bin/python] [--retention 30]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import boto3

ROOT = Path(__file__).resolve().parents[1]
CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": "us-east-1"}
ACCOUNT = "000000000000", "123456789012"  # LocalStack's default account, moto's
START_TIMEOUT_S = 300.0  # synthesizing the app, or LocalStack's first start
DRAIN_TIMEOUT_S = 120.0
BATCH = 10  # entries per PutEvents, messages per receive


@dataclass(frozen=True)
class Server:
    name: str
    endpoint: str
    bus: str
    pid: int


@dataclass(frozen=True)
class RunFigures:
    events_per_s: float
    put_p50_ms: float
    last_delivery_lag_s: float
    drain_s: float
    delivered: int
    rss_mb: float
    cpu_ms_per_event: float


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _with_children(pid: int) -> list[int]:
    """A process and its children (LocalStack runs under a supervisor)."""
    try:
        return [pid, *(int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split())]
    except OSError:
        return [pid]


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children, in MB."""
    total = 0
    for each in _with_children(pid):
        try:
            for line in Path(f"/proc/{each}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def cpu_s(pid: int) -> float:
    """CPU time (user + system) a process and its children have used so far, in seconds: a figure the
    machine's other load moves little."""
    total = 0
    for each in _with_children(pid):
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def stop(process: subprocess.Popen) -> None:
    """SIGTERM (a clean stop for both servers), then SIGKILL after 30 s."""
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()


@contextmanager
def inferbus_serve(root: Path, template: Path | None, log: Path, retention_s: int | None = None) -> Iterator[Server]:
    port = free_port()
    command = [sys.executable, "-m", "inferbus.cli", "serve", "--port", str(port), "--json"]
    if template is not None:
        command += ["--template", str(template)]
    if retention_s is not None:
        command += ["--retention", str(retention_s)]
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=root, stdout=out, stderr=subprocess.STDOUT, text=True,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        began = time.monotonic()
        while time.monotonic() - began < START_TIMEOUT_S:
            for line in log.read_text().splitlines():
                if line.startswith("{") and json.loads(line).get("kind") == "ready":
                    ready = json.loads(line)
                    yield Server("inferbus", ready["endpoint"], ready["bus"], process.pid)
                    return
            if process.poll() is not None:
                raise RuntimeError(f"inferbus serve exited: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        raise RuntimeError(f"inferbus serve not ready after {START_TIMEOUT_S:.0f} s")
    finally:
        stop(process)


@contextmanager
def localstack(python: str | None, log: Path) -> Iterator[Server | str]:
    """LocalStack in host mode (events and SQS), or why not, in one line."""
    if not python:
        yield "LocalStack: not run (no --localstack-python given)"
        return
    port = free_port()
    environment = {**os.environ, "SERVICES": "events,sqs", "GATEWAY_LISTEN": f"127.0.0.1:{port}",
                   "LOCALSTACK_HOST": f"127.0.0.1:{port}", "DNS_ADDRESS": "0", "SKIP_INFRA_DOWNLOADS": "1",
                   "DISABLE_EVENTS": "1", "LOCALSTACK_VOLUME_DIR": tempfile.mkdtemp(prefix="ls-volume-"),
                   "EAGER_SERVICE_LOADING": "1"}
    with log.open("w") as out:
        try:
            process = subprocess.Popen([python, "-m", "localstack.runtime.main"], stdout=out, stderr=subprocess.STDOUT,
                                       env=environment)
        except OSError as error:
            yield f"LocalStack: not run ({error})"
            return
    try:
        endpoint = f"http://127.0.0.1:{port}"
        began = time.monotonic()
        while time.monotonic() - began < START_TIMEOUT_S and process.poll() is None:
            try:
                with urllib.request.urlopen(f"{endpoint}/_localstack/health", timeout=2) as answer:
                    services = json.load(answer).get("services", {})
                if all(services.get(name) in {"available", "running"} for name in ("events", "sqs")):
                    events = boto3.client("events", endpoint_url=endpoint, **CREDENTIALS)
                    events.create_event_bus(Name="bench")
                    yield Server("localstack", endpoint, "bench", process.pid)
                    return
            except OSError:
                pass
            time.sleep(0.5)
        tail = log.read_text().strip().splitlines()[-1:] or ["no output"]
        yield f"LocalStack: did not start ({tail[0][:160]})"
    finally:
        stop(process)


class Client:
    """The one boto3 client of a server: its own rule on the bus and its own queue."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.events = boto3.client("events", endpoint_url=server.endpoint, **CREDENTIALS)
        self.sqs = boto3.client("sqs", endpoint_url=server.endpoint, **CREDENTIALS)
        self.url = self.sqs.create_queue(QueueName="bench-watch")["QueueUrl"]
        arn = self.sqs.get_queue_attributes(QueueUrl=self.url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        self.events.put_rule(Name="bench-watch", EventBusName=server.bus,
                             EventPattern=json.dumps({"source": ["bench.client"]}))
        self.events.put_targets(Rule="bench-watch", EventBusName=server.bus, Targets=[{"Id": "watch", "Arn": arn}])

    def run(self, run: int, events: int) -> RunFigures:
        entries = [{"EventBusName": self.server.bus, "Source": "bench.client", "DetailType": "BenchPing",
                    "Detail": json.dumps({"run": run, "n": n, "text": "x" * 200})} for n in range(events)]
        put_ms = []
        cpu_before = cpu_s(self.server.pid)
        first = time.monotonic()
        for start in range(0, events, BATCH):
            began = time.monotonic()
            answer = self.events.put_events(Entries=entries[start:start + BATCH])
            put_ms.append((time.monotonic() - began) * 1000)
            if answer["FailedEntryCount"]:
                raise RuntimeError(f"{self.server.name} refused entries: {answer['Entries']}")
        last_put, last_put_epoch_ms = time.monotonic(), time.time() * 1000
        delivered, last_received, last_sent_ms = 0, last_put, 0
        while delivered < events and time.monotonic() - last_put < DRAIN_TIMEOUT_S:
            messages = self.sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=BATCH, WaitTimeSeconds=1,
                                                AttributeNames=["SentTimestamp"]).get("Messages", [])
            if messages:
                last_received = time.monotonic()
                delivered += len(messages)
                last_sent_ms = max(last_sent_ms, *(int(m["Attributes"]["SentTimestamp"]) for m in messages))
                self.sqs.delete_message_batch(QueueUrl=self.url, Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)])
        return RunFigures(delivered / (last_received - first), statistics.median(put_ms),
                          max(last_sent_ms - last_put_epoch_ms, 0.0) / 1000, last_received - last_put,
                          delivered, rss_mb(self.server.pid), (cpu_s(self.server.pid) - cpu_before) * 1000 / events)


def line(run: int, name: str, figures: RunFigures) -> str:
    return (f"{run:>3}  {name:10}  {figures.events_per_s:9.0f}  {figures.put_p50_ms:11.1f}  "
            f"{figures.last_delivery_lag_s * 1000:11.0f}  {figures.drain_s:7.2f}  {figures.delivered:9}  "
            f"{figures.cpu_ms_per_event:10.2f}  "
            f"{figures.rss_mb:7.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="runs on the same servers (default 10)")
    parser.add_argument("--events", type=int, default=1000, help="events per run, put 10 at a time (default 1000)")
    parser.add_argument("--template", type=Path, help="a synthesized template for inferbus serve (else it synthesizes)")
    parser.add_argument("--retention", type=int, help="inferbus serve's --retention in seconds (default serve's, 1 hour: "
                        "the archive then fills its 10,000-event window over ten runs)")
    parser.add_argument("--localstack-python", help="the python of a venv with localstack-core[runtime]")
    parser.add_argument("--inferbus-root", type=Path, default=ROOT,
                        help="the checkout whose inferbus serve runs (default this one): to measure another version")
    args = parser.parse_args()
    logs = Path(tempfile.mkdtemp(prefix="twin-bench-"))
    print(f"twin vs LocalStack: {args.runs} runs of {args.events} events (PutEvents of {BATCH}) per server; "
          f"{os.cpu_count()} CPUs; logs in {logs}")
    with inferbus_serve(args.inferbus_root, args.template, logs / "inferbus.log", args.retention) as twin, \
            localstack(args.localstack_python, logs / "localstack.log") as other:
        servers = [twin] + ([other] if isinstance(other, Server) else [])
        if isinstance(other, str):
            print(other)
        clients = [Client(server) for server in servers]
        print("run  server      events/s  put p50 ms  last lag ms  drain s  delivered  CPU ms/ev   RSS MB")
        first: dict[str, RunFigures] = {}
        for run in range(1, args.runs + 1):
            figures = {}
            for client in clients if run % 2 else reversed(clients):  # alternate who goes first
                figures[client.server.name] = client.run(run, args.events)
            for client in clients:
                print(line(run, client.server.name, figures[client.server.name]), flush=True)
                first.setdefault(client.server.name, figures[client.server.name])
            if len(figures) == 2:
                ours, theirs = figures["inferbus"], figures["localstack"]
                print(f"     ratio inferbus/localstack: events/s {ours.events_per_s / theirs.events_per_s:.2f}×, "
                      f"put p50 {ours.put_p50_ms / theirs.put_p50_ms:.2f}×, "
                      f"last lag {(ours.last_delivery_lag_s - theirs.last_delivery_lag_s) * 1000:+.0f} ms, "
                      f"drain {ours.drain_s / theirs.drain_s:.2f}×", flush=True)
        for name, was in first.items():
            now = figures[name]
            print(f"{name}: last run / first run: events/s {now.events_per_s / was.events_per_s:.2f}×, "
                  f"put p50 {now.put_p50_ms / was.put_p50_ms:.2f}×, last lag "
                  f"{(now.last_delivery_lag_s - was.last_delivery_lag_s) * 1000:+.0f} ms, drain "
                  f"{now.drain_s / was.drain_s:.2f}×, CPU per event "
                  f"{now.cpu_ms_per_event / was.cpu_ms_per_event:.2f}×, RSS {now.rss_mb - was.rss_mb:+.0f} MB "
                  f"({(now.rss_mb - was.rss_mb) * 1024 / max(args.events * (args.runs - 1), 1):.2f} KB per event)")
        print(f"load average at the end: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")


if __name__ == "__main__":
    main()
