"""tracegrad.testing.gradcheck: a failing composite names the node whose backward is wrong."""

from __future__ import annotations

import re

import pytest
from tutorial_programs import BadSquare, GoodSquare

import tracegrad as tg
from tracegrad.autograd.gradcheck import GradcheckError
from tracegrad.testing import NodeGradcheckError, gradcheck


class ScaledSum(tg.autograd.Function):
    """sum(x * scale) with a keyword-free non-tensor argument; backward ignores scale."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.shape = x.shape
        return (x * scale).sum()

    @staticmethod
    def backward(ctx, grad):
        return grad * tg.ones(ctx.shape, dtype=tg.float64), None


def inputs():
    return (tg.randn(4, dtype=tg.float64, requires_grad=True),)


def test_passing_composite_returns_true():
    assert gradcheck(lambda x: (x.exp() * GoodSquare.apply(x)).sum(dim=0), inputs()) is True


def test_names_the_custom_function_whose_backward_is_wrong():
    with pytest.raises(NodeGradcheckError) as raised:
        gradcheck(lambda x: x.exp() * BadSquare.apply(x), inputs())
    error = raised.value
    assert [node.name for node in error.nodes] == ["BadSquareBackward"]
    message = str(error)
    assert "The backward of 1 node(s) is wrong" in message
    # the forward line that made the node, with its code
    assert re.search(r"BadSquareBackward created at \S*test_testing_gradcheck\.py:\d+ ", message)
    assert "BadSquare.apply(x)" in message
    assert "Nodes whose backward passed: ExpBackward0, MulBackward0." in message
    assert isinstance(error, GradcheckError) and isinstance(error, RuntimeError)


def test_the_site_points_at_the_forward_line():
    def composite(x):
        h = x.sin()
        return h * BadSquare.apply(h)  # the culprit

    with pytest.raises(NodeGradcheckError) as raised:
        gradcheck(composite, inputs())
    (node,) = raised.value.nodes
    assert node.site.function == "composite"
    assert node.site.code == "return h * BadSquare.apply(h)  # the culprit"


def test_non_tensor_arguments_are_replayed():
    with pytest.raises(NodeGradcheckError) as raised:
        gradcheck(lambda x: ScaledSum.apply(x.exp(), 3.0), inputs())
    assert [node.name for node in raised.value.nodes] == ["ScaledSumBackward"]


def test_raise_exception_false_returns_false():
    assert gradcheck(lambda x: BadSquare.apply(x).sum(), inputs(), raise_exception=False) is False


def test_builtin_ops_with_keyword_attributes_pass_their_local_check():
    from tracegrad.testing.gradcheck import locate_wrong_nodes

    x = tg.randn(2, 3, dtype=tg.float64, requires_grad=True)
    wrong, passed = locate_wrong_nodes(
        lambda t: t.sum(dim=1, keepdim=True).expand(2, 3).reshape(3, 2).t().mm(t.t()), (x,))
    assert wrong == []
    assert "SumBackward1" in passed and "MmBackward0" in passed


def test_apply_is_restored_after_checking():
    from tracegrad.autograd.function import Function, Op

    before = (Function.__dict__["apply"], Op.__dict__["apply"])
    with pytest.raises(NodeGradcheckError):
        gradcheck(lambda x: BadSquare.apply(x), inputs())
    assert (Function.__dict__["apply"], Op.__dict__["apply"]) == before


def test_ops_with_keyword_attributes_are_rechecked_with_them():
    # sum(dim=1, keepdim=True) and transpose(0, 1) only make sense again with their
    # attributes: the on_op event carries them (node._call_kwargs), nothing is patched.
    from tracegrad.autograd.function import Function, Op

    applies = (Function.__dict__["apply"], Op.__dict__["apply"])
    seen = []

    def func(x):
        seen.append((Function.__dict__["apply"], Op.__dict__["apply"]))
        return BadSquare.apply(x.sum(dim=1, keepdim=True).transpose(0, 1))

    x = tg.randn(2, 3, dtype=tg.float64, requires_grad=True)
    with pytest.raises(NodeGradcheckError) as caught:
        gradcheck(func, (x,))
    assert [node.name for node in caught.value.nodes] == ["BadSquareBackward"]
    assert "SumBackward1" in str(caught.value) and "TransposeBackward0" in str(caught.value)
    assert all(pair == applies for pair in seen)
