"""A NaN that appears in forward and in backward: the log of a value that reaches zero.

``spread`` is 0 for the row of identical values, so ``spread.log()`` gives -inf, the loss
NaN, and its gradient NaN/Inf. ``tracegrad check`` names the line where the first non-finite
value appeared (and the node whose backward made the first non-finite gradient):

    tracegrad check examples/nan_bug.py
"""

import tracegrad as torch

scores = torch.tensor([[0.5, 1.5, 2.5],
                       [1.0, 1.0, 1.0]], requires_grad=True)
centered = scores - scores.mean(dim=1, keepdim=True)
spread = centered.pow(2).sum(dim=1)
log_spread = spread.log()  # the bug: log(0) = -inf; use (spread + 1e-6).log()
loss = (log_spread * centered.sum(dim=1)).sum()
loss.backward()
print(f"loss {loss.item()}, gradient has NaN: {bool(scores.grad.isnan().any())}")
