"""Statistics over dimensions: var, std, var_mean, std_mean, logsumexp, median, nanmedian,
mode. Each reduces over ``dim`` (an int, a tuple, or None for all) with ``keepdim``.

Value-selecting reductions (median, mode with a dim) return (values, indices) and send the
gradient to the selected index; median of everything shares it among tied elements, as
torch does.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype
from .._layout import row_major
from .._methods.reduction import NOT_GIVEN
from ..autograd.anomaly import _user_stacklevel
from ..autograd.function import Op
from ..autograd.grad_mode import state
from ..autograd.quiet import silenced
from ..errors import ArgumentTypeError, AutogradError, DTypeError, ShapeError
from ..tensor import Tensor
from . import _math
from ._checks import wrap_dim
from ._saved import as_torch_ints, show_dim_and_sizes, show_saved
from .indexing import scatter_into
from .reduce import _product, normalize_dims


def kept_shape(input_shape, dims, keepdim: bool) -> tuple:
    """The shape a reduction's result has with keepdim=True (1 in each reduced dim)."""
    if dims is None:
        return (1,) * len(input_shape)
    shape = list(input_shape)
    for axis in dims:
        shape[axis] = 1
    return tuple(shape)


def as_kept(tensor, input_shape, dims, keepdim: bool):
    """A reduction's result (or its gradient) reshaped to broadcast against the input: a
    Tensor (recorded) or an array."""
    target = kept_shape(input_shape, dims, keepdim)
    if tuple(tensor.shape) == target:
        return tensor
    if tensor.__class__ is Tensor:
        # torch's unsqueeze_multiple: one UnsqueezeBackward0 per reduced dim, in order (a
        # full reduction's 0-d value broadcasts as it is)
        if dims is None and tensor.ndim == 0:
            return tensor
        for axis in sorted(dims) if dims is not None else range(len(input_shape)):
            tensor = tensor.unsqueeze(axis)
        return tensor
    return tensor.reshape(target)


def _require_float(op_name: str, a) -> None:
    if a._array.dtype.kind != "f":
        raise DTypeError(
            f"{op_name} only support floating point and complex dtypes (got "
            f"{a._describe()}). Hint: call .float() first.")


def _count(shape, dims) -> int:
    return _product(shape) if dims is None else _product(shape[d] for d in dims)


def _degrees_of_freedom(count: int, correction, op_name: str) -> float:
    dof = count - correction
    if dof <= 0:  # torch names the op the user called: var, std, var_mean, std_mean
        warnings.warn(
            f"{op_name}(): degrees of freedom is <= 0. Correction should be strictly less "
            "than the reduction factor (input numel divided by output numel).", UserWarning,
            stacklevel=_user_stacklevel())  # the user's line, as torch's warning points
    return max(dof, 0)


def _variance(x, dims, keepdim, correction, op_name: str = "var"):
    count = _count(x.shape, dims)
    with np.errstate(all="ignore"):  # inf and nan as torch gives them, without a word
        mean = x.mean(axis=dims, keepdims=True)
        centered = x - mean
        variance = (centered * centered).sum(axis=dims, keepdims=keepdim) / \
            _degrees_of_freedom(count, correction, op_name)
    # (torch allocates the results contiguous; NumPy's follow a permuted input's layout)
    return row_major(variance), row_major(mean)


class Var(Op):
    node_name = "VarBackward0"
    array_backward = True
    # as PyTorch names them; dim below. ``correction`` is as torch shows it (None for a
    # bare ``x.var()``: see variance_arguments); the formula reads None as 1.
    saved_names = ("self", "keepdim=keepdim", "correction=_correction")

    @staticmethod
    def inference_overload(a, dim=None, *rest, **attrs):
        """Of an inference tensor alone, torch's var over every element sums through out=
        and refuses; over some dims it records nothing (autograd/inference.py)."""
        dims = normalize_dims(dim, a._array.ndim)
        if dims is None or len(dims) == a._array.ndim:
            from ..autograd.inference import out_message

            raise AutogradError(out_message("sum"))
        return NotImplemented

    @staticmethod
    def forward(ctx, a, dim=None, correction=1, keepdim=False):
        _require_float("std and var", a)
        x = a._array
        dims = normalize_dims(dim, x.ndim)
        ctx.save_for_backward(a)
        ctx._correction = correction
        correction = 1 if correction is None else correction
        ctx.dims, ctx.keepdim, ctx.correction = dims, keepdim, correction
        ctx._dim = dim  # as given: grad_fn._saved_dim shows it
        variance, _ = _variance(x, dims, keepdim, correction)
        return variance

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (_var_grad(grad, a, ctx.dims, ctx.keepdim, ctx.correction), None, None, None)


def _var_grad(grad, a, dims, keepdim, correction):
    shape = tuple(a.shape)
    dof = max(_count(shape, dims) - correction, 0)
    all_dims = dims if dims is not None else tuple(range(len(shape)))
    centered = a - _math.mean_dims(a, all_dims)
    # torch's var_backward, grouped as it writes it: (2 / dof) * grad * (self - mean)
    return _math.scaled(as_kept(grad, shape, dims, keepdim), 2.0 / dof if dof else np.inf) * \
        centered


class Std(Op):
    node_name = "StdBackward0"
    array_backward = True
    saved_names = ("self", "result", "keepdim=keepdim", "correction=_correction")  # as Var's
    saves_output = True
    inference_overload = Var.inference_overload  # (the same sum through out=)

    @staticmethod
    def forward(ctx, a, dim=None, correction=1, keepdim=False):
        _require_float("std and var", a)
        x = a._array
        dims = normalize_dims(dim, x.ndim)
        ctx.save_for_backward(a)
        ctx._correction = correction
        correction = 1 if correction is None else correction
        ctx.dims, ctx.keepdim, ctx.correction = dims, keepdim, correction
        ctx._dim = dim  # as given: grad_fn._saved_dim shows it
        variance, _ = _variance(x, dims, keepdim, correction, "std")
        return a._xp.sqrt(variance)

    @staticmethod
    def backward(ctx, grad):
        a, result = ctx.saved_tensors
        # d std = d var / (2 std)
        scaled = grad / (result * 2)
        return (_var_grad(scaled, a, ctx.dims, ctx.keepdim, ctx.correction), None, None, None)


for _op in (Var, Std):
    show_saved(_op, "dim", lambda node: as_torch_ints(node._dim))


class VarMean(Op):
    """``torch.var_mean``: (var, mean) from one node, as torch records it."""

    node_name = "VarMeanBackward0"
    array_backward = True
    _std = False
    # grad_fn._saved_<name>, as PyTorch names them
    saved_names = ("self", "keepdim=keepdim", "correction=_correction")

    @staticmethod
    def forward(ctx, a, dim=None, correction=1, keepdim=False):
        _require_float("std and var", a)
        x = a._array
        dims = normalize_dims(dim, x.ndim)
        ctx.save_for_backward(a)
        ctx._correction, ctx._dim = correction, dim  # as given (see Var)
        correction = 1 if correction is None else correction
        ctx.dims, ctx.keepdim, ctx.correction = dims, keepdim, correction
        variance, mean = _variance(x, dims, keepdim, correction,
                                   "std_mean" if ctx._function._std else "var_mean")
        if not keepdim:
            mean = mean.reshape(variance.shape)
        spread = a._xp.sqrt(variance) if ctx._function._std else variance
        ctx.spread = spread
        return spread, mean

    @staticmethod
    def backward(ctx, grad_spread, grad_mean):
        a = ctx.saved_tensors[0]
        shape = tuple(a.shape)
        dims, keepdim = ctx.dims, ctx.keepdim
        if ctx._function._std:
            if state.grad_enabled:  # create_graph: the std must carry a's graph
                spread = Std.apply(a, dims, ctx.correction, keepdim)
            else:
                spread = _math.constant(grad_spread, ctx.spread)
            grad_spread = grad_spread / (spread * 2)
        grad = _var_grad(grad_spread, a, dims, keepdim, ctx.correction)
        grad = grad + _math.expand_reduced(grad_mean / _count(shape, dims), shape, dims,
                                           keepdim)
        return (grad, None, None, None)


class StdMean(VarMean):
    node_name = "StdMeanBackward0"
    _std = True
    # as torch: the std (output 0) too
    saved_names = ("self", "result0", "keepdim=keepdim", "correction=_correction")
    saves_output = (0,)


def variance_arguments(dim, unbiased, correction):
    """torch's overloads: ``var(dim, unbiased)``, ``var(dim, correction=)``, and a bool in
    ``dim``'s place meaning ``unbiased`` (``x.var(False)``). Gives ``(dim, correction)``
    with ``correction`` as torch's node shows it: as given; ``int(unbiased)``; 1 where a
    ``dim`` was given; else None (which the ops read as 1).

    >>> variance_arguments(NOT_GIVEN, None, NOT_GIVEN), variance_arguments(None, None, NOT_GIVEN)
    ((None, None), (None, 1))
    """
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if unbiased is not None and correction is not NOT_GIVEN and correction is not None:
        raise ArgumentTypeError(
            "var() received an invalid combination of arguments: unbiased and correction "
            "are two spellings of one setting. Hint: pass correction= only.")
    if correction is NOT_GIVEN:
        if unbiased is not None:
            correction = 1 if unbiased else 0
        else:
            correction = None if dim is NOT_GIVEN else 1
    return (None if dim is NOT_GIVEN else dim), correction


class Logsumexp(Op):
    node_name = "LogsumexpBackward0"
    array_backward = True
    inference_overload = "logsumexp"  # (torch's fills through out=: inference.py)
    saves_output = True
    saved_names = ("self", "result", "keepdim=keepdim")  # as PyTorch names them; dim below

    @staticmethod
    @silenced
    def forward(ctx, a, dim, keepdim=False):
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
        x = a._array
        if x.dtype.kind != "f":
            x = x.astype(_dtype.default_float.numpy)
        dims = normalize_dims(dim, x.ndim) if not (isinstance(dim, tuple) and not dim) \
            else tuple(range(x.ndim))
        ctx.save_for_backward(a)
        ctx.dims, ctx.keepdim = dims, keepdim
        xp = a._xp
        if x.size == 0:
            return xp.log(xp.exp(x).sum(axis=dims, keepdims=keepdim))
        peak = x.max(axis=dims, keepdims=True)
        peak = xp.where(xp.isfinite(peak), peak, 0)
        with np.errstate(divide="ignore"):
            total = xp.log(xp.exp(x - peak).sum(axis=dims, keepdims=True)) + peak
        return row_major(total if keepdim else total.reshape(
            tuple(s for i, s in enumerate(x.shape) if i not in (dims or range(x.ndim)))))

    @staticmethod
    def backward(ctx, grad):
        a, result = ctx.saved_tensors
        shape = tuple(a.shape)
        kept_result = as_kept(result, shape, ctx.dims, ctx.keepdim)
        return (as_kept(grad, shape, ctx.dims, ctx.keepdim) * _math.exp(a - kept_result),
                None, None)


# -- value-selecting --------------------------------------------------------------------
def _lower_median_index(xp, x, axis: int, ignore_nan: bool):
    """Index (along axis, kept as a size-1 dim) of the lower median. A NaN is the median
    when any is present (its first one), unless ignore_nan (nanmedian): then the median
    of the other values."""
    order = xp.argsort(x, axis=axis, kind="stable")  # NaN sorts last
    length = x.shape[axis]
    kept = order.shape[:axis] + (1,) + order.shape[axis + 1:]
    middle = xp.full(kept, (length - 1) // 2, dtype=np.int64)
    if x.dtype.kind != "f":
        return xp.take_along_axis(order, middle, axis=axis)
    nans = xp.isnan(x).sum(axis=axis, keepdims=True)
    if ignore_nan:
        position = xp.maximum(length - nans - 1, 0) // 2
        return xp.take_along_axis(order, position.astype(np.int64), axis=axis)
    first_nan = xp.expand_dims(xp.argmax(xp.isnan(x), axis=axis), axis)
    return xp.where(nans > 0, first_nan, xp.take_along_axis(order, middle, axis=axis))


class MedianDim(Op):
    """``median(dim)`` -> (values, indices); the gradient goes to the selected index."""

    node_name = "MedianBackward1"
    # the indices (output 1) a saved tensor, as torch's: changed in place, backward
    # fails the version check; dim and the input's sizes below
    saved_names = ("indices", "keepdim=keepdim")
    saves_output = (1,)
    array_backward = True
    _ignore_nan = False

    @staticmethod
    def forward(ctx, a, dim, keepdim=False):
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
        x = a._array
        xp = a._xp
        if x.ndim == 0:
            return x.copy(), xp.zeros((), np.int64)
        axis = wrap_dim(dim, x.ndim, a)
        if x.shape[axis] == 0:
            raise ShapeError(
                f"{ctx._function._label}(): Expected reduction dim {axis} to have non-zero "
                f"size ({a._describe()})")
        index = _lower_median_index(xp, x, axis, ctx._function._ignore_nan)
        values = xp.take_along_axis(x, index, axis=axis)
        ctx.axis, ctx.keepdim, ctx.index = axis, keepdim, index
        if not keepdim:
            values, index = values.squeeze(axis), index.squeeze(axis)
        return values, index.astype(np.int64)

    _label = "median"

    @staticmethod
    def backward(ctx, grad, _indices_grad=None):
        ctx.saved_tensors  # noqa: B018 - the indices' version check
        return (scatter_to_index(grad, ctx._input_meta[0][0], ctx.axis, ctx.index,
                                 ctx.keepdim), None, None)


class NanmedianDim(MedianDim):
    node_name = "NanmedianBackward1"
    _ignore_nan = True
    _label = "nanmedian"


def scatter_to_index(grad, input_shape, axis, index, keepdim):
    """The gradient of a value-selecting reduction: grad placed at ``index`` along axis (a
    Tensor, recorded, or an array, as ``grad`` is)."""
    if not len(input_shape):
        return grad
    if not keepdim:
        grad = _math.unsqueeze(grad, axis)
    return scatter_into(grad, tuple(input_shape), axis, index, False)


class MedianAll(Op):
    """``median()`` of every element: the lower median (NaN if any is NaN); the gradient
    is shared among the elements equal to it."""

    node_name = "MedianBackward0"
    array_backward = True
    saves_output = True
    saved_names = ("self", "result")  # grad_fn._saved_<name>, as PyTorch names them
    _ignore_nan = False

    @staticmethod
    def forward(ctx, a):
        x = a._array
        ctx.save_for_backward(a)
        if x.size == 0:
            return a._xp.asarray(np.nan, dtype=x.dtype) if x.dtype.kind == "f" else \
                a._xp.zeros((), x.dtype)
        flat = x.reshape(-1)
        index = _lower_median_index(a._xp, flat, 0, ctx._function._ignore_nan)
        return flat[index.reshape(())].copy()

    @staticmethod
    def backward(ctx, grad):
        a, result = ctx.saved_tensors
        xp = _math.xp(a)
        x, value = _math.array_of(a), _math.array_of(result)
        if value.dtype.kind == "f" and xp.isnan(value):
            mask = xp.isnan(x)
        else:
            mask = x == value
        weight = (mask / max(int(mask.sum()), 1)).astype(x.dtype)
        return (_math.constant(grad, weight) * grad,)


class NanmedianAll(MedianAll):
    node_name = "NanmedianBackward0"
    _ignore_nan = True
    saved_names = ("self", "result")  # grad_fn._saved_<name>, as PyTorch names them


class Mode(Op):
    """``mode(dim)`` -> (values, indices): the most frequent value (the smallest among
    equally frequent ones) and the index of its last occurrence, as torch returns."""

    node_name = "ModeBackward0"
    # the indices (output 1) a saved tensor, as torch's: changed in place, backward
    # fails the version check; dim and the input's sizes below
    saved_names = ("indices", "keepdim=keepdim")
    saves_output = (1,)
    array_backward = True

    @staticmethod
    def forward(ctx, a, dim=-1, keepdim=False):
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
        x = a._array
        xp = a._xp
        if x.ndim == 0:
            return x.copy(), xp.zeros((), np.int64)
        axis = wrap_dim(dim, x.ndim, a)
        moved = xp.moveaxis(x, axis, -1)
        rows = moved.reshape(-1, moved.shape[-1])
        values, indices = _row_modes(backends_host(rows))
        lead = moved.shape[:-1]
        values = xp.asarray(values.reshape(lead).astype(x.dtype))
        indices = xp.asarray(indices.reshape(lead))
        ctx.axis, ctx.keepdim = axis, keepdim
        ctx.index = xp.expand_dims(indices, axis)
        if keepdim:
            values, indices = xp.expand_dims(values, axis), ctx.index
        return values, indices

    @staticmethod
    def backward(ctx, grad, _indices_grad=None):
        ctx.saved_tensors  # noqa: B018 - the indices' version check
        return (scatter_to_index(grad, ctx._input_meta[0][0], ctx.axis, ctx.index,
                                 ctx.keepdim), None, None)


def backends_host(array):
    from .. import backends

    return backends.to_host(array)


def _row_modes(rows: np.ndarray):
    """Per row: the most frequent value (smallest on ties), and its last index."""
    count, length = rows.shape
    values = np.empty(count, dtype=rows.dtype)
    indices = np.empty(count, dtype=np.int64)
    if length == 0:
        return values, indices
    order = np.argsort(rows, axis=1, kind="stable")
    ordered = np.take_along_axis(rows, order, axis=1)
    for row in range(count):  # one pass per row over its sorted values
        line = ordered[row]
        starts = np.flatnonzero(np.concatenate(([True], line[1:] != line[:-1])))
        lengths = np.diff(np.append(starts, length))
        best = int(np.argmax(lengths))  # the first (smallest) of the longest runs
        end = starts[best] + lengths[best] - 1
        values[row] = line[starts[best]]
        indices[row] = order[row, end]  # stable sort: the run's last is the last occurrence
    return values, indices


def median(a, dim=None, keepdim=False):
    if dim is None:
        return MedianAll.apply(a)
    return MedianDim.apply(a, dim, keepdim=keepdim)


def nanmedian(a, dim=None, keepdim=False):
    if dim is None:
        return NanmedianAll.apply(a)
    return NanmedianDim.apply(a, dim, keepdim=keepdim)


def count_reduced(shape, dims) -> int:
    return _count(shape, dims)

show_saved(Logsumexp, "dim", lambda node: as_torch_ints(node.given))

for _op in (VarMean, StdMean):
    show_saved(_op, "dim", lambda node: as_torch_ints(node._dim))


show_dim_and_sizes(MedianDim, NanmedianDim, Mode)





