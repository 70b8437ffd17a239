"""The two-layer net with backprop written by hand in plain NumPy: no autograd at all.

The baseline of bench/bench_two_layer.py. It draws its data from the same generator as
``tracegrad.manual_seed(0)`` (NumPy's default_rng(0), float64 draws cast to float32), so its
numbers match examples/two_layer_net.py.

    python examples/two_layer_net_numpy.py
"""

import numpy as np

N, D_in, H, D_out = 64, 1000, 100, 10
learning_rate = 1e-6


def make_data(dtype=np.float32):
    rng = np.random.default_rng(0)
    x, y, w1, w2 = (rng.standard_normal(shape, dtype=np.float64).astype(dtype)
                    for shape in ((N, D_in), (N, D_out), (D_in, H), (H, D_out)))
    return x, y, w1, w2


def train(steps=500, data=None, verbose=False):
    """Forward, loss, hand-written backward and update; returns the loss of every step."""
    x, y, w1, w2 = make_data() if data is None else data
    history = []
    for t in range(steps):
        h = x.dot(w1)
        h_relu = np.maximum(h, 0)
        y_pred = h_relu.dot(w2)
        loss = np.square(y_pred - y).sum()
        history.append(loss.item())
        if verbose and t % 100 == 99:
            print(t, loss)
        grad_y_pred = 2.0 * (y_pred - y)
        grad_w2 = h_relu.T.dot(grad_y_pred)
        grad_h_relu = grad_y_pred.dot(w2.T)
        grad_h = grad_h_relu.copy()
        grad_h[h < 0] = 0
        grad_w1 = x.T.dot(grad_h)
        w1 -= learning_rate * grad_w1
        w2 -= learning_rate * grad_w2
    return history


def main():
    history = train(verbose=True)
    print(f"loss: {history[0]:.4g} -> {history[-1]:.4g}")


if __name__ == "__main__":
    main()
