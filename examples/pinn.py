"""A physics-informed neural network: a small MLP ``u(x)`` trained so that
``u''(x) = -pi**2 sin(pi x)`` on [0, 1] with ``u(0) = u(1) = 0`` (the solution is
``sin(pi x)``).

The second derivative comes from autograd itself: ``autograd.grad`` of the network's
output with respect to its input, with ``create_graph=True`` so that the derivative can be
differentiated again -- and then once more, by the optimizer's backward pass. Adam first,
then a few L-BFGS steps with a strong-Wolfe line search.

    .venv/bin/python examples/pinn.py
"""

from __future__ import annotations

import math

import numpy as np

import tracegrad as torch
import tracegrad.nn as nn  # noqa: PLR0402 - the line the tests swap for torch.nn


def make_model(width: int = 16, seed: int = 0) -> nn.Module:
    model = nn.Sequential(nn.Linear(1, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(),
                          nn.Linear(width, 1)).double()
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for param in model.parameters():
            fan_in = param.shape[1] if param.ndim > 1 else param.shape[0]
            bound = math.sqrt(6.0 / (fan_in + (param.shape[0] if param.ndim > 1 else 1)))
            param.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(param.shape))))
    return model


def residual_loss(model: nn.Module, x):
    """mean((u'' + pi^2 sin(pi x))^2) + the boundary conditions, squared."""
    x = x.clone().requires_grad_(True)
    u = model(x)
    (du,) = torch.autograd.grad(u.sum(), x, create_graph=True)
    (d2u,) = torch.autograd.grad(du.sum(), x, create_graph=True)
    interior = ((d2u + math.pi ** 2 * torch.sin(math.pi * x)) ** 2).mean()
    edges = model(torch.tensor([[0.0], [1.0]], dtype=torch.float64))
    return interior + (edges ** 2).mean()


def train(adam_steps: int = 150, lbfgs_steps: int = 4, points: int = 32, model=None):
    """Returns (losses, model): one loss per Adam step, then one per L-BFGS step."""
    model = model if model is not None else make_model()
    x = torch.linspace(0.0, 1.0, points, dtype=torch.float64).reshape(-1, 1)
    losses = []
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(adam_steps):
        optimizer.zero_grad()
        loss = residual_loss(model, x)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    refine = torch.optim.LBFGS(model.parameters(), max_iter=10, line_search_fn="strong_wolfe")

    def closure():
        refine.zero_grad()
        value = residual_loss(model, x)
        value.backward()
        return value

    for _ in range(lbfgs_steps):
        refine.step(closure)
        losses.append(residual_loss(model, x).item())
    return losses, model


def max_error(model: nn.Module) -> float:
    x = torch.linspace(0.0, 1.0, 101, dtype=torch.float64).reshape(-1, 1)
    with torch.no_grad():
        return float((model(x) - torch.sin(math.pi * x)).abs().max())


def main() -> dict:
    losses, model = train()
    error = max_error(model)
    print(f"residual loss {losses[0]:.3e} -> {losses[-1]:.3e}")
    print(f"max |u - sin(pi x)| = {error:.2e}")
    return {"losses": losses, "error": error}


if __name__ == "__main__":
    main()
