"""The recorder: exact graphs, saved tensors, backward step order and captured gradients."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.tracing.model import Trace


def _names(trace: Trace) -> list[str]:
    return [node.name for node in trace.iter_nodes()]


def test_record_and_torch_trace_are_distinct_names():
    import tracegrad.tracing.model  # noqa: F401 - importing the package shadows nothing

    x = tg.ones(2, requires_grad=True)
    with tg.record() as tr:
        (x * x).sum().backward()
    assert isinstance(tr, Trace)
    assert tg.tracing.from_tensor is not None
    assert tg.load_trace is tg.tracing.load_trace
    assert _names(tr) == ["MulBackward0", "AccumulateGrad", "SumBackward0"]


def _two_layer():
    tg.manual_seed(0)
    x = tg.randn(4, 5)
    w1 = tg.randn(5, 3, requires_grad=True)
    w2 = tg.randn(3, 2, requires_grad=True)
    return x, w1, w2


def test_two_layer_graph_nodes_edges_and_saved_tensors():
    x, w1, w2 = _two_layer()
    with tg.record() as tr:
        h = x.mm(w1)
        a = h.relu()
        y = a.mm(w2)
        loss = y.pow(2).sum()
        loss.backward()
    assert _names(tr) == ["MmBackward0", "AccumulateGrad", "ReluBackward0", "MmBackward0",
                          "AccumulateGrad", "PowBackward0", "SumBackward0"]
    names = {record.id: record.name for record in tr.tensors.values()}
    mm1, acc1, relu, mm2, acc2, power, total = tr.iter_nodes()
    assert [names[i] for i in mm1.inputs] == ["x", "w1"]
    assert [names[i] for i in mm1.outputs] == ["h"]
    assert mm1.next == [(None, 0), (acc1.id, 0)]
    assert acc1.leaf == mm1.inputs[1] and names[acc1.leaf] == "w1"
    assert relu.next == [(mm1.id, 0)]
    assert mm2.next == [(relu.id, 0), (acc2.id, 0)]
    assert total.next == [(power.id, 0)]
    assert names[total.outputs[0]] == "loss"
    # saved tensors: which tensor, version at save, bytes, slot
    # only x: w1 would serve x's gradient, which nobody needs (torch saves the same)
    assert [(names[s.tensor], s.version, s.nbytes, s.slot) for s in mm1.saved] == [
        ("x", 0, 4 * 5 * 4, "self")]  # torch's slot name
    assert [(names[s.tensor], s.is_output, s.slot) for s in relu.saved] == [("a", True, "result")]
    assert power.attrs == {"exponent": 2}
    assert total.attrs["keepdim"] is False
    # the forward line of each node
    assert mm1.site.line == mm2.site.line - 2
    assert mm1.site.code == "h = x.mm(w1)"
    assert mm1.site.file.endswith("test_tracing_recorder.py")
    assert next(iter(tr.edges())) == (mm1.id, acc1.id, 0)


def test_backward_steps_order_and_gradients_match_engine():
    x, w1, w2 = _two_layer()
    with tg.record() as tr:
        loss = x.mm(w1).relu().mm(w2).pow(2).sum()
        loss.backward()
    (backward_pass,) = tr.passes
    order = [tr.node(step.node).name for step in backward_pass.steps]
    assert order == ["SumBackward0", "PowBackward0", "MmBackward0", "AccumulateGrad",
                     "ReluBackward0", "MmBackward0", "AccumulateGrad"]
    assert backward_pass.kind == "backward" and backward_pass.error is None
    assert backward_pass.roots == [tr.node(backward_pass.steps[0].node).outputs[0]]
    accumulated = {tr.tensor(step.accumulated).name: step for step in backward_pass.steps
                   if step.accumulated is not None}
    assert set(accumulated) == {"w1", "w2"}
    for leaf, name in ((w1, "w1"), (w2, "w2")):
        step = accumulated[name]
        np.testing.assert_array_equal(step.grads_in[0].array, leaf.grad.data)
        record = tr.tensor(step.accumulated)
        np.testing.assert_array_equal(record.grad.array, leaf.grad.data)
        assert record.grad.stats.norm == pytest.approx(float(np.linalg.norm(leaf.grad.data)),
                                                       rel=1e-5)
    # each step's outgoing gradient is the next node's incoming one (a chain here)
    steps = backward_pass.steps
    np.testing.assert_array_equal(steps[0].grads_out[0].array, steps[1].grads_in[0].array)
    assert steps[0].grads_in[0].array.shape == ()
    assert all(step.duration_ns > 0 for step in steps)


def test_tensor_values_and_leaves_captured():
    x, w1, _ = _two_layer()
    with tg.record() as tr:
        h = x.mm(w1)
    by_name = {record.name: record for record in tr.tensors.values()}
    np.testing.assert_array_equal(by_name["h"].value.array, h.data)
    np.testing.assert_array_equal(by_name["w1"].value.array, w1.data)
    assert by_name["w1"].is_leaf and by_name["w1"].requires_grad
    assert not by_name["h"].is_leaf and by_name["h"].grad_fn == tr.nodes[0].id


def test_structure_only_keeps_no_values():
    x, w1, _ = _two_layer()
    with tg.record(values=False) as tr:
        x.mm(w1).sum().backward()
    assert all(record.value is None for record in tr.tensors.values())
    assert all(grad is None for step in tr.passes[0].steps for grad in step.grads_in)
    assert len(tr.passes[0].steps) == 3


def test_unsubscribes_even_when_the_body_raises():
    from tracegrad.autograd import events

    with pytest.raises(ZeroDivisionError), tg.record() as tr:
        _ = 1 / 0
    assert not events.listeners
    assert tr.exception.type == "ZeroDivisionError"


def test_name_sets_display_name():
    w = tg.name(tg.ones(2, requires_grad=True), "weights")
    with tg.record() as tr:
        other = w * 2  # noqa: F841
    assert tr.tensor(0).name == "weights"
    with pytest.raises(ValueError):
        tg.name(w, "")


def test_same_program_same_ids_and_names():
    def program():
        x, w1, w2 = _two_layer()
        with tg.record(values=False) as tr:
            loss = x.mm(w1).relu().mm(w2).sum()
            loss.backward()
        return tr

    first, second = program(), program()
    for backward_pass in first.passes + second.passes:
        for step in backward_pass.steps:
            step.duration_ns = 0
    assert first == second


def test_hooks_are_recorded_on_their_step():
    x = tg.ones(3, requires_grad=True)
    with tg.record() as tr:
        y = x * 2
        y.register_hook(lambda grad: grad * 10)
        y.retain_grad()
        y.sum().backward()
    mul_step = next(step for step in tr.passes[0].steps
                    if tr.node(step.node).name == "MulBackward0")
    assert [(hook.kind, hook.changed) for hook in mul_step.hooks] == [
        ("tensor", True), ("retain_grad", False)]
    np.testing.assert_array_equal(mul_step.grads_in[0].array, np.full(3, 10.0, np.float32))


def test_keep_passes_drops_middle_values_but_keeps_structure():
    w = tg.ones(3, requires_grad=True)
    with tg.record(keep_passes=(1, 1)) as tr:
        for _ in range(4):
            (w * 2).sum().backward()
    assert [p.values_captured for p in tr.passes] == [True, False, False, True]
    assert all(len(p.steps) == 3 for p in tr.passes)
    middle = tr.passes[1].steps[0].grads_in[0]
    assert middle.array is None and middle.stats.max == 1.0
    assert tr.passes[3].steps[0].grads_in[0].array is not None


def test_budget_exhausted_gives_statistics():
    w = tg.ones(1000, requires_grad=True)
    with tg.record(budget_bytes=6000) as tr:
        (w * 2).sum().backward()
    values = [record.value for record in tr.tensors.values() if record.value is not None]
    assert any(value.array is None for value in values)
    assert tr.metadata["summarized_values"] > 0
    assert all(value.stats.max is not None for value in values)


def test_events_reach_a_listener_only_while_subscribed():
    from tracegrad.autograd import events

    calls = []

    class Listener(events.Listener):
        def on_op(self, node, inputs, outputs):
            calls.append(node.name())

    handle = events.subscribe(Listener())
    x = tg.ones(2, requires_grad=True)
    _ = x * 2
    handle.remove()
    _ = x * 3
    assert calls == ["MulBackward0"]
    assert events.listener is None and events.listeners == ()  # nothing keeps it alive
    with tg.record() as tr:
        _ = x * 4
    assert len(tr.nodes) == 2


def test_two_listeners_each_hear_every_event_in_subscription_order():
    from tracegrad.autograd import events

    heard = []

    class Named(events.Listener):
        def __init__(self, label):
            self.label = label

        def on_op(self, node, inputs, outputs):
            heard.append((self.label, node.name()))

        def on_backward_end(self, info, error):
            heard.append((self.label, "end"))

    x = tg.ones(2, requires_grad=True)
    with events.subscribe(Named("a")), events.subscribe(Named("b")):
        (x * 2).sum().backward()
    assert heard == [("a", "MulBackward0"), ("b", "MulBackward0"), ("a", "SumBackward0"),
                     ("b", "SumBackward0"), ("a", "end"), ("b", "end")]
    assert events.listener is None


def test_subscribe_refuses_an_object_that_is_not_a_listener():
    from tracegrad.autograd import events

    with pytest.raises(TypeError, match="subclass Listener"):
        events.subscribe(object())


def test_node_parameters_that_are_tuples_of_arrays_are_left_out():
    """An op parameter holding arrays (not data a trace keeps) is skipped, and tuples of
    ints -- shared between records -- keep ints and floats apart."""

    class Keep(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.arrays = (x.detach().numpy(), x.detach().numpy())
            ctx.sizes = (2, (3, 4))
            ctx.scales = (2.0, (3.0, 4.0))
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            return grad

    x = tg.ones(2, requires_grad=True)
    with tg.record() as tr:
        Keep.apply(x).sum().backward()
    (node,) = [node for node in tr.nodes.values() if node.name == "KeepBackward"]
    assert node.attrs == {"scales": [2.0, [3.0, 4.0]], "sizes": [2, [3, 4]]}
    assert type(node.attrs["scales"][0]) is float and type(node.attrs["sizes"][0]) is int
