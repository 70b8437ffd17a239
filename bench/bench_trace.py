"""What tracing costs: the tutorial's two-layer net (500 steps) with the tracer off, with
values captured, and structure only. Prints seconds (best of N) and ratios to tracer-off.

    .venv/bin/python bench/bench_trace.py [--steps 500] [--repeat 5]

Targets (issue #3): values <= 2x tracer-off, structure-only <= 1.3x, tracer off within noise
of a process that never imported the tracer (the "untraced" row is measured before
tracegrad.trace is imported at all).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # the machine is shared: no thread contention

import two_layer_net

import tracegrad


def _train(steps: int) -> float:
    started = time.perf_counter()
    two_layer_net.train(steps=steps)
    return time.perf_counter() - started


def _best(function, repeat: int) -> float:
    return min(function() for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    steps, repeat = args.steps, args.repeat

    _train(20)  # warm up numpy and the op caches
    untraced = _best(lambda: _train(steps), repeat)
    assert "tracegrad.trace.recorder" not in sys.modules

    def traced(**options) -> float:
        with tracegrad.trace(**options) as trace:
            elapsed = _train(steps)
        assert len(trace.passes) == steps
        return elapsed

    with tracegrad.trace():  # import the tracer and subscribe/unsubscribe once
        pass
    # Round-robin, best of N each: on a shared machine the load drifts, and interleaving
    # exposes every configuration to the same drift.
    configurations = {"off": lambda: _train(steps),
                      "values": lambda: traced(values=True),
                      "structure": lambda: traced(values=False)}
    best = dict.fromkeys(configurations, float("inf"))
    for _ in range(repeat):
        for label, function in configurations.items():
            best[label] = min(best[label], function())
    off = best["off"]
    rows = [("untraced (tracer never imported)", untraced), ("tracer off", off),
            ("tracer on, values (keep 2+2 passes)", best["values"]),
            ("tracer on, structure only", best["structure"])]
    print(f"two-layer net, {steps} steps, best of {repeat}:")
    for label, seconds in rows:
        print(f"  {label:<38} {seconds:8.3f} s   {seconds / off:5.2f}x tracer-off")


if __name__ == "__main__":
    main()
