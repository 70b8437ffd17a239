"""An in-place op whose input shares memory with what it writes: PyTorch refuses partial
overlap (``x[1:] += x[:-1]`` would read elements it has already overwritten) with one
message, and tracegrad must refuse exactly the same cases, not compute a value silently."""
from __future__ import annotations

import numpy as np
import pytest

import tracegrad

OVERLAP = ("unsupported operation: some elements of the input tensor and the written-to "
           "tensor refer to a single memory location.")

# name -> what it does to x = arange(10.) (``lib`` is tracegrad or torch)
CASES = {
    "add_ shifted": lambda lib, x: x[1:].add_(x[:-1]),
    "+= shifted": lambda lib, x: x[1:].__iadd__(x[:-1]),
    "+= itself": lambda lib, x: x.__iadd__(x),
    "add_ 0-dim element": lambda lib, x: x[:1].add_(x[0]),
    "mul_ same view": lambda lib, x: x[1:].mul_(x[1:]),
    "pow_ shifted": lambda lib, x: x[:4].pow_(x[1:5]),
    "addcdiv_ shifted": lambda lib, x: x[:4].addcdiv_(x[1:5], lib.ones(4)),
    "lerp_ shifted": lambda lib, x: x[1:].lerp_(x[:-1], 0.5),
    "clamp_ tensor bound": lambda lib, x: x[1:].clamp_(min=x[:-1]),
    "copy_ shifted": lambda lib, x: x[1:].copy_(x[:-1]),
    "copy_ itself": lambda lib, x: x.copy_(x),
    "transposed square": lambda lib, x: x[:4].view(2, 2).add_(x[:4].view(2, 2).t()),
    "strided halves": lambda lib, x: x[0:4:2].add_(x[2:6:2]),
    "columns with gaps": lambda lib, x: x[:6].view(2, 3)[:, :2].add_(x[:6].view(2, 3)[:, 1:]),
    "setitem shifted": lambda lib, x: x.__setitem__(slice(1, None), x[:-1]),
    "setitem disjoint": lambda lib, x: x.__setitem__(slice(0, 3), x[3:6]),
    "setitem same part": lambda lib, x: x.__setitem__(slice(0, 3), x[:3]),
    "setitem 0-dim": lambda lib, x: x.__setitem__(slice(0, 3), x[1]),
    "setitem advanced": lambda lib, x: x.__setitem__([0, 1], x[1:3]),
    "index_put_ shifted": lambda lib, x: x.index_put_((lib.tensor([0, 1]),), x[1:3]),
    "index_add_ shifted": lambda lib, x: x[:4].index_add_(0, lib.tensor([0, 1]), x[1:3]),
    "scatter_ shifted": lambda lib, x: x[:4].scatter_(0, lib.tensor([0, 1]), x[1:3]),
    "fill_ from an element": lambda lib, x: x[:4].fill_(x[1]),
    "masked_fill_ element": lambda lib, x: x[:4].masked_fill_(x[:4] > 1, x[2]),
    "masked_scatter_": lambda lib, x: x[:4].masked_scatter_(lib.ones(4, dtype=lib.bool),
                                                              x[1:5]),
    "addmm_ shifted": lambda lib, x: x[:4].view(2, 2).addmm_(x[1:5].view(2, 2), lib.eye(2)),
}


def _run(lib, case, requires_grad=False):
    x = lib.arange(10.0)
    if requires_grad:  # recorded: a non-leaf that needs grad
        x = (lib.arange(10.0).requires_grad_() * 1.0)
    try:
        CASES[case](lib, x)
    except RuntimeError as error:
        return "error", str(error)
    return "ok", x.detach().numpy().copy()


@pytest.mark.torch
@pytest.mark.parametrize("requires_grad", [False, True], ids=["plain", "recorded"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_overlap_refused_where_torch_refuses(case, requires_grad):
    torch = pytest.importorskip("torch")
    expected = _run(torch, case, requires_grad)
    got = _run(tracegrad, case, requires_grad)
    assert got[0] == expected[0], (case, got, expected)
    if got[0] == "error":
        assert expected[1].startswith(OVERLAP)
        assert got[1].startswith(OVERLAP)
        assert "Please clone() the tensor before performing the operation." in got[1]
    else:
        np.testing.assert_allclose(got[1], expected[1])


def test_overlap_error_names_both_tensors():
    x = tracegrad.arange(10.0)
    with pytest.raises(RuntimeError) as caught:
        x[1:] += x[:-1]
    text = str(caught.value)
    assert text.startswith(OVERLAP)
    assert "writing into" in text and "Hint: write from source.clone()" in text
    assert x.tolist() == list(np.arange(10.0))  # nothing was written


def test_optimizer_style_update_still_takes_the_fast_path():
    w = tracegrad.ones(4)
    g = tracegrad.full((4,), 0.5)
    w -= 0.1 * g
    w += g  # a different storage: no overlap
    np.testing.assert_allclose(w.numpy(), np.full(4, 1.45), rtol=1e-6)
    assert w._version == 2
