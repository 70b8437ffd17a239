"""How the bridge reads a torch program's backward() and autograd.grad() calls."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")


@pytest.mark.parametrize("func", [torch.Tensor.backward, torch.autograd.backward,
                                  torch.autograd.grad])
def test_a_backward_calls_arguments_are_read_as_signature_bind_reads_them(func):
    """The bridge reads backward()/grad() arguments from a parameter list kept per
    function (not Signature.bind per call): the same names and values, defaults filled in,
    and the same refusals (torch then raises its own error)."""
    import inspect

    from tracegrad.bridge.passes import Passes

    passes = Passes.__new__(Passes)
    passes._signatures = {}
    x = torch.ones(2, requires_grad=True)
    calls = [((x,), {}), ((x, None), {}), ((x,), {"retain_graph": True}),
             ((x,), {"inputs": [x]}), ((x, [x]), {}), ((x, x), {"create_graph": True}),
             ((x,), {"bogus": 1}), ((x, None), {"gradient": None}), ((), {}),
             ((x, None, True, False, None, 5, 6, 7, 8, 9, 10), {})]
    signature = inspect.signature(func)
    for args, kwargs in calls:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            expected = None
        else:
            bound.apply_defaults()
            expected = dict(bound.arguments)
        got = passes._arguments(func, args, kwargs)
        if expected is None:
            assert got is None, (args, kwargs)
        else:
            assert got is not None and got.keys() == expected.keys(), (args, kwargs)
            assert all(got[name] is expected[name] for name in expected), (args, kwargs)
