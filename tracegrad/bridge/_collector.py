"""The garbage collector while a torch program is recorded.

Importing torch leaves some 400,000 long-lived objects on the heap. A recording makes
records that live as long as the trace, and every time enough of them pile up the collector
runs a full collection, which scans torch's objects again: a fifth to a third of a recorded
training loop's time went there. So, for as long as the bridge observes a program, the
objects that existed before it started are frozen (``gc.freeze()``: the collector skips
them) and given back to the collector (``gc.unfreeze()``) when the recording ends.

What the program can tell: nothing about its values or exceptions. Garbage cycles among
objects older than the recording are collected after it ends rather than during it (the
objects made during the recording are collected as always). The freeze is left alone where
the program froze objects itself (before the recording or during it), or turned the
collector off.
"""

from __future__ import annotations

import gc


class FrozenHeap:
    """``freeze()`` at the start of a session, ``thaw()`` at its end (once)."""

    __slots__ = ("_frozen",)

    def __init__(self) -> None:
        self._frozen: int | None = None  # the freeze count right after ours

    def freeze(self) -> None:
        if gc.isenabled() and gc.get_freeze_count() == 0:
            gc.freeze()
            self._frozen = gc.get_freeze_count()

    def thaw(self) -> None:
        frozen, self._frozen = self._frozen, None
        # Frozen objects leave the permanent generation only by dying: a count above ours
        # means the program froze objects of its own meanwhile, and unfreezing would undo
        # that too.
        if frozen is not None and gc.get_freeze_count() <= frozen:
            gc.unfreeze()
