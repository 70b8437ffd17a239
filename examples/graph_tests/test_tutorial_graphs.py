"""Graph assertions on the tutorials' programs: each tracegrad.testing helper in use.

Run with ``pytest examples/graph_tests`` (the tracegrad pytest plugin is active whenever
tracegrad is installed). ``--tracegrad-update`` rewrites the stored graph snapshots.
"""

import pytest
from exp_function import Exp
from global_max_pool import GlobalMaxPool
from linear_function import LinearFunction
from swish import MemoryEfficientSwish
from two_layer_net import MyReLU

import tracegrad as torch
from tracegrad.testing import (
    NodeGradcheckError,
    assert_contains_chain,
    assert_graph,
    assert_no_nan,
    assert_no_path,
    assert_no_violations,
    assert_op_counts,
    assert_saved,
    gradcheck,
)


def two_layer_step(x, y, w1, w2):
    y_pred = MyReLU.apply(x.mm(w1)).mm(w2)
    return (y_pred - y).pow(2).sum()


def small_net():
    torch.manual_seed(0)
    x, y = torch.randn(4, 6), torch.randn(4, 2)
    w1 = torch.randn(6, 3, requires_grad=True)
    w2 = torch.randn(3, 2, requires_grad=True)
    return x, y, w1, w2


def test_swish_saves_only_its_input():
    """The memory-efficient Swish keeps x alone, not sigmoid(x) too."""
    x = torch.randn(8, requires_grad=True)
    y = MemoryEfficientSwish()(x).sum()
    assert_graph(y, """
        SumBackward0
          SwishImplementationBackward  saves: x f32[8]
            AccumulateGrad  x f32[8]
    """)


def test_two_layer_net_graph():
    x, y, w1, w2 = small_net()
    loss = two_layer_step(x, y, w1, w2)
    assert_graph(loss, """
        SumBackward0
          PowBackward0  saves: t1 f32[4,2]
            SubBackward0
              MmBackward0  saves: t2 f32[4,3], w2 f32[3,2]
                MyReLUBackward  saves: t3 f32[4,3]
                  MmBackward0  saves: x f32[4,6]
                    AccumulateGrad  w1 f32[6,3]
                AccumulateGrad  w2 f32[3,2]
    """)


def test_two_layer_net_structure():
    """When the whole text is too much: counts, a chain, what one node saves."""
    x, y, w1, w2 = small_net()
    loss = two_layer_step(x, y, w1, w2)
    assert_op_counts(loss, {"MmBackward0": 2, "MyReLUBackward": 1})
    assert_contains_chain(loss, ["SumBackward0", "PowBackward0", "SubBackward0"])
    assert_contains_chain(loss, ["MmBackward0", "MyReLUBackward", "MmBackward0"])
    assert_saved(loss, "MyReLUBackward", count=1, nbytes=4 * 3 * 4)


def test_linear_function_saves_input_weight_and_bias():
    input = torch.randn(5, 3, requires_grad=True)
    weight = torch.randn(2, 3, requires_grad=True)
    bias = torch.randn(2, requires_grad=True)
    out = LinearFunction.apply(input, weight, bias).sum()
    assert_saved(out, "LinearFunctionBackward", count=3, names=["input", "weight", "bias"])


def test_exp_saves_its_result_not_its_input():
    i = torch.randn(4, requires_grad=True)
    result = Exp.apply(i)
    assert_saved(result.sum(), "ExpBackward", count=1, names=["result"])


def test_global_max_pool_indices_are_not_differentiable():
    x = torch.randn(2, 3, 4, 5, requires_grad=True)
    max_val, indices = GlobalMaxPool.apply(x)
    assert not indices.requires_grad
    assert_graph(max_val.sum(), """
        SumBackward0
          GlobalMaxPoolBackward  saves: indices i64[2,3]
            AccumulateGrad  x f32[2,3,4,5]
    """)


def test_detach_cuts_the_first_layer_off():
    x, y, w1, w2 = small_net()
    hidden = MyReLU.apply(x.mm(w1)).detach()  # train the second layer only
    loss = (hidden.mm(w2) - y).pow(2).sum()
    assert_no_path(loss, loss, w1)


def test_one_training_step_is_clean(tracegrad_trace):
    x, y, w1, w2 = small_net()
    two_layer_step(x, y, w1, w2).backward()
    assert_no_violations(tracegrad_trace)
    assert_no_nan(tracegrad_trace)


def test_an_inplace_bug_is_reported(tracegrad_trace):
    x, _, w1, _ = small_net()
    h = x.mm(w1).sigmoid()
    h.mul_(2)  # SigmoidBackward0 saved h: backward would fail
    with pytest.raises(AssertionError, match="inplace_saved"):
        assert_no_violations(tracegrad_trace)


@pytest.mark.filterwarnings("ignore:(invalid value|divide by zero):RuntimeWarning")
def test_a_nan_is_reported(tracegrad_trace):
    w = torch.tensor([1.0, 0.0], requires_grad=True)
    (w.log() * w).sum().backward()
    with pytest.raises(AssertionError, match="NaN"):
        assert_no_nan(tracegrad_trace)


def test_two_layer_net_snapshot(graph_snapshot):
    """The same graph kept in __graph_snapshots__/ instead of inline."""
    x, y, w1, w2 = small_net()
    graph_snapshot(two_layer_step(x, y, w1, w2))


def test_linear_function_gradcheck():
    input = torch.randn(5, 3, dtype=torch.double, requires_grad=True)
    weight = torch.randn(2, 3, dtype=torch.double, requires_grad=True)
    assert gradcheck(LinearFunction.apply, (input, weight))


def test_gradcheck_names_the_broken_backward():
    class HalfBrokenExp(Exp):
        @staticmethod
        def backward(ctx, grad_output):
            (result,) = ctx.saved_tensors
            return grad_output * result * 0.5

    x = torch.randn(3, dtype=torch.double, requires_grad=True)
    with pytest.raises(NodeGradcheckError, match="HalfBrokenExpBackward created at"):
        gradcheck(lambda t: (t.sin() * HalfBrokenExp.apply(t)).sum(dim=0), (x,))
