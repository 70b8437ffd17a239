"""``tracegrad.utils``: ``tracegrad.utils.data`` (datasets, samplers, DataLoader)."""

from __future__ import annotations

from . import data

__all__ = ["data"]


def __getattr__(name: str):
    if name.startswith("_"):
        raise AttributeError(f"module 'tracegrad.utils' has no attribute '{name}'")
    raise AttributeError(
        f"tracegrad does not implement torch.utils.{name} (module 'tracegrad.utils' has no "
        f"attribute '{name}'). A script that uses it can still be observed on real PyTorch: "
        "keep `import torch` and run it with `tracegrad run`.")
