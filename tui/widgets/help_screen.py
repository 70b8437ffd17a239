"""The help screen: every key as it is typed, what it does, and the run-until language."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ..keys import key_text

RUN_UNTIL_HELP = (
    "run until (u): nan | inf | nonfinite | hook | violation | error | op NAME | "
    "norm > X | step >= N, joined with `and` / `or`, e.g. `nan or norm > 1e3`; it searches "
    "forward from the current step, through later passes too"
)
GO_TO_HELP = "go to (:): a step of this pass (`12`), or a pass and a step (`250:3`, `250:`)"


class HelpScreen(ModalScreen[None]):
    """Lists the app's bindings (read from the app, so it never goes stale)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "close", "Close")]

    def __init__(self, bindings: list[Binding], notes: list[str] | None = None,
                 title: str = "tracegrad debugger — keys", **kwargs) -> None:
        super().__init__(**kwargs)
        self.bindings = bindings
        self.notes = notes  # None: the debugger's own notes (go to, run until, marks)
        self.title_text = title

    def compose(self) -> ComposeResult:
        table = Table("keys", "what it does", title=self.title_text, box=None)
        for binding in self.bindings:
            table.add_row(key_text(binding), binding.tooltip or binding.description)
        with VerticalScroll(id="help-box"):
            yield Static(table)
            if self.notes is not None:
                for note in self.notes:
                    yield Static(note, markup=False)
                return
            yield Static(GO_TO_HELP, id="help-go-to")
            yield Static(RUN_UNTIL_HELP, id="help-run-until")
            yield Static("Marks in the steps table: ! violation  N NaN/Inf  h hook fired  "
                         "E error  * breakpoint.  ctrl+p lists every action.  Press escape "
                         "to close.")

    def action_close(self) -> None:
        self.dismiss(None)
