"""What a recorded op leaves for the cyclic garbage collector (issue 14).

Each object a node keeps alive is one more for every full collection to walk, and those
walks are what grows with a deep graph (bench/bench_engine.py (b), (c)). A node keeps one
or two edges, and a pair of saved values, as its own attributes: no tuple per op. These
tests count the tracked objects a chain leaves, and check that the flat fields read back
as the tuples everything else sees (next_functions, _saved_*, select_edges' own tuple).
"""

from __future__ import annotations

import gc

import pytest

import tracegrad as torch
import tracegrad.nn.functional as F
from tracegrad.autograd.node import FREED_INPUT, SavedTensor


def _tracked_per_op(make_chain, length: int = 2_000) -> float:
    gc.collect()
    before = len(gc.get_objects())
    result = make_chain(length)
    gc.collect()
    grown = len(gc.get_objects()) - before
    del result
    return grown / length


def test_an_elementwise_chain_leaves_one_node_per_op():
    w = torch.full((4,), 0.5)
    b = torch.full((4,), 0.25)
    x = torch.ones(4, requires_grad=True)

    def chain(length):
        y = x
        for index in range(length):
            y = y * w if index % 2 == 0 else y + b
        return y

    # the node: no edge or saved-value tuples, and Mul keeps the constant w as itself
    # (its SavedTensor is made when read: see test_a_constant_kept_as_itself_*)
    assert _tracked_per_op(chain) == pytest.approx(1.0, abs=0.01)


def test_a_unary_chain_leaves_one_object_per_op():
    x = torch.ones(4, requires_grad=True)

    def chain(length):
        y = x
        for _ in range(length):
            y = y.neg()
        return y

    assert _tracked_per_op(chain) == pytest.approx(1.0, abs=0.01)


def test_flat_edges_read_back_as_next_functions():
    x = torch.ones(3, requires_grad=True)
    w = torch.ones(3)
    product = x * w
    first, second = product.grad_fn._next_nodes
    assert first.variable is x and second is None  # x's AccumulateGrad, then no edge
    assert [node is None for node, _ in product.grad_fn.next_functions] == [False, True]
    assert len((x.exp()).grad_fn.next_functions) == 1
    # a number operand gets its (None, 0) edge in argument order
    assert [node is None for node, _ in (2 * x).grad_fn.next_functions] == [False, True]
    assert [node is None for node, _ in x.add(2).grad_fn.next_functions] == [False, True]


def test_select_edges_on_a_two_tensor_node_keeps_its_own_tuple():
    # nll_loss is wired as two tensors, then keeps only the input's edge (the target is
    # no input of the derivative): its own tuple replaces the two flat edges.
    logits = torch.randn(3, 4, requires_grad=True)
    target = torch.tensor([0, 2, 1])
    loss = F.nll_loss(logits.log_softmax(1), target)
    edges = loss.grad_fn.next_functions
    assert len(edges) == 1 and edges[0][0] is not None
    loss.backward()
    assert logits.grad.shape == (3, 4)


def test_a_saved_pair_reads_back_and_is_freed_by_backward():
    x = torch.ones(2, requires_grad=True)
    y = torch.full((2,), 3.0, requires_grad=True)
    product = x * y
    node = product.grad_fn
    assert node._saved_self is x and node._saved_other is y
    assert len(node._saved) == 2
    product.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        node._saved_self  # noqa: B018 -- the read is the test
    assert x.grad.tolist() == [3.0, 3.0] and y.grad.tolist() == [1.0, 1.0]


def test_a_constant_kept_as_itself_reads_back_as_its_saved_tensor():
    x = torch.ones(2, requires_grad=True)
    w = torch.full((2,), 3.0)  # a leaf without grad, at version 0: kept as itself
    node = (x * w).grad_fn
    assert node._saved1 is w  # (the flat slot, before anyone asks)
    raw = node._raw_saved_other
    assert isinstance(raw, SavedTensor) and raw is node._raw_saved_other  # made once
    assert raw.tensor is w and raw.version == 0 and raw.producer is None
    assert not raw.requires_grad and node._saved_other is w
    assert node._saved[1] is raw


def test_a_constant_kept_as_itself_keeps_its_save_time_state():
    x = torch.ones(2, requires_grad=True)
    w = torch.full((2,), 3.0)
    node = (x * w).grad_fn
    w.requires_grad_()  # after the save: the saved value was saved without grad
    assert node._raw_saved_other.requires_grad is False
    for order in (lambda v: x * v, lambda v: v * x):  # v kept in slot 1, then slot 0
        v = torch.full((2,), 2.0)
        product = order(v)
        v.add_(1)  # changed in place after the save: backward refuses, as with a SavedTensor
        with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead"):
            product.sum().backward()


def test_a_constant_kept_as_itself_is_let_go_by_backward():
    x = torch.ones(2, requires_grad=True)
    w = torch.full((2,), 3.0)
    product = x * w
    node = product.grad_fn
    product.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    assert node._saved1 is FREED_INPUT  # the graph no longer holds w
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        node._saved_other  # noqa: B018 -- the read is the test
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        product.sum().backward()


def test_a_constant_kept_as_itself_takes_saved_tensor_hooks():
    x = torch.ones(2, requires_grad=True)
    w = torch.full((2,), 3.0)
    product = x * w
    packed = []
    product.grad_fn._raw_saved_other.register_hooks(
        lambda tensor: packed.append(tensor) or tensor, lambda tensor: tensor * 10)
    product.sum().backward()
    assert len(packed) == 1 and x.grad.tolist() == [30.0, 30.0]


def test_setting_next_functions_replaces_flat_edges():
    x = torch.ones(2, requires_grad=True)
    node = (x * torch.ones(2)).grad_fn
    node.next_functions = ((None, 0),)
    assert node.next_functions == ((None, 0),)
