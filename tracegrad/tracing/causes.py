"""Why a NaN or Inf appeared: the cause, computed from the values the op saw.

One table per direction maps an op family (its grad_fn names) to the rules that can make
its result (forward) or its derivative (backward) non-finite. A rule names the cause (a key
of ``text.CAUSE_TEXT``, where the words live), the kind of value it makes, and the test on
the input values: a comparison (``x < 0``) that works on whole arrays and, when the recorder
kept statistics only, on their min/max; or an element test on several inputs (``0/0``).
The first rule whose test holds is the cause; the evidence (which input, at which elements,
how many of how many, their values) goes into ``Violation.detail``.

>>> import numpy as np
>>> cause, detail = diagnose("LogBackward0", "inf", "forward",
...                          [Operand("'spread'", np.array([2.0, 0.0]))])
>>> cause, detail["count"], detail["total"], detail["indices"], detail["values"]
('log_of_zero', 1, 2, [[1]], ['0'])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .model import Stats

MAX_ELEMENTS = 4  # the offending elements listed in a finding (indices and values)


@dataclass
class Operand:
    """One value an op saw: a forward input (slot 0, 1, ...), its ``result``, or the
    ``grad`` coming into its backward; whole array or, when not kept, statistics."""

    label: str  # "'spread'", "t4"
    array: np.ndarray | None = None
    stats: Stats | None = None
    tensor: int | None = None  # tensor id in the trace
    dropped: str = ""  # why only statistics are here, in words


@dataclass(frozen=True)
class Compare:
    """``slot <op> bound`` elementwise: a rule on one value, testable on statistics too."""

    cause: str
    makes: str  # "nan", "inf" or "any": which non-finite value the cause produces
    slot: int | str  # 0, 1, ... (forward inputs), "result", "grad"
    op: str  # "lt", "le", "eq", "gt", "abs_gt", "abs_eq"
    bound: float | str  # a number, or "exp_limit" (log of the dtype's largest value)


@dataclass(frozen=True)
class Elements:
    """A rule on several values at once (``0/0``, ``inf - inf``): needs whole arrays."""

    cause: str
    makes: str
    slot: int | str  # the value whose elements are listed
    test: Callable[[dict, dict], Any]  # (arrays by slot, node attrs) -> bool mask or None


def _both(slot_a, slot_b, test_a, test_b):
    def test(arrays: dict, attrs: dict):
        a, b = arrays.get(slot_a), arrays.get(slot_b)
        if a is None or b is None:
            return None
        try:
            a, b = np.broadcast_arrays(a, b)
        except ValueError:
            return None
        return test_a(a) & test_b(b)
    return test


def _opposite_infinities(arrays: dict, attrs: dict, subtract: bool = False):
    a, b = arrays.get(0), arrays.get(1)
    if a is None or b is None:
        return None
    try:
        a, b = np.broadcast_arrays(a, b)
    except ValueError:
        return None
    same_sign = np.sign(a) == np.sign(b)
    return np.isinf(a) & np.isinf(b) & (same_sign if subtract else ~same_sign)


def _fractional_power(arrays: dict, attrs: dict):
    base = arrays.get(0)
    exponent = attrs.get("exponent", arrays.get(1))
    if base is None or exponent is None:
        return None
    exponent = np.asarray(exponent, dtype=np.float64)
    try:
        base, exponent = np.broadcast_arrays(base, exponent)
    except ValueError:
        return None
    return (base < 0) & (exponent != np.floor(exponent))


def _zero_to_negative_power(below: float):
    def test(arrays: dict, attrs: dict):
        base = arrays.get(0)
        exponent = attrs.get("exponent", arrays.get(1))
        if base is None or exponent is None:
            return None
        try:
            base, exponent = np.broadcast_arrays(base, np.asarray(exponent, np.float64))
        except ValueError:
            return None
        return (base == 0) & (exponent < below)
    return test


_is_zero, _is_inf = (lambda x: x == 0), np.isinf
_PRODUCTS = ("Mm", "Bmm", "Addmm", "Addmv", "Baddbmm", "Mv", "Dot", "Matmul", "Linear",
             "Einsum", "Addbmm", "Tensordot", "Conv", "ConvolutionBackward0")
_INF_TIMES_ZERO = (Elements("inf_times_zero", "nan", 0, _both(0, 1, _is_inf, _is_zero)),
                   Elements("inf_times_zero", "nan", 1, _both(0, 1, _is_zero, _is_inf)))

# grad_fn name without its BackwardN suffix -> what can make its forward result non-finite.
FORWARD_RULES: dict[str, tuple] = {
    **dict.fromkeys(("Log", "Log2", "Log10"), (
        Compare("log_of_negative", "nan", 0, "lt", 0.0),
        Compare("log_of_zero", "inf", 0, "eq", 0.0))),
    "Log1p": (Compare("log_of_negative", "nan", 0, "lt", -1.0),
              Compare("log_of_zero", "inf", 0, "eq", -1.0)),
    "Sqrt": (Compare("sqrt_of_negative", "nan", 0, "lt", 0.0),),
    "Rsqrt": (Compare("sqrt_of_negative", "nan", 0, "lt", 0.0),
              Compare("division_by_zero", "inf", 0, "eq", 0.0)),
    "Reciprocal": (Compare("division_by_zero", "inf", 0, "eq", 0.0),),
    "Div": (Elements("zero_by_zero", "nan", 0, _both(0, 1, _is_zero, _is_zero)),
            Elements("inf_by_inf", "nan", 0, _both(0, 1, _is_inf, _is_inf)),
            Compare("division_by_zero", "inf", 1, "eq", 0.0)),
    "Pow": (Elements("pow_negative_fractional", "nan", 0, _fractional_power),
            Elements("pow_zero_negative", "inf", 0, _zero_to_negative_power(0.0))),
    **dict.fromkeys(("Exp", "Expm1"), (
        Compare("exp_overflow", "inf", 0, "gt", "exp_limit"),)),
    "Sub": (Elements("inf_minus_inf", "nan", 0,
                     lambda arrays, attrs: _opposite_infinities(arrays, attrs, True)),),
    "Add": (Elements("inf_minus_inf", "nan", 0, _opposite_infinities),),
    "Mul": _INF_TIMES_ZERO,
    **dict.fromkeys(_PRODUCTS, _INF_TIMES_ZERO),
    **dict.fromkeys(("Asin", "Acos"), (Compare("outside_unit", "nan", 0, "abs_gt", 1.0),)),
    "Atanh": (Compare("outside_unit", "nan", 0, "abs_gt", 1.0),
              Compare("atanh_of_one", "inf", 0, "abs_eq", 1.0)),
}

# ... what can make its derivative non-finite at the values it saw (incoming gradient finite).
BACKWARD_RULES: dict[str, tuple] = {
    **dict.fromkeys(("Log", "Log2", "Log10"), (Compare("log_grad_at_zero", "any", 0, "eq", 0.0),)),
    "Log1p": (Compare("log_grad_at_zero", "any", 0, "eq", -1.0),),
    "Sqrt": (Compare("sqrt_grad_at_zero", "any", "result", "eq", 0.0),
             Compare("sqrt_of_negative", "nan", 0, "lt", 0.0)),
    "Rsqrt": (Compare("division_by_zero", "any", 0, "eq", 0.0),),
    "Reciprocal": (Compare("division_by_zero", "any", 0, "eq", 0.0),),
    "Div": (Compare("division_by_zero", "any", 1, "eq", 0.0),),
    "Pow": (Elements("pow_grad_at_zero", "any", 0, _zero_to_negative_power(1.0)),
            Elements("pow_negative_fractional", "nan", 0, _fractional_power)),
    **dict.fromkeys(("Asin", "Acos"), (Compare("asin_grad_at_one", "any", 0, "abs_eq", 1.0),
                                       Compare("outside_unit", "nan", 0, "abs_gt", 1.0))),
    "Atanh": (Compare("atanh_of_one", "any", 0, "abs_eq", 1.0),),
}

# Ops whose output can be finite where an input is not (the unselected branch): the where
# trap, when the non-finite branch's own backward then multiplies a 0 gradient by Inf.
MASKING_OPS = frozenset({"WhereBackward0", "MaskedFillBackward0", "MaskedScatterBackward0",
                         "IndexPutBackward0", "NanToNumBackward0"})


def family(node_name: str) -> str:
    """``LogBackward0`` -> ``Log``: the key of the rule tables."""
    base = node_name
    for suffix in ("Backward0", "Backward1", "Backward2"):
        if base.endswith(suffix):
            return base[:-len(suffix)]
    return base


def exp_limit(dtype_name: str) -> float:
    """Where exp overflows: 88.72 in float32, 709.78 in float64, 11.09 in float16."""
    try:
        dtype = np.dtype(dtype_name)
    except TypeError:
        dtype = np.dtype("float32")
    if dtype.kind != "f":
        dtype = np.dtype("float32")
    return float(np.log(np.finfo(dtype).max))


def diagnose(node_name: str, kind: str, phase: str, operands: list[Operand],
             attrs: dict | None = None, extra: dict | None = None,
             dtype: str = "float32") -> tuple[str | None, dict]:
    """(cause, detail) for a ``kind`` ("nan"/"inf") value ``node_name`` made in ``phase``;
    ``operands`` are its forward inputs in order, ``extra`` the ``result`` and ``grad``.

    (None, {}) when no rule of the op's family explains it (the caller falls back to
    "an input was already non-finite", "overflow" or "undefined operation").
    """
    table = FORWARD_RULES if phase == "forward" else BACKWARD_RULES
    rules = table.get(family(node_name), ())
    slots: dict = dict(enumerate(operands))
    slots.update(extra or {})
    arrays = {slot: operand.array for slot, operand in slots.items()
              if operand.array is not None}
    ordered = [rule for rule in rules if rule.makes in (kind, "any")] + \
        [rule for rule in rules if rule.makes not in (kind, "any")]
    for rule in ordered:
        operand = slots.get(rule.slot)
        if operand is None:
            continue
        detail = _apply(rule, operand, arrays, attrs or {}, dtype)
        if detail is not None:
            return rule.cause, detail
    return None, {}


def _apply(rule, operand: Operand, arrays: dict, attrs: dict, dtype: str) -> dict | None:
    if isinstance(rule, Compare):
        bound = exp_limit(dtype) if rule.bound == "exp_limit" else float(rule.bound)
        if operand.array is None:
            return _from_stats(rule, operand, bound)
        with np.errstate(invalid="ignore"):
            mask = _compare(operand.array, rule.op, bound)
        detail = elements(operand, mask)
        if detail is not None and rule.bound == "exp_limit":
            detail["limit"] = round(bound, 2)
        return detail
    if operand.array is None:
        return None
    with np.errstate(invalid="ignore"):
        mask = rule.test(arrays, attrs)
    return elements(operand, mask) if mask is not None else None


def _compare(array: np.ndarray, op: str, bound: float):
    if op == "lt":
        return array < bound
    if op == "eq":
        return array == bound
    if op == "gt":
        return array > bound
    if op == "abs_gt":
        return np.abs(array) > bound
    return np.abs(array) == bound  # abs_eq


def _from_stats(rule: Compare, operand: Operand, bound: float) -> dict | None:
    """The rule on min/max when only statistics were kept (which elements is unknown).
    Statistics cover finite elements; ``eq`` holds when the bound is inside [min, max]
    (a guess: said as such in the words)."""
    stats = operand.stats
    if stats is None or stats.min is None:
        return None
    low, high = stats.min, stats.max
    holds = {"lt": low < bound, "gt": high > bound, "eq": low <= bound <= high,
             "abs_gt": max(abs(low), abs(high)) > bound,
             "abs_eq": low <= -bound or high >= bound}[rule.op]
    if not holds:
        return None
    detail = {"input": operand.label, "tensor": operand.tensor, "source": "stats",
              "dropped": operand.dropped, "min": _number(low), "max": _number(high)}
    if rule.bound == "exp_limit":
        detail["limit"] = round(bound, 2)
    return detail


def elements(operand: Operand, mask) -> dict | None:
    """The evidence for ``mask`` over ``operand``: count, total, the first indices and
    values; None when no element is selected."""
    mask = np.asarray(mask)
    count = int(mask.sum())
    if count == 0:
        return None
    array = np.broadcast_to(operand.array, mask.shape) if mask.shape != operand.array.shape \
        else operand.array
    where = np.argwhere(mask)[:MAX_ELEMENTS]
    return {"input": operand.label, "tensor": operand.tensor, "source": "array",
            "count": count, "total": int(mask.size),
            "indices": [[int(i) for i in index] for index in where],
            "values": [_number(array[tuple(index)]) for index in where]}


def _number(value) -> str:
    """A value as text (JSON has no Inf/NaN): ``0``, ``-1.5``, ``inf``, ``nan``."""
    return f"{float(value):.6g}"


def nonfinite_operands(operands: list[Operand], kinds: str = "nan+inf") -> list[Operand]:
    """The operands that already held a non-finite value (``kinds``: ``nan+inf`` or
    ``nan``), by their arrays or, without them, their statistics."""
    found = []
    for operand in operands:
        if operand.array is not None and operand.array.dtype.kind in "fc":
            bad = np.isnan(operand.array) if kinds == "nan" else ~np.isfinite(operand.array)
            if bool(bad.any()):
                found.append(operand)
        elif operand.stats is not None and (
                operand.stats.nan_count if kinds == "nan" else operand.stats.has_nonfinite):
            found.append(operand)
    return found


def nonfinite_elements(operand: Operand) -> dict | None:
    """The non-finite elements of ``operand`` as evidence (None without its array)."""
    if operand.array is None or operand.array.dtype.kind not in "fc":
        return None
    return elements(operand, ~np.isfinite(operand.array))
