"""Observing a real PyTorch program: torch's public hooks, turned into the listener calls
tracegrad's own engine makes (``tracegrad.autograd.events``).

* Forward ops and in-place changes: a ``TorchFunctionMode`` sees every torch call the
  program makes, with the user's line on the stack. After a call, a tensor whose
  ``grad_fn`` is new means recorded ops (``on_op``); a version that moved means an in-place
  change (``on_inplace``); a leaf's in-place error is announced as it propagates
  (``on_inplace_refused``).
* Optimizer steps: torch wraps ``Optimizer.step`` in a profiler ``record_function``, whose
  enter and exit are torch calls. Inside a step (run without grad), only what it writes
  into a tensor that matters -- a parameter, a tensor the trace knows -- is reported, one
  in-place change per parameter as tracegrad's own optimizers report theirs; the step's
  arithmetic and state (Adam's moments, step counts) are not the program's graph.
* Backward: see passes.py. Custom ``autograd.Function`` nodes: see custom.py.
* Saved tensors: read from torch's own handles (``grad_fn._raw_saved_*``), never through
  ``saved_tensors_hooks``, which would switch off torch's version check for what they pack.
* Module scope and parameter names: global module forward hooks, while recording only.

The program computes and raises exactly what it would without tracing: every call goes to
torch unchanged and once, the hooks return None (they change no gradient), and a failure of
the bridge itself is never the program's: it stops recording and says so (a warning) when
the recording ends. Everything is removed when the recording stops.
"""

from __future__ import annotations

import os
import warnings

import torch
from torch.overrides import TorchFunctionMode

from ..autograd import events
from ..autograd.site import add_internal_directory, event_frame, event_site, user_site
from ..autograd.views import InplaceInfo
from .adapters import Registry, TorchTensor
from .custom import CustomFunctions
from .modules import ModuleScopes
from .passes import Passes

(_PASS, _OP, _INPLACE, _SETTER, _BACKWARD, _GRAD, _HOOK, _RETAIN, _DATA, _VALUE,
 _PROFILE_ENTER, _PROFILE_EXIT, _SET_GRAD) = range(13)
# What an optimizer's step is seen by: torch wraps every ``Optimizer.step`` in a profiler
# ``record_function("Optimizer.step#Adam.step")``, whose enter and exit are torch calls.
_STEP_PREFIX = "Optimizer.step#"
_PROFILE_OPS = {"_record_function_enter_new": _PROFILE_ENTER,
                "_record_function_exit._RecordFunction": _PROFILE_EXIT,
                "_record_function_exit": _PROFILE_EXIT}
# Calls whose values leave the graph as plain data (tracing/flows.py: round trips).
_VALUE_CALLS = frozenset({"item", "tolist", "numpy"})
# Calls that make a tensor from plain data (a round trip's way back).
_FROM_DATA = frozenset({"tensor", "as_tensor", "from_numpy"})
# Tensor properties that make a node (x.T is a PermuteBackward0); other getters only read.
_GRAPH_PROPERTIES = frozenset({"T", "mT", "H", "mH", "real", "imag"})
_INPLACE_DUNDERS = frozenset({"__setitem__", "__iadd__", "__isub__", "__imul__",
                              "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__",
                              "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__",
                              "__imatmul__"})
# Calls that never touch the graph: passed on without a look at their result.
_READ_ONLY = frozenset({
    "__repr__", "__str__", "__format__", "item", "tolist", "numpy", "size", "dim", "numel",
    "stride", "data_ptr", "__len__", "__bool__", "__int__", "__float__", "__index__",
    "element_size", "is_contiguous", "is_floating_point", "is_complex", "storage_offset",
    "untyped_storage", "__hash__", "__array__", "__reduce_ex__", "get_device", "__dir__",
    "__contains__", "nelement", "ndimension", "register_post_accumulate_grad_hook",
    "requires_grad_", "__deepcopy__"})


# In-place ops that give a tensor another shape or other memory: its adapter reads them again.
_RESHAPING = frozenset({"resize_", "resize_as_", "set_", "squeeze_", "unsqueeze_",
                        "transpose_", "t_", "as_strided_", "swapdims_", "swapaxes_",
                        "__set__"})


def _classify(func) -> int:
    name = getattr(func, "__name__", "")
    if name in _PROFILE_OPS and type(func).__module__ == "torch._ops":
        return _PROFILE_OPS[name]
    if func is torch.Tensor.backward or func is torch.autograd.backward:
        return _BACKWARD
    if func is torch.autograd.grad:
        return _GRAD
    if name == "__get__":
        owner = getattr(func, "__self__", None)
        owner_name = getattr(owner, "__name__", "")
        if owner_name == "data":
            return _DATA
        return _OP if owner_name in _GRAPH_PROPERTIES else _PASS
    if name in _VALUE_CALLS:
        return _VALUE
    if name == "__set__":
        owner = getattr(func, "__self__", None)
        # ``p.grad = None`` (zero_grad, per parameter and step) moves no memory of p's.
        return _SET_GRAD if getattr(owner, "__name__", "") == "grad" else _SETTER
    if name == "register_hook":
        return _HOOK
    if name == "retain_grad":
        return _RETAIN
    if name in _READ_ONLY:
        return _PASS
    if name in _INPLACE_DUNDERS or (name.endswith("_") and not name.endswith("__")):
        return _INPLACE
    return _OP


# How far up the stack the program's torch call is, from _record and _after_inplace: the
# walk for the user's line starts there, past the bridge's own frames, which it would read
# one by one, making a frame object of each (the sites' walk was the bridge's largest line
# count per op: bench/bench_bridge.py). The bridge is entered only through the mode:
# __torch_function__ -> call -> _op -> _record, and __torch_function__ -> call [-> _in_step]
# -> _inplace -> guarded -> _after_inplace (one more when in an optimizer's step).
_OP_CALLER = 5  # event_site's own frame is 0
_INPLACE_CALLER = 6  # user_site's; + 1 inside an optimizer's step

# The number torch gives the next node it makes (in this thread): a call that leaves it
# unchanged made no node, and the nodes a call made are numbered from its value before.
_next_sequence_nr = torch._C._autograd._get_sequence_nr
_grad_enabled = torch.is_grad_enabled


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


def _sequence_of(node) -> int:
    return node._seq


def _saved_outputs(made: list) -> dict:
    """(node key, output_nr) -> the torch tensor a node made in this call saved: the outputs
    of nodes inside a composite call, which the program never sees."""
    found: dict[tuple, object] = {}
    for node in made:
        for saved in node._saved:
            producer = node if saved.is_output else saved.producer
            if producer is not None and saved._held is not None:
                found.setdefault((producer._key, saved.output_nr), saved._held)
    return found


class _PassThrough:
    """What a mode left on torch's stack after its recording ended does: nothing."""

    _kinds: dict = {}
    _steps: list = []

    @staticmethod
    def call(func, args: tuple, kwargs: dict):
        return func(*args, **kwargs)


_PASS_THROUGH = _PassThrough()


class _Mode(TorchFunctionMode):
    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session

    def __torch_function__(self, func, types, args=(), kwargs=None):
        # Calls that only read (``p.grad``, ``x.shape``, ``x.dim()``: half of an optimizer
        # step's) go straight on, without the session's call. So do, inside an optimizer's
        # step, the calls Session._in_step would pass on unreported: an out-of-place op
        # without keyword arguments (Adam's ``sqrt()``, ``/``: most of the rest), an
        # in-place one on a tensor that needs no grad and that the trace does not know (its
        # moments and step counts: five of Adam's six in-place calls per parameter), and
        # ``item()`` (its step count). bench/bench_bridge.py's MLP keeps this honest.
        session = self.session
        kind = session._kinds.get(func)
        if kind == _PASS:
            return func(*args, **kwargs) if kwargs else func(*args)
        if session._steps and not _grad_enabled():
            if kind == _OP and not kwargs or kind == _VALUE:
                return func(*args, **kwargs) if kwargs else func(*args)
            if kind == _INPLACE and args and not (kwargs and "out" in kwargs):
                first = args[0]
                if first.__class__ is torch.Tensor and not first.requires_grad:
                    adapter = session.registry._tensors.get(id(first))
                    if adapter is None or adapter._ref() is not first:
                        return func(*args, **kwargs) if kwargs else func(*args)
        return session.call(func, args, kwargs or {})


class Session:
    """One observed program: the mode, the hooks and the adapters, from start() to stop()."""

    def __init__(self) -> None:
        self.registry = Registry(self)
        self.scopes = ModuleScopes(self.registry)
        self.passes = Passes(self)
        self.custom = CustomFunctions(self)
        self.emitted = 0  # events sent, so a recording can tell whether torch was used
        self.failure: BaseException | None = None  # the bridge's own, if it failed
        self._mode = _Mode(self)
        self._kinds: dict = {}
        self._op_site = None  # (site, module) for nodes made by the call being recorded
        self._active = False
        # The profiler records of the optimizer steps running now (see _in_step).
        self._steps: list = []

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
            depth = torch._C._len_torch_function_stack()
            if depth and torch._C._get_function_stack_at(depth - 1) is self._mode:
                self._mode.__exit__(None, None, None)
            else:
                # The program entered a mode of its own after ours and is still inside it:
                # popping would remove the program's. Ours stays, passing every call on.
                self._mode.session = _PASS_THROUGH
        finally:
            self.scopes.stop()
            self.passes.stop()
            self.custom.clear()
        if self.failure is not None:
            warnings.warn(
                f"tracegrad: the PyTorch bridge stopped recording after an error of its own "
                f"({type(self.failure).__name__}: {self.failure}); the trace ends there. "
                "The program itself was not affected.", RuntimeWarning, stacklevel=2)

    def failed(self, error: BaseException) -> None:
        """The bridge failed (a bug of ours): stop recording, never disturb the program."""
        if self.failure is None:
            self.failure = error

    def guarded(self, method, *args):
        """Run a part of the bridge so that its failure is never the program's."""
        if self.failure is not None:
            return None
        try:
            return method(*args)
        except Exception as error:  # noqa: BLE001 - reported at the end, see failed()
            self.failed(error)
            return None

    # -- the mode ----------------------------------------------------------------------
    def call(self, func, args: tuple, kwargs: dict):
        """Every torch call of the program, while recording: run it, and report it."""
        if self.failure is not None:
            return func(*args, **kwargs)
        kind = self._kinds.get(func)
        if kind is None:
            kind = self._kinds[func] = _classify(func)
        if kind == _PASS:
            return func(*args, **kwargs)
        if self._steps and kind <= _INPLACE and not _grad_enabled():
            return self._in_step(func, kind, args, kwargs)
        if kind == _OP:
            if kwargs and ("out" in kwargs or kwargs.get("inplace") is True):
                return self._inplace(func, args, kwargs)
            return self._op(func, args, kwargs)
        if kind == _INPLACE:
            return self._inplace(func, args, kwargs)
        if kind == _BACKWARD or kind == _GRAD:
            return self.passes.run(func, "grad" if kind == _GRAD else "backward", args,
                                   kwargs)
        if kind == _HOOK:
            return self.passes.register_hook(func, args, kwargs)
        if kind == _RETAIN:
            return self.passes.retain_grad(func, args, kwargs)
        if kind == _PROFILE_ENTER or kind == _PROFILE_EXIT:
            return self._profiled(func, kind, args, kwargs)
        if kind == _DATA or kind == _VALUE:
            if self._steps and kind == _VALUE:
                # An optimizer's own numbers (see _in_step); ``p.data`` stays reported:
                # an optimizer that writes through it changes the parameter's values.
                return func(*args, **kwargs)
            result = func(*args, **kwargs)
            if args and isinstance(args[0], torch.Tensor):
                self.guarded(self._left_graph, kind, func, args[0], result)
            return result
        result = func(*args, **kwargs)
        if args and isinstance(args[0], torch.Tensor):
            if kind == _SET_GRAD:  # `p.grad = None`: the gradient reset
                if len(args) > 1 and args[1] is None:
                    self.guarded(self._grad_reset, args[0])
            else:  # another setter: `t.data = other` moves t's memory
                self.guarded(self._moved, args[0])
        return result

    # -- optimizer steps ----------------------------------------------------------------
    def _profiled(self, func, kind: int, args: tuple, kwargs: dict):
        """A profiler ``record_function`` entered or left: an optimizer step starts or
        ends (torch wraps every ``Optimizer.step`` in one). torch's mode stack is per
        thread: the steps seen here are the recorded thread's own."""
        if kind == _PROFILE_ENTER:
            record = func(*args, **kwargs)
            name = args[0] if args else kwargs.get("name")
            if isinstance(name, str) and name.startswith(_STEP_PREFIX):
                self._steps.append(record)
            return record
        try:
            return func(*args, **kwargs)
        finally:
            record = args[0] if args else None
            steps = self._steps
            for index in range(len(steps) - 1, -1, -1):
                if steps[index] is record:
                    del steps[index]
                    break

    def _in_step(self, func, kind: int, args: tuple, kwargs: dict):
        """A call inside an optimizer's step, made without grad (as torch's optimizers run
        theirs): the step's own arithmetic (Adam's moments, its step counts) is not the
        program's graph and is not reported; what the step writes into a tensor that
        matters -- a parameter, a tensor the trace knows -- is, as the in-place change it
        is (``addcdiv_`` on the parameter), the way tracegrad's own optimizers report one
        ``sub_`` per parameter and step."""
        if kind == _OP and not (kwargs and ("out" in kwargs or kwargs.get("inplace") is True)):
            return func(*args, **kwargs)
        if args and args[0].__class__ is torch.Tensor and not (kwargs and "out" in kwargs):
            # The common case, inline: one plain tensor written (a moment, a step count;
            # ``addcmul_(..., value=)`` too: without ``out=``, the first argument is what an
            # in-place call writes, see _targets), known to the trace or not.
            first = args[0]
            adapter = self.registry._tensors.get(id(first))
            if adapter is None or adapter._ref() is not first:
                if not first.requires_grad or first.grad_fn is not None:
                    return func(*args, **kwargs) if kwargs else func(*args)
            return self._inplace(func, args, kwargs, [first])
        targets = self._targets(args, kwargs) if kwargs else _tensors_in(args[:1], [])
        known = self.registry.known_tensor
        targets = [tensor for tensor in targets if tensor.requires_grad and
                   tensor.grad_fn is None or known(tensor) is not None]
        if not targets:
            return func(*args, **kwargs)
        return self._inplace(func, args, kwargs, targets)

    def _left_graph(self, kind: int, func, tensor, result) -> None:
        """``t.data``, ``t.item()``/``tolist()``/``numpy()``: values leaving the graph."""
        listener = events.listener
        if listener is None or not (tensor.requires_grad or
                                    self.registry.known_tensor(tensor) is not None):
            return
        source = self.registry.tensor(tensor)
        if kind == _DATA:
            listener.on_detach(source, self.registry.tensor(result), "data")
        else:
            listener.on_value_out(source, func.__name__, result)

    def _grad_reset(self, tensor) -> None:
        listener = events.listener
        adapter = self.registry.known_tensor(tensor)
        if listener is not None and adapter is not None:
            listener.on_grad_reset(adapter)

    def _untracked(self, func, args: tuple, kwargs: dict, result, grad_enabled: bool) -> None:
        """A call that made no node: values that left the graph (``detach()``, an op under
        no_grad, on a detached value, an integer result) or came back from data."""
        listener = events.listener
        if listener is None:
            return
        name = getattr(func, "__name__", "")
        outputs = [result] if isinstance(result, torch.Tensor) else \
            [item for item in result if isinstance(item, torch.Tensor)] \
            if isinstance(result, (tuple, list)) else []
        if name in _FROM_DATA:
            for output in outputs:
                listener.on_tensor(self.registry.tensor(output), "data")
            return
        registry = self.registry
        inputs = _tensors_in(kwargs.values(), _tensors_in(args, []))
        if not any(tensor.requires_grad or registry.known_tensor(tensor) is not None
                   for tensor in inputs):
            return  # nothing gradients could follow: the program's data, not a flow
        if name == "detach" and inputs and outputs:
            listener.on_detach(registry.tensor(inputs[0]), registry.tensor(outputs[0]),
                               "detach")
            return
        listener.on_untracked_op(name, tuple(registry.tensor(tensor) for tensor in inputs),
                                 tuple(registry.tensor(output) for output in outputs),
                                 grad_enabled)

    def _moved(self, tensor) -> None:
        adapter = self.registry.known_tensor(tensor)
        if adapter is not None:
            adapter.refresh()

    def _op(self, func, args: tuple, kwargs: dict):
        # The common path, per torch call of the program: kept to a few checks, the
        # bridge's work guarded inline (a failure of ours is never the program's).
        if not _grad_enabled():
            # No node can be made; inside a custom Function's forward, note its call.
            inside = self.guarded(self.custom.note_forward, 4)
            result = func(*args, **kwargs)
            if type(result) is torch.Tensor and result.requires_grad and result.grad_fn is None:
                self.guarded(self._made_leaf, result, args, func)
            elif not inside and events.listener is not None:
                self.guarded(self._untracked, func, args, kwargs, result, False)
            return result
        if self.custom._calls:  # a custom Function's node waits to be reported
            inputs = _tensors_in(kwargs.values(), _tensors_in(args, []))
            if inputs:
                self.guarded(self.custom.introduce, inputs)
        first = _next_sequence_nr()
        result = func(*args, **kwargs)
        if _next_sequence_nr() == first:  # no node was made: at most a new leaf to report
            if type(result) is torch.Tensor and result.requires_grad and result.grad_fn is None:
                self.guarded(self._made_leaf, result, args, func)
            elif events.listener is not None:
                self.guarded(self._untracked, func, args, kwargs, result, True)
            return result
        try:
            if isinstance(result, torch.Tensor):
                self._record(args, kwargs, [result], first)
            elif isinstance(result, (tuple, list)):
                outputs = [item for item in result if isinstance(item, torch.Tensor)]
                if outputs:
                    self._record(args, kwargs, outputs, first)
        except Exception as error:  # noqa: BLE001 - reported at the end, see failed()
            self.failed(error)
        return result

    def _record(self, args: tuple, kwargs: dict, outputs: list, first: int, site=None) -> None:
        """Report the nodes this call made, oldest first: a composite op (``F.linear``) makes
        inner nodes (``TBackward0``) before the one its output points to.

        The nodes a call made are those numbered from ``first`` (torch's sequence number
        before the call) on; older ones reached through them (a graph built before the
        recording) are adopted by the recorder as they are, without this call's line.
        """
        registry = self.registry
        tops = []
        for tensor in outputs:
            fn = tensor.grad_fn
            if fn is None:
                continue
            if id(fn.metadata) not in registry._nodes and (
                    not tops or all(fn is not seen for seen in tops)):
                if tensor.is_meta or tensor.layout != torch.strided:
                    return  # no values to read: left unrecorded
                tops.append(fn)
        if not tops:
            if len(outputs) == 1 and outputs[0].requires_grad and outputs[0].grad_fn is None:
                self._made_leaf(outputs[0], args)
            return
        listener = events.listener
        if listener is None:
            return
        if site is None:
            # event_site: the user's frame it finds is left for the recorder's on_op, which
            # names tensors after its variables (one walk up the stack, not two).
            site = event_site(_OP_CALLER)
        adapters = [registry.tensor(tensor) for tensor in outputs]
        call_args = self._adapt_args(args, kwargs)
        stack = self.scopes.stack  # the innermost module being called (scopes.current())
        self._op_site = (site, stack[-1] if stack else None, first, _next_sequence_nr())
        made: list = []
        registry.holding = True
        try:
            for fn in tops:
                registry.node(fn, made)
        finally:
            self._op_site = None
            registry.holding = False
        try:
            self._report(listener, made, tops, outputs, adapters, call_args)
        finally:
            event_frame.frame = None  # not taken (no op reported): no later event's
            for node in made:  # the saved tensors were held for the report only
                for saved in node._saved:
                    saved._held = None

    def _report(self, listener, made: list, tops: list, outputs: list, adapters: list,
                call_args: tuple) -> None:
        """on_op for each node a call made, oldest first. A node inside a composite op has
        no output the program sees; where a node saved that output, it is that tensor."""
        registry = self.registry
        inner_outputs: dict[tuple, object] | None = None  # (node key, output_nr) -> tensor
        top_keys = {id(tops[0].metadata): tops[0]} if len(tops) == 1 else \
            {id(fn.metadata): fn for fn in tops}
        if len(made) > 1:
            made.sort(key=_sequence_of)
        for node in made:
            fn = top_keys.get(node._key)
            wired = [None] * max(1, node._outputs)
            if fn is not None:
                for tensor, adapter in zip(outputs, adapters):
                    if tensor.grad_fn is fn and tensor.output_nr < len(wired):
                        wired[tensor.output_nr] = adapter
                args = call_args
            elif node._site is not None:  # made inside this call (not an older node)
                if inner_outputs is None:  # only composite calls (F.linear) get here
                    inner_outputs = _saved_outputs(made)
                for output_nr in range(len(wired)):
                    tensor = inner_outputs.get((node._key, output_nr))
                    if tensor is not None:
                        wired[output_nr] = registry.tensor(tensor)
                args = tuple(child.variable for child, _ in node.next_functions
                             if child is not None and child._is_accumulate)
            else:
                continue
            self.emitted += 1
            listener.on_op(node, args, tuple(wired))
            for item in args:  # used_in_op(args, wired), inline: per op reported
                if item.__class__ is TorchTensor:
                    item.__dict__["_in_op"] = True
            for item in wired:
                if item is not None:
                    item.__dict__["_in_op"] = True

    @staticmethod
    def used_in_op(*groups) -> None:
        """Mark adapters that appeared in a reported op (see CustomFunctions._argument)."""
        for group in groups:
            for item in group:
                if isinstance(item, TorchTensor):
                    item.__dict__["_in_op"] = True

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

    def _made_leaf(self, tensor, args: tuple, func=None) -> None:
        """A new leaf that requires grad (``torch.randn(..., requires_grad=True)``;
        ``torch.tensor(data, ...)`` is made from data: a round trip's way back, maybe)."""
        if any(tensor is arg for arg in args):
            return
        listener = events.listener
        if listener is not None:
            self.emitted += 1
            kind = "data" if getattr(func, "__name__", "") in _FROM_DATA else "factory"
            listener.on_tensor(self.registry.tensor(tensor), kind)

    def site_for(self, fn):
        """(site, module scope) for a node being adapted now: the call being recorded (if
        that call made it), or the apply() call of a custom Function's node."""
        current = self._op_site
        if current is not None:
            site, module, first, last = current
            if first <= fn._sequence_nr() < last:
                return site, module
        return self.custom.site_for(fn) or (None, None)

    def watch_node(self, fn, node) -> None:
        self.passes.watch_node(fn, node)

    def introduce(self, tensors: list) -> None:
        self.custom.introduce(tensors)

    # -- in-place ----------------------------------------------------------------------
    def _inplace(self, func, args: tuple, kwargs: dict, in_step: list | None = None):
        # Per in-place call: the versions before, then the call, then what moved -- the
        # bridge's part guarded inline. ``in_step``: the targets that matter of a call
        # inside an optimizer's step (see _in_step).
        grad_mode = _grad_enabled()
        try:
            if grad_mode and self.custom.pending:
                inputs = _tensors_in(kwargs.values(), _tensors_in(args, []))
                if inputs:
                    self.custom.introduce(inputs)
            if in_step is not None:
                targets = in_step
            else:
                targets = self._targets(args, kwargs) if kwargs else \
                    _tensors_in(args[:1], [])
            # Each target's version, and the history its base had (the edge a recorded
            # in-place node replaces), before the call.
            before = []
            for tensor in targets:
                base = tensor._base if grad_mode else None
                base = tensor if base is None else base
                before.append((tensor._version, base, base.grad_fn, base.output_nr))
            prepared = (targets, before, _next_sequence_nr(), in_step is not None)
        except Exception as error:  # noqa: BLE001 - reported at the end, see failed()
            self.failed(error)
            prepared = None
        try:
            result = func(*args, **kwargs)
        except RuntimeError:
            if grad_mode and prepared is not None:
                self.guarded(self._refused, prepared[0], func.__name__)
            raise
        if prepared is not None:
            self.guarded(self._after_inplace, func.__name__, args, kwargs, prepared,
                         grad_mode)
        return result

    def _after_inplace(self, name: str, args: tuple, kwargs: dict, prepared: tuple,
                       grad_mode: bool) -> None:
        targets, before, first, in_step = prepared
        registry = self.registry
        changed = []
        for tensor, (version, base, previous, previous_nr) in zip(targets, before):
            if tensor._version == version:
                continue
            # A change that cannot matter to the trace -- a tensor the trace never saw, not
            # made by a recorded op, in memory no node saved (an optimizer's state) -- is
            # skipped: an optimizer step changes dozens of them.
            group = registry.existing_group(tensor)
            if grad_mode or group is not None or tensor.grad_fn is not None \
                    or registry.known_tensor(tensor) is not None:
                changed.append((tensor, group, base, previous, previous_nr))
        if not changed:
            return
        site = user_site(_INPLACE_CALLER + in_step)
        moves_memory = name in _RESHAPING
        for tensor, group, *_ in changed:
            if group is not None:
                group.note(int(tensor._version), name, site)
            if moves_memory:
                adapter = registry.known_tensor(tensor)
                if adapter is not None:
                    adapter.refresh()
        listener = events.listener
        if listener is None:
            return
        several = len(targets) > 1  # a _foreach_ op: each target is its own change
        # An optimizer's update is reported on its parameter alone (its operands are the
        # step's own state), as tracegrad's optimizers report theirs.
        rest = () if several or in_step else self._adapt_args(args[1:], kwargs)
        last = _next_sequence_nr()
        for tensor, _, base, previous, previous_nr in changed:
            self.emitted += 1
            listener.on_inplace(self._inplace_info(
                tensor, name, base, previous, previous_nr, rest, site, first, last,
                grad_mode))

    def _inplace_info(self, tensor, name: str, base, previous, previous_nr: int, rest: tuple,
                      site, first: int, last: int, grad_mode: bool) -> InplaceInfo:
        """What tracegrad's engine reports for an in-place change (autograd.views), from
        torch: the node the change added to ``base`` (a view's base gets a CopySlices), the
        history it replaced, and the view whose grad_fn torch made anew."""
        registry = self.registry
        node = None
        fn = base.grad_fn if grad_mode else None
        if fn is not None and first <= fn._sequence_nr() < last:  # made by this call
            self._op_site = (site, self.scopes.current(), first, last)
            try:
                node = registry.node(fn)
            finally:
                self._op_site = None
        adapter = registry.tensor(tensor)
        views = ()
        if base is not tensor and node is not None and tensor.grad_fn is not None:
            views = (adapter,)  # torch regenerates the view's grad_fn over the CopySlices
        return InplaceInfo(
            adapter, name, node, (adapter, *rest), registry.tensor(base),
            (registry.node(previous) if previous is not None else None, int(previous_nr)),
            int(tensor._version), site, None, views)

    @staticmethod
    def _targets(args: tuple, kwargs: dict) -> list:
        """The tensors an in-place call writes: ``out=``, else its first argument."""
        if "out" in kwargs:
            return _tensors_in((kwargs["out"],), [])
        first = args[0] if args else kwargs.get("input", kwargs.get("self"))
        return _tensors_in((first,), [])

    def _refused(self, targets: list, op_name: str) -> None:
        """torch refused an in-place op on a leaf that requires grad (or on a view of one):
        its condition is exactly this, checked before anything else."""
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
