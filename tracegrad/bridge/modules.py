"""nn.Module scope and parameter names for torch programs.

While recording, two global module hooks (removed when the recording stops) keep the stack
of modules being called: a node records the innermost one's qualified name (``"0"``,
``"encoder.layer1"``; the class name for the module called from outside any other), as
tracegrad's own nn does. When a module is called from outside any other, its
``named_parameters()`` and ``named_buffers()`` name those tensors (``"0.weight"``).

Outside a recording, ``names_from_frame`` finds the modules in the caller's variables and
names their parameters the same way, for ``from_tensor`` / ``graph_text`` / ``to_dot``.
"""

from __future__ import annotations

import weakref

import torch
from torch.nn.modules import module as module_hooks


def learn_names(root, names: dict) -> None:
    """Add ``id(tensor) -> (weakref, qualified name)`` for ``root``'s parameters and
    buffers; names already known are kept (the first module that owns a tensor names it)."""
    for items in (root.named_parameters(), root.named_buffers()):
        for name, tensor in items:
            if id(tensor) not in names:
                names[id(tensor)] = (weakref.ref(tensor), name)


def names_from_frame(frame, names: dict) -> None:
    """Name the parameters of the nn.Modules bound to variables in ``frame`` (locals, then
    globals); the module with the most parameters names first, so ``model`` wins over
    ``layer = model[0]``."""
    if frame is None:
        return
    modules = []
    seen = set()
    for scope in (frame.f_locals, frame.f_globals):
        for variable, value in list(scope.items()):
            if isinstance(value, torch.nn.Module) and id(value) not in seen \
                    and not variable.startswith("_"):
                seen.add(id(value))
                modules.append(value)
    modules.sort(key=lambda module: -sum(1 for _ in module.parameters()))
    for module in modules:
        learn_names(module, names)


class ModuleScopes:
    """The stack of modules being called, kept by global module hooks while recording."""

    def __init__(self, registry) -> None:
        self.registry = registry
        self.stack: list[str] = []
        self._names: dict[int, tuple] = {}  # id(module) -> (weakref, scope name)
        self._roots: dict[int, object] = {}  # id(root module) -> weakref, names learned
        self._handles: tuple = ()

    def start(self) -> None:
        self._handles = (
            module_hooks.register_module_forward_pre_hook(self._enter),
            module_hooks.register_module_forward_hook(self._leave, always_call=True))

    def stop(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = ()
        self.stack.clear()

    def current(self) -> str | None:
        return self.stack[-1] if self.stack else None

    def _enter(self, module, args) -> None:
        if not self.stack:
            self._learn(module)
        entry = self._names.get(id(module))
        if entry is not None and entry[0]() is module:
            name = entry[1]
        else:
            name = type(module).__name__
        self.stack.append(name)

    def _leave(self, module, args, output) -> None:
        if self.stack:
            self.stack.pop()

    def _learn(self, root) -> None:
        """A module called from outside any other: its submodules' and tensors' names."""
        known = self._roots.get(id(root))
        if known is not None and known() is root:
            return
        self._roots[id(root)] = weakref.ref(root)
        for name, module in root.named_modules():
            self._names[id(module)] = (weakref.ref(module), name or type(module).__name__)
        learn_names(root, self.registry.names)
