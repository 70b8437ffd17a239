"""``scaled_dot_product_attention`` and ``MultiheadAttention`` record torch 2.13's graph on
the CPU: one fused ScaledDotProductFlashAttentionForCpuBackward0 where torch's flash kernel
applies (4-d inputs of one head size, no dropout, a 2-d or 4-d mask), torch's math path op
by op elsewhere (SafeSoftmaxBackward0, the mask added in place); values, gradients and the
fused node's saved attributes match."""
from __future__ import annotations

import numpy as np
import pytest
from test_parity_composites import _graph

import tracegrad as tg

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")


def _tensor(lib, *shape, seed=0):
    count = int(np.prod(shape))
    values = np.sin(np.arange(count, dtype=np.float64) * 0.37 + seed).reshape(shape)
    return lib.tensor(values).requires_grad_()


def _bool_mask(lib, *shape):
    mask = np.tril(np.ones(shape[-2:], dtype=bool))
    return lib.tensor(np.broadcast_to(mask, shape).copy())


CASES = {
    "flash": lambda L: dict(query=_tensor(L, 2, 3, 5, 4), key=_tensor(L, 2, 3, 5, 4, seed=1),
                            value=_tensor(L, 2, 3, 5, 4, seed=2)),
    "flash_causal": lambda L: dict(query=_tensor(L, 2, 3, 5, 4), key=_tensor(L, 2, 3, 7, 4),
                                   value=_tensor(L, 2, 3, 7, 4, seed=2), is_causal=True),
    "flash_scale": lambda L: dict(query=_tensor(L, 1, 2, 5, 4), key=_tensor(L, 1, 2, 5, 4),
                                  value=_tensor(L, 1, 2, 5, 4), scale=0.3),
    "flash_bool_mask": lambda L: dict(query=_tensor(L, 2, 3, 5, 4), key=_tensor(L, 2, 3, 5, 4),
                                      value=_tensor(L, 2, 3, 5, 4), attn_mask=_bool_mask(L, 5, 5)),
    "flash_float_mask_4d": lambda L: dict(
        query=_tensor(L, 2, 3, 5, 4), key=_tensor(L, 2, 3, 5, 4), value=_tensor(L, 2, 3, 5, 4),
        attn_mask=_tensor(L, 2, 1, 1, 5).detach()),
    "flash_row_masked_out": lambda L: dict(
        query=_tensor(L, 1, 1, 3, 4), key=_tensor(L, 1, 1, 3, 4), value=_tensor(L, 1, 1, 3, 4),
        attn_mask=L.tensor([[True, True, False], [False, False, False], [True, True, True]])),
    "math_3d": lambda L: dict(query=_tensor(L, 2, 5, 4), key=_tensor(L, 2, 5, 4),
                              value=_tensor(L, 2, 5, 4)),
    "math_3d_causal": lambda L: dict(query=_tensor(L, 2, 5, 4), key=_tensor(L, 2, 5, 4),
                                     value=_tensor(L, 2, 5, 4), is_causal=True),
    "math_3d_mask": lambda L: dict(query=_tensor(L, 2, 5, 4), key=_tensor(L, 2, 5, 4),
                                   value=_tensor(L, 2, 5, 4), attn_mask=_bool_mask(L, 2, 5, 5)),
    "math_value_dim": lambda L: dict(query=_tensor(L, 2, 3, 5, 4), key=_tensor(L, 2, 3, 5, 4),
                                     value=_tensor(L, 2, 3, 5, 6)),
    "math_broadcast_batch": lambda L: dict(query=_tensor(L, 2, 3, 5, 4),
                                           key=_tensor(L, 1, 3, 5, 4), value=_tensor(L, 1, 3, 5, 4)),
    "math_mask_needs_grad": lambda L: dict(query=_tensor(L, 2, 3, 5, 4), key=_tensor(L, 2, 3, 5, 4),
                                           value=_tensor(L, 2, 3, 5, 4),
                                           attn_mask=_tensor(L, 5, 5)),
}


@pytest.mark.parametrize("name", CASES)
def test_sdpa_graph_values_and_gradients_as_torch(name):
    results = {}
    for lib in (torch, tg):
        arguments = CASES[name](lib)
        out = lib.nn.functional.scaled_dot_product_attention(**arguments)
        weight = lib.tensor(np.cos(np.arange(out.numel()) * 0.11).reshape(tuple(out.shape)))
        (out * weight).sum().backward()
        grads = [arguments[key].grad.numpy() for key in ("query", "key", "value")]
        results[lib] = (_graph(out), out.stride(), out.detach().numpy(), grads)
    ours, theirs = results[tg], results[torch]
    assert ours[:2] == theirs[:2]
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-10, atol=1e-12)
    for mine, reference in zip(ours[3], theirs[3]):
        np.testing.assert_allclose(mine, reference, rtol=1e-9, atol=1e-12)


def test_fused_node_keeps_what_torchs_keeps():
    nodes = {}
    for lib in (torch, tg):
        arguments = CASES["flash_bool_mask"](lib)
        node = lib.nn.functional.scaled_dot_product_attention(**arguments, scale=0.4).grad_fn
        nodes[lib] = (node.name(), node._saved_dropout_p, node._saved_is_causal,
                      node._saved_scale, tuple(node._saved_logsumexp.shape),
                      node._saved_attn_mask.numpy().tolist(), tuple(node._saved_output.shape),
                      len(node.next_functions))
    assert nodes[tg] == nodes[torch]


def test_fused_node_has_no_second_derivative_as_in_torch():
    for lib in (torch, tg):
        arguments = CASES["flash"](lib)
        out = lib.nn.functional.scaled_dot_product_attention(**arguments)
        (grad,) = lib.autograd.grad(out.sum(), arguments["query"], create_graph=True)
        with pytest.raises(RuntimeError, match="derivative for aten::_scaled_dot_product_flash"
                                               "_attention_for_cpu_backward is not implemented"):
            grad.sum().backward()


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_multihead_attention_graph_as_torch(need_weights, causal):
    """nn.MultiheadAttention without need_weights runs through scaled_dot_product_attention
    (the fused node), with it through the explicit softmax of the weights."""
    results = {}
    state = None
    for lib in (torch, tg):
        lib.manual_seed(0)
        layer = lib.nn.MultiheadAttention(8, 2, dropout=0.0).double()
        if state is None:
            state = {key: value.detach().numpy().copy() for key, value in
                     layer.state_dict().items()}
        layer.load_state_dict({key: lib.tensor(value) for key, value in state.items()})
        x = _tensor(lib, 5, 3, 8)
        mask = lib.nn.Transformer.generate_square_subsequent_mask(5, dtype=lib.float64) \
            if causal and hasattr(lib.nn, "Transformer") else None
        if causal and mask is None:
            mask = lib.triu(lib.full((5, 5), float("-inf"), dtype=lib.float64), diagonal=1)
        out = layer(x, x, x, need_weights=need_weights, attn_mask=mask)[0]
        out.sum().backward()
        results[lib] = (_graph(out), out.detach().numpy(), x.grad.numpy())
    assert results[tg][0] == results[torch][0]
    np.testing.assert_allclose(results[tg][1], results[torch][1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(results[tg][2], results[torch][2], rtol=1e-9, atol=1e-12)
