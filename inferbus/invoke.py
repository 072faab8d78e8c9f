"""``inferbus invoke``: one function of the synthesized template, one event, its result and logs.

The local counterpart of ``sam local invoke -e event.json``: the function runs in-process on the
embedded runtime (the stack on moto), with the template's environment, so what it calls (its
claims table, the bus) answers as the stack's resources would; nothing else runs (no event
source polls, no workflow starts).

A consumer fed by an SQS queue may also be given one CloudEvent (or an EventBridge event, as a
rule delivers it): it is sent to the consumer's queue as the rule would send it and received back
as the one-record batch its event source mapping hands the function (:func:`as_trigger_sends_it`).

Example
-------
>>> outcome = invoke_function("image-classifier", {"Records": []})  # doctest: +SKIP
>>> outcome.invocation.error is None
True
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from inferbus.model.declarations import Consumer, Workflow
from inferbus.model.names import FUNCTION_NAME

from .runtime import LocalFunction
from .runtime.channels import SqsChannel
from .runtime.lambda_host import Invocation
from .runtime.resources import ACCOUNT, REGION


class InvokeError(ValueError):
    """No such function in the template; the message lists the names it has."""


@dataclass(frozen=True)
class Invoked:
    """What one invocation gave: the function's logical id and name, its response and the :class:`Invocation`."""

    logical_id: str
    name: str
    response: Any
    invocation: Invocation
    wrapped: str | None = None


def find_function(pipeline: Any, name: str) -> LocalFunction:
    """The function ``name`` names: a declared consumer, ``<workflow>.<Step>`` (a workflow's task, ``Accept``
    included), a logical id, a function name or ARN (as a stack output gives it).

    Raises
    ------
    InvokeError
        No function matches; the message lists what does exist.
    """
    declared = {component.name: component for component in pipeline.declarations.components}
    component_name, _, step = name.partition(".")
    component = declared.get(component_name)
    if isinstance(component, Consumer) and not step:
        return pipeline.function(pipeline.outputs[component.output_key(FUNCTION_NAME)])
    if isinstance(component, Workflow):
        machine = pipeline.state_machine(component.name)
        steps = sorted(key.removesuffix("FunctionArn") for key in machine.substitutions if key.endswith("FunctionArn"))
        if step in steps:
            return pipeline.function(machine.substitutions[f"{step}FunctionArn"])
        raise InvokeError(f"{name}: workflow {component.name} runs a function per step; name one: "
                          + ", ".join(f"{component.name}.{stem}" for stem in steps))
    for logical_id, function in pipeline.functions.items():
        if name in (logical_id, function.spec.name, function.spec.arn):
            return function
    consumers = [c.name for c in pipeline.declarations.consumers]
    workflows = [f"{w.name}.<Step>" for w in pipeline.declarations.workflows]
    raise InvokeError(f"no function {name!r} in the template: name a consumer ({', '.join(consumers)}), a workflow's "
                      f"step ({', '.join(workflows)}) or a logical id ({', '.join(sorted(pipeline.functions))})")


def as_delivered_by_a_rule(event: Any) -> dict[str, Any] | None:
    """``event`` as an EventBridge rule delivers it to a queue, if it is one (returned as is) or a CloudEvent
    (in the envelope ``detail``, as the kit puts it); else None."""
    if not isinstance(event, dict):
        return None
    if "detail-type" in event and "detail" in event:
        return event
    if "specversion" in event and isinstance(event.get("source"), str) and isinstance(event.get("type"), str):
        return {"version": "0", "id": str(uuid.uuid4()), "detail-type": event["type"], "source": event["source"],
                "account": ACCOUNT, "time": event.get("time") or "1970-01-01T00:00:00Z", "region": REGION,
                "resources": [], "detail": event}
    return None


def as_trigger_sends_it(pipeline: Any, function: LocalFunction, event: Any) -> tuple[Any, str | None]:
    """The event to invoke ``function`` with, and a note when it is not ``event`` itself.

    A function fed by an SQS queue given one CloudEvent or EventBridge event (not a batch): the event is sent
    to that queue as the rule sends it and received back, so the function gets the one-record batch its
    mapping would give it (the queue's ARN, a real message id and receipt handle, the attributes). Anything
    else is passed as given, as the Invoke API passes it.
    """
    delivered = as_delivered_by_a_rule(event)
    sources = [source for source in pipeline.event_sources if source.function is function]
    if delivered is None or not sources or not isinstance(channel := sources[0].channel, SqsChannel):
        return event, None
    grouping = ({"MessageGroupId": "inferbus-invoke", "MessageDeduplicationId": str(uuid.uuid4())}
                if channel.fifo else {})
    channel.sqs.send_message(QueueUrl=channel.queue.url, MessageBody=json.dumps(delivered), **grouping)
    messages = channel.receive(1)
    kind = "an EventBridge event" if delivered is event else "a CloudEvent"
    return channel.lambda_event(messages), (f"{kind}, not an SQS batch: sent to {channel.queue.name} as the rule "
                                            "sends it and received back as a batch of one record")


def invoke_function(name: str, event: Any, *, template: dict[str, Any] | None = None) -> Invoked:
    """Provision the template on moto, invoke the function ``name`` once with ``event`` (as the Invoke API
    would, a single event for a queue's consumer as :func:`as_trigger_sends_it` makes it a batch), and return
    what it gave. ``template``: default, synthesize the app."""
    from .local import LocalPipeline
    from .template_cache import TemplateCache

    with LocalPipeline(template, tap=False, template_cache=TemplateCache()) as pipeline:
        function = find_function(pipeline, name)
        event, wrapped = as_trigger_sends_it(pipeline, function, event)
        response, invocation = function.invoke(event, trigger="invoke")
        logical_id = next(key for key, value in pipeline.functions.items() if value is function)
        return Invoked(logical_id, function.spec.name, response, invocation, wrapped)

