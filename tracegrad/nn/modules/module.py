"""``nn.modules.module``: Module and the global hooks every module call runs.

>>> import tracegrad as torch
>>> calls = []
>>> handle = torch.nn.modules.module.register_module_forward_pre_hook(
...     lambda module, args: calls.append(type(module).__name__))
>>> _ = torch.nn.Tanh()(torch.zeros(1)); handle.remove(); calls
['Tanh']
"""

from __future__ import annotations

from ..hooks import (
    RemovableHandle,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
)
from ..module import Module

__all__ = ["Module", "RemovableHandle", "register_module_forward_hook",
           "register_module_forward_pre_hook", "register_module_full_backward_hook",
           "register_module_full_backward_pre_hook"]
