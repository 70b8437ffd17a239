"""The current pass's graph around the current node, drawn from Graphviz's layout.

Only the nodes this pass ran are drawn (a training loop records one graph per iteration;
mixing them would show 25 MmBackward0 boxes around one AccumulateGrad), and only a
neighbourhood: as many edges out and nodes as the pane has room for. The layout is reused
while the current node stays near its centre, so stepping does not call ``dot`` each
time. The current node is highlighted and the view scrolls to keep it in the middle;
nodes already executed in this pass are green, pending ones grey.
"""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from ..graph_layout import GraphLayout, draw_edges, layout_graph
from ..session import DebugSession

MIN_RADIUS = 3
MAX_RADIUS = 8
MIN_NODES = 28
MAX_NODES = 120  # dot lays out 120 boxes in about 50 ms
ROWS_PER_RANK = 3  # a box and its edge down to the next rank (ranksep 0.5 in = 2 rows)
COLUMNS_PER_NODE = 18  # a typical box, "[MulBackward0]", and the gap beside it
_CACHE_SIZE = 64

STYLE_CURRENT = "bold black on yellow"
STYLE_EXECUTED = "green"
STYLE_PENDING = "grey62"
STYLE_VIOLATION = "bold red"


def neighbourhood_size(width: int, height: int) -> tuple[int, int]:
    """(radius, node limit) that fill a pane of ``width`` x ``height`` cells: half the
    ranks that fit above and below the centre, and a few nodes per rank.

    >>> neighbourhood_size(80, 10), neighbourhood_size(118, 27)
    ((3, 28), (4, 54))
    """
    ranks = max(height // ROWS_PER_RANK, 1)
    radius = min(max(ranks // 2, MIN_RADIUS), MAX_RADIUS)
    limit = min(max(ranks * max(width // COLUMNS_PER_NODE, 1), MIN_NODES), MAX_NODES)
    return radius, limit


class GraphView(Widget):
    """Terminal drawing of the neighbourhood of the current node in the current pass."""

    def __init__(self, session: DebugSession, engine: str | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.session = session
        self.engine = engine
        self.pass_index = 0
        self.step_index = 0
        self.layout_data: GraphLayout | None = None
        self._center: int | None = None
        self._key: tuple | None = None
        self._distances: dict[int, int] = {}
        self._cache: dict[tuple, tuple[GraphLayout, dict[int, int]]] = {}
        self.layouts_made = 0  # how many times dot/grandalf ran (the cache is doing its job)

    @property
    def current_node(self) -> int | None:
        if not self.session.step_count(self.pass_index):
            return None
        return self.session.step(self.pass_index, self.step_index).node

    def show(self, pass_index: int, step_index: int) -> None:
        changed_pass = pass_index != self.pass_index
        self.pass_index, self.step_index = pass_index, step_index
        node_id = self.current_node
        radius, _ = self._extent()
        if node_id is not None and (changed_pass or self._distances.get(
                node_id, radius + 1) > radius - 1 or self._key is None
                or self._key[2:] != self._extent()):
            self._relayout(self._center_for(node_id))
        elif node_id is None:
            self.layout_data, self._distances, self._key = None, {}, None
            self.border_subtitle = ""
        self.refresh()

    def _center_for(self, node_id: int) -> int:
        """Where to centre a new layout: on a node a few steps ahead that keeps the
        current one well inside the picture, and never on an AccumulateGrad (a leaf of
        the graph: a picture centred on it is all on one side). Stepping on then reuses
        the layout for several steps (backward is stepped forward far more than back)."""
        radius, limit = self._extent()
        session = self.session
        count = session.step_count(self.pass_index)
        members = session.steps_by_node(self.pass_index)
        for ahead in range(radius - 1, -1, -1):
            candidate = session.step(self.pass_index, min(self.step_index + ahead,
                                                          count - 1)).node
            if session.trace.nodes[candidate].kind == "accumulate":
                continue
            if candidate == node_id:
                return candidate
            distances = session.neighbourhood(candidate, radius, limit, members)
            if distances.get(node_id, radius) <= radius - 1:
                return candidate
        if session.trace.nodes[node_id].kind == "accumulate":  # the node that fed it
            source = next((source for source in session.neighbours(node_id)
                           if source in members), None)
            # A hub (a stack of 100,000 inputs) fills its neighbourhood before reaching
            # this one: then the picture centres on the current node after all.
            if source is not None and node_id in session.neighbourhood(source, radius, limit,
                                                                        members):
                return source
        return node_id

    def on_resize(self) -> None:
        if self.current_node is not None and self._key is not None \
                and self._key[2:] != self._extent():
            self._relayout(self.current_node)

    def _extent(self) -> tuple[int, int]:
        width, height = self.size.width, self.size.height
        if not width or not height:  # before the first layout: a usual pane
            width, height = 70, 12
        return neighbourhood_size(width, height)

    def _relayout(self, center: int) -> None:
        radius, limit = self._extent()
        key = (self.pass_index, center, radius, limit)
        cached = self._cache.get(key)
        if cached is None:
            members = self.session.steps_by_node(self.pass_index)
            distances = self.session.neighbourhood(center, radius, limit, members)
            nodes = [(node_id, self.node_label(node_id)) for node_id in distances]
            edges = [(node_id, next_id) for node_id in distances
                     for next_id, _ in self.session.trace.nodes[node_id].next
                     if next_id in distances]
            cached = (layout_graph(nodes, edges, self.engine), distances)
            self.layouts_made += 1
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = cached
        self.layout_data, self._distances = cached
        self._center, self._key = center, key
        self.border_subtitle = (
            f"{len(self.layout_data.nodes)} of {len(self.session.steps_by_node(self.pass_index)):,}"
            f" nodes in pass {self.pass_index} · {self.layout_data.engine}")

    def node_label(self, node_id: int) -> str:
        return self.session.node_label(self.session.trace.nodes[node_id])

    def node_style(self, node_id: int) -> str:
        if node_id == self.current_node:
            return STYLE_CURRENT
        step_index = self.session.steps_by_node(self.pass_index).get(node_id)
        if step_index is None:
            return STYLE_PENDING
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
            summarized = self.session.trace.passes and \
                self.session.backward_pass(self.pass_index).summarized
            return Text("(a summarized pass: no graph recorded)" if summarized
                        else "(no backward steps in this pass)", style="italic grey62")
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
