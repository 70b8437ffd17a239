"""How fast the debugger opens big traces and moves in them.

    .venv/bin/python bench/bench_tui.py [--nodes 50000] [--moves 200] [--wide 100000]

Two traces, each saved as .tgtrace and opened with Textual's ``run_test``:

* deep: the shape of a deep network (a chain of ops, each with a parameter's
  AccumulateGrad beside it; every node runs one backward step), ``--nodes`` nodes;
* wide: ``loss = torch.stack(xs).sum()`` over ``--wide`` leaves: one StackBackward0 with
  100,000 inputs and outgoing gradients, then 100,000 AccumulateGrad steps.

  open   start the app on the Trace until the first step is on screen (target < 2 s);
         loading the .tgtrace is timed on its own (that is the tracer's codec)
  step   the app's work for one move (state, widgets, a full-screen render; target < 50 ms),
         and Pilot's round trip (press + pause) next to a key bound to nothing
  jump   ``:`` to the middle step (target < 100 ms), and stepping onto the node with
         100,000 inputs (the node pane lists the first ones and says how many more)

Runs headless; prints the figures (median / 95th percentile / worst for the steps).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from tracegrad.tui.app import DebuggerApp
from tracegrad.tui.widgets.graph_view import GraphView

from tracegrad.tracing import load_trace, save_trace
from tracegrad.tracing.model import (
    BackwardPass,
    NodeRecord,
    SavedRecord,
    Site,
    Stats,
    Step,
    TensorRecord,
    Trace,
    Value,
)

TARGET_OPEN_S = 2.0
TARGET_STEP_MS = 50.0
TARGET_MOVE_MS = 100.0


def deep_network_trace(node_count: int) -> Trace:
    """op_0 -> op_1 -> ... with AccumulateGrad(w_i) beside each op: ``node_count`` nodes."""
    ops = node_count // 2
    stats = Stats(-1.0, 1.0, 0.0, 3.5)
    tensors: dict[int, TensorRecord] = {}
    nodes: dict[int, NodeRecord] = {}
    steps: list[Step] = []
    for layer in range(ops):
        op_id, accumulate_id = 2 * layer, 2 * layer + 1
        output_id, weight_id = 2 * layer, 2 * layer + 1
        tensors[output_id] = TensorRecord(output_id, (64, 64), "float32", is_leaf=False,
                                          requires_grad=True, grad_fn=op_id)
        tensors[weight_id] = TensorRecord(weight_id, (64, 64), "float32", name=f"w{layer}",
                                          requires_grad=True, is_parameter=True)
        nexts: list[tuple[int | None, int]] = [(accumulate_id, 0)]
        if layer + 1 < ops:
            nexts.insert(0, (op_id + 2, 0))
        nodes[op_id] = NodeRecord(
            op_id, "MmBackward0", inputs=[output_id + 2 if layer + 1 < ops else None, weight_id],
            outputs=[output_id], next=nexts, module=f"layers.{layer}",
            saved=[SavedRecord(weight_id, 0, 64 * 64 * 4, "mat2")],
            site=Site("deep_net.py", 10 + layer % 40, "forward", "y = y.mm(w)"))
        nodes[accumulate_id] = NodeRecord(accumulate_id, "AccumulateGrad", kind="accumulate",
                                          leaf=weight_id)
    grad = Value((64, 64), "float32", stats)  # statistics only, as over a memory budget
    for op_id in range(0, 2 * ops, 2):
        steps.append(Step(len(steps), op_id, [grad], [grad] * len(nodes[op_id].next)))
        steps.append(Step(len(steps), op_id + 1, [grad], [], accumulated=op_id + 1))
    return Trace(tensors=tensors, nodes=nodes,
                 passes=[BackwardPass(0, roots=[0], steps=steps)])


def wide_trace(leaves: int) -> Trace:
    """``loss = torch.stack(xs).sum()``: StackBackward0 with ``leaves`` inputs."""
    stats = Stats(-1.0, 1.0, 0.0, 1.4)
    grad = Value((2,), "float32", stats)
    tensors: dict[int, TensorRecord] = {}
    nodes: dict[int, NodeRecord] = {}
    for leaf in range(leaves):
        tensors[leaf] = TensorRecord(leaf, (2,), "float32", name=f"x{leaf}",
                                     requires_grad=True)
        nodes[leaf] = NodeRecord(leaf, "AccumulateGrad", kind="accumulate", leaf=leaf)
    stack_id, sum_id = leaves, leaves + 1
    where = Site("wide.py", 5, "<module>", "loss = torch.stack(xs).sum()")
    tensors[stack_id] = TensorRecord(stack_id, (leaves, 2), "float32", is_leaf=False,
                                     requires_grad=True, grad_fn=stack_id)
    tensors[sum_id] = TensorRecord(sum_id, (), "float32", name="loss", is_leaf=False,
                                   requires_grad=True, grad_fn=sum_id)
    nodes[stack_id] = NodeRecord(stack_id, "StackBackward0", inputs=list(range(leaves)),
                                 outputs=[stack_id], next=[(leaf, 0) for leaf in range(leaves)],
                                 site=where)
    nodes[sum_id] = NodeRecord(sum_id, "SumBackward0", inputs=[stack_id], outputs=[sum_id],
                               next=[(stack_id, 0)], site=where)
    steps = [Step(0, sum_id, [grad], [grad]), Step(1, stack_id, [grad], [grad] * leaves)]
    steps += [Step(2 + leaf, leaf, [grad], [], accumulated=leaf, grad_after=grad)
              for leaf in range(leaves)]
    return Trace(tensors=tensors, nodes=nodes,
                 passes=[BackwardPass(0, roots=[sum_id], steps=steps, label="backward(loss)")])


async def measure_wide(trace: Trace) -> dict[str, float]:
    """Open, step onto the 100,000-input node, jump to the middle and step there."""
    started = time.perf_counter()
    app = DebuggerApp(trace)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        opened = time.perf_counter() - started
        before = time.perf_counter()
        app.action_next_step()  # onto StackBackward0: 100,000 inputs and gradients
        app.screen._compositor.render_update(full=True)
        onto_wide = (time.perf_counter() - before) * 1000
        middle = len(trace.passes[0].steps) // 2
        before = time.perf_counter()
        app.go_to(0, middle)
        app.screen._compositor.render_update(full=True)
        jump = (time.perf_counter() - before) * 1000
        work = []
        for move in range(100):
            before = time.perf_counter()
            if move % 2:
                app.action_previous_step()
            else:
                app.action_next_step()
            app.screen._compositor.render_update(full=True)
            work.append((time.perf_counter() - before) * 1000)
        await pilot.pause()
    return {"open_s": opened, "onto_wide_ms": onto_wide, "jump_ms": jump,
            "work": sorted(work)}


async def measure(trace: Trace, moves: int) -> dict[str, float]:
    started = time.perf_counter()
    app = DebuggerApp(trace)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        opened = time.perf_counter() - started
        baseline = await _round_trips(pilot, ["x"] * 50)  # a key bound to nothing
        keys = ["n" if (move // 50) % 2 == 0 else "p" for move in range(moves)]
        layouts_before = app.query_one(GraphView).layouts_made
        steps = await _round_trips(pilot, keys)
        layouts = app.query_one(GraphView).layouts_made - layouts_before
        # The app's own work per step, without Pilot's waiting: the state change and widget
        # updates, then a full render of the screen as a terminal would get it.
        work: list[float] = []
        for key in keys:
            before = time.perf_counter()
            if key == "n":
                app.action_next_step()
            else:
                app.action_previous_step()
            app.screen._compositor.render_update(full=True)
            work.append((time.perf_counter() - before) * 1000)
        await pilot.press("G")  # the last of 50,000 steps
        await pilot.pause()
        last_step = app.step_index
    return {"open_s": opened, "baseline_ms": statistics.median(baseline),
            "steps": steps, "work": sorted(work), "last_step": last_step, "layouts": layouts}


async def _round_trips(pilot, keys: list[str]) -> list[float]:
    """Milliseconds from pressing each key until the screen has been refreshed."""
    timings = []
    for key in keys:
        before = time.perf_counter()
        await pilot.press(key)
        await pilot.pause()
        timings.append((time.perf_counter() - before) * 1000)
    return sorted(timings)


def _spread(timings: list[float]) -> str:
    return (f"median {statistics.median(timings):.1f} ms, p95 "
            f"{timings[int(len(timings) * 0.95) - 1]:.1f} ms, worst {timings[-1]:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=50_000)
    parser.add_argument("--moves", type=int, default=200)
    parser.add_argument("--wide", type=int, default=100_000,
                        help="leaves of the wide graph (0: skip it)")
    options = parser.parse_args()
    trace = deep_network_trace(options.nodes)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "deep.tgtrace"
        save_trace(trace, path)
        size_mb = path.stat().st_size / 1e6
        started = time.perf_counter()
        load_trace(path)
        load_s = time.perf_counter() - started
    figures = asyncio.run(measure(trace, options.moves))
    print(f"trace: {len(trace.nodes):,} nodes, {figures['last_step'] + 1:,} steps, "
          f".tgtrace {size_mb:.1f} MB")
    print(f"open (Trace in memory -> first screen): {figures['open_s']:.2f} s  "
          f"target < {TARGET_OPEN_S} s")
    print(f"load_trace of the .tgtrace (the tracer's codec, before the app): {load_s:.2f} s")
    print(f"step, app work (state + widgets + full-screen render): {_spread(figures['work'])}"
          f"  target < {TARGET_STEP_MS} ms")
    print(f"step, Pilot round trip (press + pause): {_spread(figures['steps'])}; "
          f"a key bound to nothing: median {figures['baseline_ms']:.1f} ms")
    print(f"graph laid out {figures['layouts']} times in {options.moves} moves (dot, "
          f"neighbourhood only)")
    if options.wide:
        bench_wide(options.wide)


def bench_wide(leaves: int) -> None:
    trace = wide_trace(leaves)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "wide.tgtrace"
        save_trace(trace, path)
        size_mb = path.stat().st_size / 1e6
        started = time.perf_counter()
        load_trace(path)
        load_s = time.perf_counter() - started
    figures = asyncio.run(measure_wide(trace))
    print(f"wide graph: {leaves:,} leaves into one StackBackward0 ({len(trace.nodes):,} "
          f"nodes, {len(trace.passes[0].steps):,} steps), .tgtrace {size_mb:.1f} MB")
    print(f"  open (Trace in memory -> first screen): {figures['open_s']:.2f} s  "
          f"target < {TARGET_OPEN_S} s; load_trace {load_s:.2f} s")
    print(f"  step onto the node with {leaves:,} inputs: {figures['onto_wide_ms']:.1f} ms; "
          f"jump to the middle step: {figures['jump_ms']:.1f} ms  target < "
          f"{TARGET_MOVE_MS:.0f} ms")
    print(f"  step in the middle, app work: {_spread(figures['work'])}  target < "
          f"{TARGET_STEP_MS} ms")


if __name__ == "__main__":
    main()
