"""``torch.backends.cudnn``'s switches: kept so programs can set and read them, with no
effect (tracegrad computes with NumPy and CuPy, which have no cuDNN switches).

>>> import tracegrad as torch
>>> torch.backends.cudnn.benchmark = True
>>> torch.backends.cudnn.is_available()
False
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    return False


def version() -> None:
    return None


def is_acceptable(tensor) -> bool:
    return False


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
          allow_tf32=True) -> Iterator[None]:
    """Set the switches for a block (torch's ``with cudnn.flags(...)``), then restore."""
    module = sys.modules[__name__]
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    previous = {name: getattr(module, name) for name in names}
    values = dict(zip(names, (enabled, benchmark, benchmark_limit, deterministic, allow_tf32)))
    for name, value in values.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in previous.items():
            setattr(module, name, value)
