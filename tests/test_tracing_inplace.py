"""The tracer's record of in-place changes: one correct record per change, the first time.

The engine tells the listener everything in one ``on_inplace(info)`` call (the node it
recorded, the arguments, the tensor whose history changed and its prior edge, the new
version, the saved clone of the old value, the views given a new grad_fn), so the recorder
never rewrites a record afterwards.
"""

from __future__ import annotations

import pytest
from tutorial_programs import AddOneInPlace

import tracegrad as tg
from tracegrad.autograd import events


def node_named(trace, name):
    (node,) = [node for node in trace.iter_nodes() if node.name == name]
    return node


def test_inplace_on_a_view_is_one_copyslices_record():
    x = tg.ones(4, requires_grad=True)
    w = tg.ones(2, requires_grad=True)
    with tg.record() as tr:
        base = x * 1
        row = base.view(2, 2)[0]
        row.mul_(w)
        base.sum().backward()
    base_id, row_id, w_id = (next(t.id for t in tr.tensors.values() if t.name == name)
                             for name in ("base", "row", "w"))
    copy = node_named(tr, "CopySlices")
    assert copy.inputs == [base_id, w_id] and copy.outputs == [base_id]
    assert tr.tensor(base_id).grad_fn == copy.id
    view_node = tr.node(tr.tensor(row_id).grad_fn)
    assert view_node.name == "AsStridedBackward0" and view_node.inputs == [base_id]
    assert view_node.next == [(copy.id, 0)]
    assert [(v.version, v.op) for v in tr.tensor(row_id).versions] == [(1, "mul_")]
    assert [(v.version, v.op) for v in tr.tensor(base_id).versions] == [(1, "mul_")]
    assert sorted(tr.tensors) == list(range(len(tr.tensors)))  # no temporaries recorded
    # the saved old value of the view (MulBackward0 needs it for w's gradient) shows as the
    # view itself at version 0
    assert [(s.tensor, s.version) for s in copy.saved] == [(row_id, 0), (w_id, 0)]
    assert [tr.node(step.node).name for step in tr.passes[0].steps][:2] == [
        "SumBackward0", "CopySlices"]


def test_other_views_get_their_new_grad_fn_recorded():
    x = tg.ones(4, requires_grad=True)
    with tg.record() as tr:
        base = x * 1
        first, second = base[:2], base[2:]
        first.mul_(2)
        (second * 3).sum()
    second_id = next(t.id for t in tr.tensors.values() if t.name == "second")
    node = tr.node(tr.tensor(second_id).grad_fn)
    assert node.name == "AsStridedBackward0" and node.outputs == [second_id]
    assert node.attrs["storage_offset"] == 2 and node.attrs["size"] == [2]


def test_saved_old_value_and_saved_output_of_inplace_ops():
    x = tg.ones(3, requires_grad=True)
    w = tg.full((3,), 2.0, requires_grad=True)
    with tg.record() as tr:
        y = x * 3
        y.mul_(w)
        z = x * 1
        z.exp_()
    y_id, z_id, w_id = (next(t.id for t in tr.tensors.values() if t.name == name)
                        for name in ("y", "z", "w"))
    (mul,) = [node for node in tr.iter_nodes() if node.name == "MulBackward0"
              and node.inputs == [y_id, w_id]]
    assert mul.inputs == [y_id, w_id] and mul.outputs == [y_id]
    assert [(s.tensor, s.version) for s in mul.saved] == [(y_id, 0), (w_id, 0)]
    exp = node_named(tr, "ExpBackward0")
    assert exp.inputs == exp.outputs == [z_id]
    assert [(s.tensor, s.version, s.is_output) for s in exp.saved] == [(z_id, 1, True)]


def test_inplace_after_inplace_is_reported_on_the_saved_output():
    x = tg.ones(3, requires_grad=True)
    with tg.record() as tr:
        z = x * 1
        z.exp_()
        z.add_(1)  # ExpBackward0 saved z at version 1
    (violation,) = tr.violations
    assert violation.kind == "inplace_saved"
    assert (violation.saved_version, violation.current_version) == (1, 2)


def test_inplace_through_a_view_of_a_saved_base_is_a_violation_at_once():
    x = tg.ones(4, requires_grad=True)
    with tg.record() as tr:
        h = x * 2
        s = h.sigmoid()
        s[:2].mul_(3)  # sigmoid saved its output s
    (violation,) = tr.violations
    assert violation.kind == "inplace_saved" and violation.phase == "forward"
    assert tr.node(violation.node).name == "SigmoidBackward0"


def test_mark_dirty_is_recorded_once_with_the_version_change():
    x = tg.ones(2, requires_grad=True)
    with tg.record() as tr:
        y = x * 1
        AddOneInPlace.apply(y)
        base = x * 1
        AddOneInPlace.apply(base[:1])
    y_id = next(t.id for t in tr.tensors.values() if t.name == "y")
    node = tr.node(tr.tensor(y_id).grad_fn)
    assert node.name == "AddOneInPlaceBackward" and node.inputs == node.outputs == [y_id]
    assert [(v.version, v.op) for v in tr.tensor(y_id).versions] == [
        (1, "add_"), (2, "AddOneInPlaceBackward")]  # the add_ inside forward, then mark_dirty
    base_id = next(t.id for t in tr.tensors.values() if t.name == "base")
    copy = node_named(tr, "CopySlices")
    assert copy.outputs == [base_id] and tr.tensor(base_id).grad_fn == copy.id


class Collect(events.Listener):
    def __init__(self) -> None:
        self.infos = []

    def on_inplace(self, info) -> None:
        self.infos.append(info)


def test_the_inplace_event_carries_what_a_record_needs():
    x = tg.ones(4, requires_grad=True)
    w = tg.ones(2, requires_grad=True)
    base = x * 1
    prior = base.grad_fn
    view = base[:2]
    listener = Collect()
    with events.subscribe(listener):
        view.mul_(w)
        with tg.no_grad():
            base.add_(1)
    recorded, unrecorded = listener.infos
    assert recorded.tensor is view and recorded.base is base and recorded.op_name == "mul_"
    assert recorded.node is base.grad_fn and recorded.node.name() == \
        "torch::autograd::CopySlices"
    assert recorded.previous_edge == (prior, 0)
    assert recorded.inputs[0] is view and recorded.inputs[1] is w
    assert recorded.version == 1 and recorded.site.line > 0
    assert recorded.original is not None and recorded.original.tolist() == [1.0, 1.0]
    assert recorded.views == (view,)
    assert unrecorded.node is None and unrecorded.version == 2
    assert unrecorded.previous_edge == (base.grad_fn, 0) or unrecorded.previous_edge[0] is None
    assert view in unrecorded.views  # its grad_fn was regenerated by the no_grad change


def test_refused_inplace_on_a_view_of_a_leaf_is_a_violation():
    with tg.record() as tr:
        w = tg.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="a view of a leaf Variable"):
            w[:2].mul_(2)
    (violation,) = tr.violations
    assert violation.kind == "inplace_leaf" and tr.tensor(violation.tensor).name == "w"
