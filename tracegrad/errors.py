"""Error classes. Each subclasses the built-in PyTorch would raise, so `except` clauses
written for PyTorch keep working (`except RuntimeError`, `except ValueError`)."""

from __future__ import annotations


class TracegradError(Exception):
    """Base of every error tracegrad raises on purpose."""


class ShapeError(TracegradError, RuntimeError):
    """Shapes that cannot work together (PyTorch raises RuntimeError for these)."""


class DTypeError(TracegradError, RuntimeError):
    """A dtype an op cannot take."""


class DeviceError(TracegradError, RuntimeError):
    """Tensors on different devices, or a device that is not available."""


class AutogradError(TracegradError, RuntimeError):
    """Misuse of autograd: backward twice, non-scalar backward, bad Function backward."""


class InplaceError(AutogradError):
    """A tensor needed for backward was modified in place, or a leaf was."""


class TraceFileError(TracegradError, ValueError):
    """A .tgtrace file that cannot be read: truncated, corrupted, inconsistent, over a size
    limit, or from a newer version.

    Beside the message: ``file`` (the path as given), ``where`` (the place in the file, a
    JSON path such as ``trace.passes[3].steps[7].node``, when the problem has one) and
    ``limit`` (the name of the ``TraceLimits`` field the file went over, if that is why).
    """

    def __init__(self, message: str, *, file: str | None = None, where: str | None = None,
                 limit: str | None = None) -> None:
        super().__init__(message)
        self.file = file
        self.where = where
        self.limit = limit


class ConditionError(TracegradError, ValueError):
    """A debugger "run until" condition that cannot be parsed (`norm >`, `op`)."""


class GraphvizNotFoundError(TracegradError, RuntimeError):
    """Rendering needs Graphviz's `dot` program and it is not on PATH."""


class GraphTooLargeError(TracegradError, ValueError):
    """A graph too large for `dot` to lay out in reasonable time, even collapsed."""


def describe_tensor(tensor) -> str:
    """`float32 [64, 100]`-style description used inside messages."""
    return f"{tensor.dtype.name} {list(tensor.shape)}"
