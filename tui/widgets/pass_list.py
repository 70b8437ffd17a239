"""Choose a pass from a list (``P``): one line per visible pass, drawn lazily.

A training loop can have 100,000 passes, so this is a line-API ``ScrollView`` like the
steps table: only the lines on screen are built. Enter picks the highlighted pass (the
screen is dismissed with its index), escape closes without moving.
"""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.geometry import Size
from textual.reactive import reactive
from textual.screen import ModalScreen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Label

from ..session import DebugSession

_CURSOR = Style(bgcolor="dark_blue", color="white", bold=True)
_MARKED = Style(color="red", bold=True)
_PLAIN = Style()


class PassList(ScrollView, can_focus=True):
    """``pass  marks  label`` for every visible pass; ``cursor`` is a position in them."""

    cursor: reactive[int] = reactive(0)

    def __init__(self, session: DebugSession, **kwargs) -> None:
        super().__init__(**kwargs)
        self.session = session
        self._violation_passes = {location[0] for location in session._violations_by_step}

    def on_mount(self) -> None:
        self.virtual_size = Size(self.size.width, len(self.session.visible))

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, len(self.session.visible))

    def watch_cursor(self, new: int) -> None:
        top, rows = self.scroll_offset.y, max(self.size.height, 1)
        if new < top:
            top = new
        elif new >= top + rows:
            top = new - rows + 1
        self.scroll_to(y=top, animate=False, immediate=True)
        self.refresh()

    def validate_cursor(self, cursor: int) -> int:
        return min(max(cursor, 0), max(len(self.session.visible) - 1, 0))

    def line_text(self, position: int) -> str:
        pass_index = self.session.visible[position]
        backward_pass = self.session.backward_pass(pass_index)
        marks = ("!" if pass_index in self._violation_passes else "") + (
            "E" if backward_pass.error else "") + ("s" if backward_pass.summarized else "")
        label = self.session.pass_label(pass_index).partition(": ")[2]
        return f"{pass_index:>7} {marks:<3} {label}"

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        position = self.scroll_offset.y + y
        if position >= len(self.session.visible):
            return Strip([Segment(" " * width)], width)
        text = self.line_text(position).ljust(width)[:width]
        style = _CURSOR if position == self.cursor else (
            _MARKED if text[8:11].strip() else _PLAIN)
        return Strip([Segment(text, style)], width)


class PassListScreen(ModalScreen[int | None]):
    """The pass list in a box; dismissed with the chosen pass index, or None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "cancel", "Close"),
        Binding("enter", "choose", "Go"),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("pagedown", "move(20)", "Page down", show=False),
        Binding("pageup", "move(-20)", "Page up", show=False),
        Binding("home,g", "move(-1000000000)", "First", show=False),
        Binding("end,G", "move(1000000000)", "Last", show=False),
    ]

    def __init__(self, session: DebugSession, current: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.session = session
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="pass-list-box"):
            yield Label("passes (! violation, E failed, s summarized) — enter goes there, "
                        "escape closes", id="pass-list-title")
            yield PassList(self.session, id="pass-list")

    def on_mount(self) -> None:
        pass_list = self.query_one(PassList)
        pass_list.focus()
        pass_list.cursor = self.session.visible_position(self.current)

    def action_move(self, delta: int) -> None:
        self.query_one(PassList).cursor += delta

    def action_choose(self) -> None:
        visible = self.session.visible
        if visible:
            self.dismiss(visible[self.query_one(PassList).cursor])
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
