"""``tracegrad.utils.data``: datasets, samplers, ``DataLoader`` and ``default_collate``,
as torch.utils.data (loading runs in the main process).

>>> import tracegrad as torch
>>> from tracegrad.utils.data import DataLoader, TensorDataset
>>> data = TensorDataset(torch.arange(6.0).view(3, 2), torch.tensor([0, 1, 0]))
>>> [tuple(x.shape) for x, y in DataLoader(data, batch_size=2)]
[(2, 2), (1, 2)]
"""

from __future__ import annotations

from ._collate import default_collate, default_convert
from .dataloader import DataLoader, get_worker_info
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
    "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset",
    "Subset", "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler",
    "default_collate", "default_convert", "get_worker_info", "random_split",
]


def __getattr__(name: str):
    if name.startswith("_"):
        raise AttributeError(f"module 'tracegrad.utils.data' has no attribute '{name}'")
    raise AttributeError(
        f"tracegrad does not implement torch.utils.data.{name} (module "
        f"'tracegrad.utils.data' has no attribute '{name}'). A script that uses it can still "
        "be observed on real PyTorch: keep `import torch` and run it with `tracegrad run`.")
