"""The backward debugger: step through a recorded backward pass one node at a time.

The app receives a ``Trace`` (plain data; the command line loads or records it) and keeps
what the user is looking at in reactive attributes: ``pass_index``, ``step_index``,
``breakpoints``, ``value_choice``. Their ``watch_*`` methods push the new state into the
widgets, which are small and each in a file of its own; widgets talk back by posting
messages (a clicked step, a chosen violation, a picked pass).

Example:
    >>> from tracegrad.tracing.model import Trace
    >>> app = DebuggerApp(Trace())
    >>> app.pass_index, app.step_index
    (0, 0)
"""

from __future__ import annotations

from pathlib import Path

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.reactive import reactive
from textual.widgets import Footer, Static

from tracegrad.errors import ConditionError
from tracegrad.tracing.model import Trace

from .conditions import parse_condition
from .export_svg import export_svg
from .session import DebugSession
from .widgets.graph_view import GraphView
from .widgets.help_screen import HelpScreen
from .widgets.node_panel import NodePanel
from .widgets.pass_picker import PassPicker
from .widgets.prompt import PromptScreen
from .widgets.step_list import StepList
from .widgets.values_table import ValuesTable, step_values
from .widgets.violations_list import ViolationsList

BINDINGS = [
    Binding("n,down,j", "next_step", "Next"),
    Binding("p,up,k", "previous_step", "Prev"),
    Binding("home,g", "first_step", "First", show=False),
    Binding("end,G", "last_step", "Last", show=False),
    Binding("right_square_bracket", "next_pass", "Pass+", show=False),
    Binding("left_square_bracket", "previous_pass", "Pass-", show=False),
    Binding("c", "continue_run", "Continue"),
    Binding("b", "toggle_breakpoint", "Break"),
    Binding("colon", "go_to_step", "Go to"),
    Binding("slash", "search", "Search"),
    Binding("u", "run_until", "Until"),
    Binding("e", "export_svg", "SVG"),
    Binding("v", "cycle_values", "Values", show=False),
    Binding("question_mark", "help", "Help"),
    Binding("q", "quit", "Quit"),
]


class DebuggerApp(App[None]):
    """Textual app over one Trace. ``tracegrad.tui.show(trace)`` runs it."""

    CSS_PATH = "app.tcss"
    ENABLE_COMMAND_PALETTE = False  # every action has a key; the footer needs the room
    TITLE = "tracegrad"
    BINDINGS = BINDINGS

    pass_index: reactive[int] = reactive(0, init=False)
    step_index: reactive[int] = reactive(0, init=False)
    breakpoints: reactive[frozenset[str]] = reactive(frozenset(), init=False)
    value_choice: reactive[int] = reactive(0, init=False)

    def __init__(self, trace: Trace, *, source: str = "", export_dir: Path | None = None,
                 layout_engine: str | None = None) -> None:
        super().__init__()
        self.trace = trace
        self.session = DebugSession(trace)
        self.source = source
        self.export_dir = Path(export_dir) if export_dir is not None else Path.cwd()
        self.layout_engine = layout_engine
        self.last_export: Path | None = None
        self.sub_title = source

    # -- layout -----------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="body"):
            with Vertical(id="left"):
                picker = PassPicker(self.session, id="pass-picker")
                picker.display = self.session.pass_count > 1
                yield picker
                yield StepList(self.session, id="steps")
                yield ViolationsList(self.session, id="violations")
            with Vertical(id="right"):
                yield GraphView(self.session, engine=self.layout_engine, id="graph")
                with VerticalScroll(id="node-scroll"):
                    yield NodePanel(self.session, id="node")
                    yield ValuesTable(id="values")
        yield Static("", id="status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#graph").border_title = "graph"
        self.query_one("#violations").border_title = (
            f"violations ({len(self.trace.violations)})")
        self.query_one("#node-scroll").border_title = "node"
        self.query_one(StepList).focus()
        self._show_pass()
        start = self._failed_step() if self.trace.exception is not None else None
        if start is not None:
            self.go_to(*start)
        else:
            self._show_step()
        if self.trace.exception is not None:
            exception = self.trace.exception
            where = f" at {exception.site}" if exception.site else ""
            self.set_status(f"the program raised {exception.type}{where}: {exception.message}",
                            error=True)
        elif not self.trace.passes:
            self.set_status("this trace has no backward pass (the program never called "
                            "backward)", error=True)

    def _failed_step(self) -> tuple[int, int] | None:
        for backward_pass in self.trace.passes:
            for step in backward_pass.steps:
                if step.error:
                    return backward_pass.index, step.index
        return None

    # -- state --------------------------------------------------------------------------------
    def validate_step_index(self, step_index: int) -> int:
        count = self.session.step_count(self.pass_index) if self.trace.passes else 0
        return min(max(step_index, 0), max(count - 1, 0))

    def validate_pass_index(self, pass_index: int) -> int:
        return min(max(pass_index, 0), max(self.session.pass_count - 1, 0))

    def watch_pass_index(self) -> None:
        self._show_pass()
        self.step_index = self.validate_step_index(self.step_index)
        self._show_step()

    def watch_step_index(self) -> None:
        self._show_step()

    def watch_breakpoints(self, breakpoints: frozenset[str]) -> None:
        self.query_one(StepList).set_breakpoints(breakpoints)

    def watch_value_choice(self) -> None:
        self._show_values()

    def go_to(self, pass_index: int, step_index: int) -> None:
        self.pass_index = pass_index
        self.step_index = step_index

    def _show_pass(self) -> None:
        self.query_one(StepList).show_pass(self.pass_index)
        picker = self.query_one(PassPicker)
        if self.session.pass_count > 1 and picker.value != self.pass_index:
            picker.value = self.pass_index

    def _show_step(self) -> None:
        if not self.is_mounted:
            return
        self.query_one(StepList).cursor = self.step_index
        self.query_one(GraphView).show(self.pass_index, self.step_index)
        self.query_one(NodePanel).show(self.pass_index, self.step_index)
        self.value_choice = 0
        self._show_values()
        count = self.session.step_count(self.pass_index) if self.trace.passes else 0
        self.query_one("#steps").border_title = (
            f"pass {self.pass_index}/{max(self.session.pass_count - 1, 0)} · "
            f"step {self.step_index}/{max(count - 1, 0)}")

    def _show_values(self) -> None:
        table = self.query_one(ValuesTable)
        if not self.trace.passes or not self.session.step_count(self.pass_index):
            table.show(None, None)
            return
        values = step_values(self.trace, self.session.step(self.pass_index, self.step_index))
        if not values:
            table.show(None, None)
            return
        label, value = values[self.value_choice % len(values)]
        choice = f"({self.value_choice % len(values) + 1}/{len(values)}, v for next)"
        table.show(label, value, choice)

    def set_status(self, message: str, error: bool = False) -> None:
        status = self.query_one("#status", Static)
        status.update(message)
        status.set_class(error, "error")

    @property
    def status_text(self) -> str:
        return str(self.query_one("#status", Static).content)

    # -- messages from widgets ----------------------------------------------------------------
    def on_step_list_step_clicked(self, message: StepList.StepClicked) -> None:
        self.step_index = message.step_index

    def on_violations_list_jump(self, message: ViolationsList.Jump) -> None:
        self.go_to(message.pass_index, message.step_index)
        self.set_status(f"jumped to pass {message.pass_index}, step {message.step_index}")

    def on_pass_picker_picked(self, message: PassPicker.Picked) -> None:
        if message.pass_index != self.pass_index:
            self.go_to(message.pass_index, 0)

    # -- actions ------------------------------------------------------------------------------
    def action_next_step(self) -> None:
        self.step_index += 1

    def action_previous_step(self) -> None:
        self.step_index -= 1

    def action_first_step(self) -> None:
        self.step_index = 0

    def action_last_step(self) -> None:
        self.step_index = self.session.step_count(self.pass_index) - 1 if self.trace.passes else 0

    def action_next_pass(self) -> None:
        if self.pass_index + 1 < self.session.pass_count:
            self.go_to(self.pass_index + 1, 0)
        else:
            self.set_status("already at the last backward pass")

    def action_previous_pass(self) -> None:
        if self.pass_index > 0:
            self.go_to(self.pass_index - 1, 0)
        else:
            self.set_status("already at the first backward pass")

    def action_continue_run(self) -> None:
        if not self.trace.passes:
            return
        stop = self.session.next_stop(self.pass_index, self.step_index, self.breakpoints)
        if stop is None:
            self.set_status("no breakpoint, violation or NaN/Inf after this step in this pass")
            return
        self.step_index = stop
        row = self.session.row(self.pass_index, stop)
        reason = "breakpoint" if row.node_name in self.breakpoints else "violation or anomaly"
        self.set_status(f"stopped at step {stop} ({row.node_name}): {reason}")

    def action_toggle_breakpoint(self) -> None:
        if not self.trace.passes or not self.session.step_count(self.pass_index):
            return
        name = self.session.node_at(self.pass_index, self.step_index).name
        if name in self.breakpoints:
            self.breakpoints = self.breakpoints - {name}
            self.set_status(f"breakpoint on {name} removed")
        else:
            self.breakpoints = self.breakpoints | {name}
            self.set_status(f"breakpoint on every {name} step (c continues to it)")

    def action_go_to_step(self) -> None:
        count = self.session.step_count(self.pass_index) if self.trace.passes else 0
        self.push_screen(PromptScreen(f"go to step (0-{max(count - 1, 0)})", "step number"),
                         self._go_to_answer)

    def _go_to_answer(self, answer: str | None) -> None:
        if answer is None:
            return
        count = self.session.step_count(self.pass_index) if self.trace.passes else 0
        try:
            target = int(answer.strip())
        except ValueError:
            self.set_status(f"go to: {answer!r} is not a step number; expected 0-{count - 1}",
                            error=True)
            return
        if not 0 <= target < count:
            self.set_status(f"go to: step {target} is outside this pass; expected 0-{count - 1}",
                            error=True)
            return
        self.step_index = target

    def action_search(self) -> None:
        self.push_screen(PromptScreen("search nodes by name, op, module or tensor name",
                                      "e.g. Mm, relu, layer1, w1"), self._search_answer)

    def _search_answer(self, answer: str | None) -> None:
        if not answer or not self.trace.passes:
            return
        found = self.session.search(self.pass_index, self.step_index, answer)
        if found is None:
            self.set_status(f"search: no step's node matches {answer!r}", error=True)
            return
        self.go_to(*found)
        self.set_status(f"search {answer!r}: pass {found[0]}, step {found[1]} "
                        f"({self.session.node_at(*found).name})")

    def action_run_until(self) -> None:
        self.push_screen(PromptScreen("run until (nan, inf, op NAME, norm > X, hook, "
                                      "violation; and/or)", "e.g. nan or norm > 100"),
                         self._run_until_answer)

    def _run_until_answer(self, answer: str | None) -> None:
        if answer is None or not self.trace.passes:
            return
        try:
            condition = parse_condition(answer)
        except ConditionError as error:
            self.set_status(str(error).replace("\n", " "), error=True)
            return
        found = self.session.find_step(
            self.pass_index, self.step_index + 1,
            lambda index: condition.matches(self.session, self.pass_index, index))
        if found is None:
            self.set_status(f"run until {condition.text!r}: no later step in this pass matches")
            return
        self.step_index = found
        self.set_status(f"run until {condition.text!r}: stopped at step {found}")

    def action_cycle_values(self) -> None:
        self.value_choice += 1

    def action_export_svg(self) -> None:
        if not self.trace.passes:
            self.set_status("export: this trace has no backward pass to highlight", error=True)
            return
        stem = Path(self.source).stem if self.source else "trace"
        path = self.export_dir / f"{stem}-pass{self.pass_index}-step{self.step_index}.svg"
        self.set_status(f"exporting {path} ...")
        trace, pass_index, step_index = self.trace, self.pass_index, self.step_index

        def work() -> None:
            try:
                export_svg(trace, path, pass_index, step_index)
            except Exception as error:  # noqa: BLE001 - shown to the user; the app keeps running
                self.call_from_thread(self.set_status, f"export failed: {error}", True)
                return
            self.last_export = path
            self.call_from_thread(self.set_status, f"wrote {path}")

        self.run_worker(work, thread=True, exclusive=True, group="export")

    def action_help(self) -> None:
        self.push_screen(HelpScreen(list(self.BINDINGS)))
