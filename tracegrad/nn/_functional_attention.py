"""Attention: ``scaled_dot_product_attention`` and ``multi_head_attention_forward`` (what
``nn.MultiheadAttention`` runs), written as the reference math of torch's Python code, so
the graph is a chain of tensor ops a trace can show step by step.

>>> import tracegrad as torch
>>> import tracegrad.nn.functional as F
>>> q = torch.ones(1, 2, 4)
>>> F.scaled_dot_product_attention(q, q, q).shape
tracegrad.Size([1, 2, 4])
"""

from __future__ import annotations

import math

import numpy as np

from .. import backends, factories
from ..errors import ShapeError
from ..ops.arith import MulScalar
from ..ops.attention import ScaledDotProductFlashAttentionForCpu
from ..ops.unary import SafeSoftmax
from ..tensor import Tensor
from ._functional_activation import softmax
from ._functional_norm import dropout
from ._ops import linear


def _float_mask(mask: Tensor | None, name: str, dtype) -> Tensor | None:
    """A boolean mask (True = masked out) as an additive float mask: -inf where True."""
    if mask is None:
        return None
    if mask.dtype.name == "bool":
        return factories.zeros(tuple(mask.shape), dtype=dtype, device=mask.device).masked_fill(
            mask, float("-inf"))
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(q @ k.T * scale + mask) @ v``. A boolean ``attn_mask`` marks the pairs that
    may attend (True), a float one is added; ``is_causal`` masks the future.

    As torch on the CPU: one fused node (ScaledDotProductFlashAttentionForCpuBackward0)
    where its flash kernel applies, else torch's math path op by op (the query and the
    keys each scaled by the square root of the scale, the mask added in place, a safe
    softmax whose fully masked rows give zeros, dropout)."""
    if enable_gqa:
        raise NotImplementedError("tracegrad does not implement "
                                  "scaled_dot_product_attention(enable_gqa=True)")
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not "
                           "be set when is_causal=True")
    mask = None if attn_mask is None else _additive_mask(attn_mask, query.dtype)
    if _flash_applies(query, key, value, mask, dropout_p):
        return ScaledDotProductFlashAttentionForCpu.apply(query, key, value, mask, is_causal,
                                                          scale)
    root = math.sqrt(1 / math.sqrt(query.shape[-1]) if scale is None else scale)
    scores = MulScalar.apply(query, root).matmul(MulScalar.apply(key.transpose(-2, -1), root))
    if is_causal:
        mask = _additive_mask(~_upper(query.shape[-2], key.shape[-2], query), query.dtype)
    if mask is not None:
        scores.add_(mask)
    weights = SafeSoftmax.apply(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    return weights.matmul(value)


def _additive_mask(mask: Tensor, dtype) -> Tensor:
    """An attention mask as the scores take it: a boolean one (True = may attend) as 0 and
    -inf, as torch converts it; a float one as it is."""
    if mask.dtype.name != "bool":
        return mask
    return factories.zeros(tuple(mask.shape), dtype=dtype, device=mask.device).masked_fill(
        ~mask, float("-inf"))


def _flash_applies(query, key, value, mask, dropout_p) -> bool:
    """Whether torch's CPU dispatch picks its flash kernel (sdp_utils_cpp.cpp): 4-d inputs
    of one head size, batch and heads alike, the last dim dense, no dropout, a mask of 2
    or 4 dims that needs no gradient, and something that needs a gradient at all (else
    there is no node to record)."""
    if dropout_p > 0.0 or query.ndim != 4 or key.ndim != 4 or value.ndim != 4:
        return False
    if not (query.requires_grad or key.requires_grad or value.requires_grad):
        return False
    if not query.shape[-1] == key.shape[-1] == value.shape[-1]:
        return False
    if not query.shape[:2] == key.shape[:2] == value.shape[:2]:
        return False
    if 0 in (query.shape[-2], key.shape[-2]):
        return False
    if any(tensor.stride(-1) != 1 for tensor in (query, key, value)):
        return False
    return mask is None or (mask.ndim in (2, 4) and not mask.requires_grad)


def _upper(rows: int, cols: int, like: Tensor) -> Tensor:
    """True above the diagonal: the future positions a causal mask hides."""
    mask = np.triu(np.ones((rows, cols), dtype=bool), 1)
    return Tensor._wrap(backends.to_device(mask, like.device), False)


def _in_projection(query, key, value, weight, bias, embed_dim):
    """torch's _in_projection_packed: one linear for self-attention (and one for key and
    value together when they are one tensor), split as torch splits it so the graph is its
    own: unflatten to (n, E), move n to the front, a contiguous copy, then [0], [1], ..."""
    if key is value:
        if query is key:
            return _split_heads(linear(query, weight, bias), 3, embed_dim)
        weight_q, weight_kv = weight.split([embed_dim, embed_dim * 2])
        bias_q, bias_kv = (None, None) if bias is None else \
            bias.split([embed_dim, embed_dim * 2])
        return (linear(query, weight_q, bias_q),
                *_split_heads(linear(key, weight_kv, bias_kv), 2, embed_dim))
    weights = weight.chunk(3)
    biases = (None, None, None) if bias is None else bias.chunk(3)
    return tuple(linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))


def _split_heads(projected, count, embed_dim):
    packed = projected.unflatten(-1, (count, embed_dim)).unsqueeze(0).transpose(0, -2) \
        .squeeze(-2).contiguous()
    return tuple(packed[index] for index in range(count))


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
        bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float,
        out_proj_weight: Tensor, out_proj_bias: Tensor | None, training: bool = True,
        key_padding_mask: Tensor | None = None, need_weights: bool = True,
        attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
        q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
        v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
        static_v: Tensor | None = None, average_attn_weights: bool = True,
        is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention over (L, N, E) query and (S, N, E) key/value (or unbatched
    (L, E)/(S, E)): ``(output (L, N, E), weights (N, L, S) or None)``."""
    if static_k is not None or static_v is not None:
        raise NotImplementedError("tracegrad does not implement static_k/static_v in "
                                  "multi_head_attention_forward")
    batched = query.ndim == 3
    if query.ndim not in (2, 3):
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                             f"{query.ndim}-D query tensor")
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise AssertionError(
            f"For {'batched (3-D)' if batched else 'unbatched (2-D)'} `query`, expected `key` "
            f"and `value` to be {query.ndim}-D but found {key.ndim}-D and {value.ndim}-D "
            "tensors respectively")
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    target, batch, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    dtype = query.dtype
    key_padding_mask = _float_mask(key_padding_mask, "key_padding_mask", dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # (the hint goes to scaled_dot_product_attention as is_causal)
    else:
        attn_mask = _float_mask(attn_mask, "attn_mask", dtype)
        if key_padding_mask is not None:
            is_causal = False  # (the merged mask is no longer causal)
    if use_separate_proj_weight:
        biases = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q = linear(query, q_proj_weight, biases[0])
        k = linear(key, k_proj_weight, biases[1])
        v = linear(value, v_proj_weight, biases[2])
    else:
        q, k, v = _in_projection(query, key, value, in_proj_weight, in_proj_bias, embed_dim)
    source = key.shape[0]
    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if tuple(attn_mask.shape) != (target, source):
                raise ShapeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                 f"should be {(target, source)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.ndim == 3:
            if tuple(attn_mask.shape) != (batch * num_heads, target, source):
                raise ShapeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                                 f"should be {(batch * num_heads, target, source)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")
    if bias_k is not None and bias_v is not None:
        from ..ops.shape import Cat
        from ._functional_conv import pad

        k = Cat.apply(k, bias_k.repeat(1, batch, 1), dim=0)
        v = Cat.apply(v, bias_v.repeat(1, batch, 1), dim=0)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    q = q.view(target, batch * num_heads, head_dim).transpose(0, 1)
    k = k.view(k.shape[0], batch * num_heads, head_dim).transpose(0, 1)
    v = v.view(v.shape[0], batch * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:
        from ..ops.shape import Cat
        from ._functional_conv import pad

        zeros = factories.zeros(batch * num_heads, 1, head_dim, dtype=k.dtype, device=k.device)
        k, v = Cat.apply(k, zeros, dim=1), Cat.apply(v, zeros, dim=1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    source = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (batch, source):
            raise AssertionError(f"expecting key_padding_mask shape of {(batch, source)}, but "
                                 f"got {tuple(key_padding_mask.shape)}")
        key_padding_mask = key_padding_mask.reshape(batch, 1, 1, source).expand(
            batch, num_heads, 1, source).reshape(batch * num_heads, 1, source)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0
    if not need_weights:  # torch's scaled_dot_product_attention path
        if attn_mask is not None:
            attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 and \
                attn_mask.ndim == 3 else attn_mask.view(batch, num_heads, -1, source)
        heads = scaled_dot_product_attention(
            q.view(batch, num_heads, target, head_dim), k.view(batch, num_heads, source, head_dim),
            v.view(batch, num_heads, source, head_dim), attn_mask, dropout_p, is_causal)
        output = heads.permute(2, 0, 1, 3).contiguous().view(batch * target, embed_dim)
        output = linear(output, out_proj_weight, out_proj_bias)
        output = output.view(target, batch, output.shape[1])
        return (output if batched else output.squeeze(1)), None
    scaled = q * math.sqrt(1.0 / float(head_dim))
    scores = attn_mask.baddbmm(scaled, k.transpose(-2, -1)) if attn_mask is not None else \
        scaled.bmm(k.transpose(-2, -1))
    weights = softmax(scores, dim=-1)
    if dropout_p > 0.0:
        weights = dropout(weights, p=dropout_p)
    output = weights.bmm(v).transpose(0, 1).reshape(target * batch, embed_dim)
    output = linear(output, out_proj_weight, out_proj_bias)
    output = output.view(target, batch, output.shape[1])
    weights = weights.view(batch, num_heads, target, source)
    if average_attn_weights:
        weights = weights.mean(dim=1)
    if not batched:
        return output.squeeze(1), weights.squeeze(0)
    return output, weights
