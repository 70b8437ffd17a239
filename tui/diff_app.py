"""Two traces side by side, opened where the runs part (``tracegrad tui A B``).

Both sides move together: ``n``/``p`` go to the next/previous difference when
``diff_traces`` reported several, else to the next/previous step of the aligned backward
pass. When the graphs differ, their unified diff is shown below the sides.

Example:
    >>> from tracegrad.tracing.model import Trace
    >>> DiffApp(Trace(), Trace()).view.result.same
    True
"""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Static

from tracegrad.tracing.model import Trace

from .diff_view import DiffView
from .widgets.help_screen import HelpScreen
from .widgets.key_bar import KeyBar

BINDINGS = [
    Binding("n,down,j", "next_place", "Next",
            tooltip="next difference (or next step of the pass, both sides together)"),
    Binding("p,up,k", "previous_place", "Prev",
            tooltip="previous difference (or previous step of the pass)"),
    Binding("question_mark", "help", "Help", tooltip="this help"),
    Binding("q", "quit", "Quit", tooltip="quit"),
]

HELP_NOTE = ("Left: the first trace, right: the second, both at the same place. Each side "
             "shows the node, its line, the value that differs (worst element, both values, "
             "the tolerance) and the ops above it. Press escape to close.")


class DiffApp(App[None]):
    """Where two runs part: trace A on the left, trace B on the right."""

    CSS = """
    #headline { height: auto; padding: 0 1; }
    #sides { height: 1fr; }
    .side { width: 1fr; border: round $accent; padding: 0 1; }
    #structure { height: 1fr; border: round $warning; padding: 0 1; }
    #status { height: 1; padding: 0 1; }
    """
    BINDINGS = BINDINGS

    def __init__(self, a: Trace, b: Trace, names: tuple[str, str] = ("a", "b"),
                 rtol: float | None = None, atol: float | None = None) -> None:
        super().__init__()
        self.view = DiffView(a, b, names=names, rtol=rtol, atol=atol)

    def compose(self) -> ComposeResult:
        yield Static("", id="headline", markup=False)
        if self.view.places:
            with Horizontal(id="sides"):
                yield VerticalScroll(Static("", id="side-a", markup=False), classes="side", id="scroll-a")
                yield VerticalScroll(Static("", id="side-b", markup=False), classes="side", id="scroll-b")
        if self.view.result.structure:
            with VerticalScroll(id="structure"):
                yield Static(self.view.result.structure, markup=False)
        yield Static("", id="status", markup=False)
        yield KeyBar(id="keys")

    def on_mount(self) -> None:
        names = self.view.names
        if self.view.places:
            self.query_one("#scroll-a").border_title = names[0]
            self.query_one("#scroll-b").border_title = names[1]
        if self.view.result.structure:
            self.query_one("#structure").border_title = "graphs differ (unified diff)"
        self._show()

    def _show(self) -> None:
        self.query_one("#headline", Static).update(self.view.headline())
        if self.view.places:
            self.query_one("#side-a", Static).update("\n".join(self.view.side(0)[1:]))  # the name is the title
            self.query_one("#side-b", Static).update("\n".join(self.view.side(1)[1:]))

    def set_status(self, message: str) -> None:
        self.query_one("#status", Static).update(message)

    def _move(self, offset: int) -> None:
        if self.view.move(offset):
            self.set_status("")
            self._show()
            return
        what = "difference" if self.view.by_differences else "step"
        end = "last" if offset > 0 else "first"
        self.set_status(f"already at the {end} {what}" if self.view.places
                        else "nothing to step through")

    def action_next_place(self) -> None:
        self._move(1)

    def action_previous_place(self) -> None:
        self._move(-1)

    def action_help(self) -> None:
        self.push_screen(HelpScreen(list(self.BINDINGS), notes=[HELP_NOTE],
                                    title="tracegrad diff — keys"))
