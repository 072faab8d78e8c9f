"""``inferbus diagram``: the topology is read from the template, every resource that carries events is on it,
and the picture is readable: no arrow crosses a box it does not connect, for the pipeline and a larger one."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from inferbus.channel_feeds import fed_by_broker
from inferbus.diagram import DRAWN_WIDTH, FONT_SIZE, draw, drawn_label, mermaid, page_paths, pages, topology
from inferbus.diagram_layout import Box, Edge, crossings
from inferbus.model.names import DEAD_LETTER_QUEUE_URL, FUNCTION_NAME, QUEUE_URL, STATE_MACHINE_ARN
from tests.declared import PIPELINE
from tests.infra.test_template import of_type, output_id

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "images" / "topology.mmd"
EXTRA = 40  # components a user adds on top of the declared ones
READABLE_PX = 10.0  # a label's font size, in pixels, when a page is shown 1,000 px wide


def with_extra_components(template: dict, count: int) -> dict:
    """``template`` with ``count`` more components: copies of the declared ones (each kind in turn), every
    logical id and stack output renamed, as a user's new components would synthesize."""
    extra = copy.deepcopy(template)
    resources, outputs = template["Resources"], template["Outputs"]
    for index in range(count):
        component = PIPELINE.components[index % len(PIPELINE.components)]
        name = f"Added{component.construct_id}Number{index}"
        keys = [component.output_key(kind) for kind in (QUEUE_URL, DEAD_LETTER_QUEUE_URL, FUNCTION_NAME,
                                                        STATE_MACHINE_ARN) if component.output_key(kind) in outputs]
        ids = {output_id(template, key) for key in keys}
        ids |= {_target(resources[i]["Properties"]["RedrivePolicy"]["deadLetterTargetArn"]) for i in list(ids)
                if "RedrivePolicy" in resources[i].get("Properties", {})}
        ids |= {logical_id for logical_id, resource in resources.items()  # its rule and event source mapping
                if resource["Type"] in ("AWS::Events::Rule", "AWS::Lambda::EventSourceMapping")
                and any(f'"{i}"' in json.dumps(resource) for i in ids)}
        text = json.dumps({"Resources": {i: resources[i] for i in ids}, "Outputs": {k: outputs[k] for k in keys}})
        for old in ids:
            text = text.replace(f'"{old}"', f'"{name}{old}"')
        cloned = json.loads(text)
        extra["Resources"].update(cloned["Resources"])
        extra["Outputs"].update({name + key.removeprefix(component.construct_id): value
                                 for key, value in cloned["Outputs"].items()})
    return extra


def _target(arn: dict) -> str:
    return arn["Ref"] if "Ref" in arn else arn["Fn::GetAtt"][0]


def assert_readable(graph) -> None:
    """Every node and edge drawn; no arrow through a box it does not connect; a label legible at 1,000 px."""
    for node_id, data in graph.nodes(data=True):  # so no box is wider than a column, whatever the names
        assert max(map(len, drawn_label(data["lines"]).split("\n"))) <= DRAWN_WIDTH, node_id
    drawn = pages(graph)
    nodes = {box.node for page in drawn for box in page.boxes.values()}
    assert nodes == set(graph.nodes)
    arrows = {(page.boxes[e.source].node, page.boxes[e.target].node) for page in drawn for e in page.edges}
    assert arrows == set(graph.edges), set(graph.edges) ^ arrows
    for number, page in enumerate(drawn, start=1):
        crossed = [f"{edge.source} -> {edge.target} crosses {box.key}" for edge, box in crossings(page.boxes, page.edges)]
        assert not crossed, f"page {number}: {crossed}"
        assert FONT_SIZE * 1000 / page.width >= READABLE_PX, page.width


def test_every_rule_queue_function_state_machine_and_result_is_drawn(template):
    graph = topology(template=template)
    drawn = set(graph.nodes)
    for resource_type in ("AWS::Events::Rule", "AWS::StepFunctions::StateMachine", "AWS::Events::EventBus"):
        assert set(of_type(template, resource_type)) <= drawn, resource_type
    for consumer in PIPELINE.consumers:
        function = output_id(template, consumer.output_key(FUNCTION_NAME))
        if fed_by_broker(consumer):  # from its topic's or broker queue's box
            assert graph.in_degree(function) >= 1, consumer.name
        else:
            assert graph.has_edge(output_id(template, consumer.output_key(QUEUE_URL)), function), consumer.name
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
        if not fed_by_broker(component):  # a kafka or rabbitmq consumer has no rule: its broker feeds it
            assert event_filter.type in labels, component.name


def test_the_committed_diagram_is_the_templates(template, tmp_path):
    from inferbus.diagram import update_architecture

    graph = topology(template=template)
    source = mermaid(graph)
    assert COMMITTED.read_text() == source, "run `inferbus diagram`"
    assert update_architecture(source, check=True, page_count=len(pages(graph))), "docs/architecture.md: run `inferbus diagram`"
    drawn = draw(graph, tmp_path / "topology.svg")
    committed = page_paths(COMMITTED.with_suffix(".svg"), len(drawn))  # every page, and no page more
    assert set(COMMITTED.parent.glob("topology*.svg")) == set(committed), "run `inferbus diagram`"
    assert [path.read_bytes() for path in committed] == [path.read_bytes() for path in drawn], "run `inferbus diagram`"


def test_no_arrow_crosses_a_box_it_does_not_connect(template):
    assert_readable(topology(template=template))


def test_forty_more_components_stay_readable_and_uncrossed(template):
    graph = topology(template=with_extra_components(template, EXTRA))
    base = topology(template=template)
    assert len(graph) > len(base) + EXTRA  # each added component brought its rule, queue or machine, ...
    assert_readable(graph)
    assert len(pages(graph)) > len(pages(base))  # paged, not shrunk


def test_the_check_sees_an_arrow_through_a_box():
    boxes = {"a": Box("a", "a", 0, 0, 0, 10, 10), "b": Box("b", "b", 2, 40, 0, 50, 10),
             "c": Box("c", "c", 1, 20, 2, 30, 8)}
    through, around = Edge("a", "b", ((10, 5), (40, 5))), Edge("a", "b", ((10, 5), (15, 5), (15, 20), (40, 20)))
    assert crossings(boxes, [through]) == [(through, boxes["c"])]
    assert crossings(boxes, [around]) == []


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_it_renders_the_same_bytes_for_the_same_graph(template, tmp_path, suffix):
    graph = topology(template=template)
    first, second = draw(graph, tmp_path / "a" / f"topology{suffix}"), draw(graph, tmp_path / "b" / f"topology{suffix}")
    assert [path.read_bytes() for path in first] == [path.read_bytes() for path in second]
    assert first[0].stat().st_size > 20_000


def test_a_larger_pipeline_writes_a_file_per_page_and_removes_pages_no_longer_drawn(template, tmp_path):
    larger = topology(template=with_extra_components(template, EXTRA))
    written = draw(larger, tmp_path / "topology.svg")
    assert [path.name for path in written] == ["topology.svg", *(f"topology-{n}.svg" for n in range(2, len(written) + 1))]
    declared = topology(template=template)
    names = ["topology.svg", *(f"topology-{n}.svg" for n in range(2, len(pages(declared)) + 1))]  # as declared now
    assert len(written) == len(pages(larger)) > len(names)
    assert draw(declared, tmp_path / "topology.svg") == [tmp_path / name for name in names]
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(names)  # the larger one's extra pages: gone
