"""No gradient: the layer ran under no_grad (meant for evaluation only)."""
import tracegrad as torch

x = torch.randn(8, 3)
w1 = torch.randn(3, 4, requires_grad=True)
w2 = torch.randn(4, 1, requires_grad=True)
with torch.no_grad():
    h = x.mm(w1).tanh()  # the cut: no node is built under no_grad
loss = h.mm(w2).pow(2).mean()
loss.backward()
print("w1.grad:", w1.grad)
