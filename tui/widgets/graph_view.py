"""The graph around the current node, drawn from Graphviz's layout.

Only a neighbourhood (a few edges out, a few dozen nodes) is laid out, and the layout is
reused while the current node stays near its centre, so stepping does not call ``dot`` each
time. The current node is highlighted and the view scrolls to keep it in the middle;
nodes already executed in this pass are green, pending ones grey.
"""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from ..graph_layout import GraphLayout, draw_edges, layout_graph
from ..session import DebugSession

RADIUS = 3
NODE_LIMIT = 28
# Keep the current layout while the current node is at most this many edges from its
# centre: it still shows a neighbour beyond it, and dot runs every few steps, not each one.
REUSE_DISTANCE = RADIUS - 1
_CACHE_SIZE = 64

STYLE_CURRENT = "bold black on yellow"
STYLE_EXECUTED = "green"
STYLE_PENDING = "grey62"
STYLE_VIOLATION = "bold red"
STYLE_OUTSIDE = "grey37"  # nodes this pass never ran


class GraphView(Widget):
    """Terminal drawing of the neighbourhood of the current node."""

    def __init__(self, session: DebugSession, engine: str | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.session = session
        self.engine = engine
        self.pass_index = 0
        self.step_index = 0
        self.layout_data: GraphLayout | None = None
        self._center: int | None = None
        self._distances: dict[int, int] = {}
        self._cache: dict[int, tuple[GraphLayout, dict[int, int]]] = {}
        self.layouts_made = 0  # how many times dot/grandalf ran (the cache is doing its job)

    @property
    def current_node(self) -> int | None:
        if not self.session.step_count(self.pass_index):
            return None
        return self.session.step(self.pass_index, self.step_index).node

    def show(self, pass_index: int, step_index: int) -> None:
        self.pass_index, self.step_index = pass_index, step_index
        node_id = self.current_node
        if node_id is not None and self._distances.get(node_id, RADIUS + 1) > REUSE_DISTANCE:
            self._relayout(node_id)
        self.refresh()

    def _relayout(self, center: int) -> None:
        cached = self._cache.get(center)
        if cached is None:
            order = self.session.neighbourhood(center, RADIUS, NODE_LIMIT)
            members = set(order)
            nodes = [(node_id, self.node_label(node_id)) for node_id in order]
            edges = [(node_id, next_id) for node_id in order
                     for next_id, _ in self.session.trace.nodes[node_id].next
                     if next_id in members]
            distances = {node_id: self._distance(center, node_id, members) for node_id in order}
            cached = (layout_graph(nodes, edges, self.engine), distances)
            self.layouts_made += 1
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.pop(next(iter(self._cache)))
            self._cache[center] = cached
        self.layout_data, self._distances = cached
        self._center = center
        self.border_subtitle = (f"{len(self.layout_data.nodes)} of "
                                f"{len(self.session.trace.nodes)} nodes · {self.layout_data.engine}")

    def _distance(self, center: int, node_id: int, members: set[int]) -> int:
        # neighbourhood() is breadth first, so its order already ranks by distance; recompute
        # the exact hop count only within the small member set.
        frontier, seen, distance = [center], {center}, 0
        while frontier:
            if node_id in frontier:
                return distance
            distance += 1
            frontier = [n for f in frontier for n in self.session.neighbours(f)
                        if n in members and n not in seen]
            seen.update(frontier)
        return RADIUS + 1

    def node_label(self, node_id: int) -> str:
        node = self.session.trace.nodes[node_id]
        if node.leaf is not None and node.leaf in self.session.trace.tensors:
            return f"{node.name} {self.session.trace.tensors[node.leaf].label}"
        return node.name

    def node_style(self, node_id: int) -> str:
        if node_id == self.current_node:
            return STYLE_CURRENT
        step_index = self.session.steps_by_node(self.pass_index).get(node_id)
        if step_index is None:
            return STYLE_OUTSIDE
        if self.session.violations_at(self.pass_index, step_index):
            return STYLE_VIOLATION
        return STYLE_EXECUTED if step_index < self.step_index else STYLE_PENDING

    def visible_text(self) -> str:
        """The drawing as plain text (what the pane shows, without colours)."""
        return self.render().plain

    def render(self) -> Text:
        layout = self.layout_data
        width, height = max(self.size.width, 1), max(self.size.height, 1)
        if layout is None or self.current_node not in layout.nodes:
            return Text("(no backward steps in this pass)", style="italic grey62")
        grid = draw_edges(layout)
        focus_column, focus_row = layout.nodes[self.current_node].center
        left = min(max(focus_column - width // 2, 0), max(layout.width - width, 0))
        top = min(max(focus_row - height // 2, 0), max(layout.height - height, 0))
        spans: list[tuple[int, int, int, str]] = []  # (row, start, end, style)
        for node in layout.nodes.values():
            box = f"[{node.label}]"
            for offset, char in enumerate(box):
                if node.column + offset < layout.width:
                    grid[node.row][node.column + offset] = char
            spans.append((node.row, node.column, node.column + len(box),
                          self.node_style(node.node_id)))
        text = Text(no_wrap=True, overflow="crop")
        for row in range(top, min(top + height, layout.height)):
            line = Text("".join(grid[row][left:left + width]), style="grey50")
            for span_row, start, end, style in spans:
                if span_row == row and end > left and start < left + width:
                    line.stylize(style, max(start - left, 0), min(end - left, width))
            text.append_text(line)
            text.append("\n")
        text.rstrip()
        return text
