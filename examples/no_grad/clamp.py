"""Zero gradient: every value is clamped, so no gradient passes the clamp."""
import tracegrad as torch

x = torch.rand(8, 3) + 0.1
w1 = torch.rand(3, 1, requires_grad=True)
loss = x.mm(w1).clamp(max=-1.0).sum()  # all values above max: clamped
loss.backward()
print("w1.grad is all zero:", bool((w1.grad == 0).all()))
