"""No gradient: w1 was made without requires_grad=True."""
import tracegrad as torch

x = torch.randn(8, 3)
w1 = torch.randn(3, 4)  # forgot requires_grad=True
w2 = torch.randn(4, 1, requires_grad=True)
loss = x.mm(w1).mm(w2).pow(2).mean()
loss.backward()
print("w1.grad:", w1.grad)
