"""Capturing forward values and gradients as ``Value``: statistics always, whole arrays
while the trace is under its memory budget.

>>> import numpy as np
>>> budget = ValueBudget(limit_bytes=1024)
>>> value = budget.capture(np.array([1.0, float("nan")]), keep_array=True)
>>> value.stats.nan_count, value.array is not None
(1, True)

Statistics of a value whose array is kept are computed when first read (``PendingStats``):
four passes over the array that a trace nobody looks at never needs. Values whose array
is given back (``ValueBudget.release``) get theirs computed then, from the same copy.
"""

from __future__ import annotations

import contextlib
import math
from itertools import compress, repeat
from operator import attrgetter, is_, is_not, not_

import numpy as np

from .. import backends
from .model import DROPPED_BUDGET, DROPPED_PASS, Stats, Value, array_dtype_name

DEFAULT_BUDGET_BYTES = 256 * 1024 * 1024

# The reductions behind ndarray.sum/min/max, called directly: the methods go through a
# Python wrapper each (numpy/_core/_methods.py), which cost as much as the reduction on
# the small arrays of a typical trace.
_sum = np.add.reduce
_min = np.minimum.reduce
_max = np.maximum.reduce
_float64 = np.float64

try:  # NumPy 2 keeps its floating-point error state in this context variable. Setting it
    # directly is what np.errstate does, without the Python-level context manager that
    # cost more than the finiteness check it wraps (two checks per recorded op).
    from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj

    _QUIET = _make_extobj(all="ignore")
except ImportError:  # another NumPy: np.errstate, the public way
    _extobj_contextvar = None


def host_array(data) -> np.ndarray:
    """The array on the host (a no-op for numpy)."""
    if type(data) is np.ndarray:
        return data
    return backends.to_host(data)


def compute_stats(array: np.ndarray) -> Stats:
    """min, max, mean, norm and NaN/Inf counts of ``array`` (over its finite elements)."""
    if array.size == 0:
        return Stats()
    # A sum that overflows is expected here (it is how non-finite elements are found):
    # NumPy must not warn about it into the user's program. The error state is set as
    # np.errstate sets it, without its Python-level context manager (which cost as much
    # as the four reductions on a small array: every released value pays it).
    if _extobj_contextvar is not None:
        token = _extobj_contextvar.set(_QUIET)
        try:
            return _stats(array)
        finally:
            _extobj_contextvar.reset(token)
    with np.errstate(over="ignore", invalid="ignore"):
        return _stats(array)


def _stats(array: np.ndarray) -> Stats:
    if array.dtype.kind not in "fc":
        as_float = array.astype(np.float64)
        return _finite_stats(as_float)
    if array.dtype.kind == "f" and array.size < _PAIRWISE:
        stats = _few_stats(array if array.ndim == 1 else array.reshape(-1))
        if stats is not None:
            return stats
    # One sum tells whether every element is finite; counting is needed only when not
    # (or when the sum itself overflowed, which the count then shows is harmless).
    total = float(_sum(array, None, _float64))
    if math.isfinite(total):
        if array.dtype.kind == "f":  # the usual case, inline: _finite_stats' numbers
            flat = array if array.ndim == 1 else array.reshape(-1)
            squares = float(flat.dot(flat))
            if math.isfinite(squares):
                low, high = _finite_min_max(flat)
                return Stats(low, high, total / array.size, math.sqrt(squares))
        return _finite_stats(array, total)
    nan_count = int(np.isnan(array).sum())
    inf_count = int(np.isinf(array).sum())
    if nan_count == 0 and inf_count == 0:
        return _finite_stats(array)
    finite = array[np.isfinite(array)]
    stats = _finite_stats(finite) if finite.size else Stats()
    stats.nan_count, stats.inf_count = nan_count, inf_count
    return stats


def _few_stats(flat: np.ndarray) -> Stats | None:
    """The statistics of fewer than ``_PAIRWISE`` real floats, from Python floats: the
    numbers of the NumPy path below, to the bit, at a third of its cost (a trace's values
    are mostly that small: reading 100,000 statistics after a load, bench_trace (d)).
    NumPy sums so few elements one after the other from 0.0 (its pairwise summation
    starts at 8), in float64 as here; the sum of squares stays NumPy's (BLAS rounds it its
    own way). None, for the NumPy path, when an element is not finite or the least or
    greatest is a zero (see _finite_min_max), or the floats are wider than Python's."""
    items = flat.tolist()
    total = 0.0
    for item in items:  # not sum(): Python 3.12's compensates, NumPy's does not
        total += item
    if type(total) is not float or not math.isfinite(total):
        return None
    squares = float(flat.dot(flat))
    low, high = min(items), max(items)
    if not (low and high and math.isfinite(squares)):
        return None
    return Stats(low, high, total / len(items), math.sqrt(squares))


_PAIRWISE = 8  # elements: NumPy sums fewer one after the other (numpy loops_utils.h)


def _finite_min_max(flat: np.ndarray) -> tuple[float, float]:
    """The least and greatest of a flat array of finite floats, the numbers NumPy's
    reductions give. A few elements: from Python floats, four times cheaper than two
    reductions (a trace's values are mostly small; reading 100,000 statistics after a load,
    bench_trace (d)). The same to the bit: equal non-zero floats have the same bits, so the
    least is the least whichever element it came from -- but 0.0 == -0.0, and which zero a
    reduction keeps depends on its order, so a zero is left to NumPy, as are floats wider
    than Python's."""
    if flat.size <= _TINY:
        items = flat.tolist()
        low, high = min(items), max(items)
        if low and high and type(low) is float:
            return low, high
    return float(_min(flat, None)), float(_max(flat, None))


def _finite_stats(array: np.ndarray, total: float | None = None) -> Stats:
    if total is None:
        total = float(_sum(array, None, _float64))
    flat = array.reshape(-1)
    squares = float(np.dot(flat, flat))
    if not math.isfinite(squares):  # a float32 dot product overflowed; redo it in float64
        wide = flat.astype(np.float64)
        squares = float(np.dot(wide, wide))
    if not math.isfinite(total) or not math.isfinite(squares):
        return _wide_stats(array)
    return Stats(float(_min(array, None)), float(_max(array, None)), total / array.size,
                 math.sqrt(squares))


def _wide_stats(array: np.ndarray) -> Stats:
    """The statistics of finite values whose sum or sum of squares overflows float64
    (elements near 1e154 and up): the mean from the elements divided first, the norm from
    the elements scaled by the largest, so both stay the finite numbers they are."""
    wide = array.reshape(-1).astype(np.float64)
    largest = float(np.max(np.abs(wide)))
    scaled = wide / largest
    return Stats(float(_min(array, None)), float(_max(array, None)),
                 float(_sum(wide / wide.size)), largest * math.sqrt(float(np.dot(scaled, scaled))))


class PendingStats(Stats):
    """The statistics of a kept array, computed on first look.

    The first attribute read of any kind -- a field, ``__dict__`` (the trace file's
    encoder reads records through it), ``__class__``, pickling -- computes them from the
    array and turns this object into a plain ``Stats`` with those numbers: readers cannot
    tell the difference, and the numbers are those an eager capture would have computed
    (from a copy with the same memory layout, so the reductions run in the same order).

    >>> stats = PendingStats.of(np.array([3.0, 4.0]))
    >>> stats.max, stats.norm, type(stats).__name__
    (4.0, 5.0, 'Stats')
    """

    __slots__ = ()

    @classmethod
    def of(cls, array: np.ndarray) -> Stats:
        stats = _new_object(cls)
        stats._source = array
        return stats

    def __getattribute__(self, name: str):
        try:
            source = _object_getattribute(self, "_source")
        except AttributeError:  # settled by another thread meanwhile
            return _object_getattribute(self, name)
        # Fields first, then the class, then the source goes: a second reader meanwhile
        # (threads) either computes the same numbers again or finds them in place. Each
        # field set on its own, never through ``__dict__``: asking for that makes a dict
        # for the object, which is an allocation the collector counts -- 100,000 reads
        # after a load set off a full collection of the whole trace (bench_trace (d)).
        any(map(_object_setattr, repeat(self), _STATS_FIELDS, _stats_fields(
            compute_stats(source))))  # None each: runs them all
        _object_setattr(self, "__class__", Stats)
        with contextlib.suppress(AttributeError):  # a second reader deleted it first
            _object_delattr(self, "_source")
        return _object_getattribute(self, name)


_new_object = object.__new__
_object_getattribute = object.__getattribute__
_object_setattr, _object_delattr = object.__setattr__, object.__delattr__
_STATS_FIELDS = ("min", "max", "mean", "norm", "nan_count", "inf_count")
_stats_fields = attrgetter(*_STATS_FIELDS)


def stats_from_arrays(values: list[Value], stats: list | None = None,
                      arrays: list | None = None) -> list[bool]:
    """``stats_from_array`` of each value, decided in C but for the flags of the arrays
    whose pending statistics they are (a save of 100,000 values asks for all of them).
    ``stats`` and ``arrays``: the values' own, when the caller has read them already."""
    if stats is None:
        stats = list(map(_get_stats, values))
    if arrays is None:
        arrays = list(map(_get_array, values))
    candidates = list(map(is_, map(type, stats), repeat(PendingStats)))
    if all(candidates):  # the usual save: every value pending, no row to pick out
        rows, pending, chosen = range(len(values)), stats, arrays
    else:
        rows = list(compress(range(len(values)), candidates))
        pending = map(stats.__getitem__, rows)
        chosen = list(map(arrays.__getitem__, rows))
    # The source of each pending one (object.__getattribute__: reading it does not compute
    # them) is its value's array, C-ordered: else the numbers are stored.
    sources = map(_object_getattribute, pending, repeat("_source"))
    others = list(compress(range(len(rows)), map(is_not, sources, chosen)))
    for position in others:
        candidates[rows[position]] = False  # not its value's array (or no array left)
    if others:  # no array to ask for its layout there
        rows = list(compress(range(len(values)), candidates))
        chosen = list(map(arrays.__getitem__, rows))
    for position in compress(range(len(rows)), map(not_, map(_c_ordered, chosen))):
        candidates[rows[position]] = False  # an F-ordered copy
    return candidates


_get_array, _get_stats = attrgetter("array"), attrgetter("stats")
_c_ordered = attrgetter("flags.c_contiguous")


def stats_from_array(value: Value) -> bool:
    """Whether ``value``'s statistics are still pending on its own C-ordered array: then
    a trace file (schema 5) stores the array alone, and loading makes the same pending
    statistics from the same bytes in the same layout, so the reductions give the same
    numbers -- saving computes nothing (four passes a value, most of a save with values;
    bench/bench_trace.py (d)). An F-ordered copy is stored in C order (its sums would
    round differently), and settled statistics may have come from a strided view: both
    are stored as numbers."""
    stats = value.stats
    if type(stats) is not PendingStats:  # type(): reading stats.__class__ computes them
        return False
    try:  # not through __dict__, which would make one (see PendingStats)
        source = _object_getattribute(stats, "_source")
    except AttributeError:  # settled meanwhile
        return False
    return source is not None and source is value.array and source.flags.c_contiguous


def settle_stats(value: Value | None) -> None:
    """Compute a value's pending statistics now (before its array is let go)."""
    if value is not None and type(value.stats) is PendingStats:
        value.stats.nan_count  # noqa: B018 - the first read computes them


def is_finite(data) -> bool:
    """Whether every element of a (numpy or cupy) array is finite.

    For real floats one dot product of the array with itself answers the common case: the
    squares are never negative, so nothing cancels, and a NaN or Inf anywhere makes the
    result non-finite (an overflow of large finite values only sends us to the exact check).
    """
    kind = data.dtype.kind
    if kind == "f":
        if data.__class__ is np.ndarray and data.size <= _TINY:
            # Python floats: cheaper than a NumPy call on a handful of elements (a loss, a
            # bias); their sum is finite exactly when every element is (it cannot overflow
            # here, except for float64 values near the limit: the exact check then decides)
            ndim = data.ndim
            total = data.item() if ndim == 0 else _fsum(data.tolist() if ndim == 1 else
                                                        data.ravel().tolist())
            if math.isfinite(total):
                return True
            return bool(np.isfinite(data).all())
        flat = data if data.ndim == 1 else data.reshape(-1)
        if _extobj_contextvar is not None and data.__class__ is np.ndarray:
            # an overflow here is ours, not the program's: no warning (np.errstate, inline)
            token = _extobj_contextvar.set(_QUIET)
            try:
                squares = flat.dot(flat)
            finally:
                _extobj_contextvar.reset(token)
        else:
            with np.errstate(over="ignore"):
                squares = flat.dot(flat)
        if math.isfinite(squares):
            return True
    elif kind != "c":
        return True
    xp = backends.array_module(data)
    return bool(xp.isfinite(data).all())


_TINY = 16  # elements: below this, is_finite and _finite_min_max work on Python floats
_fsum = sum


def value_is_finite(value: Value | None, data) -> bool:
    """Whether ``data``, just captured as ``value`` (or not captured: None), is finite:
    from the statistics when they were computed, else with one check of the array."""
    if value is not None:
        stats = value.stats
        if type(stats) is not PendingStats:  # type(): reading stats.__class__ computes them
            return not stats.has_nonfinite
    return is_finite(data)


# Shapes as values keep them, one tuple per distinct shape (as the graph builder does).
_shapes: dict[tuple, tuple[int, ...]] = {}


def _shape(shape) -> tuple[int, ...]:
    shared = _shapes.get(shape)
    if shared is None:
        if len(_shapes) >= 4096:  # a program with ever-new shapes: start over
            _shapes.clear()
        shared = tuple(map(int, shape))
        shared = _shapes.setdefault(shared, shared)
    return shared


_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _same_bits(array: np.ndarray, other: np.ndarray) -> bool:
    """Whether two arrays hold the same bits (-0.0 is not 0.0, a NaN equals itself), in
    the same layout; False when that cannot be told cheaply."""
    if array.dtype != other.dtype or array.shape != other.shape:
        return False
    unsigned = _UNSIGNED.get(array.dtype.itemsize)
    if unsigned is None or not (array.flags.c_contiguous and other.flags.c_contiguous):
        return False
    return bool(np.array_equal(array.view(unsigned), other.view(unsigned)))


class ValueBudget:
    """Hands out ``Value``s, keeping whole arrays until ``limit_bytes`` is used up.

    ``summarized`` counts the values that had to be kept as statistics only because the
    budget was exhausted (not those a capture policy chose to keep as statistics only).
    Every value without its array says why in ``Value.dropped``.
    """

    def __init__(self, limit_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
        self.limit_bytes = int(limit_bytes)
        self.used_bytes = 0
        self.summarized = 0

    def capture(self, data, keep_array: bool = True, like: Value | None = None) -> Value:
        """A Value of ``data``. ``like``: a Value captured just before whose array may
        hold the very same bits (a leaf's ``.grad`` after accumulating its incoming
        gradient into zeros): then its copy and statistics serve this one too -- one
        comparison instead of a copy and four passes."""
        array = data if data.__class__ is np.ndarray else backends.to_host(data)
        dtype_name = array_dtype_name(array.dtype)
        shape = _shape(array.shape)
        if keep_array:
            nbytes = array.nbytes
            if self.used_bytes + nbytes <= self.limit_bytes:
                if like is not None and like.array is not None \
                        and _same_bits(array, like.array):
                    # counted as a copy of its own: the budget's decisions stay the same
                    self.used_bytes += nbytes
                    return Value(shape, dtype_name, like.stats, like.array)
                # A copy: tensors are mutated in place after they are captured. Order "K"
                # keeps the layout, so statistics computed from the copy later are those
                # of the array now; a strided view's are computed now, from the view
                # (its copy is laid out differently, and sums would round differently).
                copy = array.copy(order="K")
                self.used_bytes += nbytes
                flags = array.flags
                stats = PendingStats.of(copy) if flags.c_contiguous or flags.f_contiguous \
                    else compute_stats(array)
                return Value(shape, dtype_name, stats, copy)
            value = Value(shape, dtype_name, compute_stats(array), None, DROPPED_BUDGET)
            self.summarized += 1
            return value
        return Value(shape, dtype_name, compute_stats(array), None, DROPPED_PASS)

    def release(self, value: Value | None, reason: str = DROPPED_PASS) -> None:
        """Drop a value's array (keep its statistics), giving its bytes back; ``reason``
        is recorded in ``value.dropped``."""
        if value is not None and value.array is not None:
            settle_stats(value)
            self.used_bytes -= value.array.nbytes
            value.array = None
            value.dropped = reason
