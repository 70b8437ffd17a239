"""Display names for tensors: set by hand, by nn.Module, or found in the user's code.

>>> import tracegrad
>>> w1 = tracegrad.zeros(2)
>>> name(w1, "w1").name
'w1'
"""

from __future__ import annotations

import sys
from itertools import compress
from types import FrameType

from ..autograd.site import _internal_files, _is_internal


def name(tensor, label: str):
    """Give ``tensor`` a display name for traces and graphs; returns the tensor.

    >>> import tracegrad
    >>> x = tracegrad.name(tracegrad.ones(3), "x")
    >>> x.name
    'x'
    """
    if not isinstance(label, str) or not label:
        raise ValueError(
            f"tracegrad.name: expected a non-empty string for the name, got {label!r}. "
            "Hint: tracegrad.name(t, 'w1').")
    tensor.name = label
    return tensor


def user_frame(depth: int = 1) -> FrameType | None:
    """The innermost frame outside tracegrad (where the user's variables live), from
    ``depth`` frames up (1: the caller)."""
    try:
        frame = sys._getframe(depth)
    except ValueError:  # the stack is not that deep
        return None
    # _is_internal's table, read inline: the recorder looks for this frame on every op,
    # several frames up.
    internal = _internal_files
    while frame is not None:
        filename = frame.f_code.co_filename
        flag = internal.get(filename)
        if flag is None:
            flag = _is_internal(filename)
        if not flag:
            return frame
        frame = frame.f_back
    return None


def names_in_frame(frame: FrameType | None, wanted) -> dict[int, str]:
    """Map ``id(obj)`` -> the best variable name bound to ``obj`` in ``frame``.

    ``wanted`` is a container of ids to look for. Locals come before globals; among several
    names for one object the shortest wins, then the alphabetically first, so the choice is
    the same on every run. Private names (``_x``) are skipped.
    """
    if frame is None or not wanted:
        return {}
    scopes = [frame.f_locals]
    if frame.f_globals is not frame.f_locals:
        scopes.append(frame.f_globals)
    return names_in_scopes(scopes, wanted)


def names_in_scopes(scopes, wanted) -> dict[int, str]:
    """Like ``names_in_frame`` over mappings of variables, earlier scopes first."""
    found: dict[int, str] = {}
    for scope in scopes:
        in_scope: dict[int, str] = {}
        # The variables bound to a wanted object, picked out in C (map, compress) before
        # any Python-level loop: a scope is mostly other things (a script's globals, a loop's
        # counters), and the recorder searches at every backward start (bench_trace.py (a)).
        variables = list(scope)
        keys = list(map(id, scope.values()))
        hits = list(compress(zip(variables, keys), map(wanted.__contains__, keys)))
        for variable, key in hits:
            if key in found or variable.startswith("_"):
                continue
            best = in_scope.get(key)
            if best is None or (len(variable), variable) < (len(best), best):
                in_scope[key] = variable
        found.update(in_scope)
        if len(found) == len(wanted):
            break
    return found
