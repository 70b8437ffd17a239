"""Reading the graph behind a torch tensor after the fact, without a recording
(``from_tensor``, ``to_dot``, ``render``, ``graph_text`` and the graph assertions).

The adapters come from a registry of their own that holds the torch nodes while the graph
is read (so a node's identity cannot change meanwhile) and registers no hook. Parameters
are named after the nn.Modules in the caller's variables (``"0.weight"``).
"""

from __future__ import annotations

from ..tracing.graph import gc_paused
from ..tracing.names import user_frame
from .adapters import Registry, TorchTensor
from .modules import names_from_frame


def adapters_for_walk(tensors: tuple) -> tuple[TorchTensor, ...]:
    """Adapters for ``tensors`` over one new registry (shared parts of their graphs are one)."""
    registry = Registry()
    names_from_frame(user_frame(1), registry.names)
    adapters = []
    with gc_paused():
        for tensor in tensors:
            adapter = registry.tensor(tensor)
            adapter.__dict__["_held"] = tensor  # the walk describes it: keep it that long
            adapter.grad_fn  # noqa: B018 - makes the adapters of its graph, in one go
            adapters.append(adapter)
    return tuple(adapters)
