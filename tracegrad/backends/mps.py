"""``torch.backends.mps``: Apple's Metal backend, which tracegrad does not have."""

from __future__ import annotations


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False


def is_macos13_or_newer(minor: int = 0) -> bool:
    return False
