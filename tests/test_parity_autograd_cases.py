"""Autograd behaviours compared with torch 2.13 where tracegrad once differed: a leaf whose
requires_grad is switched off after the graph was built, circular padding's graph, nll_loss
of inputs with more than two dims, and saved index tensors changed in place."""
from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")


def _names(node, depth: int = 8) -> list[str]:
    """The graph's node names, depth first, as torch's walk would list them."""
    if node is None or depth == 0:
        return []
    found = [node.name().replace("torch::autograd::", "")]
    for next_node, _ in node.next_functions:
        found += _names(next_node, depth - 1)
    return found


def test_a_leaf_switched_off_after_the_graph_was_built_gets_no_grad():
    grads = []
    for lib in (tg, torch):
        x = lib.ones(3, requires_grad=True)
        y = (x * 2).sum()
        x.requires_grad_(False)
        y.backward()
        grads.append(x.grad)
    assert grads == [None, None]


def test_a_leaf_switched_off_and_on_again_gets_its_grad():
    x = tg.ones(3, requires_grad=True)
    y = (x * 2).sum()
    x.requires_grad_(False)
    x.requires_grad_(True)
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("shape,pad", [
    ((1, 2, 5), (1, 2)),
    ((1, 1, 3, 4), (1, 1, 2, 0)),
    ((1, 2, 3, 4), (2, -1, 1, 3)),  # a negative pad crops
    ((1, 1, 2, 3, 4), (1, 1, 1, 1, 1, 1)),
])
def test_circular_pad_records_torch_graph_and_gradients(shape, pad):
    base = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) / 7
    results = []
    for lib in (tg, torch):
        x = lib.tensor(base, requires_grad=True)
        y = lib.nn.functional.pad(x, pad, mode="circular")
        weight = lib.tensor(np.arange(y.numel(), dtype=np.float64).reshape(tuple(y.shape)))
        (y * weight).sum().backward()
        results.append((_names(y.grad_fn), y.detach().numpy(), x.grad.numpy()))
    assert results[0][0] == results[1][0]  # CopySlices chains, not CatBackward0
    np.testing.assert_array_equal(results[0][1], results[1][1])
    np.testing.assert_array_equal(results[0][2], results[1][2])


@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 2), (2, 3, 2, 2), (1, 3, 2, 1, 2)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_of_any_rank_matches_torch(shape, reduction):
    rng = np.random.default_rng(3)
    scores = rng.standard_normal(shape)
    target = rng.integers(0, shape[1], size=(shape[0],) + shape[2:])
    results = []
    for lib in (tg, torch):
        x = lib.tensor(scores, requires_grad=True)
        loss = lib.nn.functional.nll_loss(x, lib.tensor(target), reduction=reduction)
        node = loss.grad_fn
        while "NllLoss" not in node.name():  # (torch views 3-d and 5-d inputs and results)
            node = node.next_functions[0][0]
        total_weight = node._saved_total_weight.item()  # (freed by backward)
        loss.sum().backward()
        results.append((_names(loss.grad_fn), loss.detach().numpy(), x.grad.numpy(),
                        total_weight))
    assert results[0][0] == results[1][0]  # NllLoss2DBackward0 from 3 dims on
    np.testing.assert_allclose(results[0][1], results[1][1])
    np.testing.assert_allclose(results[0][2], results[1][2])
    assert results[0][3] == results[1][3]


@pytest.mark.parametrize("program", [
    lambda L, x: x.max(1),
    lambda L, x: x.sort(1),
    lambda L, x: x.topk(2, 1),
])
def test_indices_changed_in_place_fail_backward_as_in_torch(program):
    for lib in (tg, torch):
        x = lib.ones(3, 4, requires_grad=True)
        values, indices = program(lib, x)
        indices.add_(0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation: "
                                               r"\[torch.LongTensor \[3(, \d)?\]\] is at version 1"):
            values.sum().backward()


def test_a_mask_changed_in_place_fails_backward_as_in_torch():
    for lib in (tg, torch):
        x = lib.ones(3, requires_grad=True)
        mask = lib.tensor([True, False, True])
        y = x.masked_fill(mask, 0.0)
        mask.logical_not_()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
