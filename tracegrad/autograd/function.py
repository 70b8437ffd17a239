"""``autograd.Function``: user-defined ops, and the same machinery for built-in ops.

A subclass defines ``forward(ctx, *args)`` and ``backward(ctx, *grads)`` as staticmethods
and is called through ``apply``. ``ctx`` *is* the backward node (as in PyTorch), an
instance of a class generated per Function and named ``<Function>Backward``.

Built-in ops (``tracegrad.ops``) subclass ``Op``: their forward takes tensors and returns
arrays, which ``Op.apply`` wraps -- the fast path every ``a * b`` goes through.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .. import backends
from ..errors import AutogradError, InplaceError
from . import events
from . import node as _node_module
from .grad_mode import state
from .node import Node, SavedTensor, _sequence

# tracegrad.tensor.Tensor. tensor.py imports this module before it defines Tensor, so it
# binds the class here once it exists (bind_tensor_class); a function-level import instead
# would cost an import-system lookup on every op.
Tensor: Any = None
_ndarray = np.ndarray
_CPU = backends.CPU
_NO_EDGE = (None, 0)
_new_object = object.__new__
_generic = np.generic
_ALL_TENSOR_SLOTS = tuple(tuple(range(count)) for count in range(9))


def bind_tensor_class(cls) -> None:
    """Called once by tensor.py: the Tensor class the hot paths here and in node.py use."""
    global Tensor
    Tensor = _node_module.Tensor = cls


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
        unpacked = []
        for saved in self._saved:
            unpacked.append(saved.unpack(self) if type(saved) is SavedTensor else saved)
        return tuple(unpacked)

    @property
    def saved_variables(self) -> tuple:
        """The pre-0.4 name of ``saved_tensors``: still accepted, with torch's warning."""
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'",
                      DeprecationWarning, stacklevel=2)
        return self.saved_tensors

    def mark_dirty(self, *tensors) -> None:
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self._materialize_grads = bool(value)

    # -- running backward --------------------------------------------------------------
    def _backward(self, grads: list) -> tuple:
        if self._materialize_grads and len(grads) > 1:
            for index, grad in enumerate(grads):
                if grad is None:
                    grads[index] = _zeros_for(self._output_meta[index])
        results = self._function.backward(self, *grads)
        if results.__class__ is not tuple:
            results = (results,)
        return self._check_results(results)

    def _check_results(self, results: tuple) -> tuple:
        """Map backward's per-argument results onto next_functions edges, validated.

        The common case (a Tensor of the input's exact shape and dtype) costs two
        comparisons; anything else goes through _check_grad, which fixes or explains it.
        """
        if len(results) != self._num_args:
            results = self._trim_results(results)
        metas = self._input_meta
        edge_grads = []
        for edge_index, position in enumerate(self._arg_slots):
            grad = results[position]
            if grad is not None:
                shape, numpy_dtype = metas[edge_index]
                array = grad._array if grad.__class__ is Tensor else None
                if array is None or array.shape != shape or array.dtype is not numpy_dtype:
                    grad = self._check_grad(grad, edge_index, position)
            edge_grads.append(grad)
        return tuple(edge_grads)

    def _trim_results(self, results: tuple) -> tuple:
        expected = self._num_args
        if len(results) > expected and all(r is None for r in results[expected:]):
            return results[:expected]
        raise AutogradError(
            f"function {self.name()} returned an incorrect number of gradients "
            f"(expected {expected}, got {len(results)}). Hint: backward must return "
            "one gradient per forward argument, None for arguments that are not "
            "tensors or need no gradient.")

    def _check_grad(self, grad, edge_index: int, position: int):
        if not isinstance(grad, Tensor):
            raise AutogradError(
                f"function {self.name()} returned a gradient of type {type(grad).__name__} "
                f"at index {position}; expected a Tensor or None.")
        shape, numpy_dtype = self._input_meta[edge_index]
        if grad.shape != shape:
            from ..ops.reduce import is_expandable_to, sum_to

            if not is_expandable_to(shape, grad.shape):
                raise AutogradError(
                    f"Function {self.name()} returned an invalid gradient at index {position} "
                    f"- got {list(grad.shape)} but expected shape compatible with "
                    f"{list(shape)}")
            grad = sum_to(grad, shape)
        if grad._array.dtype != numpy_dtype and numpy_dtype.kind == "f":
            grad = grad.to(numpy_dtype)
        return grad


def _zeros_for(meta):
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
            if events.listener is not None:
                events.listener.on_inplace_refused(tensor, ctx.name())
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
    slots, edges, meta = [], [], []
    for position, arg in enumerate(args):
        if isinstance(arg, Tensor):
            slots.append(position)
            edges.append(arg._edge() if arg.requires_grad else (None, 0))
            meta.append((arg.shape, arg._array.dtype))
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
        output_meta.append((output.shape, output._array.dtype, output.device))
        if id(output) in non_differentiable or output._array.dtype.kind != "f":
            output.requires_grad = False
        else:
            output.requires_grad = True
            output.grad_fn = ctx
            output._output_nr = index
        wired.append(output)
    ctx._output_meta = tuple(output_meta)
    ctx._saved = _save(ctx, ctx._to_save, wired)
    ctx._to_save = ()
    if state.anomaly or events.listener is not None:
        _note_site(ctx)
        if events.listener is not None:
            events.listener.on_op(ctx, args, tuple(wired))
    return tuple(wired)


def _save(node: Node, to_save: tuple, outputs) -> tuple:
    if not to_save:
        return ()
    saved = []
    for value in to_save:
        if isinstance(value, Tensor):
            is_output = False
            for output in outputs:
                if output is value:
                    is_output = True
            saved.append(SavedTensor(value, node, is_output))
        else:
            saved.append(value)  # a plain value (a Python scalar operand) is kept as it is
    return tuple(saved)


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
        if state.grad_enabled:
            for arg in args:
                if isinstance(arg, Tensor) and arg.requires_grad:
                    return _record(cls, args, attrs)
        # Nothing to record: the forward runs on a shared scratch ctx.
        scratch = cls._scratch
        data = cls.forward(scratch, *args, **attrs)
        scratch._to_save = ()
        if data.__class__ is tuple:
            outputs = tuple(Tensor._wrap(item, False) for item in data)
            if cls.is_view:
                _share_storage(args[0], outputs[0])
            return outputs
        output = Tensor._wrap(data, False)
        if cls.is_view:
            _share_storage(args[0], output)
        return output


def _share_storage(base, view) -> None:
    view._version_counter = base._version_counter
    view._base = base if base._base is None else base._base


def _device(array):
    return _CPU if array.__class__ is _ndarray else backends.device_of(array)


def _record(cls, args, attrs):
    """Run a built-in op with a new node wired into the graph (grad mode on, some input
    requires grad). The edges and ``needs_input_grad`` are set before forward runs, so a
    forward can save only what backward will use (as Mul does).

    This runs once per recorded op, so it is written as plain loops over locals.
    """
    ctx = _new_object(cls._node_class)  # Node.__init__ only numbers it: done inline
    ctx._seq = next(_sequence)
    edges, meta, needs = [], [], []
    slots = None  # positions of the tensor args; None while every arg is a tensor
    position = 0
    for arg in args:
        if isinstance(arg, Tensor):
            if slots is not None:
                slots.append(position)
            array = arg._array
            meta.append((array.shape, array.dtype))
            if arg.requires_grad:
                grad_fn = arg.grad_fn
                if grad_fn is not None:
                    edges.append((grad_fn, arg._output_nr))
                else:
                    edges.append((arg._grad_accumulator(), 0))
                needs.append(True)
            else:
                edges.append(_NO_EDGE)
                needs.append(False)
        else:
            if slots is None:
                slots = list(range(position))
            needs.append(False)
        position += 1
    if slots is None:
        slots = _ALL_TENSOR_SLOTS[position] if position < 9 else tuple(range(position))
    ctx._arg_slots, ctx._input_meta, ctx._num_args = tuple(slots), tuple(meta), position
    ctx.next_functions = tuple(edges)
    ctx.needs_input_grad = tuple(needs)
    data = cls.forward(ctx, *args, **attrs)
    if data.__class__ is tuple:
        outputs = []
        output_meta = []
        for index, item in enumerate(data):
            output = _output_tensor(ctx, item, index)
            outputs.append(output)
            output_meta.append((output._array.shape, output._array.dtype, _device(output._array)))
        ctx._output_meta = tuple(output_meta)
    else:  # one output: _output_tensor and Tensor._wrap, inline
        if data.__class__ is not _ndarray and isinstance(data, _generic):
            data = np.asarray(data)  # numpy reductions give scalars; tensors hold arrays
        output = _new_object(Tensor)
        output._array = data
        if data.dtype.kind == "f":
            output.requires_grad = True
            output.grad_fn = ctx
        else:
            output.requires_grad = False
        outputs = (output,)
        ctx._output_meta = _single_output_meta(data)
    if cls.is_view:
        _share_storage(args[0], outputs[0])
    to_save = ctx._to_save
    if cls.saves_output:
        to_save = to_save + (outputs[0],)
    if to_save:
        ctx._saved = _save(ctx, to_save, outputs)
        ctx._to_save = ()
    if state.anomaly or events.listener is not None:
        _note_site(ctx)
        if events.listener is not None:
            events.listener.on_op(ctx, args, tuple(outputs))
    return tuple(outputs) if data.__class__ is tuple else output


_output_meta_cache: dict = {}


def _single_output_meta(array) -> tuple:
    """``((shape, dtype, device),)`` for a one-output node, shared between nodes.

    The device object keeps such a tuple on the garbage collector's books; made afresh for
    each of 100,000 nodes, scanning them was most of a deep forward's time. So the tuple
    is interned per (shape, dtype) for CPU arrays.
    """
    if array.__class__ is not _ndarray:
        return ((array.shape, array.dtype, backends.device_of(array)),)
    key = (array.shape, array.dtype)
    meta = _output_meta_cache.get(key)
    if meta is None:
        if len(_output_meta_cache) >= 4096:  # a program with ever-new shapes: start over
            _output_meta_cache.clear()
        meta = _output_meta_cache[key] = ((array.shape, array.dtype, _CPU),)
    return meta


def _output_tensor(ctx, array, index: int):
    """A new output of ``ctx``: differentiable (with ctx as grad_fn) when floating point."""
    differentiable = array.dtype.kind == "f"
    output = Tensor._wrap(array, differentiable)
    if differentiable:
        output.grad_fn = ctx
        if index:
            output._output_nr = index
    return output


def once_differentiable(backward):
    """Accepted for compatibility: marks a backward that does not support double backward."""
    return backward


class FunctionCtx:  # kept for type annotations written against torch
    pass


__all__ = ["Any", "BackwardFunction", "Function", "Op", "once_differentiable"]
