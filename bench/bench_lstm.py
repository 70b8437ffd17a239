"""An LSTM language-model training step: tracegrad vs PyTorch (CPU, one thread).

Embedding(65, 128) -> LSTM(128, 256, batch_first) -> Linear(256, 65), cross entropy over
every position, Adam, gradient clipping; batch 32 of 64 characters. Both run the same code
with the same weights; the medians of interleaved repeats are compared.
Target: tracegrad / PyTorch <= 2.

    .venv/bin/python bench/bench_lstm.py [--repeats 15] [--batch 32] [--length 64] [--profile]
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
VOCABULARY, EMBEDDING, HIDDEN = 65, 128, 256


def make_arrays(batch: int, length: int):
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, VOCABULARY, size=(batch, length + 1)).astype(np.int64)
    return tokens[:, :-1].copy(), tokens[:, 1:].copy()


def build(lib, seed: int = 0):
    nn = lib.nn

    class LanguageModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(VOCABULARY, EMBEDDING)
            self.lstm = nn.LSTM(EMBEDDING, HIDDEN, batch_first=True)
            self.head = nn.Linear(HIDDEN, VOCABULARY)

        def forward(self, tokens):
            output, _ = self.lstm(self.embed(tokens))
            return self.head(output)

    model = LanguageModel()
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for param in model.parameters():
            bound = 1 / np.sqrt(HIDDEN)
            values = rng.uniform(-bound, bound, tuple(param.shape)).astype(np.float32)
            param.copy_(lib.from_numpy(values))
    return model


def step_function(lib, inputs, targets):
    """The usual training step, for either library (the same code)."""
    model = build(lib)
    loss_fn = lib.nn.CrossEntropyLoss()
    optimizer = lib.optim.Adam(model.parameters(), lr=1e-3)
    tokens, labels = lib.from_numpy(inputs), lib.from_numpy(targets).reshape(-1)

    def step() -> float:
        optimizer.zero_grad()
        logits = model(tokens)
        loss = loss_fn(logits.reshape(-1, VOCABULARY), labels)
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss.item()

    return step


def measure(batch: int, length: int, repeats: int) -> dict[str, list[float]]:
    inputs, targets = make_arrays(batch, length)
    return training_steps(lambda lib: step_function(lib, inputs, targets), 2, repeats)


def report(times: dict[str, list[float]], batch: int, length: int) -> float | None:
    print(f"LSTM language-model training step, batch {batch} x {length} characters, hidden "
          f"{HIDDEN}, Adam; median of {len(times['tracegrad'])} interleaved steps "
          f"(OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, torch threads 1)")
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


def profile(batch: int, length: int, steps: int = 5) -> None:
    import cProfile
    import pstats

    import tracegrad

    step = step_function(tracegrad, *make_arrays(batch, length))
    step()
    profiler = cProfile.Profile()
    profiler.runcall(lambda: [step() for _ in range(steps)])
    pstats.Stats(profiler).sort_stats("tottime").print_stats(20)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--profile", action="store_true", help="cProfile tracegrad's step")
    args = parser.parse_args(argv)
    if args.profile:
        profile(args.batch, args.length)
        return 0
    report(measure(args.batch, args.length, args.repeats), args.batch, args.length)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
