"""embedding: rows of a weight matrix picked by integer indices (EmbeddingBackward0);
embedding_bag: those rows summed, averaged or maxed per bag (EmbeddingBagBackward0).

The indices are an attribute of the node, not an input: like torch, the node's only edge
is the weight. Backward adds each gradient row into the row it came from
(``index_accumulate``: beside Tensors an IndexAccumulate node, whose backward is the lookup
again; beside arrays one array write).
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Op
from ..autograd.quiet import silenced
from ..errors import DTypeError
from . import _math
from ._edges import select_edges
from ._saved import as_torch_int, show_saved
from .indexing import index_accumulate


class Embedding(Op):
    node_name = "EmbeddingBackward0"
    array_backward = True
    saved_names = ("indices", "scale_grad_by_freq=scale_grad_by_freq",
                   "weight_sym_argsize_0=rows")  # as PyTorch names them

    @staticmethod
    def forward(ctx, weight, indices, padding_idx=-1, scale_grad_by_freq=False):
        rows = indices._array
        if rows.dtype.kind not in "iu":
            raise DTypeError(
                f"Expected tensor for argument #1 'indices' to have one of the following scalar "
                f"types: Long, Int; but got {indices._describe()} instead (while checking "
                "arguments for embedding). Hint: convert the indices with .long().")
        count = weight._array.shape[0]
        if rows.size and (int(rows.min()) < -count or int(rows.max()) >= count):
            raise IndexError(
                f"index out of range in self: embedding has {count} rows (weight "
                f"{weight._describe()}), indices run from {int(rows.min())} to "
                f"{int(rows.max())}. Hint: num_embeddings must exceed the largest index.")
        if ctx.needs_input_grad:
            ctx.save_for_backward(indices)  # torch's node keeps them (traces show it)
        ctx.indices, ctx.rows = rows, count
        ctx.padding_idx, ctx.scale_grad_by_freq = padding_idx, scale_grad_by_freq
        return weight._array[rows]

    @staticmethod
    def backward(ctx, grad):
        xp = _math.xp(grad)
        flat = ctx.indices.reshape(-1) % ctx.rows
        width = grad.shape[-1]
        rows = grad.reshape(-1, width)
        if ctx.padding_idx is not None and ctx.padding_idx >= 0:
            rows = rows * _math.constant(rows, (flat != ctx.padding_idx)[:, None])
        if ctx.scale_grad_by_freq:
            counts = xp.bincount(flat, minlength=ctx.rows)[flat].astype(_math.numpy_dtype(rows))
            rows = rows / _math.constant(rows, counts[:, None])
        return (index_accumulate(rows, (ctx.rows, width), flat),)


def _saved_padding_idx(node) -> int:
    """torch keeps "no padding row" as -1, which its node shows as 2**64 - 1."""
    padding_idx = node.padding_idx
    return as_torch_int(-1 if padding_idx is None else padding_idx)


show_saved(Embedding, "padding_idx", _saved_padding_idx)
# embedding(sparse=True) is refused before the op runs, so a node's is always False
show_saved(Embedding, "sparse", lambda node: False)



_BAG_MODES = {"sum": 0, "mean": 1, "max": 2}  # torch's mode enum, as its node shows it


class EmbeddingBag(Op):
    """``embedding_bag``: rows of ``weight`` picked by ``indices`` and reduced per bag (sum,
    mean or max); bag ``b`` holds the entries from ``offsets[b]`` to the next offset (the
    last bag to the end of ``indices``). Entries equal to ``padding_idx`` are left out; an
    empty bag gives zeros. Edges: the weight and the per-sample weights, as torch's."""

    node_name = "EmbeddingBagBackward0"
    array_backward = True
    # as torch names them; torch's result1..3 (offset2bag, bag_size, max_indices) are its
    # CPU kernel's scratch, left empty on its fast paths: not shown
    saved_names = ("indices", "offsets", "per_sample_weights", "weight", "mode=mode",
                   "scale_grad_by_freq=scale_grad_by_freq", "weight_sym_argsize_0=rows")

    @staticmethod
    @silenced
    def forward(ctx, weight, per_sample_weights, indices, offsets, mode="mean",
                scale_grad_by_freq=False, include_last_offset=False, padding_idx=None):
        xp = weight._xp
        ctx.rows, width = weight._array.shape
        entries = indices._array
        starts = offsets._array[:-1] if include_last_offset else offsets._array
        bags = len(starts)
        bag = xp.searchsorted(starts, xp.arange(len(entries)), side="right") - 1
        kept = xp.ones(len(entries), dtype=bool) if padding_idx is None else \
            entries != padding_idx
        select_edges(ctx, (0, 1))  # torch's edges: the weight and the per-sample weights
        if ctx.needs_input_grad:
            # the weight only where the per-sample weights' gradient reads it, as torch
            ctx.save_for_backward(indices, offsets, per_sample_weights,
                                  None if per_sample_weights is None else weight)
        ctx.mode, ctx.entries, ctx.bag = _BAG_MODES[mode], entries, bag
        ctx.padding_idx, ctx.scale_grad_by_freq = padding_idx, scale_grad_by_freq
        picked = weight._array[entries]
        if mode == "max":
            values, ctx.max_entry = _bag_max(xp, picked, bag, kept, bags)
            return values
        factor = kept.astype(picked.dtype)  # each entry's share of its bag's value
        if mode == "mean":
            factor = factor / xp.maximum(xp.bincount(bag[kept], minlength=bags), 1)[bag]
        ctx.factor = factor
        if per_sample_weights is not None:
            picked = picked * per_sample_weights._array[:, None]
        out = xp.zeros((bags, width), dtype=picked.dtype)
        # padding entries are skipped, not multiplied by 0: an inf in their row stays out
        xp.add.at(out, bag[kept], picked[kept] * factor[kept, None])
        return out

    @staticmethod
    def backward(ctx, grad):
        _, _, per_sample_weights, weight = ctx.saved_tensors
        width = grad.shape[-1]
        if ctx.mode == 2:  # max: each (bag, feature) back to the row its maximum came from
            found = ctx.max_entry >= 0
            features = _math.xp(found).nonzero(found)[1]
            flat = ctx.entries[ctx.max_entry[found]] * width + features
            spread = index_accumulate(grad[found], (ctx.rows * width,), flat)
            return spread.reshape(ctx.rows, width), None
        spread = grad[ctx.bag]  # each entry's bag's gradient
        factor = ctx.factor
        if ctx.scale_grad_by_freq:
            factor = factor / _bag_frequencies(_math.xp(factor), ctx.entries, ctx.rows)
        grad_samples = None
        if per_sample_weights is not None:
            grad_samples = (spread * weight[ctx.entries]).sum(-1) * _math.constant(
                spread, ctx.factor)
            spread = spread * per_sample_weights[:, None]
        scaled = spread * _math.constant(spread, factor[:, None])
        return index_accumulate(scaled, (ctx.rows, width), ctx.entries), grad_samples


def _bag_frequencies(xp, entries, rows: int):
    """What each entry's gradient is divided by under ``scale_grad_by_freq``, as torch
    2.13's CPU kernel computes it: for the g-th distinct index (in sorted order) it reads the
    count of the g-th *smallest entry*, not of that index -- the same until an index repeats
    (entries [1, 2, 2, 3, 3, 3] divide 3's gradients by 2, the count of the third smallest,
    2). A silent difference from torch being worse than its quirk, the quirk is kept."""
    counts = xp.bincount(entries, minlength=rows)
    group = xp.unique(entries, return_inverse=True)[1].reshape(-1)
    return counts[xp.sort(entries)[group]]


def _bag_max(xp, picked, bag, kept, bags: int):
    """Each bag's maximum per feature (0 in an empty bag), and the entry it came from (-1
    in an empty bag): the first maximal entry, as torch's kernel keeps (a later one
    replaces it only if larger)."""
    count, width = picked.shape
    in_bag, values, positions = bag[kept], picked[kept], xp.nonzero(kept)[0]
    top = xp.full((bags, width), -xp.inf, dtype=picked.dtype)
    xp.maximum.at(top, in_bag, values)
    first = xp.full((bags, width), count, dtype=np.int64)
    xp.minimum.at(first, in_bag, xp.where(values == top[in_bag], positions[:, None], count))
    empty = first == count
    return xp.where(empty, picked.dtype.type(0), top), xp.where(empty, -1, first)


show_saved(EmbeddingBag, "padding_idx", _saved_padding_idx)
show_saved(EmbeddingBag, "sparse", lambda node: False)  # refused before the op, as above
