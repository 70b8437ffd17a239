"""Making tensors: tensor/as_tensor/from_numpy, zeros/ones/empty/full (and ``*_like``),
arange/linspace/logspace/eye, and the random ones (rand, randn, randint, randperm, normal,
bernoulli, multinomial, poisson), with torch's signatures, dtype inference and errors.

Random functions draw from ``tracegrad.random.default_generator`` (or ``generator=``):
reproducible under ``manual_seed``, though not torch's stream. New tensors go to the
default device (``set_default_device``) unless ``device=`` says otherwise.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from . import _dtype, backends
from . import random as _random
from ._layout import preserved
from ._memory_format import check_memory_format, preserve_format
from .errors import (
    ArgumentTypeError,
    ArgumentValueError,
    DTypeError,
    InvalidValueError,
    UnsupportedDTypeError,
)
from .tensor import Tensor

_default_device = backends.CPU


def set_default_device(device) -> None:
    """The device new tensors are made on when a factory gets no ``device=``."""
    global _default_device
    _default_device = backends.CPU if device is None else backends.as_device(device)


def get_default_device() -> backends.device:
    return _default_device


def manual_seed(seed):
    """Seed the default generator (and so nn's initialisation); returns the generator."""
    return _random.manual_seed(seed)


def seed() -> int:
    return _random.seed()


def initial_seed() -> int:
    return _random.initial_seed()


def _finish(array: np.ndarray, device, requires_grad: bool, kind: str = "factory") -> Tensor:
    target = _default_device if device is None else backends.as_device(device)
    if target.type != "cpu":
        array = backends.to_device(array, target)
    result = Tensor._wrap(array, False)
    if requires_grad:
        if array.dtype.kind != "f":  # torch's factory wording (capital O), not the method's
            raise DTypeError(
                f"Only Tensors of floating point and complex dtype can require gradients "
                f"(got {result._describe()}). Hint: pass dtype=torch.float32 or build it "
                "from floats.")
        result.requires_grad_(True)
    _announce(result, kind)
    return result


def _announce(tensor: Tensor, kind: str = "factory") -> None:
    from .autograd import events

    if events.listener is not None:
        events.listener.on_tensor(tensor, kind)


def _size(size, op_name: str = "zeros") -> tuple:
    """Sizes given as ``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])`` or ``f(torch.Size)``."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for value in size:
        if isinstance(value, Tensor) and value.numel() == 1 and \
                value._array.dtype.kind in "iu":
            continue
        if not isinstance(value, (numbers.Integral, np.integer)) or isinstance(value, bool):
            raise ArgumentTypeError(
                f"{op_name}(): argument 'size' must be tuple of ints, but found element of "
                f"type {type(value).__name__} at pos {list(size).index(value)}. Hint: sizes "
                "are whole numbers; use int(...) for a computed size.")
    size = tuple(int(value) for value in size)
    for value in size:
        if value < 0:
            raise InvalidValueError(
                f"Trying to create tensor with negative dimension {value}: {list(size)}. "
                "Hint: sizes count elements, so they are 0 or more.")
    return size


_LAYOUT_OPTIONS = ("layout", "pin_memory", "memory_format")


def _options(op_name: str, options: dict, size=None):
    """torch's keyword options that change nothing here (layout=torch.strided,
    pin_memory; memory_format, which only ``empty`` and the ``*_like`` factories take),
    ``size=`` given by keyword, and clear errors for ``out=`` and for names torch does not
    take either."""
    for name, value in options.items():
        if name == "memory_format":
            if op_name != "empty" and not op_name.endswith("_like"):
                raise TypeError(f"{op_name}() got an unexpected keyword argument '{name}'")
            check_memory_format(value, op_name)
            if op_name == "empty" and value is preserve_format:
                raise RuntimeError("unsupported memory format Preserve")
        elif name == "size":
            size = (value,)
        elif name == "out":
            if value is not None:
                raise ArgumentTypeError(
                    f"{op_name}(): out= is not supported by tracegrad. Hint: assign the "
                    "result instead (y = ...), or copy it in with y.copy_(...).")
        elif name not in _LAYOUT_OPTIONS:
            raise TypeError(f"{op_name}() got an unexpected keyword argument '{name}'")
    return size


def _float_dtype(dtype, op_name: str | None = None) -> np.dtype:
    """The numpy dtype for a random float factory: the default float unless given; an
    integer dtype is torch's NotImplementedError."""
    if dtype is None:
        return _dtype.default_float.numpy
    numpy_dtype = _dtype.to_numpy_dtype(dtype)
    if op_name is not None and numpy_dtype.kind != "f":
        from .ops.pointwise import _torch_type_name

        raise UnsupportedDTypeError(
            f"\"{op_name}\" not implemented for '{_torch_type_name(numpy_dtype)}'. Hint: "
            "random floats need a floating dtype; use randint for integers, or .long() the "
            "result.")
    return numpy_dtype


def _dtype_or_default(dtype) -> np.dtype:
    return _dtype.default_float.numpy if dtype is None else _dtype.to_numpy_dtype(dtype)


# -- from data ---------------------------------------------------------------------------
def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """A new tensor from Python data or an array (always a copy).

    >>> import tracegrad as torch
    >>> torch.tensor([1.0, 2.0]).dtype, torch.tensor([1, 2]).dtype
    (tracegrad.float32, tracegrad.int64)
    """
    array = _as_array(data, dtype, copy=True)
    if device is None and isinstance(data, Tensor):
        device = data.device
    return _finish(array, device, requires_grad, "data")


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a tensor, sharing memory when it already is one (or a NumPy array) of
    the right dtype and device."""
    if isinstance(data, Tensor):
        result = data
        if dtype is not None:
            result = result.to(dtype)
        if device is not None:
            result = result.to(device)
        return result
    if isinstance(data, np.ndarray) and (dtype is None or
                                         _dtype.to_numpy_dtype(dtype) == data.dtype):
        return _finish(_normalize_array(data), device, False, "data")
    return _finish(_as_array(data, dtype, copy=False), device, False, "data")


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``array``."""
    if not isinstance(array, np.ndarray):
        raise ArgumentTypeError(f"expected np.ndarray (got {type(array).__name__})")
    return _finish(_normalize_array(array), backends.CPU, False, "data")


def _normalize_array(array: np.ndarray) -> np.ndarray:
    from .tensor import _normalize_array as normalize

    return normalize(array)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    array = np.asarray(s, dtype=_dtype_or_default(dtype))
    return _finish(array, device, requires_grad)


def _as_array(data, dtype, copy: bool) -> np.ndarray:
    if isinstance(data, Tensor):
        array = backends.to_host(data._array)
    elif isinstance(data, (list, tuple)):
        # built straight in the requested dtype: going through the default float first
        # would round float64 data to float32
        array = _nested_array(data, None if dtype is None else _dtype.to_numpy_dtype(dtype))
    elif isinstance(data, (bool, numbers.Number, np.generic)):
        if isinstance(data, complex):
            raise DTypeError("tracegrad has no complex dtypes (torch.tensor made a "
                             "complex64 tensor here)")
        array = np.asarray(data, dtype=_dtype.array_dtype_for(data) if not isinstance(
            data, np.generic) else None)
    elif isinstance(data, np.ndarray):
        array = data
    elif isinstance(data, str):
        raise ArgumentTypeError(f"new(): invalid data type '{type(data).__name__}'. Hint: "
                                "tensors hold numbers and bools.")
    else:
        array = np.asarray(data)
    if dtype is not None:
        source, array = array, array.astype(_dtype.to_numpy_dtype(dtype), copy=copy)
    elif copy:
        source, array = array, array.copy()
    if copy and source.ndim > 1:  # the copy keeps the source's layout, as torch's does
        array = preserved(array, source)
    if array.dtype.kind not in "fiub":
        raise DTypeError(f"Could not infer dtype of {type(data).__name__} (numpy gave "
                         f"{array.dtype})")
    return _normalize_array(array)


def _nested_array(data, requested=None) -> np.ndarray:
    """Python sequences (and one-element tensors in them) as an array, with torch's
    errors for ragged nesting and torch's dtype inference (bool < int64 < default float;
    a tensor element keeps its dtype's kind)."""
    shape = _nested_shape(data, 0)
    flat: list = []
    kind = _flatten(data, flat)
    if kind == "f":
        numpy_dtype = _dtype.default_float.numpy
    elif kind == "i":
        numpy_dtype = np.dtype(np.int64)
    elif kind == "b":
        numpy_dtype = np.dtype(np.bool_)
    else:  # an empty list
        numpy_dtype = _dtype.default_float.numpy
    tensor_dtype = _first_tensor_dtype(data)
    if tensor_dtype is not None and np.dtype(tensor_dtype).kind == kind:
        numpy_dtype = np.dtype(tensor_dtype)
    if requested is not None:
        numpy_dtype = requested
    return np.asarray(flat, dtype=numpy_dtype).reshape(shape)


def _nested_shape(data, depth: int) -> tuple:
    if not isinstance(data, (list, tuple)):
        return ()
    length = len(data)
    if length == 0:
        return (0,)
    inner = None
    for item in data:
        item_shape = _item_shape(item, depth + 1)
        if inner is None:
            inner = item_shape
        elif item_shape != inner:
            if not item_shape or not inner:
                raise ArgumentTypeError(
                    f"not a sequence (a number and a list side by side at dim {depth + 1}). "
                    "Hint: every element at one depth must be a list of the same length, "
                    "or every one a number.")
            raise ArgumentValueError(
                f"expected sequence of length {inner[0]} at dim {depth + 1} (got "
                f"{item_shape[0]}). Hint: nested lists must be rectangular; pad the "
                "shorter rows or keep them as separate tensors.")
    return (length,) + inner


def _item_shape(item, depth: int) -> tuple:
    if isinstance(item, (list, tuple)):
        return _nested_shape(item, depth)
    if isinstance(item, Tensor):
        # torch reads a tensor in a list as a Python number: [tensor([3.])] is shape (1,)
        if item._array.size != 1:
            raise ArgumentValueError(
                f"only one element tensors can be converted to Python scalars (an element "
                f"at dim {depth} is {item._describe()}). Hint: torch.stack or torch.cat "
                "joins tensors; torch.tensor takes numbers.")
        return ()
    if isinstance(item, np.ndarray):
        return item.shape
    return ()


def _flatten(data, out: list) -> str:
    """Append every scalar of ``data`` to ``out``; return the widest kind seen."""
    kind = ""
    stack = [data]
    order = []
    while stack:  # iterative, depth-first in order
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
            continue
        if isinstance(item, Tensor):
            values = backends.to_host(item._array)
            item_kind = "f" if values.dtype.kind == "f" else (
                "b" if values.dtype.kind == "b" else "i")
            order.extend(values.reshape(-1).tolist())
        elif isinstance(item, np.ndarray):
            item_kind = "f" if item.dtype.kind == "f" else (
                "b" if item.dtype.kind == "b" else "i")
            order.extend(item.reshape(-1).tolist())
        elif isinstance(item, (bool, np.bool_)):
            item_kind = "b"
            order.append(bool(item))
        elif isinstance(item, (numbers.Integral, np.integer)):
            item_kind = "i"
            order.append(int(item))
        elif isinstance(item, (numbers.Real, np.floating)):
            item_kind = "f"
            order.append(float(item))
        elif isinstance(item, complex):
            raise DTypeError("tracegrad has no complex dtypes (torch.tensor made a "
                             "complex64 tensor here)")
        else:
            raise ArgumentTypeError(f"new(): invalid data type '{type(item).__name__}' (an "
                                    f"element {item!r}). Hint: tensors hold numbers and "
                                    "bools.")
        kind = max(kind, item_kind, key=" bif".index)
    out.extend(order)
    return kind


def _first_tensor_dtype(data):
    first = data
    while isinstance(first, (list, tuple)) and first:
        first = first[0]
    if isinstance(first, Tensor):
        return first._array.dtype
    return None


# -- filled ------------------------------------------------------------------------------
def zeros(*size, dtype=None, device=None, requires_grad=False, **options) -> Tensor:
    if options:
        size = _options("zeros", options, size)
    return _finish(np.zeros(_size(size, "zeros"), _dtype_or_default(dtype)), device,
                   requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, **options) -> Tensor:
    if options:
        size = _options("ones", options, size)
    return _finish(np.ones(_size(size, "ones"), _dtype_or_default(dtype)), device,
                   requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False, **options) -> Tensor:
    """Zeros: an ``empty`` tensor's values are unspecified in torch; zeros keep traces
    reproducible."""
    if options:
        size = _options("empty", options, size)
    return _finish(np.zeros(_size(size, "empty"), _dtype_or_default(dtype)), device,
                   requires_grad)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False,
         **options) -> Tensor:
    if options:
        _options("full", options)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if dtype is None:
        numpy_dtype = _dtype.array_dtype_for(fill_value)
        if numpy_dtype is None:
            numpy_dtype = _dtype.default_float.numpy
    else:
        numpy_dtype = _dtype.to_numpy_dtype(dtype)
    shape = _size((size,), "full")
    return _finish(np.full(shape, fill_value, numpy_dtype), device, requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, **options) -> Tensor:
    if options:
        _options("eye", options)
    if m is None:
        m = n
    for name, value in (("n", n), ("m", m)):
        if value < 0:
            raise InvalidValueError(f"{name} must be greater or equal to 0, got {value}")
    return _finish(np.eye(n, m, dtype=_dtype_or_default(dtype)), device, requires_grad)


def _like(other: Tensor, dtype, device):
    return (dtype if dtype is not None else other.dtype,
            device if device is not None else other.device)


def _laid_out_like(input: Tensor, result: Tensor, options: dict) -> Tensor:
    """A ``*_like`` factory's result in the layout its memory_format asks for: by default
    (torch.preserve_format) the input's -- a permuted input gives a permuted result, as
    torch's ``empty_like`` allocates it (the values are the same either way)."""
    form = options.get("memory_format")
    source = input._array
    if (form is None or form is preserve_format) and not source.flags.c_contiguous:
        result._array = preserved(result._array, source)
    return result


def zeros_like(input, *, dtype=None, device=None, requires_grad=False,
               **options) -> Tensor:
    if options:
        _options("zeros_like", options)
    dtype, device = _like(input, dtype, device)
    result = zeros(input.shape, dtype=dtype, device=device, requires_grad=requires_grad)
    return _laid_out_like(input, result, options)


def ones_like(input, *, dtype=None, device=None, requires_grad=False, **options) -> Tensor:
    if options:
        _options("ones_like", options)
    dtype, device = _like(input, dtype, device)
    result = ones(input.shape, dtype=dtype, device=device, requires_grad=requires_grad)
    return _laid_out_like(input, result, options)


def empty_like(input, *, dtype=None, device=None, requires_grad=False,
               **options) -> Tensor:
    if options:
        _options("empty_like", options)
    return zeros_like(input, dtype=dtype, device=device, requires_grad=requires_grad,
                      **options)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False,
              **options) -> Tensor:
    if options:
        _options("full_like", options)
    dtype, device = _like(input, dtype, device)
    result = full(tuple(input.shape), fill_value, dtype=dtype, device=device,
                  requires_grad=requires_grad)
    return _laid_out_like(input, result, options)


# -- ranges ------------------------------------------------------------------------------
def _number(value):
    return value.item() if isinstance(value, Tensor) else value


def _is_float(value) -> bool:
    if isinstance(value, Tensor):
        return value._array.dtype.kind == "f"
    return isinstance(value, (float, np.floating))


def arange(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False,
           **options) -> Tensor:
    """``arange(end)``, ``arange(start, end, step)``: int64 for whole numbers, the default
    float when any bound or the step is a float (torch's inference).

    >>> import tracegrad as torch
    >>> torch.arange(3), torch.arange(0, 1, 0.25)
    (tensor([0, 1, 2]), tensor([0.0000, 0.2500, 0.5000, 0.7500]))
    """
    if options:
        _options("arange", options)
    if end is None:
        start, end = 0, start
    if dtype is None:
        is_float = any(_is_float(v) for v in (start, end, step))
        numpy_dtype = _dtype.default_float.numpy if is_float else np.dtype(np.int64)
    else:
        numpy_dtype = _dtype.to_numpy_dtype(dtype)
    start, end, step = _number(start), _number(end), _number(step)
    original_step, cast_to_zero = step, False
    if numpy_dtype.kind in "iub":  # torch casts the bounds and step to the dtype first
        start, end, step = int(start), int(end), int(step)
        cast_to_zero = original_step != 0 and step == 0
    if step == 0 and cast_to_zero:
        raise ArgumentValueError(
            f"step must be nonzero (arange with dtype={numpy_dtype.name}: the step "
            f"{original_step} became 0 as an integer). Hint: use a float dtype, or a whole-"
            "number step.")
    if step == 0:
        raise InvalidValueError(
            f"step must be nonzero (arange({start}, {end}, {step})). Hint: the step is the "
            "distance between neighbours; for a number of points use linspace.")
    for value in (start, end):
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidValueError(f"unsupported range: {start} -> {end}")
    if (end - start) / step < 0:
        raise InvalidValueError(
            f"upper bound and lower bound inconsistent with step sign (arange({start}, {end}, "
            f"{step})). Hint: count down with a negative step.")
    count = max(math.ceil((end - start) / step), 0)
    if numpy_dtype.kind == "f":  # computed in float64, as torch accumulates, then cast
        values = (start + step * np.arange(count, dtype=np.float64)).astype(numpy_dtype)
    elif all(isinstance(v, (numbers.Integral, np.integer)) for v in (start, step)):
        values = (int(start) + int(step) * np.arange(count, dtype=np.int64)).astype(numpy_dtype)
    else:
        values = (start + step * np.arange(count, dtype=np.float64)).astype(numpy_dtype)
    return _finish(values, device, requires_grad)


def range(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """The deprecated ``torch.range``: like arange but including ``end`` (float default)."""
    import warnings

    if end is None:
        start, end = 0, start
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    numpy_dtype = _dtype_or_default(dtype)
    count = math.floor((_number(end) - _number(start)) / _number(step)) + 1
    values = (_number(start) + _number(step) * np.arange(max(count, 0))).astype(numpy_dtype)
    return _finish(values, device, requires_grad)


def _check_steps(steps) -> int:
    if isinstance(steps, Tensor):
        steps = steps.item()
    if not isinstance(steps, (numbers.Integral, np.integer)) or isinstance(steps, bool):
        raise ArgumentTypeError(f"linspace(): argument 'steps' must be int, not "
                                f"{type(steps).__name__}")
    if steps < 0:
        raise InvalidValueError(f"number of steps must be non-negative (got {steps}). Hint: "
                                "steps is how many points, including both ends.")
    return int(steps)


def _linspace_values(start, end, steps: int, numpy_dtype) -> np.ndarray:
    """torch's CPU formula: start + step*i for the first half, end - step*(steps-1-i) for
    the second, in the output's float type (integers in float64, then truncated)."""
    if steps == 0:
        return np.zeros(0, numpy_dtype)
    if steps == 1:
        return np.full(1, start, dtype=np.float64).astype(numpy_dtype)
    work = numpy_dtype if numpy_dtype.kind == "f" else np.dtype(np.float64)
    first, last = work.type(start), work.type(end)
    step = work.type((np.float64(end) - np.float64(start)) / (steps - 1)) \
        if work != np.float64 else (last - first) / (steps - 1)
    index = np.arange(steps)
    upward = first + step * index.astype(work)
    downward = last - step * (steps - 1 - index).astype(work)
    return np.where(index < steps // 2, upward, downward).astype(numpy_dtype)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False,
             **options) -> Tensor:
    if options:
        _options("linspace", options)
    steps = _check_steps(steps)
    numpy_dtype = _dtype_or_default(dtype)
    values = _linspace_values(_number(start), _number(end), steps, numpy_dtype)
    return _finish(values, device, requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False,
             **options) -> Tensor:
    if options:
        _options("logspace", options)
    steps = _check_steps(steps)
    numpy_dtype = _dtype_or_default(dtype)
    exponents = _linspace_values(_number(start), _number(end), steps, np.dtype(np.float64))
    return _finish((float(base) ** exponents).astype(numpy_dtype), device, requires_grad)


# -- random ------------------------------------------------------------------------------
def randn(*size, generator=None, dtype=None, device=None, requires_grad=False,
          **options) -> Tensor:
    if options:
        size = _options("randn", options, size)
    numpy_dtype = _float_dtype(dtype, "normal_kernel_cpu")
    draws = _random.numpy_generator(generator).standard_normal(_size(size, "randn"))
    return _finish(draws.astype(numpy_dtype), device, requires_grad)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False,
         **options) -> Tensor:
    if options:
        size = _options("rand", options, size)
    numpy_dtype = _float_dtype(dtype, "check_uniform_bounds")
    draws = _random.numpy_generator(generator).random(_size(size, "rand"))
    return _finish(draws.astype(numpy_dtype), device, requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad=False, **options) -> Tensor:
    if options:
        _options("randn_like", options)
    dtype, device = _like(input, dtype, device)
    result = randn(input.shape, dtype=dtype, device=device, requires_grad=requires_grad)
    return _laid_out_like(input, result, options)


def rand_like(input, *, dtype=None, device=None, requires_grad=False, **options) -> Tensor:
    if options:
        _options("rand_like", options)
    dtype, device = _like(input, dtype, device)
    result = rand(input.shape, dtype=dtype, device=device, requires_grad=requires_grad)
    return _laid_out_like(input, result, options)


def randint(*args, size=None, generator=None, dtype=None, device=None,
            requires_grad=False, low=None, high=None, **options) -> Tensor:
    """``randint(high, size)`` or ``randint(low, high, size)``: whole numbers in
    [low, high), int64 unless ``dtype`` says otherwise."""
    if options:
        _options("randint", options)
    positional = list(args)
    if size is None and positional and isinstance(positional[-1], (tuple, list)):
        size = positional.pop()
    if len(positional) == 2:
        low, high = positional
    elif len(positional) == 1:
        if high is None:
            high = positional[0]
        else:
            low = positional[0]
    elif positional:
        raise ArgumentTypeError("randint() received an invalid combination of arguments: "
                                "expected (high, size) or (low, high, size)")
    low = 0 if low is None else _number(low)
    if high is None or size is None:
        raise ArgumentTypeError("randint() missing required arguments: expected "
                                "randint(high, size) or randint(low, high, size), size a "
                                "tuple of ints")
    high = _number(high)
    if low >= high:
        raise InvalidValueError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}. "
            "Hint: randint(low, high, size) draws from [low, high).")
    numpy_dtype = np.dtype(np.int64) if dtype is None else _dtype.to_numpy_dtype(dtype)
    draws = _random.numpy_generator(generator).integers(int(low), int(high),
                                                        _size((size,), "randint"))
    return _finish(draws.astype(numpy_dtype), device, requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, device=None,
                 requires_grad=False, **options) -> Tensor:
    if options:
        _options("randint_like", options)
    if high is None:
        low, high = 0, low
    dtype, device = _like(input, dtype, device)
    result = randint(low, high, tuple(input.shape), dtype=dtype, device=device,
                     requires_grad=requires_grad)
    return _laid_out_like(input, result, options)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False,
             **options) -> Tensor:
    if options:
        _options("randperm", options)
    if n < 0:
        raise InvalidValueError(f"n must be non-negative, got{n}")
    numpy_dtype = np.dtype(np.int64) if dtype is None else _dtype.to_numpy_dtype(dtype)
    permutation = _random.numpy_generator(generator).permutation(int(n))
    return _finish(permutation.astype(numpy_dtype), device, requires_grad)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False, **options) -> Tensor:
    """torch.normal's overloads: (Tensor, Tensor), (Tensor, float), (float, Tensor) give
    samples shaped like the broadcast parameters; (float, float, size) a new tensor."""
    if options:
        _options("normal", options)
    from .ops import sampling

    mean_is_tensor, std_is_tensor = isinstance(mean, Tensor), isinstance(std, Tensor)
    if mean_is_tensor and std_is_tensor:
        return sampling.Normal.apply(mean, std, generator)
    if mean_is_tensor:
        return sampling.NormalTensorFloat.apply(mean, float(std), generator)
    if std_is_tensor:
        return sampling.NormalFloatTensor.apply(float(mean), std, generator)
    if size is None:
        raise ArgumentTypeError(
            "normal() received an invalid combination of arguments: with a number for both "
            "mean and std, size is required (normal(mean, std, size)). Hint: pass a tuple "
            "of ints as size.")
    if std < 0:
        raise InvalidValueError(f"normal expects std >= 0.0, but found std {std}")
    numpy_dtype = _float_dtype(dtype, "normal_kernel_cpu")
    draws = _random.numpy_generator(generator).normal(mean, std, _size((size,), "normal"))
    return _finish(draws.astype(numpy_dtype), device, requires_grad)


def bernoulli(input, p=None, *, generator=None) -> Tensor:
    from .ops import sampling

    if p is not None:
        probabilities = full_like(input, float(p))
        result = sampling.Bernoulli.apply(probabilities, generator)
        return result
    return sampling.Bernoulli.apply(input, generator)


def poisson(input, generator=None) -> Tensor:
    from .ops import sampling

    return sampling.Poisson.apply(input, generator)


def multinomial(input, num_samples, replacement=False, *, generator=None) -> Tensor:
    """Indices drawn from each row's (unnormalised) probabilities."""
    weights = backends.to_host(input._array).astype(np.float64)
    if weights.ndim not in (1, 2):
        raise InvalidValueError(f"prob_dist must be 1 or 2 dim ({input._describe()})")
    if input._array.dtype.kind != "f":
        raise UnsupportedDTypeError(
            f"multinomial only supports floating-point dtypes for input, got: "
            f"{input.dtype.name}")
    rows = weights.reshape(-1, weights.shape[-1])
    if num_samples <= 0:
        raise InvalidValueError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > rows.shape[1]:
        raise InvalidValueError(
            f"cannot sample n_sample > prob_dist.size(-1) samples without replacement "
            f"({num_samples} > {rows.shape[1]}; {input._describe()}). Hint: pass "
            "replacement=True.")
    if (rows < 0).any() or not np.isfinite(rows).all():
        raise InvalidValueError("probability tensor contains either `inf`, `nan` or "
                                "element < 0")
    numpy = _random.numpy_generator(generator)
    picks = []
    for row in rows:
        total = row.sum()
        if total <= 0:
            raise InvalidValueError(f"invalid multinomial distribution (sum of probabilities "
                                    f"<= 0) ({input._describe()}). Hint: every row needs a "
                                    "positive weight.")
        if not replacement and np.count_nonzero(row) < num_samples:
            raise InvalidValueError("invalid multinomial distribution (with replacement=False,"
                                    " not enough non-negative category to sample)")
        picks.append(numpy.choice(row.size, size=num_samples, replace=replacement,
                                  p=row / total))
    result = np.asarray(picks, dtype=np.int64).reshape(weights.shape[:-1] + (num_samples,))
    return _finish(result, input.device, False)


def _random_like(tensor: Tensor, kind: str, a: float, b: float, generator=None):
    """Values for an in-place random fill of ``tensor`` (uniform_, normal_, ...)."""
    shape = tensor._array.shape
    numpy = _random.numpy_generator(generator)
    if kind == "normal":
        array = numpy.normal(a, b, shape)
    elif kind == "uniform":
        array = numpy.uniform(a, b, shape)
    elif kind == "exponential":
        array = numpy.exponential(1.0 / a, shape)
    elif kind == "geometric":
        array = numpy.geometric(a, shape)
    elif kind == "cauchy":
        array = a + b * numpy.standard_cauchy(shape)
    elif kind == "log_normal":
        array = numpy.lognormal(a, b, shape)
    elif kind == "bernoulli":
        array = numpy.random(shape) < a
    elif kind == "random":
        array = numpy.integers(a, b, shape)
    else:
        raise ValueError(f"unknown random fill {kind!r}")
    array = array.astype(tensor._array.dtype)
    return backends.to_device(array, tensor.device)
