"""No gradient: backward is never called."""
import tracegrad as torch

x = torch.randn(8, 3)
w1 = torch.randn(3, 1, requires_grad=True)
loss = x.mm(w1).pow(2).mean()
print("loss:", loss.item(), "w1.grad:", w1.grad)
