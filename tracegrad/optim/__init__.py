"""``tracegrad.optim``: torch.optim's optimizers and learning-rate schedules, with the same
update rules, defaults, state dicts and errors.

>>> import tracegrad as torch
>>> model = torch.nn.Linear(3, 1)
>>> opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
>>> model(torch.ones(2, 3)).sum().backward()
>>> opt.step(); opt.zero_grad()
>>> model.weight.grad is None
True
"""

from __future__ import annotations

from .._unsupported import missing_attribute
from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD

__all__ = ["ASGD", "LBFGS", "SGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "NAdam",
           "Optimizer", "RAdam", "RMSprop", "Rprop", "lr_scheduler"]


def __getattr__(name: str):
    raise missing_attribute("torch.optim", name, "module 'tracegrad.optim'")
