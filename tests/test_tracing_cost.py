"""What the tracer does to cost less per op, and that the trace reads the same for it.

* structure-only steps share read-only lists of None (``model.nones``) instead of making
  two lists per step: they read, compare, copy, pickle and save as plain lists;
* a recorded node's saved tensors are watched for in-place changes from the first question
  about the watches (an in-place op, the end of a pass), not registered on every op: an
  in-place change of a saved tensor is still reported at the line that made it, the moment
  it happens, however many ops before the saving node was recorded, and after a pass that
  kept its graph (retain_graph=True).
"""

from __future__ import annotations

import copy
import pickle

import pytest

import tracegrad as tg
from tracegrad.tracing import load_trace
from tracegrad.tracing.model import NO_ITEMS, SharedNones, nones


def test_nones_is_one_shared_read_only_list_per_length():
    assert nones(3) is nones(3) and nones(3) == [None, None, None]
    assert nones(0) is NO_ITEMS
    with pytest.raises(TypeError, match="shared by trace records"):
        nones(2).append(None)
    with pytest.raises(TypeError, match="shared by trace records"):
        nones(2)[0] = 1
    assert copy.deepcopy(nones(2)) is nones(2)
    assert pickle.loads(pickle.dumps(nones(2))) is nones(2)


def test_structure_only_steps_share_their_lists_of_none_and_save_as_lists(tmp_path):
    x = tg.ones(3, requires_grad=True)
    with tg.record(values=False) as tr:
        ((x * 2) * x).sum().backward()
    steps = tr.passes[0].steps
    assert [tr.node(step.node).name for step in steps] == [
        "SumBackward0", "MulBackward0", "MulBackward0", "AccumulateGrad"]
    mul = steps[1]
    assert type(mul.grads_in) is SharedNones and mul.grads_in == [None]
    assert mul.grads_out == [None, None] and mul.grads_out is steps[2].grads_out
    path = tmp_path / "structure.tgtrace"
    tr.save(path)
    loaded = load_trace(path)
    assert [(step.grads_in, step.grads_out) for step in loaded.passes[0].steps] == [
        (step.grads_in, step.grads_out) for step in steps]


def test_inplace_on_a_tensor_saved_long_before_is_reported_at_once():
    x = tg.ones(4, requires_grad=True)
    with tg.record() as tr:
        h = x * 2
        y = h * h  # saves h (twice: one finding)
        z = y
        for _ in range(50):
            z = z + 1
        assert tr.violations == []
        h.add_(1)  # the line the finding names
        assert [violation.kind for violation in tr.violations] == ["inplace_saved"]
    (violation,) = tr.violations
    assert tr.node(violation.node).name == "MulBackward0"
    assert tr.tensor(violation.tensor).name == "h"
    assert (violation.saved_version, violation.current_version) == (0, 1)
    assert violation.site is not None and "h.add_(1)" in violation.site.code


def test_inplace_after_a_pass_that_kept_its_graph_is_still_reported():
    x = tg.ones(4, requires_grad=True)
    with tg.record() as tr:
        h = x * 2
        loss = (h * h).sum()
        loss.backward(retain_graph=True)
        assert tr.violations == []
        h.mul_(3)
        assert [violation.kind for violation in tr.violations] == ["inplace_saved"]
    assert tr.violations[0].phase == "forward"


def test_no_finding_for_a_change_after_backward_freed_the_saved_tensor():
    x = tg.ones(4, requires_grad=True)
    with tg.record() as tr:
        h = x * 2
        (h * h).sum().backward()  # frees what MulBackward0 saved
        h.add_(1)
    assert tr.violations == []
