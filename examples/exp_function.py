"""A custom Exp Function that saves its *output* for backward (d/dx e^x = e^x).

    python examples/exp_function.py
"""

import tracegrad as torch
from tracegrad.autograd import Function, gradcheck


class Exp(Function):
    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


def main():
    torch.manual_seed(0)
    x = torch.randn(5, requires_grad=True)
    y = Exp.apply(x)
    y.sum().backward()
    matches = torch.allclose(x.grad, x.detach().exp())
    x64 = torch.randn(6, dtype=torch.double, requires_grad=True)
    passed = gradcheck(Exp.apply, (x64,), eps=1e-6, atol=1e-4)
    print("grad_fn:", y.grad_fn.name(), "| grad == exp(x):", matches, "| gradcheck:", passed)
    return {"gradcheck": passed, "grad_matches": matches, "input": x, "output": y}


if __name__ == "__main__":
    main()
