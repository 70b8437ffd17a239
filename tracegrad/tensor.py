"""Tensor: an array on a backend plus autograd metadata. Operators delegate to tracegrad.ops."""

from __future__ import annotations

import warnings
import weakref

import numpy as np

from . import _dtype, _memory_format, backends
from ._methods import (
    ArithmeticMethods,
    ComparisonMethods,
    ConstructionMethods,
    IndexingMethods,
    InplaceMethods,
    LegacyMethods,
    MathMethods,
    OrderingMethods,
    PointwiseMethods,
    RearrangeMethods,
    ReductionMethods,
    SamplingMethods,
    SelectionMethods,
    ShapeMethods,
    UnsupportedMethods,
)
from .autograd import engine, events, views
from .autograd.grad_mode import inference_flags, state
from .autograd.inference import INFERENCE_COUNTER, REQUIRES_GRAD_MESSAGE, VERSION_MESSAGE
from .autograd.node import AccumulateGrad, HookDict, RemovableHandle, VersionCounter, add_hook
from .errors import AutogradError, DTypeError, ShapeError, describe_tensor

_new_object = object.__new__
_ndarray = np.ndarray


class Size(tuple):
    """A shape, as ``tensor.shape`` and ``tensor.size()`` return it."""

    def __repr__(self) -> str:
        return f"tracegrad.Size({list(self)})"

    def numel(self) -> int:
        count = 1
        for dimension in self:
            count *= dimension
        return count


class Tensor(ArithmeticMethods, ComparisonMethods, InplaceMethods, MathMethods, ReductionMethods,
             ShapeMethods, IndexingMethods, ConstructionMethods, LegacyMethods,
             # ops-curriculum's families (one line per mixin, so merges stay additive):
             PointwiseMethods,
             OrderingMethods,
             SelectionMethods,
             RearrangeMethods,
             SamplingMethods,
             UnsupportedMethods,  # last: torch names not implemented, so any real one wins
             ):
    """A multi-dimensional array that can record the operations made on it.

    ``data`` is a numpy (CPU) or cupy (CUDA) array. Everything else is autograd metadata:
    ``requires_grad``, ``grad``, ``grad_fn``, the version counter shared with views, and an
    optional display ``name`` that traces and graphs show.
    """

    # Defaults on the class: a new tensor sets only what differs (see Tensor._wrap).
    _grad: Tensor | None = None  # what .grad returns; the engine writes it directly
    grad_fn = None
    name: str | None = None
    _requires_grad = False  # behind the requires_grad property; hot paths read it directly
    _output_nr = 0
    _base: Tensor | None = None  # the root base of a view (autograd/views.py)
    _creation = 0  # how a view was made: views.DEFAULT, NO_GRAD_MODE, MULTI_OUTPUT_NODE, ...
    _grad_from_base = False  # a view requiring grad only because its base does (no edge)
    _accumulator: AccumulateGrad | None = None
    _retains_grad = False
    _backward_hooks: HookDict | None = None  # register_hook's hooks, bound to _hooks_node
    _hooks_node = None
    _post_accumulate_grad_hooks: HookDict | None = None
    _counter: VersionCounter | None = None  # made on first use: see _version_counter
    __array_priority__ = 1000  # numpy scalars defer to our reflected operators
    __hash__ = object.__hash__  # == is elementwise, so hashing is by identity (as in torch)

    def __new__(cls, *args, **kwargs):
        """``torch.Tensor(...)`` is torch's legacy constructor (tracegrad/_legacy.py):
        ``Tensor(2, 3)`` a 2x3 tensor, ``Tensor([1, 2])`` data in the default float dtype,
        ``Tensor(other)`` an alias, ``Tensor()`` an empty one.

        It is built here, not in ``__init__``, because the alias of a tensor that requires
        grad is the output its ``AliasBackward0`` node made (the object the graph records).

        >>> import tracegrad as torch
        >>> torch.Tensor(64, 1).shape, torch.Tensor([1, 2])
        (tracegrad.Size([64, 1]), tensor([1., 2.]))
        """
        if cls is Tensor:
            return _legacy.construct("new", None, None, args, kwargs, exact_dtype=False)
        return _new_object(cls)  # a subclass (Parameter) initializes itself

    def __init__(self, *args, **kwargs) -> None:
        if type(self) is Tensor:
            return  # made by __new__
        # A subclass without an __init__ of its own: the legacy constructor, into self.
        made = _legacy.construct("new", None, None, args, kwargs, exact_dtype=False)
        self.__dict__.update(made.__dict__)

    @staticmethod
    def _wrap(data, requires_grad: bool) -> Tensor:
        """The fast constructor every op uses: no conversion, no checks."""
        if data.__class__ is not _ndarray and isinstance(data, np.generic):
            data = np.asarray(data)  # numpy reductions give scalars; tensors hold arrays
        tensor = _new_object(Tensor)
        tensor._array = data
        tensor._requires_grad = requires_grad
        if inference_flags.entered and state.inference:  # (a plain read, 0 almost always)
            tensor._counter = INFERENCE_COUNTER  # made in inference mode: an inference tensor
        return tensor

    @property
    def _version_counter(self) -> VersionCounter:
        """The counter shared with views, made when first needed (saved, viewed, changed
        in place): most op outputs never need one, and each object made per op costs the
        garbage collector time on deep graphs."""
        counter = self._counter
        if counter is None:
            counter = self._counter = VersionCounter()
        return counter

    @_version_counter.setter
    def _version_counter(self, counter: VersionCounter) -> None:
        self._counter = counter

    @property
    def data(self) -> Tensor:
        """A tensor sharing this one's storage, detached from the graph, as in PyTorch.

        Unlike ``detach()``, it has a version counter of its own: in-place changes made
        through ``.data`` are invisible to autograd (the old way to update weights).
        The backend array itself is ``_array`` (or ``numpy()`` on the CPU).

        >>> import tracegrad as torch
        >>> w = torch.ones(2, requires_grad=True)
        >>> w.data.mul_(3)
        tensor([3., 3.])
        >>> w, w._version
        (tensor([3., 3.], requires_grad=True), 0)
        """
        tensor = _new_object(Tensor)
        tensor._array = self._array
        tensor._requires_grad = False
        if self._counter is INFERENCE_COUNTER:  # (an alias: made in inference mode or not,
            tensor._counter = INFERENCE_COUNTER  # it is an inference tensor iff self is)
        listener = events.listener  # one check when nobody listens
        if listener is not None:
            listener.on_detach(self, tensor, "data")
        return tensor

    @data.setter
    def data(self, value: Tensor) -> None:
        """``x.data = other``: x now holds other's storage (shape and dtype may change);
        its place in the graph, its version and its requires_grad stay."""
        if not isinstance(value, Tensor):
            raise TypeError(
                f"Variable data has to be a tensor, but got {type(value).__name__}")
        if self._requires_grad and value._array.dtype.kind != "f":
            raise DTypeError(
                "data set to a tensor that requires gradients must be floating point or "
                f"complex dtype (got {describe_tensor(value)} for {describe_tensor(self)}). "
                "Hint: convert it with .float() first.")
        self._array = value._array
        accumulator = self._accumulator
        if accumulator is not None:  # the leaf's shape or dtype may have changed
            accumulator._output_meta = ((self._array.shape, self._array.dtype, self.device),)

    @data.deleter
    def data(self) -> None:
        raise AutogradError("Deleting tensor data is not allowed. Delete tensor instead!")

    # -- basic attributes --------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._array.shape)

    def size(self, dim: int | None = None):
        if dim is None:
            return Size(self._array.shape)
        return self._array.shape[_wrap_dim(dim, self._array.ndim)]

    @property
    def dtype(self) -> _dtype.dtype:
        return _dtype.from_numpy_dtype(self._array.dtype)

    @property
    def device(self) -> backends.device:
        return backends.device_of(self._array)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def _xp(self):
        return backends.array_module(self._array)

    @property
    def ndim(self) -> int:
        return self._array.ndim

    def dim(self) -> int:
        return self._array.ndim

    def numel(self) -> int:
        return int(self._array.size)

    nelement = numel

    def element_size(self) -> int:
        return self._array.itemsize

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def _version(self) -> int:
        counter = self._counter
        if counter is INFERENCE_COUNTER:
            raise AutogradError(VERSION_MESSAGE)
        return 0 if counter is None else counter.value

    def is_inference(self) -> bool:
        """Whether this is an inference tensor: made inside ``inference_mode()``, or a view
        of one (autograd/inference.py says what that forbids).

        >>> import tracegrad as torch
        >>> with torch.inference_mode():
        ...     x = torch.ones(2)
        >>> x.is_inference(), x.clone().is_inference(), torch.ones(2).is_inference()
        (True, False, False)
        """
        return self._counter is INFERENCE_COUNTER

    @property
    def output_nr(self) -> int:
        """Which output of its grad_fn this tensor is (0 for a leaf)."""
        return self._output_nr

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def is_floating_point(self) -> bool:
        return self._array.dtype.kind == "f"

    def __len__(self) -> int:
        if self._array.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._array.shape[0]

    def _describe(self) -> str:
        label = f"'{self.name}' " if self.name else ""
        node = self.__dict__.get("grad_fn")  # not the property of a view that raises
        origin = "leaf" if node is None else f"output {self._output_nr} of {node.name()}"
        return f"{label}{describe_tensor(self)}, {origin}"

    # -- autograd ----------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        """Whether gradients are computed for this tensor. Only a leaf's can be set."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, requires_grad: bool) -> None:
        self._set_requires_grad(bool(requires_grad), setter=True)

    @requires_grad.deleter
    def requires_grad(self) -> None:
        raise AutogradError("requires_grad must be a bool")

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` of a leaf in place; returns the tensor.

        >>> import tracegrad as torch
        >>> torch.zeros(2).requires_grad_()
        tensor([0., 0.], requires_grad=True)
        """
        self._set_requires_grad(bool(requires_grad), setter=False)
        return self

    def _set_requires_grad(self, requires_grad: bool, setter: bool) -> None:
        if requires_grad and self._array.dtype.kind != "f":
            # torch's two wordings: the property setter's and requires_grad_()'s
            kinds = "floating point and complex dtype" if setter else "floating point dtype"
            raise DTypeError(
                f"only Tensors of {kinds} can require gradients "
                f"(got {describe_tensor(self)}). Hint: convert it first with .float() or "
                ".double().")
        if requires_grad and self._counter is INFERENCE_COUNTER and not state.inference:
            raise AutogradError(REQUIRES_GRAD_MESSAGE)
        if self.grad_fn is not None:
            if not requires_grad:
                raise AutogradError(
                    "you can only change requires_grad flags of leaf variables. If you want "
                    "to use a computed variable in a subgraph that doesn't require "
                    "differentiation use var_no_grad = var.detach(). (the tensor: "
                    f"{self._describe()})")
            if setter:
                raise AutogradError(
                    "you can only change requires_grad flags of leaf variables. (the tensor: "
                    f"{self._describe()}, which already requires grad)")
            return
        self._requires_grad = requires_grad
        self._grad_from_base = False
        counter = self._counter
        if self._base is None and counter is not None and counter.views:
            views.base_requires_grad_changed(self)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate the gradient of this tensor into the leaves' ``.grad``.

        >>> import tracegrad as torch
        >>> x = torch.tensor([1.0, 2.0], requires_grad=True)
        >>> (x * x).sum().backward()
        >>> x.grad
        tensor([2., 4.])
        """
        engine.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    # -- .grad ---------------------------------------------------------------------------
    @property
    def grad(self) -> Tensor | None:
        """The gradient accumulated by backward (None until then).

        Reading it on a non-leaf that does not retain its gradient warns, as in PyTorch:
        backward never fills it there.
        """
        grad = self._grad
        if grad is None and self.grad_fn is not None and not self._retains_grad:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being "
                "accessed. Its .grad attribute won't be populated during "
                "autograd.backward(). If you indeed want the .grad field to be populated "
                "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
                "access the non-leaf Tensor by mistake, make sure you access the leaf "
                "Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more "
                f"information. (Tensor: {self._describe()}.)", UserWarning, stacklevel=2)
        return grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is None:
            self._grad = None
            listener = events.listener
            if listener is not None:
                listener.on_grad_reset(self)
            return
        if not isinstance(value, Tensor):
            raise TypeError(
                f"assigned grad expected to be a Tensor or None but got grad of type "
                f"{type(value).__name__} (assigning to .grad of {self._describe()}).")
        if value is self:
            raise AutogradError("can't assign Variable as its own grad")
        if value._array.dtype != self._array.dtype:
            raise DTypeError(
                f"attempting to assign a gradient with dtype '{_typemeta_name(value)}' to a "
                f"tensor with grad_dtype '{_scalar_type_name(self)}'. The gradient must "
                "match the tensor's grad_dtype (defaults to the tensor's dtype). (Tensor: "
                f"{self._describe()}.) Hint: convert it first, e.g. "
                f"grad.to({self.dtype!r}).")
        if value.device != self.device:
            from .errors import DeviceError

            raise DeviceError(
                f"attempting to assign a gradient with device type '{value.device.type}' to "
                f"a tensor with device type '{self.device.type}'. Please ensure that the "
                f"gradient and the tensor are on the same device (Tensor: "
                f"{self._describe()}). Hint: grad.to({str(self.device)!r}).")
        if value._array.shape != self._array.shape:
            raise ShapeError(
                f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor "
                f"of size '{list(self.shape)}'. Please ensure that the gradient and the "
                f"tensor are the same size (Tensor: {self._describe()}). Hint: an optimizer "
                "step would broadcast a wrong-sized gradient into the weights.")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None
        listener = events.listener
        if listener is not None:
            listener.on_grad_reset(self)

    def _edge(self) -> tuple:
        """(node, input_nr) that a consumer's next_functions points to."""
        if self.grad_fn is not None:
            return self.grad_fn, self._output_nr
        return self._grad_accumulator(), 0

    def _grad_accumulator(self) -> AccumulateGrad | None:
        accumulator = self._accumulator
        if accumulator is None:
            if self._grad_from_base:
                return None  # requires grad through its base, but leads nowhere (as torch)
            accumulator = self._accumulator = AccumulateGrad(self)
        return accumulator

    def register_hook(self, hook) -> RemovableHandle:
        """``hook(grad)`` runs when the gradient for this tensor is computed; returning a
        tensor (same shape, dtype and device) replaces the gradient.

        Hooks run before the hooks of this tensor's grad_fn, in registration order. A hook
        registered before an in-place op stays with the old version of the tensor.

        >>> import tracegrad as torch
        >>> x = torch.ones(2, requires_grad=True)
        >>> y = x * 3
        >>> _ = y.register_hook(lambda grad: grad * 10)
        >>> y.sum().backward()
        >>> x.grad
        tensor([30., 30.])
        """
        if not self.requires_grad:
            raise AutogradError(
                "cannot register a hook on a tensor that doesn't require gradient "
                f"({self._describe()}). Hint: call .requires_grad_() first, or register the "
                "hook on a tensor that is part of the graph.")
        node, output_nr = self._edge()
        hooks = self._backward_hooks
        if hooks is None or self._hooks_node is not node:
            # A new version of the tensor (after an in-place op) gets a dict of its own,
            # as PyTorch resets _backward_hooks when grad_fn changes.
            hooks = self._backward_hooks = HookDict()
            self._hooks_node = node
            node._register_hook_dict(output_nr, hooks)
        return add_hook(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook) -> RemovableHandle:
        """``hook(tensor)`` runs after backward accumulated a gradient into this leaf's
        ``.grad`` (e.g. an optimizer step per parameter); it must return None.

        >>> import tracegrad as torch
        >>> w = torch.ones(2, requires_grad=True)
        >>> def sgd_step(p):
        ...     p.data.sub_(p.grad)
        >>> _ = w.register_post_accumulate_grad_hook(sgd_step)
        >>> (w * 3).sum().backward()
        >>> w
        tensor([-2., -2.], requires_grad=True)
        """
        if not self.requires_grad:
            raise AutogradError(
                "cannot register a hook on a tensor that doesn't require gradient "
                f"({self._describe()}).")
        if self.grad_fn is not None:
            raise AutogradError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors "
                f"({self._describe()}). Hint: register_hook sees a non-leaf's gradient.")
        hooks = self._post_accumulate_grad_hooks
        if hooks is None:
            hooks = self._post_accumulate_grad_hooks = HookDict()
        return add_hook(hooks, hook)

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward (a no-op on leaves)."""
        if not self.requires_grad:
            raise AutogradError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or self._retains_grad:
            return
        self.grad_fn._add_retains_grad(self._output_nr, weakref.ref(self))
        self._retains_grad = True

    def detach(self) -> Tensor:
        """A tensor sharing this one's storage and version counter, outside the graph (not
        a view: PyTorch's ``detach()._base`` is None)."""
        tensor = Tensor._wrap(self._array, False)
        # An alias: it shares self's counter, so it is an inference tensor iff self is
        # (even inside inference mode, as PyTorch's detach, a view op).
        tensor._counter = self._version_counter
        listener = events.listener  # one check when nobody listens
        if listener is not None:
            listener.on_detach(self, tensor, "detach")
        return tensor

    def detach_(self) -> Tensor:
        """Take this tensor out of the graph in place (a view cannot be)."""
        if self._base is not None and self._array.dtype.kind == "f":
            raise AutogradError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is "
                "set as True, gradients are views of DDP buckets, and hence detach_() cannot "
                "be called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution. "
                f"(the view: {describe_tensor(self)})")
        listener = events.listener
        if listener is not None:  # before the history goes: the tracer sees where it was
            listener.on_detach(self, self, "detach_")
        self.grad_fn = None
        self._requires_grad = False
        return self

    def _detached_copy(self) -> Tensor:
        return Tensor._wrap(self._array.copy(), False)

    # -- conversion --------------------------------------------------------------------
    def item(self):
        if self._array.size != 1:
            raise ValueError(
                f"a Tensor with {self._array.size} elements cannot be converted to Scalar")
        data = self._array
        if data.__class__ is not _ndarray:  # CUDA: through to_host, which raises pending errors
            data = backends.to_host(data)
        value = data.reshape(()).item()
        listener = events.listener
        if listener is not None:
            listener.on_value_out(self, "item", value)
        return value

    def tolist(self):
        value = backends.to_host(self._array).tolist()
        listener = events.listener
        if listener is not None:
            listener.on_value_out(self, "tolist", value)
        return value

    def numpy(self, force: bool = False) -> np.ndarray:
        """The NumPy array (shared, on the CPU). Refused while the tensor requires grad and
        grad mode is on (inside a Function's forward, or under no_grad, it works)."""
        if self._requires_grad and not force and state.grad_enabled:
            raise AutogradError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead.")
        if self.device.type != "cpu":
            if not force:
                raise TypeError(
                    f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() "
                    "to copy the tensor to host memory first.")
            value = backends.to_host(self._array)
        else:
            value = self._array
        listener = events.listener
        if listener is not None:
            listener.on_value_out(self, "numpy", value)
        return value

    def __array__(self, dtype=None, copy=None):
        array = backends.to_host(self._array)
        return array if dtype is None else array.astype(dtype)

    def __bool__(self) -> bool:
        if self._array.size != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with more than one value is ambiguous "
                f"({describe_tensor(self)})")
        return bool(self._array.reshape(()))

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._array.dtype.kind not in "iub":
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __iter__(self):
        """The rows, as torch gives them: ``unbind(0)``'s views (one UnbindBackward0)."""
        if self._array.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __repr__(self) -> str:
        from ._format import format_tensor

        return format_tensor(self)

    def to(self, *args, **kwargs) -> Tensor:
        """``t.to(dtype)``, ``t.to(device)``, ``t.to(other)``, ``t.to(device, dtype)``,
        each with ``non_blocking``, ``copy`` and ``memory_format`` as torch takes them:
        this tensor itself when nothing changes and no copy is asked for, else a copy
        (ToCopyBackward0) in this tensor's layout unless ``memory_format`` says
        otherwise."""
        target_device, target_dtype, copy, form = _to_arguments(args, kwargs)
        result = self
        if target_device is not None:
            device = backends.as_device(target_device)
            if device != self.device:
                result = _conversion.ToDevice.apply(result, device=device)
        contiguous = form is _memory_format.contiguous_format
        if target_dtype is not None or copy or contiguous:
            numpy_dtype = result._array.dtype if target_dtype is None else \
                _dtype.to_numpy_dtype(target_dtype)
            # (torch returns the tensor itself for contiguous_format unless its strides
            # suggest channels-last: suggest_memory_format, not is_contiguous, decides)
            if numpy_dtype != result._array.dtype or (copy and result is self) or \
                    contiguous and _memory_format.suggests_channels_last(result._array):
                result = _conversion.ToDtype.apply(result, dtype=numpy_dtype,
                                                   contiguous=contiguous)
        return result

    def type_as(self, other: Tensor) -> Tensor:
        return self.to(other.dtype)

    def double(self) -> Tensor:
        return self.to(_dtype.float64)

    def float(self) -> Tensor:
        return self.to(_dtype.float32)

    def half(self) -> Tensor:
        return self.to(_dtype.float16)

    def long(self) -> Tensor:
        return self.to(_dtype.int64)

    def int(self) -> Tensor:
        return self.to(_dtype.int32)

    def bool(self) -> Tensor:
        return self.to(_dtype.bool_)

    def cpu(self) -> Tensor:
        return self.to("cpu")

    def cuda(self, device=None) -> Tensor:
        return self.to(backends.as_device(device if device is not None else "cuda"))

    # -- in-place machinery ------------------------------------------------------------
    def _inplace(self, op_name: str, op, *args, **attrs) -> Tensor:
        """Apply ``op(self, *args)`` and write the result into this tensor's storage,
        recorded as PyTorch records an in-place op (autograd/views.py)."""
        return views.apply_inplace(self, op_name, op, args, attrs)

    def _after_inplace(self, op_name: str) -> None:
        """Storage changed in place outside an op (an optimizer's update on the arrays):
        bump the version and tell the listener, as an in-place op does."""
        views.after_inplace(self, op_name)

    def __setitem__(self, index, value) -> None:
        _indexing.setitem(self, index, value)


_TO_KEYWORDS = frozenset({"device", "dtype", "non_blocking", "copy", "memory_format"})
_TO_SIGNATURES = (
    "(torch.device device = None, torch.dtype dtype = None, bool non_blocking = False, "
    "bool copy = False, *, torch.memory_format memory_format = None)",
    "(torch.dtype dtype, bool non_blocking = False, bool copy = False, *, "
    "torch.memory_format memory_format = None)",
    "(Tensor tensor, bool non_blocking = False, bool copy = False, *, "
    "torch.memory_format memory_format = None)")


def _to_arguments(args: tuple, kwargs: dict):
    """``Tensor.to``'s three overloads, as torch reads them: ``(device, dtype, copy,
    memory_format)``; a TypeError in torch's words for anything else."""
    def invalid():
        got = [type(arg).__name__ for arg in args] + [f"{key}={type(value).__name__}"
                                                      for key, value in kwargs.items()]
        return TypeError("to() received an invalid combination of arguments - got ("
                         + ", ".join(got) + "), but expected one of:\n"
                         + "".join(f" * {signature}\n" for signature in _TO_SIGNATURES))

    if not _TO_KEYWORDS.issuperset(kwargs):
        raise invalid()
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    rest = list(args)
    if rest and isinstance(rest[0], Tensor):
        device, dtype = rest[0].device, rest[0].dtype
        del rest[0]
    elif rest and (isinstance(rest[0], (_dtype.dtype, np.dtype)) or
                   rest[0] in (float, int, bool)):
        dtype = rest.pop(0)
    elif rest and isinstance(rest[0], (str, backends.device, int)) and \
            not isinstance(rest[0], bool):
        device = rest.pop(0)
        if rest and (isinstance(rest[0], (_dtype.dtype, np.dtype)) or
                     rest[0] in (float, int, bool)):
            dtype = rest.pop(0)
    if len(rest) > 2 or not all(isinstance(flag, bool) for flag in rest):
        raise invalid()
    copy = bool(rest[1]) if len(rest) == 2 else bool(kwargs.get("copy", False))
    form = kwargs.get("memory_format")
    if form is not None:
        _memory_format.check_memory_format(form, "to")
    return device, dtype, copy, form


def is_inference(input: Tensor) -> bool:  # noqa: A002 - torch's argument name
    """``torch.is_inference(t)``: ``t.is_inference()``, for a tensor only."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_inference(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input._counter is INFERENCE_COUNTER


_TYPEMETA_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
                   "int64": "long int", "int32": "int", "int16": "short int",
                   "int8": "signed char", "uint8": "unsigned char", "bool": "bool"}


def _typemeta_name(tensor: Tensor) -> str:
    """PyTorch's C++ type name of a dtype, as its .grad messages print it ('double')."""
    name = tensor._array.dtype.name
    return _TYPEMETA_NAMES.get(name, name)


def _scalar_type_name(tensor: Tensor) -> str:
    return _dtype.scalar_type_name(tensor._array.dtype)


def _scalar_array(value, like: Tensor):
    xp = like._xp
    array = xp.asarray(value)
    if array.dtype.kind == "f" and like._array.dtype.kind == "f":
        array = array.astype(like._array.dtype)
    return array


def _normalize_array(array: np.ndarray) -> np.ndarray:
    """Check that a NumPy array's dtype is one tracegrad has (every real dtype torch has)."""
    if array.dtype not in _dtype._BY_NUMPY:
        raise DTypeError(
            f"can't convert np.ndarray of type numpy.{array.dtype}. The only supported types "
            "are: float64, float32, float16, int64, int32, int16, int8, uint64, uint32, "
            "uint16, uint8, and bool.")
    return array


from .autograd.function import bind_tensor_class

bind_tensor_class(Tensor)  # before the ops load: their hot paths use the bound class

from ._methods import bind_ops  # noqa: E402 - the op modules need Tensor defined
from .ops import conversion as _conversion  # noqa: E402
from .ops import indexing as _indexing
from .ops.shape import wrap_dim as _wrap_dim  # noqa: E402 - Tensor.size(dim)

bind_ops()

from . import _legacy  # the legacy constructors (Tensor.__new__) build Tensors
