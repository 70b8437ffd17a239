"""tracegrad.autograd: Function, backward/grad, grad modes, anomaly mode, gradcheck."""

from __future__ import annotations

from . import events, functional  # noqa: F401
from .anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .engine import backward, grad
from .function import Function, once_differentiable
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from .gradcheck import gradcheck, gradgradcheck
from .node import Node
from .variable import Variable

__all__ = [
    "Function", "Node", "Variable", "backward", "detect_anomaly", "enable_grad", "grad",
    "gradcheck", "gradgradcheck", "inference_mode", "is_anomaly_enabled", "no_grad",
    "once_differentiable", "set_detect_anomaly", "set_grad_enabled",
]
