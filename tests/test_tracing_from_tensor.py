"""from_tensor: a structure-only Trace of a live graph, for render(loss) and assert_graph."""

from __future__ import annotations

import tracegrad as tg


def test_from_tensor_graph_and_names():
    x = tg.ones(2, 3)
    w = tg.ones(3, 4, requires_grad=True)
    b = tg.zeros(4, requires_grad=True)
    out = (x.mm(w) + b).exp()
    loss = out.sum()
    trace = tg.tracing.from_tensor(loss)
    names = [node.name for node in trace.iter_nodes()]
    assert names == ["MmBackward0", "AccumulateGrad", "AddBackward0", "AccumulateGrad",
                     "ExpBackward0", "SumBackward0"]
    mm, acc_w, add, acc_b, exp, total = trace.iter_nodes()
    assert add.next == [(mm.id, 0), (acc_b.id, 0)]
    assert trace.tensor(acc_w.leaf).name == "w"
    assert trace.tensor(acc_b.leaf).name == "b"
    assert trace.tensor(total.outputs[0]).name == "loss"
    assert trace.roots == [total.outputs[0]]
    # the saved output of exp is the live tensor `out`
    (saved,) = exp.saved
    assert saved.is_output and trace.tensor(saved.tensor).name == "out"
    # the input x does not require grad: no edge, no input tensor
    assert mm.next[0] == (None, 0) and mm.inputs[0] is None
    # intermediate tensors the program no longer holds are described from metadata
    assert trace.tensor(add.inputs[0]).shape == (2, 4)
    assert trace.tensor(add.inputs[0]).grad_fn == mm.id
    assert not trace.passes and all(t.value is None for t in trace.tensors.values())


def test_from_tensor_of_a_leaf_and_of_a_custom_function():
    class Double(tg.autograd.Function):
        @staticmethod
        def forward(ctx, value):
            ctx.save_for_backward(value)
            ctx.factor = 2
            return value * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    leaf = tg.ones(2, requires_grad=True)
    assert not tg.tracing.from_tensor(leaf).nodes
    trace = tg.tracing.from_tensor(Double.apply(leaf))
    node = next(node for node in trace.iter_nodes() if node.kind == "function")
    assert node.name == "DoubleBackward"
    assert node.attrs == {"factor": 2}
    assert [trace.tensor(saved.tensor).name for saved in node.saved] == ["leaf"]


def test_from_tensor_deep_graph_is_iterative():
    x = tg.ones(1, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0
    trace = tg.tracing.from_tensor(y)
    assert len(trace.nodes) == 3001


def test_recorder_adopts_a_graph_built_before_tracing():
    x = tg.ones(2, requires_grad=True)
    early = x * 3
    with tg.record() as tr:
        loss = early.sum()
        loss.backward()
    names = sorted(node.name for node in tr.nodes.values())
    assert names == ["AccumulateGrad", "MulBackward0", "SumBackward0"]
    assert [tr.node(step.node).name for step in tr.passes[0].steps] == [
        "SumBackward0", "MulBackward0", "AccumulateGrad"]


def test_released_saved_input_has_no_source_tensor():
    """After backward frees a graph, a saved input is gone (not a TypeError)."""
    x = tg.ones(3, requires_grad=True)
    y = x * x  # MulBackward0 saves x, an input, by reference
    y.sum().backward()
    saved = [item for item in y.grad_fn._saved if item is not None]
    assert saved and all(item.source_tensor() is None for item in saved)
    trace = tg.tracing.from_tensor(y)  # the freed saved tensors are left out, not a crash
    assert [node.saved for node in trace.iter_nodes() if node.name == "MulBackward0"] == [[]]
