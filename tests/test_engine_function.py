"""Custom autograd.Function: the ctx API and the errors a wrong backward gets."""

from __future__ import annotations

import numpy as np
import pytest
from tutorial_programs import AddOneInPlace, Exp, MyReLU

import tracegrad as tg


def test_save_for_backward_and_node_name():
    x = tg.tensor([-1.0, 2.0, -3.0, 4.0], requires_grad=True)
    y = MyReLU.apply(x)
    assert y.grad_fn.name() == "MyReLUBackward"
    assert len(y.grad_fn.saved_tensors) == 1
    assert y.grad_fn.saved_tensors[0] is x
    y.sum().backward()
    np.testing.assert_allclose(x.grad.data, [0.0, 1.0, 0.0, 1.0])


class Linear(tg.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output = output + bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        ctx.seen_needs = ctx.needs_input_grad
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


def test_needs_input_grad_and_gradcheck_of_linear():
    x = tg.randn(5, 3, dtype=tg.float64)
    w = tg.randn(4, 3, dtype=tg.float64, requires_grad=True)
    b = tg.randn(4, dtype=tg.float64, requires_grad=True)
    out = Linear.apply(x, w, b)
    assert out.grad_fn.needs_input_grad == (False, True, True)
    out.sum().backward()
    assert x.grad is None
    np.testing.assert_allclose(b.grad.data, np.full(4, 5.0))
    x.requires_grad_()
    assert tg.autograd.gradcheck(Linear.apply, (x, w, b), eps=1e-6, atol=1e-4)
    assert tg.autograd.gradcheck(Linear.apply, (x, w), eps=1e-6, atol=1e-4)


class ScaleBy(tg.autograd.Function):
    """A non-tensor argument (factor) and one passed by keyword."""

    @staticmethod
    def forward(ctx, x, factor, shift=0.0):
        ctx.factor = factor
        return x * factor + shift

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.factor, None, None


def test_non_tensor_arguments():
    x = tg.ones(3, requires_grad=True)
    y = ScaleBy.apply(x, 4.0, shift=1.0)  # bound to forward's parameter, as torch does
    np.testing.assert_allclose(y.data, [5.0, 5.0, 5.0])
    assert y.grad_fn.needs_input_grad == (True, False, False)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.data, [4.0, 4.0, 4.0])


class KeywordOnly(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x, *, shift=0.0):
        return x + shift

    @staticmethod
    def backward(ctx, grad):
        return grad


def test_keyword_only_forward_arguments_are_refused_as_in_torch():
    with pytest.raises(TypeError, match="unexpected keyword argument 'shift'"):
        KeywordOnly.apply(tg.ones(2), shift=1.0)


class SplitSign(tg.autograd.Function):
    """Several outputs; one of them non-differentiable (an int64 index tensor)."""

    @staticmethod
    def forward(ctx, x):
        positive = x.clamp(min=0)
        negative = x.clamp(max=0)
        argmax = x.argmax()
        ctx.mark_non_differentiable(argmax)
        ctx.save_for_backward(x)
        return positive, negative, argmax

    @staticmethod
    def backward(ctx, grad_positive, grad_negative, grad_argmax):
        (x,) = ctx.saved_tensors
        return grad_positive * (x > 0) + grad_negative * (x <= 0)


def test_several_outputs_and_mark_non_differentiable():
    x = tg.tensor([-1.0, 2.0, 3.0], requires_grad=True)
    positive, negative, argmax = SplitSign.apply(x)
    assert positive.grad_fn is negative.grad_fn
    assert positive._output_nr == 0 and negative._output_nr == 1
    assert not argmax.requires_grad and argmax.item() == 2
    (positive.sum() * 2).backward()  # negative unused: materialized as zeros
    np.testing.assert_allclose(x.grad.data, [0.0, 2.0, 2.0])


class SeesNone(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 1, x * 2

    @staticmethod
    def backward(ctx, grad_a, grad_b):
        SeesNone.received = (grad_a is None, grad_b is None)
        total = 0
        if grad_a is not None:
            total = total + grad_a
        if grad_b is not None:
            total = total + 2 * grad_b
        return total


def test_set_materialize_grads_false_passes_none():
    x = tg.ones(2, requires_grad=True)
    a, _ = SeesNone.apply(x)
    a.sum().backward()
    assert SeesNone.received == (False, True)
    np.testing.assert_allclose(x.grad.data, [1.0, 1.0])




def test_mark_dirty_rebases_the_modified_input():
    x = tg.ones(2, requires_grad=True)
    y = x * 1
    z = AddOneInPlace.apply(y)
    assert z is y and y.grad_fn.name() == "AddOneInPlaceBackward"
    np.testing.assert_allclose(y.data, [2.0, 2.0])
    (y * 3).sum().backward()
    np.testing.assert_allclose(x.grad.data, [3.0, 3.0])


def test_mark_dirty_on_a_leaf_that_requires_grad_fails():
    x = tg.ones(2, requires_grad=True)
    # torch's wording for mark_dirty ("has been", the forward already changed it)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used "
                                           "in an in-place operation"):
        AddOneInPlace.apply(x)


class TooManyGrads(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


class WrongShape(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return tg.ones(7)


def test_wrong_number_of_gradients_names_the_function():
    x = tg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"function TooManyGradsBackward returned an "
                                           r"incorrect number of gradients \(expected 1, got 2\)"):
        TooManyGrads.apply(x).sum().backward()


def test_wrong_gradient_shape_names_the_function():
    x = tg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Function WrongShapeBackward returned an invalid "
                                           r"gradient at index 0 - got \[7\] but expected shape "
                                           r"compatible with \[3\]"):
        WrongShape.apply(x).sum().backward()


def test_function_without_backward_says_so():
    class NoBackward(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    x = tg.ones(1, requires_grad=True)
    with pytest.raises(NotImplementedError, match="You must implement either the backward"):
        NoBackward.apply(x).sum().backward()


def test_no_graph_when_no_input_requires_grad():
    y = MyReLU.apply(tg.tensor([-1.0, 1.0]))
    assert y.grad_fn is None and not y.requires_grad
    with tg.no_grad():
        z = MyReLU.apply(tg.tensor([-1.0, 1.0], requires_grad=True))
    assert z.grad_fn is None


def test_function_saving_its_output_double_backward():
    x = tg.tensor([0.5, 1.0], dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(Exp.apply, (x,))
    assert tg.autograd.gradgradcheck(Exp.apply, (x,))
