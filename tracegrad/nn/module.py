"""Module: the base class of layers and models, with parameters, buffers and children.

Each registered child and parameter learns its qualified name (its attribute path from the
root module, e.g. ``encoder.0`` or ``encoder.0.weight``) when it is registered, so that
``__call__`` can push the module's scope for traces at no per-call cost.
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Iterator
from typing import Any

from ..autograd import events, module_scope
from ..autograd.grad_mode import state
from ..tensor import Tensor
from . import hooks as _hooks
from .parameter import Parameter


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys it did not find and the ones it did not
    expect (both empty after a strict load)."""

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


IncompatibleKeys = _IncompatibleKeys


class Module:
    """Base class of every layer and model.

    Assigning a ``Parameter`` or a ``Module`` as an attribute registers it; ``__call__``
    runs ``forward`` (and, while tracing or in anomaly mode, tags the nodes it records with
    the module's qualified name).

    >>> import tracegrad as torch
    >>> class Net(torch.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.layer1 = torch.nn.Linear(3, 2)
    ...     def forward(self, x):
    ...         return self.layer1(x).relu()
    >>> [name for name, _ in Net().named_parameters()]
    ['layer1.weight', 'layer1.bias']
    """

    training: bool
    _scope_name: str = ""  # qualified name from the root; "" for a root module

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args or kwargs:
            raise TypeError(
                f"{type(self).__name__}.__init__() got unexpected arguments; Module.__init__ "
                "takes none. Hint: call super().__init__() without arguments.")
        set_plain = object.__setattr__
        set_plain(self, "training", True)
        set_plain(self, "_parameters", OrderedDict())
        set_plain(self, "_buffers", OrderedDict())
        set_plain(self, "_non_persistent", set())
        set_plain(self, "_modules", OrderedDict())
        set_plain(self, "_forward_pre_hooks", OrderedDict())
        set_plain(self, "_forward_pre_hooks_with_kwargs", set())
        set_plain(self, "_forward_hooks", OrderedDict())
        set_plain(self, "_forward_hooks_with_kwargs", set())
        set_plain(self, "_backward_pre_hooks", OrderedDict())
        set_plain(self, "_backward_hooks", OrderedDict())

    # -- running -----------------------------------------------------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._hooked or _hooks.any_global_hooks():
            return self._call_with_hooks(args, kwargs)
        # The scope goes on a node with its site (function._note_site): only while
        # someone wants sites (Listener.wants_sites) or anomaly mode is on.
        if state.anomaly or events.sites:
            module_scope.push(self._scope_name or type(self).__name__, type(self).__name__)
            try:
                return self.forward(*args, **kwargs)
            finally:
                module_scope.pop()
        return self.forward(*args, **kwargs)

    _hooked = False  # set once any hook is registered: __call__'s one check otherwise

    def _call_with_hooks(self, args: tuple, kwargs: dict) -> Any:
        """``__call__`` with torch's hook order: global then own forward pre-hooks, the
        backward hooks' input wrapping, forward, global then own forward hooks, the backward
        hooks' output wrapping."""
        pre_hooks = [(hook, False) for hook in _hooks.global_forward_pre_hooks.values()]
        pre_hooks += [(hook, key in self._forward_pre_hooks_with_kwargs)
                      for key, hook in self._forward_pre_hooks.items()]
        for hook, with_kwargs in pre_hooks:
            if with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(
                            "forward pre-hook must return None or a tuple of (new_args, "
                            f"new_kwargs), but got {result}.")
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        backward_hooks = (list(_hooks.global_backward_hooks.values())
                          + list(self._backward_hooks.values()))
        backward_pre_hooks = (list(_hooks.global_backward_pre_hooks.values())
                              + list(self._backward_pre_hooks.values()))
        backward = None
        if backward_hooks or backward_pre_hooks:
            backward = _hooks.BackwardHook(self, backward_hooks, backward_pre_hooks)
            args = backward.wrap_inputs(args)
        if state.anomaly or events.sites:  # (see __call__)
            module_scope.push(self._scope_name or type(self).__name__)
            try:
                output = self.forward(*args, **kwargs)
            finally:
                module_scope.pop()
        else:
            output = self.forward(*args, **kwargs)
        forward_hooks = [(hook, key in _hooks.global_forward_hooks_with_kwargs)
                         for key, hook in _hooks.global_forward_hooks.items()]
        forward_hooks += [(hook, key in self._forward_hooks_with_kwargs)
                          for key, hook in self._forward_hooks.items()]
        for hook, with_kwargs in forward_hooks:
            result = hook(self, args, kwargs, output) if with_kwargs else hook(self, args, output)
            if result is not None:
                output = result
        if backward is not None:
            output = backward.wrap_outputs(output)
        return output

    # -- hooks -------------------------------------------------------------------------
    def _hook_registered(self) -> None:
        object.__setattr__(self, "_hooked", True)

    def register_forward_pre_hook(self, hook, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> _hooks.RemovableHandle:
        """``hook(module, args)`` (``hook(module, args, kwargs)`` with ``with_kwargs``) runs
        before ``forward``; a returned value replaces the arguments."""
        handle = _hooks.add_hook(self._forward_pre_hooks, hook, prepend,
                                 self._forward_pre_hooks_with_kwargs)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs.add(handle.id)
        self._hook_registered()
        return handle

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> _hooks.RemovableHandle:
        """``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with
        ``with_kwargs``) runs after ``forward``; a returned value replaces the output.

        >>> import tracegrad as torch
        >>> layer = torch.nn.Linear(2, 1)
        >>> shapes = []
        >>> handle = layer.register_forward_hook(lambda m, args, out: shapes.append(out.shape))
        >>> _ = layer(torch.ones(3, 2)); handle.remove(); shapes
        [tracegrad.Size([3, 1])]
        """
        handle = _hooks.add_hook(self._forward_hooks, hook, prepend,
                                 self._forward_hooks_with_kwargs)
        if with_kwargs:
            self._forward_hooks_with_kwargs.add(handle.id)
        self._hook_registered()
        return handle

    def register_full_backward_pre_hook(self, hook, prepend: bool = False
                                        ) -> _hooks.RemovableHandle:
        """``hook(module, grad_output)`` runs when the gradients with respect to the
        module's outputs are known; a returned tuple replaces them."""
        handle = _hooks.add_hook(self._backward_pre_hooks, hook, prepend)
        self._hook_registered()
        return handle

    def register_full_backward_hook(self, hook, prepend: bool = False
                                    ) -> _hooks.RemovableHandle:
        """``hook(module, grad_input, grad_output)`` runs when the gradients with respect to
        the module's inputs are known; a returned tuple replaces ``grad_input``."""
        handle = _hooks.add_hook(self._backward_hooks, hook, prepend)
        self._hook_registered()
        return handle

    def register_backward_hook(self, hook) -> _hooks.RemovableHandle:
        raise NotImplementedError(
            "tracegrad does not implement the deprecated Module.register_backward_hook (its "
            "gradients depend on the last op inside the module); use "
            "register_full_backward_hook.")

    # -- registration ------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__ and isinstance(value, (Parameter, Module)):
            raise AttributeError(
                f"cannot assign {type(value).__name__} '{name}' before Module.__init__() "
                f"call on {type(self).__name__}. Hint: call super().__init__() first.")
        if isinstance(value, Parameter):
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            self.add_module(name, value)
        elif name in self._parameters:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' of "
                    f"{type(self).__name__} (tracegrad.nn.Parameter or None expected). "
                    f"Hint: wrap it: nn.Parameter(value).")
            self._parameters[name] = None
            object.__setattr__(self, name, None)
        elif name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as buffer '{name}' of "
                    f"{type(self).__name__} (tracegrad.Tensor or None expected)")
            self._buffers[name] = value
            object.__setattr__(self, name, value)
        else:
            if name in self.__dict__.get("_modules", ()):
                del self._modules[name]
            object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        for registry in (self._parameters, self._buffers, self._modules):
            registry.pop(name, None)
        self._non_persistent.discard(name)
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register ``param`` as ``self.<name>``; ``None`` registers an absent parameter."""
        _check_name(self, name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' of "
                f"{type(self).__name__} (tracegrad.nn.Parameter or None required)")
        self._parameters[name] = param
        object.__setattr__(self, name, param)
        if param is not None:
            param.name = _join(self._scope_name, name)

    def register_buffer(self, name: str, tensor: Tensor | None,
                        persistent: bool = True) -> None:
        """A tensor that is state but not a parameter (moved by ``to``, saved in
        ``state_dict`` unless ``persistent=False``)."""
        _check_name(self, name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' of "
                f"{type(self).__name__} (tracegrad.Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)
        object.__setattr__(self, name, tensor)
        if tensor is not None and tensor.name is None:
            tensor.name = _join(self._scope_name, name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Register ``module`` as the child ``name``."""
        _check_name(self, name, "module")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._modules[name] = module
        object.__setattr__(self, name, module)
        if module is not None:
            module._rename(_join(self._scope_name, name))

    register_module = add_module

    def _rename(self, scope_name: str) -> None:
        """Give this module and everything under it names qualified by ``scope_name``."""
        previous = self._scope_name
        object.__setattr__(self, "_scope_name", scope_name)
        for name, param in self._parameters.items():
            if param is not None:
                param.name = _join(scope_name, name)
        for name, buffer in self._buffers.items():
            # a buffer keeps a name the user gave it; the one register_buffer gave follows
            # the module (features.1.running_mean, as torch's named_buffers says)
            if buffer is not None and buffer.name == _join(previous, name):
                buffer.name = _join(scope_name, name)
        for name, child in self._modules.items():
            if child is not None:
                child._rename(_join(scope_name, name))

    # -- walking -----------------------------------------------------------------------
    def named_modules(self, prefix: str = "", memo: set | None = None,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        if memo is None:
            memo = set()
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(_join(prefix, name), memo, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen = set()
        for name, child in self._modules.items():
            if child is not None and child not in seen:
                seen.add(child)
                yield name, child

    def children(self) -> Iterator[Module]:
        for _, child in self.named_children():
            yield child

    def apply(self, fn) -> Module:
        """Call ``fn`` on every submodule (children first) and on this module.

        >>> import tracegrad as torch
        >>> names = []
        >>> _ = torch.nn.Sequential(torch.nn.ReLU()).apply(lambda m: names.append(type(m).__name__))
        >>> names
        ['ReLU', 'Sequential']
        """
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def get_submodule(self, target: str) -> Module:
        if target == "":
            return self
        module = self
        for item in target.split("."):
            if not hasattr(module, item):
                raise AttributeError(f"{module._get_name()} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")  # noqa: TRY004 - torch's class
        return module

    def get_parameter(self, target: str) -> Parameter:
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        param = getattr(module, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")  # noqa: TRY004 - torch's class
        return param

    def get_buffer(self, target: str) -> Tensor:
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if name not in module._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return module._buffers[name]

    def _get_name(self) -> str:
        return type(self).__name__

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(qualified name, parameter) in registration order, depth first; a parameter
        shared by two modules comes once."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def _named_members(self, registry: str, prefix: str, recurse: bool,
                       remove_duplicate: bool):
        modules = (self.named_modules(prefix, remove_duplicate=remove_duplicate) if recurse
                   else [(prefix, self)])
        seen = set()
        for module_prefix, module in modules:
            for name, member in getattr(module, registry).items():
                if member is None or (remove_duplicate and member in seen):
                    continue
                seen.add(member)
                yield _join(module_prefix, name), member

    # -- training state ----------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")  # noqa: TRY004 - torch's type
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad``: to None (the default, as in torch), or to
        zeros in place."""
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                grad = param.grad
                if grad.grad_fn is not None:
                    grad.detach_()
                grad.requires_grad = False
                grad.zero_()

    # -- state dict --------------------------------------------------------------------
    def state_dict(self, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by qualified name (detached unless
        ``keep_vars``)."""
        result = OrderedDict() if destination is None else destination
        for module_prefix, module in self.named_modules(prefix.rstrip(".")):
            for name, param in module._parameters.items():
                if param is not None:
                    result[_join(module_prefix, name)] = param if keep_vars else param.detach()
            for name, buffer in module._buffers.items():
                if buffer is not None and name not in module._non_persistent:
                    key = _join(module_prefix, name)
                    result[key] = buffer if keep_vars else buffer.detach()
        return result

    def load_state_dict(self, state_dict: dict, strict: bool = True,
                        assign: bool = False) -> IncompatibleKeys:
        """Copy values into this module's parameters and buffers (in place, under
        no_grad), checking names and shapes."""
        from ..autograd.grad_mode import no_grad

        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        own = self.state_dict(keep_vars=True)
        missing = [key for key in own if key not in state_dict]
        unexpected = [key for key in state_dict if key not in own]
        errors = []
        if strict:
            if missing:
                errors.append("Missing key(s) in state_dict: " +
                              ", ".join(f'"{key}"' for key in missing) + ".")
            if unexpected:
                errors.append("Unexpected key(s) in state_dict: " +
                              ", ".join(f'"{key}"' for key in unexpected) + ".")
        for key, target in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                from ..factories import as_tensor

                value = as_tensor(value)
            if tuple(value.shape) != tuple(target.shape):
                errors.append(
                    f"size mismatch for {key}: copying a param with shape "
                    f"{value.shape} from checkpoint, the shape in current model is "
                    f"{target.shape}.")
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" +
                " \n\t".join(errors) + " \nHint: pass strict=False to load only the keys "
                "that match (size mismatches still fail).")
        with no_grad():
            for key, target in own.items():
                if key not in state_dict:
                    continue
                value = state_dict[key]
                if not isinstance(value, Tensor):
                    value = Tensor._wrap(_as_array(value, target), False)
                if assign:
                    self._assign(key, target, value)
                else:
                    target.copy_(value)
        return IncompatibleKeys(missing, unexpected)

    def _assign(self, key: str, target: Tensor, value: Tensor) -> None:
        """load_state_dict(assign=True): the loaded tensor takes the place of the old one."""
        module_path, _, name = key.rpartition(".")
        module = self.get_submodule(module_path)
        if isinstance(target, Parameter):
            module.register_parameter(name, Parameter(value, target.requires_grad))
        else:
            module._buffers[name] = value
            object.__setattr__(module, name, value)

    # -- conversion --------------------------------------------------------------------
    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Convert parameters and buffers in place: ``to(dtype)`` casts the floating ones,
        ``to(device)`` moves all (as torch's ``Module.to``)."""

        def convert(tensor: Tensor) -> Any:
            if not tensor.is_floating_point():
                non_dtype = [a for a in args if not _is_dtype(a)]
                return tensor.detach().to(*non_dtype, device=kwargs.get("device"))._array
            return tensor.detach().to(*args, **kwargs)._array

        return self._apply(convert)

    def double(self) -> Module:
        from .. import _dtype

        return self.to(_dtype.float64)

    def half(self) -> Module:
        from .. import _dtype

        return self.to(_dtype.float16)

    def type(self, dst_type) -> Module:
        return self.to(dst_type)

    def share_memory(self) -> Module:
        return self  # one process: memory is already shared with itself

    def float(self) -> Module:
        from .. import _dtype

        return self.to(_dtype.float32)

    def cpu(self) -> Module:
        return self.to("cpu")

    def cuda(self, device: Any = None) -> Module:
        return self.to("cuda" if device is None else device)

    def _apply(self, convert) -> Module:
        for module in self.modules():
            for tensor in list(module._parameters.values()) + list(module._buffers.values()):
                if tensor is None:
                    continue
                tensor._array = convert(tensor)
                if tensor.grad is not None:
                    tensor.grad._array = convert(tensor.grad)
        return self

    # -- display -----------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        """torch's layout: the extra_repr on the first line when it is all there is, else
        one line per extra_repr line and per child ``(name): repr``, indented."""
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): {add_indent(repr(child), 2)}"
                       for name, child in self._modules.items()]
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                text += extra_lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"

    def __dir__(self):
        return sorted(set(super().__dir__()))


def add_indent(text: str, spaces: int) -> str:
    """Indent every line but the first (blank lines stay empty)."""
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    rest = [(" " * spaces + line) if line.strip() else "" for line in lines[1:]]
    return "\n".join([lines[0]] + rest)


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _check_name(module: Module, name: str, kind: str) -> None:
    if "_parameters" not in module.__dict__:
        raise AttributeError(
            f"cannot register {kind} '{name}' before Module.__init__() call on "
            f"{type(module).__name__}. Hint: call super().__init__() first.")
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
    if "." in name or name == "":
        raise KeyError(f'{kind} name can\'t contain "." and can\'t be empty, got "{name}"')


def _is_dtype(value: Any) -> bool:
    from .. import _dtype

    return isinstance(value, _dtype.dtype)


def _as_array(value: Any, like: Tensor):
    return like._xp.asarray(value, dtype=like._array.dtype)
