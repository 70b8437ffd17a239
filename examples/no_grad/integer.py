"""No gradient: the path to w1 goes through argmax, whose result is an integer tensor."""
import tracegrad as torch

x = torch.randn(8, 3)
w1 = torch.randn(3, 4, requires_grad=True)
scale = torch.ones(1, requires_grad=True)
choice = x.mm(w1).argmax(dim=1)  # integers: no gradient flows through them
loss = (choice.float() * scale).sum()
loss.backward()
print("w1.grad:", w1.grad)
