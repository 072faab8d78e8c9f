"""Read back what the bus carried, the queues, the executions and the metrics, and account for every event.

Everything is found through the declarations: a component's results are the events of its
result types from its ``source`` whose ``subject`` is the input's id; its failures, its
``failure`` type; what it left unprocessed, the dead-letter queues; what it refused, the
invalid-events queue. An event type that components take from other components (a result
routed on) is a *chain*: each such event must be taken, and each taken one must end in an
outcome (a result, a failure event, or a person still deciding).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from inferbus_lambda.contracts import InvalidEventError, from_eventbridge_event
from inferbus_lambda.errors import REJECTION_ERRORS
from inferbus_lambda.metric_names import (
    BATCH_SIZE,
    EVENT_LATENCY_MS,
    PROCESSING_MS,
    PUT_EVENTS_FAILED_ENTRIES,
    RECORDS_FAILED,
    RECORDS_PUBLISHED,
)

from inferbus.model.declarations import Channel, Consumer, Pipeline, Route, Workflow
from inferbus.model.names import ACCEPT_STEM, UNROUTED_CHECK_SOURCE
from inferbus.model.scores import component_scores, manifest_models

from inferbus.model.ordering import order_breaks, order_breaks_by

from ..channel_feeds import ChannelFeeds, fed_by_broker
from ..local import REPO_ROOT, LocalPipeline
from .inputs import DEMO_SOURCE, Sent, demo_components, input_type, inputs_of
from .report import ChainReport, ConsumerRun, DemoReport, FlowFigures, KindReport, WorkflowReport

__all__ = ["account", "emf_values", "flow_figures", "state_order", "task_functions"]

FAILED_STATUSES = {"FAILED", "TIMED_OUT", "ABORTED"}
CONSUMER_STAGE = "batch"  # a consumer's one stage


TIMED_STATES = {"Task", "Parallel", "Map", "Wait"}  # where an execution spends time (the others pass at once)


def state_order(definition: dict[str, Any]) -> list[str]:
    """The timed states (Task, Parallel, Map, Wait) of an ASL definition in the order they run:
    from ``StartAt`` along ``Next``, choices, defaults and catchers; a Parallel state's branches
    right after it."""
    order: list[str] = []

    def walk(machine: dict[str, Any]) -> None:
        pending = [machine["StartAt"]]
        while pending:
            name = pending.pop(0)
            if name in order:
                continue
            order.append(name)
            state = machine["States"][name]
            for branch in state.get("Branches", []):
                walk(branch)
            pending += [state[key] for key in ("Next", "Default") if key in state]
            pending += [choice["Next"] for choice in state.get("Choices", [])]
            pending += [catcher["Next"] for catcher in state.get("Catch", [])]

    walk(definition)
    types = {}

    def collect(machine: dict[str, Any]) -> None:
        for name, state in machine["States"].items():
            types[name] = state["Type"]
            for branch in state.get("Branches", []):
                collect(branch)

    collect(definition)
    return [name for name in order if types[name] in TIMED_STATES]


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


def _takers(pipeline: Pipeline, event_type: str, source: str) -> Iterator[Workflow | Route]:
    """The workflows and routes that take events of ``event_type`` from ``source``."""
    for component, event_filter in pipeline.filters():
        if isinstance(component, Consumer) or event_filter.type != event_type:
            continue
        sources = pipeline.resolved_sources(event_filter)
        if sources is None or source in sources:
            yield component  # type: ignore[misc]


def _field(data: Any, path: str) -> Any:
    for key in path.split("."):
        data = data.get(key) if isinstance(data, dict) else None
    return data


class _Ledger:
    """One pass over the events the bus carried."""

    def __init__(self, pipeline: LocalPipeline, sent: Sent, report: DemoReport) -> None:
        self.pipeline = pipeline
        self.declarations = pipeline.declarations
        self.sent = sent
        self.report = report
        self.producers = {p.result_source: p for p in self.declarations.producers}
        self.seen: set[tuple[str, str, str]] = set()
        self.answered: dict[str, set[str]] = defaultdict(set)  # component -> input ids it produced an event for
        self.failed: dict[str, set[str]] = defaultdict(set)
        self.chain_events: dict[str, set[str]] = defaultdict(set)  # event type -> ids of chained events
        self.published: dict[str, list[str]] = defaultdict(list)  # component -> input ids of its results, as carried

    def read(self, delivered: dict[str, Any]) -> None:
        detail, detail_type, source = delivered["detail"], delivered["detail-type"], delivered["source"]
        if source != DEMO_SOURCE:  # the pipeline's own events must meet their contracts too
            try:
                from_eventbridge_event(delivered)
            except InvalidEventError as error:
                self.report.invalid_results.append(f"{detail_type} {error}")
        producer = self.producers.get(source)
        if producer is None:
            return
        data = detail.get("data", {}) if isinstance(detail, dict) else {}
        subject = detail.get("subject") if isinstance(detail, dict) else None
        if detail_type in producer.result_types and any(True for _ in _takers(self.declarations, detail_type, source)):
            self.chain_events[detail_type].add(detail.get("id"))
        if isinstance(producer, Workflow) and detail_type == producer.failure:
            self._failure(producer, data, subject)
        elif detail_type in producer.result_types and subject is not None:
            self._result(producer, detail_type, detail, subject)

    def _result(self, producer: Consumer | Workflow, detail_type: str, detail: dict[str, Any], subject: str) -> None:
        key = (producer.name, detail_type, subject)
        kind = self.report.kinds.get(producer.name)
        mine = kind is not None and self.sent.component_of.get(subject) == producer.name
        if key in self.seen:
            if mine:
                kind.duplicate_results += 1  # type: ignore[union-attr]
            return
        self.seen.add(key)
        first = subject not in self.answered[producer.name]
        self.answered[producer.name].add(subject)
        if not (mine and first):
            return
        self.published[producer.name].append(subject)
        demo = inputs_of(producer)
        assert kind is not None and demo is not None
        kind.results += 1
        truth = self.sent.truth.get(subject)
        if demo.truth_field and truth is not None:
            kind.scored += 1
            kind.correct += int(_field(detail.get("data"), demo.truth_field) == truth)
        if subject in self.sent.sent_at:
            elapsed = datetime.fromisoformat(detail["time"]) - self.sent.sent_at[subject]
            kind.latencies_ms.append(elapsed.total_seconds() * 1000)

    def _failure(self, workflow: Workflow, data: dict[str, Any], subject: str | None) -> None:
        input_id = data.get("input_id") or subject
        report = self.report.workflows.setdefault(workflow.name, WorkflowReport(workflow.name))
        report.failures.append({"input_id": input_id, "error": data.get("error"), "cause": (data.get("cause") or "")[:200],
                                "sent_because": self.sent.reasons.get(input_id, "")})
        if input_id:
            self.answered[workflow.name].add(input_id)
            self.failed[workflow.name].add(input_id)
        kind = self.report.kinds.get(workflow.name)
        if kind is not None and data.get("error") not in REJECTION_ERRORS and self.sent.component_of.get(input_id) == workflow.name:
            kind.failure_events += 1  # a rejection is counted where it waits: the invalid-events queue


def _chains(ledger: _Ledger) -> None:
    """For each chained event type: who took each event, and what became of it."""
    pipeline, declarations, report = ledger.pipeline, ledger.declarations, ledger.report
    taken_by: dict[str, set[str]] = defaultdict(set)  # component -> ids of the inputs it took
    pending: dict[str, set[str]] = defaultdict(set)
    for execution in pipeline.executions():
        workflow = pipeline.workflow_of(execution.arn)
        event_id = _field(execution.input, "detail.id")
        if event_id:
            taken_by[workflow].add(event_id)
            if execution.waiting_for_task_token:
                pending[workflow].add(event_id)
    for route in declarations.routes:
        for message in pipeline.peek(pipeline.route_queue_url(route.name)):
            taken_by[route.name].add(_field(json.loads(message["Body"]), "detail.id"))
        report.routed[route.name] = len(taken_by[route.name])
    for event_type, ids in sorted(ledger.chain_events.items()):
        chain = report.chains[event_type] = ChainReport(event_type, produced=len(ids))
        takers = {c.name: c for source in {p.result_source for p in declarations.producers}
                  for c in _takers(declarations, event_type, source)}
        chain.untaken = sum(1 for event_id in ids if not any(event_id in taken_by[name] for name in takers))
        for name, taker in takers.items():
            mine = ids & taken_by[name]
            chain.taken[name] = len(mine)
            if isinstance(taker, Workflow):
                failed = mine & ledger.failed[name]
                answered = (mine & ledger.answered[name]) - failed
                waiting = (mine & pending[name]) - answered - failed
                chain.outcomes[name] = {"results": len(answered), "failures": len(failed), "pending": len(waiting)}
                chain.missing += len(mine - answered - failed - waiting)


def _order(ledger: _Ledger, feeds: ChannelFeeds | None) -> None:
    """For each ordered consumer: the results that came out ahead of an earlier-sent event of their key (a
    ``fifo`` consumer's ``group_by``) or of their partition (a ``kafka`` consumer's, where each record landed)."""
    for consumer in ledger.declarations.consumers:
        kind = ledger.report.kinds.get(consumer.name)
        if kind is None:
            continue
        if consumer.channel is Channel.KAFKA and feeds is not None:
            kind.ordered = True
            kind.out_of_order = order_breaks_by(feeds.partition_order(consumer), ledger.published[consumer.name])
        elif consumer.ordered and consumer.group_by is not None:
            mine = [entry for entry in ledger.sent.entries
                    if ledger.sent.component_of.get(json.loads(entry["Detail"]).get("id")) == consumer.name]
            kind.ordered = True
            kind.out_of_order = order_breaks(consumer.group_by, mine, ledger.published[consumer.name])


def _rejections_and_dead_letters(pipeline: LocalPipeline, sent: Sent, report: DemoReport,
                                 answered: Mapping[str, set[str]], feeds: ChannelFeeds | None = None) -> None:
    """Each event sent is counted once, where its own component put it: two components that take the
    same type both refuse a malformed event, and only the one it was sent to accounts for it. A DLQ message
    of an event its component answered (``answered``: component -> input ids) or rejected is a copy of it
    (a duplicate delivery that found the event claimed by another invocation on every attempt)."""
    sources = {component.name: component.result_source for component in pipeline.declarations.producers}
    rejected: set[str] = set()
    for kept in pipeline.invalid_events():
        if "consumer" in kept:  # sent by a queue consumer
            event_id, by, reason = kept["event_id"], kept["consumer"], f"{kept['error']}: {kept['reason']}"
        else:  # a workflow's ...Failed event, brought by the rule
            data = kept["detail"]["data"]
            event_id, by, reason = data["input_id"], kept["source"], f"{data['error']}: {data['cause']}"
        component = sent.component_of.get(event_id)
        unrouted = by == UNROUTED_CHECK_SOURCE  # no rule of the bus takes it: the unrouted-events check kept it
        if component not in report.kinds or not (unrouted or by == sources.get(component)):
            report.rejection_reasons.setdefault(str(event_id), reason)
            continue
        report.rejection_reasons[str(event_id)] = ("no rule takes it: " if unrouted else "") + reason
        if event_id not in rejected:
            rejected.add(event_id)
            if unrouted:
                report.kinds[component].unrouted += 1
            else:
                report.kinds[component].rejected += 1
    dead_lettered: set[str] = set()

    def count_kept(event_id: str, component: str) -> None:
        if event_id in dead_lettered:
            return
        dead_lettered.add(event_id)
        kind = report.kinds[component]
        if event_id in answered.get(component, ()) or event_id in rejected:
            kind.dead_lettered_copies += 1
        else:
            kind.in_dead_letter_queues += 1

    for logical_id, messages in pipeline.dead_letters().items():
        report.dead_letters[logical_id] = len(messages)
        for message in messages:
            event_id = _field(json.loads(message["Body"]), "detail.id")
            if sent.component_of.get(event_id) in report.kinds:
                count_kept(event_id, sent.component_of[event_id])
            report.dead_letter_reasons[event_id] = sent.reasons.get(event_id, "?")
    for consumer in pipeline.declarations.consumers:  # a broker-fed consumer keeps what it gives up its own way
        if feeds is None or not fed_by_broker(consumer):
            continue
        for kept in feeds.kept(consumer):
            if sent.component_of.get(kept.event_id) == consumer.name:
                count_kept(kept.event_id, consumer.name)
            report.dead_letter_reasons[kept.event_id] = kept.reason


def _functions_and_workflows(pipeline: LocalPipeline, report: DemoReport) -> None:
    for function in pipeline.functions.values():
        service = function.spec.environment.get("POWERTOOLS_SERVICE_NAME", function.spec.logical_id)
        report.invocations[service] = report.invocations.get(service, 0) + len(function.invocations)
        for name, values in function.metrics.items():
            report.metrics[name] = round(report.metrics.get(name, 0.0) + sum(values), 3)
        for line in function.logs:
            if line.get("status") and line.get("event_id") in report.dead_letter_reasons:
                report.dead_letter_reasons[line["event_id"]] = line["reason"]
    for consumer in pipeline.declarations.consumers:
        function = pipeline.consumer(consumer.name).function
        report.consumers[consumer.name] = ConsumerRun([i.records for i in function.invocations if i.trigger == "sqs"],
                                                      function.metrics.get("InferenceMs", []))
    for workflow in pipeline.declarations.workflows:
        machine = pipeline.state_machine(workflow.name)
        definition = json.loads(machine.definition)
        summary = report.workflows.setdefault(workflow.name, WorkflowReport(workflow.name))
        summary.stage_order = state_order(definition)
        for state, function_arn in task_functions(definition).items():
            function = pipeline.function(function_arn)
            summary.handler_ms[state] = [i.duration_ms for i in function.invocations if i.trigger != "sqs"]
    for execution in pipeline.executions():
        summary = report.workflows.setdefault(pipeline.workflow_of(execution.arn), WorkflowReport(""))
        summary.statuses[execution.status] = summary.statuses.get(execution.status, 0) + 1
        for state, timing in execution.states.items():
            if timing.duration_ms is not None:
                summary.stage_ms.setdefault(state, []).append(timing.duration_ms)


def emf_values(function: Any, name: str, **dimensions: str) -> list[float]:
    """Every value of the EMF metric ``name`` a local function emitted (with these dimension values)."""
    values: list[float] = []
    for line in function.lines:
        if "_aws" not in line or name not in line or any(line.get(k) != v for k, v in dimensions.items()):
            continue
        value = line[name]
        values.extend(value if isinstance(value, list) else [value])
    return values


def flow_figures(pipeline: LocalPipeline) -> dict[str, FlowFigures]:
    """Each consumer's and workflow's latency, rate and errors, from the EMF its handlers emitted."""
    flows: dict[str, FlowFigures] = {}
    for consumer in pipeline.declarations.consumers:
        function = pipeline.consumer(consumer.name).function
        flows[consumer.name] = FlowFigures(
            "consumer", handled=int(sum(emf_values(function, BATCH_SIZE))), failed=int(sum(emf_values(function, RECORDS_FAILED))),
            put_events_failed=int(sum(emf_values(function, PUT_EVENTS_FAILED_ENTRIES))),
            stages={CONSUMER_STAGE: {"event_latency_ms": emf_values(function, EVENT_LATENCY_MS),
                                    "processing_ms": emf_values(function, PROCESSING_MS)}})
        flows[consumer.name].consumed = int(sum(emf_values(function, RECORDS_PUBLISHED)))
    statuses: dict[str, list[str]] = defaultdict(list)
    for execution in pipeline.executions():
        statuses[pipeline.workflow_of(execution.arn)].append(execution.status)
    for workflow in pipeline.declarations.workflows:
        accept = pipeline.task_function(workflow.name, ACCEPT_STEM)
        stages = {ACCEPT_STEM: {"event_latency_ms": emf_values(accept, EVENT_LATENCY_MS, workflow=workflow.name),
                                "processing_ms": emf_values(accept, PROCESSING_MS, workflow=workflow.name)}}
        for stem in workflow.tasks:
            function = pipeline.task_function(workflow.name, stem)
            stages[stem] = {"event_latency_ms": emf_values(function, EVENT_LATENCY_MS),
                            "processing_ms": emf_values(function, PROCESSING_MS)}
        ran = statuses.get(workflow.name, [])
        flows[workflow.name] = FlowFigures("workflow", handled=len(ran), failed=sum(s in FAILED_STATUSES for s in ran),
                                           stages=stages)
        flows[workflow.name].consumed = sum(s == "SUCCEEDED" for s in ran)
    return flows


def account(pipeline: LocalPipeline, sent: Sent, report: DemoReport,
            delivered: list[dict[str, Any]] | None = None, feeds: ChannelFeeds | None = None) -> None:
    """Read back what the pipeline did into ``report`` (call once, after the last drain).

    ``delivered`` is every event the bus carried (default: read from the pipeline's tap now); ``feeds``, what
    was written to the broker-fed consumers' topics and queues (where each Kafka record landed, what each kept).
    """
    models = manifest_models(REPO_ROOT)
    for component in demo_components(pipeline.declarations):
        valid, malformed, duplicates = sent.counts.get(component.name, (0, 0, 0))
        held_out = component_scores(component, models)
        report.kinds[component.name] = KindReport(component.name, input_type(component), valid, malformed, duplicates,
                                                  scores=held_out["scores"], scores_data=held_out["scores_data"])
    ledger = _Ledger(pipeline, sent, report)
    for event in pipeline.tapped_events() if delivered is None else delivered:
        ledger.read(event)
    _chains(ledger)
    _order(ledger, feeds)
    _rejections_and_dead_letters(pipeline, sent, report, ledger.answered, feeds)
    _functions_and_workflows(pipeline, report)
    report.flows = flow_figures(pipeline)
    for name, flow in report.flows.items():
        held_out = component_scores(pipeline.declarations.component(name), models)
        flow.scores, flow.scores_data = held_out["scores"], held_out["scores_data"]
    report.cloud_only = pipeline.deployment.cloud_only
    report.partly_local = pipeline.deployment.partly_local
