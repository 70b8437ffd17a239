"""``tracegrad.cuda``: is a CUDA device usable (CuPy installed and a GPU visible)?"""

from __future__ import annotations


def is_available() -> bool:
    from .backends import cuda

    return cuda.is_available()


def device_count() -> int:
    from .backends import cuda

    return cuda.device_count()


def manual_seed(seed: int) -> None:
    from .factories import manual_seed as seed_all

    seed_all(seed)


manual_seed_all = manual_seed


def synchronize() -> None:
    if is_available():
        from .backends import cuda

        cuda._load().cuda.Device().synchronize()
        cuda.raise_pending(wait=True)
