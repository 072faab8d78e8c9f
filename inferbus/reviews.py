"""The manual-review queue, from a reviewer's side: list the cases waiting, approve or reject one.

Each message on the queue is a :class:`ReviewRequest`: the case and the task token that
resumes its risk-review workflow. Approving sends ``send_task_success`` with the decision;
rejecting sends ``send_task_failure`` with error ``ReviewRejected`` and the note as cause.
Either way the workflow emits ``ReviewCompleted`` and the message is deleted. A case whose
workflow already gave up (timed out) is reported as expired and removed from the queue.

Listing receives the messages and makes them visible again at once, so other reviewers see
them too; the queue has no redrive policy for that reason.

Example
-------
>>> for review in list_reviews(sqs, queue_url):  # doctest: +SKIP
...     print(review.request.case.transaction_id, review.request.case.risk_score)
>>> decide(sqs, stepfunctions, queue_url, "txn-42", approve=False, reviewer="ana", note="card reported stolen")  # doctest: +SKIP
Decision(transaction_id='txn-42', outcome='rejected', detail='')
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from inferbus_lambda.contracts import ReviewRequest
from pydantic import ValidationError

from inferbus.runtime.queue_ops import delete_messages, peek_messages, receive_all, release_messages

__all__ = ["Decision", "PendingReview", "answer", "decide", "decide_each", "list_reviews"]

BATCH_HOLD_S = 300  # how long decide_each hides the cases it took while it answers them
REJECTED_ERROR = "ReviewRejected"  # the error name the workflow's catcher expects
GONE_ERRORS = {"TaskTimedOut", "TaskDoesNotExist", "InvalidToken"}


@dataclass(frozen=True)
class PendingReview:
    message: dict[str, Any]
    request: ReviewRequest | None
    problem: str = ""  # why the message is not a valid review request

    @property
    def transaction_id(self) -> str | None:
        return self.request.case.transaction_id if self.request else None


@dataclass(frozen=True)
class Decision:
    transaction_id: str
    outcome: str  # approved, rejected, expired, not-found
    detail: str = ""


def _read(message: dict[str, Any]) -> PendingReview:
    try:
        return PendingReview(message, ReviewRequest.model_validate_json(message["Body"]))
    except ValidationError as error:
        return PendingReview(message, None, f"not a review request: {error.errors(include_url=False)[0]['msg']}")


def list_reviews(sqs: Any, queue_url: str) -> list[PendingReview]:
    """Every case on the queue, oldest request first; the messages stay on the queue."""
    reviews = [_read(message) for message in peek_messages(sqs, queue_url)]
    return sorted(reviews, key=lambda r: (r.request is None, r.request.case.requested_at if r.request else 0))


def decide(sqs: Any, stepfunctions: Any, queue_url: str, transaction_id: str, *, approve: bool, reviewer: str,
           note: str | None = None) -> Decision:
    """Approve or reject the case of ``transaction_id``, resuming its workflow.

    Returns
    -------
    Decision
        ``approved`` / ``rejected``; ``expired`` if the workflow no longer waits (the message
        is removed); ``not-found`` if no such case is visible on the queue.
    """
    messages = receive_all(sqs, queue_url)
    mine = [m for m in messages if _read(m).transaction_id == transaction_id][:1]
    release_messages(sqs, queue_url, [m for m in messages if m not in mine])
    if not mine:
        return Decision(transaction_id, "not-found", "no such case on the queue (or another reviewer holds it)")
    return answer(sqs, stepfunctions, queue_url, mine[0], approve=approve, reviewer=reviewer, note=note)


def decide_each(sqs: Any, stepfunctions: Any, queue_url: str, judge: Callable[[Any], tuple[bool, str | None] | None], *,
                reviewer: str, progress: Callable[[int, int], None] | None = None) -> list[Decision]:
    """Take every case on the queue once, oldest first, and answer each as ``judge(case)`` says.

    ``judge`` gets a :class:`~inferbus_lambda.contracts.ReviewCase` and returns ``(approve, note)``, or
    ``None`` to leave the case for someone else; ``progress(done, total)`` is called after each case.
    One pass takes the whole queue, so ``n`` cases cost O(n) requests, where :func:`decide` per case takes
    and puts back the whole queue each time. Cases left, and messages that are not review requests, are
    made visible again at the end (also when an answer raises).
    """
    # Hidden for 5 minutes, not receive_all's 30 s: a long queue's answers must not outlast the hold (what is
    # left is put back at the end, so a crash is the only case that waits the 5 minutes out).
    taken = sorted((_read(message) for message in receive_all(sqs, queue_url, visibility_timeout_s=BATCH_HOLD_S)),
                   key=lambda r: (r.request is None, r.request.case.requested_at if r.request else 0))
    left = {review.message["MessageId"]: review.message for review in taken}
    decisions: list[Decision] = []
    try:
        for done, review in enumerate(taken, start=1):
            verdict = judge(review.request.case) if review.request is not None else None
            if verdict is not None:
                del left[review.message["MessageId"]]  # answer() deletes it, or makes it visible again itself
                decisions.append(answer(sqs, stepfunctions, queue_url, review.message, approve=verdict[0],
                                        reviewer=reviewer, note=verdict[1]))
            if progress is not None:
                progress(done, len(taken))
    finally:
        release_messages(sqs, queue_url, list(left.values()))
    return decisions


def answer(sqs: Any, stepfunctions: Any, queue_url: str, message: dict[str, Any], *, approve: bool, reviewer: str,
           note: str | None = None) -> Decision:
    """Approve or reject the case of one received review ``message`` (a valid request), resuming its workflow;
    the message is deleted, or made visible again if the answer fails for another reason than the workflow
    being gone."""
    request = _read(message).request
    if request is None:
        raise ValueError(f"not a review request: {message.get('MessageId')}")
    transaction_id = request.case.transaction_id
    try:
        if approve:
            stepfunctions.send_task_success(taskToken=request.task_token, output=json.dumps(
                {"decision": "approved", "reviewer": reviewer, "note": note}))
        else:
            cause = f"rejected by {reviewer}" + (f": {note}" if note else "")
            stepfunctions.send_task_failure(taskToken=request.task_token, error=REJECTED_ERROR, cause=cause)
    except ClientError as error:
        code = error.response["Error"]["Code"]
        if code not in GONE_ERRORS:
            release_messages(sqs, queue_url, [message])
            raise
        delete_messages(sqs, queue_url, [message])
        return Decision(transaction_id, "expired", f"the workflow no longer waits ({code}); the case was removed")
    delete_messages(sqs, queue_url, [message])
    return Decision(transaction_id, "approved" if approve else "rejected")
