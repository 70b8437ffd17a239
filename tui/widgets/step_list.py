"""The backward steps of one pass, one line each, drawn lazily.

A pass can have 50,000 steps, so this is a line-API ``ScrollView``: it renders only the
lines on screen and asks the session for each row when it first shows it. Clicking a line
posts ``StepList.StepClicked``; the app owns the current step and sets ``cursor``.
"""

from __future__ import annotations

import textwrap

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..session import MARK_BREAKPOINT, DebugSession

_CURSOR = Style(bgcolor="dark_blue", color="white", bold=True)
_EXECUTED = Style(color="green")
_PENDING = Style(color="grey62")
_MARKED = Style(color="red", bold=True)
_HEADER = Style(bold=True, underline=True)


class StepList(ScrollView, can_focus=True):
    """Steps table: ``step  marks  node  output shape`` for the selected pass."""

    cursor: reactive[int] = reactive(0)

    class StepClicked(Message):
        def __init__(self, step_index: int) -> None:
            super().__init__()
            self.step_index = step_index

    def __init__(self, session: DebugSession, **kwargs) -> None:
        super().__init__(**kwargs)
        self.session = session
        self.pass_index = 0
        self.breakpoints: frozenset[str] = frozenset()
        self._column_cache: tuple[tuple[int, int], tuple[int, int]] | None = None

    def show_pass(self, pass_index: int) -> None:
        self.pass_index = pass_index
        self.virtual_size = Size(self.size.width, max(self.session.step_count(pass_index), 1)
                                 + 1)
        self.refresh()

    def set_breakpoints(self, breakpoints: frozenset[str]) -> None:
        self.breakpoints = breakpoints
        self.refresh()

    def watch_cursor(self, old: int, new: int) -> None:
        # Line 0 is the column header, so the steps on screen are top .. top + rows - 1.
        top, rows = self.scroll_offset.y, max(self.size.height - 1, 1)
        if new < top:
            top = new
        elif new >= top + rows:
            top = new - rows + 1
        self.scroll_to(y=top, animate=False, immediate=True)
        self.refresh()

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width,
                                 max(self.session.step_count(self.pass_index), 1) + 1)

    def _columns(self) -> tuple[int, int]:
        """Widths of the step number and node name columns for the current width."""
        key = (self.size.width, self.pass_index)
        if self._column_cache is not None and self._column_cache[0] == key:
            return self._column_cache[1]
        index_width = max(len(str(self.session.step_count(self.pass_index) - 1)), 3)
        room = self.size.width - index_width - 6  # spaces and the 3-wide marks column
        columns = index_width, min(max(room - 6, 8), 36)
        self._column_cache = (key, columns)
        return columns

    def header_text(self) -> str:
        index_width, name_width = self._columns()
        return f"{'#':>{index_width}} {'mk':<3} {'node':<{name_width}} shape"

    def line_text(self, step_index: int) -> str:
        """One steps-table line: number, marks, node (with the parameter an AccumulateGrad
        fills), output shape."""
        row = self.session.row(self.pass_index, step_index)
        marks = row.marks + (MARK_BREAKPOINT if row.node_name in self.breakpoints else "")
        index_width, name_width = self._columns()
        name = fit_label(row.label, row.node_name, name_width)
        return f"{row.index:>{index_width}} {marks:<3} {name:<{name_width}} {row.shape}"

    def empty_text(self) -> str:
        """What the table says for a pass without recorded steps."""
        if not self.session.trace.passes:
            return "(no backward pass)"
        backward_pass = self.session.backward_pass(self.pass_index)
        if backward_pass.summarized:
            return (f"(summarized: {backward_pass.step_count:,} steps counted, not recorded; "
                    "the node pane has the counts)")
        return "(this pass ran no steps)"

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y == 0:
            return Strip([Segment(self.header_text().ljust(width)[:width], _HEADER)], width)
        step_index = self.scroll_offset.y + y - 1
        if step_index >= self.session.step_count(self.pass_index):
            lines = textwrap.wrap(self.empty_text(), max(width, 8)) \
                if not self.session.step_count(self.pass_index) else []
            text = lines[y - 1] if y - 1 < len(lines) else ""
            return Strip([Segment(text.ljust(width)[:width], _PENDING)], width)
        text = self.line_text(step_index).ljust(width)[:width]
        if step_index == self.cursor:
            style = _CURSOR
        elif self.session.row(self.pass_index, step_index).marks:
            style = _MARKED
        else:
            style = _EXECUTED if step_index < self.cursor else _PENDING
        return Strip([Segment(text, style)], width)

    def on_click(self, event) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y == 0:
            return
        step_index = self.scroll_offset.y + offset.y - 1
        if 0 <= step_index < self.session.step_count(self.pass_index):
            self.post_message(self.StepClicked(step_index))


def fit_label(label: str, op_name: str, width: int) -> str:
    """``label`` in ``width`` cells, shortening the op before the tensor it names, so a
    narrow table still says which parameter an AccumulateGrad fills.

    >>> fit_label("AccumulateGrad 0.weight", "AccumulateGrad", 16)
    'Accumu… 0.weight'
    >>> fit_label("MulBackward0", "MulBackward0", 8)
    'MulBack…'
    """
    if len(label) <= width:
        return label
    rest = label[len(op_name):]
    room = width - len(rest) - 1
    if rest and room >= 4:
        return op_name[:room] + "…" + rest
    return label[:width - 1] + "…"
