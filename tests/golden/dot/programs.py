"""The tutorials' programs, small, for the golden DOT files next to this module.

Each function runs one program with ``import tracegrad as torch`` semantics and returns
what to draw. test_draw_golden.py traces each one and compares its DOT text with
``<function name>.dot`` here. Editing this file moves line numbers in the tooltips: run
the golden tests with TRACEGRAD_UPDATE_GOLDEN=1 afterwards and review the diff.
"""

from __future__ import annotations

import tracegrad as torch


class MyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


def two_layer_net():
    """The 'defining new autograd functions' tutorial, one training step."""
    torch.manual_seed(0)
    x = torch.randn(4, 3)
    y = torch.randn(4, 2)
    w1 = torch.randn(3, 5, requires_grad=True)
    w2 = torch.randn(5, 2, requires_grad=True)
    y_pred = MyReLU.apply(x.mm(w1)).mm(w2)
    loss = (y_pred - y).pow(2).sum()
    loss.backward()
    with torch.no_grad():
        w1 -= 1e-6 * w1.grad
        w2 -= 1e-6 * w2.grad
    return loss


class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


def linear_function():
    torch.manual_seed(0)
    x = torch.randn(4, 3, requires_grad=True)
    weight = torch.randn(2, 3, requires_grad=True)
    bias = torch.randn(2, requires_grad=True)
    out = LinearFunction.apply(x, weight, bias)
    total = out.sum()
    total.backward()
    return total


class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


def exp():
    torch.manual_seed(0)
    x = torch.randn(3, requires_grad=True)
    y = Exp.apply(x)
    y.backward(torch.ones(3))
    return y


class Swish(torch.autograd.Function):
    """Memory-efficient swish: saves only the input, recomputes sigmoid in backward."""

    @staticmethod
    def forward(ctx, i):
        result = i * torch.sigmoid(i)
        ctx.save_for_backward(i)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (i,) = ctx.saved_tensors
        sigmoid_i = torch.sigmoid(i)
        return grad_output * (sigmoid_i * (1 + i * (1 - sigmoid_i)))


def swish():
    torch.manual_seed(0)
    x = torch.randn(2, 3, requires_grad=True)
    loss = Swish.apply(x).mean()
    loss.backward()
    return loss


class GlobalMaxPool(torch.autograd.Function):
    """Max over the last dimension; saves the indices, not the input."""

    @staticmethod
    def forward(ctx, x):
        values, indices = x.max(dim=-1)
        ctx.save_for_backward(indices)
        ctx.input_shape = x.shape
        return values

    @staticmethod
    def backward(ctx, grad_output):
        (indices,) = ctx.saved_tensors
        grad_input = torch.zeros(ctx.input_shape, dtype=grad_output.dtype)
        grad_input.scatter_(-1, indices.unsqueeze(-1), grad_output.unsqueeze(-1))
        return grad_input


def global_max_pool():
    torch.manual_seed(0)
    x = torch.randn(2, 4, requires_grad=True)
    pooled = GlobalMaxPool.apply(x)
    loss = pooled.sum()
    loss.backward()
    return loss


PROGRAMS = {
    "two_layer_net": two_layer_net,
    "linear_function": linear_function,
    "exp": exp,
    "swish": swish,
    "global_max_pool": global_max_pool,
}
