"""LinearFunction from PyTorch's "Extending torch.autograd" notes, checked with gradcheck.

Shows ``ctx.needs_input_grad`` (skip gradients nobody asked for), an optional ``bias``
argument that may be None, a ``linear()`` wrapper and an ``nn.Module`` built on it.

    python examples/linear_function.py
"""

import tracegrad as torch
import tracegrad.nn as nn
from tracegrad.autograd import Function, gradcheck


class LinearFunction(Function):
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
        # Each gradient only when its input needs it: the check is cheap, the mm is not.
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


def linear(input, weight, bias=None):
    return LinearFunction.apply(input, weight, bias)


class Linear(nn.Module):
    def __init__(self, input_features, output_features, bias=True):
        super().__init__()
        self.input_features = input_features
        self.output_features = output_features
        self.weight = nn.Parameter(torch.empty(output_features, input_features))
        if bias:
            self.bias = nn.Parameter(torch.empty(output_features))
        else:
            self.register_parameter("bias", None)
        # Not a very smart way to initialize weights (as the tutorial says)
        self.weight.data.uniform_(-0.1, 0.1)
        if self.bias is not None:
            self.bias.data.uniform_(-0.1, 0.1)

    def forward(self, input):
        return LinearFunction.apply(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"input_features={self.input_features}, "
                f"output_features={self.output_features}, bias={self.bias is not None}")


def check_gradients():
    """gradcheck the function with and without bias, on float64 inputs."""
    torch.manual_seed(0)
    inputs = (torch.randn(20, 20, dtype=torch.double, requires_grad=True),
              torch.randn(30, 20, dtype=torch.double, requires_grad=True))
    without_bias = gradcheck(linear, inputs, eps=1e-6, atol=1e-4)
    bias = torch.randn(30, dtype=torch.double, requires_grad=True)
    with_bias = gradcheck(linear, inputs + (bias,), eps=1e-6, atol=1e-4)
    return without_bias and with_bias


def main():
    passed = check_gradients()
    print("gradcheck:", passed)
    torch.manual_seed(0)
    layer = Linear(5, 3)
    x = torch.randn(4, 5)
    y = layer(x)
    y.sum().backward()
    print(layer)
    print("output", list(y.shape), "grad_fn", y.grad_fn.name(),
          "weight.grad", list(layer.weight.grad.shape))
    return {"gradcheck": passed, "output": y, "layer": layer, "input": x}


if __name__ == "__main__":
    main()
