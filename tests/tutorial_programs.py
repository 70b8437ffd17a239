"""The PyTorch tutorials' custom autograd Functions, once, with `import tracegrad as torch`;
and the small Functions PyTorch's own autograd tests use, made for a library (tracegrad or
torch, the ``lib`` fixture) so one test checks both.

Tests that need them import them from here; the pytest-plugin tests write this file into
their temporary projects as it is (so it imports nothing but tracegrad).
"""

import tracegrad as torch


def my_relu_on(library, scale: float = 1.0):
    """The tutorial's MyReLU as a Function of ``library`` (tracegrad, or torch to compare
    with); a ``scale`` other than 1 multiplies its gradient (a planted bug)."""

    class MyReLU(library.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return input.clamp(min=0)

        @staticmethod
        def backward(ctx, grad_output):
            (input,) = ctx.saved_tensors
            grad_input = grad_output.clone()
            grad_input[input < 0] = 0
            return grad_input if scale == 1.0 else grad_input * scale

    return MyReLU


MyReLU = my_relu_on(torch)


class AddOneInPlace(torch.autograd.Function):
    """Adds one to its input in place and says so with ``ctx.mark_dirty`` (as torch's
    mark_dirty example)."""

    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


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


class SwishImplementation(torch.autograd.Function):
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


class MemoryEfficientSwish(torch.nn.Module):
    def forward(self, x):
        return SwishImplementation.apply(x)


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


class GoodSquare(torch.autograd.Function):
    """x * x with its right backward (BadSquare's correct twin)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * grad * x


class BadSquare(torch.autograd.Function):
    """x * x whose backward says 3x instead of 2x: the planted bug gradcheck must catch."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x  # wrong: should be 2 * x


# -- small Functions for a library (tracegrad or torch) ----------------------------------
def mul2_function(lib):
    """x * 2 as a custom Function of ``lib`` (its backward: grad * 2)."""

    class Mul2(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    return Mul2.apply


def double_mul_function(lib):
    """Two outputs, x*2 and x*3, as PyTorch's multi-output hook tests use."""

    class DoubleMul(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    return DoubleMul.apply
