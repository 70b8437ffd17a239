"""The PyTorch tutorial's two-layer net with a custom ReLU Function, on tracegrad.

A PyTorch program with one changed line: ``import tracegrad as torch``. The loss falls from
about 3e7 to about 1e-5 over 500 steps of plain gradient descent.

    python examples/two_layer_net.py
"""

import tracegrad as torch

N, D_in, H, D_out = 64, 1000, 100, 10
learning_rate = 1e-6


class MyReLU(torch.autograd.Function):
    """ReLU with a hand-written backward: it saves its input to know where to block."""

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


def make_data(dtype=torch.float, device="cpu"):
    """x, y, w1, w2 from a fixed seed (w1 and w2 require grad)."""
    torch.manual_seed(0)
    x = torch.randn(N, D_in, device=device, dtype=dtype)
    y = torch.randn(N, D_out, device=device, dtype=dtype)
    w1 = torch.randn(D_in, H, device=device, dtype=dtype, requires_grad=True)
    w2 = torch.randn(H, D_out, device=device, dtype=dtype, requires_grad=True)
    return x, y, w1, w2


def train(steps=500, data=None, verbose=False):
    """Run the tutorial's loop; return the loss of every step (and leave w1, w2 trained)."""
    x, y, w1, w2 = make_data() if data is None else data
    relu = MyReLU.apply
    history = []
    for t in range(steps):
        y_pred = relu(x.mm(w1)).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        history.append(loss.item())
        if verbose and t % 100 == 99:
            print(t, loss.item())
        loss.backward()
        with torch.no_grad():
            w1 -= learning_rate * w1.grad
            w2 -= learning_rate * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()
    return history


def main():
    history = train(verbose=True)
    print(f"loss: {history[0]:.4g} -> {history[-1]:.4g}")


if __name__ == "__main__":
    main()
