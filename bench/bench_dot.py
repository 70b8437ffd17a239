"""Time DOT generation for a 50,000-node graph and the full render of the two-layer net.

    .venv/bin/python bench/bench_dot.py [--nodes N]

Prints figures; asserts nothing. Target (issue 14): DOT text for a 50,000-node graph in
<= 20 µs per node -- a built trace (``wide_chain``) and a recorded one (a chain of
multiplications under ``tracegrad.record()`` with one backward). CPU time, medians.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _harness import one_blas_thread, versus

one_blas_thread()

import tracegrad as tg
from tracegrad.draw.dot import gc_paused
from tracegrad.draw.plan import plan_graph
from tracegrad.tracing.model import NodeRecord, SavedRecord, TensorRecord, Trace

NODES = 50_000
TARGET_US = 20.0


def wide_chain(length: int) -> Trace:
    """A chain of MulBackward0 nodes, each saving its input: nodes, tensors and saved edges."""
    trace = Trace()
    trace.tensors[0] = TensorRecord(0, (64,), "float32", name="x", requires_grad=True)
    trace.nodes[0] = NodeRecord(0, "AccumulateGrad", kind="accumulate", leaf=0)
    for number in range(1, length):
        trace.tensors[number] = TensorRecord(number, (64,), "float32", is_leaf=False,
                                             grad_fn=number, requires_grad=True)
        trace.nodes[number] = NodeRecord(number, "MulBackward0", inputs=[number - 1],
                                         outputs=[number], next=[(number - 1, 0)],
                                         saved=[SavedRecord(number - 1, 0, 256, "self")])
    return trace


def recorded_chain(length: int) -> Trace:
    """``length`` multiplications recorded by the tracer, with one backward."""
    x = tg.ones(4, requires_grad=True)
    with tg.record() as trace:
        y = x
        for _ in range(length):
            y = y * 1.0
        y.sum().backward()
    return trace


def best_of(runs: int, function, clock=time.process_time) -> tuple[float, float, object]:
    """(best, median, last result) of ``runs`` calls, in CPU seconds (``clock``)."""
    times, result = [], None
    for _ in range(runs):
        started = clock()
        result = function()
        times.append(clock() - started)
    return min(times), statistics.median(times), result


def bench_dot(label: str, trace: Trace) -> None:
    def plan_only():
        with gc_paused():  # as to_dot runs it
            return plan_graph(trace)

    _, plan_median, plan = best_of(3, plan_only)
    _, median, graph = best_of(5, lambda: tg.to_dot(trace, max_nodes=None).source)
    nodes = len(trace.nodes)
    print(f"DOT for {label}, {nodes:,} nodes ({plan.size:,} boxes, {len(plan.arrows):,} "
          f"edges, {len(graph) / 1e6:.1f} MB): median {median:.2f} s (plan alone "
          f"{plan_median:.2f} s)")
    print(versus(f"DOT text per node, {label}", median / nodes * 1e6, TARGET_US,
                 unit=" µs"))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=NODES,
                        help="graph size for the per-node figures (the target is for 50,000)")
    nodes = parser.parse_args(argv).nodes
    print("one BLAS thread, CPU time")
    bench_dot("a built trace (wide_chain)", wide_chain(nodes))
    bench_dot("a recorded chain", recorded_chain(nodes - 2))

    tests = Path(__file__).resolve().parent.parent / "tests"
    sys.path[:0] = [str(tests / "golden" / "dot"), str(tests)]  # programs imports tests' helpers
    import programs

    with tg.record() as two_layer:
        programs.two_layer_net()
    best, _, _ = best_of(5, lambda: tg.to_dot(two_layer).source)
    print(f"two-layer net DOT ({len(two_layer.nodes)} nodes): best {best * 1e3:.1f} ms")
    if shutil.which("dot") is None:
        print("two-layer net render: skipped, Graphviz `dot` is not installed")
        return
    with tempfile.TemporaryDirectory() as folder:
        for format in ("svg", "png"):
            path = Path(folder) / f"net.{format}"
            best, median, _ = best_of(5, lambda path=path: tg.render(two_layer, path),
                                      clock=time.perf_counter)  # `dot` runs in its own process
            print(f"two-layer net render to {format}: best {best * 1e3:.0f} ms, "
                  f"median {median * 1e3:.0f} ms ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main(sys.argv[1:])
