"""The recorder and an op that keeps a constant operand as itself (``y * w``, w a leaf
without grad): the trace describes the saved tensor from the tensor, without making the
SavedTensor the untraced program never makes (node.saved_pair_value), and says the same as
it did when it made one."""

from __future__ import annotations

import pytest

import tracegrad as tg
from tracegrad.autograd.node import SavedTensor
from tracegrad.tracing import from_tensor


def _product():
    x = tg.ones(4, requires_grad=True)
    w = tg.full((4,), 0.5)
    return x, w


def test_recording_leaves_the_kept_operand_in_its_slot():
    x, w = _product()
    with tg.record() as tr:
        y = x * w
    node = y.grad_fn
    assert node._saved1 is w  # as untraced: no SavedTensor made by the recorder
    (record,) = (n for n in tr.nodes.values() if n.name == "MulBackward0")
    # x requires grad and w does not: only w is saved (for x's gradient), as in torch
    assert [(tr.tensor(s.tensor).name, s.slot, s.version, s.nbytes, s.is_output)
            for s in record.saved] == [("w", "other", 0, 16, False)]


def test_kept_operand_is_described_as_its_saved_tensor_would_be():
    x, w = _product()
    y = x * w
    before = from_tensor(y)  # the slot holds w itself
    y.grad_fn._saved  # noqa: B018 - the engine's own read makes its SavedTensor
    assert isinstance(y.grad_fn._saved1, SavedTensor)
    after = from_tensor(y)
    assert before.nodes == after.nodes and before.tensors == after.tensors


def test_inplace_change_of_a_kept_operand_is_still_reported():
    x, w = _product()
    with tg.record() as tr:
        y = (x * w).sum()
        assert not tr.violations
        w.add_(1)
        (violation,) = tr.violations
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()
    assert violation.kind == "inplace_saved"
    assert tr.node(violation.node).name == "MulBackward0"
    assert tr.tensor(violation.tensor).name == "w"
    assert (violation.saved_version, violation.current_version) == (0, 1)


def test_backward_frees_a_kept_operand_then_a_change_is_no_violation():
    x, w = _product()
    with tg.record() as tr:
        (x * w).sum().backward()
        w.add_(1)
    assert not tr.violations
    assert x.grad.tolist() == [0.5] * 4
