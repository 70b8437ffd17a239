"""Where a NaN really comes from: the log of a value that reaches zero, and a gallery of
the other usual causes, one per line.

``spread`` is 0 for the row of identical values, so ``spread.log()`` gives -inf, and
-inf * 0 the loss NaN; its gradient is NaN/Inf too. ``tracegrad check`` names the line of
the first NaN, the cause computed from the values that op saw (Inf × 0 at element [1] of
'log_spread') and the line where the Inf came from (log of 0 at element [1] of 'spread'):

    tracegrad check examples/nan_bug.py          # NaN only
    tracegrad check --inf examples/nan_bug.py    # Inf counts too: exp overflow, x / 0, ...
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

# -- the other usual causes, one per line, each from finite values ---------------------------
x = torch.tensor([4.0, 0.0, -1.0, 9.0], requires_grad=True)
logits = torch.tensor([1.0, 100.0], requires_grad=True)
roots = x.sqrt()  # sqrt of a negative: NaN at [2]
ratio = x / x  # 0/0: NaN at [1]
powered = x.pow(1.5)  # a negative base to a fractional power: NaN at [2]
inverse = x.reciprocal()  # division by 0: Inf at [1]
grown = logits.exp()  # exp past 88.72 in float32: Inf at [1]
cancelled = grown - grown  # Inf - Inf: the first NaN made from that Inf, at [1]
print(f"NaN: {[bool(t.isnan().any()) for t in (roots, ratio, powered, cancelled)]}")
