"""Keys as users type them: ``]`` rather than Textual's ``right_square_bracket``.

>>> from textual.binding import Binding
>>> key_text(Binding("n,down,j", "next_step", "Next"))
'n ↓ j'
>>> key_text(Binding("right_square_bracket", "next_pass", "Pass+"))
']'
"""

from __future__ import annotations

from textual.binding import Binding
from textual.keys import format_key


def key_text(binding: Binding, first_only: bool = False) -> str:
    """The binding's keys as they are typed, separated by spaces."""
    if binding.key_display:
        return binding.key_display
    keys = [format_key(key.strip()) for key in binding.key.split(",")]
    return keys[0] if first_only else " ".join(keys)
