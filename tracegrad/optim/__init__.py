"""``tracegrad.optim``: Optimizer, SGD, Adam -- torch.optim's names and update rules.

>>> import tracegrad as torch
>>> model = torch.nn.Linear(3, 1)
>>> opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
>>> model(torch.ones(2, 3)).sum().backward()
>>> opt.step(); opt.zero_grad()
>>> model.weight.grad is None
True
"""

from __future__ import annotations

from .adam import Adam
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["SGD", "Adam", "Optimizer"]
