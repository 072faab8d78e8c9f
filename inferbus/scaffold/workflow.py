"""``inferbus new workflow``: a Step Functions workflow skeleton, one Lambda task per step, ready to run.

It writes the workflow's own ASL states (:mod:`.asl`; the kit adds Accept, routing and the failure
path at synth), a step handler per step made with ``step_handler``, the contracts (a
``<Name>Failed`` failure type; the input and result types when they are new), the declaration
(a ``Task`` per step) and a functional test. The skeleton runs as written: its first step
validates the accepted event, each step hands its data to the next, and the last answers with
the fields it holds. Replace the steps with your work.

A workflow on another component's results (``--event RiskScored``) accepts them only from that
component (``Producer`` in its trigger, which the kit's Accept step checks again), so a forged
result cannot start it; its test runs the producer's demo samples through both.

Example
-------
>>> written = new_workflow("order-check")  # doctest: +SKIP
>>> [path for path, _ in written.files][0]  # doctest: +SKIP
'statemachines/order_check.asl.json'
"""

from __future__ import annotations

import json
import keyword
import re
from dataclasses import dataclass

from inferbus_lambda.contracts import WorkflowFailure

from inferbus.model.names import pascal
from inferbus.model.workflow_protocol import KIT_STATES

from .asl import PUBLISH, workflow_definition
from .codegen import functional_test_head, paragraph, source_text, type_imports
from .errors import ScaffoldError
from .generated_docs import refresh_or_note
from .names import SUBMITTED, check_event_type, module_name
from .project import Declared, Project, Writes, Written, open_project

__all__ = ["new_workflow"]

STEPS = ("process",)  # one step unless --steps names them
STEP = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
MAX_STEPS = 20
SAMPLES_COUNT, SAMPLES_LIMIT, MAX_VALUES = 10, 100, 1000
TEST_SAMPLES = 5


@dataclass(frozen=True)
class WorkflowPlan:
    """What a new workflow's files are written from."""

    name: str
    module: str
    event_type: str
    result_type: str
    failure_type: str
    input_module: str | None  # where an existing input type is defined; None: written here
    samples_from: str | None  # a component whose demo samples of event_type are reused
    samples_module: str | None
    producer: str | None  # a component whose results start it, with demo samples: they drive the test
    feeder_type: str | None = None  # what that producer takes, and where the type is defined
    feeder_module: str | None = None
    producers: tuple[str, ...] = ()  # every component that publishes event_type: the only sources it accepts
    steps: tuple[str, ...] = STEPS  # its Lambda steps in order, snake_case: functions/<module>/<step>.py

    @property
    def contract_module(self) -> str:
        return f"inferbus_lambda.contracts.{self.module}"

    @property
    def stems(self) -> tuple[str, ...]:
        """The steps' placeholder stems (``score_text`` -> ``ScoreText``, ``${ScoreTextFunctionArn}``)."""
        return tuple(stem_of(step) for step in self.steps)

    @property
    def chain(self) -> str:
        """``A -> B -> C``: the steps, as the descriptions name them."""
        return " -> ".join(self.stems)


def stem_of(step: str) -> str:
    """``score_text`` -> ``ScoreText``."""
    return "".join(part.capitalize() for part in step.split("_"))


def check_steps(steps: tuple[str, ...]) -> None:
    """Each step a snake_case Python name, once, not the name of a state the kit or the skeleton has."""
    if not 1 <= len(steps) <= MAX_STEPS:
        raise ScaffoldError(f"--steps names 1 to {MAX_STEPS} steps, got {len(steps)}")
    for step in steps:
        if not STEP.fullmatch(step) or keyword.iskeyword(step):
            raise ScaffoldError(f"--steps: {step!r} must be a snake_case Python name (lowercase words joined by '_', "
                                "starting with a letter): it names the step's file and function")
        if stem_of(step) in (*KIT_STATES, PUBLISH):
            raise ScaffoldError(f"--steps: {step!r} would be the state {stem_of(step)!r}, which the workflow has "
                                f"already ({', '.join((*KIT_STATES, PUBLISH))}): choose another name")
    repeated = sorted({step for step in steps if steps.count(step) > 1})
    if repeated:
        raise ScaffoldError(f"--steps names {repeated} more than once: each step is its own function")


def new_workflow(name: str, event_type: str | None = None, result_type: str | None = None, *,
                 steps: tuple[str, ...] = STEPS, project: Project | None = None,
                 known: Declared | None = None) -> Written:
    """Add a workflow ``name``: (the kit's Accept and routing) -> its steps in order -> publish ``result_type``.

    Parameters
    ----------
    name
        The component's kebab-case name, not yet declared.
    event_type
        What starts an execution; default ``<Name>Submitted``. An existing type's contract is reused.
    result_type
        What it publishes; default ``<Stem>Processed`` (``OrderCheckSubmitted`` -> ``OrderCheckProcessed``).
        Must not exist yet.
    steps
        Its Lambda steps in order, snake_case (``("tokenize", "score")``): each gets
        ``functions/<name>/<step>.py`` and a ``Task``; default one step, ``process``.
    project, known
        As for :func:`~.consumer.new_consumer`.

    Raises
    ------
    ScaffoldError
        Naming what is wrong and what to do; nothing has been written.
    """
    check_steps(steps)
    project, known = open_project(project, known, name)
    event_type = event_type or f"{pascal(name)}{SUBMITTED}"
    check_event_type(event_type, "--event")
    result_type = result_type or f"{event_type.removesuffix(SUBMITTED) or pascal(name)}Processed"
    check_event_type(result_type, "--result")
    failure_type = f"{pascal(name)}Failed"
    for what, chosen in (("--result", result_type), (f"the failure type of {name}", failure_type)):
        if chosen in known.event_types:
            raise ScaffoldError(f"{what} {chosen} is an event type already ({known.event_types[chosen].__module__}): "
                                f"{'pass --result with a new name' if what == '--result' else 'choose another name'}")
    if result_type == event_type:
        raise ScaffoldError(f"the result type must differ from the input type {event_type}: pass --result TYPE")
    existing = known.event_types.get(event_type)
    if existing is not None and issubclass(existing, WorkflowFailure):
        raise ScaffoldError(f"--event {event_type} is a workflow's failure event: to act on failures, declare a Route "
                            "to a queue your service reads (docs/extending.md), or choose another event type")
    producers = tuple(known.producers.get(event_type, [])) if existing is not None else ()
    takers = known.demo_sources.get(event_type, [])
    fed = [p for p in producers if p in known.demo_sources.get(known.inputs.get(p, ""), [])]
    producer = fed[0] if fed else None
    feeder_type = known.inputs.get(producer) if producer else None
    if producers and producer is None:
        raise ScaffoldError(f"--event {event_type} is the result of {', '.join(producers)}, none of which has demo "
                            "samples to drive a test: choose a new event type")
    samples_from = takers[0] if existing is not None and takers and not producers else None
    if existing is not None and not producers and samples_from is None:
        raise ScaffoldError(f"--event {event_type}: no declared component sends demo {event_type} events or "
                            "publishes them, so nothing would start the workflow in a test: choose a new event type")
    module = module_name(name)
    plan = WorkflowPlan(name, module, event_type, result_type, failure_type,
                        existing.__module__ if existing is not None else None, samples_from,
                        known.component_modules.get(samples_from) if samples_from else None, producer, feeder_type,
                        known.event_types[feeder_type].__module__ if feeder_type else None, producers, steps)
    definition = workflow_definition(result_type, plan.stems,
                                     comment=f"{name} (Express): {event_type} -> {plan.chain} -> {result_type}; any "
                                             f"failure -> {failure_type}. Written by inferbus new workflow.")
    writes = Writes(project)
    writes.add(project.statemachines / f"{module}.asl.json", json.dumps(definition, indent=2) + "\n",
               f"the ASL, your states only: {plan.chain} -> publish; failures -> EmitFailure (the kit adds "
               "Accept, routing and the failure path at synth)")
    writes.add(project.contracts / f"{module}.py", contract_source(plan),
               ", ".join(([event_type] if existing is None else []) + [result_type, failure_type]))
    writes.add(project.functions / module / "__init__.py", "", "makes the step folder a package")
    for index, step in enumerate(steps):
        writes.add(project.functions / module / f"{step}.py", step_source(plan, index),
                   f"the step {stem_of(step)}: replace {step}() with your work")
    writes.add(project.pipeline / f"{module}.py", declaration_source(plan),
               f"the Workflow declaration (trigger, {'task' if len(steps) == 1 else 'tasks'}, demo)")
    writes.add(project.functional_tests / f"test_{module}.py", functional_test_source(plan),
               "runs it embedded on moto: a result per input, a malformed input's failure event")
    writes.commit(name, plan.contract_module)
    last = steps[-1]
    next_steps = [
        (f"Replace {'() and '.join(steps)}() in functions/{module}/ with your work, and {result_type}'s fields in "
         f"functions/inferbus_lambda/contracts/{module}.py with your answer (the ASL publishes what {last}() "
         "returns)."),
    ]
    if existing is None:
        next_steps.append(f"Replace {event_type}'s placeholder field `values` with your input's fields, and the demo "
                     f"samples in pipeline/{module}.py with held-out ones.")
    next_steps += [
        "make docs   (the README's event table, docs/schemas/ and the topology picture are generated from the "
        "declarations; make test checks that they are current)",
        f".venv/bin/python -m pytest tests/functional/test_{module}.py -q   (then: make test)",
        f".venv/bin/inferbus demo   ({name} is in the summary" + (" and the ledger)" if producer is None else
                                                                 f", taking {producer}'s {event_type} events)"),
    ]
    notes = [f"trigger: {event_type}" + (f" from {', '.join(producers)} only (Producer in the trigger, the sources "
                                         "in Accept)" if producers else "")]
    if refresh_or_note(project, notes) is not None:  # as make docs does, so make test passes right after
        next_steps = [step for step in next_steps if not step.startswith("make docs")]
    return Written(name, writes.files, notes, next_steps)


def contract_source(plan: WorkflowPlan) -> str:
    """The workflow's event types: its failure type, and its input and result types when they are new."""
    defined = sorted([plan.result_type, plan.failure_type] + ([plan.event_type] if plan.input_module is None else []))
    out = [
        *paragraph(f'"""Events of the {plan.name} workflow: ' + (f"{plan.event_type} in, " if plan.input_module is None
                                                                   else "") + f"{plan.result_type} out, "
                   f"{plan.failure_type} when it fails."),
        "",
        "Written by ``inferbus new workflow``: REPLACE the placeholder fields with yours; the workflow's",
        "first step, its step function, the CLI, the demo and the tests all validate with these models.",
        '"""',
        "",
        # no postponed annotations: pydantic would compile each from its text (cold init)
        "from typing import Annotated, ClassVar",
        "",
        "from pydantic import Field",
        "",
        "from .core import EventData, Identifier, ShortText, WorkflowFailure",
        "",
        f"__all__ = [{', '.join(json.dumps(name) for name in defined)}]",
        "",
    ]
    if plan.input_module is None:
        out += [
            "# Larger magnitudes are input errors: set the range your values really take.",
            "VALUE_LIMIT = 1_000_000",
            f"MAX_VALUES = {MAX_VALUES}",
            "Number = Annotated[float, Field(strict=True, ge=-VALUE_LIMIT, le=VALUE_LIMIT)]  # finite, in range",
            "",
            "",
            f"class {plan.event_type}(EventData):",
            f'    """What starts a {plan.name} execution.',
            "",
            "    A PLACEHOLDER: replace ``values`` with your input's fields.",
            '    """',
            "",
            f'    EVENT_TYPE: ClassVar[str] = "{plan.event_type}"',
            '    values: Annotated[list[Number], Field(min_length=1, max_length=MAX_VALUES, description="your input")]',
        ]
    out += [
        "",
        "",
        f"class {plan.result_type}(EventData):",
        f'    """The {plan.name} workflow\'s answer for one ``{plan.event_type}`` event.',
        "",
        "    A PLACEHOLDER: ``fields`` names the input's fields; replace it with your answer's fields",
        f"    (``functions/{plan.module}/{plan.steps[-1]}.py`` builds this; the ASL publishes it as is).",
        '    """',
        "",
        f'    EVENT_TYPE: ClassVar[str] = "{plan.result_type}"',
        f'    input_id: Identifier = Field(description="id of the {plan.event_type} event")',
        '    fields: Annotated[list[ShortText], Field(max_length=100, description="the fields of the input\'s data")]',
        "",
        "",
        f"class {plan.failure_type}(WorkflowFailure):",
        f'    """Emitted by {plan.name}\'s failure path: which input, which error, which execution."""',
        "",
        f'    EVENT_TYPE: ClassVar[str] = "{plan.failure_type}"',
    ]
    return source_text(out)


def step_source(plan: WorkflowPlan, index: int = 0) -> str:
    """``functions/<module>/<step>.py``: the workflow's ``index``-th step, made with ``step_handler``.

    The first step validates the accepted event; each step hands its answer to the next; the last
    answers with the result's data (one step does both).
    """
    step, stem = plan.steps[index], plan.stems[index]
    first, last = index == 0, index == len(plan.steps) - 1
    takes = f"one accepted ``{plan.event_type}``" if first else f"the answer of ``{plan.stems[index - 1]}``"
    gives = (f"the data of its ``{plan.result_type}`` out (the ASL publishes it as is)" if last
             else f"what ``{plan.stems[index + 1]}`` needs out")
    if first and last:
        imports = type_imports(plan.contract_module, plan.input_module, plan.event_type, [plan.result_type])
        body = [
            f'    submitted = {plan.event_type}.model_validate(request["data"])',
            "    fields = sorted(submitted.model_dump(exclude_unset=True))  # a placeholder answer: the fields it holds",
            f'    result = {plan.result_type}(input_id=request["input_id"], fields=fields)',
            '    return result.model_dump(mode="json")',
        ]
    elif first:
        imports = [f"from {plan.input_module or plan.contract_module} import {plan.event_type}"]
        body = [
            f'    submitted = {plan.event_type}.model_validate(request["data"])',
            "    return submitted.model_dump(mode=\"json\", exclude_unset=True)  # a placeholder: the input, handed on",
        ]
    elif last:
        imports = [f"from {plan.contract_module} import {plan.result_type}"]
        body = [
            '    fields = sorted(request["data"])  # a placeholder answer: the fields handed on from the input',
            f'    result = {plan.result_type}(input_id=request["input_id"], fields=fields)',
            '    return result.model_dump(mode="json")',
        ]
    else:
        imports = []
        body = ['    return dict(request["data"])  # a placeholder: the data, handed on']
    out = [
        *paragraph(f'"""The {plan.name} workflow\'s step ``{stem}``: {takes} in, {gives}.'),
        "",
        f"Written by ``inferbus new workflow``: REPLACE ``{step}`` with your work. To run a model, name it in",
        f"the Task's ``models`` (``pipeline/{plan.module}.py``) and call ``runtime.models.only.run(...)``.",
        "Raise :class:`~inferbus_lambda.errors.TransientError` for what a retry may fix; anything else goes",
        f"to the failure path (a ``{plan.failure_type}`` event with the error).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any",
        "",
        *imports,
        "from inferbus_lambda.handlers import StepRuntime, step_handler",
        "",
        "",
        f"def {step}(request: dict[str, Any], runtime: StepRuntime) -> dict[str, Any]:",
        f'    """``{{"input_id": ..., "data": ...}}`` -> {"the data of its " + plan.result_type if last else "the data of the next step"}."""',
        *body,
        "",
        "",
        f"lambda_handler = step_handler({step})",
    ]
    return source_text(out)


def declaration_source(plan: WorkflowPlan) -> str:
    """``pipeline/<module>.py``: the ``Workflow`` declaration."""
    names = ["EventFilter", "Task", "Workflow"]
    demo_names = []
    if plan.producer:
        names.append("Producer")
    elif plan.samples_from is None:
        demo_names = ["Corruption", "DemoInputs", "Sample"]
    else:
        demo_names = ["DemoInputs"]
    out = [
        *paragraph(f'"""{plan.name}: {plan.event_type} -> {plan.chain} -> {plan.result_type}; any failure -> '
                   f"{plan.failure_type}."),
        "",
        *paragraph(f"Written by ``inferbus new workflow``: the ASL (your states; the kit adds its own at synth) is "
                   f"``statemachines/{plan.module}.asl.json``, the {'step is' if len(plan.steps) == 1 else 'steps are'} "
                   f"in ``functions/{plan.module}/``, the contract ``{plan.contract_module}``."),
        '"""',
        "",
        "from __future__ import annotations",
        "",
    ]
    if plan.input_module is None and plan.producer is None:
        out += ["import numpy as np", ""]
    out.append(f"from inferbus.model.declarations import {', '.join(sorted(names))}")
    if demo_names:
        out.append(f"from inferbus.model.demo import {', '.join(demo_names)}")
    if plan.samples_from:
        variable = f"{plan.samples_module.upper()}_DEMO"  # type: ignore[union-attr]
        out += ["", f"from .{plan.samples_module} import DEMO as {variable}", "", "",
                *paragraph(f"# The held-out {plan.event_type} events that {plan.samples_from}'s demo sends: this "
                           "workflow takes the same type.", indent="# "),
                f'SAME_EVENTS = next(d for d in {variable} if d.component == "{plan.samples_from}")']
    elif plan.input_module is None:
        out += [
            "",
            "",
            "def synthetic(count: int) -> list[Sample]:",
            '    """Seeded random inputs, so the demo runs before you have data: REPLACE them with held-out ones."""',
            "    rng = np.random.default_rng(7)",
            '    return [Sample({"values": [round(float(v), 4) for v in rng.normal(size=4)]}) for _ in range(count)]',
        ]
    trigger = f'EventFilter("{plan.event_type}")'
    if plan.producers:
        markers = ", ".join(f'Producer("{name}")' for name in plan.producers)
        out += ["", "", f"# Only these components' {plan.event_type} start it (and its Accept step checks again):",
                f"PRODUCERS = ({markers}{',' if len(plan.producers) == 1 else ''})"]
        trigger = f'EventFilter("{plan.event_type}", sources=PRODUCERS)'
    out += [
        "",
        "",
        "COMPONENTS = [",
        "    Workflow(",
        f'        name="{plan.name}",',
        description_line(plan),
        f'        definition="{plan.module}.asl.json",',
        f"        accepts={trigger},",
        f'        emits=("{plan.result_type}",),',
        f'        failure="{plan.failure_type}",',
        "        tasks={",
    ]
    for index, (step, stem) in enumerate(zip(plan.steps, plan.stems, strict=True)):
        what = "Your work on one accepted event" if len(plan.steps) == 1 else f"Step {index + 1} of {len(plan.steps)}"
        task = f'            "{stem}": Task("{plan.module}.{step}.lambda_handler", description="{what}"),'
        out += [task] if len(task) <= 120 else [f'            "{stem}": Task(',
                                                f'                "{plan.module}.{step}.lambda_handler",',
                                                f'                description="{what}"),']
    out.append("        },")
    if plan.producer:
        out.append(f"        # No demo samples of its own: the demo sends {plan.producer}'s, whose results start it.")
    out += ["    ),", "]"]
    if plan.samples_from:
        out += [
            "",
            "DEMO = [",
            "    DemoInputs(",
            f'        "{plan.name}",',
            "        samples=SAME_EVENTS.samples,",
            "        count=min(SAME_EVENTS.count, 10),",
            "        limit=SAME_EVENTS.limit,",
            "        malformed=SAME_EVENTS.malformed[:1],",
            "    ),",
            "]",
        ]
    elif not plan.producer:
        out += [
            "",
            "DEMO = [",
            "    DemoInputs(",
            f'        "{plan.name}",',
            "        samples=synthetic,",
            f"        count={SAMPLES_COUNT},",
            f"        limit={SAMPLES_LIMIT},",
            "        malformed=(",
            '            Corruption("no values", lambda d: d["data"].update(values=[])),',
            '            Corruption("a value as a string", lambda d: d["data"]["values"].__setitem__(0, "1.5")),',
            "        ),",
            "    ),",
            "]",
        ]
    return source_text(out)


def description_line(plan: WorkflowPlan) -> str:
    """The declaration's ``description=`` line: the chain of steps, or their number if that is too long."""
    line = f'        description="{plan.event_type} -> {plan.chain} -> {plan.result_type}",'
    return line if len(line) <= 120 else \
        f'        description="{plan.event_type} -> {len(plan.steps)} steps -> {plan.result_type}",'


def functional_test_source(plan: WorkflowPlan) -> str:
    """``tests/functional/test_<module>.py``: the workflow embedded on moto (with its producer, if it has one)."""
    sent_type, sent_module = (plan.feeder_type, plan.feeder_module) if plan.producer else (plan.event_type,
                                                                                           plan.input_module)
    imports = type_imports(plan.contract_module, sent_module, sent_type, [plan.result_type, plan.failure_type])
    if plan.producer and plan.input_module:
        imports = type_imports(plan.input_module, None, plan.event_type, []) + imports
    out = [
        *functional_test_head(
            f"{plan.name}, embedded on moto: its ASL on moto's interpreter, its step in-process.",
            "Written by ``inferbus new workflow``. No AWS account, no network.", imports,
            ["from inferbus.local import LocalPipeline", "from inferbus.model.declarations import Pipeline, Workflow",
             "from pipeline import load_demo_fixtures, load_pipeline" if plan.producer else "from pipeline import load_demo_fixtures",
             f"from pipeline.{plan.module} import COMPONENTS"]),
        "",
        f'(WORKFLOW,) = [c for c in COMPONENTS if isinstance(c, Workflow) and c.name == "{plan.name}"]',
        f"SAMPLES = {TEST_SAMPLES}",
    ]
    if plan.producer:
        out += [
            f"# {plan.producer}'s results start {plan.name}: its demo samples go in, through both.",
            f'FEEDER = load_pipeline().component("{plan.producer}")',
            "STACK = Pipeline(workflows=(FEEDER, WORKFLOW)) if isinstance(FEEDER, Workflow) else \\",
            "    Pipeline(consumers=(FEEDER,), workflows=(WORKFLOW,))",
        ]
    else:
        out += ["FEEDER = WORKFLOW", "STACK = Pipeline(workflows=(WORKFLOW,))"]
    out += [
        "",
        "",
        '@pytest.fixture(scope="module")',
        "def pipeline():",
        "    with LocalPipeline(pipeline=STACK) as running:",
        "        yield running",
        "",
        "",
        "def submitted(count: int) -> list:",
        "    inputs = load_demo_fixtures().inputs[FEEDER.name]",
        "    samples = inputs.samples(min(count, inputs.limit))",
        f'    return [new_event({sent_type}.model_validate(sample.data), source="inferbus.test")',
        "            for sample in samples]",
        "",
        "",
        "def published(delivered: list[dict], event_type: str) -> list:",
        '    """The events of ``event_type`` among ``delivered`` that the workflow published, each validated."""',
        "    return [from_eventbridge_event(d) for d in delivered",
        '            if d["detail-type"] == event_type and d["source"] == WORKFLOW.result_source]',
        "",
        "",
    ]
    if plan.producer:
        out += [
            "def test_every_result_it_takes_from_its_producer_gets_one_valid_result(pipeline):",
            "    events = submitted(SAMPLES)",
            "    assert pipeline.put_events([to_put_events_entry(event, pipeline.bus_name) for event in events]) == []",
            "    pipeline.drain()",
            "",
            "    delivered = pipeline.tapped_events()  # every event the bus carried since the last look",
            f'    taken = [d["detail"]["id"] for d in delivered if d["detail-type"] == "{plan.event_type}"]',
            f'    results = published(delivered, "{plan.result_type}")',
            "    assert taken and sorted(result.data.input_id for result in results) == sorted(taken)",
            f"    assert all(isinstance(result.data, {plan.result_type}) for result in results)",
            f'    assert published(delivered, "{plan.failure_type}") == []',
            "",
            "",
            "def test_the_same_event_type_from_another_source_starts_nothing(pipeline):",
            "    assert pipeline.put_events([to_put_events_entry(submitted(1)[0], pipeline.bus_name)]) == []",
            "    pipeline.drain()",
            f'    genuine = next(d for d in pipeline.tapped_events() if d["detail-type"] == "{plan.event_type}")',
            '    forged = dict(genuine["detail"], id="forged-1", source="someone.else")',
            '    entry = {"EventBusName": pipeline.bus_name, "Source": "someone.else",',
            f'             "DetailType": "{plan.event_type}", "Detail": json.dumps(forged)}}',
            "    assert pipeline.put_events([entry]) == []",
            "    pipeline.drain()",
            "",
            "    # The trigger takes it only from its producer (and Accept checks the source again).",
            '    assert [e for e in pipeline.executions() if e.input["detail"]["id"] == "forged-1"] == []',
            '    assert [d for d in pipeline.tapped_events() if d["detail"].get("subject") == "forged-1"] == []',
        ]
    else:
        out += [
            "def test_one_valid_result_per_input(pipeline):",
            "    events = submitted(SAMPLES)",
            "    assert pipeline.put_events([to_put_events_entry(event, pipeline.bus_name) for event in events]) == []",
            "    pipeline.drain()",
            "",
            f'    results = published(pipeline.tapped_events(), "{plan.result_type}")',
            "    assert sorted(result.data.input_id for result in results) == sorted(event.id for event in events)",
            f"    assert all(isinstance(result.data, {plan.result_type}) for result in results)",
            "",
            "",
            "def test_a_malformed_input_ends_in_a_failure_event_and_is_kept_aside(pipeline):",
            "    entry = to_put_events_entry(submitted(1)[0], pipeline.bus_name)",
            '    d = json.loads(entry["Detail"])',
            f'    d["id"] = "malformed-{plan.name}"',
            '    d["data"] = {"not_a_field": 1}',
            '    assert pipeline.put_events([entry | {"Detail": json.dumps(d)}]) == []',
            "    pipeline.drain()",
            "",
            f'    failures = published(pipeline.tapped_events(), "{plan.failure_type}")',
            f"    assert [type(e.data) for e in failures] == [{plan.failure_type}]",
            '    assert failures[0].data.error == "InvalidEventError" and failures[0].data.cause.startswith("data.")',
            "    # A workflow\'s rejections wait in the invalid-events queue too, as its failure event.",
            '    kept = [m["detail"]["data"] for m in pipeline.invalid_events() if "detail" in m]',
            '    assert [k["input_id"] for k in kept].count(d["id"]) == 1',
        ]
    return source_text(out)
