"""``autograd.Function``: user-defined ops, and the same machinery for built-in ops.

A subclass defines ``forward(ctx, *args)`` and ``backward(ctx, *grads)`` as staticmethods
and is called through ``apply``. ``ctx`` *is* the backward node (as in PyTorch), an
instance of a class generated per Function and named ``<Function>Backward``.

Built-in ops (``tracegrad.ops``) subclass ``Op``: their forward takes tensors and returns
arrays, which ``Op.apply`` wraps -- the fast path every ``a * b`` goes through.
"""

from __future__ import annotations

from typing import Any

from .. import backends
from ..errors import AutogradError, InplaceError
from . import events
from .grad_mode import state
from .node import Node, SavedTensor


class BackwardFunction(Node):
    """The node (and ctx) of a Function call."""

    _function: type  # the Function subclass this node runs the backward of
    _materialize_grads = True
    _to_save: tuple = ()
    _non_differentiable: tuple = ()
    _dirty: tuple = ()
    _arg_slots: tuple = ()  # positions of tensor args, one per next_functions edge
    _input_meta: tuple = ()  # (shape, numpy dtype) per next_functions edge
    _num_args = 0
    needs_input_grad: tuple = ()

    # -- the ctx API ------------------------------------------------------------------
    def save_for_backward(self, *tensors) -> None:
        self._to_save = tensors

    @property
    def saved_tensors(self) -> tuple:
        return tuple(saved.unpack(self) if type(saved) is SavedTensor else saved
                     for saved in self._saved)

    def mark_dirty(self, *tensors) -> None:
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self._materialize_grads = bool(value)

    # -- running backward --------------------------------------------------------------
    def _backward(self, grads: list) -> tuple:
        function = self._function
        if self._materialize_grads:
            for index, grad in enumerate(grads):
                if grad is None:
                    grads[index] = _zeros_for(self._output_meta[index])
        results = function.backward(self, *grads)
        if not isinstance(results, tuple):
            results = (results,)
        return self._check_results(results)

    def _check_results(self, results: tuple) -> tuple:
        """Map backward's per-argument results onto next_functions edges, validated."""
        slots = self._arg_slots
        expected = self._num_args
        if len(results) != expected:
            if len(results) > expected and all(r is None for r in results[expected:]):
                results = results[:expected]
            else:
                raise AutogradError(
                    f"function {self.name()} returned an incorrect number of gradients "
                    f"(expected {expected}, got {len(results)}). Hint: backward must return "
                    "one gradient per forward argument, None for arguments that are not "
                    "tensors or need no gradient.")
        edge_grads = []
        for edge_index, position in enumerate(slots):
            grad = results[position]
            if grad is not None:
                grad = self._check_grad(grad, edge_index, position)
            edge_grads.append(grad)
        return tuple(edge_grads)

    def _check_grad(self, grad, edge_index: int, position: int):
        from ..tensor import Tensor

        if not isinstance(grad, Tensor):
            raise AutogradError(
                f"function {self.name()} returned a gradient of type {type(grad).__name__} "
                f"at index {position}; expected a Tensor or None.")
        shape, numpy_dtype = self._input_meta[edge_index]
        if grad.shape != shape:
            from ..ops.reduce import sum_to, is_expandable_to

            if not is_expandable_to(shape, grad.shape):
                raise AutogradError(
                    f"Function {self.name()} returned an invalid gradient at index {position} "
                    f"- got {list(grad.shape)} but expected shape compatible with "
                    f"{list(shape)}")
            grad = sum_to(grad, shape)
        if grad.data.dtype != numpy_dtype and numpy_dtype.kind == "f":
            grad = grad.to(numpy_dtype)
        return grad


def _zeros_for(meta):
    from ..tensor import Tensor

    shape, numpy_dtype, device = meta
    xp = backends.module_for(device)
    return Tensor._wrap(xp.zeros(shape, dtype=numpy_dtype), False)


class Function:
    """Base class for custom autograd operations.

    >>> import tracegrad as torch
    >>> class Square(torch.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         (x,) = ctx.saved_tensors
    ...         return 2 * x * grad
    >>> x = torch.tensor([3.0], requires_grad=True)
    >>> Square.apply(x).backward()
    >>> x.grad
    tensor([6.])
    """

    _node_class: type
    _node_kind = "function"

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        node_name = cls.__dict__.get("node_name") or f"{cls.__name__}Backward"
        cls._node_class = type(node_name, (BackwardFunction,),
                               {"_function": cls, "_name": node_name,
                                "__module__": cls.__module__})

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args, **kwargs):
        from ..tensor import Tensor

        ctx = cls._node_class()
        grad_enabled = state.grad_enabled
        needs = tuple(grad_enabled and isinstance(arg, Tensor) and arg.requires_grad
                      for arg in args)
        ctx.needs_input_grad = needs
        previous = state.grad_enabled
        state.grad_enabled = False
        try:
            outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            state.grad_enabled = previous
        is_tuple = isinstance(outputs, tuple)
        output_tuple = outputs if is_tuple else (outputs,)
        if any(needs):
            output_tuple = _connect(ctx, args, output_tuple)
            outputs = output_tuple if is_tuple else output_tuple[0]
        elif ctx._dirty:
            _check_dirty_leaves(ctx, args)
        return outputs


def _check_dirty_leaves(ctx, args) -> None:
    for tensor in ctx._dirty:
        if tensor.is_leaf and tensor.requires_grad and state.grad_enabled:
            if events.listeners:
                events.emit("on_inplace_refused", tensor, ctx.name())
            raise InplaceError(_leaf_inplace_message(tensor, ctx.name()))


def _leaf_inplace_message(tensor, op_name: str) -> str:
    from ..errors import describe_tensor

    label = f"'{tensor.name}' " if tensor.name else ""
    return (
        f"a leaf Variable that requires grad is being used in an in-place operation. "
        f"Tensor: {label}{describe_tensor(tensor)}, operation: {op_name}. Hint: wrap the "
        "update in `with tracegrad.no_grad():` (as an optimizer step does), or use an "
        "out-of-place op.")


def _connect(ctx: BackwardFunction, args: tuple, outputs: tuple) -> tuple:
    """Make ctx the grad_fn of a custom Function's outputs and record its edges."""
    from ..tensor import Tensor

    slots, edges, meta = [], [], []
    for position, arg in enumerate(args):
        if isinstance(arg, Tensor):
            slots.append(position)
            edges.append(arg._edge() if arg.requires_grad else (None, 0))
            meta.append((arg.shape, arg.data.dtype))
    ctx._arg_slots, ctx._input_meta, ctx._num_args = tuple(slots), tuple(meta), len(args)
    ctx.next_functions = tuple(edges)
    if ctx._dirty:
        _check_dirty_leaves(ctx, args)
    non_differentiable = {id(t) for t in ctx._non_differentiable}
    input_ids = {id(arg) for arg in args if isinstance(arg, Tensor)}
    dirty_ids = {id(t) for t in ctx._dirty}
    wired, output_meta = [], []
    for index, output in enumerate(outputs):
        if not isinstance(output, Tensor):
            wired.append(output)
            output_meta.append(None)
            continue
        if id(output) in input_ids and id(output) not in dirty_ids:
            output = output.view_as(output)  # returned an input as-is: a fresh alias
        output_meta.append((output.shape, output.data.dtype, output.device))
        if id(output) in non_differentiable or output.data.dtype.kind != "f":
            output.requires_grad = False
        else:
            output.requires_grad = True
            output.grad_fn = ctx
            output._output_nr = index
        wired.append(output)
    ctx._output_meta = tuple(output_meta)
    ctx._saved = _save(ctx, ctx._to_save, wired)
    ctx._to_save = ()
    if state.anomaly or events.listeners:
        _note_site(ctx)
        if events.listeners:
            events.emit("on_op", ctx, args, tuple(wired))
    return tuple(wired)


def _save(node: Node, to_save: tuple, outputs) -> tuple:
    if not to_save:
        return ()
    from ..tensor import Tensor

    output_ids = {id(output) for output in outputs}
    # Plain values (a Python scalar operand) are kept as they are.
    return tuple(SavedTensor(value, node, id(value) in output_ids)
                 if isinstance(value, Tensor) else value for value in to_save)


def _note_site(node: Node) -> None:
    from .site import user_site

    node._site = user_site(3)
    from .module_scope import current_scope

    node._module = current_scope()


class Op(Function):
    """Base of the built-in ops: forward gets tensors (and plain values), returns arrays.

    Class attributes an op may set:
        node_name    PyTorch's grad_fn name, e.g. "MulBackward0"
        saves_output the node saves its own output (ExpBackward0 saves result)
        is_view      the output shares storage and version counter with input 0
    """

    _node_kind = "op"
    saves_output = False
    is_view = False

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls._scratch = cls._node_class()  # ctx for calls that record nothing

    @classmethod
    def apply(cls, *args, **attrs):
        from ..tensor import Tensor

        requires = False
        if state.grad_enabled:
            for arg in args:
                if isinstance(arg, Tensor) and arg.requires_grad:
                    requires = True
                    break
        if not requires:
            data = cls.forward(cls._scratch, *args, **attrs)
            cls._scratch._to_save = ()
            if type(data) is tuple:
                outputs = tuple(Tensor._wrap(item, False) for item in data)
                if cls.is_view:
                    _share_storage(args[0], outputs[0])
                return outputs
            output = Tensor._wrap(data, False)
            if cls.is_view:
                _share_storage(args[0], output)
            return output
        ctx = cls._node_class()
        data = cls.forward(ctx, *args, **attrs)
        return _record(cls, ctx, args, data)


def _share_storage(base, view) -> None:
    view._version_counter = base._version_counter
    view._base = base if base._base is None else base._base


def _record(cls, ctx, args, data):
    """Wire a built-in op's node into the graph (grad mode on, some input requires grad)."""
    from ..tensor import Tensor

    slots, edges, meta, needs = [], [], [], []
    for position, arg in enumerate(args):
        if isinstance(arg, Tensor):
            slots.append(position)
            if arg.requires_grad:
                edges.append(arg._edge())
                needs.append(True)
            else:
                edges.append((None, 0))
                needs.append(False)
            meta.append((arg.shape, arg.data.dtype))
        else:
            needs.append(False)
    ctx._arg_slots, ctx._input_meta, ctx._num_args = tuple(slots), tuple(meta), len(args)
    ctx.next_functions = tuple(edges)
    ctx.needs_input_grad = tuple(needs)
    items = data if type(data) is tuple else (data,)
    outputs = []
    for index, item in enumerate(items):
        differentiable = item.dtype.kind == "f"
        output = Tensor._wrap(item, differentiable)
        if differentiable:
            output.grad_fn = ctx
            output._output_nr = index
        outputs.append(output)
    if cls.is_view:
        _share_storage(args[0], outputs[0])
    ctx._output_meta = tuple((o.shape, o.data.dtype, o.device) for o in outputs)
    to_save = ctx._to_save
    if cls.saves_output:
        to_save = to_save + (outputs[0],)
    if to_save:
        ctx._saved = _save(ctx, to_save, outputs)
        ctx._to_save = ()
    if state.anomaly or events.listeners:
        _note_site(ctx)
        if events.listeners:
            events.emit("on_op", ctx, args, tuple(outputs))
    return tuple(outputs) if type(data) is tuple else outputs[0]


def once_differentiable(backward):
    """Accepted for compatibility: marks a backward that does not support double backward."""
    return backward


class FunctionCtx:  # kept for type annotations written against torch
    pass


__all__ = ["Function", "Op", "BackwardFunction", "once_differentiable", "Any"]
