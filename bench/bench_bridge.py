"""What observing a real PyTorch program costs: the same program on torch without tracing
and under ``tracegrad.record()``, side by side in one run (round-robin, best of N, so the
load of a shared machine drifts over every configuration alike).

* the tutorial's two-layer net (examples/two_layer_net.py with ``import torch``):
  structure only (target <= 1.5x untraced) and with values (<= 2.5x);
* a 1,000-step nn.Sequential MLP trained with Adam (examples/train_mlp.py on torch), the
  tracer keeping values for its default passes (the first and last 2): <= 2x.

    .venv/bin/python bench/bench_bridge.py [--steps 200] [--mlp-steps 1000] [--repeat 3]
                                           [--explain]

torch runs on one thread (the machine is shared; the tracer's cost is per op, not per FLOP);
times are this process's CPU time. Three rows in parentheses say where the time goes: a
TorchFunctionMode that only passes calls on (the floor for any observer of torch calls), the
same mode hooking each new node with a no-op pre-hook and post-hook (the floor for any
observer of backward steps through torch's node hooks), and the bridge reporting to a
listener that does nothing (the bridge's share; the rest of a recording's cost is the
recorder's).

``--explain`` then says where a recording's time goes, per configuration: the shares by
subtraction (torch's dispatch to any mode, the bridge, the recorder), the garbage
collector's time during the recording (young and full collections apart: a full one scans
the program's whole heap, torch's ~290,000 objects included, and the trace's growth is what
triggers them), and per listener event its count and the recorder's
time in it (perf_counter around each call, one run; the bridge's share divided by the
events it sent is its cost per event).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time

from _harness import load_example, torch_or_none

import tracegrad

TWO_LAYER_TARGETS = {"structure only": 1.5, "values": 2.5}
MLP_TARGET = 2.0


def _timed(function) -> float:
    # CPU time of this process: on a shared machine, wall time also counts the time other
    # processes had the CPU, which is not ours to report.
    started = time.process_time()
    function()
    return time.process_time() - started


def _round_robin(configurations: dict, repeat: int) -> dict:
    best = dict.fromkeys(configurations, float("inf"))
    for _ in range(repeat):
        for label, function in configurations.items():
            # Each run starts from the same collector state: the count of objects that
            # triggers a full collection carries over from run to run, so without this the
            # configuration that happens to cross it pays for the ones before it.
            gc.collect()
            best[label] = min(best[label], _timed(function))
    return best


def _traced(function, **options):
    def run() -> None:
        with tracegrad.record(**options) as trace:
            function()
        assert trace.metadata["engine"] == "torch" and trace.passes
    return run


def _mode_only(function):
    """The floor: a TorchFunctionMode that passes every call on (torch's own dispatch cost,
    which any observer of torch calls pays)."""
    from torch.overrides import TorchFunctionMode

    class PassOn(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    def run() -> None:
        with PassOn():
            function()
    return run


def _hooks_only(function):
    """A floor of this design: the no-op mode, plus what any observer of backward steps
    through node hooks pays -- a no-op pre-hook and post-hook on every node that a backward
    will run, as the bridge hooks them: the nodes each call made (a composite call's inner
    ones too, F.linear's TBackward0) and each leaf's AccumulateGrad, once per node
    (a mark in the node's metadata dict, which dies with it), registered through torch's
    public API and run by every backward. No adapters, no saved tensors, no events."""
    import torch
    from torch.overrides import TorchFunctionMode

    next_sequence_nr = torch._C._autograd._get_sequence_nr
    tensor_type = torch.Tensor

    def hook(*args) -> None:
        return None

    def hook_new_nodes(result, first: int, last: int) -> None:
        outputs = result if isinstance(result, (tuple, list)) else (result,)
        pending = [item.grad_fn for item in outputs
                   if isinstance(item, tensor_type) and item.grad_fn is not None]
        while pending:
            node = pending.pop()
            metadata = node.metadata
            if "hooked" in metadata:
                continue
            made_now = first <= node._sequence_nr() < last
            if not made_now and not hasattr(node, "variable"):  # older, not a leaf's
                continue
            metadata["hooked"] = True
            node.register_prehook(hook)
            node.register_hook(hook)
            if made_now:
                pending.extend(child for child, _ in node.next_functions if child is not None)

    class HookEachNode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            first = next_sequence_nr()
            result = func(*args, **(kwargs or {}))
            last = next_sequence_nr()
            if last != first:
                hook_new_nodes(result, first, last)
            return result

    def run() -> None:
        with HookEachNode():
            function()
    return run


def _bridge_only(function):
    """The bridge's own share: armed, reporting to a listener that does nothing (no
    recorder), so the difference to a recording is the recorder's."""
    from tracegrad import bridge
    from tracegrad.autograd import events

    def run() -> None:
        attachment = bridge.attach()
        try:
            with events.subscribe(events.Listener()):
                function()
        finally:
            attachment.detach()
    return run


# (a pass without create_graph tells its steps in arrays: on_node_start_arrays, ...)
_EVENTS = ("on_op", "on_tensor", "on_detach", "on_untracked_op", "on_value_out",
           "on_grad_reset", "on_inplace", "on_inplace_refused", "on_backward_start",
           "on_node_start", "on_node_end", "on_node_start_arrays", "on_node_end_arrays",
           "on_hook", "on_accumulate", "on_backward_end", "on_error")


def _explained(function, **options) -> tuple[float, dict, dict]:
    """One recording of ``function``: (CPU seconds, {generation: [collections, seconds]} of
    the garbage collector, {event: [count, seconds in the recorder]})."""
    from time import perf_counter

    counts: dict = {}
    recorder = tracegrad.record(**options)
    for event in _EVENTS:
        method = getattr(recorder, event)
        entry = counts[event] = [0, 0.0]

        def timed(*args, _method=method, _entry=entry):
            started = perf_counter()
            try:
                return _method(*args)
            finally:
                _entry[0] += 1
                _entry[1] += perf_counter() - started
        setattr(recorder, event, timed)
    collecting = {generation: [0, 0.0] for generation in range(3)}
    started_at = [0.0]

    def collector(phase, info) -> None:
        if phase == "start":
            started_at[0] = perf_counter()
        else:
            entry = collecting[info["generation"]]
            entry[0] += 1
            entry[1] += perf_counter() - started_at[0]
    gc.collect()
    gc.callbacks.append(collector)
    try:
        started = time.process_time()
        with recorder:
            function()
        seconds = time.process_time() - started
    finally:
        gc.callbacks.remove(collector)
    return seconds, collecting, {event: entry for event, entry in counts.items()
                                 if entry[0]}


def _full_collection_seconds() -> tuple[int, float]:
    """(objects the collector tracks, seconds of one full collection) of this process as
    it is: what every full collection during a recording scans besides the trace."""
    gc.collect()
    started = time.perf_counter()
    gc.collect()
    return len(gc.get_objects()), time.perf_counter() - started


def _explain(title: str, best: dict, function, configurations: dict) -> None:
    """Where a recording's time goes (see the module docstring)."""
    off, mode, bridge = (best["untraced"], best["(no-op TorchFunctionMode)"],
                         best["(bridge, no-op listener)"])
    print(f"  where the time goes ({title}; shares of the untraced time, best of the runs "
          "above):")
    hooks = best["(no-op mode + no-op node hooks)"]
    print(f"    torch's dispatch to a mode (the floor) {100 * (mode - off) / off:6.0f}%")
    print(f"    no-op node hooks, registered and run  {100 * (hooks - mode) / off:6.0f}%")
    print(f"    the bridge (no-op listener)           {100 * (bridge - mode) / off:6.0f}%")
    for label in configurations:
        print(f"    the recorder, {label:<24} {100 * (best[label] - bridge) / off:6.0f}%")
    heap, full = _full_collection_seconds()
    print(f"  the program's heap: {heap} objects the garbage collector tracks (torch's "
          f"modules, mostly); one full collection of it alone {1e3 * full:.0f} ms")
    for label, options in configurations.items():
        seconds, collecting, events_seen = _explained(function, **options)
        sent = sum(count for count, _ in events_seen.values())
        spent = sum(entry[1] for entry in collecting.values())
        young = collecting[0][0] + collecting[1][0]
        print(f"  {label}, one instrumented run: {seconds:.3f} s, of which the garbage "
              f"collector {spent:.3f} s ({young} young collections "
              f"{collecting[0][1] + collecting[1][1]:.3f} s, {collecting[2][0]} full ones "
              f"{collecting[2][1]:.3f} s); {sent} events, the bridge's share "
              f"{1e6 * (bridge - mode) / max(sent, 1):.1f} us per event")
        print(f"    {'event':<22} {'count':>8} {'recorder us/event':>18} {'recorder s':>11}")
        for event, (count, spent) in sorted(events_seen.items(), key=lambda item: -item[1][1]):
            print(f"    {event:<22} {count:8d} {1e6 * spent / count:18.1f} {spent:11.3f}")


def _report(title: str, best: dict, targets: dict) -> bool:
    off = best["untraced"]
    print(title)
    print(f"  {'':<34} {'seconds':>8}  {'ratio':>6}  target")
    met = True
    for label, seconds in best.items():
        ratio = seconds / off
        target = targets.get(label)
        verdict = ""
        if target is not None:
            verdict = f"<= {target:.1f}x  {'ok' if ratio <= target else 'OVER'}"
            met &= ratio <= target
        print(f"  {label:<34} {seconds:8.3f}  {ratio:5.2f}x  {verdict}")
    return met


def bench_two_layer(torch, steps: int, repeat: int, explain: bool = False) -> bool:
    module = load_example("two_layer_net", real_torch=True)

    def train() -> None:
        module.train(steps=steps)

    module.train(steps=10)  # warm up torch's kernels and the bridge's caches
    _traced(lambda: module.train(steps=2))()
    best = _round_robin({"untraced": train,
                         "(no-op TorchFunctionMode)": _mode_only(train),
                         "(no-op mode + no-op node hooks)": _hooks_only(train),
                         "(bridge, no-op listener)": _bridge_only(train),
                         "structure only": _traced(train, values=False),
                         "values": _traced(train)}, repeat)
    met = _report(f"two-layer net (64x1000 -> 100 -> 10, MyReLU), {steps} steps, best of "
                  f"{repeat}:", best, TWO_LAYER_TARGETS)
    if explain:
        _explain("two-layer net", best, train,
                 {"structure only": {"values": False}, "values": {}})
    return met


def bench_mlp(torch, steps: int, repeat: int, explain: bool = False) -> bool:
    module = load_example("train_mlp", real_torch=True)

    def train() -> None:
        module.train(steps=steps)

    module.train(steps=10)
    best = _round_robin({"untraced": train,
                         "(no-op TorchFunctionMode)": _mode_only(train),
                         "(no-op mode + no-op node hooks)": _hooks_only(train),
                         "(bridge, no-op listener)": _bridge_only(train),
                         "values (first and last 2 passes)": _traced(train)}, repeat)
    met = _report(f"nn.Sequential MLP (2 -> 32 -> 32 -> 3, Adam), {steps} steps, best of "
                  f"{repeat}:", best, {"values (first and last 2 passes)": MLP_TARGET})
    if explain:
        _explain("MLP", best, train, {"values (first and last 2 passes)": {}})
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="two-layer net steps")
    parser.add_argument("--mlp-steps", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--explain", action="store_true",
                        help="where the time goes: shares, garbage collection, per event")
    args = parser.parse_args()
    torch = torch_or_none()
    if torch is None:
        print("bench_bridge: torch is not installed; nothing to measure", file=sys.stderr)
        return 0
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread")
    met = bench_two_layer(torch, args.steps, args.repeat, args.explain)
    met &= bench_mlp(torch, args.mlp_steps, args.repeat, args.explain)
    print("all targets met" if met else "some targets missed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
