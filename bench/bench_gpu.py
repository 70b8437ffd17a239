"""GPU: an MLP training step with 4096-wide layers, tracegrad on CuPy vs PyTorch on CUDA,
plus before/after timings of the fused kernels (tracegrad/backends/kernels.py).

The model is Linear(4096, 4096) -> ReLU -> Linear(4096, 4096) -> ReLU -> Linear(4096, 10),
batch 1024, cross-entropy, Adam: one step is zero_grad, forward, backward, optimizer.step.
Both frameworks start from the same weights and data, compute in float32 without TF32, and
are timed in turns (warm-up first, then the best of N per-step times, each closed by a
device synchronize). Target: tracegrad / PyTorch <= 1.2. Needs CuPy, torch and a GPU.

    python bench/bench_gpu.py [--repeats 10] [--steps 5] [--batch 1024] [--width 4096]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

TARGET = 1.2


def timed(function, synchronize, steps: int, repeats: int) -> float:
    """Best of ``repeats`` of the mean time of ``steps`` calls, synchronized at both ends."""
    function()
    synchronize()  # warm-up: kernels compile, memory pools fill
    best = float("inf")
    for _ in range(repeats):
        synchronize()
        start = time.perf_counter()
        for _ in range(steps):
            function()
        synchronize()
        best = min(best, (time.perf_counter() - start) / steps)
    return best


def make_data(batch: int, width: int, classes: int = 10):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, width)).astype(np.float32)
    labels = rng.integers(0, classes, batch)
    return x, labels


def tracegrad_step(width: int, batch: int):
    import tracegrad as tg
    import tracegrad.nn as nn

    tg.manual_seed(0)
    model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width),
                          nn.ReLU(), nn.Linear(width, 10)).to("cuda")
    optimizer = tg.optim.Adam(model.parameters(), lr=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    x_array, labels_array = make_data(batch, width)
    x = tg.tensor(x_array, device="cuda")
    labels = tg.tensor(labels_array, device="cuda")

    def step():
        optimizer.zero_grad()
        loss = loss_fn(model(x), labels)
        loss.backward()
        optimizer.step()
        return loss

    return model, step


def torch_step(torch, ours, width: int, batch: int):
    model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(),
                                torch.nn.Linear(width, width), torch.nn.ReLU(),
                                torch.nn.Linear(width, 10)).cuda()
    with torch.no_grad():
        for mine, theirs in zip(ours.parameters(), model.parameters()):
            theirs.copy_(torch.from_numpy(mine.detach().cpu().numpy()))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    x_array, labels_array = make_data(batch, width)
    x = torch.from_numpy(x_array).cuda()
    labels = torch.from_numpy(labels_array).cuda()

    def step():
        optimizer.zero_grad()
        loss = loss_fn(model(x), labels)
        loss.backward()
        optimizer.step()
        return loss

    return step


def training_step(args, torch, cupy) -> float:
    from tracegrad.backends import kernels

    sync_cupy = cupy.cuda.Device().synchronize
    ours_model, ours = tracegrad_step(args.width, args.batch)
    theirs = torch_step(torch, ours_model, args.width, args.batch)
    first_ours, first_theirs = float(ours().item()), float(theirs().item())
    print(f"first-step loss: tracegrad {first_ours:.6f}, pytorch {first_theirs:.6f}")
    times = {"tracegrad": [], "tracegrad unfused": [], "pytorch": []}
    for _ in range(3):  # in turns, so clock and thermal drift hit both alike
        kernels.enabled = True
        times["tracegrad"].append(timed(ours, sync_cupy, args.steps, args.repeats))
        kernels.enabled = False
        times["tracegrad unfused"].append(timed(ours, sync_cupy, args.steps, args.repeats))
        kernels.enabled = True
        times["pytorch"].append(timed(theirs, torch.cuda.synchronize, args.steps,
                                      args.repeats))
    best = {name: min(values) for name, values in times.items()}
    print(f"\nMLP step, batch {args.batch}, {args.width}-wide, Adam (ms per step, best):")
    for name, seconds in best.items():
        print(f"  {name:18s} {seconds * 1e3:8.3f}")
    ratio = best["tracegrad"] / best["pytorch"]
    print(f"  ratio tracegrad / pytorch = {ratio:.3f} (target <= {TARGET}); unfused "
          f"{best['tracegrad unfused'] / best['pytorch']:.3f}")
    return ratio


def fused_kernels(args, torch, cupy) -> None:
    """Each fused kernel against the array formula it replaces, on batch x width arrays."""
    import tracegrad as tg
    from tracegrad.backends import kernels

    sync = cupy.cuda.Device().synchronize
    rng = cupy.random.default_rng(0)
    shape = (args.batch, args.width)
    grad = rng.standard_normal(shape, dtype=cupy.float32)
    x = rng.standard_normal(shape, dtype=cupy.float32)
    y_tanh, y_sigmoid, y_relu = cupy.tanh(x), 1 / (1 + cupy.exp(-x)), cupy.maximum(x, 0)
    g, xt = tg.Tensor._wrap(grad, False), tg.Tensor._wrap(x, False)
    saved = {"tanh": y_tanh, "sigmoid": y_sigmoid, "relu": y_relu, "silu": x}
    saved_t = {name: tg.Tensor._wrap(array, False) for name, array in saved.items()}

    def unfused(name):  # the tensor formulas of tracegrad/ops/unary.py, under no_grad
        y = saved_t[name]
        if name == "tanh":
            return lambda: g * (1 - y * y)
        if name == "sigmoid":
            return lambda: g * y * (1 - y)
        if name == "relu":
            return lambda: g * (y > 0)
        return lambda: g * xt.sigmoid() * (1 + xt * (1 - xt.sigmoid()))

    print(f"\nactivation backward on {shape[0]}x{shape[1]} float32 (microseconds, best):")
    print(f"  {'':10s} {'unfused':>10s} {'fused':>10s} {'speed-up':>9s} {'torch':>10s}")
    tx = torch.randn(shape, device="cuda")
    tg_ = torch.randn(shape, device="cuda")
    torch_backward = {
        "tanh": lambda: torch.ops.aten.tanh_backward(tg_, tx),
        "sigmoid": lambda: torch.ops.aten.sigmoid_backward(tg_, tx),
        "relu": lambda: torch.ops.aten.threshold_backward(tg_, tx, 0),
        "silu": lambda: torch.ops.aten.silu_backward(tg_, tx),
    }
    with tg.no_grad():
        for name in ("relu", "sigmoid", "tanh", "silu"):
            kernels.enabled = False
            before = timed(unfused(name), sync, 20, args.repeats)
            kernels.enabled = True
            after = timed(lambda n=name: kernels.activation_backward(n, grad, saved[n]), sync,
                          20, args.repeats)
            reference = timed(torch_backward[name], torch.cuda.synchronize, 20, args.repeats)
            print(f"  {name:10s} {before * 1e6:10.1f} {after * 1e6:10.1f} "
                  f"{before / after:8.2f}x {reference * 1e6:10.1f}")

    params = [tg.nn.Parameter(tg.randn(args.width, args.width, device="cuda")),
              tg.nn.Parameter(tg.randn(args.width, args.width, device="cuda")),
              tg.nn.Parameter(tg.randn(10, args.width, device="cuda"))]
    for param in params:
        param.grad = tg.randn(*param.shape, device="cuda")
    optimizer = tg.optim.Adam(params, lr=1e-4, weight_decay=0.01)
    kernels.enabled = False
    before = timed(optimizer.step, sync, 10, args.repeats)
    kernels.enabled = True
    after = timed(optimizer.step, sync, 10, args.repeats)
    theirs = [torch.nn.Parameter(torch.randn(*p.shape, device="cuda")) for p in params]
    for param in theirs:
        param.grad = torch.randn_like(param)
    torch_optimizer = torch.optim.Adam(theirs, lr=1e-4, weight_decay=0.01)
    reference = timed(torch_optimizer.step, torch.cuda.synchronize, 10, args.repeats)
    count = sum(p.numel() for p in params)
    print(f"\nAdam step on {count / 1e6:.1f}M parameters (ms, best): unfused "
          f"{before * 1e3:.3f}, fused {after * 1e3:.3f} ({before / after:.2f}x); "
          f"pytorch (foreach) {reference * 1e3:.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--width", type=int, default=4096)
    args = parser.parse_args(argv)
    try:
        import cupy
        import torch
    except ImportError as error:
        print(f"bench_gpu needs CuPy and torch: {error}")
        return 2
    if not torch.cuda.is_available() or not cupy.cuda.is_available():
        print("bench_gpu needs a CUDA GPU (none is visible)")
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 on both sides: same math
    print(f"GPU: {torch.cuda.get_device_name()}; cupy {cupy.__version__}, torch "
          f"{torch.__version__}")
    ratio = training_step(args, torch, cupy)
    fused_kernels(args, torch, cupy)
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
