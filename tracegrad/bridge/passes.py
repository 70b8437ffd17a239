"""Backward passes of a torch program, as tracegrad's engine reports its own.

``Tensor.backward``, ``torch.autograd.backward`` and ``torch.autograd.grad`` are torch
calls, so the session sees a pass start and end. Each recorded node carries one hook object,
registered as its pre-hook and as its post-hook (when the node is recorded; removed when the
recording stops): the pre-hook call is a step starting with its incoming gradients, the
post-hook call the step ending with the gradients it sends on (and, for AccumulateGrad, the accumulation into ``.grad``).

Hooks the program registers on tensors run before a node's pre-hook; each gets an observer
registered just before it, so the step can say which hook replaced the gradient. A node's
hook object doubles as the sign of its life: it dies with the node (see adapters.py).
"""

from __future__ import annotations

import inspect
import time
import weakref

import torch

from ..autograd import events
from ..autograd.engine import PassInfo, _pass_counter
from .adapters import TorchNode, host_array

_PRE = object()  # a pre-hook's call: torch passes one argument (see _NodeHook)


class _NodeHook:
    """A node's pre-hook and post-hook in one object, registered as both: called with the
    incoming gradients, a step starts; with (gradients sent on, incoming), it ends. It
    returns None: it never changes a gradient. One object per node where two would be a
    second allocation and a second weak reference to tell the node's death by."""

    __slots__ = ("__weakref__", "node", "passes")

    def __init__(self, passes: Passes, node: TorchNode) -> None:
        self.passes, self.node = passes, node

    def __call__(self, grads, grad_outputs=_PRE):
        # Per node and pass, twice: the guard inline (Session.guarded is two calls more).
        session = self.passes.session
        if session.failure is None:
            try:
                if grad_outputs is _PRE:
                    self.passes.node_started(self.node, grads)
                else:
                    self.passes.node_finished(self.node, grads, grad_outputs)
            except Exception as error:  # noqa: BLE001 - reported at the end, see failed()
                session.failed(error)


class _Sentinel(weakref.ref):
    """A weak reference to a node's hook, carrying the node and the hook's handles: its
    callback says the node died (or was unhooked). One object per node, where a callback
    object of its own would be a second."""

    __slots__ = ("handles", "key", "node")


class _Observer:
    """Registered just before a program's tensor hook: sees the gradient that hook gets."""

    __slots__ = ("hook", "seen")

    def __init__(self, hook) -> None:
        self.hook, self.seen = hook, None

    def __call__(self, grad) -> None:
        self.seen = grad


class Passes:
    """The backward half of a session: passes, node hooks, hooks the program added."""

    def __init__(self, session) -> None:
        self.session = session
        self.registry = session.registry
        self._signatures: dict = {}
        # node key -> weak reference to its hook, holding the hook's handles (removed at stop)
        self._sentinels: dict[int, _Sentinel] = {}
        self._observers: dict[int, tuple] = {}  # id(tensor) -> (weakref, [_Observer])
        self._observer_handles: list = []
        self._retained: dict[int, object] = {}  # id(tensor) -> weakref: retain_grad()
        self._pass: PassInfo | None = None
        self._retain = False
        self._open: TorchNode | None = None  # the node whose backward is running
        self._started = 0
        # A pass without create_graph tells its steps' gradients as NumPy arrays, as
        # tracegrad's engine tells its own (on_node_start_arrays): no adapter per gradient.
        # id(gradient) -> (gradient, its array), from the step that sent it on until the
        # step that takes it in, so both are told the same array (the recorder captures a
        # value once per array); taken out then, so nothing outlives torch's own buffer.
        self._arrays: dict[int, tuple] | None = None
        self._on_node_gone = self._node_gone  # bound once: every hooked node's sentinel has it

    def guarded(self, method, *args) -> None:
        self.session.guarded(method, *args)

    def stop(self) -> None:
        sentinels, self._sentinels = self._sentinels, {}
        for sentinel in list(sentinels.values()):
            for handle in sentinel.handles:
                handle.remove()
        observer_handles, self._observer_handles = self._observer_handles, []
        for handle in observer_handles:
            handle.remove()
        self._observers.clear()
        self._retained.clear()

    # -- nodes -------------------------------------------------------------------------
    def watch_node(self, fn, node: TorchNode) -> None:
        """Hook a node for backward; the hook's death is the node's."""
        hook = _NodeHook(self, node)
        try:
            handles = (fn.register_prehook(hook), fn.register_hook(hook))
        except RuntimeError:
            node.__dict__["_fn"] = fn  # a node that takes no hooks: held until the end
            return
        key = node._key
        sentinel = self._sentinels[key] = _Sentinel(hook, self._on_node_gone)
        sentinel.key, sentinel.node, sentinel.handles = key, node, handles

    def _node_gone(self, sentinel: _Sentinel) -> None:
        # Per node that dies (every node of every step): Registry.forget_node inline.
        key, node = sentinel.key, sentinel.node
        node.__dict__["_alive"] = False
        nodes = self.registry._nodes
        if nodes.get(key) is node:
            del nodes[key]
        sentinels = self._sentinels
        if sentinels.get(key) is sentinel:
            del sentinels[key]

    # -- hooks the program registers on tensors ----------------------------------------
    def register_hook(self, func, args: tuple, kwargs: dict):
        """``tensor.register_hook(hook)``: an observer goes in first."""
        tensor = args[0] if args else None
        if isinstance(tensor, torch.Tensor) and tensor.requires_grad:
            self.guarded(self._observe, tensor, args[1] if len(args) > 1 else
                         kwargs.get("hook"))
        return func(*args, **kwargs)

    def _observe(self, tensor, hook) -> None:
        observer = _Observer(hook)
        handle = tensor.register_hook(observer)
        self._observer_handles.append(handle)
        entry = self._observers.get(id(tensor))
        if entry is None or entry[0]() is not tensor:
            entry = self._observers[id(tensor)] = (weakref.ref(tensor), [])
        entry[1].append(observer)

    def retain_grad(self, func, args: tuple, kwargs: dict):
        result = func(*args, **kwargs)
        tensor = args[0] if args else None
        if isinstance(tensor, torch.Tensor) and tensor.grad_fn is not None:
            self._retained[id(tensor)] = weakref.ref(tensor)
        return result

    def _report_tensor_hooks(self, listener, node: TorchNode, grads: tuple) -> None:
        """The program's tensor hooks and retain_grad() that ran for ``node`` just now, in
        the order torch ran them (tensor hooks, then retain_grad), as tracegrad reports."""
        if not self._observers and not self._retained:
            return
        for tensor in self._node_tensors(node):
            output_nr = 0 if node._is_accumulate else int(tensor.output_nr)
            final = grads[output_nr] if output_nr < len(grads) else None
            entry = self._observers.get(id(tensor))
            if entry is not None and entry[0]() is tensor:
                observers = entry[1]
                for index, observer in enumerate(observers):
                    if observer.seen is None:
                        continue
                    after = observers[index + 1].seen if index + 1 < len(observers) else final
                    listener.on_hook(node, "tensor", observer.hook, after is not observer.seen)
                    observer.seen = None
            retained = self._retained.get(id(tensor))
            if retained is not None and retained() is tensor and final is not None:
                listener.on_hook(node, "retain_grad", None, False)

    def _node_tensors(self, node: TorchNode) -> list:
        """The live torch tensors whose hooks run for ``node`` (its outputs, or its leaf)."""
        if node._is_accumulate:
            leaf = node.variable.subject
            return [leaf] if leaf is not None else []
        found = []
        for table in (self._observers, self._retained):
            for entry in table.values():
                reference = entry[0] if isinstance(entry, tuple) else entry
                tensor = reference()
                if tensor is None or tensor.grad_fn is None or any(t is tensor for t in found):
                    continue
                if self.registry.knows(tensor.grad_fn) and \
                        self.registry.known_node(tensor.grad_fn) is node:
                    found.append(tensor)
        return found

    # -- passes ------------------------------------------------------------------------
    def run(self, func, kind: str, args: tuple, kwargs: dict):
        """Run a backward (``kind`` "backward") or autograd.grad ("grad") call, reported."""
        listener = events.listener
        info = None
        if listener is not None:
            try:
                info = self._start(kind, func, args, kwargs, listener)
            except Exception as error:  # noqa: BLE001 - the program must not see our failure
                self.session.failed(error)
        if info is None:
            return func(*args, **kwargs)
        previous = (self._pass, self._retain, self._open, self._started, self._arrays)
        self._pass, self._retain, self._open = info, info.retain_graph, None
        self._arrays = None if info.create_graph else {}  # gradients in the graph: adapters
        error = None
        try:
            return func(*args, **kwargs)
        except BaseException as exc:
            error = exc
            if self._open is not None:
                self.guarded(listener.on_error, exc, self._open)
            raise
        finally:
            self._pass, self._retain, self._open, self._started, self._arrays = previous
            self.guarded(listener.on_backward_end, info, error)

    def _start(self, kind: str, func, args: tuple, kwargs: dict, listener) -> PassInfo | None:
        arguments = self._arguments(func, args, kwargs)
        if arguments is None:
            return None  # torch will say what is wrong
        if kind == "grad":
            roots, grads = arguments["outputs"], arguments["grad_outputs"]
        elif "self" in arguments:
            roots, grads = arguments["self"], arguments["gradient"]
        else:
            roots, grads = arguments["tensors"], arguments["grad_tensors"]
        roots = _tensors((roots,))
        if not roots or not _will_run(roots, grads):
            return None  # torch raises before any node runs: no pass, as tracegrad's engine
        inputs = arguments.get("inputs")
        if isinstance(inputs, dict):
            inputs = list(inputs.values())
        inputs = None if inputs is None else _tensors((inputs,))
        create_graph = bool(arguments.get("create_graph"))
        retain = arguments.get("retain_graph")
        retain = create_graph if retain is None else bool(retain)
        self.session.introduce(roots)
        registry = self.registry
        info = PassInfo(next(_pass_counter), kind,
                        tuple(registry.tensor(root) for root in roots), retain, create_graph,
                        None if inputs is None else tuple(registry.tensor(t) for t in inputs))
        self.session.emitted += 1
        listener.on_backward_start(info)
        return info

    def _arguments(self, func, args: tuple, kwargs: dict) -> dict | None:
        """The call's arguments by name, defaults filled in, as ``Signature.bind`` gives
        them (None where it would refuse them), from the parameter list read once per
        function: bind() per backward call cost more than the rest of starting a pass."""
        layout = self._signatures.get(func)
        if layout is None:
            parameters = inspect.signature(func).parameters.values()
            plain = all(parameter.kind in (parameter.POSITIONAL_OR_KEYWORD,
                                           parameter.KEYWORD_ONLY)
                        for parameter in parameters)
            layout = self._signatures[func] = (
                plain,
                tuple(parameter.name for parameter in parameters
                      if parameter.kind == parameter.POSITIONAL_OR_KEYWORD),
                {parameter.name: parameter.default for parameter in parameters},
                inspect.signature(func))
        plain, positional, defaults, signature = layout
        if not plain:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError:
                return None
            bound.apply_defaults()
            return dict(bound.arguments)
        if len(args) > len(positional):
            return None
        arguments = dict(zip(positional, args))
        for name, value in kwargs.items():
            if name in arguments or name not in defaults:
                return None  # given twice, or no such parameter
            arguments[name] = value
        if len(arguments) < len(defaults):
            empty = inspect.Parameter.empty
            for name, default in defaults.items():
                if name not in arguments:
                    if default is empty:
                        return None  # a required argument missing
                    arguments[name] = default
        return arguments

    def node_started(self, node: TorchNode, grads) -> None:
        if self._pass is None:
            return  # a backward this session did not see start: nothing to add it to
        listener = events.listener
        if listener is None:
            return
        if self._observers or self._retained:
            self._report_tensor_hooks(listener, node, grads)
        arrays = self._arrays
        if arrays is None:
            listener.on_node_start(node, self._adapters(grads))
        else:
            taken = []
            for grad in grads:
                if grad is None:
                    taken.append(None)
                    continue
                entry = arrays.pop(id(grad), None)
                taken.append(entry[1] if entry is not None and entry[0] is grad
                             else host_array(grad))
            listener.on_node_start_arrays(node, tuple(taken))
        self._open = node
        self._started = time.perf_counter_ns()

    def node_finished(self, node: TorchNode, grads_out, grads_in) -> None:
        if self._pass is None:
            node.__dict__["_unsure"] = True  # a backward not seen: it may have freed them
            return
        duration = time.perf_counter_ns() - self._started if self._open is node else 0
        self._open = None
        if not self._retain and node._saved:
            node.__dict__["_freed_by"] = self._pass.index  # torch freed them after apply
        listener = events.listener
        if listener is None:
            return
        arrays = self._arrays
        if arrays is None:
            listener.on_node_end(node, self._adapters(grads_out), duration)
        else:
            sent = []
            for grad in grads_out:
                if grad is None:
                    sent.append(None)
                    continue
                entry = arrays.get(id(grad))
                if entry is None or entry[0] is not grad:  # (one gradient on two edges:
                    entry = arrays[id(grad)] = (grad, host_array(grad))  # one array)
                sent.append(entry[1])
            listener.on_node_end_arrays(node, tuple(sent), duration)
        if node._is_accumulate and grads_in and grads_in[0] is not None:
            listener.on_accumulate(node.variable, self.registry.tensor(grads_in[0]))

    def _adapters(self, grads) -> tuple:
        """The adapters of a step's gradients (None stays None). A gradient going out of
        one step is the one coming into the next: its adapter is found inline."""
        registry = self.registry
        known = registry._tensors
        adapters = []
        for grad in grads:
            if grad is None:
                adapters.append(None)
                continue
            adapter = known.get(id(grad))
            if adapter is None or adapter._ref() is not grad:
                adapter = registry.tensor(grad)
            adapters.append(adapter)
        return tuple(adapters)


def _tensors(values) -> list:
    found = []
    for value in values:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(item for item in value if isinstance(item, torch.Tensor))
    return found


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
