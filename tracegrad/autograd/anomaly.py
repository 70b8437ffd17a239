"""Anomaly mode: remember the forward call behind every node, say which one failed.

As in PyTorch, anomaly mode is process-wide (not per thread). While it is on:

- every node made keeps the Python stack of the forward call that created it, in
  ``node.metadata["traceback_"]``; a node made while backward runs also keeps the node
  whose backward made it, in ``metadata["parent_"]``;
- when a node's backward raises, a UserWarning "Error detected in <node>. Traceback of
  forward call that caused the error: ..." comes first (then one per parent: "Previous
  calculation was induced by ..."), and the error follows;
- with ``check_nan`` (the default), a node whose backward returns NaN raises.

tracegrad adds to PyTorch: the in-place error names the in-place op and its line.
"""

from __future__ import annotations

import sys
import traceback
import warnings

from .grad_mode import _State, anomaly_flags, state
from .node import running
from .site import _is_internal

_TRACE_KEY = "traceback_"
_PARENT_KEY = "parent_"


def is_anomaly_enabled() -> bool:
    """Whether anomaly mode is on (process-wide, as ``torch.is_anomaly_enabled``)."""
    return state.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly mode also raises on NaN gradients (``torch.is_anomaly_check_nan_enabled``)."""
    return state.anomaly_check_nan


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly mode on or off for every thread (``torch.set_anomaly_enabled``)."""
    # On the class: the flags are process-wide, and an instance attribute would be private
    # to the calling thread.
    _State.anomaly = anomaly_flags.enabled = bool(enabled)
    _State.anomaly_check_nan = anomaly_flags.check_nan = bool(check_nan)


class detect_anomaly:
    """Context manager enabling anomaly detection (the previous setting is restored on exit).

    The previous setting is read when the object is made, and the warning is given then,
    as in PyTorch.

    >>> import warnings, tracegrad as torch
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     with torch.autograd.detect_anomaly(check_nan=False):
    ...         torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()
    (True, False)
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = state.anomaly
        self.check_nan = check_nan
        self.prev_check_nan = state.anomaly_check_nan
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and "
            "should only be enabled for debugging.", stacklevel=2)

    def __enter__(self) -> None:
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc_info) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


class set_detect_anomaly:
    """Turn anomaly detection on or off: at once, and as a context restores the previous
    setting on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = state.anomaly
        self.prev_check_nan = state.anomaly_check_nan
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc_info) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


# -- what nodes remember -------------------------------------------------------------------
def note_forward(node) -> None:
    """Called for every node made while anomaly mode is on: keep the forward stack (up to
    the user's call, without tracegrad's own frames) and the node whose backward is
    running in this thread, if any."""
    frames = traceback.extract_stack(sys._getframe(1))
    end = len(frames)
    while end > 1 and _is_internal(frames[end - 1].filename):
        end -= 1
    metadata = node.metadata
    metadata[_TRACE_KEY] = traceback.format_list(frames[:end])
    parent = running.node
    if parent is not None:
        metadata[_PARENT_KEY] = parent


def warn_forward_traceback(node) -> None:
    """The warnings PyTorch gives before an error from ``node``'s backward propagates.

    When warnings are errors, the text goes to stderr instead, so the original error (not
    the warning) is what the caller gets.
    """
    level = _user_stacklevel()
    for message in _traceback_messages(node):
        try:
            warnings.warn(message, UserWarning, stacklevel=level)
        except Warning:
            sys.stderr.write(f"UserWarning: {message}\n")


def _user_stacklevel() -> int:
    """The warnings stacklevel of the user's line that started backward (the first frame
    outside tracegrad), so the warning points there and not into the engine."""
    level, frame = 2, sys._getframe(2)  # 1: warn_forward_traceback, 2: its caller
    while frame is not None and _is_internal(frame.f_code.co_filename):
        frame = frame.f_back
        level += 1
    return level if frame is not None else 2


def _traceback_messages(node) -> list[str]:
    messages = []
    metadata = node._metadata or {}
    stack = metadata.get(_TRACE_KEY)
    if stack is None:
        messages.append(
            f"Error detected in {node.name()}. No forward pass information available. "
            "Enable detect anomaly during forward pass for more information.")
        return messages
    messages.append(f"Error detected in {node.name()}. Traceback of forward call that "
                    f"caused the error:\n{''.join(stack)}")
    parent = metadata.get(_PARENT_KEY)
    while parent is not None:
        parent_metadata = parent._metadata or {}
        parent_stack = parent_metadata.get(_TRACE_KEY)
        if parent_stack is None:
            messages.append(
                f"Error detected in {parent.name()}. No forward pass information available. "
                "Enable detect anomaly during forward pass for more information.")
        else:
            messages.append(
                f"\n\nPrevious calculation was induced by {parent.name()}. Traceback of "
                f"forward call that induced the previous calculation:\n{''.join(parent_stack)}")
        parent = parent_metadata.get(_PARENT_KEY)
    return messages
