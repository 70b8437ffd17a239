"""The backward debugger: step through recorded backward passes one node at a time.

The app receives a ``Trace`` (plain data; the command line loads or records it) and keeps
what the user is looking at in reactive attributes: ``pass_index``, ``step_index``,
``breakpoints``, ``value_choice``. Their ``watch_*`` methods push the new state into the
widgets, which are small and each in a file of its own. Widgets talk back only by posting
messages for what the *user* did (a clicked step, a chosen violation); the app never
reacts to its own updates of a widget, so no change of pass can echo into another.

Navigation runs across passes: ``n`` at the last step of a pass goes on to the next
pass, ``c`` and ``u`` search forward through the later passes, ``:`` takes ``pass:step``.
Passes gradcheck ran (one per probe) are hidden unless ``a`` shows them.

Example:
    >>> from tracegrad.tracing.model import Trace
    >>> app = DebuggerApp(Trace())
    >>> app.pass_index, app.step_index
    (0, 0)
"""

from __future__ import annotations

import gc
from collections.abc import Iterable
from pathlib import Path

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Static

from tracegrad.draw import render
from tracegrad.errors import ConditionError
from tracegrad.tracing.model import Trace

from .conditions import parse_condition
from .keys import key_text
from .session import DebugSession, Location, parse_location
from .widgets.graph_view import GraphView
from .widgets.help_screen import GO_TO_HELP, HelpScreen
from .widgets.key_bar import KeyBar
from .widgets.node_panel import NodePanel
from .widgets.pass_bar import PassBar
from .widgets.pass_list import PassListScreen
from .widgets.prompt import PromptScreen
from .widgets.step_list import StepList
from .widgets.values_table import ValuesTable, labelled_values
from .widgets.violations_list import ViolationsList

# Most used first: the key bar shows as many as fit, in this order.
BINDINGS = [
    Binding("n,down,j", "next_step", "Next", tooltip="next step (on into the next pass)"),
    Binding("p,up,k", "previous_step", "Prev",
            tooltip="previous step (back into the previous pass)"),
    Binding("right_square_bracket", "next_pass", "Pass+", tooltip="next backward pass"),
    Binding("left_square_bracket", "previous_pass", "Pass-",
            tooltip="previous backward pass"),
    Binding("c", "continue_run", "Continue",
            tooltip="continue to the next violation, NaN/Inf, error or breakpoint"),
    Binding("u", "run_until", "Until", tooltip="run until a condition holds (nan, op ...)"),
    Binding("colon", "go_to_step", "Go to", tooltip="go to a step, or pass:step"),
    Binding("slash", "search", "Search", tooltip="search nodes by name, module, tensor"),
    Binding("b", "toggle_breakpoint", "Break",
            tooltip="toggle a breakpoint on the current op type"),
    Binding("v", "cycle_values", "Values", tooltip="show the next value of this step"),
    Binding("e", "export_svg", "SVG", tooltip="write an SVG of the graph at this step"),
    Binding("P", "pass_list", "Passes", tooltip="list the passes and pick one"),
    Binding("a", "toggle_probes", "Probes", tooltip="show or hide gradcheck's probe passes"),
    Binding("home,g", "first_step", "First", tooltip="first step of this pass"),
    Binding("end,G", "last_step", "Last", tooltip="last step of this pass"),
    Binding("question_mark", "help", "Help", tooltip="this help"),
    Binding("q", "quit", "Quit", tooltip="quit"),
]


class DebuggerApp(App[None]):
    """Textual app over one Trace. ``tracegrad.tui.show(trace)`` runs it."""

    CSS_PATH = "app.tcss"
    TITLE = "tracegrad"
    BINDINGS = BINDINGS

    pass_index: reactive[int] = reactive(0, init=False)
    step_index: reactive[int] = reactive(0, init=False)
    breakpoints: reactive[frozenset[str]] = reactive(frozenset(), init=False)
    value_choice: reactive[int] = reactive(0, init=False)

    def __init__(self, trace: Trace, *, source: str = "", export_dir: Path | None = None,
                 layout_engine: str | None = None, show_probes: bool = False) -> None:
        super().__init__()
        self.trace = trace
        self.session = DebugSession(trace, show_probes=show_probes)
        self.source = source
        self.export_dir = Path(export_dir) if export_dir is not None else Path.cwd()
        self.layout_engine = layout_engine
        self.last_export: Path | None = None
        self.sub_title = source
        self.pass_changes = 0  # how many times the shown pass changed (tests watch it)
        self._status = ""

    # -- layout -----------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="body"):
            with Vertical(id="left"):
                yield PassBar(self.session, id="pass-bar")
                yield StepList(self.session, id="steps")
                yield ViolationsList(self.session, id="violations")
            with Vertical(id="right"):
                yield GraphView(self.session, engine=self.layout_engine, id="graph")
                with VerticalScroll(id="node-scroll"):
                    yield NodePanel(self.session, id="node")
                    yield ValuesTable(id="values")
        yield Static("", id="status")
        yield KeyBar(id="keys")

    def on_mount(self) -> None:
        # The trace is a few million long-lived objects: a full collection scanning them
        # all would freeze a move for a second. Frozen, the collector skips them until the
        # app ends (on_unmount gives them back).
        gc.freeze()
        self.query_one("#graph").border_title = "graph"
        self.query_one("#violations").border_title = (
            f"violations ({len(self.trace.violations)})")
        self.query_one("#node-scroll").border_title = "node"
        self.query_one(StepList).focus()
        start = self.session.start_location() if self.trace.passes else (0, 0)
        self.go_to(*start, force=True)
        self.set_status(self._opening_message(start), error=self.trace.exception is not None
                        or not self.trace.passes)

    def on_unmount(self) -> None:
        gc.unfreeze()

    def _opening_message(self, start: Location) -> str:
        if not self.trace.passes:
            return "this trace has no backward pass (the program never called backward)"
        exception = self.trace.exception
        if exception is not None:
            where = f" at {exception.site}" if exception.site else ""
            return f"the program raised {exception.type}{where}: {exception.message}"
        if self.session.violations_at(*start):
            return (f"opened at the first violation: pass {start[0]}, step {start[1]} "
                    "(c continues to the next one)")
        return ""

    def on_resize(self, event) -> None:
        # A tall terminal gives the graph more of the right column (the node pane scrolls).
        self.query_one(GraphView).styles.height = "50%" if event.size.height >= 50 else "40%"

    # -- state --------------------------------------------------------------------------------
    def validate_step_index(self, step_index: int) -> int:
        count = self.session.step_count(self.pass_index) if self.trace.passes else 0
        return min(max(step_index, 0), max(count - 1, 0))

    def validate_pass_index(self, pass_index: int) -> int:
        return min(max(pass_index, 0), max(self.session.pass_count - 1, 0))

    def watch_pass_index(self) -> None:
        self._show_pass()
        self.set_reactive(DebuggerApp.step_index, self.validate_step_index(self.step_index))
        self._show_step()

    def watch_step_index(self) -> None:
        self._show_step()

    def watch_breakpoints(self, breakpoints: frozenset[str]) -> None:
        self.query_one(StepList).set_breakpoints(breakpoints)

    def watch_value_choice(self) -> None:
        self._show_values()

    def go_to(self, pass_index: int, step_index: int, force: bool = False) -> None:
        """Show (pass, step), drawing the widgets once."""
        pass_index = self.validate_pass_index(pass_index)
        new_pass = pass_index != self.pass_index
        self.set_reactive(DebuggerApp.pass_index, pass_index)
        self.set_reactive(DebuggerApp.step_index, self.validate_step_index(step_index))
        if new_pass or force:
            self._show_pass()
        self._show_step()

    def _show_pass(self) -> None:
        self.pass_changes += 1
        self.query_one(StepList).show_pass(self.pass_index)
        self.query_one(PassBar).show(self.pass_index)

    def _show_step(self) -> None:
        if not self.is_mounted:
            return
        self.set_status("")  # a message is about the move that made it: the next one clears it
        self.query_one(StepList).cursor = self.step_index
        self.query_one(GraphView).show(self.pass_index, self.step_index)
        self.query_one(NodePanel).show(self.pass_index, self.step_index)
        self.set_reactive(DebuggerApp.value_choice, 0)
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
        values = labelled_values(self.trace, self.session.step(self.pass_index, self.step_index))
        if not values:
            table.show(None, None)
            return
        label, value = values[self.value_choice % len(values)]
        choice = f"({self.value_choice % len(values) + 1}/{len(values)}, v for next)"
        table.show(label, value, choice)

    def set_status(self, message: str, error: bool = False) -> None:
        status = self.query_one("#status", Static)
        if message != self._status or error != status.has_class("error"):
            # Only on a change: an update of an auto-height line makes Textual lay out the
            # whole screen again, and every move clears the line.
            self._status = message
            status.update(message)
            status.set_class(error, "error")

    @property
    def status_text(self) -> str:
        return self._status

    # -- messages from widgets ----------------------------------------------------------------
    def on_step_list_step_clicked(self, message: StepList.StepClicked) -> None:
        self.step_index = message.step_index

    def on_violations_list_jump(self, message: ViolationsList.Jump) -> None:
        self._reveal(message.pass_index)
        self.go_to(message.pass_index, message.step_index)
        self.set_status(f"jumped to pass {message.pass_index}, step {message.step_index}")

    # -- actions: stepping --------------------------------------------------------------------
    def action_next_step(self) -> None:
        if not self.trace.passes:
            return
        if self.step_index + 1 < self.session.step_count(self.pass_index):
            self.step_index += 1
            return
        following = self.session.neighbour_pass(self.pass_index, 1, with_steps=True)
        if following is None:
            self.set_status("at the last step of the last backward pass")
            return
        self.go_to(following, 0)
        self.set_status(f"on to the next pass: {self.session.pass_label(following)}")

    def action_previous_step(self) -> None:
        if not self.trace.passes:
            return
        if self.step_index > 0:
            self.step_index -= 1
            return
        previous = self.session.neighbour_pass(self.pass_index, -1, with_steps=True)
        if previous is None:
            self.set_status("at the first step of the first backward pass")
            return
        self.go_to(previous, self.session.step_count(previous) - 1)
        self.set_status(f"back to the previous pass: {self.session.pass_label(previous)}")

    def action_first_step(self) -> None:
        self.step_index = 0

    def action_last_step(self) -> None:
        self.step_index = self.session.step_count(self.pass_index) - 1 if self.trace.passes else 0

    def action_next_pass(self) -> None:
        following = self.session.neighbour_pass(self.pass_index, 1) if self.trace.passes \
            else None
        if following is None:
            self.set_status("already at the last backward pass")
            return
        self.go_to(following, 0)

    def action_previous_pass(self) -> None:
        previous = self.session.neighbour_pass(self.pass_index, -1) if self.trace.passes \
            else None
        if previous is None:
            self.set_status("already at the first backward pass")
            return
        self.go_to(previous, 0)

    def _arrive(self, location: Location, what: str) -> None:
        """Go to a found location and say what was found, and in which pass if not here."""
        moved_pass = location[0] != self.pass_index
        self.go_to(*location)
        where = f"pass {location[0]}, step {location[1]}" if moved_pass \
            else f"step {location[1]}"
        self.set_status(f"stopped at {where} ({self.session.row(*location).label}): {what}")

    def action_continue_run(self) -> None:
        if not self.trace.passes:
            return
        stop = self.session.next_stop((self.pass_index, self.step_index), self.breakpoints)
        if stop is None:
            self.set_status("no breakpoint, violation or NaN/Inf after this step, in this "
                            "pass or a later one")
            return
        row = self.session.row(*stop)
        reason = "breakpoint" if row.node_name in self.breakpoints else "violation or anomaly"
        self._arrive(stop, reason)

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

    # -- actions: prompts -------------------------------------------------------------------
    def action_go_to_step(self) -> None:
        count = self.session.step_count(self.pass_index) if self.trace.passes else 0
        last_pass = max(self.session.pass_count - 1, 0)
        self.push_screen(PromptScreen(
            f"go to step (0-{max(count - 1, 0)}) of this pass, or pass:step "
            f"(passes 0-{last_pass})", "e.g. 4 or 250:3"), self._go_to_answer)

    def _go_to_answer(self, answer: str | None) -> None:
        if answer is None or not answer.strip() or not self.trace.passes:
            return
        try:
            pass_index, step_index = parse_location(answer, self.pass_index)
        except ValueError:
            self.set_status(f"go to: {answer.strip()!r} is neither a step nor pass:step. "
                            f"{GO_TO_HELP}", error=True)
            return
        if not 0 <= pass_index < self.session.pass_count:
            self.set_status(f"go to: there is no pass {pass_index}; passes are 0-"
                            f"{self.session.pass_count - 1}", error=True)
            return
        count = self.session.step_count(pass_index)
        if not (0 <= step_index < count or (step_index == 0 and count == 0)):
            self.set_status(f"go to: pass {pass_index} has no step {step_index}; expected "
                            f"0-{count - 1}", error=True)
            return
        revealed = self._reveal(pass_index)
        self.go_to(pass_index, step_index)
        if revealed:
            self.set_status(f"pass {pass_index} is one of gradcheck's probes: showing them "
                            "(a hides them)")

    def _reveal(self, pass_index: int) -> bool:
        """Show the probe passes when asked to go to one of them; whether that happened."""
        if self.session.is_visible(pass_index):
            return False
        self.session.set_show_probes(True)
        return True

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
                        f"({self.session.row(*found).label})")

    def action_run_until(self) -> None:
        self.push_screen(PromptScreen("run until (nan, inf, op NAME, norm > X, hook, "
                                      "violation; and/or) -- searches later passes too",
                                      "e.g. nan or norm > 100"), self._run_until_answer)

    def _run_until_answer(self, answer: str | None) -> None:
        if answer is None or not self.trace.passes:
            return
        try:
            condition = parse_condition(answer)
        except ConditionError as error:
            self.set_status(str(error).replace("\n", " "), error=True)
            return
        session = self.session
        found = session.find_forward((self.pass_index, self.step_index),
                                     lambda location: condition.matches(session, *location))
        if found is None:
            self.set_status(f"run until {condition.text!r}: no later step matches, in this "
                            "pass or a later one")
            return
        self._arrive(found, f"run until {condition.text!r}")

    # -- actions: views -----------------------------------------------------------------------
    def action_cycle_values(self) -> None:
        self.value_choice += 1

    def action_pass_list(self) -> None:
        if not self.trace.passes:
            return
        self.push_screen(PassListScreen(self.session, self.pass_index), self._pass_chosen)

    def _pass_chosen(self, pass_index: int | None) -> None:
        if pass_index is not None:
            self.go_to(pass_index, 0)

    def action_toggle_probes(self) -> None:
        session = self.session
        if not session.probe_count:
            self.set_status("this trace has no gradcheck probe passes")
            return
        session.set_show_probes(not session.show_probes)
        if not session.is_visible(self.pass_index):
            self.go_to(session.visible[session.visible_position(self.pass_index)], 0)
        self.query_one(PassBar).show(self.pass_index)
        state = "showing" if session.show_probes else "hiding"
        self.set_status(f"{state} {session.probe_count:,} gradcheck probe passes")

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
                render(trace, str(path), highlight_step=step_index, pass_index=pass_index)
            except Exception as error:  # noqa: BLE001 - shown to the user; the app keeps running
                self.call_from_thread(self.set_status, f"export failed: {error}", True)
                return
            self.last_export = path
            self.call_from_thread(self.set_status, f"wrote {path}")

        self.run_worker(work, thread=True, exclusive=True, group="export")

    def action_help(self) -> None:
        self.push_screen(HelpScreen(list(self.BINDINGS)))

    # -- the command palette (ctrl+p) ---------------------------------------------------------
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every action of the debugger, named as in the help, then Textual's own."""
        for binding in self.BINDINGS:
            yield SystemCommand(f"{binding.description} ({key_text(binding)})",
                                binding.tooltip or binding.description,
                                _runner(self, binding.action))
        yield from super().get_system_commands(screen)


def _runner(app: DebuggerApp, action: str):
    async def run() -> None:
        await app.run_action(action)
    return run
