"""Choose the backward pass (a training loop runs one per iteration)."""

from __future__ import annotations

from textual.message import Message
from textual.widgets import Select

from ..session import DebugSession


class PassPicker(Select[int]):
    """A drop-down of the trace's passes; posts ``PassPicker.Picked`` when one is chosen."""

    class Picked(Message):
        def __init__(self, pass_index: int) -> None:
            super().__init__()
            self.pass_index = pass_index

    def __init__(self, session: DebugSession, **kwargs) -> None:
        options = [(session.pass_label(index, short=True), index) for index in range(session.pass_count)]
        super().__init__(options, allow_blank=not options, value=0 if options else Select.NULL,
                         compact=True, **kwargs)

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if isinstance(event.value, int):
            self.post_message(self.Picked(event.value))
