"""Fused CuPy kernels: one pass over memory where the array-level formula takes several.

On a GPU an elementwise formula like ``grad * result * (1 - result)`` launches one kernel
per operator and writes a temporary array each time; the backward of an activation is
memory-bound, so one fused kernel that reads its inputs once and writes one output is
about as many times faster as the formula had passes (bench/bench_gpu.py measures it).

Ops call these only for CuPy arrays and only when no graph is being built for the backward
(``create_graph=False``): the tensor-level formulas stay in the ops so that double
backward differentiates through them. Kernels compile on first use; importing this module
never imports cupy.

>>> from tracegrad.backends import kernels
>>> kernels.enabled  # bench/bench_gpu.py turns this off to time the unfused formulas
True
"""

from __future__ import annotations

from collections.abc import Callable

# Set to False to fall back to the array-level formulas (for before/after timings).
enabled = True

_cache: dict[str, Callable] = {}

# name -> (in_params, out_params, operation): cupy.ElementwiseKernel's three strings.
_SOURCES: dict[str, tuple[str, str, str]] = {
    "tanh_backward": ("T grad, T result", "T out", "out = grad * (1 - result * result)"),
    "sigmoid_backward": ("T grad, T result", "T out", "out = grad * result * (1 - result)"),
    "relu_backward": ("T grad, T result", "T out", "out = result > 0 ? grad : (T)0"),
    # d/dx x*s(x) = s + x*s*(1-s) = s * (1 + x * (1 - s))
    "silu_backward": (
        "T grad, T x", "T out",
        ("T e = exp(-fabs(x)); T s = x >= 0 ? (T)1 / ((T)1 + e) : e / ((T)1 + e);"
         "out = grad * s * ((T)1 + x * ((T)1 - s))")),
    # exp of -|x| never overflows: the stable form, picked by sign, in one pass
    "sigmoid_forward": (
        "T x", "T out",
        "T e = exp(-fabs(x)); out = x >= 0 ? (T)1 / ((T)1 + e) : e / ((T)1 + e)",
    ),
    "silu_forward": (
        "T x", "T out",
        "T e = exp(-fabs(x)); out = x >= 0 ? x / ((T)1 + e) : x * e / ((T)1 + e)"),
    # torch.optim.Adam's update (no amsgrad), all three arrays written in place. `sign` is
    # -1 for maximize; the scalars are cast to T by cupy.
    "adam_update": (
        ("T grad, T sign, T weight_decay, T beta1, T beta2, T step_size, "
         "T bias_correction2_sqrt, T eps"),
        "T param, T exp_avg, T exp_avg_sq",
        ("T g = sign * grad + weight_decay * param;"
         "exp_avg = beta1 * exp_avg + ((T)1 - beta1) * g;"
         "exp_avg_sq = beta2 * exp_avg_sq + ((T)1 - beta2) * (g * g);"
         "param = param - step_size * (exp_avg / (sqrt(exp_avg_sq) / bias_correction2_sqrt"
         " + eps))")),
}


def kernel(name: str) -> Callable:
    """The compiled ``cupy.ElementwiseKernel`` called ``name`` (built once, on first use)."""
    found = _cache.get(name)
    if found is None:
        from . import cuda

        cupy = cuda._load()
        in_params, out_params, operation = _SOURCES[name]
        found = _cache[name] = cupy.ElementwiseKernel(
            in_params, out_params, operation, f"tracegrad_{name}")
    return found


def activation_backward(name: str, grad, saved):
    """``grad`` times the activation's derivative, from the saved result (or input for
    silu), in one kernel: ``activation_backward("tanh", g, y) == g * (1 - y * y)``."""
    return kernel(f"{name}_backward")(grad, saved)


def sigmoid_forward(x):
    return kernel("sigmoid_forward")(x)


def silu_forward(x):
    return kernel("silu_forward")(x)


def adam_update(param, grad, exp_avg, exp_avg_sq, *, lr: float, beta1: float, beta2: float,
                eps: float, weight_decay: float, maximize: bool, step: int) -> None:
    """One Adam step on CuPy arrays, in place, as ``optim.Adam`` computes it unfused."""
    bias_correction1 = 1 - beta1 ** step
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    kernel("adam_update")(grad, -1.0 if maximize else 1.0, weight_decay, beta1, beta2,
                          lr / bias_correction1, bias_correction2_sqrt, eps,
                          param, exp_avg, exp_avg_sq)
