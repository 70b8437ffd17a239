"""``torch.backends.mkldnn``'s switches: kept, with no effect (NumPy uses its own BLAS)."""

from __future__ import annotations

enabled = True
deterministic = False


def is_available() -> bool:
    return False
