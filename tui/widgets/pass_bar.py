"""The line above the steps: which pass is shown, what started it, and where.

A plain ``Static``: the app writes it when the pass changes and nothing flows back, so
no change of pass can echo into another (holding ``]`` on 500 passes stays calm).
"""

from __future__ import annotations

from textual.widgets import Static

from ..session import DebugSession


class PassBar(Static):
    """``pass 250/499 · backward(loss) at train.py:31, 10 steps`` and how to move."""

    def __init__(self, session: DebugSession, **kwargs) -> None:
        super().__init__("", **kwargs)
        self.session = session

    def show(self, pass_index: int) -> None:
        self.update(self.text_for(pass_index))

    def text_for(self, pass_index: int) -> str:
        session = self.session
        if not session.trace.passes:
            return "no backward pass"
        position = session.visible_position(pass_index)
        label = session.pass_label(pass_index).partition(": ")[2]
        hidden = "" if session.show_probes or not session.probe_count else (
            f" · {session.probe_count:,} gradcheck probe passes hidden (a shows)")
        return (f"pass {pass_index} ({position + 1:,} of {len(session.visible):,}): "
                f"{label}{hidden}")
