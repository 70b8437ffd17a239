"""Two-layer net, 500 steps with MyReLU: tracegrad vs hand-written NumPy backprop vs PyTorch.

Runs the loops of examples/two_layer_net.py, examples/two_layer_net_numpy.py and (with
``import torch``) the first again, on identical data: CPU time, one BLAS thread, the
contenders interleaved round by round, medians (bench/_harness.py). Target (issue 14):
tracegrad / NumPy <= 1.15.

A fourth contender, "numpy+grad", is the NumPy loop doing what PyTorch's semantics make
every framework do beyond it: add each step's weight gradient into the kept ``.grad``
(AccumulateGrad's in-place ``grad += new``) and zero it after the update (``zero_()``),
two more passes over the [1000, 100] gradient. Its ratio to NumPy is the floor no
amount of Python-overhead work takes tracegrad (or PyTorch) below. The last line shows
what the Python overhead costs at full size: numpy+grad with tracegrad's size-1 step run
inside each step, beside numpy+grad and the size-1 step alone (overhead_beside_arrays).

    .venv/bin/python bench/bench_two_layer.py [--repeats 5] [--steps 500] [--profile]
    .venv/bin/python bench/bench_two_layer.py --phases  # where a size-1 step's time goes
    .venv/bin/python bench/bench_two_layer.py --all-threads   # then the default BLAS threads
"""

from __future__ import annotations

import argparse
import sys

from _harness import (
    describe_threads,
    interleaved,
    load_example,
    one_blas_thread,
    run_each_thread_setting,
    torch_or_none,
    versus,
)

one_blas_thread()

import numpy as np  # after the BLAS thread count is set

TARGET = 1.15


def train_numpy_with_grads(steps: int, data: list, rate: float, beside=None) -> list:
    """examples/two_layer_net_numpy.py's loop plus what PyTorch's semantics add: each
    gradient is accumulated into a kept ``.grad`` array and that is zeroed after the
    update (as examples/two_layer_net.py's loop makes tracegrad and PyTorch do).
    ``beside``: a callable run in each step after the loss (see overhead_beside_arrays)."""
    x, y, w1, w2 = data
    w1_grad, w2_grad = np.zeros_like(w1), np.zeros_like(w2)
    history = []
    for _ in range(steps):
        h = x.dot(w1)
        h_relu = np.maximum(h, 0)
        y_pred = h_relu.dot(w2)
        history.append(np.square(y_pred - y).sum().item())
        if beside is not None:
            beside()
        grad_y_pred = 2.0 * (y_pred - y)
        grad_w2 = h_relu.T.dot(grad_y_pred)
        grad_h = grad_y_pred.dot(w2.T).copy()
        grad_h[h < 0] = 0
        w1_grad += x.T.dot(grad_h)  # AccumulateGrad: the kept .grad, added to in place
        w2_grad += grad_w2
        w1 -= rate * w1_grad
        w2 -= rate * w2_grad
        w1_grad.fill(0)  # w1.grad.zero_()
        w2_grad.fill(0)
    return history


def measure(steps: int, repeats: int) -> dict[str, float]:
    import tracegrad as tg

    numpy_example = load_example("two_layer_net_numpy")
    ours = load_example("two_layer_net")
    arrays = numpy_example.make_data(np.float32)

    def numpy_run():
        numpy_example.train(steps, data=[array.copy() for array in arrays])

    def tracegrad_run():
        ours.train(steps, data=[tg.tensor(a.copy(), requires_grad=i >= 2)
                                for i, a in enumerate(arrays)])

    def numpy_with_grads_run():
        train_numpy_with_grads(steps, [array.copy() for array in arrays],
                               numpy_example.learning_rate)

    runs = {"numpy": numpy_run, "numpy+grad": numpy_with_grads_run,
            "tracegrad": tracegrad_run}
    torch = torch_or_none()
    if torch is not None:
        theirs = load_example("two_layer_net", real_torch=True)

        def torch_run():
            theirs.train(steps, data=[torch.tensor(a.copy(), requires_grad=i >= 2)
                                      for i, a in enumerate(arrays)])

        runs["pytorch"] = torch_run
    return interleaved(runs, repeats)


def overhead_per_step(steps: int, repeats: int) -> dict[str, float]:
    """Seconds per step with every size 1: what each framework costs beyond the math."""
    import tracegrad as tg

    numpy_example = load_example("two_layer_net_numpy")
    ours = load_example("two_layer_net")
    for module in (numpy_example, ours):
        module.N = module.D_in = module.H = module.D_out = 1
    arrays = numpy_example.make_data(np.float32)
    times = interleaved({
        "numpy": lambda: numpy_example.train(steps, [a.copy() for a in arrays]),
        "tracegrad": lambda: ours.train(steps, [tg.tensor(a.copy(), requires_grad=i >= 2)
                                                for i, a in enumerate(arrays)])}, repeats)
    return {name: seconds / steps for name, seconds in times.items()}


def overhead_beside_arrays(steps: int, repeats: int) -> dict[str, float]:
    """Seconds per step of numpy+grad, of tracegrad's step with every size 1, and of the
    two together -- the size-1 step run inside each numpy+grad step. The last is about
    tracegrad's own time at full size, more than the sum of the first two: between the
    passes over the [1000, 100] arrays the interpreter's working set is no longer in the
    caches, so the same Python work costs more there than it does alone (and a full-size
    step costs about the floor plus that, not plus the size-1 figure)."""
    import tracegrad as tg

    numpy_example = load_example("two_layer_net_numpy")
    tiny = load_example("two_layer_net")
    tiny_numpy = load_example("two_layer_net_numpy")
    for module in (tiny, tiny_numpy):
        module.N = module.D_in = module.H = module.D_out = 1
    arrays, tiny_arrays = numpy_example.make_data(np.float32), tiny_numpy.make_data(np.float32)

    def tiny_data():
        return [tg.tensor(a.copy(), requires_grad=i >= 2) for i, a in enumerate(tiny_arrays)]

    def together():
        data = tiny_data()
        train_numpy_with_grads(steps, [a.copy() for a in arrays], numpy_example.learning_rate,
                               beside=lambda: tiny.train(1, data))

    times = interleaved({
        "numpy+grad": lambda: train_numpy_with_grads(
            steps, [a.copy() for a in arrays], numpy_example.learning_rate),
        "size-1 step": lambda: tiny.train(steps, tiny_data()),
        "together": together}, repeats)
    return {name: seconds / steps for name, seconds in times.items()}


def phases_per_step(steps: int, repeats: int) -> dict[str, dict[str, float]]:
    """Seconds per step of each phase with every size 1 -- forward (to ``loss.item()``),
    backward, update (``w -= lr * w.grad`` and ``zero_``) -- for tracegrad and, for the
    same phases written by hand, NumPy: where the per-step overhead lives. CPU time, the
    median of ``repeats`` runs of ``steps`` steps each."""
    import statistics
    import time

    import tracegrad as tg

    ours = load_example("two_layer_net")
    relu, rate = ours.MyReLU.apply, ours.learning_rate
    arrays = [np.full((1, 1), value, np.float32) for value in (0.5, 0.25, 0.75, -0.5)]
    x, y, w1, w2 = (tg.tensor(a, requires_grad=i >= 2) for i, a in enumerate(arrays))
    nx, ny, nw1, nw2 = (a.copy() for a in arrays)
    clock = time.process_time

    def tracegrad_step(spent):
        started = clock()
        loss = (relu(x.mm(w1)).mm(w2) - y).pow(2).sum()
        loss.item()
        forward_done = clock()
        loss.backward()
        backward_done = clock()
        with tg.no_grad():
            w1.sub_(rate * w1.grad)  # (what the example's w1 -= ... runs)
            w2.sub_(rate * w2.grad)
            w1.grad.zero_()
            w2.grad.zero_()
        spent[0] += forward_done - started
        spent[1] += backward_done - forward_done
        spent[2] += clock() - backward_done

    def numpy_step(spent):
        started = clock()
        h = nx.dot(nw1)
        h_relu = np.maximum(h, 0)
        y_pred = h_relu.dot(nw2)
        np.square(y_pred - ny).sum().item()
        forward_done = clock()
        grad_y_pred = 2.0 * (y_pred - ny)
        grad_w2 = h_relu.T.dot(grad_y_pred)
        grad_h = grad_y_pred.dot(nw2.T).copy()  # (the example's grad_h_relu.copy())
        grad_h[h < 0] = 0
        grad_w1 = nx.T.dot(grad_h)
        backward_done = clock()
        np.subtract(nw1, rate * grad_w1, out=nw1)  # (the example's nw1 -= ...)
        np.subtract(nw2, rate * grad_w2, out=nw2)
        spent[0] += forward_done - started
        spent[1] += backward_done - forward_done
        spent[2] += clock() - backward_done

    samples = {"numpy": [], "tracegrad": []}
    for _ in range(repeats):
        for name, step in (("numpy", numpy_step), ("tracegrad", tracegrad_step)):
            spent = [0.0, 0.0, 0.0]
            for _ in range(steps):
                step(spent)
            samples[name].append(spent)
    return {name: {phase: statistics.median(run[index] for run in runs) / steps
                   for index, phase in enumerate(("forward", "backward", "update"))}
            for name, runs in samples.items()}


def report(times: dict[str, float], steps: int) -> None:
    print(f"two-layer net, {steps} steps, CPU time, median of interleaved runs "
          f"(OMP_NUM_THREADS={describe_threads()})")
    for name, seconds in times.items():
        print(f"  {name:<10} {seconds:8.3f} s   {seconds / steps * 1e3:7.3f} ms/step")
    print(versus("tracegrad / numpy", times["tracegrad"] / times["numpy"], TARGET))
    print(f"  numpy+grad / numpy  = {times['numpy+grad'] / times['numpy']:.3f}   (the floor: "
          "PyTorch's accumulate and zero_ in NumPy)")
    print(f"  tracegrad / numpy+grad = {times['tracegrad'] / times['numpy+grad']:.3f}")
    if "pytorch" in times:
        print(f"  tracegrad / pytorch = {times['tracegrad'] / times['pytorch']:.3f}")
        print(f"  pytorch / numpy     = {times['pytorch'] / times['numpy']:.3f}")


def profile(steps: int) -> None:
    import cProfile
    import pstats

    import tracegrad as tg

    ours = load_example("two_layer_net")
    arrays = load_example("two_layer_net_numpy").make_data(np.float32)
    data = [tg.tensor(a.copy(), requires_grad=i >= 2) for i, a in enumerate(arrays)]
    profiler = cProfile.Profile()
    profiler.runcall(ours.train, steps, data)
    pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="cProfile tracegrad's loop")
    parser.add_argument("--phases", action="store_true",
                        help="only the per-step cost of forward, backward and update, sizes 1")
    parser.add_argument("--all-threads", action="store_true",
                        help="run once with one BLAS thread, then with the default")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.profile:
        profile(args.steps)
        return 0
    if args.phases:
        phases = phases_per_step(args.steps, args.repeats)
        print("per-step cost of each phase with all sizes 1 (CPU time, median of runs):")
        for phase in ("forward", "backward", "update"):
            print(f"  {phase:<9} numpy {phases['numpy'][phase] * 1e6:6.1f} us   tracegrad "
                  f"{phases['tracegrad'][phase] * 1e6:6.1f} us")
        return 0
    if args.all_threads and not args.child:
        return run_each_thread_setting(__file__, [a for a in argv if a != "--all-threads"])
    report(measure(args.steps, args.repeats), args.steps)
    overhead = overhead_per_step(args.steps, args.repeats)
    print(f"  per-step cost with all sizes 1 (pure overhead): numpy "
          f"{overhead['numpy'] * 1e6:.1f} us, tracegrad {overhead['tracegrad'] * 1e6:.1f} us")
    beside = overhead_beside_arrays(args.steps, args.repeats)
    print(f"  numpy+grad {beside['numpy+grad'] * 1e6:.1f} us/step, tracegrad's size-1 step "
          f"{beside['size-1 step'] * 1e6:.1f} us, the two in one loop "
          f"{beside['together'] * 1e6:.1f} us:\n    the size-1 step costs "
          f"{(beside['together'] - beside['numpy+grad']) * 1e6:.1f} us beside the arrays "
          "(the caches they evict)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
