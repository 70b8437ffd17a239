"""Array backends: NumPy on the CPU, CuPy on CUDA (imported only when a CUDA tensor is made).

An op never names numpy or cupy: it asks ``array_module(array)`` for the module that owns
its arrays (``xp``, by convention) and calls the same functions on it. A new backend plugs in
here without touching the ops.
"""

from __future__ import annotations

import numpy as np

from ..errors import DeviceError


class device:  # noqa: N801 - named as torch.device
    """Where a tensor lives: ``device("cpu")``, ``device("cuda")``, ``device("cuda", 0)``."""

    __slots__ = ("type", "index")

    def __init__(self, type: str | device, index: int | None = None) -> None:  # noqa: A002
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if not isinstance(type, str):
            raise TypeError(f"device() expects a string like 'cpu' or 'cuda:0', got {type!r}")
        name, _, number = type.partition(":")
        if name not in ("cpu", "cuda"):
            raise DeviceError(
                f"Expected one of cpu, cuda device type at start of device string: {type}")
        if number:
            if not number.isdigit():
                raise DeviceError(f"Invalid device string: '{type}'")
            index = int(number)
        if name == "cuda" and index is None:
            index = 0
        self.type, self.index = name, index

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))


CPU = device("cpu")


def as_device(value) -> device:
    if value is None:
        return CPU
    if isinstance(value, device):
        return value
    if isinstance(value, int):
        return device("cuda", value)
    return device(value)


def array_module(array):
    """numpy for numpy arrays, cupy for cupy arrays: the `xp` an op computes with."""
    if type(array) is np.ndarray or isinstance(array, np.generic):
        return np
    return cuda.module_of(array)


def device_of(array) -> device:
    if type(array) is np.ndarray or isinstance(array, np.generic):
        return CPU
    return cuda.device_of(array)


def module_for(target: device):
    """The array module that makes arrays on `target`."""
    if target.type == "cpu":
        return np
    return cuda.require(target)


def to_device(array, target: device):
    """Copy `array` to `target` (no copy when it already lives there)."""
    if target.type == "cpu":
        if type(array) is np.ndarray:
            return array
        from . import cuda

        return cuda.to_host(array)
    from . import cuda

    return cuda.to_device(array, target)


def check_on_host_later(array, check) -> None:
    """Call ``check(host_array)`` once ``array`` (a small CuPy array) reaches the host, and
    raise the exception it returns, if any, without waiting for the GPU now: at the next
    ``check_on_host_later`` after the GPU has computed it, or at the next host read."""
    cuda.check_later(array, check)


# torch.backends' switch modules that programs set and read (no effect here); cuda.py
# (the CuPy backend) also carries torch.backends.cuda's switches. None imports cupy.
from . import cuda, cudnn, mkldnn, mps, openmp  # noqa: E402
from .flags import cpu, mkl, opt_einsum  # noqa: E402


def __getattr__(name: str):
    from .._unsupported import missing_attribute

    raise missing_attribute("torch.backends", name, "module 'tracegrad.backends'")


def to_host(array) -> np.ndarray:
    """A numpy array with the same values, for the tracer and for .numpy()."""
    if type(array) is np.ndarray:
        return array
    return to_device(array, CPU)
