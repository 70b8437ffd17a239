"""Dtypes, named as in torch, and PyTorch's type promotion rules.

Every dtype torch has for dense real tensors exists here. Those NumPy cannot hold
(``bfloat16``) or tracegrad's ops do not support (the complex types) exist as names, so
comparisons such as ``t.dtype == torch.bfloat16`` work, but making a tensor of one raises
a clear error instead of silently using another type.
"""

from __future__ import annotations

import numpy as np

from .errors import DTypeError


class dtype:
    """A tensor element type: ``tracegrad.float32`` and friends.

    >>> import tracegrad as torch
    >>> torch.int8.is_signed, torch.uint8.is_signed, torch.float16.itemsize
    (True, False, 2)
    """

    __slots__ = ("abbr", "is_complex", "is_floating_point", "is_signed", "itemsize", "name",
                 "numpy", "scalar_name")

    def __init__(self, name: str, numpy_dtype, scalar_name: str, abbr: str, *,
                 kind: str = "", itemsize: int = 0) -> None:
        self.name = name
        self.scalar_name = scalar_name  # c10's ScalarType name, as torch's messages use it
        self.abbr = abbr
        # None for the types NumPy has no array type for (bfloat16) or tracegrad does not
        # compute with (complex): every conversion to an array goes through to_numpy_dtype,
        # which raises for them.
        self.numpy = np.dtype(numpy_dtype) if numpy_dtype is not None else None
        kind = self.numpy.kind if self.numpy is not None else kind
        self.is_floating_point = kind == "f"
        self.is_complex = kind == "c"
        self.is_signed = kind in "ifc"
        self.itemsize = self.numpy.itemsize if self.numpy is not None else itemsize

    def __repr__(self) -> str:
        return f"tracegrad.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))

    def to_complex(self) -> dtype:
        """The complex dtype with this dtype's precision (torch.float32 -> complex64)."""
        partner = _COMPLEX_OF.get(self.name)
        if partner is None:
            raise RuntimeError(f"Unknown Complex ScalarType for {self.scalar_name}")
        return _BY_NAME[partner]

    def to_real(self) -> dtype:
        """The real dtype of a complex one (complex64 -> float32); a real dtype itself."""
        for real, complex_name in _COMPLEX_OF.items():
            if complex_name == self.name:
                return _BY_NAME[real]
        return self


float16 = dtype("float16", np.float16, "Half", "f16")
float32 = dtype("float32", np.float32, "Float", "f32")
float64 = dtype("float64", np.float64, "Double", "f64")
bfloat16 = dtype("bfloat16", None, "BFloat16", "bf16", kind="f", itemsize=2)
complex32 = dtype("complex32", None, "ComplexHalf", "c32", kind="c", itemsize=4)
complex64 = dtype("complex64", None, "ComplexFloat", "c64", kind="c", itemsize=8)
complex128 = dtype("complex128", None, "ComplexDouble", "c128", kind="c", itemsize=16)
int8 = dtype("int8", np.int8, "Char", "i8")
int16 = dtype("int16", np.int16, "Short", "i16")
int32 = dtype("int32", np.int32, "Int", "i32")
int64 = dtype("int64", np.int64, "Long", "i64")
uint8 = dtype("uint8", np.uint8, "Byte", "u8")
uint16 = dtype("uint16", np.uint16, "UInt16", "u16")
uint32 = dtype("uint32", np.uint32, "UInt32", "u32")
uint64 = dtype("uint64", np.uint64, "UInt64", "u64")
bool_ = dtype("bool", np.bool_, "Bool", "b8")

SUPPORTED = (float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32,
             uint64, bool_)
UNSUPPORTED = (bfloat16, complex32, complex64, complex128)
ALL = SUPPORTED + UNSUPPORTED
_BY_NUMPY = {d.numpy: d for d in SUPPORTED}
_BY_NAME = {d.name: d for d in ALL}
# torch's alternative names for the same objects (torch.short is torch.int16).
ALIASES = {"half": float16, "float": float32, "double": float64, "short": int16,
           "int": int32, "long": int64, "chalf": complex32, "cfloat": complex64,
           "cdouble": complex128}
_BY_NAME.update(ALIASES)
_COMPLEX_OF = {"float16": "complex32", "float32": "complex64", "float64": "complex128",
               "complex32": "complex32", "complex64": "complex64",
               "complex128": "complex128"}
# torch refuses to promote these with any other integer or bool type (they have no
# arithmetic kernels of their own yet); see promote().
_BARE_UNSIGNED = frozenset(np.dtype(t) for t in (np.uint16, np.uint32, np.uint64))

default_float = float32


def scalar_type_name(numpy_dtype) -> str:
    """c10's ScalarType name of an array's dtype (``"Float"`` for float32), as torch's
    messages name dtypes ("not implemented for 'Long'", "found dtype Double")."""
    found = _BY_NUMPY.get(np.dtype(numpy_dtype))
    return found.scalar_name if found is not None else str(numpy_dtype)

# The names ``import tracegrad`` exports (tracegrad/__init__.py adds the aliases and bool).
__all__ = ["bfloat16", "complex32", "complex64", "complex128", "dtype", "finfo", "float16",
           "float32", "float64", "iinfo", "int8", "int16", "int32", "int64", "layout",
           "promote_types", "strided", "uint8", "uint16", "uint32", "uint64"]


def _by_name(name: str) -> dtype:
    return _BY_NAME[name]


def from_numpy_dtype(numpy_dtype) -> dtype:
    try:
        return _BY_NUMPY[np.dtype(numpy_dtype)]
    except KeyError:
        raise TypeError(f"tracegrad has no dtype for numpy {np.dtype(numpy_dtype)}") from None


def to_numpy_dtype(value) -> np.dtype:
    """Accept a tracegrad dtype, a numpy dtype, a Python type or a name."""
    if isinstance(value, dtype):
        if value.numpy is None:
            raise unsupported_error(value)
        return value.numpy
    if value is float:
        return default_float.numpy
    if value is int:
        return int64.numpy
    if value is bool:
        return bool_.numpy
    if isinstance(value, str) and value in _BY_NAME:
        return to_numpy_dtype(_BY_NAME[value])
    return from_numpy_dtype(value).numpy


def unsupported_error(value: dtype) -> DTypeError:
    """The error for a dtype torch has and tracegrad cannot make tensors of."""
    if value.is_complex:
        why = "tracegrad does not implement complex tensors"
        hint = "keep the real and imaginary parts in two real tensors"
    else:
        why = f"NumPy, which holds tracegrad's tensors, has no {value.name} type"
        hint = "use tracegrad.float16 (same size) or tracegrad.float32"
    return DTypeError(f"tracegrad does not implement tensors of dtype torch.{value.name}: "
                      f"{why}. Hint: {hint}.")


def array_dtype_for(value) -> np.dtype | None:
    """The dtype torch.tensor() infers for Python data: float32 for floats, int64 for ints."""
    if isinstance(value, bool):
        return bool_.numpy
    if isinstance(value, int):
        return int64.numpy
    if isinstance(value, float):
        return default_float.numpy
    return None


def is_float(numpy_dtype: np.dtype) -> bool:
    return numpy_dtype.kind == "f"


def promote(a: np.dtype, b: np.dtype, a_is_scalar: bool = False,
            b_is_scalar: bool = False) -> np.dtype:
    """PyTorch's result type for two tensors (0-dim tensors count as scalars).

    Categories rank bool < int < float. A higher category wins outright (int64 + float32 is
    float32, not NumPy's float64); within a category a non-scalar beats a scalar; otherwise
    the wider type wins (int8 with uint8 is int16, as in torch and NumPy). uint16, uint32
    and uint64 promote with nothing but floats and themselves, as in torch.
    """
    if a is b:
        return a
    rank_a, rank_b = _category(a), _category(b)
    if rank_a != rank_b:
        winner = a if rank_a > rank_b else b
        # A higher category wins outright, 0-dim or not: float64 0-dim + int64 [2] is
        # float64 in torch (only Python scalars fall back to the default float).
        if winner.kind != "f" and (a in _BARE_UNSIGNED or b in _BARE_UNSIGNED):
            loser_is_scalar = b_is_scalar if winner is a else a_is_scalar
            winner_is_scalar = a_is_scalar if winner is a else b_is_scalar
            # torch only promotes the two types when the 0-dim one does not lose outright
            if not loser_is_scalar or winner_is_scalar:
                raise _bare_unsigned_error(a, b)
        return winner
    if a_is_scalar != b_is_scalar:
        return b if a_is_scalar else a
    if a == b:
        return a
    if a in _BARE_UNSIGNED or b in _BARE_UNSIGNED:
        raise _bare_unsigned_error(a, b)
    return np.promote_types(a, b)


def _bare_unsigned_error(a: np.dtype, b: np.dtype) -> DTypeError:
    first, second = from_numpy_dtype(a), from_numpy_dtype(b)
    return DTypeError(
        f"Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
        f"{first.scalar_name} and {second.scalar_name}. Hint: convert one of them with "
        ".to() first, e.g. .long() or .double().")


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """``torch.promote_types``: the smallest dtype both convert to without losing kind.

    >>> import tracegrad as torch
    >>> torch.promote_types(torch.int8, torch.uint8), torch.promote_types(torch.int64,
    ...                                                                   torch.float16)
    (tracegrad.int16, tracegrad.float16)
    """
    return from_numpy_dtype(promote(to_numpy_dtype(type1), to_numpy_dtype(type2)))


def _category(numpy_dtype: np.dtype) -> int:
    kind = numpy_dtype.kind
    if kind == "b":
        return 0
    if kind in "iu":
        return 1
    return 2


_INT_LIMITS = {np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max), np.iinfo(t).bits)
               for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                         np.uint32, np.uint64)}


def wrap_int_scalar(value: int, numpy_dtype: np.dtype) -> int:
    """A Python int outside an integer dtype's range, wrapped into it as torch does
    (``int8_tensor + 1000`` adds -24; NumPy would raise OverflowError). Runs for every
    int-tensor-with-int-scalar op, so the limits come from a table, not np.iinfo."""
    low, high, bits = _INT_LIMITS[numpy_dtype]
    if low <= value <= high:
        return value
    span = 1 << bits
    wrapped = value % span
    return wrapped - span if wrapped > high else wrapped


class iinfo:
    """``torch.iinfo(dtype)``: the limits of an integer dtype.

    >>> import tracegrad as torch
    >>> torch.iinfo(torch.int8)
    iinfo(min=-128, max=127, dtype=int8)
    """

    __slots__ = ("bits", "dtype", "max", "min")

    def __init__(self, type: dtype) -> None:
        if not isinstance(type, dtype):
            raise TypeError(f"iinfo(): argument 'type' must be torch.dtype, not "
                            f"{builtin_type_name(type)}")
        if type is bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if type.is_floating_point or type.is_complex:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo "
                            "to handle 'torch.iinfo'")
        limits = np.iinfo(type.numpy)
        self.bits, self.min, self.max = limits.bits, int(limits.min), int(limits.max)
        self.dtype = type.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"

    def __eq__(self, other) -> bool:
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("iinfo", self.dtype))


# bfloat16 has float32's exponent and an 8-bit significand; NumPy cannot compute these.
_BFLOAT16_LIMITS = {"bits": 16, "eps": 0.0078125, "max": 3.3895313892515355e38,
                    "tiny": 1.1754943508222875e-38, "resolution": 0.01}


class finfo:
    """``torch.finfo(dtype)``: the limits of a floating point dtype (default: the default
    float dtype).

    >>> import tracegrad as torch
    >>> torch.finfo(torch.float16).max, torch.finfo().eps == torch.finfo(torch.float32).eps
    (65504.0, True)
    """

    __slots__ = ("bits", "dtype", "eps", "max", "min", "resolution", "smallest_normal", "tiny")

    def __init__(self, type: dtype | None = None) -> None:
        if type is None:
            type = default_float
        if not isinstance(type, dtype):
            raise TypeError(f"finfo(): argument 'type' must be torch.dtype, not "
                            f"{builtin_type_name(type)}")
        if not (type.is_floating_point or type.is_complex):
            raise TypeError("torch.finfo() requires a floating point input type. Use "
                            "torch.iinfo to handle 'torch.finfo'")
        real = type.to_real()
        if real is bfloat16:
            limits = _BFLOAT16_LIMITS
            self.bits, self.eps, self.max = limits["bits"], limits["eps"], limits["max"]
            self.tiny, self.resolution = limits["tiny"], limits["resolution"]
        else:
            limits = np.finfo(real.numpy)
            self.bits, self.eps, self.max = limits.bits, float(limits.eps), float(limits.max)
            # torch's resolution is the exact power of ten (NumPy's is rounded to the dtype)
            self.tiny, self.resolution = float(limits.tiny), 10.0 ** -limits.precision
        self.min = -self.max
        self.smallest_normal = self.tiny
        self.dtype = real.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")

    def __eq__(self, other) -> bool:
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("finfo", self.dtype))


class layout:
    """A tensor layout: tracegrad's tensors are all ``strided`` (dense), as torch's are by
    default; the sparse layouts are not implemented."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"tracegrad.{self.name}"


strided = layout("strided")


def check_layout(value, who: str) -> None:
    """Refuse a layout other than strided (None means the default, strided)."""
    if value is not None and value is not strided:
        raise NotImplementedError(
            f"{who}: tracegrad does not implement layout={value!r}; its tensors are all "
            "dense (tracegrad.strided). Hint: leave layout at its default.")


def builtin_type_name(value) -> str:
    return type(value).__name__
