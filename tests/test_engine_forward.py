"""The forward's fast paths (issue 14) mean exactly what the general paths mean.

An unrecorded in-place update (``w -= lr * w.grad`` under no_grad, ``grad.zero_()``) runs as
one NumPy operator on the tensor's storage; these tests pin that it is in place, bumps the
version, reaches the views, and hands everything unusual to the op's path and its errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg


def _pair(values, dtype="float32", requires_grad=False):
    torch = pytest.importorskip("torch")
    ours = tg.tensor(np.array(values, dtype=dtype), requires_grad=requires_grad)
    theirs = torch.tensor(np.array(values, dtype=dtype), requires_grad=requires_grad)
    return ours, theirs


@pytest.mark.torch
@pytest.mark.parametrize("update", [
    lambda w, g: w.sub_(g), lambda w, g: w.add_(g), lambda w, g: w.mul_(g),
    lambda w, g: w.sub_(0.25), lambda w, g: w.add_(3), lambda w, g: w.mul_(-1.5),
])
def test_unrecorded_update_matches_torch_in_place_with_one_version_bump(update):
    torch = pytest.importorskip("torch")
    ours, theirs = _pair([1.0, -2.0, 3.5], requires_grad=True)
    ours_g, theirs_g = _pair([0.5, 0.25, -1.0])
    storage, view = ours._array, ours[1:]
    with tg.no_grad():
        result = update(ours, ours_g)
    with torch.no_grad():
        update(theirs, theirs_g)
    assert result is ours and ours._array is storage  # the same storage, written in place
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    np.testing.assert_array_equal(view.detach().numpy(), ours.detach().numpy()[1:])
    assert ours._version == theirs._version == 1
    assert ours.requires_grad and ours.grad_fn is None


def test_the_optimizer_idiom_updates_weights_as_numpy_does():
    w = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    (w * w).sum().backward()
    expected = w.detach().numpy() - 0.1 * (2 * w.detach().numpy())
    with tg.no_grad():
        w -= 0.1 * w.grad
        w.grad.zero_()
    np.testing.assert_allclose(w.detach().numpy(), expected, rtol=1e-6)
    assert w.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert w._version == 1 and w.grad._version == 1


@pytest.mark.torch
def test_zero_writes_the_storage_and_its_views():
    pytest.importorskip("torch")
    ours, theirs = _pair([[1.0, 2.0], [3.0, 4.0]])
    row = ours[0]
    storage = ours._array
    ours.zero_()
    theirs.zero_()
    assert ours._array is storage and row.tolist() == [0.0, 0.0]
    assert ours.tolist() == theirs.tolist() and ours._version == theirs._version == 1


def test_an_in_place_update_seen_by_backward_raises_the_version_error():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    w = tg.tensor([3.0, 4.0])
    y = (x * w).sum()  # MulBackward0 saves w
    w += 1  # the fast path: w does not require grad
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_overlapping_operand_leaves_the_fast_path_for_torch_overlap_check():
    x = tg.arange(5.0)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        x[1:] += x[:-1]  # as torch: partial overlap (tests/test_inplace_overlap.py)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    x += x  # the same elements in the same layout: allowed, as in torch
    assert x.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]


@pytest.mark.torch
def test_what_the_fast_path_does_not_take_keeps_torch_errors():
    pytest.importorskip("torch")
    ours, theirs = _pair([1, 2], dtype="int64")
    with pytest.raises(RuntimeError) as their_error:
        theirs.add_(0.5)
    with pytest.raises(RuntimeError) as our_error:
        ours.add_(0.5)  # an int tensor: the op's path, which refuses the float result
    assert str(our_error.value).startswith(str(their_error.value))  # then ours adds more
    leaf = tg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        leaf.sub_(1)  # recorded: the op's path and its leaf check
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        tg.ones(2).add_(tg.ones(2, 2))  # a broadcast into a bigger shape
    expanded = tg.ones(1).expand(3)
    expanded.zero_()  # one value everywhere: torch writes it (test_inplace_expanded_fill.py)
    assert expanded.tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match="single memory location"):
        expanded.mul_(2)


def test_promoting_operands_take_the_ops_path_with_its_values():
    x = tg.tensor([1.0, 2.0])
    x += tg.tensor([1.0, 1.0], dtype=tg.float64)  # float64 operand: cast into float32
    assert x.dtype == tg.float32 and x.tolist() == [2.0, 3.0]
    x *= tg.tensor(2.0)  # a 0-d operand broadcasts
    assert x.tolist() == [4.0, 6.0]
    x -= tg.tensor([1, 1])  # an int operand promotes to the tensor's float
    assert x.tolist() == [3.0, 5.0] and x._version == 3


def _layout(tensor) -> tuple:
    """grad_fn's name and its edges as (next node's name or None, input_nr)."""
    node = tensor.grad_fn
    if node is None:
        return (None, tensor.requires_grad)
    return (node.name(), tensor.requires_grad, tuple(
        (None if next_node is None else next_node.name(), input_nr)
        for next_node, input_nr in node.next_functions))


@pytest.mark.torch
@pytest.mark.parametrize("operator", ["add", "sub", "mul", "truediv", "radd", "rmul"])
@pytest.mark.parametrize("operands", ["grad,plain", "plain,grad", "grad,grad", "grad,number",
                                      "plain,plain", "grad,int"])
def test_binary_operators_record_what_torch_records(operator, operands):
    torch = pytest.importorskip("torch")

    def make(library):
        made = {"grad": library.tensor([1.5, -2.0], requires_grad=True),
                "plain": library.tensor([0.5, 4.0]), "number": 3,
                "int": library.tensor([2, 3])}
        first, second = (made[name] for name in operands.split(","))
        return getattr(first, f"__{operator}__")(second)

    ours, theirs = make(tg), make(torch)
    assert _layout(ours) == _layout(theirs)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6)


def test_binary_operators_take_the_general_path_for_subclasses_and_no_grad():
    weight = tg.nn.Parameter(tg.ones(2))
    assert (weight * tg.ones(2)).grad_fn.name() == "MulBackward0"
    with tg.no_grad():
        assert (weight * 2).grad_fn is None
    assert (tg.ones(2) + tg.ones(2)).grad_fn is None


@pytest.mark.torch
@pytest.mark.parametrize("program", [
    "x.split(1)[1] * 2",  # an edge to output 1 of a multi-output node
    "x.split(1)[1] * x.split(1)[0]",
    "x.unbind()[2].exp()",
    "torch.where(x > 0, x, 0.0)",  # the condition has no edge, the number gets (None, 0)
    "torch.where(x > 0, 1.0, x.split(1)[2])",
    "3 - x",
    "x.pow(2) + x.max(0)[0]",
])
def test_edges_read_as_torch_lays_them_out(program):
    torch = pytest.importorskip("torch")

    def run(library):
        x = library.tensor([1.0, -2.0, 3.0], requires_grad=True)
        return eval(program, {"torch": library, "x": x})  # noqa: S307 - the fixed programs above

    assert _layout(run(tg)) == _layout(run(torch))


def test_next_functions_is_a_fresh_tuple_of_pairs_and_can_be_rewired():
    x = tg.ones(2, requires_grad=True)
    node = (x.split(1)[1] * 2).grad_fn
    first = node.next_functions
    assert first == node.next_functions and first is not node.next_functions
    split, input_nr = first[0]
    assert split.name() == "SplitBackward0" and input_nr == 1 and first[1] == (None, 0)
    node.next_functions = ((None, 0), (split, 1))  # the setter keeps the flat fields in step
    assert node.next_functions == ((None, 0), (split, 1))
    assert node._next_nodes == (None, split) and node._next_nrs == (0, 1)


def test_backward_follows_edges_to_every_output_number():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    first, second, third = x.split(1)
    (first * 2 + third * 5 + second.exp()).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, np.exp(2.0), 5.0], rtol=1e-6)
