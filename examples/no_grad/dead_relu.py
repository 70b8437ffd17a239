"""Zero gradient: every input of the ReLU is negative (a dead ReLU), so w1.grad is 0."""
import tracegrad as torch

x = torch.rand(8, 3) + 0.1
w1 = -torch.rand(3, 4).add(0.1)
w1.requires_grad_()
w2 = torch.randn(4, 1, requires_grad=True)
target = torch.ones(8, 1)
h = x.mm(w1).relu()  # all inputs < 0: the ReLU passes no gradient
loss = (h.mm(w2) - target).pow(2).mean()
loss.backward()
print("w1.grad is all zero:", bool((w1.grad == 0).all()))
