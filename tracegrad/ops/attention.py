"""``scaled_dot_product_attention``'s fused CPU kernel, as torch records it.

On the CPU torch computes attention in one op (``_scaled_dot_product_flash_attention_for_cpu``,
ScaledDotProductFlashAttentionForCpuBackward0) whenever its flash kernel can: 4-d query, key
and value of one head size with their batch and heads alike, no dropout, a mask of 2 or 4
dims that needs no gradient (nn/_functional_attention.py decides). The node keeps what
torch's keeps -- query, key, value, the output, each row's logsumexp, the additive mask,
dropout_p, is_causal and scale -- and its backward recomputes the probabilities from the
logsumexp, as the kernel does. torch defines no derivative of that backward: a second
derivative raises its error.
"""

from __future__ import annotations

import math

from .._layout import preserved
from ..autograd.function import Op
from ..autograd.quiet import silenced
from ..backends import array_module
from ..tensor import Tensor
from ._edges import select_edges
from .binary import _NotDifferentiable


class ScaledDotProductFlashAttentionForCpu(Op):
    node_name = "ScaledDotProductFlashAttentionForCpuBackward0"
    array_backward = True
    saves_output = True
    # grad_fn._saved_<name>, as PyTorch names them (the output last: saves_output)
    saved_names = ("query", "key", "value", "logsumexp", "attn_mask", "output",
                   "dropout_p=dropout_p", "is_causal=is_causal", "scale=given_scale")

    @staticmethod
    @silenced
    def forward(ctx, query, key, value, attn_mask=None, is_causal=False, scale=None):
        select_edges(ctx, (0, 1, 2))  # torch's edges: query, key, value (not the mask)
        q, k, v = query._array, key._array, value._array
        xp = query._xp
        ctx.dropout_p, ctx.is_causal, ctx.given_scale = 0.0, bool(is_causal), scale
        ctx.factor = factor = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
        ctx.mask = None if attn_mask is None else attn_mask._array
        scores = _scores(xp, q, k, factor, ctx.mask, ctx.is_causal)
        peak = scores.max(axis=-1, keepdims=True)
        peak = xp.where(xp.isfinite(peak), peak, 0)
        total = xp.exp(scores - peak).sum(axis=-1, keepdims=True)
        logsumexp = xp.log(total) + peak  # -inf for a row with nothing to attend to
        probabilities = _probabilities(xp, scores, logsumexp)
        output = preserved(probabilities @ v, q)  # (the kernel writes in the query's layout)
        ctx.logsumexp = logsumexp
        ctx.save_for_backward(query, key, value, Tensor._wrap(logsumexp[..., 0], False),
                              attn_mask)
        return output

    @staticmethod
    def backward(ctx, grad):
        query, key, value, _, _, output = ctx.saved_tensors
        if grad.__class__ is Tensor:  # create_graph: computed, with no derivative of its own
            return FlashAttentionBackward.apply(grad, query, key, value, output, ctx) + \
                (None, None, None)
        return _gradients(grad, query, key, value, output, ctx) + (None, None, None)


class FlashAttentionBackward(_NotDifferentiable):
    """The fused backward under create_graph: the gradients, on a node whose own backward
    raises torch's error (torch defines no derivative of the kernel's backward)."""

    _aten_name = "_scaled_dot_product_flash_attention_for_cpu_backward"
    array_backward = True  # (its backward only refuses, on any kind of value)

    @staticmethod
    def forward(ctx, grad, query, key, value, output, forward_ctx):
        return _gradients(grad._array, query._array, key._array, value._array, output._array,
                          forward_ctx)

    @staticmethod
    def backward(ctx, *grads):  # (three outputs: the one refusal)
        return _NotDifferentiable.backward(ctx, grads[0])


def _gradients(grad, q, k, v, out, ctx):
    """(grad query, grad key, grad value) of the attention ``out`` for ``grad`` (arrays),
    the probabilities recomputed from the saved logsumexp, as the kernel does."""
    xp = array_module(q)
    factor = ctx.factor
    probabilities = _probabilities(
        xp, _scores(xp, q, k, factor, ctx.mask, ctx.is_causal), ctx.logsumexp)
    grad_value = xp.swapaxes(probabilities, -1, -2) @ grad
    grad_probabilities = grad @ xp.swapaxes(v, -1, -2)
    inner = (grad * out).sum(axis=-1, keepdims=True)
    grad_scores = probabilities * (grad_probabilities - inner)
    grad_query = (grad_scores @ k) * factor
    grad_key = (xp.swapaxes(grad_scores, -1, -2) @ q) * factor
    return grad_query, grad_key, grad_value


def _scores(xp, q, k, factor, mask, is_causal):
    """``q @ k.T * scale``, plus the additive mask; the future hidden for ``is_causal``
    (row i sees columns <= i: torch's top-left alignment)."""
    scores = (q @ xp.swapaxes(k, -1, -2)) * factor
    if mask is not None:
        scores = scores + mask
    if is_causal:
        rows, columns = scores.shape[-2:]
        future = xp.triu(xp.ones((rows, columns), dtype=bool), 1)
        scores = xp.where(future, -xp.inf, scores)
    return scores


def _probabilities(xp, scores, logsumexp):
    """``exp(scores - logsumexp)``, zero on a row that attends to nothing (as the kernel
    gives it, where softmax would give NaN)."""
    empty = xp.isneginf(logsumexp)
    return xp.where(empty, 0, xp.exp(scores - xp.where(empty, 0, logsumexp)))

