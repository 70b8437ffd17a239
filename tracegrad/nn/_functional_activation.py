"""Activation functions of ``torch.nn.functional`` (re-exported by ``nn.functional``).

Those torch records as one node are ops (``tracegrad/ops/activation.py``); the others are
written as torch writes them (softsign is ``x / (1 + |x|)``, a DivBackward0). ``inplace``
variants write into the input and rebase its history, as torch's do.

>>> import tracegrad as torch
>>> import tracegrad.nn.functional as F
>>> F.leaky_relu(torch.tensor([-2.0, 3.0]), 0.1)
tensor([-0.2000,  3.0000])
"""

from __future__ import annotations

import warnings

from .. import backends
from ..factories import empty_like, zeros_like
from ..ops import activation as ops
from ..ops import unary
from ..ops.rrelu import RreluWithNoise
from ..random import numpy_generator
from ..tensor import Tensor


def _apply(input: Tensor, inplace: bool, name: str, op, *args) -> Tensor:
    if inplace:
        return input._inplace(name, op, *args)
    return op.apply(input, *args)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return input.relu_() if inplace else input.relu()


def relu_(input: Tensor) -> Tensor:
    return input.relu_()


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(0, x), 6)``: hardtanh(0, 6), as torch computes it."""
    return hardtanh(input, 0, 6, inplace)  # ints: grad_fn._saved_max_val is 6, as torch's


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``input * sigmoid(input)`` (swish), one SiluBackward0 node.

    >>> import tracegrad as torch
    >>> torch.nn.functional.silu(torch.tensor([0.0, 2.0]))
    tensor([0.0000, 1.7616])
    """
    return _apply(input, inplace, "silu_", unary.Silu)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    return _apply(input, inplace, "leaky_relu_", ops.LeakyRelu, negative_slope)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, True)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, inplace: bool = False) -> Tensor:
    """Leaky ReLU with a random negative slope per element, drawn from U(lower, upper) in
    training (from tracegrad's generator: other numbers than torch's), their mean otherwise.
    """
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    noise = None
    if training:
        x = input._array
        slopes = numpy_generator().uniform(lower, upper, tuple(input.shape)).astype(x.dtype)
        noise = input._xp.where(x <= 0, backends.to_device(slopes, input.device),
                                x.dtype.type(1))
    return _apply(input, inplace, "rrelu_", RreluWithNoise, noise, lower, upper, training)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    return rrelu(input, lower, upper, training, True)


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """A sample of the Gumbel-softmax distribution: softmax((logits + Gumbel noise) / tau).
    ``hard`` gives one-hot vectors whose gradient is the soft sample's (straight through).
    Written as torch writes it, so the graph is torch's (the noise from tracegrad's
    generator: other numbers)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -empty_like(logits).exponential_().log()  # ~Gumbel(0, 1)
    y_soft = ((logits + gumbels) / tau).softmax(dim)  # ~Gumbel(logits, tau)
    if not hard:
        return y_soft  # the reparameterization trick
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft  # straight through


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    return _apply(input, inplace, "elu_", ops.Elu, alpha, 1, 1)  # torch's int scales


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """ELU with SELU's fixed alpha and scale (an EluBackward0 node, as in torch)."""
    return _apply(input, inplace, "selu_", ops.Elu, ops.SELU_ALPHA, ops.SELU_SCALE, 1)


def selu_(input: Tensor) -> Tensor:
    return selu(input, True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    if alpha == 0:
        raise ZeroDivisionError("ZeroDivisionError: alpha cannot be 0 for CELU")
    # scale 1 (an int), as torch's celu passes it on to elu's backward
    return _apply(input, inplace, "celu_", ops.Celu, alpha, 1, 1.0 / alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha, True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """``x * Phi(x)``; ``approximate="tanh"`` for the tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got "
                           f"{approximate!r}")
    return ops.Gelu.apply(input, approximate)


def softplus(input: Tensor, beta: float = 1, threshold: float = 20) -> Tensor:
    # (ints by default, as torch's signature: grad_fn._saved_beta shows 1)
    return ops.Softplus.apply(input, beta, threshold)


def softsign(input: Tensor) -> Tensor:
    return input / (input.abs() + 1)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _apply(input, inplace, "hardtanh_", ops.Hardtanh, min_val, max_val)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, True)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    return _apply(input, inplace, "hardsigmoid_", ops.Hardsigmoid)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    return _apply(input, inplace, "hardswish_", ops.Hardswish)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    return _apply(input, inplace, "mish_", ops.Mish)


def logsigmoid(input: Tensor) -> Tensor:
    return ops.LogSigmoid.apply(input)


def tanhshrink(input: Tensor) -> Tensor:
    return input - input.tanh()


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return ops.Softshrink.apply(input, lambd)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    return ops.Hardshrink.apply(input, lambd)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    return _apply(input, inplace, "threshold_", ops.Threshold, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return input._inplace("threshold_", ops.Threshold, threshold, value)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    return ops.Glu.apply(input, dim)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    return ops.PreluKernel.apply(input, ops.prelu_weight(input, weight))


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype=None) -> Tensor:
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim, _stacklevel)
    return unary.softmax(input, dim, dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype=None) -> Tensor:
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim, _stacklevel)
    return unary.log_softmax(input, dim, dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype=None) -> Tensor:
    """``softmax(-input)``: a SoftmaxBackward0 after a NegBackward0, as in torch."""
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim, _stacklevel)
    if dtype is not None:
        input = input.to(dtype)
    return unary.softmax(-input, dim)
