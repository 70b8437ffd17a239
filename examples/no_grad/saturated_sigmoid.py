"""Zero gradient: the sigmoid's inputs are so large that its slope is 0 in float32."""
import tracegrad as torch

x = torch.rand(8, 3) + 1.0
w1 = torch.full((3, 1), 40.0, requires_grad=True)
loss = x.mm(w1).sigmoid().sum()  # sigmoid(>= 120) == 1.0 exactly: slope 0
loss.backward()
print("w1.grad is all zero:", bool((w1.grad == 0).all()))
