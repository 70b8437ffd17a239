"""Error classes. Each subclasses the built-in PyTorch would raise, so `except` clauses
written for PyTorch keep working (`except RuntimeError`, `except ValueError`)."""

from __future__ import annotations


class TracegradError(Exception):
    """Base of every error tracegrad raises on purpose."""


class ShapeError(TracegradError, RuntimeError):
    """Shapes that cannot work together (PyTorch raises RuntimeError for these)."""


class DTypeError(TracegradError, RuntimeError):
    """A dtype an op cannot take."""


class UnsupportedDTypeError(DTypeError, NotImplementedError):
    """An op that has no kernel for a dtype ("... not implemented for 'Float'"): PyTorch
    raises NotImplementedError, itself a RuntimeError."""


class DeviceError(TracegradError, RuntimeError):
    """Tensors on different devices, or a device that is not available."""


class CudaUnavailableError(DeviceError, AssertionError):
    """A CUDA query without a usable GPU. torch raises AssertionError ("Torch not compiled
    with CUDA enabled") on a CPU build and RuntimeError on a CUDA build without a GPU; this
    is both, so either ``except`` clause catches it."""


class AutogradError(TracegradError, RuntimeError):
    """Misuse of autograd: backward twice, non-scalar backward, bad Function backward."""


class InplaceError(AutogradError):
    """A tensor needed for backward was modified in place, or a leaf was."""


class ArgumentTypeError(TracegradError, TypeError):
    """An argument of a type the function does not take (PyTorch raises TypeError)."""


class ArgumentValueError(TracegradError, ValueError):
    """An argument value PyTorch rejects with ValueError."""


class OutOfRangeError(TracegradError, IndexError):
    """An index or dimension outside a tensor (PyTorch raises IndexError)."""


class InvalidValueError(TracegradError, RuntimeError):
    """A value an op cannot take: a zero step, an integer division by zero, a size that
    does not fit (PyTorch raises RuntimeError)."""


class LinAlgError(TracegradError, RuntimeError):
    """A matrix a decomposition cannot take: singular, not positive-definite (torch's
    ``torch.linalg.LinAlgError``, a RuntimeError)."""


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
