"""The help screen: every key, what it does, and the run-until language."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

RUN_UNTIL_HELP = (
    "run until (u): nan | inf | nonfinite | hook | violation | error | op NAME | "
    "norm > X | step >= N, joined with `and` / `or`, e.g. `nan or norm > 1e3`"
)


class HelpScreen(ModalScreen[None]):
    """Lists the app's bindings (read from the app, so it never goes stale)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "close", "Close")]

    def __init__(self, bindings: list[Binding], **kwargs) -> None:
        super().__init__(**kwargs)
        self.bindings = bindings

    def compose(self) -> ComposeResult:
        table = Table("keys", "what it does", title="tracegrad debugger — keys", box=None)
        for binding in self.bindings:
            table.add_row(binding.key.replace(",", " / "), binding.description)
        with VerticalScroll(id="help-box"):
            yield Static(table)
            yield Static(RUN_UNTIL_HELP, id="help-run-until")
            yield Static("Marks in the steps table: ! violation  N NaN/Inf  h hook fired  "
                         "E error  * breakpoint.  Press escape to close.")

    def action_close(self) -> None:
        self.dismiss(None)
