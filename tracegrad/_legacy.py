"""The legacy tensor constructors torch still runs: ``torch.Tensor(2, 3)``,
``torch.FloatTensor([1, 2])``, ``t.new(...)``, and the type strings ``t.type()`` gives.

One parser (``construct``) serves all three, with torch's overloads, tried in its order:

* ``()``: an empty 1-d tensor;
* ``(Tensor other)``: an alias of ``other`` (same storage and version counter; when
  ``other`` requires grad the alias does too, through ``AliasBackward0``);
* ``(int, int, ...)`` or ``(torch.Size)``: a tensor of that shape (torch leaves it
  uninitialized; tracegrad fills zeros, so runs are reproducible);
* ``(data)``: a sequence (nested lists, tuples, ranges, arrays), converted to the
  constructor's dtype (``LongTensor([1.5])`` truncates, ``ByteTensor([-2])`` wraps).

Only ``device=`` is accepted as a keyword, as in torch.

The typed classes (``FloatTensor`` ...) are not Tensor subclasses in torch either: calling
one makes a plain ``Tensor``; ``isinstance(t, torch.FloatTensor)`` asks whether ``t`` is a
float32 CPU tensor.
"""

from __future__ import annotations

import numpy as np

from . import _dtype, backends
from .autograd import events
from .autograd.function import Op
from .errors import DTypeError
from .tensor import Size, Tensor

# C++ type names, as torch's "expected TensorOptions(dtype=...)" message prints them.
_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
              "int64": "long int", "int32": "int", "int16": "short int",
              "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
              "uint16": "unsigned short", "uint32": "unsigned int",
              "uint64": "unsigned long"}


class Alias(Op):
    """``torch.Tensor(other)``: a new tensor object over ``other``'s storage, in the graph."""

    node_name = "AliasBackward0"
    array_backward = True
    is_view = True

    @staticmethod
    def forward(ctx, a):
        return a._array.view()

    @staticmethod
    def backward(ctx, grad):
        return (grad,)


class tensortype(type):
    """The type of ``FloatTensor`` and friends: calling one makes a Tensor of its dtype;
    ``isinstance`` asks the tensor's dtype and device, as torch's does."""

    dtype: _dtype.dtype
    is_cuda = False
    is_sparse = False

    def __call__(cls, *args, **kwargs) -> Tensor:
        return construct(cls.__name__, cls.dtype, None, args, kwargs, exact_dtype=True)

    def __instancecheck__(cls, instance) -> bool:
        return (isinstance(instance, Tensor) and instance._array.dtype == cls.dtype.numpy
                and instance.device.type == "cpu")


def _typed(name: str, dtype: _dtype.dtype) -> tensortype:
    return tensortype(name, (), {"dtype": dtype, "__module__": "tracegrad",
                                 "__doc__": f"Legacy constructor of {dtype.name} tensors."})


FloatTensor = _typed("FloatTensor", _dtype.float32)
DoubleTensor = _typed("DoubleTensor", _dtype.float64)
HalfTensor = _typed("HalfTensor", _dtype.float16)
BFloat16Tensor = _typed("BFloat16Tensor", _dtype.bfloat16)
ByteTensor = _typed("ByteTensor", _dtype.uint8)
CharTensor = _typed("CharTensor", _dtype.int8)
ShortTensor = _typed("ShortTensor", _dtype.int16)
IntTensor = _typed("IntTensor", _dtype.int32)
LongTensor = _typed("LongTensor", _dtype.int64)
BoolTensor = _typed("BoolTensor", _dtype.bool_)

TYPED = (FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor, ByteTensor, CharTensor,
         ShortTensor, IntTensor, LongTensor, BoolTensor)
# torch's type names for the dtypes without a class at the top level of torch.
_TYPE_NAMES = {cls.dtype.name: cls.__name__ for cls in TYPED}
_TYPE_NAMES.update({"uint16": "UInt16Tensor", "uint32": "UInt32Tensor",
                    "uint64": "UInt64Tensor", "complex64": "ComplexFloatTensor",
                    "complex128": "ComplexDoubleTensor", "complex32": "ComplexHalfTensor"})
_DTYPE_OF_TYPE_NAME = {name: _dtype._BY_NAME[dtype_name]
                       for dtype_name, name in _TYPE_NAMES.items()}


def type_name(tensor: Tensor) -> str:
    """``'torch.FloatTensor'``, ``'torch.cuda.LongTensor'``: what ``t.type()`` returns."""
    prefix = "torch.cuda." if tensor.device.type == "cuda" else "torch."
    return prefix + _TYPE_NAMES[tensor.dtype.name]


def parse_type(value) -> tuple[_dtype.dtype, str | None]:
    """What ``t.type(value)`` converts to: (dtype, device type or None to keep it)."""
    if isinstance(value, tensortype):
        return value.dtype, "cpu"
    if isinstance(value, _dtype.dtype):
        return value, None
    if isinstance(value, str):
        for prefix, device in (("torch.cuda.", "cuda"), ("tracegrad.cuda.", "cuda"),
                               ("torch.", "cpu"), ("tracegrad.", "cpu")):
            if value.startswith(prefix):
                found = _DTYPE_OF_TYPE_NAME.get(value[len(prefix):])
                if found is not None:
                    return found, device
                break
        raise ValueError(f"invalid type: '{value}'")
    name = getattr(value, "__name__", type(value).__name__)
    raise ValueError(f"invalid type: '{name}'")


# -- the legacy constructor ------------------------------------------------------------
def construct(who: str, dtype: _dtype.dtype | None, like: Tensor | None, args: tuple,
              kwargs: dict, exact_dtype: bool) -> Tensor:
    """Make a tensor the way torch's legacy constructors do (see the module docstring).

    ``dtype`` None means the default float dtype; ``like`` is the tensor ``new`` was called
    on (its device is the default); ``exact_dtype`` refuses an ``other`` tensor of another
    dtype (typed constructors and ``new``), where ``torch.Tensor(other)`` keeps its dtype.
    """
    device = _device_keyword(who, args, kwargs)
    if device is None and like is not None:
        device = like.device
    if dtype is None:
        dtype = _dtype.default_float
    if dtype.numpy is None:
        raise _dtype.unsupported_error(dtype)
    if not args:
        return _finish(np.zeros((0,), dtype.numpy), device)
    first = args[0]
    if len(args) == 1 and isinstance(first, Tensor):
        return _alias(first, dtype, device, exact_dtype)
    if len(args) == 1 and isinstance(first, Size):
        return _finish(np.zeros(tuple(first), dtype.numpy), device)
    if _is_int(first):
        return _finish(np.zeros(parse_size(who, args), dtype.numpy), device)
    if len(args) > 1:
        raise _no_overload(who, args, kwargs)
    return _finish(_data_array(who, first, dtype.numpy), device)


def _device_keyword(who: str, args: tuple, kwargs: dict):
    for key in kwargs:
        if key != "device":
            raise _no_overload(who, args, kwargs)
    device = kwargs.get("device")
    return backends.as_device(device) if device is not None else None


def _alias(other: Tensor, dtype: _dtype.dtype, device, exact_dtype: bool) -> Tensor:
    if exact_dtype and other._array.dtype != dtype.numpy:
        raise TypeError(
            f"expected {_options(dtype, other.device)} (got "
            f"{_options(other.dtype, other.device)}). Hint: convert it first with "
            f".to(torch.{dtype.name}), or use torch.tensor(data, dtype=...) for a copy.")
    if device is not None and device != other.device:
        raise TypeError(
            f"expected {_options(other.dtype, device)} (got "
            f"{_options(other.dtype, other.device)}). Hint: move it first with "
            f".to('{device}').")
    return Alias.apply(other)


def _options(dtype: _dtype.dtype, device) -> str:
    return (f"TensorOptions(dtype={_CPP_NAMES.get(dtype.name, dtype.name)}, device={device}, "
            "layout=Strided, requires_grad=false (default), pinned_memory=false (default), "
            "memory_format=(nullopt))")


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def parse_size(who: str, args: tuple) -> tuple:
    """Sizes given as ints (``new_zeros(2, 3)``) or as one sequence (``new_zeros((2, 3))``),
    with torch's errors for anything else."""
    if len(args) == 1 and isinstance(args[0], (tuple, list, Size)):
        args = tuple(args[0])
    elif len(args) == 1 and not _is_int(args[0]):
        raise TypeError(f"{who}(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{_type_label(args[0])}")
    size = []
    for position, value in enumerate(args):
        if value.__class__ is not int:  # the common case is plain ints: one check each
            if not _is_int(value):
                raise TypeError(
                    f"{who}(): argument 'size' failed to unpack the object at pos "
                    f"{position + 1} with error \"type must be tuple of ints,but got "
                    f"{_type_label(value)}\"")
            value = int(value)
        if value < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {value}: "
                               f"{[int(item) for item in args]}")
        size.append(value)
    return tuple(size)


def _data_array(who: str, data, numpy_dtype: np.dtype) -> np.ndarray:
    if isinstance(data, str):
        raise TypeError(f"{who}(): invalid data type 'str'")
    if not isinstance(data, (list, tuple, range, np.ndarray)):
        raise TypeError(f"{who}(): data must be a sequence (got {_type_label(data)})")
    nested = _unwrap(data)
    _check_rectangular(nested)
    array = np.asarray(nested)
    if array.dtype.kind not in "biuf":
        found = array.dtype.type.__name__.replace("_", "")
        raise ValueError(f"too many dimensions '{found}'")
    return array.astype(numpy_dtype)


def _unwrap(data):
    """Nested sequences with the tensors in them turned into host arrays."""
    if isinstance(data, Tensor):
        return backends.to_host(data._array)
    if isinstance(data, (list, tuple, range)):
        return [_unwrap(item) for item in data]
    return data


def _check_rectangular(data, dim: int = 0) -> None:
    """torch's error for ragged nested lists (NumPy's would talk about object arrays)."""
    if not isinstance(data, list) or not data:
        return
    lengths = [len(item) if isinstance(item, list) else None for item in data]
    first = lengths[0]
    for length in lengths[1:]:
        if length != first:
            raise ValueError(f"expected sequence of length {first} at dim {dim + 1} (got "
                             f"{length if length is not None else 0})")
    for item in data:
        _check_rectangular(item, dim + 1)


def _finish(array: np.ndarray, device) -> Tensor:
    if device is not None and device.type != "cpu":
        array = backends.to_device(array, device)
    tensor = Tensor._wrap(array, False)
    listener = events.listener
    if listener is not None:  # the recorder names tensors the program makes
        listener.on_tensor(tensor, "factory")
    return tensor


def _type_label(value) -> str:
    cls = type(value)
    if cls.__module__ in ("builtins", None):
        return cls.__name__
    if isinstance(value, Size):
        return "torch.Size"
    if isinstance(value, _dtype.dtype):
        return "torch.dtype"
    if isinstance(value, Tensor):
        return "Tensor"
    return f"{cls.__module__.split('.')[0]}.{cls.__name__}"


def _no_overload(who: str, args: tuple, kwargs: dict) -> TypeError:
    got = ", ".join([_type_label(arg) for arg in args]
                    + [f"{key}={_type_label(value)}" for key, value in kwargs.items()])
    wrong_keywords = [key for key in kwargs if key != "device"]
    why = (f"      didn't match because some of the keywords were incorrect: "
           f"{', '.join(wrong_keywords)}\n" if wrong_keywords else "")
    hint = ("Hint: the legacy constructors take only device=; use torch.tensor(data, "
            "dtype=..., requires_grad=...) or torch.zeros(size, dtype=...) instead.")
    return TypeError(
        f"{who}() received an invalid combination of arguments - got ({got}), but expected "
        f"one of:\n * (*, torch.device device = None)\n{why} * (Tensor other)\n"
        " * (tuple of ints size, *, torch.device device = None)\n"
        f" * (object data, *, torch.device device = None)\n{hint}")


def check_requires_grad_dtype(dtype: _dtype.dtype) -> None:
    """The factories' error for ``requires_grad=True`` on a dtype that cannot have one."""
    if not dtype.is_floating_point:
        raise DTypeError(
            f"Only Tensors of floating point and complex dtype can require gradients (got "
            f"torch.{dtype.name}). Hint: make it with dtype=torch.float32 or "
            "torch.float64, or leave requires_grad off for integer and bool tensors.")


__all__ = ["BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor",
           "FloatTensor", "HalfTensor", "IntTensor", "LongTensor", "ShortTensor"]
