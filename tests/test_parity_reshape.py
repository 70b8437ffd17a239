"""``reshape`` records what torch 2.13 records: a contiguous tensor's view
(ViewBackward0), a view of a tensor that is not contiguous but whose strides allow the
shape (ReshapeAliasBackward0, torch's ``_reshape_alias``), or a copy (CloneBackward0, then
UnsafeViewBackward0) -- and whichever it is, the result's values, gradient, view-ness and
behaviour under an in-place change are torch's."""
from __future__ import annotations

import pytest

import tracegrad as tg

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")

CASES = {
    "contiguous": lambda L: L.arange(12.0).reshape(4, 3).requires_grad_().reshape(2, 6),
    "transposed_same_shape": lambda L: _leaf(L, 4, 3).t().reshape(3, 4),
    "transposed_split": lambda L: _leaf(L, 4, 3).t().reshape(3, 2, 2),
    "transposed_inferred": lambda L: _leaf(L, 4, 3).t().reshape(-1, 4),
    "transposed_flat": lambda L: _leaf(L, 4, 3).t().reshape(12),
    "transposed_flatten": lambda L: _leaf(L, 4, 3).t().flatten(),
    "reshape_as": lambda L: _leaf(L, 4, 3).t().reshape_as(_leaf(L, 3, 4)),
    "column_slice": lambda L: _leaf(L, 4, 3)[:, :2].reshape(8),
    "strided_rows": lambda L: _leaf(L, 4, 3)[::2].reshape(6),
    "one_column": lambda L: _leaf(L, 3, 4)[:, 1:2].reshape(3),
    "permuted_3d": lambda L: _leaf(L, 2, 3, 4).permute(2, 0, 1).reshape(4, 6),
    "transposed_3d": lambda L: _leaf(L, 2, 3, 4).transpose(0, 1).reshape(3, 8),
    "expanded_flat": lambda L: _leaf(L, 3, 1).expand(3, 4).reshape(12),
    "expanded_split": lambda L: _leaf(L, 3, 1).expand(3, 4).reshape(3, 2, 2),
    "inner": lambda L: L.inner(_leaf(L, 2, 3), _leaf(L, 4, 3)),
}


def _leaf(lib, *shape):
    count = 1
    for size in shape:
        count *= size
    return (lib.arange(float(count), dtype=lib.float64).reshape(*shape) / 7).requires_grad_()


def _shown(lib, case):
    """Every node's name (breadth first), view-ness, values, and the leaves' gradients."""
    result = CASES[case](lib)
    names, leaves, queue = [], [], [result.grad_fn]
    while queue:
        node = queue.pop(0)
        if node is not None:
            names.append(node.name())
            if hasattr(node, "variable"):
                leaves.append(node.variable)
            queue.extend(next_node for next_node, _ in node.next_functions)
    (result * lib.arange(float(result.numel()), dtype=result.dtype).reshape(result.shape)).sum().backward()
    return (names, result._is_view(), _rounded(result), [_rounded(leaf.grad) for leaf in leaves])


def _rounded(tensor) -> list:
    return [round(value, 6) for value in tensor.detach().reshape(-1).tolist()]


@pytest.mark.parametrize("case", list(CASES))
def test_reshape_records_torchs_node(case):
    assert _shown(tg, case) == _shown(torch, case)


@pytest.mark.parametrize("case", ["transposed_same_shape", "transposed_split", "contiguous"])
def test_an_inplace_change_through_a_reshape_view_is_torchs(case):
    """A reshape view shares storage: writing into it changes the base and regenerates the
    view's grad_fn (AsStridedBackward0), the base's is CopySlices, as in torch."""
    shown = []
    for lib in (tg, torch):
        leaf = _leaf(lib, 4, 3)
        base = leaf * 1
        view = (base.t().reshape(3, 4) if case == "transposed_same_shape" else
                base.t().reshape(3, 2, 2) if case == "transposed_split" else base.reshape(2, 6))
        view.mul_(2)
        (base * lib.arange(12.0).reshape(4, 3)).sum().backward()
        shown.append((view.grad_fn.name(), base.grad_fn.name(), _rounded(base),
                      _rounded(leaf.grad)))
    assert shown[0] == shown[1]
