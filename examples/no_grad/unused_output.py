"""No gradient: the prediction made from w1 is never used in the loss (a wrong loss)."""
import tracegrad as torch

x = torch.randn(8, 3)
target = torch.randn(8, 1)
w1 = torch.randn(3, 1, requires_grad=True)
w2 = torch.randn(3, 1, requires_grad=True)
prediction = x.mm(w1)  # computed, then never used
baseline = x.mm(w2)
loss = (baseline - target).pow(2).mean()  # meant: prediction
loss.backward()
print("w1.grad:", w1.grad)
