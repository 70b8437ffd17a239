"""Making tensors: tensor, zeros/ones/full/empty(_like), randn/rand/randint, arange, eye.

The random generator starts from a fixed seed, so the same program gives the same values
(and the same trace file) on every run; ``manual_seed`` changes it.
"""

from __future__ import annotations

import numpy as np

from . import _dtype, backends
from .errors import DTypeError
from .tensor import Tensor

_generator = np.random.default_rng(0)


def manual_seed(seed: int):
    """Reseed the generator behind randn/rand/randint (and nn's initialisation)."""
    global _generator
    _generator = np.random.default_rng(int(seed))
    return _generator


def seed() -> int:
    value = int(np.random.SeedSequence().entropy % (2 ** 63))
    manual_seed(value)
    return value


def _finish(array: np.ndarray, device, requires_grad: bool) -> Tensor:
    target = backends.as_device(device)
    if target.type != "cpu":
        array = backends.to_device(array, target)
    result = Tensor._wrap(array, False)
    if requires_grad:
        result.requires_grad_(True)
    _announce(result)
    return result


def _announce(tensor: Tensor) -> None:
    from .autograd import events

    if events.listener is not None:
        events.listener.on_tensor(tensor, "factory")


def _size(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for value in size:
        if not isinstance(value, (int, np.integer)):
            raise TypeError(f"size must be a sequence of ints, got {list(size)}")
        if value < 0:
            raise ValueError(f"Trying to create tensor with negative dimension {value}: "
                             f"{list(size)}")
    return tuple(int(value) for value in size)


def _float_dtype(dtype) -> np.dtype:
    if dtype is None:
        return _dtype.default_float.numpy
    return _dtype.to_numpy_dtype(dtype)


def tensor(data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor from Python data or an array (always a copy).

    >>> import tracegrad as torch
    >>> torch.tensor([1.0, 2.0]).dtype, torch.tensor([1, 2]).dtype
    (tracegrad.float32, tracegrad.int64)
    """
    array = _as_array(data, dtype, copy=True)
    return _finish(array, device if device is not None else _device_of(data), requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    if isinstance(data, Tensor) and dtype is None and device is None:
        return data
    return _finish(_as_array(data, dtype, copy=False), device, False)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``array``."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    from .tensor import _normalize_array

    return _finish(_normalize_array(array), None, False)


def _device_of(data):
    if isinstance(data, Tensor):
        return data.device
    return None


def _as_array(data, dtype, copy: bool) -> np.ndarray:
    if isinstance(data, Tensor):
        array = backends.to_host(data._array)
    elif isinstance(data, (list, tuple)):
        array = np.asarray(_unwrap_nested(data))
        if dtype is None and array.dtype.kind == "f":
            inferred = _infer_python_dtype(data)
            if inferred is not None:
                array = array.astype(inferred)
    elif isinstance(data, (bool, int, float)):
        array = np.asarray(data, dtype=_dtype.array_dtype_for(data))
    else:
        array = np.asarray(data)
    if dtype is not None:
        array = array.astype(_dtype.to_numpy_dtype(dtype), copy=copy)
    elif copy:
        array = array.copy()
    if array.dtype.kind not in "fiub":
        raise DTypeError(f"Could not infer dtype of {type(data).__name__} (numpy gave "
                         f"{array.dtype})")
    if array.dtype == np.float64 and isinstance(data, (list, tuple)) and dtype is None:
        array = array.astype(_dtype.default_float.numpy)
    from .tensor import _normalize_array

    return _normalize_array(array)


def _unwrap_nested(data):
    if isinstance(data, Tensor):
        return backends.to_host(data._array)
    if isinstance(data, (list, tuple)):
        return [_unwrap_nested(item) for item in data]
    return data


def _infer_python_dtype(data):
    """Nested Python lists of Tensors keep the tensors' float dtype."""
    first = data
    while isinstance(first, (list, tuple)) and first:
        first = first[0]
    if isinstance(first, Tensor) and first._array.dtype.kind == "f":
        return first._array.dtype
    return None


def zeros(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _finish(np.zeros(_size(size), _float_dtype(dtype)), device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _finish(np.ones(_size(size), _float_dtype(dtype)), device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    return zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    if dtype is None:
        dtype = _dtype.array_dtype_for(fill_value) if not isinstance(fill_value, float) \
            else None
    return _finish(np.full(_size((size,)), fill_value, _float_dtype(dtype)), device,
                   requires_grad)


def _like(other: Tensor, dtype, device):
    return (dtype if dtype is not None else other.dtype,
            device if device is not None else other.device)


def zeros_like(other, dtype=None, device=None, requires_grad=False) -> Tensor:
    dtype, device = _like(other, dtype, device)
    return zeros(other.shape, dtype=dtype, device=device, requires_grad=requires_grad)


def ones_like(other, dtype=None, device=None, requires_grad=False) -> Tensor:
    dtype, device = _like(other, dtype, device)
    return ones(other.shape, dtype=dtype, device=device, requires_grad=requires_grad)


def empty_like(other, dtype=None, device=None, requires_grad=False) -> Tensor:
    return zeros_like(other, dtype, device, requires_grad)


def full_like(other, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    dtype, device = _like(other, dtype, device)
    return full(tuple(other.shape), fill_value, dtype=dtype, device=device,
                requires_grad=requires_grad)


def randn(*size, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    numpy_dtype = _float_dtype(dtype)
    array = _generator.standard_normal(_size(size), dtype=np.float64).astype(numpy_dtype)
    return _finish(array, device, requires_grad)


def rand(*size, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    numpy_dtype = _float_dtype(dtype)
    array = _generator.random(_size(size), dtype=np.float64).astype(numpy_dtype)
    return _finish(array, device, requires_grad)


def randn_like(other, dtype=None, device=None, requires_grad=False) -> Tensor:
    dtype, device = _like(other, dtype, device)
    return randn(other.shape, dtype=dtype, device=device, requires_grad=requires_grad)


def rand_like(other, dtype=None, device=None, requires_grad=False) -> Tensor:
    dtype, device = _like(other, dtype, device)
    return rand(other.shape, dtype=dtype, device=device, requires_grad=requires_grad)


def randint(low, high=None, size=None, dtype=None, device=None, requires_grad=False,
            generator=None) -> Tensor:
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing required argument 'size' (a tuple of ints)")
    numpy_dtype = _dtype.to_numpy_dtype(dtype) if dtype is not None else np.dtype(np.int64)
    array = _generator.integers(low, high, _size((size,)), dtype=np.int64).astype(numpy_dtype)
    return _finish(array, device, requires_grad)


def randperm(n, dtype=None, device=None, requires_grad=False) -> Tensor:
    array = _generator.permutation(int(n)).astype(np.int64)
    return _finish(array, device, requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False) -> Tensor:
    if end is None:
        start, end = 0, start
    values = (start, end, step)
    if dtype is None:
        is_float = any(isinstance(v, float) for v in values)
        numpy_dtype = _dtype.default_float.numpy if is_float else np.dtype(np.int64)
    else:
        numpy_dtype = _dtype.to_numpy_dtype(dtype)
    return _finish(np.arange(start, end, step).astype(numpy_dtype), device, requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False) -> Tensor:
    array = np.linspace(start, end, int(steps)).astype(_float_dtype(dtype))
    return _finish(array, device, requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _finish(np.eye(n, m, dtype=_float_dtype(dtype)), device, requires_grad)


def _random_like(tensor: Tensor, kind: str, a: float, b: float):
    shape = tensor._array.shape
    if kind == "normal":
        array = _generator.normal(a, b, shape)
    else:
        array = _generator.uniform(a, b, shape)
    array = array.astype(tensor._array.dtype)
    return backends.to_device(array, tensor.device)
