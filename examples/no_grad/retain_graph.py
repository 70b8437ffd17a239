"""No gradient: a second backward through a freed graph fails before reaching w1."""
import tracegrad as torch

x = torch.randn(8, 3)
w1 = torch.randn(3, 4, requires_grad=True)
h = x.mm(w1).sigmoid()
auxiliary = h.mean()
auxiliary.backward()  # frees the graph of h (retain_graph=True was needed)
w1.grad = None
loss = h.pow(2).sum()
try:
    loss.backward()
except RuntimeError as error:
    print("backward failed:", str(error).splitlines()[0])
print("w1.grad:", w1.grad)
