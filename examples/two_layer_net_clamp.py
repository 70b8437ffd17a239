"""The two-layer net with autograd doing all of backward: ReLU is ``clamp(min=0)``.

    python examples/two_layer_net_clamp.py
"""

import tracegrad as torch

N, D_in, H, D_out = 64, 1000, 100, 10
learning_rate = 1e-6


def make_data(dtype=torch.float, device="cpu"):
    torch.manual_seed(0)
    x = torch.randn(N, D_in, device=device, dtype=dtype)
    y = torch.randn(N, D_out, device=device, dtype=dtype)
    w1 = torch.randn(D_in, H, device=device, dtype=dtype, requires_grad=True)
    w2 = torch.randn(H, D_out, device=device, dtype=dtype, requires_grad=True)
    return x, y, w1, w2


def train(steps=500, data=None, verbose=False):
    """The tutorial's loop; returns the loss of every step."""
    x, y, w1, w2 = make_data() if data is None else data
    history = []
    for t in range(steps):
        y_pred = x.mm(w1).clamp(min=0).mm(w2)
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
