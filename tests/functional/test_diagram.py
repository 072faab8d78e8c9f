"""``inferbus diagram``: the topology is read from the template, every resource that carries events is on it."""

from __future__ import annotations

from pathlib import Path

from inferbus.diagram import draw, mermaid, topology
from inferbus.model.names import FUNCTION_NAME, QUEUE_URL, STATE_MACHINE_ARN
from tests.declared import PIPELINE
from tests.infra.test_template import of_type, output_id

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "images" / "topology.mmd"


def test_every_rule_queue_function_state_machine_and_result_is_drawn(template):
    graph = topology(template=template)
    drawn = set(graph.nodes)
    for resource_type in ("AWS::Events::Rule", "AWS::StepFunctions::StateMachine", "AWS::Events::EventBus"):
        assert set(of_type(template, resource_type)) <= drawn, resource_type
    for consumer in PIPELINE.consumers:
        queue, function = (output_id(template, consumer.output_key(k)) for k in (QUEUE_URL, FUNCTION_NAME))
        assert graph.has_edge(queue, function)
        assert graph.has_edge(function, f"event:{consumer.result_type}")
    for workflow in PIPELINE.workflows:
        machine = output_id(template, workflow.output_key(STATE_MACHINE_ARN))
        for event_type in workflow.result_types:
            assert graph.has_edge(machine, f"event:{event_type}"), (workflow.name, event_type)
    for route in PIPELINE.routes:
        assert output_id(template, route.output_key(QUEUE_URL)) in drawn


def test_a_rule_shows_its_pattern(template):
    graph = topology(template=template)
    labels = "\n".join(data["label"] for _, data in graph.nodes(data=True) if data["kind"] == "rule")
    for component, event_filter in PIPELINE.filters():
        assert event_filter.type in labels, component.name


def test_the_committed_diagram_is_the_templates(template):
    from inferbus.diagram import update_architecture

    source = mermaid(topology(template=template))
    assert COMMITTED.read_text() == source, "run `inferbus diagram`"
    assert update_architecture(source, check=True), "docs/architecture.md: run `inferbus diagram`"


def test_it_renders_an_image(template, tmp_path):
    path = draw(topology(template=template), tmp_path / "topology.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 50_000
