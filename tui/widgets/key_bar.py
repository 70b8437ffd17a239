"""The footer: every binding that fits on one line, keys as they are typed.

Textual's own Footer scrolls the bindings that do not fit out of sight; this one shows
whole entries, most useful first (the order of the app's BINDINGS), as many as the width
allows, and ``? help`` and ``q quit`` always last so the rest can be found.
"""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widget import Widget

from ..keys import key_text

_GAP = "  "
_ALWAYS = ("help", "quit")  # shown whatever the width, last


def fitting_entries(bindings: list[Binding], width: int) -> list[tuple[str, str]]:
    """(key, description) pairs that fit in ``width`` cells, help kept last.

    >>> bindings = [Binding("n", "a", "Next"), Binding("p", "b", "Prev"),
    ...             Binding("question_mark", "help", "Help")]
    >>> fitting_entries(bindings, 16)
    [('n', 'Next'), ('?', 'Help')]
    """
    entries = [(key_text(binding, first_only=True), binding.description)
               for binding in bindings if binding.show]
    shown = [binding for binding in bindings if binding.show]
    help_entries = [entry for entry, binding in zip(entries, shown)
                    if binding.action in _ALWAYS]
    others = [entry for entry, binding in zip(entries, shown) if binding.action not in _ALWAYS]
    reserved = sum(len(key) + len(text) + 1 + len(_GAP) for key, text in help_entries)
    chosen, used = [], 0
    for key, text in others:
        cost = len(key) + len(text) + 1 + len(_GAP)
        if used + cost + reserved > width:
            break
        chosen.append((key, text))
        used += cost
    return chosen + help_entries


class KeyBar(Widget):
    """One line of ``key description`` pairs."""

    DEFAULT_CSS = """
    KeyBar { height: 1; background: $panel; }
    """

    def render(self) -> Text:
        text = Text(no_wrap=True, overflow="crop")
        bindings = list(self.app.BINDINGS)
        for key, description in fitting_entries(bindings, self.size.width):
            text.append(f" {key}", style="bold")
            text.append(f" {description}{_GAP[:-1]}")
        return text

    def visible_text(self) -> str:
        return self.render().plain
