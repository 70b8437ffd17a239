"""Time DOT generation for a 50,000-node graph and the full render of the two-layer net.

    .venv/bin/python bench/bench_dot.py

Prints figures; asserts nothing (the target for the first is under 2 s).
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import tracegrad as tg
from tracegrad.draw.dot import gc_paused
from tracegrad.draw.plan import plan_graph
from tracegrad.tracing.model import NodeRecord, SavedRecord, TensorRecord, Trace

NODES = 50_000


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


def best_of(runs: int, function) -> tuple[float, float, object]:
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - started)
    return min(times), statistics.median(times), result


def main() -> None:
    trace = wide_chain(NODES)
    def plan_only():
        with gc_paused():  # as to_dot runs it
            return plan_graph(trace)

    plan_best, _, plan = best_of(3, plan_only)
    best, median, graph = best_of(5, lambda: tg.to_dot(trace, max_nodes=None).source)
    print(f"DOT for {NODES:,} nodes ({plan.size:,} boxes, {len(plan.arrows):,} edges, "
          f"{len(graph) / 1e6:.1f} MB): best {best:.2f} s, median {median:.2f} s "
          f"(plan alone {plan_best:.2f} s); target < 2 s")

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "golden" / "dot"))
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
            best, median, _ = best_of(5, lambda path=path: tg.render(two_layer, path))
            print(f"two-layer net render to {format}: best {best * 1e3:.0f} ms, "
                  f"median {median * 1e3:.0f} ms ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
