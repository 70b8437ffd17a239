"""The tutorials' programs, small, for the golden DOT files next to this module.

Each function runs one program with ``import tracegrad as torch`` semantics and returns
what to draw. test_draw_golden.py traces each one and compares its DOT text with
``<function name>.dot`` here (line numbers left out, so editing this file moves nothing
there; an intended change of the picture: TRACEGRAD_UPDATE_GOLDEN=1, then review the diff).
"""

from __future__ import annotations

from tutorial_programs import Exp, GlobalMaxPool, LinearFunction, MyReLU, SwishImplementation

import tracegrad as torch


def two_layer_net():
    """The 'defining new autograd functions' tutorial, one training step."""
    torch.manual_seed(0)
    x = torch.randn(4, 3)
    y = torch.randn(4, 2)
    w1 = torch.randn(3, 5, requires_grad=True)
    w2 = torch.randn(5, 2, requires_grad=True)
    y_pred = MyReLU.apply(x.mm(w1)).mm(w2)
    loss = (y_pred - y).pow(2).sum()
    loss.backward()
    with torch.no_grad():
        w1 -= 1e-6 * w1.grad
        w2 -= 1e-6 * w2.grad
    return loss


def linear_function():
    torch.manual_seed(0)
    x = torch.randn(4, 3, requires_grad=True)
    weight = torch.randn(2, 3, requires_grad=True)
    bias = torch.randn(2, requires_grad=True)
    out = LinearFunction.apply(x, weight, bias)
    total = out.sum()
    total.backward()
    return total


def exp():
    torch.manual_seed(0)
    x = torch.randn(3, requires_grad=True)
    y = Exp.apply(x)
    y.backward(torch.ones(3))
    return y


def swish():
    torch.manual_seed(0)
    x = torch.randn(2, 3, requires_grad=True)
    loss = SwishImplementation.apply(x).mean()
    loss.backward()
    return loss


def global_max_pool():
    torch.manual_seed(0)
    x = torch.randn(2, 4, requires_grad=True)
    pooled = GlobalMaxPool.apply(x)
    loss = pooled.sum()
    loss.backward()
    return loss


PROGRAMS = {
    "two_layer_net": two_layer_net,
    "linear_function": linear_function,
    "exp": exp,
    "swish": swish,
    "global_max_pool": global_max_pool,
}
