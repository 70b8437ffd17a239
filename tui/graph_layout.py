"""Lay out a small piece of the graph and draw it with characters.

Positions come from Graphviz itself (``dot -Tplain``), scaled so one character is 0.1 inch
across and one row 0.25 inch down; where ``dot`` is missing, grandalf's Sugiyama layout
(pure Python) places the nodes instead. Only a neighbourhood of the current node (a few
dozen nodes) is ever laid out, so this stays fast on a 50,000-node trace.

Example:
    >>> layout = layout_graph([(0, "MulBackward0"), (1, "AccumulateGrad")], [(0, 1)])
    >>> sorted(layout.nodes)
    [0, 1]
    >>> layout.nodes[0].row < layout.nodes[1].row   # backward flows down the screen
    True
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
from dataclasses import dataclass, field

INCH_PER_COLUMN = 0.1
INCH_PER_ROW = 0.25
_DOT_TIMEOUT_S = 5.0


@dataclass
class PlacedNode:
    node_id: int
    label: str
    column: int  # left edge of the box text "[label]"
    row: int

    @property
    def width(self) -> int:
        return len(self.label) + 2

    @property
    def center(self) -> tuple[int, int]:
        return self.column + self.width // 2, self.row


@dataclass
class GraphLayout:
    nodes: dict[int, PlacedNode]
    edges: list[list[tuple[int, int]]] = field(default_factory=list)  # cells, tail to head
    width: int = 0
    height: int = 0
    engine: str = "dot"  # "dot" or "grandalf"


def layout_graph(nodes: list[tuple[int, str]], edges: list[tuple[int, int]],
                 engine: str | None = None) -> GraphLayout:
    """Place ``nodes`` ((id, label)) joined by ``edges`` ((tail id, head id)) on a grid.

    ``engine`` forces "dot" or "grandalf"; by default dot when it is installed.
    """
    if engine is None:
        engine = "dot" if shutil.which("dot") else "grandalf"
    if engine == "dot":
        try:
            return _layout_with_dot(nodes, edges)
        except (OSError, subprocess.SubprocessError, ValueError):
            pass  # a broken dot install should not take the debugger down; fall back
    return _layout_with_grandalf(nodes, edges)


# -- Graphviz ------------------------------------------------------------------------------
def _dot_source(nodes: list[tuple[int, str]], edges: list[tuple[int, int]]) -> str:
    lines = [
        "digraph neighbourhood {",
        "  rankdir=TB; nodesep=0.2; ranksep=0.5; splines=true;",
        f"  node [shape=box, fixedsize=true, height={INCH_PER_ROW}, label=\"\"];",
    ]
    for node_id, label in nodes:
        width = (len(label) + 2) * INCH_PER_COLUMN
        lines.append(f"  n{node_id} [width={width:.2f}];")
    for tail, head in edges:
        lines.append(f"  n{tail} -> n{head};")
    lines.append("}")
    return "\n".join(lines)


def _layout_with_dot(nodes: list[tuple[int, str]], edges: list[tuple[int, int]]) -> GraphLayout:
    result = subprocess.run(["dot", "-Tplain"], input=_dot_source(nodes, edges),
                            capture_output=True, text=True, timeout=_DOT_TIMEOUT_S, check=True)
    labels = dict(nodes)
    placed: dict[int, PlacedNode] = {}
    edge_cells: list[list[tuple[int, int]]] = []
    edge_ends: list[tuple[int, int, list[tuple[int, int]]]] = []
    height_inches = 0.0
    for line in result.stdout.splitlines():
        fields = line.split()
        if not fields:
            continue
        if fields[0] == "graph":
            height_inches = float(fields[3])
        elif fields[0] == "node":
            node_id = int(fields[1][1:])
            x, y = float(fields[2]), float(fields[3])
            label = labels[node_id]
            column = round(x / INCH_PER_COLUMN) - (len(label) + 2) // 2
            placed[node_id] = PlacedNode(node_id, label, max(column, 0),
                                         round((height_inches - y) / INCH_PER_ROW))
        elif fields[0] == "edge":
            count = int(fields[3])
            points = [(float(fields[4 + 2 * i]), float(fields[5 + 2 * i])) for i in range(count)]
            cells = [(round(x / INCH_PER_COLUMN), round((height_inches - y) / INCH_PER_ROW))
                     for x, y in _sample_bezier(points)]
            edge_ends.append((int(fields[1][1:]), int(fields[2][1:]), cells))
    # dot's spline stops short of the arrowhead: run each edge from just under its tail box
    # to just above its head box, so every arrow visibly touches both nodes.
    for tail, head, cells in edge_ends:
        tail_column, tail_row = placed[tail].center
        head_column, head_row = placed[head].center
        inner = [cell for cell in cells if tail_row < cell[1] < head_row - 1]
        edge_cells.append([(tail_column, tail_row + 1), *inner, (head_column, head_row - 1)]
                          if head_row > tail_row + 1 else cells)
    return _finish(placed, edge_cells, "dot")


def _sample_bezier(points: list[tuple[float, float]], samples: int = 12) -> list[tuple[float, float]]:
    """Points along the piecewise cubic B-spline dot gives (p0, then 3 per segment)."""
    sampled = [points[0]]
    for start in range(0, len(points) - 3, 3):
        p0, p1, p2, p3 = points[start:start + 4]
        for i in range(1, samples + 1):
            t = i / samples
            u = 1 - t
            sampled.append((
                u ** 3 * p0[0] + 3 * u * u * t * p1[0] + 3 * u * t * t * p2[0] + t ** 3 * p3[0],
                u ** 3 * p0[1] + 3 * u * u * t * p1[1] + 3 * u * t * t * p2[1] + t ** 3 * p3[1],
            ))
    return sampled


# -- grandalf ------------------------------------------------------------------------------
class _BoxView:
    """grandalf reads a vertex's size from ``view.w``/``view.h`` and writes ``view.xy``."""

    def __init__(self, width: int, height: int) -> None:
        self.w = width
        self.h = height
        self.xy = (0.0, 0.0)


def _layout_with_grandalf(nodes: list[tuple[int, str]],
                          edges: list[tuple[int, int]]) -> GraphLayout:
    from grandalf.graphs import Edge, Graph, Vertex
    from grandalf.layouts import SugiyamaLayout

    vertices = {node_id: Vertex(node_id) for node_id, _ in nodes}
    labels = dict(nodes)
    for node_id, vertex in vertices.items():
        vertex.view = _BoxView(len(labels[node_id]) + 2, 1)
    graph = Graph(list(vertices.values()),
                  [Edge(vertices[tail], vertices[head]) for tail, head in edges
                   if tail in vertices and head in vertices])
    placed: dict[int, PlacedNode] = {}
    offset = 0
    for component in graph.C:  # components side by side
        sugiyama = SugiyamaLayout(component)
        sugiyama.xspace, sugiyama.yspace = 2, 3
        sugiyama.init_all()
        sugiyama.draw()
        component_vertices = list(component.sV)
        left = min(v.view.xy[0] - v.view.w / 2 for v in component_vertices)
        top = min(v.view.xy[1] for v in component_vertices)
        right = offset
        for vertex in component_vertices:
            x, y = vertex.view.xy
            column = round(x - vertex.view.w / 2 - left) + offset
            placed[vertex.data] = PlacedNode(vertex.data, labels[vertex.data], column,
                                             round(y - top))
            right = max(right, column + vertex.view.w)
        offset = right + 3
    edge_cells = [_straight((placed[tail].center[0], placed[tail].row + 1),
                            (placed[head].center[0], placed[head].row - 1))
                  for tail, head in edges if tail in placed and head in placed]
    return _finish(placed, edge_cells, "grandalf")


def _straight(start: tuple[int, int], end: tuple[int, int]) -> list[tuple[int, int]]:
    steps = max(abs(end[0] - start[0]), abs(end[1] - start[1]), 1)
    return [(round(start[0] + (end[0] - start[0]) * i / steps),
             round(start[1] + (end[1] - start[1]) * i / steps)) for i in range(steps + 1)]


def _finish(placed: dict[int, PlacedNode], edges: list[list[tuple[int, int]]],
            engine: str) -> GraphLayout:
    width = max((node.column + node.width for node in placed.values()), default=0)
    height = max((node.row + 1 for node in placed.values()), default=0)
    return GraphLayout(placed, edges, width + 1, height, engine)


# -- drawing -------------------------------------------------------------------------------
def draw_edges(layout: GraphLayout) -> list[list[str]]:
    """A grid of characters with every edge drawn (nodes are drawn on top by the caller)."""
    grid = [[" "] * layout.width for _ in range(layout.height)]
    for cells in layout.edges:
        path = _connect(_dedupe(cells))
        for (column, row), following in zip(path, path[1:] + [None]):
            if not (0 <= row < layout.height and 0 <= column < layout.width):
                continue
            if following is None:
                grid[row][column] = "v" if len(path) < 2 or path[-2][1] <= row else "^"
                continue
            d_column, d_row = following[0] - column, following[1] - row
            if d_row == 0:
                char = "─"
            elif d_column == 0:
                char = "│"
            else:
                char = "╲" if (d_column > 0) == (d_row > 0) else "╱"
            if grid[row][column] == " ":
                grid[row][column] = char
    return grid


def _connect(path: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Fill the gaps between consecutive cells so a line never breaks."""
    if len(path) < 2:
        return path
    filled = [path[0]]
    for start, end in itertools.pairwise(path):
        filled.extend(_straight(start, end)[1:])
    return filled


def _dedupe(cells: list[tuple[int, int]]) -> list[tuple[int, int]]:
    path: list[tuple[int, int]] = []
    for cell in cells:
        if not path or path[-1] != cell:
            path.append(cell)
    return path
