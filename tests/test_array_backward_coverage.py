"""Every op's backward formula runs on backend arrays when no graph is built of the backward
pass, and on Tensors with create_graph -- one definition per op (tracegrad/ops/__init__.py).
This lists every Op subclass there is (the registry's, nn's fused ops, the internal ones) and
fails for one whose formula still needs Tensors, unless it is on ``ON_TENSORS_ONLY`` with the
reason. tests/test_ops_gradients.py checks that each flagged formula really runs both ways
and gives the same numbers."""

from __future__ import annotations

import importlib

import numpy as np

import tracegrad as tg
from tracegrad import ops
from tracegrad.autograd.function import Op

# op class name -> why its backward formula runs on Tensors only (the engine wraps the
# arrays for it: correct, slower). Empty: every op has an array path.
ON_TENSORS_ONLY: dict[str, str] = {}

# Modules that define Op subclasses outside tracegrad.ops (imported so none is missed).
_MODULES = ("tracegrad.nn._ops", "tracegrad._legacy", "tracegrad.autograd.gradcheck_jacobians")


def _every_op() -> dict[str, type]:
    ops.registry()  # imports every op module
    for name in _MODULES:
        importlib.import_module(name)
    found, pending = {}, list(Op.__subclasses__())
    while pending:
        op = pending.pop()
        pending.extend(op.__subclasses__())
        if op.__module__.startswith("tracegrad.") and not op.__name__.startswith("_"):
            found[f"{op.__module__}.{op.__name__}"] = op
    return found


def test_every_op_has_an_array_backward_or_a_reason():
    every = _every_op()
    assert len(every) >= len(ops.registry()) + 3  # the registry, nn's fused ops and more
    missing = sorted(qualified for qualified, op in every.items()
                     if not op._node_class._takes_arrays
                     and op.__name__ not in ON_TENSORS_ONLY)
    assert not missing, (
        f"{len(missing)} ops run their backward on Tensors only: {missing}. Write the formula "
        "for both kinds of value (tracegrad/ops/__init__.py) and set array_backward = True, "
        "or list the op in ON_TENSORS_ONLY with the reason.")


def test_the_list_of_exceptions_names_real_ops_that_need_it():
    names = {op.__name__: op for op in _every_op().values()}
    for name, reason in ON_TENSORS_ONLY.items():
        assert name in names, f"{name} is not an op"
        assert not names[name]._node_class._takes_arrays, f"{name} has an array path now"
        assert reason.strip(), f"{name} needs a reason"


def test_the_flag_follows_the_formula_a_subclass_writes():
    class _Twice(Op):
        node_name = "TwiceBackward"

        @staticmethod
        def forward(ctx, a):
            return a._array * 2

        @staticmethod
        def backward(ctx, grad):
            return (grad * 2,)

    class _Thrice(_Twice):  # inherits the flag it does not set: none
        array_backward = True

        @staticmethod
        def backward(ctx, grad):
            return (grad * 3,)

    assert not _Twice._node_class._takes_arrays
    assert _Thrice._node_class._takes_arrays
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    _Thrice.apply(_Twice.apply(x)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 6.0])
