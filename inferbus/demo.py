"""The embedded end-to-end demo: all four event kinds in, every event accounted for.

What it sends, all from held-out data that ships in ``models/``:

- ``ImageSubmitted`` digits to the batched SQS classifier, plus malformed events and
  duplicate deliveries;
- ``ImageSubmitted`` with ``analysis: full`` to the parallel vision workflow (two models);
- ``TextSubmitted`` review sentences to the sequential text pipeline, plus a blank and an
  over-long text;
- ``TransactionSubmitted`` rows to the risk scorer, whose ``RiskScored`` events the bus routes
  to automatic approval or to manual review; the demo then plays the reviewer (approving the
  rows whose true label is benign, rejecting the others) with the same code as
  ``inferbus reviews``.

It drains, then reads back what the bus carried, the executions, the queues and the metrics.
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from inferbus.runtime.lambda_host import add_code_root_to_path

REPO_ROOT = Path(__file__).resolve().parents[1]
MODELS = REPO_ROOT / "models"
HOLDOUT = MODELS / "digits-holdout.npz"
TEXT_HOLDOUT = MODELS / "text-holdout.jsonl"
RISK_HOLDOUT = MODELS / "risk-holdout.npz"
DEMO_SOURCE = "inferbus.demo"
RISKY_LABEL = 0  # risk-holdout.npz: 0 = malignant (the stand-in for risky), scikit-learn's coding
add_code_root_to_path()  # the CLI validates with the same contracts the handlers use

from inferbus_lambda.contracts import (  # noqa: E402
    CloudEvent,
    Customer,
    ImageSubmitted,
    InvalidEventError,
    TextSubmitted,
    TransactionSubmitted,
    from_eventbridge_event,
    new_event,
    to_put_events_entry,
)

Progress = Callable[[str, int, int], None]
FAILURE_TYPES = {"ImageAnalysisFailed", "TextAnalysisFailed", "ReviewFailed", "ApprovalFailed"}
REJECTION_ERRORS = {"InvalidEventError", "IdConflictError"}  # the input was refused: it waits in InvalidEvents


def malformed_entries(template: dict[str, Any], bus_name: str, cases: list[tuple[str, Callable[[dict], Any]]],
                      prefix: str) -> list[tuple[str, dict[str, Any]]]:
    """Copies of a valid entry, each broken by one change, each with why."""
    entries = []
    for index, (why, corrupt) in enumerate(cases):
        detail = json.loads(template["Detail"])
        detail["id"] = f"{prefix}-{index}"
        corrupt(detail)
        entries.append((why, {**template, "Detail": json.dumps(detail), "EventBusName": bus_name}))
    return entries


IMAGE_CASES: list[tuple[str, Callable[[dict], Any]]] = [
    ("63 pixels", lambda d: d["data"].update(pixels=d["data"]["pixels"][:63])),
    ("pixel 17 > 16", lambda d: d["data"]["pixels"].__setitem__(5, 17)),
    ("pixel as a string", lambda d: d["data"]["pixels"].__setitem__(0, "7")),
    ("extra data field", lambda d: d["data"].update(label=3)),
    ("no correlationid", lambda d: d.pop("correlationid")),
    ("time without zone", lambda d: d.update(time="2026-01-01T00:00:00")),
]
ANALYSIS_CASES = [("65 pixels", lambda d: d["data"].update(pixels=d["data"]["pixels"] + [0]))]
TEXT_CASES = [("blank text", lambda d: d["data"].update(text="   ")),
              ("text over 2,000 characters", lambda d: d["data"].update(text="word " * 500))]
TRANSACTION_CASES = [("29 features", lambda d: d["data"].update(features=d["data"]["features"][:29])),
                     ("feature as a string", lambda d: d["data"]["features"].__setitem__(3, "12.5"))]


def held_out_input(kind: str, *, index: int = 0, text: str | None = None, full: bool = False,
                   segment: str = "returning") -> tuple[Any, Any]:
    """One event's ``data`` from the held-out sets, and its true label (for ``inferbus send``)."""
    if kind == "text":
        return TextSubmitted(text=text or ""), None
    if kind == "transaction":
        risk = np.load(RISK_HOLDOUT)
        customer = Customer(id=f"customer-{index}", segment=segment)
        label = "risky" if int(risk["labels"][index]) == RISKY_LABEL else "not risky"
        return TransactionSubmitted(customer=customer, features=[float(v) for v in risk["features"][index]]), label
    digits = np.load(HOLDOUT)
    pixels = [int(v) for v in digits["images"][index]]
    return ImageSubmitted(pixels=pixels, analysis="full" if full else "classify"), int(digits["labels"][index])


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


@dataclass
class KindReport:
    """One kind of input: what was sent and where every distinct event ended up."""

    name: str
    sent: int = 0
    malformed: int = 0
    duplicates: int = 0
    results: int = 0
    rejected: int = 0  # kept in the invalid-events queue with the reason
    failure_events: int = 0  # a workflow failed after its retries: its ...Failed event says why
    duplicate_results: int = 0
    in_dead_letter_queues: int = 0
    correct: int = 0
    scored: int = 0  # results with a true label to compare against
    latencies_ms: list[float] = field(default_factory=list)

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.scored if self.scored else None

    @property
    def balanced(self) -> bool:
        """Each distinct event: one result, one rejection, one failure event, or a DLQ message; nothing twice."""
        accounted = self.results + self.rejected + self.failure_events + self.in_dead_letter_queues
        return accounted == self.sent + self.malformed and not self.duplicate_results

    def as_dict(self) -> dict[str, Any]:
        return {
            "sent": self.sent, "malformed": self.malformed, "duplicate_deliveries": self.duplicates,
            "results": self.results, "rejected": self.rejected, "failure_events": self.failure_events,
            "in_dead_letter_queues": self.in_dead_letter_queues,
            "duplicate_results": self.duplicate_results, "balanced": self.balanced,
            "accuracy": None if self.accuracy is None else round(self.accuracy, 4), "scored": self.scored,
            "latency_ms": {"p50": round(percentile(self.latencies_ms, 50), 1), "p95": round(percentile(self.latencies_ms, 95), 1)},
        }


@dataclass
class WorkflowReport:
    name: str
    statuses: dict[str, int] = field(default_factory=dict)
    stage_ms: dict[str, list[float]] = field(default_factory=dict)  # time in each state, per execution
    handler_ms: dict[str, list[float]] = field(default_factory=dict)  # a Task state's function, per invocation
    failures: list[dict[str, Any]] = field(default_factory=list)  # from the ...Failed events: input, error, cause

    def as_dict(self) -> dict[str, Any]:
        return {
            "executions": self.statuses,
            "stage_latency_ms_p50": {stage: round(percentile(values, 50), 1) for stage, values in self.stage_ms.items()},
            "handler_ms_p50": {stage: round(percentile(values, 50), 1) for stage, values in self.handler_ms.items()},
            "failures": self.failures,
        }


@dataclass
class DemoReport:
    kinds: dict[str, KindReport] = field(default_factory=dict)
    workflows: dict[str, WorkflowReport] = field(default_factory=dict)
    routing: dict[str, int] = field(default_factory=dict)
    reviews: dict[str, int] = field(default_factory=dict)
    dead_letters: dict[str, int] = field(default_factory=dict)
    dead_letter_reasons: dict[str, str] = field(default_factory=dict)
    rejection_reasons: dict[str, str] = field(default_factory=dict)  # event id -> why it was kept aside
    rejected_by_bus: int = 0
    invalid_results: list[str] = field(default_factory=list)  # events the pipeline published that break a contract
    invocations: dict[str, int] = field(default_factory=dict)
    image_batch_sizes: list[int] = field(default_factory=list)
    inference_ms: list[float] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    cloud_only: list[tuple[str, str, str]] = field(default_factory=list)
    partly_local: list[tuple[str, str, str]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def balanced(self) -> bool:
        risk = self.routing
        decided = (risk.get("auto_approved", 0) + risk.get("reviews_completed", 0) + risk.get("review_failed", 0)
                   + risk.get("approval_failed", 0) + risk.get("reviews_pending", 0))
        return (all(kind.balanced for kind in self.kinds.values()) and decided == risk.get("scored", 0)
                and not self.invalid_results)

    def as_dict(self) -> dict[str, Any]:
        return {
            "balanced": self.balanced,
            "kinds": {name: kind.as_dict() for name, kind in self.kinds.items()},
            "workflows": {name: workflow.as_dict() for name, workflow in self.workflows.items()},
            "risk_routing": self.routing,
            "reviews": self.reviews,
            "rejected_by_bus": self.rejected_by_bus,
            "invalid_results": self.invalid_results,
            "dead_letters": self.dead_letters,
            "dead_letter_reasons": self.dead_letter_reasons,
            "rejection_reasons": self.rejection_reasons,
            "invocations": self.invocations,
            "image_batch_sizes": self.image_batch_sizes,
            "inference_ms_per_batch": {"p50": round(percentile(self.inference_ms, 50), 3),
                                       "max": round(max(self.inference_ms, default=0), 3)},
            "metrics": self.metrics,
            "cloud_only": [f"{t} {lid}: {why}" for lid, t, why in self.cloud_only],
            "partly_local": [f"{t} {lid}: {why}" for lid, t, why in self.partly_local],
            "seconds": round(self.seconds, 2),
        }


@dataclass
class Sent:
    """What the demo sent, to check the results against."""

    truth: dict[str, Any] = field(default_factory=dict)  # event id -> true label
    kind_of: dict[str, str] = field(default_factory=dict)  # event id -> kind
    sent_at: dict[str, datetime] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)  # malformed event id -> why
    entries: list[dict[str, Any]] = field(default_factory=list)

    def add(self, kind: str, event: CloudEvent[Any], bus_name: str, truth: Any) -> dict[str, Any]:
        self.truth[event.id], self.kind_of[event.id], self.sent_at[event.id] = truth, kind, event.time
        entry = to_put_events_entry(event, bus_name)
        self.entries.append(entry)
        return entry

    def add_malformed(self, kind: str, template: dict[str, Any], bus_name: str,
                      cases: list[tuple[str, Callable[[dict], Any]]]) -> int:
        bad = malformed_entries(template, bus_name, cases, prefix=f"malformed-{kind}")
        for why, entry in bad:
            event_id = json.loads(entry["Detail"])["id"]
            self.reasons[event_id], self.kind_of[event_id] = why, kind
            self.entries.append(entry)
        return len(bad)


def build_inputs(bus_name: str, *, images: int, analyses: int, texts: int, transactions: int, duplicates: int,
                 report: DemoReport) -> Sent:
    sent = Sent()
    digits = np.load(HOLDOUT)
    kinds = {name: KindReport(name) for name in ("image", "analysis", "text", "transaction")}
    report.kinds = kinds

    image_entries = []
    for i in range(images):
        event = new_event(ImageSubmitted(pixels=[int(v) for v in digits["images"][i]]), source=DEMO_SOURCE, correlationid=f"img-{i}")
        image_entries.append(sent.add("image", event, bus_name, int(digits["labels"][i])))

    analysis_entries = []
    for i in range(images, images + analyses):
        event = new_event(ImageSubmitted(pixels=[int(v) for v in digits["images"][i]], analysis="full"),
                          source=DEMO_SOURCE, correlationid=f"analysis-{i}")
        analysis_entries.append(sent.add("analysis", event, bus_name, int(digits["labels"][i])))

    text_entries = []
    for i, line in enumerate(json.loads(line) for line in TEXT_HOLDOUT.read_text().splitlines()[:texts]):
        event = new_event(TextSubmitted(text=line["text"]), source=DEMO_SOURCE, correlationid=f"text-{i}")
        text_entries.append(sent.add("text", event, bus_name, line["label"]))

    risk = np.load(RISK_HOLDOUT)
    transaction_entries = []
    for i in range(min(transactions, len(risk["labels"]))):
        customer = Customer(id=f"customer-{i % 17}", segment="new" if i % 3 == 0 else "returning")
        event = new_event(TransactionSubmitted(customer=customer, features=[float(v) for v in risk["features"][i]]),
                          source=DEMO_SOURCE, correlationid=f"txn-{i}")
        transaction_entries.append(sent.add("transaction", event, bus_name, int(risk["labels"][i])))

    for kind, entries, cases in (("image", image_entries, IMAGE_CASES), ("analysis", analysis_entries, ANALYSIS_CASES),
                                 ("text", text_entries, TEXT_CASES), ("transaction", transaction_entries, TRANSACTION_CASES)):
        kinds[kind].sent = len(entries)
        if entries:
            kinds[kind].malformed = sent.add_malformed(kind, entries[0], bus_name, cases)
    sent.entries += image_entries[:duplicates]  # last: at-least-once redeliveries of events already sent
    kinds["image"].duplicates = min(duplicates, len(image_entries))
    return sent


def run_demo(images: int = 200, analyses: int = 16, texts: int = 40, transactions: int = 40, duplicates: int = 5,
             progress: Progress | None = None, template: dict[str, Any] | None = None) -> DemoReport:
    """Send every kind of event, drain, play the reviewer, drain, and account for every event.

    ``progress``, if given, is called as ``progress(stage, done, total)``; ``template``, if
    given, is used instead of synthesizing the app.
    """
    from inferbus.reviews import decide, list_reviews
    from inferbus.runtime import EmbeddedPipeline

    started = time.perf_counter()
    report = DemoReport()
    notify = progress or (lambda stage, done, total: None)

    notify("synthesize + provision", 0, 1)
    with EmbeddedPipeline(template) as pipeline:
        notify("synthesize + provision", 1, 1)
        sent = build_inputs(pipeline.bus_name, images=images, analyses=analyses, texts=texts,
                            transactions=transactions, duplicates=duplicates, report=report)
        stream = sent.entries
        for start in range(0, len(stream), 10):
            report.rejected_by_bus += len(pipeline.put_events(stream[start : start + 10]))
            pipeline.pump()  # the pollers run while the producer sends
            notify("send", min(start + 10, len(stream)), len(stream))
        pipeline.drain()
        notify("drain", 1, 1)

        review_queue = pipeline.queue("ReviewQueue")
        pending = list_reviews(pipeline.sqs, review_queue.url)
        report.reviews["requested"] = len(pending)
        outcomes: Counter[str] = Counter()
        for done, review in enumerate(pending, start=1):
            assert review.request is not None
            txn = review.request.case.transaction_id
            approve = sent.truth.get(txn) != RISKY_LABEL
            note = None if approve else "risk confirmed"
            outcomes[decide(pipeline.sqs, pipeline.stepfunctions, review_queue.url, txn, approve=approve,
                            reviewer="demo-reviewer", note=note).outcome] += 1
            notify("review", done, len(pending))
        report.reviews.update(outcomes)
        pipeline.drain()
        report.reviews["still_pending"] = len(list_reviews(pipeline.sqs, review_queue.url))
        notify("drain", 1, 1)

        account(pipeline, sent, report)
    report.seconds = time.perf_counter() - started
    return report


def task_functions(definition: dict[str, Any]) -> dict[str, str]:
    """Task state name -> the function ARN it invokes, in a machine and its Parallel branches."""
    found = {}
    for name, state in definition["States"].items():
        function_arn = state.get("Parameters", {}).get("FunctionName") if state["Type"] == "Task" else None
        if function_arn:
            found[name] = function_arn
        for branch in state.get("Branches", []):
            found.update(task_functions(branch))
    return found


def account(pipeline: Any, sent: Sent, report: DemoReport) -> None:
    """Read back what the bus carried, the DLQs, executions and metrics into ``report``."""
    kinds = report.kinds
    seen: dict[str, set[str]] = defaultdict(set)
    routing: Counter[str] = Counter()
    # Reported by the workflow's construct id: TextPipelineStateMachine1A2B3C4D -> TextPipeline.
    workflow_names = {machine.name: machine.logical_id.split("StateMachine")[0] for machine in pipeline.state_machines.values()}
    result_kind = {"ImageClassified": "image", "ImageAnalyzed": "analysis", "TextAnalyzed": "text", "RiskScored": "transaction"}
    failure_kind = {"ImageAnalysisFailed": "analysis", "TextAnalysisFailed": "text"}
    for delivered in pipeline.tapped_events():
        detail, detail_type = delivered["detail"], delivered["detail-type"]
        if delivered["source"] != DEMO_SOURCE:  # the pipeline's own events must meet their contracts too
            try:
                from_eventbridge_event(delivered)
            except InvalidEventError as error:
                report.invalid_results.append(f"{detail_type} {error}")
        data = detail.get("data", {})
        input_id = data.get("input_id")
        if detail_type in result_kind:
            kind = kinds[result_kind[detail_type]]
            if input_id in seen[detail_type]:
                kind.duplicate_results += 1
                continue
            seen[detail_type].add(input_id)
            kind.results += 1
            predicted = {"ImageClassified": data.get("label"), "ImageAnalyzed": data.get("label"),
                         "TextAnalyzed": data.get("sentiment", {}).get("label")}.get(detail_type)
            if predicted is not None and input_id in sent.truth:
                kind.scored += 1
                kind.correct += int(predicted == sent.truth[input_id])
            if input_id in sent.sent_at:
                kind.latencies_ms.append((datetime.fromisoformat(detail["time"]) - sent.sent_at[input_id]).total_seconds() * 1000)
        if detail_type in FAILURE_TYPES:
            if detail_type in failure_kind and data["error"] not in REJECTION_ERRORS:  # rejections are counted below
                kinds[failure_kind[detail_type]].failure_events += 1
            name = workflow_names[data["execution"].split(":")[-2]]
            workflow = report.workflows.setdefault(name, WorkflowReport(name))
            reason = sent.reasons.get(input_id, "")
            workflow.failures.append({"input_id": input_id, "error": data["error"], "cause": (data.get("cause") or "")[:200],
                                      "sent_because": reason})
        if detail_type == "RiskScored":
            routing["scored"] += 1
        elif detail_type == "TransactionApproved":
            routing["auto_approved" if data["decided_by"] == "auto" else "approved_by_reviewer"] += 1
        elif detail_type == "ReviewCompleted":
            routing["reviews_completed"] += 1
            routing[f"review_{data['decision']}"] += 1
        elif detail_type in {"ReviewFailed", "ApprovalFailed"}:
            routing["review_failed" if detail_type == "ReviewFailed" else "approval_failed"] += 1
    routing["reviews_pending"] = report.reviews.get("still_pending", 0)
    for segment in ("New", "Returning"):  # what the content-based rules put on each offers queue
        routing[f"offers_{segment.lower()}"] = len(pipeline.peek(f"{segment}CustomerOffersQueuesQueue"))
    report.routing = dict(routing)

    for message in pipeline.peek("InvalidEvents"):
        kept = json.loads(message["Body"])
        if "consumer" in kept:  # sent by a queue consumer
            event_id, reason = kept["event_id"], f"{kept['error']}: {kept['reason']}"
        else:  # a workflow's ...Failed event, brought by the rule
            event_id, reason = kept["detail"]["data"]["input_id"], f"{kept['detail']['data']['error']}: {kept['detail']['data']['cause']}"
        report.rejection_reasons[str(event_id)] = reason
        if sent.kind_of.get(event_id):
            kinds[sent.kind_of[event_id]].rejected += 1

    for logical_id, messages in pipeline.dead_letters().items():
        report.dead_letters[logical_id] = len(messages)
        for message in messages:
            event_id = json.loads(message["Body"])["detail"].get("id")
            kind = sent.kind_of.get(event_id)
            if kind:
                kinds[kind].in_dead_letter_queues += 1
            report.dead_letter_reasons[event_id] = sent.reasons.get(event_id, "?")

    for function in pipeline.functions.values():
        report.invocations[function.spec.logical_id] = len(function.invocations)
        for name, values in function.metrics.items():
            report.metrics[name] = round(report.metrics.get(name, 0.0) + sum(values), 3)
        if function.spec.logical_id.startswith("ImageClassifier"):
            report.inference_ms += function.metrics.get("InferenceMs", [])
            report.image_batch_sizes = [i.records for i in function.invocations]
        for line in function.logs:
            if line.get("status") and line.get("event_id") in report.dead_letter_reasons:
                report.dead_letter_reasons[line["event_id"]] = line["reason"]

    by_logical_id = {machine.logical_id: machine.name for machine in pipeline.state_machines.values()}
    functions_by_arn = {function.spec.arn: function for function in pipeline.functions.values()}
    for machine in pipeline.state_machines.values():
        workflow = report.workflows.setdefault(workflow_names[machine.name], WorkflowReport(workflow_names[machine.name]))
        for state, function_arn in task_functions(json.loads(machine.definition)).items():
            function = functions_by_arn.get(function_arn)
            if function is not None:
                workflow.handler_ms[state] = [i.duration_ms for i in function.invocations if i.trigger != "sqs"]
    for execution in pipeline.executions():
        name = workflow_names[by_logical_id.get(execution.state_machine, execution.state_machine)]
        workflow = report.workflows.setdefault(name, WorkflowReport(name))
        workflow.statuses[execution.status] = workflow.statuses.get(execution.status, 0) + 1
        for state, timing in execution.states.items():
            if timing.duration_ms is not None:
                workflow.stage_ms.setdefault(state, []).append(timing.duration_ms)
    report.cloud_only = pipeline.deployment.cloud_only
    report.partly_local = pipeline.deployment.partly_local
