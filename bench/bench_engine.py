"""Engine overhead: tracegrad vs PyTorch CPU vs raw NumPy, and how it scales (issue 14).

    .venv/bin/python bench/bench_engine.py            # all three parts
    .venv/bin/python bench/bench_engine.py --quick    # fewer repeats, no 1,000,000-op chain
    .venv/bin/python bench/bench_engine.py --profile  # cProfile of tracegrad's chain

(a) per-op cost: a chain of 2,000 elementwise ops (``y * w`` and ``y + b`` in turn) on shape
    (8,), forward and backward, in microseconds per op; target <= 1.0x PyTorch each way;
(b) a 100,000-op chain: forward and backward seconds, peak memory; target <= 1.2x PyTorch
    forward, <= 1.0x backward;
(c) the per-op forward cost of a 1,000,000-op chain over that of a 10,000-op one; target
    <= 1.1x (flat, as PyTorch's); with the garbage collector's work: collections per
    10,000 ops and their CPU time per op, by generation (generation 2, the full collections,
    walk every tracked object of the growing graph: the objects each op leaves are what
    they cost); and the floor: what full collections cost a chain of bare Python objects,
    one per op, so the least ratio any engine leaving one Python object per op can reach
    under the collector's default thresholds (which a library must not change).

How: CPU time (``process_time``), one BLAS thread, medians. In (a) the libraries share one
process and run round by round; (b) and (c) run each chain in a fresh process (peak memory
is then the process's own), alternating the libraries, and take the median of the runs.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import statistics
import subprocess
import sys
import time

from _harness import cpu_seconds, one_blas_thread, versus

one_blas_thread()

CHAIN = 2_000
DEEP = 100_000
SCALE = (10_000, 1_000_000)
WIDTH = 8
TARGETS = {"forward": 1.0, "backward": 1.0, "deep_forward": 1.2, "deep_backward": 1.0,
           "scale": 1.1}


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

    torch.set_num_threads(1)
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


def child_per_op(repeats: int) -> dict:
    """Every installed library in this one process, round by round."""
    chains = {}
    for library, make in WORKLOADS.items():
        try:
            chains[library] = make(CHAIN)
        except ImportError:
            continue
    samples = {library: ([], []) for library in chains}
    for round_index in range(repeats + 1):
        for library, (forward, backward) in chains.items():
            started = time.process_time()
            result = forward()
            middle = time.process_time()
            backward(result)
            ended = time.process_time()
            del result  # (untimed: freeing this graph is no part of the next round's forward)
            if round_index:  # the first round warms up
                samples[library][0].append(middle - started)
                samples[library][1].append(ended - middle)
    return {library: {"forward_us": statistics.median(f) / CHAIN * 1e6,
                      "backward_us": statistics.median(b) / CHAIN * 1e6}
            for library, (f, b) in samples.items()}


def child_deep(library: str, length: int) -> dict:
    forward, backward = WORKLOADS[library](10)
    backward(forward())  # imports and first-call costs out of the way
    baseline = _maxrss_mb()
    forward, backward = WORKLOADS[library](length)
    started = time.process_time()
    result = forward()
    middle = time.process_time()
    backward(result)
    ended = time.process_time()
    peak = _maxrss_mb()
    return {"forward_s": middle - started, "backward_s": ended - middle, "peak_mb": peak,
            "growth_mb": peak - baseline}


def child_scale(length: int, repeats: int) -> dict:
    """tracegrad's forward CPU time per op for a chain of ``length`` (median of repeats),
    and what the cyclic garbage collector did meanwhile: collections of each generation
    per 10,000 ops, and the objects it tracks that each op leaves alive (what its scans
    of the growing graph grow with)."""
    warm_up, _ = _tracegrad_chain(1_000)
    warm_up()
    per_op = []
    for _ in range(repeats):
        forward, _ = _tracegrad_chain(length)
        per_op.append(cpu_seconds(forward) / length * 1e6)
        del forward
    forward, _ = _tracegrad_chain(length)
    gc.collect()
    tracked_before = len(gc.get_objects())
    collections = [0, 0, 0]
    seconds = [0.0, 0.0, 0.0]
    started = [0.0]

    def timed(phase: str, info: dict) -> None:  # (gc.callbacks: each collection's CPU time)
        if phase == "start":
            started[0] = time.process_time()
        else:
            collections[info["generation"]] += 1
            seconds[info["generation"]] += time.process_time() - started[0]

    gc.callbacks.append(timed)
    try:
        result = forward()
    finally:
        gc.callbacks.remove(timed)
    tracked = (len(gc.get_objects()) - tracked_before) / length
    del result
    return {"forward_us": statistics.median(per_op), "tracked_per_op": tracked,
            "collections_per_10k": [count * 10_000 / length for count in collections],
            "gc_us_per_op": [spent / length * 1e6 for spent in seconds]}


class _BareNode:
    """The least a recorded op can leave: one tracked object, holding the previous one."""


def child_floor(length: int) -> dict:
    """The full collections' CPU time per op of a chain of ``length`` bare objects (one
    tracked object per op, two attributes): what the collector's default thresholds cost
    any graph of one Python object per op, the floor under (c)'s ratio."""
    gc.collect()
    spent = [0.0, 0.0]

    def timed(phase: str, info: dict) -> None:
        if info["generation"] == 2:
            if phase == "start":
                spent[1] = time.process_time()
            else:
                spent[0] += time.process_time() - spent[1]

    gc.callbacks.append(timed)
    try:
        previous = None
        for index in range(length):
            node = _BareNode()
            node.previous, node.index = previous, index
            previous = node
    finally:
        gc.callbacks.remove(timed)
    return {"gen2_us_per_op": spent[0] / length * 1e6}


def _run_child(*arguments: str) -> dict | None:
    command = [sys.executable, __file__, "--child", *arguments]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        if "ModuleNotFoundError" in done.stderr:
            return None
        raise RuntimeError(f"{arguments} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- the report ------------------------------------------------------------------------------
def report_per_op(repeats: int) -> None:
    per_op = _run_child("per_op", str(repeats))
    print(f"(a) per op, chain of {CHAIN:,} elementwise ops on shape ({WIDTH},), median of "
          f"{repeats} interleaved rounds, CPU time")
    print(f"    {'':10} {'forward µs/op':>14} {'backward µs/op':>15}")
    for library, figures in per_op.items():
        print(f"    {library:10} {figures['forward_us']:14.2f} {figures['backward_us']:15.2f}")
    ours, torch = per_op["tracegrad"], per_op.get("torch")
    if torch:
        for way in ("forward", "backward"):
            print(versus(f"tracegrad / torch, {way}", ours[f"{way}_us"] / torch[f"{way}_us"],
                         TARGETS[way]))


def report_deep(runs: int) -> None:
    samples: dict = {library: [] for library in WORKLOADS}
    for _ in range(runs):
        for library in WORKLOADS:
            figures = _run_child("deep", library, str(DEEP))
            if figures is not None:
                samples[library].append(figures)
    print(f"(b) a {DEEP:,}-op chain, forward + backward, a fresh process each, median of "
          f"{runs} alternating runs")
    print(f"    {'':10} {'forward s':>10} {'backward s':>11} {'peak MB':>9} {'growth MB':>10}")
    medians = {}
    for library, runs_of in samples.items():
        if not runs_of:
            print(f"    {library:10} (not installed)")
            continue
        medians[library] = {key: statistics.median(run[key] for run in runs_of)
                            for key in runs_of[0]}
        figures = medians[library]
        print(f"    {library:10} {figures['forward_s']:10.3f} {figures['backward_s']:11.3f} "
              f"{figures['peak_mb']:9.0f} {figures['growth_mb']:10.0f}")
    if "torch" in medians:
        ours, torch = medians["tracegrad"], medians["torch"]
        print(versus("tracegrad / torch, forward", ours["forward_s"] / torch["forward_s"],
                     TARGETS["deep_forward"]))
        print(versus("tracegrad / torch, backward", ours["backward_s"] / torch["backward_s"],
                     TARGETS["deep_backward"]))


def report_scale(runs: int) -> None:
    small, large = SCALE
    small_runs, large_runs = [], []
    for _ in range(runs):
        small_runs.append(_run_child("scale", str(small), "5"))
        large_runs.append(_run_child("scale", str(large), "1"))
    small_us = statistics.median(run["forward_us"] for run in small_runs)
    large_us = statistics.median(run["forward_us"] for run in large_runs)
    print(f"(c) tracegrad forward per op: {small:,} ops {small_us:.2f} µs, {large:,} ops "
          f"{large_us:.2f} µs (fresh processes, median of {runs})")
    for length, run in ((small, small_runs[-1]), (large, large_runs[-1])):
        per_generation = ", ".join(f"{count:.1f}" for count in run["collections_per_10k"])
        cost = ", ".join(f"{spent:.2f}" for spent in run["gc_us_per_op"])
        print(f"    gc at {length:,} ops: {run['tracked_per_op']:.2f} tracked objects left "
              f"per op; collections per 10,000 ops by generation: {per_generation}; "
              f"their CPU µs per op: {cost}")
    floor = _run_child("floor", str(large))["gen2_us_per_op"]
    print(f"    floor: a chain of {large:,} bare Python objects (one tracked object per op) "
          f"spends {floor:.2f} µs per op in full collections: at least "
          f"{(small_us + floor) / small_us:.2f}x for any engine that leaves one per op")
    print(versus(f"per-op forward, {large:,} ops vs {small:,}", large_us / small_us,
                 TARGETS["scale"]))


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
    parser.add_argument("--quick", action="store_true", help="fewer repeats, no (c)")
    parser.add_argument("--profile", action="store_true", help="cProfile tracegrad's chain")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--only", choices=("a", "b", "c"), action="append")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    repeats = args.repeats or (5 if args.quick else 15)
    if args.child:
        kind, *rest = args.child
        if kind == "per_op":
            figures = child_per_op(int(rest[0]))
        elif kind == "deep":
            figures = child_deep(rest[0], int(rest[1]))
        elif kind == "floor":
            figures = child_floor(int(rest[0]))
        else:
            figures = child_scale(int(rest[0]), int(rest[1]))
        print(json.dumps(figures))
        return 0
    if args.profile:
        profile(repeats)
        return 0
    parts = args.only or (["a", "b"] if args.quick else ["a", "b", "c"])
    print(f"python {sys.version.split()[0]}, one BLAS thread, CPU time")
    if "a" in parts:
        report_per_op(repeats)
    if "b" in parts:
        report_deep(1 if args.quick else 3)
    if "c" in parts:
        report_scale(2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
