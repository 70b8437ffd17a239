"""tracegrad.autograd: Function, backward/grad, grad modes, anomaly mode, gradcheck, and
the graph API (``tracegrad.autograd.graph``)."""

from __future__ import annotations

from . import anomaly as anomaly_mode  # torch.autograd.anomaly_mode
from . import (
    events,  # noqa: F401
    functional,
    grad_mode,
    graph,
)
from .anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .engine import backward, grad
from .function import Function, once_differentiable
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_multithreading_enabled,
    no_grad,
    set_grad_enabled,
    set_multithreading_enabled,
)
from .gradcheck import gradcheck, gradgradcheck
from .node import Node
from .variable import Variable

__all__ = [
    "Function", "Node", "Variable", "anomaly_mode", "backward", "detect_anomaly",
    "enable_grad", "functional", "grad", "grad_mode", "gradcheck", "gradgradcheck", "graph",
    "inference_mode", "is_anomaly_enabled", "is_multithreading_enabled", "no_grad",
    "once_differentiable", "set_detect_anomaly", "set_grad_enabled",
    "set_multithreading_enabled",
]
