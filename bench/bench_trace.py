"""What tracing costs (issue 14's tracer targets), each figure next to its target:

(a) the tutorial's two-layer net (500 steps) with the tracer off, structure only
    (``record(values=False)``) and with values (``record()``): targets <= 1.2x and
    <= 1.6x tracer-off; and under a listener that does nothing (the engine's share of the
    tracer's cost, the floor under both targets: <= 1.1x);
(b) a tiny-op chain (2,000 ops on shape (8,), forward and backward) under ``record()``,
    per op, against the same chain untraced: target <= 3x;
(c) the trace's memory after backward, per node, structure only (tracemalloc: what the
    Trace object holds once the program's own graph is gone): target <= 1.5 KB;
(d) save and load of a trace of a 50,000-op chain (recorded with ``tracegrad.record()``,
    one backward), per node: targets <= 10 µs each; and what the loader's checks add;
(e) save and load of training-loop traces (the two-layer net on small tensors, 500 and 2,000
    passes), values kept for the first and last two passes and for every pass.

    .venv/bin/python bench/bench_trace.py [--steps 500] [--repeat 5] [--chain 50000]
                                          [--loop 500 2000] [--files-only]

How: CPU time (``process_time``), one BLAS thread, configurations interleaved round by
round, medians (bench/_harness.py). Also printed: the two-layer net in a process that never
imported the tracer, which tracer-off should match.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
import tracemalloc

from _harness import cpu_seconds, interleaved, one_blas_thread, versus

one_blas_thread()
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import two_layer_net  # after the BLAS thread count is set

import tracegrad

TARGETS = {"structure": 1.2, "values": 1.6, "chain": 3.0, "listener": 1.1, "memory_kb": 1.5, "save_us": 10.0,
           "load_us": 10.0}
CHAIN = 2_000
MEMORY_CHAIN = 10_000


def _train(steps: int) -> None:
    two_layer_net.train(steps=steps)


def bench_two_layer(steps: int, repeat: int) -> None:
    from tracegrad.autograd import events

    _train(20)  # warm up numpy and the op caches
    untraced = statistics.median(cpu_seconds(lambda: _train(steps)) for _ in range(repeat))
    assert "tracegrad.tracing.recorder" not in sys.modules

    def traced(**options) -> None:
        with tracegrad.record(**options) as trace:
            _train(steps)
        assert len(trace.passes) == steps

    def listened() -> None:  # what the engine does for any listener (its share of "on")
        with events.subscribe(events.Listener()):
            _train(steps)

    with tracegrad.record():  # import the tracer and subscribe/unsubscribe once
        pass
    times = interleaved({"off": lambda: _train(steps), "listener": listened,
                         "structure": lambda: traced(values=False),
                         "values": lambda: traced(values=True)}, repeat, warmup=0)
    off = times["off"]
    print(f"(a) two-layer net, {steps} steps, median of {repeat} interleaved rounds:")
    print(f"  untraced (tracer never imported) {untraced:7.3f} s   tracer off {off:7.3f} s   "
          f"a listener that does nothing {times['listener']:7.3f} s   "
          f"structure {times['structure']:7.3f} s   values {times['values']:7.3f} s")
    print(versus("no-op listener (the engine's events) vs tracer off",
                 times["listener"] / off, TARGETS["listener"]))
    print(versus("tracer on, structure only, vs tracer off", times["structure"] / off,
                 TARGETS["structure"]))
    print(versus("tracer on, with values, vs tracer off", times["values"] / off,
                 TARGETS["values"]))


def _chain(length: int):
    w = tracegrad.full((8,), 0.999)
    b = tracegrad.full((8,), 0.001)
    x = tracegrad.ones(8, requires_grad=True)

    def run() -> None:
        y = x
        for index in range(length):
            y = y * w if index % 2 == 0 else y + b
        y.sum().backward()

    return run


def bench_chain(repeat: int) -> None:
    from tracegrad.autograd import events

    run = _chain(CHAIN)

    def traced() -> None:
        with tracegrad.record():
            run()

    def listened() -> None:  # what the engine does for any listener (its share of "on")
        with events.subscribe(events.Listener()):
            run()

    times = interleaved({"off": run, "listener": listened, "on": traced}, repeat)
    off, listener, on = (times[key] / CHAIN * 1e6 for key in ("off", "listener", "on"))
    print(f"(b) tiny-op chain, {CHAIN:,} ops on shape (8,), forward + backward, median of "
          f"{repeat}:")
    print(f"  tracer off {off:.1f} µs/op; a listener that does nothing {listener:.1f} µs/op "
          f"(the engine's events: {listener / off:.2f}x); record() {on:.1f} µs/op")
    print(versus("no-op listener (the engine's events) vs tracer off", listener / off,
                 TARGETS["listener"]))
    print(versus("tracer on (record()), per op, vs tracer off", on / off, TARGETS["chain"],
                 f"{on:.1f} µs vs {off:.1f} µs"))


def bench_memory() -> None:
    run = _chain(MEMORY_CHAIN)
    run()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    with tracegrad.record(values=False) as trace:
        run()  # the chain's own graph is freed when run() returns
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    per_node = held / len(trace.nodes) / 1024
    print(f"(c) trace memory after backward, structure only: {held / 2**20:.1f} MiB for "
          f"{len(trace.nodes):,} nodes, {len(trace.tensors):,} tensors, "
          f"{sum(len(p.steps) for p in trace.passes):,} steps")
    print(versus("per node", per_node, TARGETS["memory_kb"], unit=" KB"))


def chain_trace(length: int, values: bool):
    """A chain of ``length`` multiplications recorded by the tracer, with one backward."""
    x = tracegrad.ones(4, requires_grad=True)
    with tracegrad.record(values=values) as trace:
        y = x
        for _ in range(length):
            y = y * 1.0
        y.sum().backward()
    return trace


def bench_file(length: int, repeat: int) -> None:
    from tracegrad.tracing import load_trace, store

    print(f"(d) trace file, a chain of {length:,} ops and one backward, median of {repeat}:")
    for values in (False, True):
        trace = chain_trace(length, values)
        nodes = len(trace.nodes)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "chain.tgtrace")
            times = interleaved({"save": lambda t=trace, p=path: t.save(p),
                                 "load": lambda p=path: load_trace(p)}, repeat)
            size_mb = os.path.getsize(path) / 1e6
        label = "values" if values else "structure only"
        save_us, load_us = times["save"] / nodes * 1e6, times["load"] / nodes * 1e6
        print(f"  {label}: {nodes:,} nodes, {size_mb:5.1f} MB, save {times['save']:.3f} s, "
              f"load {times['load']:.3f} s")
        print(versus(f"save per node ({label})", save_us, TARGETS["save_us"], unit=" µs"))
        print(versus(f"load per node ({label})", load_us, TARGETS["load_us"], unit=" µs"))
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "chain.tgtrace")
            trace.save(path)
            load, unchecked = _load_with_and_without_checks(store, load_trace, path, repeat)
            # What the runs before left the collector is theirs, not the read's: what the
            # load leaves it (its objects to walk) is counted.
            gc.collect()
            loaded = load_trace(path)
        print(f"    of a load, the loader's checks (validate.py): {max(load - unchecked, 0):.3f} s"
              f" ({100 * max(load / unchecked - 1, 0):.0f}%, best of {repeat})")
        if values:  # schema 5 leaves stored arrays' statistics to be computed on first read
            first_read = _timed(_read_all_statistics, loaded)
            print(f"    after a load, reading every value's statistics once: {first_read:.3f} s "
                  f"(computed from the arrays then, as before saving)")


def _read_all_statistics(trace) -> None:
    for record in trace.tensors.values():
        for value in (record.value, record.grad):
            if value is not None:
                value.stats.norm  # noqa: B018 - the first read computes them
    for backward_pass in trace.passes:
        for step in backward_pass.steps:
            for value in (*step.grads_in, *step.grads_out, step.grad_after):
                if value is not None:
                    value.stats.norm  # noqa: B018


def _load_with_and_without_checks(store, load_trace, path, repeat) -> tuple[float, float]:
    """Best load time with the loader's consistency checks and without (interleaved, so
    both see the same machine load)."""
    validate = store.validate_trace
    checked, unchecked = [], []
    try:
        for _ in range(repeat):
            store.validate_trace = validate
            checked.append(_timed(load_trace, path))
            store.validate_trace = lambda trace, limits=None, tables=None: None
            unchecked.append(_timed(load_trace, path))
    finally:
        store.validate_trace = validate
    return min(checked), min(unchecked)


def loop_trace(passes: int, keep_passes):
    """The two-layer net's training loop on small tensors (64x100 -> 50 -> 10), recorded."""
    tracegrad.manual_seed(0)
    data = (tracegrad.randn(64, 100), tracegrad.randn(64, 10),
            tracegrad.randn(100, 50, requires_grad=True),
            tracegrad.randn(50, 10, requires_grad=True))
    with tracegrad.record(keep_passes=keep_passes) as trace:
        two_layer_net.train(steps=passes, data=data)
    return trace


def bench_loop(passes_list: list[int], repeat: int) -> None:
    from tracegrad.tracing import load_trace

    print(f"(e) trace file, training loops, best of {repeat}:")
    for keep_passes, label in (((2, 2), "values 2+2 passes"), (None, "values every pass")):
        for passes in passes_list:
            trace = loop_trace(passes, keep_passes)
            with tempfile.TemporaryDirectory() as folder:
                path = os.path.join(folder, "loop.tgtrace")
                save = min(_timed(trace.save, path) for _ in range(repeat))
                load = min(_timed(load_trace, path) for _ in range(repeat))
                size_mb = os.path.getsize(path) / 1e6
            per_pass = 1e3 / passes
            print(f"  {label:<18} {passes:>5,} passes, {len(trace.nodes):,} nodes, "
                  f"{size_mb:6.1f} MB   save {save:6.3f} s ({save * per_pass:.2f} ms/pass)"
                  f"   load {load:6.3f} s ({load * per_pass:.2f} ms/pass)")


def _timed(function, *args) -> float:
    started = time.process_time()
    function(*args)
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--chain", type=int, default=50_000,
                        help="ops in the chain for the file bench (0: skip it)")
    parser.add_argument("--loop", type=int, nargs="*", default=[500, 2000],
                        help="passes of the training-loop file bench (none: skip it)")
    parser.add_argument("--files-only", action="store_true",
                        help="only the trace-file benches (not the tracer's overhead)")
    args = parser.parse_args()
    print("one BLAS thread, CPU time")
    if args.files_only:
        if args.chain:
            bench_file(args.chain, min(args.repeat, 3))
        if args.loop:
            bench_loop(args.loop, min(args.repeat, 3))
        return
    bench_two_layer(args.steps, args.repeat)
    bench_chain(args.repeat * 2)
    bench_memory()
    if args.chain:
        bench_file(args.chain, min(args.repeat, 3))
    if args.loop:
        bench_loop(args.loop, min(args.repeat, 3))


if __name__ == "__main__":
    main()
