"""Observing a real PyTorch program: torch's public hooks, turned into the listener calls
tracegrad's own engine makes (``tracegrad.autograd.events``).

* Forward ops and in-place changes: a ``TorchFunctionMode`` sees every torch call the
  program makes, with the user's line on the stack. After a call, a tensor whose
  ``grad_fn`` is new means recorded ops (``on_op``); a version that moved means an in-place
  change (``on_inplace``), and a leaf's in-place error is announced first
  (``on_inplace_refused``).
* Backward: ``Tensor.backward``, ``autograd.backward`` and ``autograd.grad`` are torch calls
  too, so a pass has a start and an end; pre- and post-hooks on each recorded node give
  each step with its gradients in and out, AccumulateGrad's post-hook the accumulation.
* Saved tensors: read from torch's own handles (``grad_fn._raw_saved_*``), never through
  ``saved_tensors_hooks``, which would switch off torch's version check for what they pack.
* Module scope and parameter names: global module forward hooks, while recording only.

The program computes and raises exactly what it would without tracing: every call goes to
torch unchanged, and the hooks return None (they change no gradient). Everything is
removed when the recording stops.
"""

from __future__ import annotations

import inspect
import os
import sys
import time
import weakref

import torch
from torch.overrides import TorchFunctionMode

from ..autograd import events
from ..autograd.engine import PassInfo, _pass_counter
from ..autograd.site import add_internal_directory, user_site
from .adapters import Registry, TorchNode
from .modules import ModuleScopes

_PASS, _OP, _INPLACE, _SETTER, _BACKWARD, _GRAD = range(6)
# Tensor properties that make a node (x.T is a PermuteBackward0); other getters only read.
_GRAPH_PROPERTIES = frozenset({"T", "mT", "H", "mH", "real", "imag"})
_INPLACE_DUNDERS = frozenset({"__setitem__", "__iadd__", "__isub__", "__imul__",
                              "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__",
                              "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__",
                              "__imatmul__"})
# Calls that never touch the graph: answered without a look at their result.
_READ_ONLY = frozenset({
    "__repr__", "__str__", "__format__", "item", "tolist", "numpy", "size", "dim", "numel",
    "stride", "data_ptr", "__len__", "__bool__", "__int__", "__float__", "__index__",
    "element_size", "is_contiguous", "is_floating_point", "is_complex", "storage_offset",
    "untyped_storage", "__hash__", "__array__", "__reduce_ex__", "get_device", "__dir__",
    "register_hook", "retain_grad", "__contains__", "nelement", "ndimension",
    "register_post_accumulate_grad_hook", "requires_grad_", "__deepcopy__"})
_APPLY_CODE = torch.autograd.function.Function.apply.__func__.__code__
_CUSTOM_SEARCH_DEPTH = 8  # frames between an op and the Function.apply it runs under


def _classify(func) -> int:
    name = getattr(func, "__name__", "")
    if func is torch.Tensor.backward or func is torch.autograd.backward:
        return _BACKWARD
    if func is torch.autograd.grad:
        return _GRAD
    if name == "__get__":
        owner = getattr(func, "__self__", None)
        return _OP if getattr(owner, "__name__", "") in _GRAPH_PROPERTIES else _PASS
    if name == "__set__":
        return _SETTER
    if name in _READ_ONLY:
        return _PASS
    if name in _INPLACE_DUNDERS or (name.endswith("_") and not name.endswith("__")):
        return _INPLACE
    return _OP


def _tensors_in(values, found: list) -> list:
    """The torch tensors among ``values``, looking one level into lists and tuples."""
    for value in values:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, torch.Tensor):
                    found.append(item)
    return found


class _CustomCall:
    """A custom Function's forward, seen from the ops inside it: where apply() was called
    and with what, until its node is recorded."""

    __slots__ = ("args", "ctx", "module", "site")

    def __init__(self, ctx, site, module, args) -> None:
        self.ctx, self.site, self.module, self.args = weakref.ref(ctx), site, module, args


class _Mode(TorchFunctionMode):
    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return self.session.call(func, args, kwargs or {})


class _NodeHook:
    """A node's pre- or post-hook: reports the step to the session. Its death (with the
    node, or when removed) tells the registry that the node is gone."""

    __slots__ = ("__weakref__", "node", "session")

    def __init__(self, session: Session, node: TorchNode) -> None:
        self.session, self.node = session, node


class _PreHook(_NodeHook):
    __slots__ = ()

    def __call__(self, grad_outputs):
        self.session.node_started(self.node, grad_outputs)


class _PostHook(_NodeHook):
    __slots__ = ()

    def __call__(self, grad_inputs, grad_outputs):
        self.session.node_finished(self.node, grad_inputs, grad_outputs)


class _Gone:
    """Weak-reference callback on a node's pre-hook: the node died."""

    __slots__ = ("key", "node", "session")

    def __init__(self, session: Session, key: int, node: TorchNode) -> None:
        self.session, self.key, self.node = session, key, node

    def __call__(self, _reference) -> None:
        self.session.node_gone(self.key, self.node)


class Session:
    """One observed program: the mode, the hooks and the adapters, from start() to stop()."""

    def __init__(self) -> None:
        self.registry = Registry(self)
        self.scopes = ModuleScopes(self.registry)
        self.emitted = 0  # events sent, so a recording can tell whether torch was used
        self._mode = _Mode(self)
        self._kinds: dict = {}
        self._signatures: dict = {}
        self._op_site = None  # (site, module) for nodes made by the call being recorded
        self._custom: dict[int, _CustomCall] = {}  # node key -> its apply() call
        self._sentinels: dict[int, object] = {}  # node key -> weakref to its pre-hook
        self._handles: dict[int, tuple] = {}  # node key -> hook handles (removed at stop)
        self._pass: PassInfo | None = None
        self._retain = False
        self._open: TorchNode | None = None  # the node whose backward is running
        self._started = 0
        self._active = False

    # -- start and stop ----------------------------------------------------------------
    def start(self) -> None:
        add_internal_directory(os.path.dirname(torch.__file__))
        self._mode.__enter__()
        self._active = True
        try:
            self.scopes.start()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Remove the mode and every hook; the program goes on exactly as untraced."""
        if not self._active:
            return
        self._active = False
        try:
            self._mode.__exit__(None, None, None)
        finally:
            self.scopes.stop()
            handles, self._handles = self._handles, {}
            for pair in handles.values():
                for handle in pair:
                    handle.remove()
            self._custom.clear()

    # -- the mode ----------------------------------------------------------------------
    def call(self, func, args: tuple, kwargs: dict):
        kind = self._kinds.get(func)
        if kind is None:
            kind = self._kinds[func] = _classify(func)
        if kind == _PASS:
            return func(*args, **kwargs)
        if kind == _OP:
            if "out" in kwargs or kwargs.get("inplace") is True:
                return self._inplace(func, args, kwargs)
            return self._op(func, args, kwargs)
        if kind == _INPLACE:
            return self._inplace(func, args, kwargs)
        if kind == _SETTER:
            result = func(*args, **kwargs)
            if args and isinstance(args[0], torch.Tensor):
                adapter = self.registry.known_tensor(args[0])
                if adapter is not None:
                    adapter.refresh()  # `t.data = other` gave it other memory
            return result
        return self._backward(func, kind, args, kwargs)

    def _op(self, func, args: tuple, kwargs: dict):
        if not torch.is_grad_enabled():
            self._note_custom_forward()
            result = func(*args, **kwargs)
            if type(result) is torch.Tensor and result.requires_grad and result.grad_fn is None:
                self._made_leaf(result, args)
            return result
        inputs = _tensors_in(kwargs.values(), _tensors_in(args, []))
        if inputs:
            self._introduce(inputs)
        result = func(*args, **kwargs)
        if isinstance(result, torch.Tensor):
            outputs = [result]
        elif isinstance(result, (tuple, list)):
            outputs = [item for item in result if isinstance(item, torch.Tensor)]
        else:
            return result
        self._record(args, kwargs, outputs)
        return result

    def _record(self, args: tuple, kwargs: dict, outputs: list, site=None) -> None:
        """Report the nodes that this call made (the grad_fns its outputs got)."""
        registry = self.registry
        new = []
        for tensor in outputs:
            fn = tensor.grad_fn
            if fn is None:
                continue
            if id(fn.metadata) not in registry._nodes and all(fn is not seen for seen in new):
                if tensor.is_meta or tensor.layout != torch.strided:
                    return  # no values to read: left unrecorded
                new.append(fn)
        if not new:
            if len(outputs) == 1 and outputs[0].requires_grad and outputs[0].grad_fn is None:
                self._made_leaf(outputs[0], args)
            return
        listener = events.listener
        if listener is None:
            return
        if site is None:
            site = user_site(1)
        adapters = [registry.tensor(tensor) for tensor in outputs]
        call_args = self._adapt_args(args, kwargs)
        self._op_site = (site, self.scopes.current())
        try:
            for fn in new:
                node = registry.node(fn)
                wired = [None] * max(1, len(node._output_meta))
                for tensor, adapter in zip(outputs, adapters):
                    if tensor.grad_fn is fn and tensor.output_nr < len(wired):
                        wired[tensor.output_nr] = adapter
                self.emitted += 1
                listener.on_op(node, call_args, tuple(wired))
        finally:
            self._op_site = None

    def _adapt_args(self, args: tuple, kwargs: dict) -> tuple:
        """The call's arguments in order, torch tensors as adapters (lists flattened)."""
        registry = self.registry
        adapted = []
        for value in (*args, *kwargs.values()):
            if isinstance(value, torch.Tensor):
                adapted.append(registry.tensor(value))
            elif isinstance(value, (list, tuple)) and any(
                    isinstance(item, torch.Tensor) for item in value):
                adapted.extend(registry.tensor(item) if isinstance(item, torch.Tensor)
                               else item for item in value)
            else:
                adapted.append(value)
        return tuple(adapted)

    def _made_leaf(self, tensor, args: tuple) -> None:
        """A new leaf that requires grad (``torch.randn(..., requires_grad=True)``)."""
        if any(tensor is arg for arg in args):
            return
        listener = events.listener
        if listener is not None:
            self.emitted += 1
            listener.on_tensor(self.registry.tensor(tensor), "factory")

    def site_for(self, fn):
        """(site, module scope) for a node being adapted now."""
        if self._op_site is not None:
            return self._op_site
        call = self._custom.get(id(fn.metadata))
        if call is not None and call.ctx() is fn:
            return call.site, call.module
        return None, None

    # -- in-place ----------------------------------------------------------------------
    def _inplace(self, func, args: tuple, kwargs: dict):
        targets = self._targets(args, kwargs)
        grad_mode = torch.is_grad_enabled()
        if grad_mode:
            inputs = _tensors_in(kwargs.values(), _tensors_in(args, []))
            if inputs:
                self._introduce(inputs)
        versions = [tensor._version for tensor in targets]
        try:
            result = func(*args, **kwargs)
        except RuntimeError:
            if grad_mode:
                self._refused(targets, func.__name__)
            raise
        changed = [tensor for tensor, version in zip(targets, versions)
                   if tensor._version != version]
        if not changed:
            return result
        registry = self.registry
        site = user_site(1)
        name = func.__name__
        for tensor in changed:
            group = registry.group(tensor)
            if group is not None:
                group.note(int(tensor._version), name, site)
            adapter = registry.known_tensor(tensor)
            if adapter is not None:
                adapter.refresh()
        listener = events.listener
        if listener is None:
            return result
        if grad_mode:
            self._record(args, kwargs, changed, site)
        for tensor in changed:
            self.emitted += 1
            listener.on_inplace(registry.tensor(tensor), name, site)
        return result

    @staticmethod
    def _targets(args: tuple, kwargs: dict) -> list:
        """The tensors an in-place call writes: ``out=``, else its first argument."""
        if "out" in kwargs:
            return _tensors_in((kwargs["out"],), [])
        first = args[0] if args else kwargs.get("input", kwargs.get("self"))
        return _tensors_in((first,), [])

    def _refused(self, targets: list, op_name: str) -> None:
        """torch refused an in-place op on a leaf that requires grad (or a view of one)."""
        listener = events.listener
        if listener is None:
            return
        for tensor in targets:
            if tensor.requires_grad and tensor.grad_fn is None:
                leaf = tensor
            else:
                base = tensor._base
                if base is None or not base.requires_grad or base.grad_fn is not None:
                    continue
                leaf = base
            self.emitted += 1
            listener.on_inplace_refused(self.registry.tensor(leaf), op_name)

    # -- custom autograd.Functions -----------------------------------------------------
    def _note_custom_forward(self) -> None:
        """Ops run without grad inside a custom Function's forward: remember where its
        apply() was called and with what, for its node (which no torch call reports)."""
        frame, depth = sys._getframe(3), 3
        for _ in range(_CUSTOM_SEARCH_DEPTH):
            back = frame.f_back
            if back is None:
                return
            depth += 1
            if back.f_code is _APPLY_CODE:
                break
            frame = back
        else:
            return
        code = frame.f_code
        if code.co_argcount == 0:
            return
        local = frame.f_locals
        ctx = local.get(code.co_varnames[0])
        if not isinstance(ctx, torch.autograd.function.BackwardCFunction):
            return
        key = id(ctx.metadata)
        if key in self._custom and self._custom[key].ctx() is ctx:
            return
        names = code.co_varnames[1:code.co_argcount]
        args = [local.get(name) for name in names]
        if code.co_flags & inspect.CO_VARARGS:
            args.extend(local.get(code.co_varnames[code.co_argcount], ()))
        # The site is the line that called apply(), above torch's Function.apply frame.
        self._custom[key] = _CustomCall(ctx, user_site(depth + 1), self.scopes.current(),
                                        args)

    def _introduce(self, tensors: list) -> None:
        """Before a call uses them: report the custom Function nodes behind ``tensors``
        that no call reported yet (with the arguments their apply() got)."""
        registry = self.registry
        stack = []
        for tensor in tensors:
            fn = tensor.grad_fn
            if fn is not None and id(fn.metadata) not in registry._nodes:
                stack.append((fn, tensor))
        if not stack or not self._custom:
            return
        outputs: dict[int, dict[int, object]] = {}
        unknown, seen = [], set()
        for fn, tensor in stack:
            outputs.setdefault(id(fn.metadata), {})[tensor.output_nr] = tensor
        pending = [fn for fn, _ in stack]
        while pending:
            fn = pending.pop()
            key = id(fn.metadata)
            if key in seen:
                continue
            seen.add(key)
            unknown.append(fn)
            call = self._custom.get(key)
            if call is not None and call.ctx() is fn:
                for arg in call.args:
                    if isinstance(arg, torch.Tensor) and arg.grad_fn is not None:
                        outputs.setdefault(id(arg.grad_fn.metadata), {})[arg.output_nr] = arg
            for next_fn, _ in fn.next_functions:
                if next_fn is not None and id(next_fn.metadata) not in registry._nodes:
                    pending.append(next_fn)
        listener = events.listener
        unknown.sort(key=lambda fn: fn._sequence_nr())
        for fn in unknown:
            key = id(fn.metadata)
            call = self._custom.get(key)
            if call is None or call.ctx() is not fn or listener is None:
                continue
            node = registry.node(fn)  # takes its site from the call
            del self._custom[key]
            wired = [None] * max(1, len(node._output_meta))
            for output_nr, tensor in outputs.get(key, {}).items():
                if output_nr < len(wired):
                    wired[output_nr] = registry.tensor(tensor)
            args = tuple(registry.tensor(arg) if isinstance(arg, torch.Tensor) else arg
                         for arg in call.args)
            self.emitted += 1
            listener.on_op(node, args, tuple(wired))

    # -- nodes and their hooks ---------------------------------------------------------
    def watch_node(self, fn, node: TorchNode) -> None:
        """Hook a node for backward; the hooks' death is the node's (see _Gone)."""
        pre, post = _PreHook(self, node), _PostHook(self, node)
        try:
            handles = (fn.register_prehook(pre), fn.register_hook(post))
        except RuntimeError:
            node.__dict__["_fn"] = fn  # a node that takes no hooks: held until the end
            return
        key = node._key
        self._handles[key] = handles
        self._sentinels[key] = weakref.ref(pre, _Gone(self, key, node))

    def node_gone(self, key: int, node: TorchNode) -> None:
        self.registry.forget_node(key, node)
        self._sentinels.pop(key, None)
        self._handles.pop(key, None)

    # -- backward ----------------------------------------------------------------------
    def _bind(self, func, args: tuple, kwargs: dict) -> dict:
        signature = self._signatures.get(func)
        if signature is None:
            signature = self._signatures[func] = inspect.signature(func)
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return bound.arguments

    def _backward(self, func, kind: int, args: tuple, kwargs: dict):
        listener = events.listener
        if listener is None:
            return func(*args, **kwargs)
        try:
            arguments = self._bind(func, args, kwargs)
        except TypeError:
            return func(*args, **kwargs)  # torch will say what is wrong
        if kind == _GRAD:
            roots, grads = arguments["outputs"], arguments["grad_outputs"]
        elif "self" in arguments:
            roots, grads = arguments["self"], arguments["gradient"]
        else:
            roots, grads = arguments["tensors"], arguments["grad_tensors"]
        roots = _tensors_in((roots,), [])
        if not roots or not self._will_run(roots, grads):
            return func(*args, **kwargs)  # torch raises before any node runs
        inputs = arguments.get("inputs")
        if isinstance(inputs, dict):
            inputs = list(inputs.values())
        inputs = None if inputs is None else _tensors_in((inputs,), [])
        create_graph = bool(arguments.get("create_graph"))
        retain = arguments.get("retain_graph")
        retain = create_graph if retain is None else bool(retain)
        self._introduce(roots)
        registry = self.registry
        info = PassInfo(next(_pass_counter), "grad" if kind == _GRAD else "backward",
                        tuple(registry.tensor(root) for root in roots), retain, create_graph,
                        None if inputs is None else tuple(registry.tensor(t) for t in inputs))
        self.emitted += 1
        listener.on_backward_start(info)
        previous = (self._pass, self._retain, self._open, self._started)
        self._pass, self._retain, self._open = info, retain, None
        error = None
        try:
            return func(*args, **kwargs)
        except BaseException as exc:
            error = exc
            if self._open is not None:
                listener.on_error(exc, self._open)
            raise
        finally:
            self._pass, self._retain, self._open, self._started = previous
            listener.on_backward_end(info, error)

    @staticmethod
    def _will_run(roots: list, grads) -> bool:
        """Whether torch gets as far as running nodes (it checks the roots first)."""
        for index, root in enumerate(roots):
            if not root.requires_grad:
                return False
            if grads is None or isinstance(grads, torch.Tensor) and index > 0:
                given = None
            elif isinstance(grads, torch.Tensor):
                given = grads
            else:
                given = grads[index] if index < len(grads) else None
            if given is None and root.numel() != 1:
                return False
        return True

    def node_started(self, node: TorchNode, grads) -> None:
        if self._pass is None:
            return  # a backward this session did not see start (nothing to add it to)
        listener = events.listener
        if listener is None:
            return
        registry = self.registry
        listener.on_node_start(node, tuple(registry.tensor(grad) if grad is not None else None
                                           for grad in grads))
        self._open = node
        self._started = time.perf_counter_ns()

    def node_finished(self, node: TorchNode, grads_out, grads_in) -> None:
        if self._pass is None:
            return
        duration = time.perf_counter_ns() - self._started if self._open is node else 0
        self._open = None
        if not self._retain and node._saved:
            node.__dict__["_freed_by"] = self._pass.index  # torch freed them after apply
        listener = events.listener
        if listener is None:
            return
        registry = self.registry
        listener.on_node_end(node, tuple(registry.tensor(grad) if grad is not None else None
                                         for grad in grads_out), duration)
        if node._is_accumulate and grads_in and grads_in[0] is not None:
            listener.on_accumulate(node.variable, registry.tensor(grads_in[0]))
