"""EventBridge Pipes from one SQS queue to another, run in-process (moto has no Pipes).

What the kit's ordered consumers use (``infra/constructs/queue_consumer.py``): a pipe moves
each message of an arrivals FIFO queue to the consumer's FIFO queue, its ``MessageGroupId``
and ``MessageDeduplicationId`` read from the message by a path (Pipes' dynamic path
parameters), its body from the ``InputTemplate``. The pipe's event is the SQS record
(``messageId``, ``body``, ``attributes``, ...), its ``body`` parsed when it is JSON, as Pipes
parses it.

Supported, and checked when provisioning (anything else is refused, naming the pipe):

- source and target: SQS queues of the template;
- ``MessageGroupId`` / ``MessageDeduplicationId``: a fixed string or a path of fields
  (``$.body.detail.source``);
- ``InputTemplate``: absent (the whole record) or exactly one placeholder, ``<$.body>``.

Messages move in order; one that cannot be sent (its key missing, SQS refusing it) is made
visible again with everything received after it, so nothing overtakes it, and the source's
redrive policy moves it to the source's DLQ after ``maxReceiveCount`` receives, as in AWS.
"""

from __future__ import annotations

import json
import re
from typing import Any

from botocore.exceptions import ClientError

from .queue_ops import SQS_BATCH_LIMIT, delete_messages, lambda_message_attributes, release_messages
from .specs import PipeSpec, QueueInfo

__all__ = ["LocalPipe", "PipeError", "check_pipe", "read_path"]

PATH = re.compile(r"\$(\.[A-Za-z0-9_-]+)+")
PLACEHOLDER = re.compile(r"<(\$(?:\.[A-Za-z0-9_-]+)*)>")


class PipeError(ValueError):
    """An event the pipe cannot send (a path that reads nothing)."""


def read_path(event: Any, path: str) -> Any:
    """The value ``path`` (``$`` or ``$.field.field``) names in ``event``.

    Raises
    ------
    PipeError
        When a field is missing.

    >>> read_path({"body": {"detail": {"source": "shop"}}}, "$.body.detail.source")
    'shop'
    """
    value = event
    for field in path.split(".")[1:]:
        if not isinstance(value, dict) or field not in value:
            raise PipeError(f"{path}: no field {field!r}")
        value = value[field]
    return value


def check_pipe(spec: PipeSpec) -> str | None:
    """What the local pipe cannot do as written, or ``None``."""
    for name, value in (("MessageGroupId", spec.message_group_id), ("MessageDeduplicationId", spec.message_deduplication_id)):
        if value is not None and value.startswith("$") and not PATH.fullmatch(value):
            return f"{name} {value!r}: only a path of fields ($.body.field) is read locally"
    template = spec.input_template
    if template is not None and not PLACEHOLDER.fullmatch(template):
        return f"InputTemplate {template!r}: only a single placeholder such as <$.body> is applied locally"
    return None


class LocalPipe:
    """One SQS -> SQS pipe: :meth:`dispatch` moves what is on the source now, in order."""

    def __init__(self, spec: PipeSpec, source: QueueInfo, target: QueueInfo, sqs: Any) -> None:
        self.spec = spec
        self.source = source
        self.target = target
        self.sqs = sqs
        self.moved = 0

    def _event(self, message: dict[str, Any]) -> dict[str, Any]:
        body: Any = message["Body"]
        try:
            body = json.loads(body)
        except ValueError:
            pass  # a body that is not JSON stays a string, as Pipes leaves it
        return {"messageId": message["MessageId"], "receiptHandle": message["ReceiptHandle"], "body": body,
                "attributes": message.get("Attributes", {}),
                "messageAttributes": lambda_message_attributes(message.get("MessageAttributes", {})),
                "eventSource": "aws:sqs", "eventSourceARN": self.source.arn}

    def _parameter(self, event: dict[str, Any], value: str | None) -> str | None:
        if value is None or not value.startswith("$"):
            return value
        return str(read_path(event, value))

    def _send(self, message: dict[str, Any]) -> None:
        event = self._event(message)
        if self.spec.input_template is None:
            body = json.dumps(event)
        else:
            match = PLACEHOLDER.fullmatch(self.spec.input_template)
            assert match is not None  # checked when provisioned
            value = read_path(event, match.group(1))
            body = value if isinstance(value, str) else json.dumps(value)
        ordering = {name: resolved for name, value in (("MessageGroupId", self.spec.message_group_id),
                                                       ("MessageDeduplicationId", self.spec.message_deduplication_id))
                    if (resolved := self._parameter(event, value)) is not None}
        self.sqs.send_message(QueueUrl=self.target.url, MessageBody=body, **ordering)

    def dispatch(self) -> int:
        """Move the messages visible on the source now, in order; return how many moved."""
        moved = 0
        while True:
            from .moto_patches import receivable

            if not receivable(self.source.arn):
                return moved
            messages = self.sqs.receive_message(QueueUrl=self.source.url, AttributeNames=["All"],
                                                MessageAttributeNames=["All"],
                                                MaxNumberOfMessages=min(self.spec.batch_size, SQS_BATCH_LIMIT)
                                                ).get("Messages", [])
            if not messages:
                return moved
            sent = []
            for index, message in enumerate(messages):
                try:
                    self._send(message)
                except (PipeError, ClientError):
                    release_messages(self.sqs, self.source.url, messages[index:])  # nothing overtakes it
                    delete_messages(self.sqs, self.source.url, sent)
                    self.moved += len(sent)
                    return moved + len(sent)
                sent.append(message)
            delete_messages(self.sqs, self.source.url, sent)
            self.moved += len(sent)
            moved += len(sent)

    @property
    def waiting(self) -> int:
        """Messages on the source still to move."""
        from .moto_patches import queue_depth

        return queue_depth(self.source.arn)
