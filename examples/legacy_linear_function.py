"""The pre-0.4 "Extending PyTorch" note, on tracegrad: LinearFunction with
``ctx.saved_variables``, MulConstant, gradcheck on Variables, and a Linear module whose
weights come from ``torch.Tensor(out, in)`` and ``.data.uniform_``.

Source: PyTorch's docs/source/notes/extending.rst as of PyTorch 0.3 (the LinearFunction
as quoted from those docs at discuss.pytorch.org/t/9039; the gradcheck and module
listings from the same note, as in the docs source of that era, e.g. boscotsang/pytorch).
The listings are verbatim except the import lines (``import tracegrad as torch``,
``import tracegrad.nn as nn``, ``from tracegrad.autograd import ...``); the last block,
marked, runs them.

In torch 2.13 ``ctx.saved_variables`` still works (with a DeprecationWarning) and
``torch.Tensor(3, 5)`` is an uninitialized 3x5 tensor (zeros in tracegrad).

    python examples/legacy_linear_function.py
"""
# ruff: noqa: PLR0402, UP008 - the program's own style, kept verbatim

import tracegrad as torch
import tracegrad.nn as nn
from tracegrad.autograd import Function, Variable


# Inherit from Function
class LinearFunction(Function):

    # Note that both forward and backward are @staticmethods
    @staticmethod
    # bias is an optional argument
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    # This function has only a single output, so it gets only one gradient
    @staticmethod
    def backward(ctx, grad_output):
        # This is a pattern that is very convenient - at the top of backward
        # unpack saved_tensors and initialize all gradients w.r.t. inputs to
        # None. Thanks to the fact that additional trailing Nones are
        # ignored, the return statement is simple even when the function has
        # optional inputs.
        input, weight, bias = ctx.saved_variables
        grad_input = grad_weight = grad_bias = None

        # These needs_input_grad checks are optional and there only to
        # improve efficiency. If you want to make your code simpler, you can
        # skip them. Returning gradients for inputs that don't require it is
        # not an error.
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0).squeeze(0)

        return grad_input, grad_weight, grad_bias


linear = LinearFunction.apply


class MulConstant(Function):
    @staticmethod
    def forward(ctx, tensor, constant):
        # ctx is a context object that can be used to stash information
        # for backward computation
        ctx.constant = constant
        return tensor * constant

    @staticmethod
    def backward(ctx, grad_output):
        # We return as many input gradients as there were arguments.
        # Gradients of non-Tensor arguments to forward must be None.
        return grad_output * ctx.constant, None


from tracegrad.autograd import gradcheck

# gradchek takes a tuple of tensor as input, check if your gradient
# evaluated with these tensors are close enough to numerical
# approximations and returns True if they all verify this condition.
input = (Variable(torch.randn(20,20).double(), requires_grad=True), Variable(torch.randn(30,20).double(), requires_grad=True),)
test = gradcheck(LinearFunction.apply, input, eps=1e-6, atol=1e-4)
print(test)


class Linear(nn.Module):
    def __init__(self, input_features, output_features, bias=True):
        super(Linear, self).__init__()
        self.input_features = input_features
        self.output_features = output_features

        # nn.Parameter is a special kind of Variable, that will get
        # automatically registered as Module's parameter once it's assigned
        # as an attribute. Parameters and buffers need to be registered, or
        # they won't appear in .parameters() (doesn't apply to buffers), and
        # won't be converted when e.g. .cuda() is called. You can use
        # .register_buffer() to register buffers.
        # nn.Parameters can never be volatile and, different than Variables,
        # they require gradients by default.
        self.weight = nn.Parameter(torch.Tensor(output_features, input_features))
        if bias:
            self.bias = nn.Parameter(torch.Tensor(output_features))
        else:
            # You should always register all possible parameters, but the
            # optional ones can be None if you want.
            self.register_parameter('bias', None)

        # Not a very smart way to initialize weights
        self.weight.data.uniform_(-0.1, 0.1)
        if bias is not None:
            self.bias.data.uniform_(-0.1, 0.1)

    def forward(self, input):
        # See the autograd section for explanation of what happens here.
        return LinearFunction.apply(input, self.weight, self.bias)


# -- tracegrad: run the note's listings (not part of the note) ----------------------------
layer = Linear(5, 3)
print("weight", list(layer.weight.size()), "bias", list(layer.bias.size()))
x = Variable(torch.randn(4, 5))
out = layer(x)
out.sum().backward()
print("out", list(out.size()), out.grad_fn.name())
print("weight.grad", layer.weight.grad.sum().item())
doubled = MulConstant.apply(Variable(torch.ones(2), requires_grad=True), 2.0)
print("MulConstant", doubled.data.tolist(), doubled.grad_fn.name())
