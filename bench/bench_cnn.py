"""A LeNet-style CNN training step: tracegrad vs PyTorch (CPU, one thread), side by side.

conv(1->6, 5x5) relu maxpool(2) conv(6->16, 5x5) relu maxpool(2) fc(256->120) relu
fc(120->84) relu fc(84->10), cross entropy, SGD with momentum; batch 64 of 1x28x28. Both
run the same code with the same weights; the medians of interleaved repeats are compared.
Target: tracegrad / PyTorch <= 2.

    .venv/bin/python bench/bench_cnn.py [--repeats 30] [--batch 64] [--profile]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before NumPy loads: one BLAS thread

import argparse
import statistics
import sys

import numpy as np
from _harness import training_steps

TARGET = 2.0


def make_arrays(batch: int):
    rng = np.random.default_rng(0)
    images = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
    labels = rng.integers(0, 10, size=batch).astype(np.int64)
    return images, labels


def build(lib, seed: int = 0):
    nn = lib.nn
    model = nn.Sequential(
        nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for param in model.parameters():
            fan_in = int(np.prod(param.shape[1:])) if param.ndim > 1 else 16
            bound = 1 / np.sqrt(fan_in)
            values = rng.uniform(-bound, bound, tuple(param.shape)).astype(np.float32)
            param.copy_(lib.from_numpy(values))
    return model


def step_function(lib, images, labels):
    """The usual training step, for either library (the same code)."""
    model = build(lib)
    loss_fn = lib.nn.CrossEntropyLoss()
    optimizer = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    inputs, targets = lib.from_numpy(images), lib.from_numpy(labels)

    def step() -> float:
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


def measure(batch: int, repeats: int) -> dict[str, list[float]]:
    images, labels = make_arrays(batch)
    return training_steps(lambda lib: step_function(lib, images, labels), 3, repeats)


def report(times: dict[str, list[float]], batch: int) -> float | None:
    print(f"LeNet-style CNN training step, batch {batch} of 1x28x28, SGD momentum; median of "
          f"{len(times['tracegrad'])} interleaved steps (OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS')}, torch threads 1)")
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, seconds in medians.items():
        print(f"  {name:<10} {seconds * 1e3:8.2f} ms/step")
    if "pytorch" not in medians:
        print("  (torch is not installed: no ratio)")
        return None
    ratio = medians["tracegrad"] / medians["pytorch"]
    verdict = "meets" if ratio <= TARGET else "MISSES"
    print(f"  tracegrad / pytorch = {ratio:.2f}  ({verdict} target <= {TARGET})")
    return ratio


def profile(batch: int, steps: int = 20) -> None:
    import cProfile
    import pstats

    import tracegrad

    step = step_function(tracegrad, *make_arrays(batch))
    step()
    profiler = cProfile.Profile()
    profiler.runcall(lambda: [step() for _ in range(steps)])
    pstats.Stats(profiler).sort_stats("tottime").print_stats(20)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--profile", action="store_true", help="cProfile tracegrad's step")
    args = parser.parse_args(argv)
    if args.profile:
        profile(args.batch)
        return 0
    report(measure(args.batch, args.repeats), args.batch)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
