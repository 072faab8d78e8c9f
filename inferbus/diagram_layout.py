"""Where each box and arrow of the topology picture goes: one row band per flow, so no arrow crosses a box.

The bus is a bar as tall as the page; each node the bus feeds (a rule) starts a band of rows, and
everything downstream of it is laid out as a tree in that band, one column per kind, left to right.
Why no arrow can cross a box it does not connect:

* every subtree owns a contiguous block of rows, and a parent sits on the row of its first child;
* every arrow goes to a column strictly to the right (except a DLQ, stacked right under its queue),
  so the horizontal run into a child, at the child's row, passes only columns left of the child
  where that row of the block is empty, and the vertical run is in the gap between two columns,
  where there are no boxes;
* a node that another band already draws in full (a shared result event, the invalid-events
  queue a function rejects to) is drawn again as a leaf copy in this band, never reached across bands.

Too many bands for one page (a pipeline of 40 components) start another page, each complete
(producers, bus, its bands). :func:`crossings` measures the property on any :class:`Page`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import networkx as nx

__all__ = ["Box", "Edge", "Page", "crossings", "layout"]

GAP = 22.0  # points between columns: the arrows' vertical runs go here
ROW_GAP = 9.0  # points between rows
BAND_GAP = 12.0  # points between flows
MARGIN = 10.0
TITLE_HEIGHT = 30.0  # the column titles, above the first band
FOOTER_HEIGHT = 22.0


@dataclass(frozen=True)
class Box:
    """A drawn node: ``key`` is unique on its page (a copy's key is the node's with ``#n``); points, y down.

    ``copy``: the node is drawn in full (with its own arrows) in another band; this is a reference to it.
    """

    key: str
    node: str
    column: int
    x0: float
    y0: float
    x1: float
    y1: float
    copy: bool = False

    @property
    def centre(self) -> tuple[float, float]:
        return (self.x0 + self.x1) / 2, (self.y0 + self.y1) / 2


@dataclass(frozen=True)
class Edge:
    """A drawn arrow from box ``source`` to box ``target`` (their keys), through ``points``."""

    source: str
    target: str
    points: tuple[tuple[float, float], ...]
    style: str = "solid"


@dataclass
class Page:
    """One picture: its boxes by key, arrows, column x ranges, each band's y range and the page's size."""

    boxes: dict[str, Box] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    columns: list[tuple[float, float]] = field(default_factory=list)
    bands: list[tuple[float, float]] = field(default_factory=list)
    width: float = 0.0
    height: float = 0.0


@dataclass
class _Item:
    """A node placed in a band's tree: its drawn column, its row (set later), forward children, a stacked one."""

    node: str
    column: int
    copy: bool
    children: list[_Item] = field(default_factory=list)
    stacked: _Item | None = None
    row: int = 0
    key: str = ""  # its box's key on the page


def _owners(graph: nx.DiGraph, roots: list[str], skip: set[str]) -> tuple[list[str], dict[str, int]]:
    """Each node's band: breadth first from every root at once (the nearest root owns it, the first on a tie);
    a node no root reaches starts a band of its own. Returns the bands' roots and the owners."""
    owner: dict[str, int] = {}
    bands: list[str] = []

    def claim(starts: list[str]) -> None:
        queue: deque[str] = deque()
        for start in starts:
            if start not in owner:
                owner[start] = len(bands)
                bands.append(start)
                queue.append(start)
        while queue:
            current = queue.popleft()
            for successor in graph.successors(current):
                if successor not in owner and successor not in skip:
                    owner[successor] = owner[current]
                    queue.append(successor)

    claim([root for root in roots if root not in skip])
    for node_id in graph.nodes:
        if node_id not in owner and node_id not in skip:
            claim([node_id])
    return bands, owner


def _tree(graph: nx.DiGraph, root: str, band: int, owner: Mapping[str, int], column: Mapping[str, int],
          skip: set[str]) -> _Item:
    """The band as a tree: a node this band owns is drawn in full once; any other reference is a leaf copy."""
    placed: set[str] = set()

    def place(node_id: str, at: int, copy: bool) -> _Item:
        item = _Item(node_id, at, copy)
        if copy:
            return item
        placed.add(node_id)
        for successor in graph.successors(node_id):
            if successor in skip:
                continue
            full = owner.get(successor) == band and successor not in placed
            leaf = graph.out_degree(successor) == 0
            if full and leaf and item.stacked is None and column[successor] == at:
                item.stacked = place(successor, at, copy=False)  # a DLQ right under its queue
            else:
                item.children.append(place(successor, max(column[successor], at + 1), copy=not full))
        return item

    return place(root, column[root], copy=False)


def _rows(item: _Item, top: int) -> int:
    """Give ``item``'s subtree the rows from ``top`` on (a parent on its first child's row); return how many."""
    item.row, used = top, 0
    for child in item.children:
        used += _rows(child, top + used)
    if item.stacked is not None:
        item.stacked.row = top + 1
    return max(used, 2 if item.stacked is not None else 1)


def _items(item: _Item) -> list[_Item]:
    found = [item]
    for child in [*item.children, *([item.stacked] if item.stacked else [])]:
        found += _items(child)
    return found


def layout(graph: nx.DiGraph, *, bus: str, column: Mapping[str, int], size: Callable[[str], tuple[float, float]],
           min_widths: Sequence[float] = (), titles_height: float = TITLE_HEIGHT,
           max_height: float = 1800.0) -> list[Page]:
    """Lay ``graph`` out in pages of row bands, one band per node the ``bus`` feeds.

    Parameters
    ----------
    graph
        The topology; every edge's ``style`` attribute is kept.
    bus
        The bus node, drawn as a bar as tall as the page; nodes in column 0 are the producers left of it.
    column
        Each node's column (0 producers, 1 the bus, then left to right).
    size
        A node's box ``(width, height)`` in points (its label measured).
    min_widths
        Each column's least width (its title's).
    titles_height, max_height
        Room for the column titles; the height (points) past which the next band starts a new page.

    Returns
    -------
    list[Page]
        At least one page; every band on exactly one.
    """
    producers = [n for n in graph.nodes if column[n] == 0]
    skip = {bus, *producers}
    bands, owner = _owners(graph, list(graph.successors(bus)), skip)
    trees = [_tree(graph, root, index, owner, column, skip) for index, root in enumerate(bands)]
    heights = [_rows(tree, 0) for tree in trees]
    items = [_items(tree) for tree in trees]
    count = 1 + max([column[n] for n in graph.nodes] + [i.column for band in items for i in band])
    widths = [*min_widths[:count], *[0.0] * (count - len(min_widths[:count]))]
    for node_id in graph.nodes:
        widths[column[node_id]] = max(widths[column[node_id]], size(node_id)[0])
    for band in items:
        for item in band:
            widths[item.column] = max(widths[item.column], size(item.node)[0])
    columns, x = [], MARGIN
    for width in widths:
        columns.append((x, x + width))
        x += width + GAP
    page_width = x - GAP + MARGIN

    def band_rows(index: int) -> list[float]:
        rows = [0.0] * heights[index]
        for item in items[index]:
            rows[item.row] = max(rows[item.row], size(item.node)[1])
        return rows

    rows = [band_rows(index) for index in range(len(trees))]
    talls = [sum(r) + ROW_GAP * (len(r) - 1) for r in rows]
    pages = []
    for group in _paginate(talls, max_height - MARGIN - titles_height):
        page = Page(columns=columns, width=page_width)
        y = MARGIN + titles_height
        for index in group:
            tops = [y + sum(rows[index][:r]) + ROW_GAP * r for r in range(len(rows[index]))]
            for item in items[index]:
                _box(page, item, tops[item.row], rows[index][item.row], size)
            _band_edges(page, trees[index], graph)
            page.bands.append((y, y + talls[index]))
            y += talls[index] + BAND_GAP
        _bus_and_producers(page, graph, bus, producers, size)
        pages.append(page)
    return pages


def _paginate(talls: list[float], limit: float) -> list[list[int]]:
    """Bands in order, in as few pages as fit ``limit`` (a taller band alone), balanced: the least limit that
    needs no more pages than ``limit`` does, so the last page is not a stub."""
    def greedy(most: float) -> list[list[int]]:
        groups: list[list[int]] = []
        used = 0.0
        for index, tall in enumerate(talls):
            if not groups or (groups[-1] and used + tall > most):
                groups.append([])
                used = 0.0
            groups[-1].append(index)
            used += tall + BAND_GAP
        return groups

    fewest = len(greedy(limit))
    most = max([*talls, (sum(talls) + BAND_GAP * len(talls)) / fewest])
    while len(greedy(most)) > fewest:
        most *= 1.02
    return greedy(most)


def _box(page: Page, item: _Item, top: float, row_height: float, size: Callable[[str], tuple[float, float]]) -> None:
    width, height = size(item.node)
    x0, x1 = page.columns[item.column]
    left, upper = (x0 + x1 - width) / 2, top + (row_height - height) / 2
    key, copies = item.node, 1
    while key in page.boxes:
        copies += 1
        key = f"{item.node}#{copies}"
    page.boxes[key] = Box(key, item.node, item.column, left, upper, left + width, upper + height, copy=item.copy)
    item.key = key


def _band_edges(page: Page, item: _Item, graph: nx.DiGraph) -> None:
    source = page.boxes[item.key]
    sx, sy = source.centre
    for child in item.children:
        target = page.boxes[child.key]
        ty = target.centre[1]
        if abs(ty - sy) < 0.01:
            points = ((source.x1, sy), (target.x0, ty))
        else:
            trunk = page.columns[item.column][1] + GAP / 2  # the gap right of the parent's column
            points = ((source.x1, sy), (trunk, sy), (trunk, ty), (target.x0, ty))
        page.edges.append(Edge(source.key, target.key, points, graph.edges[item.node, child.node].get("style", "solid")))
        _band_edges(page, child, graph)
    if item.stacked is not None:
        target = page.boxes[item.stacked.key]
        page.edges.append(Edge(source.key, target.key, ((sx, source.y1), (sx, target.y0)),
                               graph.edges[item.node, item.stacked.node].get("style", "solid")))


def _bus_and_producers(page: Page, graph: nx.DiGraph, bus: str, producers: list[str],
                       size: Callable[[str], tuple[float, float]]) -> None:
    """The producers stacked at the top of column 0, the bus bar spanning every band and producer."""
    y = page.bands[0][0]
    for producer in producers:
        width, height = size(producer)
        x0, x1 = page.columns[0]
        left = (x0 + x1 - width) / 2
        page.boxes[producer] = Box(producer, producer, 0, left, y, left + width, y + height)
        y += height + ROW_GAP
    top, bottom = page.bands[0][0], max(page.bands[-1][1], y - ROW_GAP)
    x0, x1 = page.columns[1]
    page.boxes[bus] = Box(bus, bus, 1, x0, top, x1, bottom)
    for producer in producers:
        if graph.has_edge(producer, bus):
            box = page.boxes[producer]
            cy = box.centre[1]
            page.edges.append(Edge(producer, bus, ((box.x1, cy), (x0, cy)), graph.edges[producer, bus].get("style", "solid")))
    for box in [b for b in page.boxes.values() if not b.copy and graph.has_edge(bus, b.node)]:  # this page's rules
        cy = box.centre[1]
        page.edges.append(Edge(bus, box.key, ((x1, cy), (box.x0, cy)), graph.edges[bus, box.node].get("style", "solid")))
    page.height = bottom + FOOTER_HEIGHT + MARGIN


def _segment_hits(a: tuple[float, float], b: tuple[float, float], box: Box, inset: float) -> bool:
    """Whether segment ``a``-``b`` enters ``box`` shrunk by ``inset`` (Liang-Barsky clipping)."""
    x0, y0, x1, y1 = box.x0 + inset, box.y0 + inset, box.x1 - inset, box.y1 - inset
    dx, dy = b[0] - a[0], b[1] - a[1]
    low, high = 0.0, 1.0
    for p, q in ((-dx, a[0] - x0), (dx, x1 - a[0]), (-dy, a[1] - y0), (dy, y1 - a[1])):
        if p == 0:
            if q < 0:
                return False
        else:
            t = q / p
            if p < 0:
                low = max(low, t)
            else:
                high = min(high, t)
            if low > high:
                return False
    return True


def crossings(boxes: Mapping[str, Box], edges: list[Edge], inset: float = 0.5) -> list[tuple[Edge, Box]]:
    """Every (arrow, box) where the arrow passes through a box that is neither its source nor its target."""
    return [(edge, box) for edge in edges for key, box in boxes.items() if key not in (edge.source, edge.target)
            and any(_segment_hits(a, b, box, inset) for a, b in zip(edge.points, edge.points[1:], strict=False))]
