"""Backward formulas whose saved values decide what a program may do, as torch 2.13: the
tensors a node keeps are the ones an in-place change must not touch before backward, and
the formula picks the same element when values tie or are NaN. Each test runs on tracegrad
and on torch (``lib``)."""

from __future__ import annotations

import math

import pytest

MODIFIED = "one of the variables needed for gradient computation has been modified by an " \
           "inplace operation"


def test_fmax_and_fmin_send_the_gradient_where_torch_does(lib):
    nan = math.nan
    a = lib.tensor([1.0, 2.0, nan, nan, 3.0], requires_grad=True)
    b = lib.tensor([1.0, 1.0, 2.0, nan, nan], requires_grad=True)
    (lib.fmax(a, b) * lib.tensor([1.0, 2.0, 3.0, 4.0, 5.0])).sum().backward()
    assert a.grad.tolist() == [1.0, 2.0, 0.0, 4.0, 5.0]
    assert b.grad.tolist() == [0.0, 0.0, 3.0, 0.0, 0.0]
    a.grad = b.grad = None
    lib.fmin(a, b).sum().backward()
    assert a.grad.tolist() == [1.0, 0.0, 0.0, 1.0, 1.0]
    assert b.grad.tolist() == [0.0, 1.0, 1.0, 0.0, 0.0]


@pytest.mark.parametrize("op", ["erfinv", "sgn", "copysign", "fmax", "logit"])
def test_an_in_place_change_of_a_saved_input_is_refused(lib, op):
    x = lib.tensor([0.25, -0.5], requires_grad=True)
    calls = {"erfinv": lambda t: t.erfinv(), "sgn": lambda t: t.sgn(),
             "copysign": lambda t: lib.copysign(t, lib.tensor([-1.0, 1.0])),
             "fmax": lambda t: lib.fmax(t, lib.zeros(2)), "logit": lambda t: t.logit()}
    y = x * 1
    out = calls[op](y)
    y.mul_(2)
    with pytest.raises(RuntimeError, match=MODIFIED):
        out.sum().backward()


def test_erfinv_keeps_its_input_not_its_output(lib):
    x = lib.tensor([0.25, -0.5], requires_grad=True)
    out = x.erfinv()
    out.mul_(1)  # torch's node does not keep the output: backward still runs
    out.sum().backward()
    expected = [math.sqrt(math.pi) / 2 * math.exp(v ** 2) for v in (0.2253120550121781,
                                                                     -0.4769362762044699)]
    assert x.grad.tolist() == pytest.approx(expected)


@pytest.mark.parametrize("op", ["scatter", "scatter_value", "scatter_add", "gather",
                                "index_fill", "index_copy", "index_add"])
def test_an_in_place_change_of_a_saved_index_is_refused(lib, op):
    x = lib.ones(3, 4, requires_grad=True)
    index = lib.tensor([[0, 1], [2, 3]])
    calls = {"scatter": lambda: x.scatter(1, index, x[:2, :2] * 2),
             "scatter_value": lambda: x.scatter(-1, index, 2.0),
             "scatter_add": lambda: x.scatter_add(-1, index, x[:2, :2] * 2),
             "gather": lambda: x.gather(1, index),
             "index_fill": lambda: x.index_fill(1, index[0], 2.0).sum(0)[:2].reshape(1, 2),
             "index_copy": lambda: x.index_copy(1, index[0], x[:, :2] * 2).sum(0)[:2]
             .reshape(1, 2),
             "index_add": lambda: x.index_add(1, index[0], x[:, :2] * 2).sum(0)[:2]
             .reshape(1, 2)}
    out = calls[op]()
    if op.startswith("scatter") or op == "gather":
        assert out.grad_fn._saved_index.tolist() == [[0, 1], [2, 3]]
    index.add_(0)
    with pytest.raises(RuntimeError, match=MODIFIED):
        out.sum().backward()
