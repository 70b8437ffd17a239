"""Fit ``y = a + b x + c x^2 + d x^3`` to ``sin(x) + cos(x) / 2`` on [-pi, pi] with every
optimizer (the PyTorch tutorial's polynomial, one optimizer after another), each under a
learning rate schedule, and L-BFGS with a closure.

    .venv/bin/python examples/polynomial_fit.py
"""

from __future__ import annotations

import math

import tracegrad as torch

# optimizer name -> (its options, the schedule that drives it)
OPTIMIZERS = {
    "SGD": ({"lr": 1e-3, "momentum": 0.9, "nesterov": True},
            lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=100, gamma=0.5)),
    "Adam": ({"lr": 5e-2, "amsgrad": True},
             lambda opt: torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=300)),
    "AdamW": ({"lr": 5e-2, "weight_decay": 1e-3},
              lambda opt: torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.995)),
    "RMSprop": ({"lr": 1e-2, "centered": True},
                lambda opt: torch.optim.lr_scheduler.MultiStepLR(opt, [100, 200], gamma=0.3)),
    "Adagrad": ({"lr": 0.5}, lambda opt: torch.optim.lr_scheduler.LinearLR(
        opt, start_factor=0.2, total_iters=50)),
    "Adam ": ({"lr": 2e-2}, lambda opt: torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        opt, T_0=100, T_mult=2)),
    "Adadelta": ({"lr": 1.0}, lambda opt: torch.optim.lr_scheduler.ConstantLR(
        opt, factor=0.5, total_iters=50)),
    "Adamax": ({"lr": 5e-2}, lambda opt: torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=0.1, total_steps=300)),
    "NAdam": ({"lr": 5e-2}, lambda opt: torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: 1 / (1 + step / 100))),
    "RAdam": ({"lr": 2e-2}, lambda opt: torch.optim.lr_scheduler.ReduceLROnPlateau(
        opt, factor=0.5, patience=20, threshold=0.05)),
    "plain SGD": ({"lr": 2e-3}, lambda opt: torch.optim.lr_scheduler.SequentialLR(
        opt, [torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=20),
              torch.optim.lr_scheduler.PolynomialLR(opt, total_iters=280)], milestones=[20])),
}


def make_data(count: int = 200):
    x = torch.linspace(-math.pi, math.pi, count, dtype=torch.float64)
    return x, torch.sin(x) + torch.cos(x) / 2


def predict(coefficients, x):
    a, b, c, d = coefficients
    return a + b * x + c * x ** 2 + d * x ** 3


def fit(name: str, steps: int = 300, data=None) -> tuple[float, list]:
    """Fit with optimizer ``name``; returns (final loss, coefficients)."""
    x, y = data if data is not None else make_data()
    coefficients = [torch.zeros((), dtype=torch.float64, requires_grad=True) for _ in range(4)]
    if name == "LBFGS":
        optimizer = torch.optim.LBFGS(coefficients, line_search_fn="strong_wolfe")

        def closure():
            optimizer.zero_grad()
            loss = ((predict(coefficients, x) - y) ** 2).mean()
            loss.backward()
            return loss

        for _ in range(5):
            optimizer.step(closure)
    else:
        options, schedule = OPTIMIZERS[name]
        optimizer = getattr(torch.optim, name.split()[-1].strip())(coefficients, **options)
        scheduler = schedule(optimizer)
        plateau = isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau)
        for _ in range(steps):
            optimizer.zero_grad()
            loss = ((predict(coefficients, x) - y) ** 2).mean()
            loss.backward()
            optimizer.step()
            if plateau:
                scheduler.step(loss.item())
            else:
                scheduler.step()
    with torch.no_grad():
        final = ((predict(coefficients, x) - y) ** 2).mean().item()
    return final, [c.item() for c in coefficients]


def main() -> dict:
    results = {}
    for name in [*OPTIMIZERS, "LBFGS"]:
        loss, coefficients = fit(name)
        results[name] = loss
        a, b, c, d = coefficients
        print(f"{name:13s} loss {loss:.2e}   y = {a:+.3f} {b:+.3f} x {c:+.3f} x^2 {d:+.3f} x^3")
    return results


if __name__ == "__main__":
    main()
