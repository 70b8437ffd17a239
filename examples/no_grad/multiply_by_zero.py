"""Zero gradient: the branch through w1 is multiplied by a mask that is all zeros."""
import tracegrad as torch

x = torch.randn(8, 3)
w1 = torch.randn(3, 1, requires_grad=True)
mask = torch.zeros(8, 1)  # meant: ones
loss = (x.mm(w1) * mask).sum()
loss.backward()
print("w1.grad is all zero:", bool((w1.grad == 0).all()))
