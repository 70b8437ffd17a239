"""GlobalMaxPool: max over h*w per (sample, channel), returning (max_val, indices); backward
scatters the gradient into a zero tensor at the argmax positions.

    python examples/global_max_pool.py
"""

import tracegrad as torch
from tracegrad.autograd import gradcheck


class GlobalMaxPool(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        bs, c, h, w = input.shape
        max_val, indices = input.view(bs, c, h * w).max(dim=2)
        ctx.save_for_backward(indices)
        ctx.input_shape = input.shape
        ctx.mark_non_differentiable(indices)
        return max_val, indices

    @staticmethod
    def backward(ctx, grad_max, grad_indices):
        (indices,) = ctx.saved_tensors
        bs, c, h, w = ctx.input_shape
        grad_input = torch.zeros(bs, c, h * w, dtype=grad_max.dtype)
        grad_input.scatter_(2, indices.unsqueeze(2), grad_max.unsqueeze(2))
        return grad_input.view(bs, c, h, w)


def main():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 4, 5, dtype=torch.double, requires_grad=True)
    max_val, indices = GlobalMaxPool.apply(x)
    max_val.sum().backward()
    # Exactly one 1 per (sample, channel), at the argmax.
    ones_per_channel = x.grad.view(2, 3, 20).sum(dim=2)
    x64 = torch.randn(2, 3, 4, 5, dtype=torch.double, requires_grad=True)
    passed = gradcheck(lambda t: GlobalMaxPool.apply(t)[0], (x64,), eps=1e-6, atol=1e-4)
    print("max_val", list(max_val.shape), "indices", indices.dtype, list(indices.shape),
          "| indices need grad:", indices.requires_grad, "| gradcheck:", passed)
    return {"gradcheck": passed, "max_val": max_val, "indices": indices, "input": x,
            "ones_per_channel": ones_per_channel}


if __name__ == "__main__":
    main()
