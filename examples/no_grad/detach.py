"""No gradient: the hidden layer is detached, so w1 never gets a gradient."""
import tracegrad as torch

x = torch.randn(8, 3)
w1 = torch.randn(3, 4, requires_grad=True)
w2 = torch.randn(4, 1, requires_grad=True)
h = x.mm(w1).relu()
features = h.detach()  # the cut: nothing flows back to w1 from here
loss = features.mm(w2).pow(2).mean()
loss.backward()
print("w1.grad:", w1.grad)
print("w2.grad is set:", w2.grad is not None)
