"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing_extensions import Self

from ..tensor import Tensor
from .module import Module, add_indent
from .parameter import Parameter


def _index(index, length: int, owner: str) -> int:
    index = operator.index(index)
    if not -length <= index < length:
        raise IndexError(f"index {index} is out of range")
    return index + length if index < 0 else index


class Sequential(Module):
    """Modules applied one after another; children are named "0", "1", ... (or by the
    keys of an OrderedDict).

    >>> import tracegrad as torch
    >>> model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU())
    >>> [name for name, _ in model.named_parameters()]
    ['0.weight', '0.bias']
    """

    def __init__(self, *modules: Module) -> None:
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, module in modules[0].items():
                self.add_module(name, module)
        else:
            for index, module in enumerate(modules):
                self.add_module(str(index), module)

    def forward(self, input: Any) -> Any:
        for module in self._modules.values():
            input = module(input)
        return input

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, index: int | slice) -> Module:
        modules = list(self._modules.items())
        if isinstance(index, slice):
            return Sequential(OrderedDict(modules[index]))
        return modules[_index(index, len(modules), "Sequential")][1]

    def __setitem__(self, index: int, module: Module) -> None:
        key = list(self._modules)[_index(index, len(self._modules), "Sequential")]
        self.add_module(key, module)

    def __delitem__(self, index: int | slice) -> None:
        keys = list(self._modules)
        doomed = keys[index] if isinstance(index, slice) else [keys[_index(index, len(keys),
                                                                             "Sequential")]]
        for key in doomed:
            del self._modules[key]
            object.__delattr__(self, key)
        kept = list(self._modules.items())
        self._modules.clear()
        for position, (_, module) in enumerate(kept):  # renumber, as torch does
            self.add_module(str(position), module)

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> Sequential:
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        modules = list(self._modules.values())
        if not -len(modules) <= index <= len(modules):
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += len(modules)
        modules.insert(index, module)
        self._modules.clear()
        for position, item in enumerate(modules):
            self.add_module(str(position), item)
        return self

    def pop(self, key: int | slice) -> Module:
        module = self[key]
        del self[key]
        return module

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(  # noqa: TRY004 - torch's class
                "add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        return Sequential(*self, *other)

    def __iadd__(self, other: Sequential) -> Self:
        return self.extend(other)


class ModuleList(Module):
    """A list of modules whose parameters the parent sees."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got "
                            + type(modules).__name__)
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules.clear()
        for position, item in enumerate(modules):
            self.add_module(str(position), item)

    def pop(self, index: int = -1) -> Module:
        module = self[index]
        del self[index]
        return module

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, index: int | slice):
        modules = list(self._modules.values())
        if isinstance(index, slice):
            return ModuleList(modules[index])
        return modules[_index(index, len(modules), "ModuleList")]

    def __setitem__(self, index: int, module: Module) -> None:
        self.add_module(str(_index(index, len(self._modules), "ModuleList")), module)

    def __delitem__(self, index: int | slice) -> None:
        modules = list(self._modules.values())
        if isinstance(index, slice):
            del modules[index]
        else:
            del modules[_index(index, len(modules), "ModuleList")]
        for key in list(self._modules):
            object.__delattr__(self, key)
        self._modules.clear()
        for position, item in enumerate(modules):
            self.add_module(str(position), item)

    def __iadd__(self, modules: Iterable[Module]) -> Self:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList(list(self) + list(other))

    def __repr__(self) -> str:
        """Consecutive identical modules fold into one line: ``(0-2): 3 x Linear(...)``."""
        reprs = [repr(module) for module in self]
        if not reprs:
            return self._get_name() + "()"
        blocks: list[list] = []
        for index, text in enumerate(reprs):
            if blocks and blocks[-1][2] == text:
                blocks[-1][1] = index
            else:
                blocks.append([index, index, text])
        lines = []
        for start, end, text in blocks:
            head = f"({start}): " if start == end else f"({start}-{end}): {end - start + 1} x "
            lines.append(add_indent(head + text, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of modules whose parameters the parent sees."""

    def __init__(self, modules: Mapping[str, Module] | Iterable | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]
        object.__delattr__(self, key)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def clear(self) -> None:
        for key in list(self._modules):
            del self[key]

    def pop(self, key: str) -> Module:
        module = self[key]
        del self[key]
        return module

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules) -> None:
        items = modules.items() if isinstance(modules, Mapping) else modules
        for entry in items:
            if isinstance(modules, Mapping):
                key, module = entry
            else:
                if not isinstance(entry, (tuple, list)) or len(entry) != 2:
                    raise ValueError("ModuleDict update sequence element has wrong length; 2 "
                                     "is required")
                key, module = entry
            self[key] = module


def _parameter_line(key, value) -> str:
    if not isinstance(value, Tensor):
        return f"  ({key}): Object of type: {type(value).__name__}"
    size = "x".join(str(s) for s in value.shape)
    device = f" ({value.device})" if value.device.type == "cuda" else ""
    kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
    return f"  ({key}): {kind} containing: [tracegrad.{value.dtype.name} of size {size}{device}]"


class ParameterList(Module):
    """A list of parameters the parent module registers (as "0", "1", ...)."""

    def __init__(self, values: Iterable | None = None) -> None:
        super().__init__()
        object.__setattr__(self, "_size", 0)
        if values is not None:
            self.extend(values)

    def _key(self, index: int) -> str:
        return str(_index(index, self._size, "ParameterList"))

    def __getitem__(self, index: int | slice):
        if isinstance(index, slice):
            return ParameterList([self[i] for i in range(self._size)[index]])
        return getattr(self, self._key(index))

    def __setitem__(self, index: int, value) -> None:
        self._set(self._key(index), value)

    def _set(self, key: str, value) -> None:
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        if isinstance(value, Parameter):
            self.register_parameter(key, value)
        else:
            object.__setattr__(self, key, value)

    def __len__(self) -> int:
        return self._size

    def __iter__(self):
        return (self[i] for i in range(self._size))

    def __iadd__(self, values: Iterable) -> Self:
        return self.extend(values)

    def append(self, value) -> ParameterList:
        key = str(self._size)
        object.__setattr__(self, "_size", self._size + 1)
        self._set(key, value)
        return self

    def extend(self, values: Iterable) -> ParameterList:
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(_parameter_line(index, value) for index, value in enumerate(self))


class ParameterDict(Module):
    """A dict of parameters the parent module registers under their keys."""

    def __init__(self, parameters: Mapping | Iterable | None = None) -> None:
        super().__init__()
        object.__setattr__(self, "_keys", {})
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str):
        return getattr(self, key)

    def __setitem__(self, key: str, value) -> None:
        self._keys[key] = None
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        if isinstance(value, Parameter):
            self.register_parameter(key, value)
        else:
            object.__setattr__(self, key, value)

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def keys(self):
        return list(self._keys)

    def items(self):
        return [(key, self[key]) for key in self._keys]

    def values(self):
        return [self[key] for key in self._keys]

    def get(self, key: str, default=None):
        return self[key] if key in self._keys else default

    def pop(self, key: str):
        value = self[key]
        del self[key]
        return value

    def clear(self) -> None:
        for key in list(self._keys):
            del self[key]

    def update(self, parameters) -> None:
        items = parameters.items() if isinstance(parameters, Mapping) else parameters
        for key, value in items:
            self[key] = value

    def extra_repr(self) -> str:
        lines = []
        for key, value in self.items():
            if isinstance(value, Tensor):
                size = "x".join(str(s) for s in value.shape)
                kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
                lines.append(f"  ({key}): {kind} containing: [{_typename(value)} of size "
                             f"{size}]")
            else:
                lines.append(f"  ({key}): Object of type: {type(value).__name__}")
        return "\n".join(lines)


def _typename(tensor: Tensor) -> str:
    """``tracegrad.FloatTensor``: torch.typename's answer, named as our reprs name dtypes."""
    from .._legacy import type_name

    return type_name(tensor).replace("torch.", "tracegrad.", 1)
