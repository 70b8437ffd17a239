"""A training step with an in-place bug: backward fails with "modified by an inplace operation".

The hidden activation ``h`` is saved by ReLU (its backward needs its output) and by the
second matmul (the gradient for ``w2`` needs ``h``); then someone shifts it in place "for
the next experiment". PyTorch -- and tracegrad -- fail only later, inside
``loss.backward()``. ``tracegrad check`` names the in-place line and both saving lines:

    tracegrad check examples/inplace_bug.py
"""

import tracegrad as torch

torch.manual_seed(0)
x = torch.randn(8, 4)
target = torch.randn(8, 2)
w1 = torch.randn(4, 16, requires_grad=True)
w2 = torch.randn(16, 2, requires_grad=True)

h = x.mm(w1).relu()
prediction = h.mm(w2)
loss = (prediction - target).pow(2).mean()
h += 0.1  # the bug: h is saved for backward; write `h = h + 0.1`
print(f"loss {loss.item():.4f}")
loss.backward()
print("not reached: backward raised")
