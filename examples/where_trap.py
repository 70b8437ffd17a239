"""The where trap: ``where`` hides a NaN/Inf in forward, and backward brings it back.

``where(x > 0, x.log(), 0)`` looks safe: the log of 0 (-inf) is dropped. But backward runs
through the dropped branch too: where gives it a 0 gradient, and log's derivative at 0 is
1/0 = Inf, so 0 × Inf = NaN lands in ``x.grad``. ``tracegrad check`` names the log line, the
where line and the fix: mask the input, not the output.

    tracegrad check examples/where_trap.py
"""

import tracegrad as torch

x = torch.tensor([4.0, 1.0, 0.0, 2.0], requires_grad=True)
masked_log = torch.where(x > 0, x.log(), torch.zeros_like(x))  # the trap
masked_log.sum().backward()
print(f"gradient: {x.grad.tolist()}")  # NaN at [2], though the forward value was finite

# The fix: the log never sees the values the mask drops.
y = x.detach().requires_grad_()
safe_input = torch.where(y > 0, y, torch.ones_like(y))
safe_log = torch.where(y > 0, safe_input.log(), torch.zeros_like(y))
safe_log.sum().backward()
print(f"gradient with the fix: {y.grad.tolist()}")
