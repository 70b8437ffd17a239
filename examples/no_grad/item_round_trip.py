"""No gradient: the loss went through .item() and was rebuilt from the Python number."""
import tracegrad as torch

x = torch.randn(8, 3)
w1 = torch.randn(3, 1, requires_grad=True)
value = x.mm(w1).pow(2).mean().item()  # the value leaves the graph here
loss = torch.tensor(value, requires_grad=True)  # and comes back as a new leaf
loss.backward()
print("w1.grad:", w1.grad)
