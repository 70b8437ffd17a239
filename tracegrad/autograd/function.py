"""``autograd.Function``: user-defined ops, and the same machinery for built-in ops.

A subclass defines ``forward`` and ``backward`` as staticmethods and is called through
``apply``. ``forward(ctx, *args)`` gets the context; or, PyTorch's newer style,
``forward(*args)`` without it plus ``setup_context(ctx, inputs, output)``. ``ctx`` *is*
the backward node (as in PyTorch), an instance of a class generated per Function and named
``<Function>Backward``.

Built-in ops (``tracegrad.ops``) subclass ``Op``: their forward takes tensors and returns
arrays, which ``Op.apply`` wraps -- the fast path every ``a * b`` goes through.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from .. import backends
from ..errors import AutogradError
from . import events, inference, views
from . import node as _node_module
from .grad_mode import anomaly_flags, grad_off, inference_flags, state
from .inference import INFERENCE_COUNTER
from .module_scope import _scopes  # (_note_site: every op while a tracer listens)
from .node import _NOT_SAVED, _ONE_EDGE, Node, SavedPair, SavedTensor, _sequence
from .node import ZERO_NRS as _ZERO_NRS
from .node import edge_numbers as _edge_numbers
from .node import saved_input as _saved_input
from .node import saved_inputs as _saved_inputs
from .node import saved_pair_value as _saved_pair_value
from .site import event_site

# tracegrad.tensor.Tensor. tensor.py imports this module before it defines Tensor, so it
# binds the class here once it exists (bind_tensor_class); a function-level import instead
# would cost an import-system lookup on every op.
Tensor: Any = None
_ndarray = np.ndarray
_CPU = backends.CPU
_new_object = object.__new__
_generic = np.generic
_share_storage = views.share_storage


def bind_tensor_class(cls) -> None:
    """Called once by tensor.py: the Tensor class the hot paths here and in node.py use."""
    global Tensor
    Tensor = _node_module.Tensor = cls
    views.bind_tensor_class(cls)


class FunctionCtx:
    """What ``forward``/``setup_context`` get as ``ctx``: the API for the backward pass."""

    _to_save: tuple = ()
    _non_differentiable: tuple = ()
    _dirty: tuple = ()
    _materialize_grads = True
    _forward_saved: tuple = ()

    def save_for_backward(self, *tensors) -> None:
        """Keep tensors (or None) for ``backward``, which reads them as ``saved_tensors``;
        using a saved tensor changed in place since then raises in backward."""
        for position, value in enumerate(tensors):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"save_for_backward can only save variables, but argument {position} is "
                    f"of type {type(value).__name__}. Hint: keep non-tensors as attributes "
                    f"of ctx (ctx.value = ...).")
        self._to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        """Keep tensors for ``jvp`` (forward-mode AD, which tracegrad does not run)."""
        for value in tensors:
            if value is not None and not isinstance(value, Tensor):
                raise AssertionError(
                    "save_for_forward expects all arguments to be tensors; you should save "
                    "non-tensors as attributes on ctx.")
        self._forward_saved = tensors

    def mark_dirty(self, *tensors) -> None:
        """Declare inputs that forward modified in place (and returns)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        """Declare outputs that get no gradient (they will not require grad)."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With False, backward receives None (not zeros) for outputs that got no gradient."""
        self._materialize_grads = bool(value)

    def mark_shared_storage(self, *pairs) -> None:
        raise RuntimeError(
            "mark_shared_storage is deprecated. Tensors with shared storages are "
            "automatically tracked. Note that calls to `set_()` are not tracked")

    # PyTorch's public names for what these hold.
    to_save = property(lambda self: self._to_save or None)
    dirty_tensors = property(lambda self: self._dirty or None)
    non_differentiable = property(lambda self: self._non_differentiable or None)
    materialize_grads = property(lambda self: self._materialize_grads)
    saved_for_forward = property(lambda self: self._forward_saved or None)


class BackwardCFunction(Node, FunctionCtx):
    """The node (and ctx) of a Function call; ``grad_fn`` of its outputs."""

    _function: type  # the Function subclass this node runs the backward of
    # Positions of the tensor args, one per next_functions edge, and how many args there
    # were -- set only when some arg is not a tensor (None: every arg is one, edge i is
    # arg i): most calls pass tensors only, and a class default costs them nothing.
    _arg_slots: tuple | None = None
    _num_args = 0
    _input_meta: tuple = ()  # (shape, numpy dtype) per next_functions edge
    _checks_non_tensor_grads = True  # custom Functions; built-in ops return None there
    # The keyword arguments of the apply call that made this node (an op's attributes:
    # dim, shape, ...), set only while a listener watches: see events.Listener.on_op.
    _call_kwargs: Mapping = MappingProxyType({})
    _cleared_saved = False
    needs_input_grad: tuple = ()

    @property
    def _forward_cls(self) -> type:
        return self._function

    @property
    def saved_tensors(self) -> tuple:
        unpacked = []
        for saved in self._saved:
            if saved.__class__ is SavedTensor:
                # SavedTensor.unpack's common case inline -- the saved tensor itself, held
                # (an input), unchanged since and not detached in place; anything else
                # (freed, hooked, changed in place, an output held weakly) goes through
                # unpack and its errors.
                tensor = saved.tensor
                if tensor is None or saved._array is None or \
                        saved.counter.value != saved.version or (
                            saved.producer is not None and tensor.grad_fn is None):
                    tensor = saved.unpack(self)
                unpacked.append(tensor)
            else:
                unpacked.append(saved)
        if self._function.clear_saved_tensors_on_access:
            self._clear_saved()
        return tuple(unpacked)

    def _clear_saved(self) -> None:
        """``clear_saved_tensors_on_access``: the first read hands the tensors over."""
        if self._cleared_saved:
            raise AutogradError(
                "saved_tensors can only be accessed once when "
                "clear_saved_tensors_on_access=True is set on the autograd.Function. Either "
                "access saved_tensors only once, or set clear_saved_tensors_on_access=False.")
        self._cleared_saved = True
        self._saved = ()

    @property
    def saved_variables(self) -> tuple:
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'",
                      DeprecationWarning, stacklevel=2)
        return self.saved_tensors

    def apply(self, *grads):
        """Run the Function's backward on ``grads`` (PyTorch's ``grad_fn.apply``)."""
        return self._function._backward_impl(self, *grads)

    # -- running backward --------------------------------------------------------------
    def _backward(self, grads: list) -> tuple:
        if self._materialize_grads and len(grads) > 1:
            self._materialize(grads)
        results = self._function._backward_impl(self, *grads)
        if results.__class__ is not tuple:
            results = (results,)
        return self._check_results(results)

    def _materialize(self, grads: list) -> None:
        """Zeros in place of the None gradients of tensor outputs (set_materialize_grads);
        a non-tensor output's None stays."""
        metas = self._output_meta
        for index, grad in enumerate(grads):
            if grad is None and metas[index] is not None:
                grads[index] = _zeros_for(metas[index])

    def _backward_raw(self, grads: list) -> list:
        """``_backward`` in a pass that moves backend arrays (no create_graph): the
        gradients wrapped as Tensors for the Function's backward, its results checked as
        ``_check_results`` does and handed back as arrays -- one frame for what the engine
        did in four (a custom Function's node in every step of bench/bench_two_layer.py)."""
        wrap = Tensor._wrap
        if len(grads) == 1:  # one output (MyReLU): no comprehension, whose frame costs more
            tensors = (None if grads[0] is None else wrap(grads[0], False),)
        else:
            tensors = [None if grad is None else wrap(grad, False) for grad in grads]
        if self._materialize_grads and len(tensors) > 1:
            self._materialize(tensors)
        results = self._function._backward_impl(self, *tensors)
        tensors = None  # (the gradients are the Function's to keep or let go)
        if results.__class__ is not tuple:
            results = (results,)
        # (_input_meta has one entry per edge: _edge_results has nothing to do otherwise)
        if self._arg_slots is not None or len(results) != len(self._input_meta):
            results = self._edge_results(results)
        arrays = []
        for edge_index, (grad, meta) in enumerate(zip(results, self._input_meta)):
            if grad is not None:
                array = grad._array if grad.__class__ is Tensor else None
                if array is None or array.shape != meta[0] or array.dtype is not meta[1]:
                    array = self._check_grad(grad, edge_index)._array
                grad = array
            arrays.append(grad)
        return arrays

    def _edge_results(self, results: tuple) -> tuple:
        """backward's per-argument results as one per next_functions edge."""
        slots = self._arg_slots
        if slots is None:  # every argument is a tensor
            expected = len(self._next_nodes)
            if len(results) != expected:
                results = self._trim_results(results, expected)
            return results
        if len(results) != self._num_args:
            results = self._trim_results(results, self._num_args)
        if self._checks_non_tensor_grads and len(slots) != len(results):
            self._check_non_tensor_grads(results)
        return tuple(results[position] for position in slots)

    def _check_results(self, results: tuple) -> tuple:
        """Map backward's per-argument results onto next_functions edges, validated.

        The common case (a Tensor of the input's exact shape and dtype) costs two
        comparisons; anything else goes through _check_grad, which fixes or explains it.
        """
        results = self._edge_results(results)
        edge_grads = []
        for edge_index, (grad, meta) in enumerate(zip(results, self._input_meta)):
            if grad is not None:
                array = grad._array if grad.__class__ is Tensor else None
                if array is None or array.shape != meta[0] or array.dtype is not meta[1]:
                    grad = self._check_grad(grad, edge_index)
            edge_grads.append(grad)
        return tuple(edge_grads)

    def _check_non_tensor_grads(self, results: tuple) -> None:
        slots = set(self._arg_slots)
        for position, grad in enumerate(results):
            if grad is not None and position not in slots:
                raise AutogradError(
                    f"function {self.name()} returned a gradient different than None at "
                    f"position {position + 1}, but the corresponding forward input was not a "
                    "Variable. Hint: return None for arguments that are not tensors.")

    def _trim_results(self, results: tuple, expected: int) -> tuple:
        if len(results) > expected and all(r is None for r in results[expected:]):
            return results[:expected]
        raise AutogradError(
            f"function {self.name()} returned an incorrect number of gradients "
            f"(expected {expected}, got {len(results)}). Hint: backward must return "
            "one gradient per forward argument, None for arguments that are not "
            "tensors or need no gradient.")

    def _check_grad(self, grad, edge_index: int):
        """A gradient that is not a Tensor of its input's exact shape and dtype: summed down
        to the shape (when it broadcasts to it) and cast to the dtype, or refused."""
        position = edge_index if self._arg_slots is None else self._arg_slots[edge_index]
        if not isinstance(grad, Tensor):
            raise AutogradError(
                f"function {self.name()} returned a gradient of type {type(grad).__name__} "
                f"at index {position}; expected a Tensor or None.")
        shape, numpy_dtype = self._input_meta[edge_index]
        if grad._array.shape != shape:
            from ..ops.reduce import is_expandable_to, sum_to  # the rare, explaining path

            if not is_expandable_to(shape, grad._array.shape):
                raise AutogradError(
                    f"Function {self.name()} returned an invalid gradient at index {position} "
                    f"- got {list(grad.shape)} but expected shape compatible with "
                    f"{list(shape)}")
            grad = sum_to(grad, shape)
        if grad._array.dtype != numpy_dtype and numpy_dtype.kind == "f":
            grad = grad.to(numpy_dtype)
        return grad


BackwardFunction = BackwardCFunction  # the name tracegrad used before


class OpNode(BackwardCFunction):
    """The node of a built-in op: its forward may save plain values (a scalar operand) as
    well as tensors, unchecked -- this runs once per recorded op.

    Its backward runs one of two ways from the op's one ``backward`` formula: on Tensors
    (``_backward``: with create_graph, or when the node is called directly), and -- for an
    op whose formula is written against ``tracegrad.ops._math`` (``array_backward``) -- on
    backend arrays (``_backward_arrays``) when no graph is built of the backward pass, so
    each step of the formula is one NumPy/CuPy call instead of a recorded op.
    """

    _checks_non_tensor_grads = False

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        # The op's formula, where the engine's fast path finds it in one attribute read.
        cls._formula = staticmethod(cls._function.backward)

    def save_for_backward(self, *values) -> None:
        self._to_save = values

    _on_arrays = False  # True while _backward_arrays runs the formula

    @property
    def saved_tensors(self) -> tuple:
        """The saved values: Tensors, or -- while the formula runs on arrays -- their
        backend arrays (so one formula serves both ways)."""
        if self._on_arrays:
            # Each saved tensor's array, version-checked (plain values as saved): once per
            # node of a backward pass, so a plain loop, not a generator.
            # (SavedTensor.unpack's common case, inline: anything unusual -- freed, hooked,
            # changed in place, detached in place -- goes through unpack and its errors.)
            arrays = []
            first = self._saved0  # (self._saved without SavedPair's call: see there)
            for saved in self._saved if first is _NOT_SAVED else (first, self._saved1):
                if saved.__class__ is SavedTensor:
                    array = saved._array
                    if array is None or saved.counter.value != saved.version or (
                            saved.producer is not None and saved.tensor is not None
                            and saved.tensor.grad_fn is None):
                        array = saved.unpack(self)._array
                    arrays.append(array)
                elif saved.__class__ is Tensor:  # an input kept as itself, at version 0
                    if saved._counter.value:  # changed since: SavedTensor's error
                        slot = 0 if self._saved0 is saved else 1  # (before _saved makes it)
                        saved = self._saved[slot].unpack(self)
                    arrays.append(saved._array)
                else:
                    arrays.append(saved)
            return tuple(arrays)
        return tuple(saved.unpack(self) if type(saved) is SavedTensor else saved
                     for saved in self._saved)

    def _backward_arrays(self, grads: list) -> tuple:
        """The op's backward on backend arrays: one array (or None) per edge, each of its
        input's shape and dtype."""
        results = self._edge_arrays(grads)
        # The common case -- every result already its edge's array -- is only checked,
        # not copied into a new list.
        for next_node, grad, meta in zip(self._next_nodes, results, self._input_meta):
            if grad is not None and (next_node is None or grad.__class__ is not _ndarray or
                                     grad.shape != meta[0] or grad.dtype is not meta[1]):
                return self._fitted_arrays(results)
        return results

    def _edge_arrays(self, grads: list) -> tuple:
        """The op's formula on backend arrays, one result per edge, as the formula gave them
        (a NumPy scalar, a broadcast shape or a promoted dtype is left to ``_fit_array``).
        The engine's fast path calls this and fits each result as it hands it on, so a
        node's results are looked at once (bench/bench_engine.py (a)); ``_backward_arrays``
        fits them all here."""
        if len(grads) > 1:
            metas = self._output_meta
            for index, grad in enumerate(grads):
                if grad is None and metas[index] is not None:
                    shape, numpy_dtype, device = metas[index]
                    grads[index] = backends.module_for(device).zeros(shape, dtype=numpy_dtype)
        self._on_arrays = True
        try:
            results = self._formula(self, *grads)
        finally:
            self._on_arrays = False  # (a store, not a del: cheaper, same meaning)
        if results.__class__ is not tuple:
            results = (results,)
        if self._arg_slots is not None or len(results) != len(self._next_nodes):
            results = self._edge_results(results)
        return results

    def _fitted_arrays(self, results) -> list:
        """``results`` made into their edges' arrays (see ``_fit_array``); a result for an
        edge no node takes is dropped now, not held to the end of the pass."""
        edge_grads = []
        for next_node, grad, meta in zip(self._next_nodes, results, self._input_meta):
            if grad is not None:
                if next_node is None:
                    grad = None
                elif grad.__class__ is not _ndarray or grad.shape != meta[0] or \
                        grad.dtype is not meta[1]:
                    grad = _fit_array(grad, meta)
            edge_grads.append(grad)
        return edge_grads


def _fit_array(grad, meta: tuple):
    """A backward-on-arrays result made into its edge's array: a NumPy scalar (what a
    reduction gives) into an array, broadcast dimensions summed away, and the dtype of the
    input (a float32 input gets a float32 gradient even where NumPy promoted a step)."""
    shape, numpy_dtype = meta[0], meta[1]
    if isinstance(grad, Tensor):  # a formula that used a Tensor op: take its array
        grad = grad._array
    elif isinstance(grad, _generic):
        grad = np.asarray(grad)
    if grad.shape != shape:
        grad = _sum_to_array(grad, shape)
    if grad.dtype is not numpy_dtype and grad.dtype != numpy_dtype:
        grad = grad.astype(numpy_dtype)
    return grad


def _sum_to_array(array, shape: tuple):
    """``array`` summed over the dimensions broadcasting added to ``shape``."""
    lead = array.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + axis for axis, size in enumerate(shape)
        if size == 1 and array.shape[lead + axis] != 1)
    if axes:
        array = array.sum(axis=axes, keepdims=True)
    return array.reshape(shape)


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
    _backward_cls: type
    _node_base: type = BackwardCFunction
    _node_kind = "function"
    _signature = None  # forward's inspect.Signature, made when apply gets keywords
    # PyTorch's class-level switches of a Function:
    clear_saved_tensors_on_access = False  # saved_tensors can be read once, then released
    boxed_grads_call = False  # backward(ctx, grads) gets one mutable list of gradients
    generate_vmap_rule = False

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        node_name = cls.__dict__.get("node_name") or f"{cls.__name__}Backward"
        # torch's C++ nodes have a qualified name() ("torch::autograd::CopyBackwards") and
        # a plain Python type name ("CopyBackwards"): the class takes the last part
        cls._node_class = cls._backward_cls = type(
            node_name.rsplit("::", 1)[-1], (cls._node_base,),
            {"_function": cls, "_name": node_name, "__module__": cls.__module__})
        cls._signature = None
        cls._backward_impl = staticmethod(_user_backward(cls))

    def __init__(self, *args, **kwargs) -> None:
        warnings.warn(
            f"{self.__class__} should not be instantiated. Methods on autograd functions "
            "are all static, so you should invoke them on the class itself. Instantiating "
            "an autograd function will raise an error in a future version of PyTorch.",
            DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please "
            "use new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it "
            "with forward mode AD.")

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError(
            "To use autograd.Function with vmap, you must either override the vmap "
            "staticmethod or set generate_vmap_rule=True.")

    @classmethod
    def _uses_setup_context(cls) -> bool:
        return cls.setup_context is not Function.setup_context

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward (grad mode off inside, as in PyTorch) and wire the outputs into the
        graph when an input requires grad."""
        setup_style = cls.setup_context is not _BASE_SETUP_CONTEXT  # (_uses_setup_context)
        if kwargs or setup_style:
            args, kwargs = _bind_arguments(cls, args, kwargs, setup_style)
        ctx = _new_object(cls._node_class)  # Node.__init__ only numbers it: done inline
        ctx._seq = next(_sequence)
        grad_enabled = state.grad_enabled
        if grad_enabled:
            executable = connect(ctx, args)
        else:
            ctx.needs_input_grad = (False,) * len(args)
            executable = False
        state.grad_enabled = False
        try:
            if setup_style:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            state.grad_enabled = grad_enabled
        if kwargs and events.listener is not None:
            ctx._call_kwargs = kwargs  # (see events.Listener.on_op)
        if outputs.__class__ is Tensor and executable and outputs._base is None and \
                outputs._array.__class__ is _ndarray and not ctx._dirty and \
                not ctx._non_differentiable and not _is_among(outputs, args):
            # What most Functions return: one new CPU tensor. _wrap_outputs' first case,
            # without its tuples (the tutorial's MyReLU, bench/bench_two_layer.py).
            array = outputs._array
            entry = _output_meta_cache.get((array.shape, array.dtype))
            if entry is None:
                entry = _output_entry(array)
            if entry[1]:  # floating point
                _wire_one_output(ctx, args, outputs, entry[0])
                return outputs
        is_tuple = isinstance(outputs, tuple)
        output_tuple = outputs if is_tuple else (outputs,)
        output_tuple = _wrap_outputs(ctx, args, output_tuple, executable)
        return output_tuple if is_tuple else output_tuple[0]


_BASE_SETUP_CONTEXT = Function.setup_context


def _user_backward(cls):
    """What backward runs: ``backward``, or ``vjp`` where a subclass defines that instead."""
    backward, vjp = cls.backward, cls.vjp
    default = Function.backward
    if backward is not default and vjp is not default and vjp is not backward:
        def both(ctx, *grads):
            raise RuntimeError(
                "Implementing both 'backward' and 'vjp' for a custom Function is not allowed. "
                "You should only implement one of them.")

        return both
    chosen = vjp if vjp is not default and vjp is not backward else backward
    if getattr(cls, "boxed_grads_call", False):
        def boxed(ctx, *grads):
            return chosen(ctx, list(grads))

        return boxed
    return chosen


def _bind_arguments(cls, args: tuple, kwargs: dict, apply_defaults: bool):
    """Keywords naming forward's positional parameters become positional arguments (as
    PyTorch's apply binds them); with setup_context, defaults are filled in too."""
    signature = cls._signature
    if signature is None:
        signature = cls._signature = inspect.signature(cls.forward)
    leading = () if apply_defaults else (None,)  # the ctx parameter of old-style forward
    parameters = signature.parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        for name in kwargs:  # checked first, as Python's own call checks them
            if name not in parameters:
                raise TypeError(f"forward() got an unexpected keyword argument '{name}'")
    try:
        bound = signature.bind(*leading, *args, **kwargs)
    except TypeError as error:  # inspect says "multiple values...", Python "got multiple..."
        text = str(error)
        if text.startswith("multiple values"):
            text = "got " + text
        raise TypeError(f"forward() {text}") from None
    for name in bound.kwargs:
        parameter = signature.parameters.get(name)
        if parameter is not None and parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            raise TypeError(f"forward() got an unexpected keyword argument '{name}'")
    if apply_defaults:
        bound.apply_defaults()
    return bound.args[len(leading):], bound.kwargs


def _wrap_outputs(ctx, args: tuple, outputs: tuple, executable: bool) -> tuple:
    """Make ctx the grad_fn of a custom Function's outputs (when an input requires grad),
    handle the inputs it modified in place (mark_dirty) and outputs that are views: an
    input returned as-is becomes a fresh view of it, and any view output is marked as made
    by a custom Function (an in-place change through it is then refused, as in PyTorch)."""
    if executable and len(outputs) == 1 and not ctx._dirty and not ctx._non_differentiable:
        output = outputs[0]
        if output.__class__ is Tensor and output._base is None and \
                output._array.__class__ is _ndarray and not _is_among(output, args):
            entry = _output_meta_cache.get((output._array.shape, output._array.dtype))
            if entry is None:
                entry = _output_entry(output._array)
            if entry[1]:
                return _wire_one_output(ctx, args, output, entry[0])
    dirty = ctx._dirty
    if dirty:
        dirty = ctx._dirty = _checked_dirty(ctx, args, outputs)
    for tensor in dirty:
        if executable or (state.grad_enabled and tensor._requires_grad):
            views.check_inplace(tensor, ctx.name(), tense="has been")
    non_differentiable = ctx._non_differentiable
    # A view among several differentiable outputs counts as one of a multi-output op's.
    view_creation = views.IN_CUSTOM_FUNCTION
    if executable and len(outputs) > 1 and sum(
            isinstance(output, Tensor) and output._array.dtype.kind == "f"
            and not _is_among(output, non_differentiable)
            for output in outputs) > 1:
        view_creation = views.MULTI_OUTPUT_NODE
    # (The checks below are plain loops, each skipped when its tuple is empty: most calls
    # return one fresh tensor, and generator expressions cost more than the rest of this
    # function then -- bench/bench_two_layer.py.)
    wired, output_meta, dirty_outputs = [], [], []
    for index, output in enumerate(outputs):
        if not isinstance(output, Tensor):
            wired.append(output)
            output_meta.append(None)
            continue
        is_dirty = _is_among(output, dirty)
        if not is_dirty and _is_among(output, args):
            output = _alias(output)  # an input returned as-is: a fresh view of it
        if output._base is not None and not is_dirty:
            output._creation = view_creation
        output_meta.append(_single_output_meta(output._array)[0])
        if not executable:
            wired.append(output)
            continue
        if _is_among(output, non_differentiable) or output._array.dtype.kind != "f":
            output._requires_grad = False
        elif is_dirty:
            dirty_outputs.append((output, index))
        else:
            output._requires_grad = True
            output._grad_from_base = False
            output.grad_fn = ctx
            output._output_nr = index
        wired.append(output)
    if not executable:
        for tensor in dirty:
            views.after_inplace(tensor, ctx.name())
        ctx._to_save = ()
        listener = events.listener
        if listener is not None:
            listener.on_untracked_op(ctx.name(), args, tuple(
                output for output in wired if isinstance(output, Tensor)), state.grad_enabled)
        return tuple(wired)
    ctx._output_meta = tuple(output_meta)
    listener = events.listener
    if anomaly_flags.enabled or events.sites:
        _note_site(ctx)
    changes = []
    for tensor, index in dirty_outputs:  # PyTorch's rebase_history, then the version bump
        previous = views.edge_of(tensor._base if tensor._base is not None else tensor)
        views.rebase_history(tensor, ctx, index)
        changes.append((tensor, previous) + views.bump_version(tensor, ctx.name()))
    ctx._saved = _save(ctx, ctx._to_save, wired)  # after the bump: saved at the new version
    ctx._to_save = ()
    if listener is not None:
        listener.on_op(ctx, args, tuple(wired))
        for tensor, previous, site, regenerated in changes:
            views.notify_inplace(tensor, ctx.name(), ctx, args, previous, site, None,
                                 regenerated)
    return tuple(wired)


def _wire_one_output(ctx, args: tuple, output, output_meta: tuple) -> tuple:
    """``_wrap_outputs`` for what most Functions return: one new floating-point CPU tensor
    (no input returned as-is, no view, nothing marked dirty or non-differentiable). The
    same steps as the general loop, without its lists (bench/bench_two_layer.py)."""
    output._requires_grad = True
    output._grad_from_base = False
    output.grad_fn = ctx
    if output._output_nr:
        output._output_nr = 0
    ctx._output_meta = output_meta
    listener = events.listener
    if anomaly_flags.enabled or events.sites:
        _note_site(ctx, 4)
    wired = (output,)
    to_save = ctx._to_save
    if to_save:
        ctx._saved = _save(ctx, to_save, wired)
        ctx._to_save = ()
    if listener is not None:
        listener.on_op(ctx, args, wired)
    return wired


def _is_among(value, values: tuple) -> bool:
    """``value`` is one of ``values`` (by identity: ``in`` would compare tensors by ==)."""
    for item in values:
        if item is value:
            return True
    return False


def _checked_dirty(ctx, args: tuple, outputs: tuple) -> tuple:
    """The tensors mark_dirty named, checked as PyTorch checks them: each must be returned;
    one that is not an input is ignored with a warning (an error if it is a view); an input
    that is a view can only be modified by a Function with one tensor output."""
    kept = []
    for tensor in ctx._dirty:
        if not any(output is tensor for output in outputs):
            raise AutogradError(
                "Some elements marked as dirty during the forward method were not returned "
                "as output. The inputs that are modified inplace must all be outputs of the "
                "Function.")
        if any(arg is tensor for arg in args):
            kept.append(tensor)
            continue
        message = ("ctx.mark_dirty() received a tensor that was not an input. Only input "
                   "Tensors that have been mutated should be passed to ctx.mark_dirty().")
        if tensor._base is not None:
            raise AutogradError(message)
        warnings.warn(message, UserWarning, stacklevel=4)
    if any(tensor._base is not None for tensor in kept) and \
            sum(isinstance(output, Tensor) for output in outputs) > 1:
        raise AutogradError(
            "If your Function modifies inplace an input that is a view of another Tensor, "
            "your Function cannot return more than one Tensor. This is not supported by the "
            "current autograd engine. You should either make sure the input is not a view "
            "(using .clone() for example) or make your Function only return one Tensor "
            "(potentially splitting it into two Functions: one doing the inplace that "
            "returns a single Tensor and a second one that does the other operations). You "
            "can ask on the forum https://discuss.pytorch.org/ if you need help to do this "
            "change.")
    return tuple(kept)


def _alias(tensor):
    """A new tensor over ``tensor``'s storage: a view of it in grad mode; under no_grad an
    alias sharing the version counter but not tracked as a view (as PyTorch's
    ``_view_as_self_with_no_grad``)."""
    alias = Tensor._wrap(tensor._array.view(), False)
    if state.grad_enabled:
        _share_storage(tensor, alias)
    else:
        alias._counter = tensor._version_counter
    return alias


def _save(node: Node, to_save: tuple, outputs) -> tuple:
    """What forward saved, as the node keeps it: a SavedTensor per tensor (one of the
    node's own outputs is saved without a reference cycle), plain values as they are."""
    if not to_save:
        return ()
    saved = []
    for value in to_save:
        if value.__class__ is Tensor or isinstance(value, Tensor):
            for output in outputs:
                if output is value:
                    # An output without grad (max(dim)'s indices) has no grad_fn to keep
                    # apart from: held as an input is, with no weak references (cheap).
                    saved.append(SavedTensor(value, node, True) if value._requires_grad
                                 else _saved_input(value))
                    break
            else:
                saved.append(_saved_input(value))
        else:
            saved.append(value)  # a plain value (a Python scalar operand) is kept as it is
    return tuple(saved)


def _note_site(node: Node, depth: int = 3) -> None:
    # (event_site: the recorder takes the frame it found, to name tensors; the scope stack
    # and anomaly_flags read inline: every op while a tracer listens, bench_trace.py (b))
    node._site = event_site(depth)
    stack = _scopes.stack
    node._module = stack[-1] if stack else None
    if anomaly_flags.enabled:  # the forward traceback PyTorch's anomaly mode shows
        from .anomaly import note_forward

        note_forward(node)


class _DelayedError(Function):
    """What once_differentiable puts after a backward that ran with create_graph: the
    gradient can be used, but differentiating it again raises."""

    node_name = "Error"

    @staticmethod
    def forward(ctx, message, *tensors):
        ctx.message = message
        return tuple(tensor.view_as(tensor) if tensor is not None else None
                     for tensor in tensors)

    @staticmethod
    def backward(ctx, *grads):
        raise AutogradError(ctx.message)


def once_differentiable(backward):
    """Decorate a Function's ``backward`` that cannot be differentiated again: it runs with
    grad mode off, and differentiating its result (double backward) raises.

    >>> import tracegrad as torch
    >>> class Cube(torch.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x ** 3
    ...     @staticmethod
    ...     @torch.autograd.function.once_differentiable
    ...     def backward(ctx, grad):
    ...         (x,) = ctx.saved_tensors
    ...         return 3 * x ** 2 * grad
    >>> x = torch.tensor([2.0], requires_grad=True)
    >>> (g,) = torch.autograd.grad(Cube.apply(x) ** 2, x, create_graph=True)
    >>> g.grad_fn
    <Error object>
    """

    @functools.wraps(backward)
    def wrapper(ctx, *args):
        previous = state.grad_enabled
        state.grad_enabled = False
        try:
            outputs = backward(ctx, *args)
        finally:
            state.grad_enabled = previous
        if not previous:
            return outputs
        if not any(isinstance(arg, Tensor) and arg._requires_grad for arg in args):
            return outputs
        is_tuple = isinstance(outputs, tuple)
        items = outputs if is_tuple else (outputs,)
        leaves = []
        for item in items:
            if isinstance(item, Tensor):
                item = item.detach()
                item._requires_grad = True
            leaves.append(item)
        wrapped = _DelayedError.apply(
            "trying to differentiate twice a function that was marked with "
            "@once_differentiable", *leaves)
        return wrapped if is_tuple else wrapped[0]

    return wrapper


class InplaceFunction(Function):
    """Kept for code written against old PyTorch; use Function."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace


_FINISH_VIEW_OR_SAVED_OUTPUT, _FINISH_ELEMENTWISE, _FINISH_SAVES_PAIR = 1, 2, 4  # (Op)


class Op(Function):
    """Base of the built-in ops: forward gets tensors (and plain values), returns arrays.

    Class attributes an op may set:
        node_name      PyTorch's grad_fn name, e.g. "MulBackward0"
        saves_output   the node saves its own output (ExpBackward0 saves result), or a
                       tuple of output indices: those outputs, after what forward saved
        is_view        each output shares storage and version counter with input 0
        array_backward backward is written against ``tracegrad.ops._math`` (see
                       ``tracegrad/ops/__init__.py``): it runs on backend arrays when no
                       graph is built of the backward pass, on Tensors when one is
        elementwise    a binary op whose output has its inputs' broadcast shape (add,
                       mul, ...) and, for two inputs of one floating-point dtype, that
                       dtype: given two alike inputs, apply_binary knows the output's
                       shape and dtype without asking the array (see _connect_pair)
        inference_overload  what torch records instead when every tensor argument is an
                       inference tensor: the op it calls with the number wrapped, a
                       function doing what torch's composite kernel does (NotImplemented:
                       nothing recorded after all), or the name of the out= op that
                       refuses: autograd/inference.py
    """

    _node_kind = "op"
    _node_base = OpNode
    saves_output = False
    is_view = False
    array_backward = False
    elementwise = False
    inference_overload = None
    _saves_pair = False  # (set per op class: see __init_subclass__)
    # is_view or saves_output, elementwise and _saves_pair as bits (_FINISH_*), set per op
    # class: _finish reads this one attribute instead of three or four -- each read of a
    # class attribute costs Python 3.11 ~200 instructions, a tenth of a tiny op's forward
    # (bench/bench_engine.py (a), callgrind).
    _finish_flags = 0

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls._scratch = cls._node_class()  # ctx for calls that record nothing
        # The flag belongs to the formula: a subclass that writes its own backward says
        # again whether that one runs on arrays.
        owner = next(klass for klass in cls.__mro__ if "backward" in klass.__dict__)
        cls._node_class._takes_arrays = bool(owner.__dict__.get("array_backward", False))
        # An op that saves two values (Mul, Div, ...) keeps them in two attributes of its
        # node, not a tuple (see node.SavedPair); _finish stores them so.
        slots = [name for name in getattr(cls, "saved_names", ()) if "=" not in name]
        cls._saves_pair = len(slots) == 2 and not cls.saves_output
        cls._finish_flags = ((_FINISH_VIEW_OR_SAVED_OUTPUT if cls.is_view or cls.saves_output
                              else 0) | (_FINISH_ELEMENTWISE if cls.elementwise else 0)
                             | (_FINISH_SAVES_PAIR if cls._saves_pair else 0))
        if cls._saves_pair:
            cls._node_class._saved = SavedPair()

    @classmethod
    def apply(cls, *args, **attrs):
        if not grad_off.threads or state.grad_enabled:  # (grad_mode.grad_off: why)
            for arg in args:
                if isinstance(arg, Tensor) and arg._requires_grad:
                    if arg._counter is INFERENCE_COUNTER and _only_inference(cls, args):
                        if cls.inference_overload is not None:  # (inference.py)
                            return _record_overload(cls, args, attrs)
                        break  # (PyTorch: no autograd kernel for inference tensors alone)
                    return _record(cls, args, attrs)
        return _untracked(cls, args, attrs)


def _record_overload(cls, args: tuple, attrs):
    """A Scalar overload that torch computes by wrapping its number in a (normal) tensor
    and calling another op, whose autograd kernel then runs even though every tensor
    argument is an inference tensor: record that op, or raise what torch raises
    (``cls.inference_overload``; autograd/inference.py says which and why)."""
    overload = cls.inference_overload
    if overload.__class__ is str:  # the op fills a normal tensor through out=: refused
        raise AutogradError(inference.out_message(overload))
    if isinstance(overload, type):
        return _record(overload, args, attrs)
    result = overload(*args, **attrs)  # torch's composite kernel, step by step
    return _untracked(cls, args, attrs) if result is NotImplemented else result


def _only_inference(cls, args: tuple) -> bool:
    """Whether every tensor among ``args`` is an inference tensor: PyTorch then records no
    graph even if one requires grad (inference tensors have no autograd dispatch key, so
    only an op with a normal tensor among its inputs reaches autograd's kernel). A Python
    number given to add/sub/mul/div/floor_divide counts as a normal tensor: torch wraps it
    in one (their ``.Tensor`` overloads), so ``c.div(2)`` is recorded where ``c.pow(2)`` is
    not (nor ``2 - c``: rsub has a Scalar overload, see ``inference_overload``)."""
    for arg in args:
        if isinstance(arg, Tensor):
            if arg._counter is not INFERENCE_COUNTER:
                return False
        elif isinstance(arg, (int, float)) and cls in _wrapped_number_ops():
            return False
    return True


def _wrapped_number_ops() -> tuple:
    from ..ops import arith, binary  # (the ops import this module)

    return arith.Add, arith.Sub, arith.Mul, arith.Div, binary.FloorDivide, binary.DivRounding


def connect(node: Node, args: tuple) -> bool:
    """Wire ``node`` to ``args``' current history -- the one place built-in ops and custom
    Functions get their edges: ``next_functions`` (one ``(node, input_nr)`` per tensor
    argument, ``(None, 0)`` for one that needs no gradient), ``_input_meta`` (the shape and
    dtype of each tensor argument: what its gradient must have), ``needs_input_grad`` (one
    per argument) and, when some argument is not a tensor, which positions are tensors.
    Returns whether any input needs a gradient.

    It runs before forward, so a forward can save only what backward will use (as Mul
    does). Every recorded op runs it: plain loops over locals (bench/bench_engine.py (a)
    keeps it honest), and the common shapes of arguments -- two tensors (most binary ops,
    which apply_binary wires through ``_connect_pair`` directly), one tensor, a tensor and
    a number -- each on a path of its own.
    """
    count = len(args)
    if count == 2:
        first, second = args
        if first.__class__ is Tensor or isinstance(first, Tensor):
            if second.__class__ is Tensor or isinstance(second, Tensor):
                _connect_pair(node, first, second)
                return first._requires_grad or second._requires_grad
            # A tensor and a plain value (x * 2, x.pow(2)): the tensor's edge only.
            node._arg_slots = _FIRST_SLOT
            node._num_args = 2
            return _connect_one(node, first, _NEEDS[2])
    elif count == 1:
        (only,) = args
        if only.__class__ is Tensor or isinstance(only, Tensor):
            return _connect_one(node, only, _NEEDS[1])
    return _connect_any(node, args)


_FIRST_SLOT = (0,)
_NEITHER, _FIRST_ONLY, _SECOND_ONLY, _BOTH = _NEEDS_PAIR = (
    (False, False), (True, False), (False, True), (True, True))


def _edge_node(tensor):
    """The node a tensor that requires grad leads to: its grad_fn, or a leaf's
    AccumulateGrad (None for a view that requires grad only through its base)."""
    node = tensor.grad_fn
    if node is None:
        node = tensor._accumulator
        if node is None:
            node = tensor._grad_accumulator()
    return node


def _connect_pair(node: Node, first, second):
    """``connect`` for two tensor arguments: the branches written out, so that each case
    makes only the tuples it keeps (bench/bench_engine.py (a) runs this on every op).

    Returns, when the two are alike -- CPU arrays of one shape and one dtype, the usual
    case -- the output entry (see _output_entry) of an elementwise op's output of that
    shape and dtype, for apply_binary to hand _finish; None otherwise. Alike inputs are
    looked up by one shape and one dtype, and their output needs no look-up of its own:
    the tuples and hashes of those look-ups were a fifth of a tiny op's forward.
    """
    global _last_alike
    x, y = first._array, second._array
    shape, dtype = x.shape, x.dtype
    if y.dtype is dtype and x.__class__ is _ndarray and y.__class__ is _ndarray and \
            y.shape == shape:
        last = _last_alike
        if dtype is last[1] and shape == last[0]:  # (one tuple comparison, no hashing)
            alike = last[2]
        else:
            alike = _alike_cache.get((shape, dtype))
            if alike is None:
                alike = _alike_entry(shape, dtype)
            _last_alike = (shape, dtype, alike)
        node._input_meta, output_entry = alike
    else:
        key = (shape, dtype, y.shape, y.dtype)
        meta = _input_meta_cache.get(key)  # (see _input_meta)
        node._input_meta = meta if meta is not None else _input_meta(key)
        output_entry = None
    if first._requires_grad:
        first_node = first.grad_fn
        if first_node is None:
            first_node = _edge_node(first)
            first_nr = 0
        else:
            first_nr = first._output_nr
        if second._requires_grad:
            second_node = second.grad_fn
            if second_node is None:
                second_node = _edge_node(second)
                second_nr = 0
            else:
                second_nr = second._output_nr
            node._next0, node._next1 = first_node, second_node  # (see Node._next_nodes)
            node._next_nrs = (first_nr, second_nr) if first_nr or second_nr else \
                _ZERO_NRS[2]
            node.needs_input_grad = _BOTH
            return output_entry
        node._next0, node._next1 = first_node, None
        node._next_nrs = (first_nr, 0) if first_nr else _ZERO_NRS[2]
        node.needs_input_grad = _FIRST_ONLY
        return output_entry
    if second._requires_grad:
        second_node = second.grad_fn
        if second_node is None:
            second_node = _edge_node(second)
            second_nr = 0
        else:
            second_nr = second._output_nr
        node._next0, node._next1 = None, second_node
        node._next_nrs = (0, second_nr) if second_nr else _ZERO_NRS[2]
        node.needs_input_grad = _SECOND_ONLY
        return output_entry
    node._next0 = node._next1 = None
    node._next_nrs = _ZERO_NRS[2]
    node.needs_input_grad = _NEITHER
    return output_entry


def _connect_one(node: Node, tensor, needs: tuple) -> bool:
    """``connect`` where ``tensor`` is the only tensor argument (and the first);
    ``needs`` is ``_NEEDS[number of arguments]``."""
    array = tensor._array
    key = (array.shape, array.dtype)
    meta = _input_meta_cache.get(key)  # (see _input_meta)
    node._input_meta = meta if meta is not None else _input_meta(key)
    if tensor._requires_grad:
        grad_fn = tensor.grad_fn
        node._next1 = _ONE_EDGE  # (one edge, as a node's attributes: see Node._next_nodes)
        if grad_fn is None:
            node._next0 = _edge_node(tensor)
            node._next_nrs = _ZERO_NRS[1]
        else:
            node._next0 = grad_fn
            output_nr = tensor._output_nr
            node._next_nrs = (output_nr,) if output_nr else _ZERO_NRS[1]
        node.needs_input_grad = needs[1]
        return True
    node._next0, node._next1 = None, _ONE_EDGE
    node._next_nrs = _ZERO_NRS[1]
    node.needs_input_grad = needs[0]
    return False


def _connect_any(node: Node, args: tuple) -> bool:
    """``connect`` for any arguments."""
    next_nodes = []
    next_nrs = []
    shapes_and_dtypes = []  # flat: shape, dtype, shape, dtype, ... (the meta cache's key)
    mask = 0  # bit i: argument i needs a gradient
    slots = None  # positions of the tensor args; None while every arg is a tensor
    position = 0
    for arg in args:
        if isinstance(arg, Tensor):
            array = arg._array
            shapes_and_dtypes.append(array.shape)
            shapes_and_dtypes.append(array.dtype)
            if arg._requires_grad:
                grad_fn = arg.grad_fn
                if grad_fn is not None:
                    next_nodes.append(grad_fn)
                    next_nrs.append(arg._output_nr)
                else:
                    next_nodes.append(_edge_node(arg))
                    next_nrs.append(0)
                mask |= 1 << position
            else:
                next_nodes.append(None)
                next_nrs.append(0)
            if slots is not None:
                slots.append(position)
        elif slots is None:
            slots = list(range(position))
        position += 1
    if len(next_nodes) == 2:  # one or two edges: as attributes (see Node._next_nodes)
        node._next0, node._next1 = next_nodes
    elif len(next_nodes) == 1:
        node._next0, node._next1 = next_nodes[0], _ONE_EDGE
    else:
        node._next_nodes = tuple(next_nodes)
    node._next_nrs = _edge_numbers(tuple(next_nrs))
    node._input_meta = _input_meta(tuple(shapes_and_dtypes))
    node.needs_input_grad = _needs(position, mask)
    if slots is not None:
        node._arg_slots = tuple(slots)
        node._num_args = position
    return mask != 0


# Interned per-node tuples. Every tuple a node keeps is an object the cyclic garbage
# collector tracks and scans until it dies; made afresh for each op, they were a large part
# of a deep forward's time (bench/bench_engine.py (b), (c)). Shared ones cost it nothing.
_input_meta_cache: dict = {}
_NEEDS = tuple(tuple(tuple(bool(mask >> bit & 1) for bit in range(count))
                     for mask in range(1 << count)) for count in range(7))


def _input_meta(key: tuple) -> tuple:
    """``((shape, dtype), ...)`` per tensor argument, from the flat ``key``, interned."""
    meta = _input_meta_cache.get(key)
    if meta is None:
        if len(_input_meta_cache) >= 4096:  # a program with ever-new shapes: start over
            _input_meta_cache.clear()
        meta = _input_meta_cache[key] = tuple(
            (key[index], key[index + 1]) for index in range(0, len(key), 2))
    return meta


# (shape, dtype) -> (the ``_input_meta`` of two alike inputs of that shape and dtype, the
# output entry of an elementwise op on them): see _connect_pair.
_alike_cache: dict = {}


# The last pair's (shape, dtype, entry): most binary ops follow one on the same shape and
# dtype (a layer's, a chain's), and comparing the shape with the last one's costs a fifth
# of building, hashing and finding the (shape, dtype) key (bench/bench_engine.py (a)). One
# tuple, replaced whole, so a thread never reads a shape with another pair's entry.
_last_alike: tuple = ((), None, None)


def _alike_entry(shape: tuple, dtype) -> tuple:
    """``_alike_cache``'s entry for CPU inputs of ``shape`` and ``dtype``, interned."""
    if len(_alike_cache) >= 4096:  # a program with ever-new shapes: start over
        _alike_cache.clear()
    entry = _alike_cache[(shape, dtype)] = (_input_meta((shape, dtype, shape, dtype)),
                                           _cpu_output_entry(shape, dtype))
    return entry


def _needs(count: int, mask: int) -> tuple:
    """``needs_input_grad`` for ``count`` arguments from its bit ``mask``, interned."""
    if count < 7:
        return _NEEDS[count][mask]
    return tuple(bool(mask >> bit & 1) for bit in range(count))


def wire(cls, args, attrs) -> tuple:
    """A new node of op ``cls`` connected to ``args``, and the arrays its forward returns:
    ``(node, data)``. No output tensor is made and nobody is told: what _record adds for
    an ordinary op, and an in-place op (autograd/views.py) does its own way."""
    node = _new_object(cls._node_class)  # Node.__init__ only numbers it: done inline
    node._seq = next(_sequence)
    connect(node, args)
    return node, cls.forward(node, *args, **attrs)


def _record(cls, args, attrs):
    """Run a built-in op with a new node wired into the graph (grad mode on, some input
    requires grad), and tell the listener.

    The path every recorded op takes (wire's lines inline: a call and a tuple less per
    op); bench/bench_engine.py (a) and (c) keep it honest.
    """
    node = _new_object(cls._node_class)
    node._seq = next(_sequence)
    connect(node, args)
    return _finish(cls, node, args, cls.forward(node, *args, **attrs), attrs)


def _untracked(cls, args: tuple, attrs):
    """Run a built-in op that records nothing (grad mode off, or no input requires grad):
    its forward on the class's shared scratch ctx, the outputs plain tensors."""
    scratch = cls._scratch
    # (no ** of an empty MappingProxyType, which costs a keys() call)
    data = cls.forward(scratch, *args, **attrs) if attrs else cls.forward(scratch, *args)
    scratch._to_save = ()
    if data.__class__ is tuple:
        outputs = tuple(Tensor._wrap(item, False) for item in data)
        if cls.is_view:
            for output in outputs:
                _share_untracked(args[0], output, True)
        if events.listener is not None:  # one check when nobody listens
            events.listener.on_untracked_op(cls._node_class._name, args, outputs,
                                            state.grad_enabled)
        return outputs
    if data.__class__ is not _ndarray and isinstance(data, _generic):
        data = np.asarray(data)  # numpy reductions give scalars; tensors hold arrays
    output = _new_object(Tensor)  # Tensor._wrap, inline
    output._array = data
    if cls.is_view:
        _share_untracked(args[0], output)
    elif inference_flags.entered and state.inference:  # (a plain read, 0 almost always)
        output._counter = INFERENCE_COUNTER  # made in inference mode: an inference tensor
    if events.listener is not None:  # one check when nobody listens
        events.listener.on_untracked_op(cls._node_class._name, args, (output,),
                                        state.grad_enabled)
    return output


def _share_untracked(base, view, multi_output: bool = False) -> None:
    """``_share_storage`` for a view op that records nothing, except that a view of an
    inference tensor is an inference tensor that PyTorch does not track as a view
    (``_base`` stays None; there is no version counter to share). A view made inside
    inference mode of a normal tensor is an ordinary view (``_share_storage``)."""
    if base._counter is INFERENCE_COUNTER:
        view._counter = INFERENCE_COUNTER
    else:
        _share_storage(base, view, multi_output)


def apply_binary(cls, a, b):
    """``cls.apply(a, b)`` for a binary op called without keywords (``a * b``, ``a + b``):
    the same steps, with the two arguments passed on as themselves.

    Written for speed: packing them into ``*args`` and ``**attrs`` and out again at each
    of apply, _record and forward cost more than the engine's own work for a tiny tensor
    (bench/bench_engine.py (a)). Two tensors are wired by ``_connect_pair`` (connect's own
    two-tensor case); anything else goes through ``connect`` or, with nothing to record,
    ``_untracked``: the steps of ``cls.apply``, one call less.

    >>> import tracegrad as torch
    >>> from tracegrad.ops.arith import Mul
    >>> apply_binary(Mul, torch.ones(2, requires_grad=True), torch.full((2,), 3.0))
    tensor([3., 3.], grad_fn=<MulBackward0>)
    """
    if a.__class__ is Tensor or isinstance(a, Tensor):
        if b.__class__ is Tensor or isinstance(b, Tensor):
            if (a._requires_grad or b._requires_grad) and (
                    not grad_off.threads or state.grad_enabled) and (
                    a._counter is not INFERENCE_COUNTER or b._counter is not INFERENCE_COUNTER):
                node = _new_object(cls._node_class)
                node._seq = next(_sequence)
                alike = _connect_pair(node, a, b)
                return _finish(cls, node, (a, b), cls.forward(node, a, b), _NO_ATTRS, alike)
            return _untracked(cls, (a, b), _NO_ATTRS)
        if a._requires_grad and (not grad_off.threads or state.grad_enabled) and (  # x * 2
                a._counter is not INFERENCE_COUNTER or not _only_inference(cls, (a, b))):
            node = _new_object(cls._node_class)
            node._seq = next(_sequence)
            node._arg_slots = _FIRST_SLOT
            node._num_args = 2
            _connect_one(node, a, _NEEDS[2])
            return _finish(cls, node, (a, b), cls.forward(node, a, b), _NO_ATTRS)
        return _untracked(cls, (a, b), _NO_ATTRS)  # (lr * w.grad under no_grad)
    return cls.apply(a, b)


_NO_ATTRS = MappingProxyType({})  # what apply_binary hands _finish: no keyword arguments


def _finish(cls, node, args: tuple, data, attrs, alike=None):
    """The output tensor of a recorded op from the array its forward returned -- with
    ``node`` as grad_fn when floating point -- then what forward saved, and the listener.
    (Several outputs: ``_finish_outputs``.) ``alike``: what _connect_pair returned for
    two alike inputs, the output entry of an elementwise op on them.

    Every recorded op ends here: bench/bench_engine.py (a), (c) keep it honest.
    """
    flags = cls._finish_flags
    if data.__class__ is _ndarray:
        if alike is not None and flags & _FINISH_ELEMENTWISE and (
                alike[1] or data.dtype is alike[0][0][1]):
            # The inputs' shape (elementwise), and their dtype: asked of the array only
            # when it is not floating point (an elementwise op keeps a float dtype: see Op;
            # a getset read less per op, bench/bench_engine.py (a)).
            entry = alike
        else:
            entry = _output_meta_cache.get((data.shape, data.dtype))
            if entry is None:
                entry = _output_entry(data)
    elif data.__class__ is tuple:
        return _finish_outputs(cls, node, args, data, attrs)
    else:
        if isinstance(data, _generic):
            data = np.asarray(data)  # numpy reductions give scalars; tensors hold arrays
        entry = _output_entry(data)
    result = _new_object(Tensor)  # Tensor._wrap, inline
    result._array = data
    # The class defaults, written: the next op reads them (apply_binary, _connect_pair),
    # and Python 3.11 specializes a read of an instance's own attribute, never a class
    # default's (-200 instructions per op of bench/bench_engine.py (a), callgrind).
    result._counter = None
    result._output_nr = 0
    node._output_meta, differentiable = entry
    if differentiable:
        result._requires_grad = True
        result.grad_fn = node
    if flags & _FINISH_VIEW_OR_SAVED_OUTPUT and cls.is_view:
        _share_storage(args[0], result)
    to_save = node._to_save
    if to_save:
        node._to_save = ()  # (the inputs are let go with it)
        if flags & _FINISH_SAVES_PAIR and len(to_save) == 2:  # (see node.SavedPair)
            if _node_module.hooks_in_use:
                node._saved0, node._saved1 = _saved_inputs(to_save)
            else:  # (saved_inputs' two values, written out: a call and a tuple less)
                first, second = to_save
                node._saved0 = first if first is None else _saved_pair_value(first)
                node._saved1 = second if second is None else _saved_pair_value(second)
        else:
            node._saved = _saved_inputs(to_save)
    if flags & _FINISH_VIEW_OR_SAVED_OUTPUT and cls.saves_output:
        node._saved += _saved_outputs(node, cls.saves_output, (result,))
    if anomaly_flags.enabled or events.listener is not None:  # not a thread-local read
        _announce(node, args, (result,), attrs)
    return result


def _finish_outputs(cls, node, args: tuple, data: tuple, attrs):
    """``_finish`` for an op with several outputs."""
    outputs = []
    output_meta = []
    for index, item in enumerate(data):
        output = _output_tensor(node, item, index)
        outputs.append(output)
        output_meta.append(_output_entry(output._array)[0][0])
    node._output_meta = tuple(output_meta)
    outputs = tuple(outputs)
    if cls.is_view:
        for output in outputs:
            _share_storage(args[0], output, True)
    to_save = node._to_save
    if to_save:
        node._to_save = ()
        node._saved = _saved_inputs(to_save)
    if cls.saves_output:
        node._saved += _saved_outputs(node, cls.saves_output, outputs)
    if anomaly_flags.enabled or events.listener is not None:
        _announce(node, args, outputs, attrs)
    return outputs


def _saved_outputs(node, which, outputs: tuple) -> tuple:
    """The outputs an op saves (``Op.saves_output``: True for output 0, or a tuple of
    indices), each kept without a reference cycle (see SavedTensor)."""
    if which is True:  # (exp, tanh, sigmoid, ...: their result)
        output = outputs[0]
        return (SavedTensor(output, node, True) if output._requires_grad
                else _saved_input(output),)
    # An output without grad (max(dim)'s indices) has no grad_fn to keep apart from: held
    # as an input is, with no weak references (cheap).
    return tuple(SavedTensor(outputs[index], node, True) if outputs[index]._requires_grad
                 else _saved_input(outputs[index]) for index in which)


def _announce(node: Node, args: tuple, outputs: tuple, attrs: dict) -> None:
    """What a recorded op adds while someone watches (anomaly mode, a listener): the
    user's source line on the node (when wanted: Listener.wants_sites), its attributes,
    and the listener's ``on_op``."""
    if anomaly_flags.enabled or events.sites:
        _note_site(node, 4)
    listener = events.listener
    if listener is not None:
        if attrs:
            node._call_kwargs = attrs
        listener.on_op(node, args, outputs)


# (shape, dtype) -> (a one-output node's ``_output_meta``, whether the output is
# differentiable), for CPU arrays: see _output_entry.
_output_meta_cache: dict = {}


def _output_entry(array) -> tuple:
    """``(((shape, dtype, device),), differentiable)`` for an op's output array: its
    node's ``_output_meta`` when it is the only output, and whether it gets a grad_fn
    (floating point).

    The device object keeps such a tuple on the garbage collector's books; made afresh for
    each of 100,000 nodes, scanning them was most of a deep forward's time. So the entry
    is interned per (shape, dtype) for CPU arrays.
    """
    if array.__class__ is not _ndarray:
        return ((array.shape, array.dtype, backends.device_of(array)),), \
            array.dtype.kind == "f"
    return _cpu_output_entry(array.shape, array.dtype)


def _cpu_output_entry(shape: tuple, dtype) -> tuple:
    """``_output_entry`` of a CPU array of ``shape`` and ``dtype``, interned."""
    key = (shape, dtype)
    entry = _output_meta_cache.get(key)
    if entry is None:
        if len(_output_meta_cache) >= 4096:  # a program with ever-new shapes: start over
            _output_meta_cache.clear()
        entry = _output_meta_cache[key] = (((shape, dtype, _CPU),), dtype.kind == "f")
    return entry


def _single_output_meta(array) -> tuple:
    """``((shape, dtype, device),)`` for a one-output node, shared between nodes."""
    return _output_entry(array)[0]


def _output_tensor(ctx, array, index: int):
    """A new output of ``ctx``: differentiable (with ctx as grad_fn) when floating point."""
    differentiable = array.dtype.kind == "f"
    output = Tensor._wrap(array, differentiable)
    if differentiable:
        output.grad_fn = ctx
        if index:
            output._output_nr = index
    return output


def _leaf_inplace_message(tensor, op_name: str) -> str:
    """Kept for callers written before autograd/views.py: the leaf message."""
    return views.leaf_message(tensor, op_name)


__all__ = ["BackwardCFunction", "Function", "FunctionCtx", "InplaceFunction", "Op",
           "once_differentiable"]
