"""No gradient: zero_grad() runs between backward and the use of .grad."""
import tracegrad as torch

x = torch.randn(8, 3)
w1 = torch.randn(3, 1, requires_grad=True)
optimizer = torch.optim.SGD([w1], lr=0.1)
loss = x.mm(w1).pow(2).mean()
loss.backward()
optimizer.zero_grad()  # .grad is None again before anyone reads it
print("w1.grad:", w1.grad)
