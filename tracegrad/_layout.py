"""The memory layout (strides) of an op's result, as PyTorch allocates it.

A result's layout is visible: ``stride()``, ``is_contiguous()``, whether ``view`` works, and
the node a later ``reshape`` records (ViewBackward0, ReshapeAliasBackward0, or a clone and
UnsafeViewBackward0) all follow from it. NumPy and PyTorch agree while every operand is
row-major, which is the common case; they part where an operand is permuted or strided:

* ops PyTorch builds on its TensorIterator (elementwise ops, ``where``, ``lerp``, ``clone``
  keeping the format, ...) give the result the layout of their operands, the first operand
  deciding where two disagree (``iterator_layout``); NumPy prefers row-major when its
  operands disagree;
* ops PyTorch writes into a fresh ``empty(sizes)`` (scans, softmax, layer_norm, cat,
  reductions, ...) give a row-major result whatever the input (``row_major``); NumPy's
  ufunc-built versions of them keep the input's layout instead.
"""

from __future__ import annotations

import functools

from .backends import array_module


def row_major(result):
    """``result``, copied to row-major (C) order if it is not in it: the layout of an op
    PyTorch allocates with ``empty(sizes)``. 0-d arrays and scalars pass through. A size-1
    dimension gets torch's stride for it (the product of the sizes after it), which NumPy
    leaves to chance: a view, no copy, as no element is addressed through it."""
    flags = getattr(result, "flags", None)
    if flags is None:
        return result
    if not flags.c_contiguous:
        return result.copy(order="C")
    shape = result.shape
    if 1 in shape and result.size:
        strides, step = [], result.itemsize
        for size in reversed(shape):
            strides.append(step)
            step *= size
        strides.reverse()
        if tuple(strides) != result.strides:
            return array_module(result).lib.stride_tricks.as_strided(result, shape, strides)
    return result


def column_major(result):
    """``result`` (2 or more dims) with each matrix column-major, batches outermost: the
    layout of the factors and solutions PyTorch's LAPACK-backed ops return (inv, solve,
    cholesky, qr, svd, eigh, lstsq), strides ``(..., 1, rows)``."""
    if getattr(result, "ndim", 0) < 2:
        return result
    flipped = result.swapaxes(-1, -2)
    return flipped.copy(order="C").swapaxes(-1, -2) if not flipped.flags.c_contiguous \
        else result


def iterator_layout(result, *operands):
    """``result``, copied to the layout PyTorch's TensorIterator gives an op's output when
    ``operands`` (arrays broadcastable to ``result``'s shape, or numbers) are its inputs in
    order; ``result`` itself when its strides are already those.

    Cheap in the common case: row-major operands give a row-major result -- always when
    they all have the result's shape (TensorIterator's fast set-up), and otherwise too
    when none has a size-1 dim (only a size-1 dim's stride could reorder torch's result,
    where a number or broadcasting turns the fast set-up off)."""
    for operand in operands:  # the common case first, in a few reads (a training step's)
        if getattr(operand, "ndim", 0) and (not operand.flags.c_contiguous
                                            or 1 in operand.shape):
            break
    else:
        if result.flags.c_contiguous and 1 not in result.shape:
            return result
    arrays = [op for op in operands if getattr(op, "ndim", 0)]
    shape = result.shape
    same_shape = len(arrays) == len(operands) and all(array.shape == shape for array in arrays)
    if all(array.flags.c_contiguous and (same_shape or 1 not in array.shape)
           for array in arrays):
        return row_major(result)
    return _laid_out(result, _iterator_strides(shape, result.itemsize, arrays, same_shape))


def index_layout(result, source, index):
    """``result = source[index]`` (advanced indexing: ``index`` a tuple of ``slice(None)``
    and integer or boolean arrays, as ops.indexing.Index gets it), laid out as torch's index
    kernel lays it out: a TensorIterator over ``source`` restrided (each indexed dim
    replaced by the index's dims, stride 0; non-adjacent indexed dims first) and the index
    arrays. NumPy instead puts the index's dims first in memory (``x[:, [0, 2]]`` comes
    out column-major)."""
    if result.ndim <= 1 or not result.size or (source.flags.c_contiguous and
                                                 result.flags.c_contiguous):
        return row_major(result)
    positions, arrays, position = [], [], 0
    for item in index:
        if isinstance(item, slice):
            position += 1
        elif item.dtype == bool:  # a mask: one index array per dim it covers (nonzero)
            for offset, picks in enumerate(item.nonzero()):
                positions.append(position + offset)
                arrays.append(picks)
            position += item.ndim
        else:
            positions.append(position)
            arrays.append(item)
            position += 1
    xp = array_module(result)
    arrays = xp.broadcast_arrays(*arrays)
    index_shape = arrays[0].shape
    shape = list(source.shape)
    strides = [step // source.itemsize for step in source.strides]
    if positions != list(range(positions[0], positions[0] + len(positions))):
        order = positions + [dim for dim in range(len(shape)) if dim not in positions]
        shape, strides = [shape[dim] for dim in order], [strides[dim] for dim in order]
        positions = list(range(len(positions)))
    before, after = positions[0], positions[-1] + 1
    out_shape = tuple(shape[:before]) + index_shape + tuple(shape[after:])
    if out_shape != result.shape:  # (a form this reading does not cover: keep NumPy's)
        return result
    lead, tail = [0] * before, [0] * (len(shape) - after)
    operands = [_Strides(out_shape, strides[:before] + [0] * len(index_shape) + strides[after:])]
    operands += [_Strides(out_shape, lead + [step // array.itemsize for step in array.strides]
                          + tail) for array in arrays]
    return _laid_out(result, _iterator_strides(out_shape, result.itemsize, operands, False))


class _Strides:
    """An operand's shape and strides in elements, all ``_iterator_strides`` reads."""

    __slots__ = ("shape", "strides")
    itemsize = 1

    def __init__(self, shape, strides):
        self.shape, self.strides = tuple(shape), tuple(strides)


def iterates(forward):
    """Decorates the forward of an op torch builds on its TensorIterator (binary and
    ternary elementwise ops): its array result, of 2 or more dims, laid out by
    ``iterator_layout`` over the op's tensor and number arguments in order."""
    @functools.wraps(forward)
    def laid_out(ctx, *args, **kwargs):
        result = forward(ctx, *args, **kwargs)
        if getattr(result, "ndim", 0) < 2:
            return result
        return iterator_layout(result, *(arg._array if hasattr(arg, "_array") else arg
                                         for arg in args
                                         if hasattr(arg, "_array") or isinstance(arg, float)
                                         or isinstance(arg, int)))

    return laid_out


def obeys_layout_contract(grad, variable) -> bool:
    """torch's "gradient layout contract" for a leaf's first ``.grad``: a variable that is
    non-overlapping and dense wants its gradient strided as itself (dims of size 1 aside,
    whose stride must only not be 0); any other variable a row-major gradient."""
    if variable.flags.c_contiguous and grad.flags.c_contiguous and 1 not in variable.shape:
        return True  # (the common case, in two reads)
    if not _non_overlapping_and_dense(variable):
        return bool(grad.flags.c_contiguous)
    for size, mine, wanted in zip(grad.shape, grad.strides, variable.strides):
        if size != 1 and mine // grad.itemsize != wanted // variable.itemsize or \
                size == 1 and mine == 0:
            return False
    return True


def laid_out_as_variable(grad, variable):
    """A copy of ``grad`` that obeys the contract (torch's clone_obey_contract): strided as
    ``variable`` when it is non-overlapping and dense, else row-major."""
    if not _non_overlapping_and_dense(variable):
        return grad.copy(order="C")
    out = _empty_strided(grad, tuple(step // variable.itemsize * grad.itemsize
                                     for step in variable.strides))
    out[...] = grad
    return out


def preserved(result, source):
    """``result`` (of ``source``'s shape), laid out as PyTorch lays out a copy of ``source``
    that keeps its format (``clone()``, ``empty_like``, ``sort``): ``source``'s own strides
    when it is non-overlapping and dense, else dense strides in the order of its strides
    (``infer_dense_strides``)."""
    if source.flags.c_contiguous:
        return row_major(result)
    return _laid_out(result, _iterator_strides(source.shape, result.itemsize, [source], True))


def _laid_out(result, strides):
    """``result`` with these byte strides (None: row-major), copied only if it differs."""
    if strides is None:
        return row_major(result)
    if strides == result.strides:
        return result
    out = _empty_strided(result, strides)
    out[...] = result
    return out


def _iterator_strides(shape, itemsize, arrays, same_shape):
    """Byte strides (for items of ``itemsize``) of an output of ``shape`` laid out as
    TensorIterator lays it out for the input ``arrays`` (``same_shape``: all of them, and
    nothing else, of the output's shape); None for a row-major result."""
    ndim = len(shape)
    if ndim <= 1:
        return None
    # The operands' strides in elements, broadcast to the output's shape: a broadcast
    # dimension has stride 0; a size-1 dimension of the output keeps the operand's own.
    strides = []
    for array in arrays:
        own = array.strides
        lead = ndim - len(own)
        row = [0] * lead
        for axis, (size, step) in enumerate(zip(array.shape, own)):
            row.append(0 if size == 1 and shape[lead + axis] != 1 else step // array.itemsize)
        strides.append(row)
    if same_shape and _same_dense_layout(arrays, strides):
        # TensorIterator's fast set-up: the output takes the inputs' strides as they are
        return tuple(step * itemsize for step in strides[0])
    # Insertion sort of the dimensions, fastest-moving first (reorder_dimensions): the
    # first operand whose strides tell two dimensions apart decides; between equal strides
    # the smaller dimension goes first.
    perm = list(range(ndim - 1, -1, -1))

    def should_swap(dim0, dim1):
        for row in strides:
            stride0, stride1 = row[dim0], row[dim1]
            if stride0 == 0 or stride1 == 0:
                continue
            if stride0 < stride1:
                return -1
            if stride0 > stride1:
                return 1
            if shape[dim0] > shape[dim1]:
                return 1
        return 0

    for i in range(1, ndim):
        dim1 = i
        for dim0 in range(i - 1, -1, -1):
            comparison = should_swap(perm[dim0], perm[dim1])
            if comparison > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif comparison < 0:
                break
    if perm == list(range(ndim - 1, -1, -1)):
        return None
    out = [0] * ndim
    step = itemsize
    for dim in perm:
        out[dim] = step
        step *= shape[dim]
    return tuple(out)


def _same_dense_layout(arrays, strides):
    """Inputs all non-overlapping and dense with identical strides in elements
    (TensorIterator's fast set-up, which gives the output those)."""
    return _non_overlapping_and_dense(arrays[0]) and \
        all(row == strides[0] for row in strides[1:])


def _non_overlapping_and_dense(array):
    """PyTorch's ``is_non_overlapping_and_dense``: some order of the dimensions makes the
    array one dense block (size-1 dimensions ignored)."""
    if array.flags.c_contiguous or array.flags.f_contiguous:
        return True
    dims = sorted((step, size) for size, step in zip(array.shape, array.strides) if size != 1)
    expected = array.itemsize
    for step, size in dims:
        if step != expected:
            return False
        expected *= size
    return True


def _empty_strided(like, strides):
    """An uninitialized array shaped and typed as ``like`` with the dense byte ``strides``
    given (a size-1 dimension's stride included, which a transposed row-major block could
    not always give)."""
    xp = array_module(like)
    flat = xp.empty(like.size, dtype=like.dtype)
    return xp.lib.stride_tricks.as_strided(flat, like.shape, strides)
