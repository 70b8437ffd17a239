"""embedding: rows of a weight matrix picked by integer indices (EmbeddingBackward0).

The indices are an attribute of the node, not an input: like torch, the node's only edge
is the weight. Backward adds each gradient row into the row it came from
(``index_accumulate``: beside Tensors an IndexAccumulate node, whose backward is the lookup
again; beside arrays one array write).
"""

from __future__ import annotations

from ..autograd.function import Op
from ..errors import DTypeError
from . import _math
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
