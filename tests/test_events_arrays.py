"""The engine tells its listeners about backward steps in arrays when it runs on arrays
(events.Listener.on_node_start_arrays / on_node_end_arrays): a listener written for the
Tensor events still gets Tensors, with the same values, and one that overrides nothing is
told nothing it has to pay for."""

from __future__ import annotations

import numpy as np

import tracegrad
from tracegrad.autograd import events
from tracegrad.tensor import Tensor


class _Steps(events.Listener):
    def __init__(self) -> None:
        self.started: list = []
        self.ended: list = []

    def on_node_start(self, node, grads_in):
        self.started.append((node.name(), grads_in))

    def on_node_end(self, node, grads_out, duration_ns):
        self.ended.append((node.name(), grads_out, duration_ns))


def test_a_tensor_listener_gets_tensors_with_the_step_gradients():
    x = tracegrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    listener = _Steps()
    with events.subscribe(listener):
        ((x * 2.0).exp() + 1.0).sum().backward()
    names = [name for name, _ in listener.started]
    assert names == ["SumBackward0", "AddBackward0", "ExpBackward0", "MulBackward0",
                     "torch::autograd::AccumulateGrad"]
    assert [name for name, _, _ in listener.ended] == names
    for _, grads, *_ in listener.started + listener.ended:
        assert isinstance(grads, tuple)
        assert all(grad is None or type(grad) is Tensor for grad in grads)
    # ExpBackward0: the gradient in is ones, the gradient out is exp(2x)
    _, (grad_in,) = listener.started[2]
    _, (grad_out,), duration = listener.ended[2]
    np.testing.assert_allclose(grad_in.numpy(), np.ones(3))
    np.testing.assert_allclose(grad_out.numpy(), np.exp(2.0 * np.array([1.0, 2.0, 3.0])),
                               rtol=1e-6)
    assert duration >= 0
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * np.exp(2.0 * np.array([1, 2, 3.0])),
                               rtol=1e-6)


def test_the_array_events_carry_arrays_in_step_order():
    seen = []

    class Arrays(events.Listener):
        def on_node_start_arrays(self, node, grads_in):
            seen.append(("start", node.name(), grads_in))

        def on_node_end_arrays(self, node, grads_out, duration_ns):
            seen.append(("end", node.name(), grads_out))

    w = tracegrad.tensor([1.0, -2.0], requires_grad=True)
    with events.subscribe(Arrays()):
        (w * w).sum().backward()
    assert [(kind, name) for kind, name, _ in seen] == [
        ("start", "SumBackward0"), ("end", "SumBackward0"),
        ("start", "MulBackward0"), ("end", "MulBackward0")]  # AccumulateGrad: Tensors
    _, _, (into_mul,) = seen[2]
    _, _, out_of_mul = seen[3]
    assert type(into_mul) is np.ndarray
    np.testing.assert_allclose(out_of_mul[0], [1.0, -2.0])  # each edge: grad * the other
    np.testing.assert_allclose(out_of_mul[1], [1.0, -2.0])
    np.testing.assert_allclose(w.grad.numpy(), [2.0, -4.0])


def test_a_multi_output_node_tells_its_missing_gradient_as_none():
    x = tracegrad.tensor([[3.0, 1.0], [0.0, 5.0]], requires_grad=True)
    seen = []

    class Arrays(events.Listener):
        def on_node_start_arrays(self, node, grads_in):
            seen.append((node.name(), grads_in))

    with events.subscribe(Arrays()):
        values, _ = x.max(dim=1)
        values.sum().backward()
    (name, grads_in), = [item for item in seen if item[0].startswith("Max")]
    assert len(grads_in) == 2 and grads_in[1] is None  # as given, not zero-filled
