"""The picture's layout on any graph, not only the shipped topology: random graphs of nodes in any column, with
edges in any direction (backward, within a column, cycles), shared nodes, nodes the bus does not feed, and pages
of any height. Whatever the graph, every node and edge is drawn, no two boxes overlap and no arrow crosses a box
it does not connect."""

from __future__ import annotations

import networkx as nx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferbus.diagram_layout import Box, Page, crossings, layout


@st.composite
def graphs(draw: st.DrawFn) -> tuple[nx.DiGraph, dict[str, tuple[float, float]], float]:
    graph = nx.DiGraph()
    graph.add_node("bus", column=1)
    for index in range(draw(st.integers(0, 3))):
        graph.add_edge(f"producer{index}", "bus", style="solid")
        graph.nodes[f"producer{index}"]["column"] = 0
    count = draw(st.integers(1, 30))
    nodes = [f"n{index}" for index in range(count)]
    for node in nodes:
        graph.add_node(node, column=draw(st.integers(2, 7)))
        if draw(st.integers(0, 2)) == 0:
            graph.add_edge("bus", node, style="solid")
    for source, target in draw(st.lists(st.tuples(st.sampled_from(nodes), st.sampled_from(nodes)), max_size=3 * count)):
        if source != target:
            graph.add_edge(source, target, style=draw(st.sampled_from(["solid", "dashed"])))
    sizes = {node: (draw(st.floats(16, 150)), draw(st.floats(10, 80))) for node in graph}
    return graph, sizes, draw(st.sampled_from([60.0, 300.0, 1800.0]))


def overlapping(page: Page) -> list[tuple[str, str]]:
    boxes = list(page.boxes.values())

    def apart(a: Box, b: Box) -> bool:
        return a.x1 <= b.x0 or b.x1 <= a.x0 or a.y1 <= b.y0 or b.y1 <= a.y0

    return [(a.key, b.key) for i, a in enumerate(boxes) for b in boxes[i + 1:] if not apart(a, b)]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_any_graph_is_drawn_whole_without_overlaps_or_crossings(case):
    graph, sizes, max_height = case
    pages = layout(graph, bus="bus", column=dict(graph.nodes(data="column")), size=sizes.__getitem__,
                   max_height=max_height)
    assert {box.node for page in pages for box in page.boxes.values()} == set(graph.nodes)
    drawn = {(page.boxes[e.source].node, page.boxes[e.target].node) for page in pages for e in page.edges}
    assert drawn == set(graph.edges)
    for page in pages:
        assert not overlapping(page)
        assert not crossings(page.boxes, page.edges)
        assert all(page.columns[box.column][0] - 1e-6 <= box.x0 and box.x1 <= page.columns[box.column][1] + 1e-6
                   for box in page.boxes.values())  # a box inside its column, so the gaps stay free for arrows
