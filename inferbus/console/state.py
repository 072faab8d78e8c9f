"""What the console shows and does, as plain JSON-able values read from the running pipeline.

Every read and every action goes through the functions the CLI uses (:func:`~inferbus.reviews.list_reviews`,
:func:`~inferbus.reviews.decide`, :func:`~inferbus.redrive.inspect_dead_letters`,
:func:`~inferbus.redrive.redrive`, :meth:`~inferbus.runtime.EmbeddedPipeline.executions`), with
clients made from the pipeline's own session: the page shows what ``inferbus reviews list``
and ``inferbus redrive --dry-run`` would print against the same endpoint.

Calls are serialized by one lock: listing a queue receives its messages and releases them, so a
listing that ran beside a decision could hide the case the decision looks for.
"""

from __future__ import annotations

import json
import threading
from collections import Counter, deque
from typing import TYPE_CHECKING, Any

from inferbus.model.names import DEAD_LETTER_QUEUE_URL, QUEUE_URL, UNROUTED_CHECK_ID, UNROUTED_CHECK_NAME

from ..redrive import RedriveError, RedriveTarget, inspect_dead_letters, redrive, resolve_queues, target_of
from ..redrive.targets import SqsRedrive
from ..reviews import decide, list_reviews
from ..runtime.embedded import TAP_NAME
from ..runtime.moto_patches import matched_events
from ..runtime.queue_ops import peek_messages

if TYPE_CHECKING:
    from ..local import LocalPipeline

__all__ = ["ConsoleError", "ConsoleState"]

RECENT_EVENTS = 50  # events the page lists, newest first
RECENT_EXECUTIONS = 20
DEPTHS = ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible")


class ConsoleError(ValueError):
    """An action the console cannot take as asked (unknown queue or workflow); the message says why."""


class ConsoleState:
    """The pipeline as the console sees it.

    Parameters
    ----------
    pipeline
        The running pipeline (``inferbus serve``'s).
    """

    def __init__(self, pipeline: LocalPipeline) -> None:
        self.pipeline = pipeline
        self.sqs = pipeline.session.client("sqs")
        self.events = pipeline.session.client("events")
        self.stepfunctions = pipeline.session.client("stepfunctions")
        self._lock = threading.Lock()
        self._recent: deque[dict[str, Any]] = deque(maxlen=RECENT_EVENTS)
        self._owners = self._queue_owners()

    def _queue_owners(self) -> dict[str, str]:
        """Each of the stack's queue URLs -> the declared component (or check) it belongs to; a DLQ
        belongs to the owner of the queue, or of the state machine target, it takes failures from."""
        pipeline = self.pipeline
        assert pipeline.deployment is not None
        outputs, owners = pipeline.outputs, {}
        for component in pipeline.declarations.components:
            for kind in (QUEUE_URL, DEAD_LETTER_QUEUE_URL):
                if (url := outputs.get(component.output_key(kind))) is not None:
                    owners[url] = component.name
        for workflow in pipeline.declarations.workflows:
            if workflow.review_queue_output is not None:
                owners[outputs[workflow.review_queue_output]] = workflow.name
        owners[outputs[f"{UNROUTED_CHECK_ID}{QUEUE_URL}"]] = UNROUTED_CHECK_NAME
        for queue in pipeline.deployment.queues.values():
            if queue.dead_letter_arn and queue.url in owners:
                owners.setdefault(pipeline.deployment.queue_by_arn(queue.dead_letter_arn).url, owners[queue.url])
        for resource in pipeline.template["Resources"].values():  # a rule target's DLQ: from the template
            if resource.get("Type") == "AWS::Events::Rule":
                for target in pipeline.deployment.resolver.resolve(resource["Properties"].get("Targets", [])):
                    if "DeadLetterConfig" in target and (owner := self._target_owner(target["Arn"], owners)):
                        owners.setdefault(pipeline.deployment.queue_by_arn(target["DeadLetterConfig"]["Arn"]).url, owner)
        return owners

    def _target_owner(self, arn: str, owners: dict[str, str]) -> str | None:
        """The component a rule target (a queue or a state machine) belongs to."""
        assert self.pipeline.deployment is not None
        if ":states:" in arn:
            try:
                return self.pipeline.workflow_of(arn)
            except KeyError:
                return None
        queue = next((q for q in self.pipeline.deployment.queues.values() if q.arn == arn), None)
        return owners.get(queue.url) if queue else None

    def _role(self, url: str) -> str:
        assert self.pipeline.deployment is not None
        if url == self.pipeline.invalid_events_url:
            return "invalid events"
        if url in self._dead_letter_queues().values():
            return "dead letters"
        if url in self._review_queues().values():
            return "manual review"
        return "source" if url in self._owners else "client"

    def _dead_letter_queues(self) -> dict[str, str]:
        """Every DLQ by name: those the template's queues and rule targets dead-letter into, and each consumer's
        failure queue whatever its channel (its ``DeadLetterQueueUrl`` output: a RabbitMQ consumer's own DLQ, a
        Kafka mapping's on-failure queue, which no SQS queue names)."""
        assert self.pipeline.deployment is not None
        queues = {queue.name: queue.url for queue in self.pipeline.deployment.dead_letter_queues}
        for consumer in self.pipeline.declarations.consumers:
            if (url := self.pipeline.outputs.get(consumer.output_key(DEAD_LETTER_QUEUE_URL))) is not None:
                queues.setdefault(url.rsplit("/", 1)[-1], url)
        return queues

    def _target(self, url: str) -> RedriveTarget:
        """Where a DLQ goes back to: its SQS source queue, else its broker-fed consumer's queue or topic.

        Raises
        ------
        RedriveError
            A rule target's DLQ: no queue dead-letters into it, nothing to redrive to.
        """
        try:
            return SqsRedrive(resolve_queues(self.sqs, url)[1])
        except RedriveError:
            owner = next((c for c in self.pipeline.declarations.consumers if c.name == self._owners.get(url)), None)
            target = target_of(owner) if owner is not None else None
            if target is None:
                raise
            return target

    def _review_queues(self) -> dict[str, str]:
        return {w.name: self.pipeline.outputs[w.review_queue_output] for w in self.pipeline.declarations.workflows
                if w.review_queue_output is not None}

    # -- reads -----------------------------------------------------------------------------

    def overview(self) -> dict[str, Any]:
        """The topology with live counts: rules (events matched), queues (depths), consumers
        (invocations), workflows (executions by status)."""
        with self._lock:
            return {"bus": self.pipeline.bus_name, "region": self.pipeline.session.region_name,
                    "rules": self._rules(), "queues": self._queues(), "consumers": self._consumers(),
                    "workflows": self._workflows()}

    def _rules(self) -> list[dict[str, Any]]:
        rules = []
        for page in self.events.get_paginator("list_rules").paginate(EventBusName=self.pipeline.bus_name):
            for rule in page["Rules"]:
                if rule["Name"] == TAP_NAME and rule.get("ManagedBy"):
                    continue  # the runtime's own, not the stack's nor a client's
                targets = self.events.list_targets_by_rule(Rule=rule["Name"], EventBusName=self.pipeline.bus_name)
                rules.append({"name": rule["Name"], "state": rule.get("State", "ENABLED"),
                              "targets": [target["Arn"].rsplit(":", 1)[-1] or target["Arn"] for target in targets["Targets"]],
                              "matched": matched_events(rule["Arn"])})
        return rules

    def _queues(self) -> list[dict[str, Any]]:
        queues = []
        for url in self.sqs.list_queues().get("QueueUrls", []):
            depths = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(DEPTHS))["Attributes"]
            queues.append({"name": url.rsplit("/", 1)[-1], "url": url, "component": self._owners.get(url, ""),
                           "role": self._role(url), "visible": int(depths[DEPTHS[0]]), "in_flight": int(depths[DEPTHS[1]])})
        return sorted(queues, key=lambda queue: (queue["component"] == "", queue["component"], queue["name"]))

    def _consumers(self) -> list[dict[str, Any]]:
        consumers = []
        for declaration in self.pipeline.declarations.consumers:
            invocations = list(self.pipeline.consumer(declaration.name).function.invocations)
            consumers.append({"name": declaration.name, "invocations": len(invocations),
                              "records": sum(invocation.records for invocation in invocations),
                              "failed_records": sum(len(invocation.failed_ids) for invocation in invocations),
                              "errors": sum(1 for invocation in invocations if invocation.error)})
        return consumers

    def _workflows(self) -> list[dict[str, Any]]:
        by_machine = {self.pipeline.state_machine(w.name).logical_id: w.name for w in self.pipeline.declarations.workflows}
        counts: dict[str, Counter[str]] = {name: Counter() for name in by_machine.values()}
        for execution in self.pipeline.executions():
            if execution.state_machine in by_machine:
                counts[by_machine[execution.state_machine]][execution.status] += 1
        return [{"name": name, "executions": dict(count)} for name, count in counts.items()]

    def dead_letters(self) -> list[dict[str, Any]]:
        """Every dead-letter queue's messages with their verdict and last reason, and whether (and
        where) the console can redrive them; then the invalid-events queue's, with their reason."""
        assert self.pipeline.deployment is not None
        with self._lock:
            found = []
            for name, url in self._dead_letter_queues().items():
                try:
                    source, why_not = _label(self._target(url)), ""
                except RedriveError:
                    source, why_not = "", "no queue dead-letters into it (a rule target's DLQ): nothing to redrive to"
                letters = [{"message_id": letter.message_id, "event_id": letter.event_id, "verdict": letter.verdict,
                            "reason": letter.last_reason, "valid": letter.valid}
                           for letter in inspect_dead_letters(self.sqs, url)]
                found.append({"queue": name, "url": url, "component": self._owners.get(url, ""),
                              "kind": "dead letters", "source": source, "why_not": why_not, "messages": letters})
            found.append(self._invalid_events())
            return found

    def _invalid_events(self) -> dict[str, Any]:
        url = self.pipeline.invalid_events_url
        kept = []
        for message in peek_messages(self.sqs, url):
            try:
                body = json.loads(message["Body"])
            except json.JSONDecodeError:
                body = {}
            body = body if isinstance(body, dict) else {}
            kept.append({"message_id": message["MessageId"], "event_id": body.get("event_id"),
                         "verdict": f"{body.get('error', '?')} (from {body.get('consumer', '?')})",
                         "reason": str(body.get("reason", "")), "valid": False})
        return {"queue": url.rsplit("/", 1)[-1], "url": url, "component": "", "kind": "invalid events", "source": "",
                "why_not": "events that broke their contract: fix the producer and send them again", "messages": kept}

    def reviews(self) -> list[dict[str, Any]]:
        """The cases waiting on each workflow's manual-review queue, oldest first (task tokens left out)."""
        with self._lock:
            pending = []
            for workflow, url in self._review_queues().items():
                for review in list_reviews(self.sqs, url):
                    pending.append({"workflow": workflow, "message_id": review.message["MessageId"],
                                    "transaction_id": review.transaction_id, "problem": review.problem,
                                    "case": review.request.case.model_dump(mode="json") if review.request else None})
            return pending

    def executions(self) -> list[dict[str, Any]]:
        """The most recent executions, newest first, each with its stages in the order they began."""
        with self._lock:
            recent = self.pipeline.executions()[-RECENT_EXECUTIONS:]
        workflows = {self.pipeline.state_machine(w.name).logical_id: w.name for w in self.pipeline.declarations.workflows}
        return [{"name": execution.name, "workflow": workflows.get(execution.state_machine, execution.state_machine),
                 "status": execution.status, "waiting_for_review": execution.waiting_for_task_token,
                 "started": execution.start_date.isoformat(timespec="milliseconds"), "duration_ms": execution.duration_ms,
                 "error": execution.error, "cause": execution.cause,
                 "stages": [{"name": state.name, "duration_ms": state.duration_ms, "visits": state.visits}
                            for state in sorted(execution.states.values(), key=lambda state: state.entered)]}
                for execution in reversed(recent)]

    def recent_events(self) -> list[dict[str, Any]]:
        """The last events the bus carried, newest first (the pipeline's tap, kept here to a bounded list)."""
        with self._lock:
            for event in self.pipeline.tapped_events():
                detail = event.get("detail") if isinstance(event.get("detail"), dict) else {}
                self._recent.appendleft({"time": str(event.get("time", "")), "source": event.get("source"),
                                         "detail_type": event.get("detail-type"), "id": detail.get("id") or event.get("id"),
                                         "subject": detail.get("subject")})
            return list(self._recent)

    # -- actions ---------------------------------------------------------------------------

    def decide(self, workflow: str, transaction_id: str, *, approve: bool, reviewer: str, note: str | None) -> dict[str, str]:
        """Approve or reject a waiting case, as ``inferbus reviews approve|reject`` does."""
        url = self._review_queues().get(workflow)
        if url is None:
            raise ConsoleError(f"no workflow {workflow!r} with a review queue (known: {', '.join(self._review_queues())})")
        with self._lock:
            decision = decide(self.sqs, self.stepfunctions, url, transaction_id, approve=approve, reviewer=reviewer,
                              note=note)
        return {"transaction_id": decision.transaction_id, "outcome": decision.outcome, "detail": decision.detail}

    def redrive(self, queue: str) -> dict[str, Any]:
        """Move a DLQ's messages that can now succeed back to its source queue, as ``inferbus redrive`` does."""
        urls = self._dead_letter_queues()
        if queue not in urls:
            raise ConsoleError(f"{queue!r} is no dead-letter queue of the stack")
        with self._lock:
            try:
                target = self._target(urls[queue])
            except RedriveError as error:
                raise ConsoleError(str(error)) from None
            moved = redrive(self.sqs, urls[queue], target)
        return {"queue": queue, "source": _label(target), "moved": moved,
                "not_moved": target.problems}


def _label(target: RedriveTarget) -> str:
    """A redrive target as the page names it: an SQS queue by its name, a broker's queue or topic as it describes it."""
    return target.url.rsplit("/", 1)[-1] if isinstance(target, SqsRedrive) else target.describe()
