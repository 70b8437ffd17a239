"""Instructions per op of a named workload, counted by valgrind's callgrind: the firm figure
on a shared machine, where CPU time swings by 15% and more (see bench/_harness.py).

    .venv/bin/python bench/instructions.py chain-forward [chain-backward ...] [--ops N]
    .venv/bin/python bench/instructions.py --list

How: the script runs itself again under ``valgrind --tool=callgrind --collect-atstart=no``.
In that child, each workload builds what it needs (not counted), runs once to warm up (not
counted), then runs twice inside a *region* -- a call through ``ctypes`` into libffi's
``ffi_call``, which nothing else in these workloads calls: ``--toggle-collect=ffi_call``
counts only inside it, and ``--dump-after=ffi_call`` writes each region's count to a file
of its own. The regions do N and 2N ops; their difference over N is the cost of one op,
the fixed costs (the call into the region, a first allocation) cancelling out.

Workloads (``--list``):
    chain-forward      a tiny op (shape (8,), mul and add in turn) with autograd on
    chain-backward     backward through such a chain, per node
    torch-forward      the same chain forward in PyTorch (when installed): the ratio to
                       torch's own tiny op
    torch-mlp-step     examples/train_mlp.py on PyTorch, untraced, per training step (forward,
                       backward, Adam's step)
    bridge-mlp-step    the same under the bridge reporting to a listener that does nothing:
                       the difference to torch-mlp-step is the bridge's share per step
    record-op          chain forward and backward under ``tracegrad.record()``, per op
    two-layer          the tutorial's two-layer net (examples/two_layer_net.py), per
                       training step, tracer off (use ``--ops 100``: a step is ~20 ops)
    record-two-layer-structure   the same under ``tracegrad.record(values=False)``
    record-two-layer-values      the same under ``tracegrad.record()``
    save-structure     ``Trace.save`` of a recorded chain, structure only, per node
    load-structure     ``load_trace`` of it, per node
    save-values        the same, the chain recorded with values
    load-values
    read-statistics    reading every value's statistics once after ``load_trace`` of it
                       (computed from the arrays then), per node
    dot                ``to_dot(trace).source`` of a recorded chain, per node
    two-layer-numpy    examples/two_layer_net_numpy.py's training step, per step (~5*10^6
                       instructions: use a small --ops), the baseline of bench_two_layer.py
    two-layer-tiny     examples/two_layer_net.py's step with every size 1, per step: what
                       tracegrad costs beyond the arrays' work

Counts depend on the Python, NumPy and valgrind builds, not on the machine's load: compare
them within one environment. Without valgrind the script says so and exits 0. Not a test.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable

CHILD_FLAG = "--region-child"
DEFAULT_OPS = 1_000


# -- workloads: make(n) builds what the region needs and returns the region's callable ---
def _chain(library, n: int) -> Callable[[], object]:
    w = library.full((8,), 0.999)
    b = library.full((8,), 0.001)
    x = library.ones(8, requires_grad=True)

    def forward():
        y = x
        for index in range(n):
            y = y * w if index % 2 == 0 else y + b
        return y

    return forward


def chain_forward(n: int):
    import tracegrad

    forward = _chain(tracegrad, n)
    return lambda: forward()


def chain_backward(n: int):
    import tracegrad

    forward = _chain(tracegrad, n)
    loss = []

    def prepare():  # outside the region: the graph to go back through
        loss[:] = [forward().sum()]

    return lambda: loss.pop().backward(), prepare


def torch_forward(n: int):
    import torch

    torch.set_num_threads(1)
    forward = _chain(torch, n)
    return lambda: forward()


def _torch_mlp(n: int, observed: bool):
    import torch
    from _harness import load_example

    torch.set_num_threads(1)
    module = load_example("train_mlp", real_torch=True)
    if not observed:
        return lambda: module.train(steps=n)
    from tracegrad import bridge
    from tracegrad.autograd import events

    def run():
        attachment = bridge.attach()
        try:
            with events.subscribe(events.Listener()):
                module.train(steps=n)
        finally:
            attachment.detach()

    return run


def record_op(n: int):
    import tracegrad

    forward = _chain(tracegrad, n)

    def run():
        with tracegrad.record():
            forward().sum().backward()

    return run


def _recorded(n: int, values: bool):
    from bench_trace import chain_trace  # the trace its file bench (d) saves and loads

    return chain_trace(n, values)


def _save(values: bool):
    def make(n: int):
        trace = _recorded(n, values)
        path = os.path.join(tempfile.mkdtemp(prefix="instructions."), "chain.tgtrace")
        return lambda: trace.save(path)

    return make


def _load(values: bool):
    def make(n: int):
        from tracegrad.tracing import load_trace

        path = os.path.join(tempfile.mkdtemp(prefix="instructions."), "chain.tgtrace")
        _recorded(n, values).save(path)
        return lambda: load_trace(path)

    return make


def read_statistics(n: int):
    import gc

    from bench_trace import _read_all_statistics

    from tracegrad.tracing import load_trace

    path = os.path.join(tempfile.mkdtemp(prefix="instructions."), "chain.tgtrace")
    _recorded(n, values=True).save(path)
    loaded = []

    def prepare():  # outside the region: the load, and what earlier runs left the collector
        loaded[:] = []
        gc.collect()
        loaded.append(load_trace(path))

    return lambda: _read_all_statistics(loaded[0]), prepare


def dot(n: int):
    import tracegrad

    trace = _recorded(n, values=False)
    return lambda: tracegrad.to_dot(trace, max_nodes=None).source


def _two_layer(library: str = "tracegrad", size: int | None = None, record: bool = False,
               values: bool = False):
    """``make(n)``: n training steps of examples/two_layer_net{,_numpy}.py on their data,
    every size ``size`` (or the examples' own sizes, for None), under
    ``tracegrad.record(values=values)`` when ``record`` (bench/bench_trace.py (a))."""
    def make(n: int):
        from _harness import load_example  # (bench/ is this script's folder)

        import tracegrad

        numpy_example = load_example("two_layer_net_numpy")
        example = numpy_example if library == "numpy" else load_example("two_layer_net")
        if size is not None:
            for module in (numpy_example, example):
                module.N = module.D_in = module.H = module.D_out = size
        arrays = numpy_example.make_data()
        data = [array.copy() for array in arrays] if library == "numpy" else \
            [tracegrad.tensor(a.copy(), requires_grad=i >= 2) for i, a in enumerate(arrays)]
        if not record:
            return lambda: example.train(n, data)

        def run():
            with tracegrad.record(values=values):
                example.train(n, data)

        return run

    return make


WORKLOADS: dict[str, Callable] = {
    "chain-forward": chain_forward, "chain-backward": chain_backward,
    "torch-forward": torch_forward, "record-op": record_op,
    "torch-mlp-step": lambda n: _torch_mlp(n, observed=False),
    "bridge-mlp-step": lambda n: _torch_mlp(n, observed=True),
    "two-layer": _two_layer(), "record-two-layer-structure": _two_layer(record=True),
    "record-two-layer-values": _two_layer(record=True, values=True),
    "save-structure": _save(False), "load-structure": _load(False),
    "save-values": _save(True), "load-values": _load(True),
    "read-statistics": read_statistics, "dot": dot,
    "two-layer-numpy": _two_layer("numpy"), "two-layer-tiny": _two_layer(size=1),
}


# -- the child: regions under callgrind --------------------------------------------------
def _region(function: Callable[[], object]) -> None:
    """Run ``function`` inside ffi_call (libffi): the one function callgrind counts in."""
    def call() -> None:
        function()

    ctypes.CFUNCTYPE(None)(call)()


def _child(name: str, ops: int) -> None:
    for count in (ops, ops, 2 * ops):  # a warm-up (its dump is ignored), then N and 2N
        made = WORKLOADS[name](count)
        run, prepare = made if isinstance(made, tuple) else (made, None)
        if prepare is not None:
            prepare()
        _region(run)


# -- the parent: run the child, read the dumps -------------------------------------------
def _count(name: str, ops: int, folder: str) -> float:
    out = os.path.join(folder, f"{name}.out")
    command = ["valgrind", "--tool=callgrind", "--collect-atstart=no",
               "--toggle-collect=ffi_call", "--dump-after=ffi_call",
               f"--callgrind-out-file={out}", sys.executable, os.path.abspath(__file__),
               CHILD_FLAG, name, "--ops", str(ops)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(f"{name}: the run under valgrind failed:\n{result.stderr[-3000:]}")
    dumps = sorted(glob.glob(out + ".*"), key=lambda path: int(path.rsplit(".", 1)[1]))
    totals = [_total(path) for path in dumps]
    if len(totals) < 3:
        raise SystemExit(f"{name}: expected 3 regions, callgrind wrote {len(totals)}")
    single, double = totals[-2], totals[-1]
    return (double - single) / ops


def _total(path: str) -> int:
    with open(path) as file:
        for line in file:
            match = re.match(r"(?:summary|totals):\s+(\d+)", line)
            if match:
                return int(match.group(1))
    return 0


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="*", metavar="WORKLOAD")
    parser.add_argument("--ops", type=int, default=DEFAULT_OPS,
                        help=f"ops (or nodes) in the smaller region (default {DEFAULT_OPS})")
    parser.add_argument("--list", action="store_true", help="name the workloads and exit")
    if argv[:1] == [CHILD_FLAG]:
        arguments = parser.parse_args(argv[1:])
        _child(arguments.workloads[0], arguments.ops)
        return
    arguments = parser.parse_args(argv)
    unknown = [name for name in arguments.workloads if name not in WORKLOADS]
    if arguments.list or not arguments.workloads or unknown:
        if unknown:
            print(f"unknown workload(s): {', '.join(unknown)}")
        print("workloads: " + ", ".join(WORKLOADS))
        return
    if shutil.which("valgrind") is None:
        print("instructions: skipped, valgrind is not installed (apt-get install valgrind)")
        return
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the CPU-time benches
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      os.environ.get("PYTHONPATH")]))
    counts = {}
    with tempfile.TemporaryDirectory() as folder:
        for name in arguments.workloads:
            counts[name] = per_op = _count(name, arguments.ops, folder)
            print(f"{name:<16} {per_op:12,.0f} instructions per op "
                  f"(callgrind, regions of {arguments.ops:,} and {2 * arguments.ops:,})",
                  flush=True)
    if "torch-forward" in counts and "chain-forward" in counts:
        print(f"chain-forward / torch-forward: "
              f"{counts['chain-forward'] / counts['torch-forward']:.2f}x torch's own tiny op")


if __name__ == "__main__":
    main(sys.argv[1:])
