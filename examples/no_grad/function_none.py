"""No gradient: a custom Function's backward returns None for the weight."""
import tracegrad as torch


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight):
        ctx.save_for_backward(input, weight)
        return input * weight

    @staticmethod
    def backward(ctx, grad_output):
        _, weight = ctx.saved_tensors
        return grad_output * weight, None  # forgot the weight's gradient


x = torch.randn(8, 3, requires_grad=True)
w1 = torch.randn(3, requires_grad=True)
loss = Scale.apply(x, w1).pow(2).sum()
loss.backward()
print("w1.grad:", w1.grad)
