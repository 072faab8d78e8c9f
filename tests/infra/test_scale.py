"""A pipeline of 100 consumers and 20 workflows synthesizes within every limit CloudFormation and the
services put on one template, one rule, one function, one dashboard, one alarm.

The components are copies of the shipped declarations under new names, their producer references renamed to the copies (the scaffold writes the same
kind of declaration; scaffolding 120 of them, each checked in a fresh interpreter, takes longer
than this whole test). Slow: one synth of about 1,300 resources.
"""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from inferbus.model.declarations import Pipeline, Producer
from infra.limits import (
    MAX_OUTPUTS,
    MAX_PARAMETERS,
    MAX_RESOURCES,
    MAX_TEMPLATE_BYTES,
    TemplateSize,
    assembly_templates,
)
from tests.declared import PIPELINE

pytestmark = pytest.mark.slow

CONSUMERS, WORKFLOWS = 100, 20
# Documented service limits the templates below must keep (values with a deploy-time token are
# counted with a 100-character stand-in: an ARN or a generated name is shorter).
MAX_DASHBOARD_WIDGETS = 500
MAX_METRICS_PER_ALARM = 10
MAX_EVENT_PATTERN_CHARACTERS = 2048
MAX_LAMBDA_ENVIRONMENT_BYTES = 4096
MAX_BUS_POLICY_CHARACTERS = 10_240
TOKEN_STAND_IN = "x" * 100


def copies(declarations, count: int, stem: str, name_of) -> tuple:
    """``count`` copies of the declarations (round robin), each under a name of its own (``name_of``), each
    reference to a producer (``EventFilter.sources``) renamed to that producer's copy: a copy depends on copies,
    as a user's 100 components would."""
    return tuple(_copy(declarations[n % len(declarations)], n // len(declarations), name_of) for n in range(count))


def _copy(declaration, round_: int, name_of):
    accepts = dataclasses.replace(declaration.accepts, sources=tuple(
        Producer(name_of(source.name, round_)) for source in declaration.accepts.sources))
    return dataclasses.replace(declaration, name=name_of(declaration.name, round_), accepts=accepts)


def scaled_pipeline() -> Pipeline:
    # A workflow with a people-read queue is kept once under its own name (its definition names that
    # queue, copies would share it); the components it takes from, and those taking from it, are copies.
    single = [w for w in PIPELINE.workflows if w.review_queue]
    kinds = {"consumer": (list(PIPELINE.consumers), CONSUMERS),
             "workflow": ([w for w in PIPELINE.workflows if not w.review_queue], WORKFLOWS)}

    def name_of(shipped: str, round_: int) -> str:
        """The name of ``shipped``'s copy in ``round_`` (or its last round when it has fewer copies)."""
        for stem, (declarations, count) in kinds.items():
            index = next((i for i, d in enumerate(declarations) if d.name == shipped), None)
            if index is not None:
                last_round = (count - 1 - index) // len(declarations)
                return f"{stem}-{min(round_, last_round) * len(declarations) + index:03d}"
        return shipped  # kept once

    return Pipeline(consumers=copies(*kinds["consumer"], "consumer", name_of),
                    workflows=(*copies(*kinds["workflow"], "workflow", name_of), *(_copy(w, 0, name_of) for w in single)))


def concrete(value):
    """A template value with each intrinsic function replaced by a 100-character stand-in (a joined
    text joined around them)."""
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, argument),) = value.items()
            if key == "Fn::Join":
                return argument[0].join(str(concrete(part)) for part in argument[1])
            if key == "Ref" or key.startswith("Fn::"):
                return TOKEN_STAND_IN
        return {key: concrete(item) for key, item in value.items()}
    if isinstance(value, list):
        return [concrete(item) for item in value]
    return value


def characters(value) -> int:
    """Its length as compact JSON (a text: its own length)."""
    value = concrete(value)
    return len(value) if isinstance(value, str) else len(json.dumps(value, separators=(",", ":")))


@pytest.fixture(scope="module")
def scaled(tmp_path_factory):
    from inferbus.template import synthesize_stacks

    outdir = tmp_path_factory.mktemp("cdk.scaled")
    started = time.perf_counter()
    stacks = synthesize_stacks(pipeline=scaled_pipeline(), outdir=str(outdir))
    seconds = time.perf_counter() - started
    templates = assembly_templates(outdir)
    print(f"\nsynth of {CONSUMERS} consumers + {WORKFLOWS} workflows: {seconds:.0f} s, {len(templates)} templates")
    return stacks, templates


def resources_of(templates, resource_type):
    return {(name, key): r.get("Properties", {}) for name, t in templates.items()
            for key, r in t.get("Resources", {}).items() if r["Type"] == resource_type}


def test_every_template_is_within_cloudformations_limits(scaled):
    stacks, templates = scaled
    assert len(stacks.nested) == len(scaled_pipeline().components) >= CONSUMERS + WORKFLOWS
    sizes = [TemplateSize.of(name, template) for name, template in templates.items()]
    for size in sorted(sizes, key=lambda s: -s.resources)[:3]:
        print(size)
    for size in sizes:
        assert size.resources <= MAX_RESOURCES, size
        assert size.outputs <= MAX_OUTPUTS, size
        assert size.parameters <= MAX_PARAMETERS, size
        assert size.bytes <= MAX_TEMPLATE_BYTES, size
    # One level of nesting: no nested stack holds another.
    assert not [name for name, t in templates.items() if name != "Inferbus.template"
                and resources_of({name: t}, "AWS::CloudFormation::Stack")]


def test_the_flattened_view_holds_every_component_and_its_outputs(scaled):
    stacks, templates = scaled
    flat = stacks.flattened()
    assert len(flat["Resources"]) == sum(len(t["Resources"]) for t in templates.values()) - len(stacks.nested)
    for component in scaled_pipeline().components:
        assert any(key.startswith(component.construct_id) for key in flat["Outputs"]), component.name


def test_every_dashboard_page_holds_at_most_500_widgets(scaled):
    _, templates = scaled
    dashboards = resources_of(templates, "AWS::CloudWatch::Dashboard")
    widgets = {key: len(json.loads(concrete(d["DashboardBody"]))["widgets"]) for key, d in dashboards.items()}
    print("dashboard widgets per page:", sorted(widgets.values()))
    assert all(count <= MAX_DASHBOARD_WIDGETS for count in widgets.values()), widgets


def test_every_metric_math_alarm_takes_at_most_10_metrics(scaled):
    _, templates = scaled
    for key, alarm in resources_of(templates, "AWS::CloudWatch::Alarm").items():
        metrics = [m for m in alarm.get("Metrics", []) if "MetricStat" in m]
        assert len(metrics) <= MAX_METRICS_PER_ALARM, key


def test_every_event_pattern_is_within_eventbridges_size(scaled):
    _, templates = scaled
    sizes = {key: characters(rule["EventPattern"]) for key, rule in resources_of(templates, "AWS::Events::Rule").items()}
    print("largest event pattern:", max(sizes.values()), "characters")
    assert all(size <= MAX_EVENT_PATTERN_CHARACTERS for size in sizes.values()), \
        {key: size for key, size in sizes.items() if size > MAX_EVENT_PATTERN_CHARACTERS}


def test_every_functions_environment_is_within_4_kb(scaled):
    _, templates = scaled
    for key, function in resources_of(templates, "AWS::Lambda::Function").items():
        variables = function.get("Environment", {}).get("Variables", {})
        size = sum(len(name) + len(str(concrete(value))) for name, value in variables.items())
        assert size <= MAX_LAMBDA_ENVIRONMENT_BYTES, (key, size)


def test_the_bus_policy_is_within_eventbridges_default_size(scaled):
    _, templates = scaled
    (policy,) = [bus["Policy"] for bus in resources_of(templates, "AWS::Events::EventBus").values()]
    size = characters(policy)
    print("bus policy:", size, "characters")
    # Two statements list every reserved source (tagged producers), not one statement per producer.
    assert len(policy["Statement"]) == 3
    assert size <= MAX_BUS_POLICY_CHARACTERS
