"""``inferbus invoke``: one function of the synthesized template, one event, its result and logs.

The local counterpart of ``sam local invoke -e event.json``: the function runs in-process on the
embedded runtime (the stack on moto), with the template's environment, so what it calls (its
claims table, the bus) answers as the stack's resources would; nothing else runs (no event
source polls, no workflow starts).

Example
-------
>>> outcome = invoke_function("image-classifier", {"Records": []})  # doctest: +SKIP
>>> outcome.invocation.error is None
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inferbus.model.declarations import Consumer, Workflow
from inferbus.model.names import FUNCTION_NAME

from .runtime import LocalFunction
from .runtime.lambda_host import Invocation


class InvokeError(ValueError):
    """No such function in the template; the message lists the names it has."""


@dataclass(frozen=True)
class Invoked:
    """What one invocation gave: the function's logical id and name, its response and the :class:`Invocation`."""

    logical_id: str
    name: str
    response: Any
    invocation: Invocation


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


def invoke_function(name: str, event: Any, *, template: dict[str, Any] | None = None) -> Invoked:
    """Provision the template on moto, invoke the function ``name`` once with ``event`` (as the Invoke API
    would), and return what it gave. ``template``: default, synthesize the app."""
    from .local import LocalPipeline
    from .template_cache import TemplateCache

    with LocalPipeline(template, tap=False, template_cache=TemplateCache()) as pipeline:
        function = find_function(pipeline, name)
        response, invocation = function.invoke(event, trigger="invoke")
        logical_id = next(key for key, value in pipeline.functions.items() if value is function)
        return Invoked(logical_id, function.spec.name, response, invocation)

