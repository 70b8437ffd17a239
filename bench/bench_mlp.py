"""A 2048-wide two-layer MLP training step: tracegrad (nn.Linear, ReLU, MSELoss, SGD) vs
the same math written in plain NumPy vs PyTorch.

batch 256, 2048 -> 2048 -> 2048, relu, mean squared error, one SGD update. Best of N steps,
under OMP_NUM_THREADS=1 and the default thread count. Target: tracegrad / NumPy <= 1.05.

    .venv/bin/python bench/bench_mlp.py [--repeats 10] [--width 2048] [--batch 256] [--profile]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from _harness import best_of, describe_threads, run_each_thread_setting, torch_or_none

TARGET = 1.05
LEARNING_RATE = 1e-3


def make_arrays(batch: int, width: int):
    rng = np.random.default_rng(0)
    bound = 1 / np.sqrt(width)
    x = rng.standard_normal((batch, width), dtype=np.float32)
    y = rng.standard_normal((batch, width), dtype=np.float32)
    weights = [rng.uniform(-bound, bound, shape).astype(np.float32)
               for shape in ((width, width), (width,), (width, width), (width,))]
    return x, y, weights


class NumpyMLP:
    """Forward, backward and SGD for the same network, by hand: the floor to compare with."""

    def __init__(self, weights):
        self.w1, self.b1, self.w2, self.b2 = (w.copy() for w in weights)

    def step(self, x, y) -> float:
        h = x @ self.w1.T
        h += self.b1
        r = np.maximum(h, 0)
        out = r @ self.w2.T
        out += self.b2
        diff = out - y
        loss = float(np.square(diff).mean())
        grad_out = diff * (2.0 / diff.size)
        grad_w2 = grad_out.T @ r
        grad_b2 = grad_out.sum(0)
        grad_h = grad_out @ self.w2
        grad_h *= h > 0
        grad_w1 = grad_h.T @ x
        grad_b1 = grad_h.sum(0)
        for param, grad in ((self.w1, grad_w1), (self.b1, grad_b1), (self.w2, grad_w2),
                            (self.b2, grad_b2)):
            param -= LEARNING_RATE * grad
        return loss


def tracegrad_step_function(x, y, weights):
    import tracegrad as torch
    import tracegrad.nn as nn

    return _framework_step(torch, nn, x, y, weights)


def torch_step_function(torch, x, y, weights):
    return _framework_step(torch, torch.nn, x, y, weights)


def _framework_step(torch, nn, x, y, weights):
    """The usual PyTorch training step, for either library (same code, as the examples)."""
    width = x.shape[1]
    model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width))
    with torch.no_grad():
        for param, array in zip(model.parameters(), weights):
            param.copy_(torch.from_numpy(array.copy()))
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)
    inputs, targets = torch.from_numpy(x), torch.from_numpy(y)

    def step() -> float:
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


def measure(batch: int, width: int, repeats: int) -> dict[str, float]:
    x, y, weights = make_arrays(batch, width)
    numpy_mlp = NumpyMLP(weights)
    steps = {"numpy": lambda: numpy_mlp.step(x, y),
             "tracegrad": tracegrad_step_function(x, y, weights)}
    torch = torch_or_none()
    if torch is not None:
        steps["pytorch"] = torch_step_function(torch, x, y, weights)
    first_losses = {name: step() for name, step in steps.items()}  # warm up, and check
    reference = first_losses["numpy"]
    for name, loss in first_losses.items():
        if not np.isclose(loss, reference, rtol=1e-3):
            raise AssertionError(f"{name} computed loss {loss}, numpy {reference}")
    # Interleave the contenders round by round so a burst of load hits all of them alike.
    best = {name: float("inf") for name in steps}
    for _ in range(repeats):
        for name, step in steps.items():
            best[name] = min(best[name], best_of(step, 1))
    return best


def report(times: dict[str, float], batch: int, width: int) -> None:
    print(f"MLP step, batch {batch}, {width}->{width}->{width}, relu, MSE, SGD; best of N "
          f"(OMP_NUM_THREADS={describe_threads()})")
    for name, seconds in times.items():
        print(f"  {name:<10} {seconds * 1e3:8.2f} ms/step")
    ratio = times["tracegrad"] / times["numpy"]
    verdict = "meets" if ratio <= TARGET else "MISSES"
    print(f"  tracegrad / numpy   = {ratio:.3f}  ({verdict} target <= {TARGET})")
    if "pytorch" in times:
        print(f"  tracegrad / pytorch = {times['tracegrad'] / times['pytorch']:.3f}")


def profile(batch: int, width: int, steps: int = 10) -> None:
    import cProfile
    import pstats

    x, y, weights = make_arrays(batch, width)
    step = tracegrad_step_function(x, y, weights)
    profiler = cProfile.Profile()
    profiler.runcall(lambda: [step() for _ in range(steps)])
    pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--profile", action="store_true", help="cProfile tracegrad's step")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.profile:
        profile(args.batch, args.width)
        return 0
    if not args.child:
        return run_each_thread_setting(__file__, argv)
    report(measure(args.batch, args.width, args.repeats), args.batch, args.width)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
