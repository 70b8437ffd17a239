"""Recorded gradients are what each backward step really got and gave, also when a hook
or a custom Function's backward writes into a gradient in place (the recorder captures an
array handed from one step to the next once, and must not reuse that capture after user
code ran)."""

from __future__ import annotations

import numpy as np

import tracegrad as tg


class TripleInPlace(tg.autograd.Function):
    """Identity forward; backward multiplies the incoming gradient by 3 in place and
    returns that very tensor."""

    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, grad):
        grad.mul_(3)
        return grad


def test_custom_backward_writing_its_gradient_in_place_is_recorded_as_returned():
    x = tg.ones(3, requires_grad=True)
    c = tg.tensor([1.0, 2.0, 4.0])
    with tg.record() as trace:
        y = TripleInPlace.apply(x * 2)
        (y * c).sum().backward()
    steps = [(trace.node(step.node).name, step) for step in trace.passes[0].steps]
    assert [name for name, _ in steps] == ["SumBackward0", "MulBackward0", "TripleInPlaceBackward",
                                           "MulBackward0", "AccumulateGrad"]
    triple = steps[2][1]
    np.testing.assert_array_equal(triple.grads_in[0].array, [1.0, 2.0, 4.0])
    np.testing.assert_array_equal(triple.grads_out[0].array, [3.0, 6.0, 12.0])
    # the next step got what the Function returned, and x.grad is twice that
    np.testing.assert_array_equal(steps[3][1].grads_in[0].array, [3.0, 6.0, 12.0])
    np.testing.assert_array_equal(steps[3][1].grads_out[0].array, x.grad.numpy())
    # the step before keeps what it gave at the time (before the in-place write)
    np.testing.assert_array_equal(steps[1][1].grads_out[0].array, [1.0, 2.0, 4.0])


def test_tensor_hook_writing_the_gradient_in_place_is_seen_by_the_next_step():
    x = tg.ones(3, requires_grad=True)
    c = tg.tensor([1.0, 2.0, 4.0])
    got = []
    with tg.record() as trace:
        h = x * 2
        y = h * c

        def times_five(grad):
            grad.mul_(5)  # returns nothing: the engine goes on with the same array

        def note(grad):
            got.append(grad.detach().numpy().copy())

        h.register_hook(times_five)
        h.grad_fn.register_prehook(lambda grads: note(grads[0]))
        y.sum().backward()
    steps = trace.passes[0].steps
    y_step, h_step = steps[1], steps[2]
    assert trace.node(h_step.node).name == "MulBackward0" and h_step.hooks
    np.testing.assert_array_equal(y_step.grads_out[0].array, [1.0, 2.0, 4.0])
    # what h's node really got, as its pre-hook saw it
    np.testing.assert_array_equal(got[0], [5.0, 10.0, 20.0])
    np.testing.assert_array_equal(h_step.grads_in[0].array, got[0])
    np.testing.assert_array_equal(h_step.grads_out[0].array, [10.0, 20.0, 40.0])

