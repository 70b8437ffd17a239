"""Every violation and anomaly in the trace; choosing one jumps to its step.

Each entry names the kind, the message and both sites (the in-place op's line and the
forward line that saved the tensor, or where a NaN first appeared), so the list alone
already says what to fix. The exception that ended the program, if any, comes first. The
list holds at most ``MAX_ENTRIES`` (a loop can report one finding per distinct line).
"""

from __future__ import annotations

from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from ..formatting import describe_violation
from ..session import DebugSession

MAX_ENTRIES = 500


class ViolationsList(OptionList):
    """Violations, in recording order."""

    class Jump(Message):
        """Go to (pass_index, step_index)."""

        def __init__(self, pass_index: int, step_index: int) -> None:
            super().__init__()
            self.pass_index = pass_index
            self.step_index = step_index

    def __init__(self, session: DebugSession, **kwargs) -> None:
        self.session = session
        self.locations: list[tuple[int, int] | None] = []
        options: list[Option] = []
        exception = session.trace.exception
        if exception is not None:
            where = f" at {exception.site}" if exception.site else ""
            options.append(Option(Text(f"✗ the program raised {exception.type}{where}",
                                       style="bold red"), id="exception"))
            self.locations.append(session.failed_step())
        violations = session.trace.violations
        for number, violation in enumerate(violations[:MAX_ENTRIES]):
            options.append(Option(describe_violation(violation, session.trace, full=False),
                                  id=f"violation-{number}"))
            self.locations.append(session.violation_location(violation))
        if len(violations) > MAX_ENTRIES:
            options.append(Option(f"... {len(violations) - MAX_ENTRIES:,} more (tracegrad "
                                  "check lists them all)", disabled=True))
            self.locations.append(None)
        if not options:
            options.append(Option("no violations or anomalies recorded", disabled=True))
            self.locations.append(None)
        super().__init__(*options, **kwargs)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        location = self.locations[event.option_index]
        if location is not None:
            self.post_message(self.Jump(*location))
        else:
            self.app.notify("This entry has no backward step to jump to.", severity="warning")

