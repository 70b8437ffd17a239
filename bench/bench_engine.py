"""Engine overhead: tracegrad vs PyTorch CPU vs raw NumPy, side by side, in one run.

    .venv/bin/python bench/bench_engine.py            # OMP_NUM_THREADS=1, then the default
    .venv/bin/python bench/bench_engine.py --quick    # fewer repeats
    .venv/bin/python bench/bench_engine.py --profile  # cProfile of tracegrad's hot path

(a) per-op overhead: a chain of 2,000 elementwise ops on shape (8,), forward and backward,
    in microseconds per op (best of several runs);
(b) a 100,000-op chain: forward and backward seconds and peak memory (ru_maxrss of a fresh
    process: total, and growth over the process after imports), no RecursionError.

Every measurement runs in a child process of its own, so one library's allocations and
thread pools never colour another's figures. PyTorch is a reference only: it is skipped
when not installed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

CHAIN = 2_000
DEEP = 100_000
WIDTH = 8


# -- the workloads, one per library ------------------------------------------------------
def _autograd_chain(library, length: int):
    """The chain on tracegrad or torch: the same source, as tracegrad promises."""
    w = library.full((WIDTH,), 0.999)
    b = library.full((WIDTH,), 0.001)
    x = library.ones(WIDTH, requires_grad=True)

    def forward():
        y = x
        for index in range(length):
            y = y * w if index % 2 == 0 else y + b
        return y.sum()

    def backward(loss):
        loss.backward()

    return forward, backward


def _tracegrad_chain(length: int):
    import tracegrad

    return _autograd_chain(tracegrad, length)


def _torch_chain(length: int):
    import torch

    torch.set_grad_enabled(True)
    return _autograd_chain(torch, length)


def _numpy_chain(length: int):
    """The same math by hand: forward keeps what backward needs, backward walks it back."""
    import numpy as np

    w = np.full(WIDTH, 0.999, dtype=np.float32)
    b = np.full(WIDTH, 0.001, dtype=np.float32)
    x = np.ones(WIDTH, dtype=np.float32)

    def forward():
        y = x
        saved = []
        for index in range(length):
            if index % 2 == 0:
                saved.append(w)
                y = y * w
            else:
                saved.append(None)
                y = y + b
        return y.sum(), saved

    def backward(result):
        _, saved = result
        grad = np.ones(WIDTH, dtype=np.float32)
        for factor in reversed(saved):
            if factor is not None:
                grad = grad * factor
        return grad

    return forward, backward


WORKLOADS = {"tracegrad": _tracegrad_chain, "torch": _torch_chain, "numpy": _numpy_chain}


# -- children ------------------------------------------------------------------------------
def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def child_per_op(library: str, repeats: int) -> dict:
    forward, backward = WORKLOADS[library](CHAIN)
    backward(forward())  # warm up
    best_forward = best_backward = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        result = forward()
        middle = time.perf_counter()
        backward(result)
        ended = time.perf_counter()
        best_forward = min(best_forward, middle - started)
        best_backward = min(best_backward, ended - middle)
    return {"forward_us": best_forward / CHAIN * 1e6, "backward_us": best_backward / CHAIN * 1e6}


def child_deep(library: str) -> dict:
    forward, backward = WORKLOADS[library](10)
    backward(forward())  # imports and first-call costs out of the way
    baseline = _maxrss_mb()
    forward, backward = WORKLOADS[library](DEEP)
    started = time.perf_counter()
    result = forward()
    middle = time.perf_counter()
    backward(result)
    ended = time.perf_counter()
    peak = _maxrss_mb()
    return {"forward_s": middle - started, "backward_s": ended - middle, "peak_mb": peak,
            "growth_mb": peak - baseline}


def _run_child(kind: str, library: str, threads: str | None, repeats: int) -> dict | None:
    env = dict(os.environ)
    if threads is None:
        env.pop("OMP_NUM_THREADS", None)
    else:
        env["OMP_NUM_THREADS"] = threads
    command = [sys.executable, __file__, "--child", kind, library, "--repeats", str(repeats)]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        if "ModuleNotFoundError" in done.stderr:
            return None
        raise RuntimeError(f"{kind}/{library} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- the report ------------------------------------------------------------------------------
def _ratio(mine: float, theirs: float | None) -> str:
    return f"{mine / theirs:5.2f}x" if theirs else "   - "


def report(threads: str | None, repeats: int) -> None:
    label = f"OMP_NUM_THREADS={threads}" if threads else "default threads"
    print(f"\n== {label} ==")
    per_op = {lib: _run_child("per_op", lib, threads, repeats) for lib in WORKLOADS}
    print(f"(a) per-op overhead, chain of {CHAIN:,} elementwise ops on shape ({WIDTH},), "
          f"best of {repeats}")
    print(f"    {'':10} {'forward µs/op':>14} {'backward µs/op':>15}")
    for lib, figures in per_op.items():
        if figures is None:
            print(f"    {lib:10} (not installed)")
            continue
        print(f"    {lib:10} {figures['forward_us']:14.2f} {figures['backward_us']:15.2f}")
    ours, torch = per_op["tracegrad"], per_op["torch"]
    if torch:
        print(f"    tracegrad / torch: forward {_ratio(ours['forward_us'], torch['forward_us'])}"
              f", backward {_ratio(ours['backward_us'], torch['backward_us'])}")
    numpy = per_op["numpy"]
    print(f"    tracegrad / numpy: forward {_ratio(ours['forward_us'], numpy['forward_us'])}, "
          f"backward {_ratio(ours['backward_us'], numpy['backward_us'])}")

    deep = {lib: _run_child("deep", lib, threads, 1) for lib in WORKLOADS}
    print(f"(b) a {DEEP:,}-op chain, forward + backward (a fresh process each)")
    print(f"    {'':10} {'forward s':>10} {'backward s':>11} {'peak MB':>9} {'growth MB':>10}")
    for lib, figures in deep.items():
        if figures is None:
            print(f"    {lib:10} (not installed)")
            continue
        print(f"    {lib:10} {figures['forward_s']:10.3f} {figures['backward_s']:11.3f} "
              f"{figures['peak_mb']:9.0f} {figures['growth_mb']:10.0f}")
    ours, torch = deep["tracegrad"], deep["torch"]
    if torch:
        print(f"    tracegrad / torch: forward {_ratio(ours['forward_s'], torch['forward_s'])}, "
              f"backward {_ratio(ours['backward_s'], torch['backward_s'])}, peak memory "
              f"{_ratio(ours['peak_mb'], torch['peak_mb'])}, growth "
              f"{_ratio(ours['growth_mb'], torch['growth_mb'])}")


def profile(repeats: int) -> None:
    import cProfile
    import pstats

    forward, backward = _tracegrad_chain(CHAIN)
    backward(forward())
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(repeats):
        backward(forward())
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(18)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--profile", action="store_true", help="cProfile tracegrad's chain")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--child", nargs=2, metavar=("KIND", "LIBRARY"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    repeats = args.repeats or (5 if args.quick else 20)
    if args.child:
        kind, library = args.child
        figures = child_per_op(library, repeats) if kind == "per_op" else child_deep(library)
        print(json.dumps(figures))
        return 0
    if args.profile:
        profile(repeats)
        return 0
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    for threads in ("1", None):
        report(threads, repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
