"""``tracegrad.nn``: Module, Parameter, layers, activations, losses -- torch.nn's names.

>>> import tracegrad as torch
>>> model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
>>> loss = torch.nn.CrossEntropyLoss()(model(torch.randn(5, 4)), torch.tensor([0, 1, 2, 0, 1]))
>>> loss.backward()
>>> model[0].weight.grad.shape
tracegrad.Size([8, 4])
"""

from __future__ import annotations

from . import functional, init
from .container import ModuleList, Sequential
from .layers import Flatten, Identity, Linear, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .loss import CrossEntropyLoss, MSELoss, NLLLoss
from .module import Module
from .parameter import Parameter

__all__ = [
    "CrossEntropyLoss", "Flatten", "Identity", "Linear", "LogSoftmax", "MSELoss", "Module",
    "ModuleList", "NLLLoss", "Parameter", "ReLU", "Sequential", "SiLU", "Sigmoid", "Softmax",
    "Tanh", "functional", "init",
]
