"""Indexing and the ops built on indices: getitem/setitem, gather/scatter, masked_fill, where."""

from __future__ import annotations

import warnings

import numpy as np

from .. import backends
from .._layout import index_layout, iterator_layout, row_major
from ..autograd import views
from ..autograd.function import Op
from ..autograd.grad_mode import state
from ..autograd.node import _AbsentSavedTensor
from ..autograd.quiet import silenced
from ..backends import array_module
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor  # ops load after Tensor is defined (tensor.py imports them)
from . import _math
from ._edges import select_edges
from ._math import sum_to
from ._operands import operands
from ._saved import as_torch_int, show_saved
from .arith import Copy, FillTensor
from .shape import Alias, Unsqueeze, check_expandable, wrap_dim


class Select(Op):
    """``x[i]`` / ``x.select(dim, i)``: one position along ``dim``, a view without it."""

    node_name = "SelectBackward0"
    is_view = True
    array_backward = True
    # as PyTorch names them; dim and index as given below (x[-1] shows 2**64 - 1)
    saved_names = ("self_sym_sizes=input_shape",)

    @staticmethod
    def forward(ctx, a, dim, index, given=None):
        x = a._array
        size = x.shape[dim]
        if not -size <= index < size:
            raise IndexError(f"index {index} is out of bounds for dimension {dim} with size "
                             f"{size} (indexing {a._describe()})")
        ctx.dim, ctx.index, ctx.input_shape = dim, index, x.shape
        ctx.given = given  # (dim, index) as the caller wrote them, where they differ
        return x[(slice(None),) * dim + (index, Ellipsis)]  # a 0-d result stays a view

    @staticmethod
    def backward(ctx, grad):
        if grad.__class__ is Tensor:  # create_graph: torch's SelectBackwardBackward0
            return (SelectBackward.apply(grad, ctx.input_shape, ctx.dim, ctx.index, ctx.given),
                    None, None, None)
        index = (slice(None),) * ctx.dim + (ctx.index,)
        return (index_accumulate(grad, ctx.input_shape, index), None, None, None)


class SelectBackward(Op):
    """select's backward as a node (torch's select_backward): ``grad`` placed at ``index``
    along ``dim`` of zeros shaped as the input; its own backward selects again."""

    node_name = "SelectBackwardBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, grad, input_shape, dim, index, given=None):
        ctx.dim, ctx.index, ctx.given = dim, index, given
        out = grad._xp.zeros(input_shape, dtype=grad._array.dtype)
        out[(slice(None),) * dim + (index,)] = grad._array
        return out

    @staticmethod
    def backward(ctx, grad_grad):
        return (_math.apply(Select, grad_grad, ctx.dim, ctx.index, ctx.given),
                None, None, None, None)


for _op in (Select, SelectBackward):
    show_saved(_op, "dim", lambda node: as_torch_int(
        node.dim if node.given is None else node.given[0]))
    show_saved(_op, "index", lambda node: as_torch_int(
        node.index if node.given is None else node.given[1]))


class Slice(Op):
    """``x[start:end:step]`` along ``dim`` (and ``narrow``): a view."""

    node_name = "SliceBackward0"
    is_view = True
    array_backward = True
    # as PyTorch names them; start and end as given below (x[1:] shows end 2**63 - 1)
    saved_names = ("dim=dim", "step=step", "self_sym_sizes=input_shape")

    @staticmethod
    def forward(ctx, a, dim, start, end, step, given=None):
        x = a._array
        ctx.dim, ctx.start, ctx.end, ctx.step, ctx.input_shape = dim, start, end, step, x.shape
        ctx.given = given  # (start, end) as the caller wrote them, where they differ
        return x[(slice(None),) * dim + (slice(start, end, step),)]

    @staticmethod
    def backward(ctx, grad):
        if grad.__class__ is Tensor:  # create_graph: torch's SliceBackwardBackward0
            return (SliceBackward.apply(grad, ctx.input_shape, ctx.dim, ctx.start, ctx.end,
                                        ctx.step, ctx.given), None, None, None, None, None)
        index = (slice(None),) * ctx.dim + (slice(ctx.start, ctx.end, ctx.step),)
        return (index_accumulate(grad, ctx.input_shape, index), None, None, None, None, None)


class SliceBackward(Op):
    """slice's backward as a node (torch's slice_backward): ``grad`` placed at the slice
    of zeros shaped as the input; its own backward slices again."""

    node_name = "SliceBackwardBackward0"
    array_backward = True
    saved_names = ("dim=dim", "step=step")  # as torch names them; start and end below

    @staticmethod
    def forward(ctx, grad, input_shape, dim, start, end, step, given=None):
        ctx.dim, ctx.start, ctx.end, ctx.step, ctx.given = dim, start, end, step, given
        out = grad._xp.zeros(input_shape, dtype=grad._array.dtype)
        out[(slice(None),) * dim + (slice(start, end, step),)] = grad._array
        return out

    @staticmethod
    def backward(ctx, grad_grad):
        return (_math.apply(Slice, grad_grad, ctx.dim, ctx.start, ctx.end, ctx.step,
                            ctx.given),) + (None,) * 6


_INT64_MAX = (1 << 63) - 1  # what torch shows for an open end (x[1:])
for _op in (Slice, SliceBackward):
    show_saved(_op, "start", lambda node: as_torch_int(
        node.start if node.given is None else node.given[0]))
    show_saved(_op, "end", lambda node: as_torch_int(node.end) if node.given is None else (
        None if node.given[1] is None else as_torch_int(node.given[1])))  # (torch's end=None)


def _given_bounds(part: slice) -> tuple:
    """A slice's start and end as torch's SliceBackward0 shows them: as written, an open
    start 0 and an open end INT64_MAX."""
    return (0 if part.start is None else int(part.start),
            _INT64_MAX if part.stop is None else int(part.stop))


class Index(Op):
    """Advanced indexing (integer arrays, boolean masks): a copy."""

    node_name = "IndexBackward0"
    array_backward = True
    saved_names = ("self_sym_sizes=input_shape",)  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a, index):
        ctx.input_shape, ctx.index = a._array.shape, index
        _save_positions(ctx, index)
        return index_layout(a._array[index], a._array, index)

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors  # noqa: B018 - raises, as torch does, once backward freed them
        if grad.__class__ is Tensor:  # create_graph: torch's IndexPutImplBackward0
            return (_index_backward(grad, ctx.input_shape, ctx.index), None)
        return (_accumulated(array_module(grad), grad, ctx.input_shape, ctx.index), None)


def _saved_indices(node, raw: bool) -> tuple:
    """``grad_fn._saved_indices`` (``_raw_saved_indices``): one entry per indexed dim up to
    the last index tensor, None (an empty saved tensor) for a dim taken whole, as torch's
    IndexBackward0 shows them."""
    parts = node.index if isinstance(node.index, tuple) else (node.index,)
    saved = iter(node._saved)
    shown = []
    for part in parts:
        if getattr(part, "dtype", None) is None:
            shown.append(_AbsentSavedTensor() if raw else None)
        else:
            slot = next(saved)
            shown.append(slot if raw else slot.unpack(node))
    return tuple(shown)


Index._node_class._saved_indices = property(lambda node: _saved_indices(node, False))
Index._node_class._raw_saved_indices = property(lambda node: _saved_indices(node, True))


def _save_positions(ctx, index) -> None:
    """Advanced indexing saves its index tensors, as PyTorch's nodes do: a second backward
    through a freed graph then fails the same way."""
    if ctx.needs_input_grad:

        parts = index if isinstance(index, tuple) else (index,)
        ctx.save_for_backward(*(Tensor._wrap(part, False) for part in parts
                                if getattr(part, "dtype", None) is not None))


def _index_reader(raw: bool):
    """``grad_fn._saved_indices`` (``raw``: ``_raw_saved_indices``) of an index_put node:
    one entry per part of its index up to the last tensor, as torch's list of optional
    tensors -- the saved tensor (or its SavedTensor) for an index tensor, None for a
    slice."""
    def read(node) -> tuple:
        parts = node.index if isinstance(node.index, tuple) else (node.index,)
        saved = iter(node._saved)
        shown = []
        for part in parts:
            if getattr(part, "dtype", None) is None:
                shown.append(None)
            else:
                slot = next(saved)
                shown.append(slot if raw else slot.unpack(node))
        while shown and shown[-1] is None:
            shown.pop()
        return tuple(shown)

    return read


def show_indices(op, accumulate: bool) -> None:
    """``_saved_indices``, ``_raw_saved_indices`` and ``_saved_accumulate`` of an op whose
    node is torch's IndexPutBackward0 and saves its index with ``_save_positions``."""
    show_saved(op, "indices", _index_reader(False))
    op._node_class._raw_saved_indices = property(_index_reader(True))
    show_saved(op, "accumulate", lambda node: accumulate)


def slice_view(tensor, dim: int, start: int, end: int, step: int):
    return Slice.apply(tensor, dim, start, end, step)


# -- reading and writing through an index, PyTorch's way ---------------------------------
# PyTorch applies the basic parts of an index one by one (select for an int, slice, an
# unsqueeze for None), each a view, and then one advanced index for the tensors among them.
# Numpy treats ints as advanced indices too, which moves dimensions differently
# (``x[0, :, [0, 1]]``), so the plan below is what decides, never numpy alone.
_SELECT, _SLICE, _UNSQUEEZE = 0, 1, 2


class _Plan:
    __slots__ = ("advanced", "steps")

    def __init__(self) -> None:
        self.steps = []  # (_SELECT, dim, i) / (_SLICE, dim, start, end, step) / (_UNSQUEEZE, dim)
        self.advanced = {}  # dim of the sliced result -> index array


def _index_array(part, tensor):
    """An index given as a tensor, array or (nested) list, as the backend's array."""
    if isinstance(part, Tensor):
        array = part._array
    else:
        array = np.asarray(part)
        if array.size == 0 and array.dtype.kind == "f":
            array = array.astype(np.int64)  # ``x[[]]``: an empty list of positions
        if tensor._array.__class__ is not np.ndarray:

            array = backends.to_device(array, tensor.device)
    kind = array.dtype.kind
    if kind not in "iub":
        raise IndexError(
            f"tensors used as indices must be long, int, byte or bool tensors (got "
            f"{array.dtype.name} for indexing {tensor._describe()})")
    if kind == "u" and array.dtype.itemsize == 1:
        # A ByteTensor index is a mask in torch (deprecated, warned); NumPy would read its
        # 0s and 1s as positions.
        warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype "
                      "torch.bool instead.", UserWarning, stacklevel=5)
        array = array.astype(bool)
    return array


def _is_sequence_index(part) -> bool:
    return isinstance(part, (list, np.ndarray)) or (
        isinstance(part, tuple) and not any(p is None or p is Ellipsis or isinstance(p, slice)
                                            for p in part))


def plan_index(tensor, index, skip_full_slices: bool) -> _Plan:
    """How to apply ``index`` to ``tensor``, checked as PyTorch checks it."""
    parts = index if type(index) is tuple else (index,)
    shape = list(tensor._array.shape)
    ndim = len(shape)
    converted = []
    specified = 0
    for part in parts:
        if part is None or part is Ellipsis:
            pass
        elif isinstance(part, slice):
            specified += 1
        elif isinstance(part, bool):
            pass
        elif isinstance(part, (int, np.integer)):
            specified += 1
            part = int(part)
        elif isinstance(part, Tensor) or _is_sequence_index(part):
            if isinstance(part, Tensor) and part._array.ndim == 0 and \
                    part._array.dtype.kind in "iu":
                part = int(part.item())  # a 0-dim integer tensor indexes like an int
                specified += 1
            else:
                part = _index_array(part, tensor)
                if part.ndim == 0 and part.dtype.kind == "b":
                    part = bool(part)
                else:
                    specified += part.ndim if part.dtype.kind == "b" else 1
        else:
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                f"Variables are valid indices (got {type(part).__name__})")
        converted.append(part)
    if specified > ndim:
        if ndim == 0:
            raise IndexError(
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {ndim} (indexing "
                         f"{tensor._describe()})")
    plan = _Plan()
    steps, advanced = plan.steps, plan.advanced
    dim = 0
    for part in converted:
        if part is None:
            steps.append((_UNSQUEEZE, dim))
            shape.insert(dim, 1)
            dim += 1
        elif part is Ellipsis:
            dim += ndim - specified
        elif isinstance(part, bool):
            steps.append((_UNSQUEEZE, dim))
            shape.insert(dim, 1)
            advanced[dim] = np.asarray([part]) if tensor._array.__class__ is np.ndarray \
                else tensor._xp.asarray([part])
            dim += 1
        elif isinstance(part, int):
            size = shape[dim]
            if not -size <= part < size:
                raise IndexError(f"index {part} is out of bounds for dimension {dim} with "
                                 f"size {size} (indexing {tensor._describe()})")
            steps.append((_SELECT, dim, part + size if part < 0 else part, part))
            del shape[dim]
        elif isinstance(part, slice):
            step = 1 if part.step is None else int(part.step)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            start, end, _ = slice(None if part.start is None else int(part.start),
                                  None if part.stop is None else int(part.stop),
                                  step).indices(shape[dim])
            end = max(start, end)
            if not (skip_full_slices and start == 0 and end == shape[dim] and step == 1):
                steps.append((_SLICE, dim, start, end, step, _given_bounds(part)))
                shape[dim] = len(range(start, end, step))
            dim += 1
        else:  # an index array
            if part.dtype.kind == "b":
                _check_mask(part, shape, dim, tensor)
                advanced[dim] = part
                dim += part.ndim
            else:
                _check_positions(part, shape[dim], dim, tensor)
                advanced[dim] = part
                dim += 1
    return plan


def _check_mask(mask, shape: list, dim: int, tensor) -> None:
    for axis in range(mask.ndim):
        if dim + axis >= len(shape) or mask.shape[axis] != shape[dim + axis]:
            raise IndexError(
                f"The shape of the mask {list(mask.shape)} at index {axis} does not match the "
                f"shape of the indexed tensor {shape[dim:dim + mask.ndim] or shape} at index "
                f"{dim + axis} (indexing {tensor._describe()})")


def _check_positions(positions, size: int, dim: int, tensor) -> None:
    if positions.size == 0:
        return
    low, high = int(positions.min()), int(positions.max())
    if low < -size or high >= size:
        bad = high if high >= size else low
        raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size} "
                         f"(indexing {tensor._describe()})")


def _advanced_index(plan: _Plan) -> tuple:
    last = max(plan.advanced)
    return tuple(plan.advanced.get(dim, slice(None)) for dim in range(last + 1))


def _apply_steps(tensor, steps):
    result = tensor
    for step in steps:
        kind = step[0]
        if kind == _SELECT:
            result = Select.apply(result, step[1], step[2], (step[1], step[3]))
        elif kind == _SLICE:
            result = Slice.apply(result, step[1], step[2], step[3], step[4], step[5])
        else:
            result = Unsqueeze.apply(result, dim=step[1])
    return result


def getitem(tensor, index):
    """``tensor[index]``: views for ints, slices, None and ``...``; a copy (IndexBackward0)
    when the index holds tensors, lists or masks -- with PyTorch's node for each part."""
    kind = type(index)
    if kind is int:  # the common ``x[i]``: one select
        ndim = tensor._array.ndim
        if ndim:
            size = tensor._array.shape[0]
            if -size <= index < size:
                return Select.apply(tensor, 0, index + size if index < 0 else index,
                                    None if index >= 0 else (0, index))
    elif kind is slice and tensor._array.ndim and (index.step is None or (
            type(index.step) is int and index.step > 0)):  # the common ``x[a:b]``
        start, end, step = index.indices(tensor._array.shape[0])
        return Slice.apply(tensor, 0, start, max(start, end), step, _given_bounds(index))
    plan = plan_index(tensor, index, skip_full_slices=kind is tuple)
    result = _apply_steps(tensor, plan.steps)
    if plan.advanced:
        return Index.apply(result, _advanced_index(plan))
    if result is tensor:

        return Alias.apply(tensor)
    return result


def select(tensor, dim: int, index: int):
    """``torch.select``: the view at ``index`` along ``dim``."""
    axis = wrap_dim(dim, tensor._array.ndim)
    size = tensor._array.shape[axis]
    if not -size <= index < size:
        from ..errors import OutOfRangeError  # ops-curriculum: issue 16's named error

        raise OutOfRangeError(
            f"select(): index {index} out of range for tensor of size {list(tensor.shape)} "
            f"at dimension {dim} ({tensor._describe()}). Hint: valid indices are {-size} to "
            f"{size - 1}.")
    return Select.apply(tensor, axis, index + size if index < 0 else index, (dim, index))


def _refuse_byte_mask_fill(tensor, index) -> None:
    """torch writes a number (or 0-d tensor) through a mask with masked_fill_, which takes
    only bool masks: a uint8 mask there raises (reading through it is a deprecated mask)."""
    parts = index if index.__class__ is tuple else (index,)
    for part in parts:
        if isinstance(part, Tensor) and part._array.dtype.kind == "u" and \
                part._array.dtype.itemsize == 1:
            raise DTypeError(
                f"masked_fill_ only supports boolean masks, but got mask with dtype unsigned "
                f"char (assigning into {tensor._describe()}). Hint: index with mask.bool().")


def setitem(tensor, index, value) -> None:
    """``tensor[index] = value``, as PyTorch does it: the basic parts make a view, then
    ``copy_`` writes into it (CopySlices on the tensor), or ``index_put_`` does when the
    index holds tensors; without anything to record, the write goes straight to storage."""
    if index.__class__ is Tensor and value.__class__ in _MASK_FILL_VALUES and not (
            state.grad_enabled and tensor._requires_grad) and _fill_mask(tensor, index, value):
        return  # x[mask] = number, nothing recorded (only a bool mask: see _fill_mask)
    if not isinstance(value, Tensor) or value._array.ndim == 0:
        _refuse_byte_mask_fill(tensor, index)
    recording = state.grad_enabled and (tensor._requires_grad or (
        value.__class__ is Tensor and value._requires_grad))
    if not recording and (_assign_basic(tensor, index, value) or
                          _fill_mask(tensor, index, value)):
        return
    plan = plan_index(tensor, index, skip_full_slices=True)
    if not isinstance(value, Tensor):
        value = _value_tensor(value, tensor)
    if state.grad_enabled and (tensor._requires_grad or value._requires_grad):
        target = _apply_steps(tensor, plan.steps)
        if plan.advanced:
            target._inplace("__setitem__", IndexPut, value, index=_advanced_index(plan))
        else:
            _copy_to(target, value)
        return
    array = tensor._array
    for step in plan.steps:
        kind = step[0]
        if kind == _SELECT:
            array = array[(slice(None),) * step[1] + (step[2], Ellipsis)]
        elif kind == _SLICE:
            array = array[(slice(None),) * step[1] + (slice(step[2], step[3], step[4]),)]
        else:
            array = tensor._xp.expand_dims(array, step[1])
    source = value._array
    if source.__class__ is not array.__class__:

        source = backends.to_device(source, tensor.device)
    views.check_no_overlap(tensor)
    if plan.advanced:
        views.check_no_any_overlap(tensor, value)
        where = _advanced_index(plan)
        try:
            array[where] = source
        except ValueError:
            raise _value_shape_error(value, array[where].shape, tensor) from None
    else:

        if source.ndim:
            views.check_no_partial_overlap(tensor, value, array)
        source = source.reshape(_without_leading_ones(source.shape))
        check_expandable(array.shape, source.shape, value)
        array[...] = source
    views.after_inplace(tensor, "__setitem__")


def _is_basic_part(part) -> bool:
    kind = type(part)
    return kind is int or (kind is slice and (part.step is None or (
        type(part.step) is int and part.step > 0)))


def _assign_basic(tensor, index, value) -> bool:
    """The common ``x[i] = v`` / ``x[a:b] = v`` with nothing to record: straight into the
    storage (ints and positive-step slices index alike in NumPy and PyTorch). Returns False
    to leave anything else, or any error, to the full path and its PyTorch messages."""
    if not (_is_basic_part(index) or (type(index) is tuple and all(
            _is_basic_part(part) for part in index))):
        return False
    array = tensor._array
    if value.__class__ is Tensor:
        source = value._array
        if source.__class__ is not array.__class__:
            return False
    elif type(value) in (int, float, bool) and not (type(value) is float and
                                                    array.dtype.kind not in "fc"):
        source = value
    else:
        return False
    if 0 in array.strides:
        return False  # maybe an expanded tensor: the full path says why not
    try:
        if value.__class__ is Tensor and source.ndim:
            views.check_no_partial_overlap(tensor, value, array[index])
        array[index] = source
    except (IndexError, ValueError, TypeError):
        return False
    views.after_inplace(tensor, "__setitem__")
    return True


_MASK_FILL_VALUES = (int, float, bool)


def _fill_mask(tensor, index, value) -> bool:
    """``x[mask] = number`` with nothing to record (a hand-written ReLU backward's
    ``grad[input < 0] = 0``, bench/bench_two_layer.py): a bool mask of x's own shape,
    written straight into the storage, with the full path's conversion of the number and
    its checks in its order. Returns False to leave anything else to the full path."""
    if index.__class__ is not Tensor or type(value) not in _MASK_FILL_VALUES:
        return False
    array, mask = tensor._array, index._array
    if mask.dtype.kind != "b" or mask.shape != array.shape or not array.ndim or \
            mask.__class__ is not array.__class__:
        return False
    try:  # (_value_tensor's conversion, without the tensor it wraps it in)
        source = (np if array.__class__ is np.ndarray else tensor._xp).asarray(
            value, dtype=array.dtype)
    except (TypeError, ValueError):
        source = _value_tensor(value, tensor)  # raises its message
    if 0 in array.strides:  # (check_no_overlap's only case: an expanded dimension)
        views.check_no_overlap(tensor)
    array[mask] = source
    views.after_inplace(tensor, "__setitem__")
    return True


def _without_leading_ones(shape: tuple) -> tuple:
    """A value assigned into a slice loses its leading size-1 dims first (as in torch)."""
    lead = 0
    while lead < len(shape) and shape[lead] == 1:
        lead += 1
    return shape[lead:]


def _copy_to(target, value) -> None:
    """What ``t[basic index] = value`` records on the selected part, as PyTorch's copy_to:
    ``copy_`` of a value of the same shape, ``fill_`` of a 0-dim one, else ``copy_`` of
    the value without its leading size-1 dims, expanded."""
    shape = value._array.shape
    if shape == target._array.shape:
        target._inplace("__setitem__", Copy, value)
    elif not shape:
        target._inplace("__setitem__", FillTensor, value)
    else:
        trimmed = _without_leading_ones(shape)
        check_expandable(target._array.shape, trimmed, value)
        if trimmed != shape:
            value = value.reshape(trimmed)
        target._inplace("__setitem__", Copy, value)


def index_put_arguments(tensor, indices, values, accumulate: bool) -> tuple:
    """``(op, values, index)`` for ``tensor.index_put(_)(indices, values, accumulate)``:
    the op torch's IndexPutBackward0 stands for (IndexPut, or IndexPutAccumulate where
    repeated positions add up), the values as a tensor, the index in NumPy's terms."""
    from .selection import IndexPutAccumulate  # (selection imports this module)

    index = tuple(part._array if isinstance(part, Tensor) else part for part in indices)
    if not isinstance(values, Tensor):
        values = _value_tensor(values, tensor)
    return (IndexPutAccumulate if accumulate else IndexPut), values, index


def _value_tensor(value, like):
    """A Python number (or nested list) assigned into ``like``: a tensor of like's dtype."""
    try:
        array = like._xp.asarray(value, dtype=like._array.dtype)
    except (TypeError, ValueError):
        raise TypeError(
            f"can't assign a {type(value).__name__} to a {like.dtype.name} tensor "
            f"({like._describe()}). Hint: assign a tensor or a number.") from None
    return Tensor._wrap(array, False)


def _value_shape_error(value, target_shape, tensor) -> ShapeError:
    return ShapeError(
        f"shape mismatch: value tensor of shape {list(value._array.shape)} cannot be "
        f"broadcast to indexing result of shape {list(target_shape)} (assigning into "
        f"{tensor._describe()})")


def _no_repeats(index) -> bool:
    """Whether an index picks each position at most once (basic parts and one mask)."""
    parts = index if isinstance(index, tuple) else (index,)
    arrays = [part for part in parts if getattr(part, "dtype", None) is not None]
    return not arrays or (len(arrays) == 1 and arrays[0].dtype.kind == "b")


class IndexAccumulate(Op):
    """zeros(shape) with ``grad`` added at ``index``: the backward of indexing."""

    node_name = "IndexPutBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, grad, shape, index):
        ctx.index = index
        return _accumulated(grad._xp, grad._array, shape, index)

    @staticmethod
    def backward(ctx, grad):
        return (_indexed(grad, ctx.index),)


def _indexed(value, index):
    """``value[index]`` for an index already in NumPy's terms: a Tensor (recorded,
    IndexBackward0) or an array."""
    return Index.apply(value, index) if value.__class__ is Tensor else value[index]


def _accumulated(xp, values, shape, index):
    """zeros(shape) with the array ``values`` added at ``index``."""
    out = xp.zeros(shape, dtype=values.dtype)
    if _no_repeats(index):  # no position repeats: plain assignment
        out[index] = values
    else:
        xp.add.at(out, index, values)
    return out


class IndexPutImpl(Op):
    """Advanced indexing's backward under create_graph, as torch builds it:
    ``zeros(shape).index_put_(indices, grad, accumulate=True)``, an IndexPutImplBackward0
    whose first edge (the zeros) leads nowhere. It saves the index tensors (a second
    backward through it after the first freed them fails as torch's does)."""

    node_name = "IndexPutImplBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, zeros, grad, shape, index):
        select_edges(ctx, (0, 1))  # torch's edges: the zeros (none), the values
        ctx.index = index
        _save_positions(ctx, index)
        return _accumulated(grad._xp, grad._array, shape, index)

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors  # noqa: B018 - raises once backward freed them, as in torch
        return (None, _indexed(grad, ctx.index))


show_indices(IndexPutImpl, accumulate=True)


def _index_backward(grad, shape, index):
    """IndexBackward0's gradient as a recorded Tensor (create_graph): at version 1, as
    torch's is, the zeros after one in-place index_put_."""
    result = IndexPutImpl.apply(None, grad, shape=shape, index=index)
    result._version_counter.bump("index_put_")
    return result


def index_accumulate(grad, shape, index):
    """zeros(shape) with ``grad`` added at ``index`` -- the backward of indexing: a Tensor
    (recorded, IndexPutBackward0) or an array."""
    if grad.__class__ is Tensor:
        return IndexAccumulate.apply(grad, shape=shape, index=index)
    return _accumulated(array_module(grad), grad, shape, index)


class IndexPut(Op):
    """``out = base.clone(); out[index] = value`` -- what ``base[index] = value`` records."""

    node_name = "IndexPutBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, base, value, index):
        select_edges(ctx, (0, 1))  # torch's edges: base, value (no index/mask edge)
        out = base._array.copy()
        ctx.index = index
        ctx.value_shape = value._array.shape
        _save_positions(ctx, index)
        try:
            out[index] = value._array
        except ValueError:
            raise _value_shape_error(value, out[index].shape, base) from None
        return out

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors  # noqa: B018 - raises once backward freed them, as in torch
        needs = ctx.needs_input_grad
        grad_base = grad_value = None
        if needs[0]:
            grad_base = _math.apply(IndexPut, grad, _zero_like(grad), index=ctx.index)
        if needs[1]:
            grad_value = sum_to(_math.apply(Index, grad, ctx.index), ctx.value_shape)
        return grad_base, grad_value


show_indices(IndexPut, accumulate=False)


def _zero_like(value):
    """A 0-d zero of ``value``'s dtype, on its device: a backend array (``_math.apply``
    makes it a Tensor where the formula runs on Tensors)."""
    return _math.xp(value).zeros((), dtype=_math.numpy_dtype(value))


# -- gather / scatter -------------------------------------------------------------------
def _grid_index(xp, index_array, axis: int):
    """Fancy-index tuple addressing ``out[i][j][index[i][j]]``-style positions."""
    grids = list(xp.ogrid[tuple(slice(size) for size in index_array.shape)])
    grids[axis] = index_array
    return tuple(grids)


_NO_SOURCE = object()  # gather: no src to check the index against


def _check_index(op_name: str, tensor, axis: int, index, src=_NO_SOURCE) -> None:
    """torch's checks of a gather or scatter index, in its words. A scatter passes its
    ``src`` (a Tensor or a number): the index must be no larger than a src tensor in every
    dimension (a larger src is fine: its leading part is used)."""
    if index._array.dtype.kind not in "iu":
        raise DTypeError(f"{op_name}(): Expected dtype int64 for index, got "
                         f"{index.dtype.name}")
    if index._array.ndim != tensor._array.ndim:
        raise ShapeError(
            f"{op_name}(): Index tensor must have the same number of dimensions as input "
            f"tensor ({index._describe()} vs {tensor._describe()})")
    index_shape, shape = index._array.shape, tensor._array.shape
    if src is _NO_SOURCE:
        for d in range(len(shape)):
            if d != axis and index_shape[d] > shape[d]:
                raise ShapeError(
                    f"Size does not match at dimension {d} expected index "
                    f"{list(index_shape)} to be no larger than self {list(shape)} apart from "
                    f"dimension {axis} ({op_name})")
    else:
        src_shape = src._array.shape if isinstance(src, Tensor) else None
        if any(d != axis and index_shape[d] > shape[d] for d in range(len(shape))) or (
                src_shape is not None and len(src_shape) == len(index_shape)
                and any(size > limit for size, limit in zip(index_shape, src_shape))):
            against_src = "" if src_shape is None else \
                f" and to be no larger size than src {list(src_shape)}"
            raise ShapeError(
                f"Expected index {list(index_shape)} to be no larger than self {list(shape)} "
                f"apart from dimension {axis}{against_src} ({op_name})")
    if index._array.size:
        limit = tensor._array.shape[axis]
        low, high = int(index._array.min()), int(index._array.max())
        if low < -limit or high >= limit:
            raise IndexError(
                f"{op_name}(): index {high if high >= limit else low} is out of bounds for "
                f"dimension {axis} with size {limit}")


class Gather(Op):
    node_name = "GatherBackward0"
    array_backward = True
    # as PyTorch names them (the index a saved tensor, version-checked); dim below
    saved_names = ("self", "index", "sparse_grad=sparse_grad")
    sparse_grad = False

    @staticmethod
    def forward(ctx, a, dim, index):
        select_edges(ctx, (0,))  # torch's edges: a (no index/mask edge)
        axis = wrap_dim(dim, a._array.ndim)
        _check_index("gather", a, axis, index)
        ctx.axis, ctx.input_shape, ctx.index = axis, a._array.shape, index._array
        ctx.save_for_backward(a, index)
        ctx.given = dim
        return a._array[_grid_index(a._xp, index._array, axis)]

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors  # noqa: B018 - the version checks (ctx.index: the index's array)
        return (scatter_into(grad, ctx.input_shape, ctx.axis, ctx.index, True), None, None)


show_saved(Gather, "dim", lambda node: as_torch_int(node.given))
Gather._node_class.sparse_grad = False  # (torch's gather(..., sparse_grad=False))


class ScatterInto(Op):
    """zeros(shape) with ``src`` placed (or added) at ``index`` along ``dim``."""

    node_name = "ScatterAddBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, src, shape, dim, index, accumulate=False):
        ctx.dim, ctx.index = dim, index
        return _scattered(src._xp, src._array, shape, dim, index, accumulate)

    @staticmethod
    def backward(ctx, grad):
        return (grad[_grid_index(_math.xp(grad), ctx.index, ctx.dim)],)


def _scattered(xp, values, shape, dim, index, accumulate):
    """zeros(shape) with the array ``values`` placed (or added) at ``index`` along ``dim``."""
    out = xp.zeros(shape, dtype=values.dtype)
    where = _grid_index(xp, index, dim)
    if accumulate:
        xp.add.at(out, where, values)
    else:
        out[where] = values
    return out


class ScatterPlaced(ScatterInto):
    """``ScatterInto`` without accumulation: torch's value-selecting backward (max(dim),
    sort, median) scatters into zeros, a ScatterBackward0 node."""

    node_name = "ScatterBackward0"


def scatter_into(grad, shape, dim: int, index, accumulate: bool):
    """zeros(shape) with ``grad`` placed (or added) at ``index`` along ``dim`` -- the backward
    of gather and of max pooling: a Tensor (recorded, ScatterAddBackward0 when added,
    ScatterBackward0 when placed, as torch's formulas) or an array."""
    if grad.__class__ is Tensor:
        op = ScatterInto if accumulate else ScatterPlaced
        return op.apply(grad, shape=shape, dim=dim, index=index, accumulate=accumulate)
    return _scattered(array_module(grad), grad, shape, dim, index, accumulate)


class Scatter(Op):
    """``out = input.clone(); out[index along dim] = src`` (src a tensor or a number)."""

    node_name = "ScatterBackward0"
    array_backward = True
    saved_names = ("index",)  # as PyTorch names it (a saved tensor, version-checked); dim below

    @staticmethod
    def forward(ctx, a, dim, index, src, reduce=None):
        select_edges(ctx, (0, 3))  # torch's edges: the input and src, never the index
        return _scatter(ctx, a, dim, index, src, reduce)

    @staticmethod
    def backward(ctx, grad):
        return _scatter_backward(ctx, grad)


class ScatterValue(Op):
    """``scatter(dim, index, value)`` with a number: ScatterBackward1, one edge."""

    node_name = "ScatterBackward1"
    array_backward = True
    saved_names = ("index",)  # as PyTorch names it (a saved tensor, version-checked); dim below

    @staticmethod
    def forward(ctx, a, dim, index, value, reduce=None):
        select_edges(ctx, (0,))
        return _scatter(ctx, a, dim, index, value, reduce)

    @staticmethod
    def backward(ctx, grad):
        return _scatter_backward(ctx, grad)


def _scatter(ctx, a, dim, index, src, reduce):
    axis = wrap_dim(dim, a._array.ndim)
    _check_index("scatter", a, axis, index, src)
    xp = a._xp
    where = _grid_index(xp, index._array, axis)
    out = a._array.copy()
    if isinstance(src, Tensor):
        part = src._array[tuple(slice(size) for size in index._array.shape)]
    else:
        part = src
    if reduce == "add":
        xp.add.at(out, where, part)
    elif reduce in ("multiply", "mul"):
        xp.multiply.at(out, where, part)
    elif reduce is None:
        out[where] = part
    else:
        raise ValueError(f"scatter(): reduce must be 'add' or 'multiply', got {reduce!r}")
    ctx.axis, ctx.index = axis, index._array
    ctx.src_shape = src._array.shape if isinstance(src, Tensor) else None
    ctx.save_for_backward(index)  # (torch's node keeps it: an in-place change is refused)
    ctx.given = dim  # as written: grad_fn._saved_dim shows it
    return out


def _scatter_backward(ctx, grad):
    ctx.saved_tensors  # noqa: B018 - the index's version check (ctx.index: its array)
    needs = ctx.needs_input_grad
    where = _grid_index(_math.xp(grad), ctx.index, ctx.axis)
    grad_input = grad_src = None
    if needs[0]:
        grad_input = _math.apply(IndexPut, grad, _zero_like(grad), index=where)
    if len(needs) > 3 and needs[3]:
        picked = _math.apply(Index, grad, where)
        pad = tuple((0, full - part) for full, part in zip(ctx.src_shape, picked.shape))
        grad_src = picked if not any(p for _, p in pad) else _pad(picked, ctx.src_shape)
    return grad_input, None, None, grad_src


for _op in (Scatter, ScatterValue):
    show_saved(_op, "dim", lambda node: as_torch_int(node.given))


def _pad(tensor, shape):
    return _math.apply(IndexAccumulate, tensor, shape=shape,
                       index=tuple(slice(size) for size in tensor.shape))


class ScatterAdd(Op):
    node_name = "ScatterAddBackward0"
    array_backward = True
    saved_names = ("index",)  # as PyTorch names it (a saved tensor, version-checked); dim below

    @staticmethod
    @silenced
    def forward(ctx, a, dim, index, src):
        select_edges(ctx, (0, 3))  # torch's edges: a, src (no index/mask edge)
        axis = wrap_dim(dim, a._array.ndim)
        _check_index("scatter_add", a, axis, index, src)
        xp = a._xp
        where = _grid_index(xp, index._array, axis)
        out = a._array.copy()
        xp.add.at(out, where, src._array[tuple(slice(size) for size in index._array.shape)])
        ctx.where, ctx.src_shape = where, src._array.shape
        ctx.save_for_backward(index)  # (torch's node keeps it: an in-place change is refused)
        ctx.given = dim  # as written: grad_fn._saved_dim shows it
        return out

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors  # noqa: B018 - the index's version check (ctx.where: its array)
        needs = ctx.needs_input_grad
        grad_src = None
        if needs[3]:
            grad_src = _math.apply(Index, grad, ctx.where)
            if grad_src.shape != ctx.src_shape:
                grad_src = _pad(grad_src, ctx.src_shape)
        return (grad if needs[0] else None), None, None, grad_src


# -- masks ------------------------------------------------------------------------------
show_saved(ScatterAdd, "dim", lambda node: as_torch_int(node.given))


class MaskedFill(Op):
    node_name = "MaskedFillBackward0"
    array_backward = True
    saved_names = ("mask",)  # a saved tensor, version-checked, as torch's

    @staticmethod
    def forward(ctx, a, mask, value):
        select_edges(ctx, (0,))  # torch's edges: the input (a number value, never the mask)
        return _masked_fill(ctx, a, mask, value)

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors  # noqa: B018 - the mask's version check (ctx.mask: its array)
        return (_math.where(_math.constant(grad, ctx.mask), 0.0, grad), None, None)


class MaskedFillTensor(Op):
    """``masked_fill(mask, value)`` with a 0-d tensor value, which gets the sum of the
    gradient where mask is True (MaskedFillBackward1 in torch)."""

    node_name = "MaskedFillBackward1"
    array_backward = True
    saved_names = ("mask",)  # a saved tensor, version-checked, as torch's

    @staticmethod
    def forward(ctx, a, mask, value):
        select_edges(ctx, (0, 2))  # torch's edges: the input and the value, not the mask
        if value._array.ndim:
            raise ShapeError(
                f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor "
                f"with {value._array.ndim} dimension(s). ({value._describe()})")
        return _masked_fill(ctx, a, mask, value)

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        ctx.saved_tensors  # noqa: B018 - the mask's version check
        mask = _math.constant(grad, ctx.mask)
        grad_value = _math.where(mask, grad, 0.0).sum() if needs[2] else None
        return (_math.where(mask, 0.0, grad) if needs[0] else None), None, grad_value


def _masked_fill(ctx, a, mask, value):
    if mask._array.dtype.kind != "b":
        raise DTypeError(f"masked_fill_ only supports boolean masks, but got mask with "
                         f"dtype {mask.dtype.name}")
    fill = value._array if isinstance(value, Tensor) else value
    ctx.mask = mask._array
    ctx.save_for_backward(mask)
    # (torch fills a contiguous clone of the input)
    return row_major(a._xp.where(mask._array, a._xp.asarray(fill, dtype=a._array.dtype),
                                 a._array))


def _wrap_bool(array):
    return Tensor._wrap(array, False)


class Where(Op):
    node_name = "WhereBackward0"
    array_backward = True
    saved_names = ("condition",)  # torch saves the condition (a SavedVariable) only

    @staticmethod
    def forward(ctx, condition, a, b):
        select_edges(ctx, (1, 2))  # torch's edges: a, b (no index/mask edge)
        x, y = operands(a, b) if isinstance(a, Tensor) or isinstance(b, Tensor) else (a, b)
        cond = condition._array
        if cond.dtype.kind != "b":
            raise DTypeError(f"where expected condition to be a boolean tensor, but got a "
                             f"tensor with dtype {condition.dtype.name}")
        ctx.save_for_backward(condition)
        ctx.shapes = (getattr(a, "shape", ()), getattr(b, "shape", ()))
        xp = condition._xp
        return iterator_layout(xp.where(cond, x, y), cond, x, y)

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        (condition,) = ctx.saved_tensors  # version-checked, as torch checks it
        grad_a = _math.sum_to(_math.where(condition, grad, 0.0), ctx.shapes[0]) \
            if needs[1] else None
        grad_b = _math.sum_to(_math.where(condition, 0.0, grad), ctx.shapes[1]) \
            if needs[2] else None
        return None, grad_a, grad_b
