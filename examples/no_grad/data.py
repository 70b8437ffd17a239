"""No gradient: the forward pass reads w1 through .data, which is outside the graph."""
import tracegrad as torch

x = torch.randn(8, 3)
w1 = torch.randn(3, 1, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
y = x.mm(w1.data) + b  # the cut: .data is a tensor outside the graph
loss = y.pow(2).mean()
loss.backward()
print("w1.grad:", w1.grad)
