"""Chaos: send N events into a flow while its functions fail on purpose, then account for every one.

A *flow* is a declared component with demo samples to send (its root) and every component
downstream of it: those that take its results (``risk-scorer`` -> ``auto-approve`` /
``risk-review``). Naming a downstream component (``--flow risk-review``) runs the flow it is in.
Every flow gets the same faults (:class:`~.faults.FaultRates`), wrapped around its functions'
parts by :mod:`.faults` (the functions' own code carries no chaos):

- queue consumers: a share of records fail with a transient error, a share of invocations time
  out after claiming their records, a share die after publishing half their results, a share die
  between publishing a group of results and completing its claims, the claims store throttles
  (DynamoDB) or drops (Redis) a share of claim and completion requests, and a share of their
  PutEvents entries are throttled (the publisher retries them); their event source delivers a
  share of records twice;
- workflow steps (the ``Accept`` step included): a share of invocations fail with a transient
  error, a share time out (``Sandbox.Timedout``, as Lambda reports it); the state machines retry
  them as they would in AWS; a share of the inputs reach the bus twice (a producer's retry).

A flow with a review queue has its reviewer played (the declared one) after every wave.

Then the ledger, per input: processed (one result per stage), or waiting in a dead-letter queue
unprocessed, or ended in a workflow's failure event with a reason, or (a person's decision) still
pending; none lost. A result published more than once must have a recorded cause for each
copy beyond the first: the faults record, as it happens, every result a consumer published and
left with its claim in progress (it crashed before completing it, or the store would not take
the completion), by result id (:class:`~.faults.Republishable`); a redelivery may publish each
such result once more, and nothing else may repeat. The ledger checks this result by result
(:meth:`Ledger.count_repeats`); a repeat without its cause fails the flow, however few. Then,
with the faults off, each queue-fed consumer's DLQ is redriven and the ledger taken again.

A flow whose root consumer reads a broker (``kafka``, ``rabbitmq``) gets its inputs through its own topic or
queue, locally (:mod:`inferbus.channel_feeds`), under the same faults; what it gives up is read back from
its Kafka mapping's on-failure queue or its DLQ, with the reason, and the redrive writes it to the topic or
queue again; a Kafka consumer's results must keep each partition's order, as a ``fifo`` consumer's each key's.

Each flow runs on the claims store(s) asked for (``claims_stores``: ``dynamodb``, ``redis`` or both,
one run each; Redis is the local server at ``INFERBUS_REDIS_URL``): the same ledger must balance on
each, and each run's claims traffic is kept (:class:`~.store_costs.StoreBill`) to be compared.

Example
-------
>>> report = run_chaos(events=300, flow="text-pipeline")  # doctest: +SKIP
>>> report.flows["text-pipeline"].ledger.balanced(300)  # doctest: +SKIP
True
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from inferbus_lambda.contracts import to_put_events_entry

from inferbus.model.declarations import Channel, Consumer, Pipeline, Workflow
from inferbus.model.ordering import order_breaks, order_breaks_by

from ..channel_feeds import ChannelFeeds, fed_by_broker
from .faults import FaultInjector, inject_faults
from .rate_limits import RateHeld, rate_held
from .rates import FaultRates
from .store_costs import StoreBill, bill_of

if TYPE_CHECKING:
    from inferbus.model.settings import InferbusSettings

SOURCE = "inferbus.chaos"
# Inputs sent between drains: a consumer's queue stays shallow (moto's SQS slows as a queue grows); a
# workflow's wave runs its executions side by side, so their retry intervals (real seconds) overlap.
CONSUMER_WAVE = 50
WORKFLOW_WAVE = 250

Component = Consumer | Workflow


class ChaosError(ValueError):
    """A chaos run that cannot start: an unknown flow, one without samples; the message says which."""


@dataclass(frozen=True)
class Flow:
    """A root component with samples, and the components downstream of it, level by level."""

    name: str
    levels: tuple[tuple[Component, ...], ...]
    # Per level, the (result source, result type) pairs of the level above that it takes: a result no stage
    # below takes ends its input there (a rejected review's ReviewCompleted), one that is taken must go on.
    taken: tuple[frozenset[tuple[str, str]], ...] = ()

    @property
    def root(self) -> Component:
        return self.levels[0][0]

    @property
    def stages(self) -> tuple[Component, ...]:
        return tuple(stage for level in self.levels for stage in level)


def downstream(pipeline: Pipeline, producer: Component) -> list[Component]:
    """The consumers and workflows that take ``producer``'s results (only from it): a consumer that reads a
    broker (its topic or queue) takes nothing from the bus."""
    from inferbus.demo.inputs import input_type  # the demo is loaded only when chaos runs, not for --help

    found = []
    for component in pipeline.producers:
        if fed_by_broker(component):
            continue
        sources = pipeline.resolved_sources(component.accepts)
        if input_type(component) in producer.result_types and sources is not None and producer.result_source in sources:
            found.append(component)
    return found


def flow_of(pipeline: Pipeline, root: Component) -> Flow:
    from inferbus.demo.inputs import input_type

    levels, seen, taken = [(root,)], {root.name}, [frozenset[tuple[str, str]]()]
    while True:
        # Once each: two stages of a level may feed one below (both approvals feed each recommender).
        nxt = tuple({t.name: t for stage in levels[-1] for t in downstream(pipeline, stage) if t.name not in seen}.values())
        if not nxt:
            return Flow(root.name, tuple(levels), tuple(taken))
        taken.append(frozenset((stage.result_source, input_type(below)) for stage in levels[-1]
                               for below in downstream(pipeline, stage) if below in nxt))
        seen |= {t.name for t in nxt}
        levels.append(nxt)


def resolve_flows(pipeline: Pipeline, name: str | None) -> list[Flow]:
    """The flows ``name`` asks for: ``all`` (default), a component's name, or one word of it (``image``, ``review``)."""
    from inferbus.demo.inputs import demo_components, inputs_of

    roots = demo_components(pipeline)
    flows = [flow_of(pipeline, root) for root in roots]
    if not flows:
        raise ChaosError("no declared consumer or workflow has demo samples to send")
    if name in (None, "all"):
        return flows
    components = [c for flow in flows for c in flow.stages]
    matched = [c for c in components if c.name == name] or [c for c in components if name in c.name.split("-")]
    if len({c.name for c in matched}) > 1:
        matched = [c for c in matched if inputs_of(c) is not None]  # "risk": the flow's root, risk-scorer
    names = sorted({c.name for c in matched})
    if len(names) != 1:
        known = ", ".join(sorted({c.name for c in components}))
        raise ChaosError(f"--flow {name}: {'matches ' + ', '.join(names) + '; name one' if names else 'no such flow'} "
                         f"(flows: all, {known})")
    return [next(flow for flow in flows if any(c.name == names[0] for c in flow.stages))]


@dataclass
class Ledger:
    """Where each input of a flow ended up, and each result published more than once."""

    processed_once: int = 0
    processed_twice: int = 0  # processed, and a result of it published more than once (at any stage)
    repeated_results: int = 0  # result events beyond the first, for one input at one stage
    repeats_unexplained: int = 0  # of those, copies beyond what the result's recorded causes allow
    unexplained_results: list[str] = field(default_factory=list)  # the ids of those results
    in_dead_letter_queue: int = 0  # not processed, waiting in a DLQ
    failed_with_reason: int = 0  # a workflow of the flow emitted its failure event, with the reason
    pending_review: int = 0  # waiting for a person
    dead_lettered_after_processing: int = 0  # processed, and a redelivery of it sits in the DLQ
    lost: int = 0
    # an ordered root consumer's results published ahead of an earlier-sent event of their key (fifo) or partition (kafka)
    out_of_order: int = 0

    def count_repeats(self, repeats: list[list[str]], republishable: Mapping[str, int]) -> None:
        """Count one input's repeated results against what the faults recorded, result by result.

        Parameters
        ----------
        repeats
            Per result published more than once (one input, one stage, one type): its id, once per copy.
        republishable
            Result id -> how many times it was published with its claim left in progress
            (:class:`~.faults.Republishable`). Each allows one more copy of that result, and
            nothing for any other.
        """
        for copies in repeats:
            extra = len(copies) - 1
            self.repeated_results += extra
            unexplained = extra - sum(republishable.get(result_id, 0) for result_id in set(copies))
            if unexplained > 0:
                self.repeats_unexplained += unexplained
                self.unexplained_results += sorted(set(copies))

    def balanced(self, events: int) -> bool:
        """Every input in exactly one place, nothing lost, and every repeated result within its
        recorded causes (:attr:`FlowReport.republishable`); an ordered root consumer's results in each key's
        send order."""
        accounted = (self.processed_once + self.processed_twice + self.in_dead_letter_queue + self.failed_with_reason
                     + self.pending_review)
        return (accounted == events and self.lost == 0 and self.repeats_unexplained == 0
                and self.out_of_order == 0)


@dataclass
class FlowReport:
    flow: str
    stages: list[str]
    events: int
    ledger: Ledger = field(default_factory=Ledger)
    after_redrive: Ledger | None = None
    redriven: int = 0
    result_events: int = 0
    invocations: int = 0
    failed_invocations: dict[str, int] = field(default_factory=dict)  # by Lambda error type
    injected_errors: int = 0  # records (consumers) or step invocations (workflows) failed on purpose
    injectable: int = 0  # deliveries (consumers) or step invocations (workflows) that could fail
    injectable_kind: str = "deliveries"
    crashes_before_complete: int = 0  # consumer invocations that died between a group's PutEvents and its completion
    # Result id -> times it was published and its claim left in progress (the faults' record, faults.Republishable):
    # the one source of every repeat the ledger allows, result by result.
    republishable: dict[str, int] = field(default_factory=dict)
    republishable_by_cause: dict[str, int] = field(default_factory=dict)  # faults.Cause value -> results
    records_failed_by_claim_throttling: int = 0  # their claims could not be written: redelivered later
    duplicates_delivered: int = 0
    duplicates_skipped: int = 0
    claims_expired: int = 0
    reviews: dict[str, int] = field(default_factory=dict)
    failure_reasons: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    claims_store: str = "dynamodb"
    claims_bill: StoreBill | None = None  # the consumers' claims traffic (a workflow's Accept is not metered)
    channel: str = "sqs"  # how the root's inputs reach it (a workflow's: its rule, "sqs")
    # Why the inputs in the root consumer's DLQ (or a Kafka mapping's on-failure queue) were given up: reason -> inputs
    kept_reasons: dict[str, int] = field(default_factory=dict)
    rates_held: dict[str, RateHeld] = field(default_factory=dict)  # each rate-limited consumer's, by name

    @property
    def balanced(self) -> bool:
        """Both ledgers balance, and once the faults are off and the DLQ redriven no input stays there:
        every input is valid, so one still failing is a bug of the consumer, not an incident. Every
        rate-limited consumer held its rate and sent nothing to a DLQ for being over it."""
        final = self.after_redrive or self.ledger
        return (self.ledger.balanced(self.events) and final.balanced(self.events) and not self.stuck
                and all(held.held for held in self.rates_held.values()))

    @property
    def stuck(self) -> int:
        """Inputs still in a DLQ after the faults were off and the DLQ redriven (0 without a redrive)."""
        return self.after_redrive.in_dead_letter_queue if self.after_redrive is not None else 0


@dataclass
class ChaosReport:
    events: int
    rates: FaultRates
    seed: int
    flows: dict[str, FlowReport] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def balanced(self) -> bool:
        return bool(self.flows) and all(flow.balanced for flow in self.flows.values())

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["balanced"] = self.balanced
        for name, flow in self.flows.items():
            data["flows"][name]["balanced"] = flow.balanced
            for consumer, held in flow.rates_held.items():  # the derived figures too, as the table prints them
                data["flows"][name]["rates_held"][consumer] |= {"observed": held.observed, "bound": held.bound,
                                                                "held": held.held}
        return data


def chaos_overrides(flow: Flow, batch_size: int, rate: float | None = None) -> dict[str, float]:
    """The flow's consumers' batches this small: more invocations, so more of them can fail; with ``rate``, each
    consumer limited to that many events per second (its ``max_events_per_second``; else as declared)."""
    window = 0 if batch_size <= 10 else 1  # SQS takes more than 10 per batch only with a window
    overrides: dict[str, float] = {}
    for stage in flow.stages:
        if isinstance(stage, Consumer):
            overrides |= {f"{stage.name}.batch_size": batch_size, f"{stage.name}.max_batching_window_s": window}
            if rate is not None:
                overrides[f"{stage.name}.max_events_per_second"] = rate
    return overrides


def run_chaos(events: int = 5000, rates: FaultRates | None = None, *, flow: str | None = None, seed: int = 7,
              redrive: bool = True, batch_size: int = 10, progress: Callable[[str, int, int], None] | None = None,
              template: dict[str, Any] | None = None, claims_stores: Sequence[str] | None = None,
              context: Mapping[str, Any] | None = None, pipeline: Pipeline | None = None,
              rate: float | None = None) -> ChaosReport:
    """Run each flow ``flow`` names (default: all) with ``events`` inputs under the faults; one ledger per flow.

    ``batch_size`` (1-10,000) sets the flow's consumers' batch for this run (its settings, whatever its
    channel; default 10: many invocations, so the per-invocation faults happen
    often); ``template`` overrides it (and then every flow runs on that template). ``claims_stores``: run each
    flow once per store (``InferbusSettings.claims_store``; default the settings' one); with more than one, a
    flow's report is keyed ``<flow> (<store>)``. ``context``: CDK context, as ``-c`` gives it
    (``{"stage": "channels"}`` runs that stage's declarations and samples); ``pipeline``, the declarations
    (default ``pipeline/``'s). ``rate``: every consumer of the flow limited to that many events per second
    (else as declared); each rate-limited consumer's figures are in ``FlowReport.rates_held`` (:mod:`.rate_limits`).
    """
    from inferbus.demo.inputs import declared
    from inferbus.model.settings import CLAIMS_STORES
    from inferbus.runtime.specs import UnsupportedTemplateError

    with declared(context, pipeline) as (stage_settings, declarations):
        claims_stores = claims_stores or (stage_settings.claims_store,)
        unknown = sorted(set(claims_stores) - set(CLAIMS_STORES))
        if unknown or not claims_stores:
            raise ChaosError(f"claims store {', '.join(unknown) or '(none)'}: choose from {', '.join(CLAIMS_STORES)}")
        flows = resolve_flows(declarations, flow)
        rates = rates or FaultRates()
        report = ChaosReport(events, rates, seed)
        started = time.perf_counter()
        for store in claims_stores:
            settings = dataclasses.replace(stage_settings, claims_store=store)
            for chosen in flows:
                key = chosen.name if len(claims_stores) == 1 else f"{chosen.name} ({store})"
                try:
                    report.flows[key] = _run_flow(declarations, chosen, events, rates, seed=seed, redrive=redrive,
                                                  batch_size=batch_size, progress=progress, template=template,
                                                  settings=settings, rate=rate)
                except UnsupportedTemplateError as error:  # e.g. claims in Redis and no local Redis: say what to start
                    raise ChaosError(str(error)) from None
    report.seconds = time.perf_counter() - started
    return report


def _run_flow(declarations: Pipeline, flow: Flow, events: int, rates: FaultRates, *, seed: int, redrive: bool,
              batch_size: int, progress: Callable[[str, int, int], None] | None,
              template: dict[str, Any] | None, settings: InferbusSettings, rate: float | None = None) -> FlowReport:
    from inferbus.demo.inputs import inputs_of, sample_events
    from inferbus.local import LocalPipeline
    from inferbus.template_cache import TemplateCache

    root = flow.root
    demo = inputs_of(root)
    assert demo is not None
    notify = progress or (lambda stage, done, total: None)
    report = FlowReport(flow.name, [stage.name for stage in flow.stages], events, claims_store=settings.claims_store,
                        channel=root.channel.value if isinstance(root, Consumer) else Channel.SQS.value)
    started = time.perf_counter()
    samples = sample_events(root, min(demo.limit, events), source=SOURCE)
    notify(f"{flow.name}: synthesize + provision", 0, 1)
    overrides = None if template is not None else chaos_overrides(flow, batch_size, rate)
    with LocalPipeline(template, settings=settings, overrides=overrides, pipeline=declarations,
                       template_cache=TemplateCache()) as pipeline:
        notify(f"{flow.name}: synthesize + provision", 1, 1)
        feeds = ChannelFeeds(pipeline, pipeline.declarations)  # the root's inputs through its channel, if a broker's
        injectors = _inject(pipeline, flow, rates, seed)
        sent = [f"chaos-{i}" for i in range(events)]
        truth = {event_id: samples[i % len(samples)][1] for i, event_id in enumerate(sent)}
        entries = [to_put_events_entry(samples[i % len(samples)][0].model_copy(update={"id": event_id, "correlationid": event_id}),
                                       pipeline.bus_name) for i, event_id in enumerate(sent)]
        root_of = dict.fromkeys(sent, root.name)
        again = _producer_retries(flow, entries, rates.duplicate_rate, seed)
        report.duplicates_delivered += len(again)
        size = CONSUMER_WAVE if isinstance(root, Consumer) else WORKFLOW_WAVE
        for start in range(0, events, size):
            wave = entries[start : start + size] + [entries[i] for i in again if start <= i < start + size]
            for chunk in range(0, len(wave), 10):
                on_bus = feeds.send(wave[chunk : chunk + 10], root_of)
                if on_bus and (rejected := pipeline.put_events(on_bus)):
                    raise RuntimeError(f"the bus refused {len(rejected)} events")
                while pipeline.pump():  # keep the queues shallow: moto's SQS slows down as a queue grows
                    pass
            if len(flow.stages) > 1 or not isinstance(root, Consumer):  # let the wave's executions finish
                pipeline.drain()
                _play_reviewers(pipeline, flow, truth, report)
            notify(f"{flow.name}: send", min(start + size, events), events)
        pipeline.drain()
        _play_reviewers(pipeline, flow, truth, report)
        pipeline.drain()

        delivered: list[dict[str, Any]] = []  # every event the tap saw, across both ledgers
        _take_ledger(pipeline, flow, sent, report, delivered, injectors, feeds, first=True)
        report.ledger.out_of_order = _order_breaks(flow, entries, delivered, feeds)
        report.kept_reasons = _kept_reasons(pipeline, flow, feeds)
        _count_faults(pipeline, flow, injectors, report)
        # Every consumer of the flow, not only the root: one below a workflow (a recommender fed by the approvals)
        # dead-letters too, and its inputs stayed in its DLQ, counted stuck.
        stages = [stage for stage in flow.stages if isinstance(stage, Consumer)]
        queued = [(stage, pipeline.consumer(stage.name)) for stage in stages]
        queued = [(stage, consumer) for stage, consumer in queued if consumer.dead_letter_queue_url]
        if redrive and queued:
            from inferbus.redrive import redrive as move_back

            if any(pipeline.peek(consumer.dead_letter_queue_url) for _, consumer in queued):
                for injector in injectors.values():
                    injector.rates = None  # the incident is over
                for source in pipeline.event_sources:
                    source.redeliver(0.0)
                for stage, consumer in queued:  # level by level: what a redriven root publishes may feed a stage below
                    report.redriven += (feeds.redrive(stage) if fed_by_broker(stage)  # back to its topic or queue
                                        else move_back(pipeline.sqs, consumer.dead_letter_queue_url, consumer.queue_url))
                    pipeline.drain()
                _play_reviewers(pipeline, flow, truth, report)
                pipeline.drain()
                _take_ledger(pipeline, flow, sent, report, delivered, injectors, feeds, first=False)
        feeds.close()
        report.claims_bill = _claims_bill(injectors, settings.claims_store)
    report.seconds = time.perf_counter() - started
    return report


def _claims_bill(injectors: Mapping[Any, FaultInjector], store: str) -> StoreBill:
    """The consumers' claims traffic over the whole run, from every store the faults wrapped."""
    bill = StoreBill(store)
    for injector in injectors.values():
        for claims, metered in injector.stores:
            bill.add(bill_of(claims, metered))
    return bill


def _inject(pipeline: Any, flow: Flow, rates: FaultRates, seed: int) -> dict[Any, FaultInjector]:
    """Wrap the faults around every function of the flow (each once: workflows share Accept); by function."""
    injectors: dict[Any, FaultInjector] = {}
    for stage in flow.stages:
        if isinstance(stage, Consumer):
            local = pipeline.consumer(stage.name)
            injectors[local.function] = inject_faults(local.function, rates, seed=seed)
            local.source.redeliver(rates.duplicate_rate, seed=seed)
        else:
            for stem in ("Accept", *stage.tasks):
                function = pipeline.task_function(stage.name, stem)
                if function not in injectors:
                    injectors[function] = inject_faults(function, rates, seed=seed)
    return injectors


def _producer_retries(flow: Flow, entries: list[dict[str, Any]], rate: float, seed: int) -> list[int]:
    """For a workflow root, which inputs a producer puts on the bus twice (its event source cannot redeliver)."""
    if isinstance(flow.root, Consumer) or not rate:
        return []
    import random

    draws = random.Random(seed)  # noqa: S311 - chaos, not crypto
    return [index for index in range(len(entries)) if draws.random() < rate]


def _play_reviewers(pipeline: Any, flow: Flow, truth: dict[str, Any], report: FlowReport) -> None:
    from inferbus.demo.inputs import reviewer_of
    from inferbus.reviews import decide_each

    for stage in flow.stages:
        reviewer = reviewer_of(stage)
        if not (isinstance(stage, Workflow) and stage.review_queue and reviewer):
            continue

        def judge(case: Any, reviewer: Any = reviewer) -> tuple[bool, str | None]:
            return reviewer(case, truth.get(case.transaction_id))

        for decision in decide_each(pipeline.sqs, pipeline.stepfunctions, pipeline.review_queue_url(stage.name), judge,
                                    reviewer="chaos-reviewer"):
            report.reviews[decision.outcome] = report.reviews.get(decision.outcome, 0) + 1


def _take_ledger(pipeline: Any, flow: Flow, sent: list[str], report: FlowReport, delivered: list[dict[str, Any]],
                 injectors: dict[Any, FaultInjector], feeds: ChannelFeeds, *, first: bool) -> None:
    delivered += pipeline.tapped_events()  # the tap hands each event out once
    # subject -> (source, type) -> the ids of its results, one per copy published
    results: dict[str, dict[tuple[str, str], list[str]]] = defaultdict(lambda: defaultdict(list))
    failures: dict[str, list[str]] = defaultdict(list)  # input id -> failure reasons
    executions = pipeline.executions()
    # A failure in Accept itself names no input (it could not be read): its correlation id is the execution's name.
    input_of_execution = {e.name: (e.input or {}).get("detail", {}).get("id") for e in executions}
    for event in delivered:
        detail, source, detail_type = event["detail"], event["source"], event["detail-type"]
        stage = next((s for s in flow.stages if s.result_source == source), None)
        if stage is None or not isinstance(detail, dict):
            continue
        if isinstance(stage, Workflow) and detail_type == stage.failure:
            data = detail.get("data", {})
            input_id = data.get("input_id") or detail.get("subject") or input_of_execution.get(detail.get("correlationid"))
            failures[input_id].append(f"{data.get('error')}: {data.get('cause')}")
        elif detail_type in stage.result_types and detail.get("subject"):
            results[detail["subject"]][(source, detail_type)].append(detail["id"])
    waiting = {(e.input or {}).get("detail", {}).get("id") for e in executions if e.waiting_for_task_token}
    dead = _dead_letter_ids(pipeline) | {kept.event_id for stage in flow.stages if fed_by_broker(stage)
                                         for kept in feeds.kept(stage)}  # type: ignore[arg-type]
    republishable = _republishable(injectors, report)
    ledger = Ledger()
    for event_id in sent:
        repeats, outcome = _outcome(flow, event_id, results, failures, waiting, dead)
        in_dlq = event_id in dead
        ledger.count_repeats(repeats, republishable)
        if outcome == "processed":
            if repeats:
                ledger.processed_twice += 1
            else:
                ledger.processed_once += 1
            ledger.dead_lettered_after_processing += in_dlq
        elif outcome == "failed":
            ledger.failed_with_reason += 1
        elif outcome == "pending":
            ledger.pending_review += 1
        elif outcome == "dead-lettered" or (outcome is None and in_dlq):
            ledger.in_dead_letter_queue += 1
        else:
            ledger.lost += 1
    report.result_events = sum(len(copies) for by_type in results.values() for copies in by_type.values())
    if first:
        report.ledger = ledger
        reasons = Counter(reason.split(":")[0] for reasons in failures.values() for reason in reasons)
        report.failure_reasons = dict(reasons)
    else:
        report.after_redrive = ledger


def _order_breaks(flow: Flow, entries: list[dict[str, Any]], delivered: list[dict[str, Any]],
                  feeds: ChannelFeeds | None = None) -> int:
    """For a flow whose root is an ordered consumer: its results that came out ahead of an earlier-sent input
    of their key (``fifo``: its ``group_by``) or partition (``kafka``: where each record landed), during the
    incident (a redrive afterwards delivers late on purpose)."""
    root = flow.root
    if not isinstance(root, Consumer):
        return 0
    published = [subject for event in delivered
                 if event["source"] == root.result_source and event["detail-type"] in root.result_types
                 and isinstance(event["detail"], dict) and (subject := event["detail"].get("subject"))]
    if root.channel is Channel.KAFKA and feeds is not None:
        return order_breaks_by(feeds.partition_order(root), published)
    if not root.ordered or root.group_by is None:
        return 0
    return order_breaks(root.group_by, entries, published)


def _kept_reasons(pipeline: Any, flow: Flow, feeds: ChannelFeeds) -> dict[str, int]:
    """Why the root consumer's inputs were given up, from where its channel keeps them: reason -> inputs."""
    root = flow.root
    if not isinstance(root, Consumer):
        return {}
    if fed_by_broker(root):
        return dict(Counter(kept.reason for kept in feeds.kept(root)))
    from inferbus.redrive import last_reason

    url = pipeline.consumer(root.name).dead_letter_queue_url
    return dict(Counter(last_reason(message) for message in pipeline.peek(url))) if url else {}


def _republishable(injectors: dict[Any, FaultInjector], report: FlowReport) -> Counter[str]:
    """Every result the flow's functions published and left with a claim in progress, as the faults
    recorded them so far (by result id); kept in ``report``."""
    by_result: Counter[str] = Counter()
    by_cause: Counter[str] = Counter()
    for injector in injectors.values():
        by_result += injector.counts.republishable.by_result
        by_cause += injector.counts.republishable.by_cause
    report.republishable, report.republishable_by_cause = dict(by_result), dict(by_cause)
    return by_result


def _outcome(flow: Flow, event_id: str, results: dict[str, dict[tuple[str, str], list[str]]],
             failures: dict[str, list[str]], waiting: set[str],
             dead: set[str] = frozenset()) -> tuple[list[list[str]], str | None]:  # type: ignore[assignment]
    """Follow one input down the flow, level by level: (the ids of each result published more than
    once, one per copy; processed / failed / pending / dead-lettered (a result of it, below the root, waits in a
    DLQ) / None). At each level the input (or its
    results) must have one outcome: results, which the next level takes, a failure event, or a
    person still deciding."""
    subjects: list[str] = [event_id]
    repeats: list[list[str]] = []
    for depth, level in enumerate(flow.levels):
        sources = {stage.result_source for stage in level}
        below = flow.taken[depth + 1] if depth + 1 < len(flow.taken) else None  # None: not known, follow every result
        produced: list[str] = []
        onward: list[str] = []
        for subject in subjects:
            for (source, result_type), copies in results.get(subject, {}).items():
                if source in sources:
                    repeats += [copies] if len(copies) > 1 else []
                    ids = [result_id for result_id in dict.fromkeys(copies) if result_id not in produced]
                    produced += ids
                    onward += ids if below is None or (source, result_type) in below else []
        if produced:  # a failure event beside a result is a redelivery's (its Accept failed): the input was processed
            if not onward and depth + 1 < len(flow.levels):
                return repeats, "processed"  # its results end here: nothing below takes them
            subjects = onward
            continue
        if any(failures.get(subject) for subject in subjects):
            return repeats, "failed"
        if any(subject in waiting for subject in subjects):
            return repeats, "pending"
        if any(subject in dead for subject in subjects):
            return repeats, "dead-lettered"  # a result of it waits in a DLQ below the root (a consumer fed by a workflow)
        return repeats, None if depth == 0 else "lost"
    return repeats, "processed"


def _dead_letter_ids(pipeline: Any) -> set[str]:
    return {event_id for messages in pipeline.dead_letters().values() for event_id in _input_ids(messages)}


def _input_ids(messages: list[dict[str, Any]]) -> set[str]:
    ids = set()
    for message in messages:
        try:
            ids.add(json.loads(message["Body"])["detail"]["id"])
        except (ValueError, KeyError, TypeError):
            continue
    return ids


def _count_faults(pipeline: Any, flow: Flow, injectors: dict[Any, FaultInjector], report: FlowReport) -> None:
    """What happened, from structured results: each invocation's error type, the injectors' counts
    (which include every wrapped batch's report), the event sources' counters, Accept's metric."""
    invocations = [i for function in injectors for i in function.invocations]
    report.invocations = len(invocations)
    report.failed_invocations = dict(Counter(i.error_type for i in invocations if i.error_type))
    if isinstance(flow.root, Consumer):
        local = pipeline.consumer(flow.root.name)
        report.injected_errors = injectors[local.function].counts.record_errors
        report.injectable = local.source.deliveries
    else:
        report.injected_errors = sum(injector.counts.step_errors for injector in injectors.values())
        report.injectable, report.injectable_kind = len(invocations), "step invocations"
    for stage in flow.stages:
        if not isinstance(stage, Consumer):
            continue
        local = pipeline.consumer(stage.name)
        counts = injectors[local.function].counts
        report.duplicates_delivered += local.source.duplicates_delivered
        report.duplicates_skipped += counts.duplicates_skipped
        report.claims_expired += local.source.expired_after_failures
        report.records_failed_by_claim_throttling += counts.records_failed_by_claim_throttling
        report.crashes_before_complete += counts.crashes_before_complete
        declared = local.function.spec.environment.get("MAX_EVENTS_PER_SECOND")
        if declared:
            dead = _input_ids(pipeline.peek(local.dead_letter_queue_url)) if local.dead_letter_queue_url else set()
            report.rates_held[stage.name] = rate_held(stage.name, float(declared), counts.admissions, local.function.metrics,
                                                      admitted_ids=counts.admitted_ids, dead_letter_ids=dead)
    accept = [f for f in injectors if f.spec.environment.get("POWERTOOLS_SERVICE_NAME") == "accept"]
    report.duplicates_skipped += int(sum(v for f in accept for v in f.metrics.get("EventsDuplicate", [])))
