"""``tracegrad.nn.utils``: gradient clipping, parameters <-> one vector, and
``nn.utils.rnn.pad_sequence``.

>>> import tracegrad as torch
>>> w = torch.ones(4, requires_grad=True)
>>> (w * 3).sum().backward()
>>> torch.nn.utils.clip_grad_norm_([w], max_norm=1.0)
tensor(6.)
>>> round(w.grad.norm().item(), 4)
1.0
"""

from __future__ import annotations

from . import rnn
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "get_total_norm",
           "parameters_to_vector", "rnn", "vector_to_parameters"]


def __getattr__(name: str):
    if name.startswith("_"):
        raise AttributeError(f"module 'tracegrad.nn.utils' has no attribute '{name}'")
    raise AttributeError(
        f"tracegrad does not implement torch.nn.utils.{name} (module 'tracegrad.nn.utils' has "
        f"no attribute '{name}'). A script that uses it can still be observed on real "
        "PyTorch: keep `import torch` and run it with `tracegrad run`.")
