"""What the demo found, per component: the ledger of every event sent, workflows, chains, metrics.

Every figure is JSON-safe (``as_dict``): a percentile of no values is ``None``, never NaN.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..runtime.lambda_host import DEFAULT_MAX_ENVIRONMENTS

__all__ = ["DEAD_LETTER_COPIES_NOTE", "STAGE_TIME_NOTE", "ChainReport", "ConsumerRun", "DemoReport", "FlowFigures",
           "KindReport", "ReplayReport", "WorkflowReport", "dead_letter_cell", "percentile"]

# What a workflow stage's time means locally: the terminal summary and the Markdown report both say it.
STAGE_TIME_NOTE = (f"Handlers run concurrently (at most {DEFAULT_MAX_ENVIRONMENTS} environments per function locally), "
                   "so time in a state may include waiting for one; retries wait real seconds.")


# What "+N copies" beside a DLQ count means: the terminal summary and the Markdown report both say it.
DEAD_LETTER_COPIES_NOTE = "+N copies: duplicate deliveries of answered events, kept there too"


def dead_letter_cell(kind: dict[str, Any]) -> str:
    """A kind's DLQ count (``KindReport.as_dict``), with the copies beside it when there are any."""
    copies = kind.get("dead_lettered_copies", 0)
    return f"{kind['in_dead_letter_queues']} (+{copies} copies)" if copies else str(kind["in_dead_letter_queues"])


def percentile(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


def rounded(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


@dataclass
class KindReport:
    """One component the demo sends to: what was sent and where every distinct event ended up."""

    component: str
    input_type: str
    sent: int = 0
    malformed: int = 0
    duplicates: int = 0
    results: int = 0
    rejected: int = 0  # kept in the invalid-events queue with the reason
    unrouted: int = 0  # taken by no rule of the bus: kept there too, by the unrouted-events check
    failure_events: int = 0  # a workflow failed after its retries: its ...Failed event says why
    duplicate_results: int = 0
    in_dead_letter_queues: int = 0
    # Copies of events already answered or rejected, kept in a DLQ too: a duplicate delivery that found its
    # event claimed by another invocation on each of its attempts. Not another outcome of the event.
    dead_lettered_copies: int = 0
    correct: int = 0
    scored: int = 0  # results with a true answer to compare against
    latencies_ms: list[float] = field(default_factory=list)
    # Its models' held-out scores (metric -> value) and that data's name, from the manifest.
    scores: dict[str, float] = field(default_factory=dict)
    scores_data: str | None = None

    ordered: bool = False  # an ordered consumer: its results must keep each key's send order
    out_of_order: int = 0  # results that came out ahead of an earlier-sent event of their key (kafka: partition)

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.scored if self.scored else None

    @property
    def balanced(self) -> bool:
        """Each distinct event: one result, one rejection, one failure event, or a DLQ message; nothing twice;
        and, for an ordered consumer, each key's results in send order."""
        accounted = self.results + self.rejected + self.unrouted + self.failure_events + self.in_dead_letter_queues
        return accounted == self.sent + self.malformed and not self.duplicate_results and not self.out_of_order

    def as_dict(self) -> dict[str, Any]:
        return {
            "component": self.component, "input_type": self.input_type,
            "sent": self.sent, "malformed": self.malformed, "duplicate_deliveries": self.duplicates,
            "results": self.results, "rejected": self.rejected, "unrouted": self.unrouted,
            "failure_events": self.failure_events,
            "in_dead_letter_queues": self.in_dead_letter_queues, "dead_lettered_copies": self.dead_lettered_copies,
            "duplicate_results": self.duplicate_results,
            **({"out_of_order_results": self.out_of_order} if self.ordered else {}), "balanced": self.balanced,
            "accuracy": rounded(self.accuracy, 4), "scored": self.scored,
            "scores": self.scores, "scores_data": self.scores_data,
            "latency_ms": {"p50": rounded(percentile(self.latencies_ms, 50)),
                           "p95": rounded(percentile(self.latencies_ms, 95))},
        }


@dataclass
class ChainReport:
    """An event type that inferbus produces and other components take (a result routed on).

    ``taken`` counts, per downstream component, the events it took; ``outcomes`` what a
    downstream workflow did with them (a result, a failure event, or still waiting for a
    person); ``missing`` the events a workflow took and has no outcome for.
    """

    event_type: str
    produced: int = 0
    untaken: int = 0
    taken: dict[str, int] = field(default_factory=dict)
    outcomes: dict[str, dict[str, int]] = field(default_factory=dict)
    missing: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"event_type": self.event_type, "produced": self.produced, "untaken": self.untaken, "taken": self.taken,
                "outcomes": self.outcomes, "missing_outcomes": self.missing}


@dataclass
class WorkflowReport:
    name: str
    statuses: dict[str, int] = field(default_factory=dict)
    stage_ms: dict[str, list[float]] = field(default_factory=dict)  # time in each state, per execution
    handler_ms: dict[str, list[float]] = field(default_factory=dict)  # a Task state's function, per invocation
    stage_order: list[str] = field(default_factory=list)  # the ASL's states in the order they run
    failures: list[dict[str, Any]] = field(default_factory=list)  # from the ...Failed events: input, error, cause

    def as_dict(self) -> dict[str, Any]:
        ordered = [s for s in self.stage_order if s in self.stage_ms]
        return {
            "executions": self.statuses,
            "stage_latency_ms_p50": {stage: rounded(percentile(self.stage_ms[stage], 50)) for stage in ordered},
            "handler_ms_p50": {stage: rounded(percentile(values, 50)) for stage, values in self.handler_ms.items()},
            "failures": self.failures,
        }


@dataclass
class ConsumerRun:
    """A consumer's invocations: their batch sizes and the time of each batch's inference."""

    batch_sizes: list[int] = field(default_factory=list)
    inference_ms: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"batch_sizes": self.batch_sizes, "inference_calls": len(self.inference_ms),
                "inference_ms_p50": rounded(percentile(self.inference_ms, 50), 3),
                "inference_ms_max": rounded(max(self.inference_ms, default=None), 3)}


@dataclass
class FlowFigures:
    """A flow's four dimensions as the cloud dashboard shows them, from the EMF its handlers emitted locally.

    ``stages`` holds, per stage (a consumer is one stage; a workflow's are its steps, ``Accept``
    first), the event latency (now minus the event's ``time`` when the stage took it) and the
    processing time, in ms. Throttles, concurrency, CPU and memory are cloud-only.
    """

    kind: str  # consumer or workflow
    handled: int = 0  # records a consumer received, executions a workflow ran
    failed: int = 0
    consumed: int = 0  # records published, executions that succeeded
    per_minute: float | None = None
    put_events_failed: int = 0
    stages: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    # Its models' held-out scores (``inferbus.model.scores``): also for a component the demo sends nothing
    # to directly (a consumer downstream of another), which has no entry in ``kinds``.
    scores: dict[str, float] = field(default_factory=dict)
    scores_data: str | None = None

    @property
    def error_rate_percent(self) -> float | None:
        return 100 * self.failed / self.handled if self.handled else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "handled": self.handled, "failed": self.failed, "consumed": self.consumed,
            "error_rate_percent": rounded(self.error_rate_percent, 2), "per_minute": rounded(self.per_minute, 1),
            "put_events_failed_entries": self.put_events_failed,
            "stages": {stage: {metric: {"p50": rounded(percentile(values, 50)), "p95": rounded(percentile(values, 95))}
                               for metric, values in figures.items()} for stage, figures in self.stages.items()},
            "scores": self.scores, "scores_data": self.scores_data,
        }


@dataclass
class ReplayReport:
    """The archive replayed onto the bus after the run: what it redid (nothing, if claims work).

    ``new_results`` are result events the replay made that the run had not (each would be an
    event processed twice); ``rerejected`` are inputs refused again (same ids, same reasons).
    """

    replay_name: str = ""
    replayed: int = 0
    duplicates_skipped: int = 0
    workflow_duplicates: int = 0
    new_results: list[str] = field(default_factory=list)
    rerejected: int = 0

    @property
    def safe(self) -> bool:
        return self.replayed > 0 and not self.new_results

    def as_dict(self) -> dict[str, Any]:
        return {"replay": self.replay_name, "replayed": self.replayed, "duplicates_skipped": self.duplicates_skipped,
                "workflow_duplicates": self.workflow_duplicates, "new_results": self.new_results,
                "rerejected": self.rerejected, "safe": self.safe}


@dataclass
class DemoReport:
    kinds: dict[str, KindReport] = field(default_factory=dict)
    workflows: dict[str, WorkflowReport] = field(default_factory=dict)
    chains: dict[str, ChainReport] = field(default_factory=dict)
    routed: dict[str, int] = field(default_factory=dict)  # route -> messages on its queue
    consumers: dict[str, ConsumerRun] = field(default_factory=dict)
    reviews: dict[str, int] = field(default_factory=dict)
    dead_letters: dict[str, int] = field(default_factory=dict)
    dead_letter_reasons: dict[str, str] = field(default_factory=dict)
    rejection_reasons: dict[str, str] = field(default_factory=dict)  # event id -> why it was kept aside
    rejected_by_bus: int = 0
    invalid_results: list[str] = field(default_factory=list)  # events the pipeline published that break a contract
    invocations: dict[str, int] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    cloud_only: list[tuple[str, str, str]] = field(default_factory=list)
    partly_local: list[tuple[str, str, str]] = field(default_factory=list)
    flows: dict[str, FlowFigures] = field(default_factory=dict)
    replay: ReplayReport | None = None
    seconds: float = 0.0
    running_seconds: float = 0.0  # after synthesis and provisioning: sending, draining, reviewing, accounting
    template_kept: bool = False  # the template of an earlier synth, nothing it comes from having changed

    @property
    def balanced(self) -> bool:
        return (all(kind.balanced for kind in self.kinds.values())
                and not any(chain.missing for chain in self.chains.values()) and not self.invalid_results
                and (self.replay is None or self.replay.safe))

    def as_dict(self) -> dict[str, Any]:
        return {
            "balanced": self.balanced,
            "kinds": {name: kind.as_dict() for name, kind in self.kinds.items()},
            "workflows": {name: workflow.as_dict() for name, workflow in self.workflows.items()},
            "chains": {name: chain.as_dict() for name, chain in self.chains.items()},
            "routed": self.routed,
            "consumers": {name: run.as_dict() for name, run in self.consumers.items()},
            "reviews": self.reviews,
            "rejected_by_bus": self.rejected_by_bus,
            "invalid_results": self.invalid_results,
            "dead_letters": self.dead_letters,
            "dead_letter_reasons": self.dead_letter_reasons,
            "rejection_reasons": self.rejection_reasons,
            "invocations": self.invocations,
            "metrics": self.metrics,
            "cloud_only": [f"{t} {lid}: {why}" for lid, t, why in self.cloud_only],
            "partly_local": [f"{t} {lid}: {why}" for lid, t, why in self.partly_local],
            "flows": {name: flow.as_dict() for name, flow in self.flows.items()},
            "replay": None if self.replay is None else self.replay.as_dict(),
            "seconds": round(self.seconds, 2),
            "running_seconds": round(self.running_seconds, 2),
            "template_kept": self.template_kept,
        }
