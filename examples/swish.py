"""Swish two ways: a plain module (autograd saves x and sigmoid(x)) and a memory-efficient
Function that saves only its input and recomputes sigmoid in backward.

    python examples/swish.py
"""

import tracegrad as torch
import tracegrad.nn as nn
from tracegrad.autograd import gradcheck


class Swish(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


class SwishImplementation(torch.autograd.Function):
    @staticmethod
    def forward(ctx, i):
        result = i * torch.sigmoid(i)
        ctx.save_for_backward(i)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        i = ctx.saved_tensors[0]
        sigmoid_i = torch.sigmoid(i)
        return grad_output * (sigmoid_i * (1 + i * (1 - sigmoid_i)))


class MemoryEfficientSwish(nn.Module):
    def forward(self, x):
        return SwishImplementation.apply(x)


def main():
    torch.manual_seed(0)
    data = torch.randn(4, 8)
    results = {}
    for module in (Swish(), MemoryEfficientSwish()):
        x = data.clone().requires_grad_()
        y = module(x)
        y.sum().backward()
        results[type(module).__name__] = (y, x.grad)
    (plain_out, plain_grad), (efficient_out, efficient_grad) = results.values()
    same = torch.allclose(plain_out, efficient_out) and torch.allclose(plain_grad,
                                                                         efficient_grad)
    x64 = torch.randn(3, 5, dtype=torch.double, requires_grad=True)
    passed = gradcheck(SwishImplementation.apply, (x64,), eps=1e-6, atol=1e-4)
    saved = len(SwishImplementation.apply(x64).grad_fn.saved_tensors)
    print("same output and gradient:", same, "| gradcheck:", passed,
          "| tensors saved by SwishImplementation:", saved)
    return {"same": same, "gradcheck": passed, "saved": saved, "input": data,
            "grad": efficient_grad}


if __name__ == "__main__":
    main()
