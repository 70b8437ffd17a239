"""Drawing graphs too large to lay out: a 100,000-leaf wide graph and a 1,000,000-node chain.

    .venv/bin/python bench/bench_render_scale.py            # both, full size
    .venv/bin/python bench/bench_render_scale.py --scale 0.1

For each graph: ``to_dot`` (time, DOT size), ``render`` to SVG in-process, and the command
line ``tracegrad render -o x.svg trace.tgtrace`` on the saved trace (wall time and peak
memory of that process, which includes loading the file). Before the sizing rule, the wide
graph made ``tracegrad render`` fail after 55 s and ``to_dot`` write 100 MB of DOT, and the
chain cost 173 s and 9.7 GB before being refused. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import tracegrad as tg
from tracegrad.tracing.model import BackwardPass, NodeRecord, SavedRecord, Step, TensorRecord, Trace


def wide_graph(leaves: int) -> Trace:
    """loss = torch.stack([w0, ..., wN]).sum(): N leaves, N AccumulateGrad nodes under one
    StackBackward0, with the backward pass that ran."""
    trace = Trace()
    for number in range(leaves):
        trace.tensors[number] = TensorRecord(number, (3,), "float32", name=f"w{number}",
                                             requires_grad=True)
        trace.nodes[number] = NodeRecord(number, "AccumulateGrad", kind="accumulate",
                                         leaf=number)
    stacked, loss = leaves, leaves + 1
    trace.tensors[stacked] = TensorRecord(stacked, (leaves, 3), "float32", is_leaf=False,
                                          grad_fn=stacked, requires_grad=True)
    trace.tensors[loss] = TensorRecord(loss, (), "float32", name="loss", is_leaf=False,
                                       grad_fn=loss, requires_grad=True)
    trace.nodes[stacked] = NodeRecord(stacked, "StackBackward0", inputs=list(range(leaves)),
                                      outputs=[stacked],
                                      next=[(number, 0) for number in range(leaves)])
    trace.nodes[loss] = NodeRecord(loss, "SumBackward0", inputs=[stacked], outputs=[loss],
                                   next=[(stacked, 0)])
    steps = [Step(0, loss), Step(1, stacked)]
    steps += [Step(2 + number, number, accumulated=number) for number in range(leaves)]
    trace.passes.append(BackwardPass(0, roots=[loss], steps=steps))
    return trace


def chain(length: int) -> Trace:
    """x -> MulBackward0 -> ... (``length`` nodes, each saving its input) -> loss, with its
    backward pass."""
    trace = Trace()
    trace.tensors[0] = TensorRecord(0, (64,), "float32", name="x", requires_grad=True)
    trace.nodes[0] = NodeRecord(0, "AccumulateGrad", kind="accumulate", leaf=0)
    for number in range(1, length + 1):
        trace.tensors[number] = TensorRecord(number, (64,), "float32", is_leaf=False,
                                             grad_fn=number, requires_grad=True)
        trace.nodes[number] = NodeRecord(number, "MulBackward0", inputs=[number - 1],
                                         outputs=[number], next=[(number - 1, 0)],
                                         saved=[SavedRecord(number - 1, 0, 256, "self")])
    trace.tensors[length].name = "loss"
    trace.passes.append(BackwardPass(0, roots=[length], steps=[
        Step(index, node) for index, node in enumerate(range(length, -1, -1))]))
    return trace


def timed(function):
    started = time.perf_counter()
    result = function()
    return time.perf_counter() - started, result


def measure(name: str, trace: Trace, folder: Path) -> None:
    print(f"{name}: {len(trace.nodes):,} nodes")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        seconds, source = timed(lambda: tg.to_dot(trace).source)
    note = next((str(warning.message) for warning in caught), "drawn whole")
    print(f"  to_dot: {seconds:.2f} s, {len(source) / 1e3:.1f} kB of DOT -- {note}")
    if shutil.which("dot") is None:
        print("  render / tracegrad render: skipped, Graphviz `dot` is not installed")
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seconds, _ = timed(lambda: tg.render(trace, folder / f"{name}.svg"))
    print(f"  render to SVG in-process: {seconds:.2f} s "
          f"({(folder / f'{name}.svg').stat().st_size / 1e3:.1f} kB)")
    path = folder / f"{name}.tgtrace"
    seconds, _ = timed(lambda: trace.save(path, timings=False))
    print(f"  (saving the trace for the command line: {seconds:.1f} s, "
          f"{path.stat().st_size / 1e6:.1f} MB)")
    gc.collect()
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "tracegrad", "render", "-o",
                             str(folder / f"{name}-cli.svg"), str(path)],
                            capture_output=True, text=True, check=False,
                            env={**os.environ, "TRACEGRAD_PROGRESS": "0"})
    wall = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB -> MiB
    print(f"  tracegrad render -o x.svg (load + fold + layout): exit {result.returncode}, "
          f"{wall:.1f} s, peak {peak:,.0f} MiB (largest child so far)")
    for line in result.stderr.splitlines():
        print(f"    {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply both sizes (0.1: 10,000 leaves, 100,000 nodes)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        measure("wide", wide_graph(int(100_000 * args.scale)), Path(folder))
        gc.collect()
        measure("chain", chain(int(1_000_000 * args.scale)), Path(folder))


if __name__ == "__main__":
    main()
