"""``torch.backends.openmp``: NumPy's BLAS threads on its own; reported as available."""

from __future__ import annotations


def is_available() -> bool:
    return True
