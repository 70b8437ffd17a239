"""graph_text and the assertions on real graphs (live tensors traced with from_tensor)."""

from __future__ import annotations

import pytest
from tutorial_programs import MemoryEfficientSwish

import tracegrad as tg
from tracegrad.testing import (
    assert_contains_chain,
    assert_graph,
    assert_no_nan,
    assert_no_path,
    assert_no_violations,
    assert_op_counts,
    assert_saved,
    graph_text,
)


def test_the_issue_example_verbatim():
    x = tg.randn(8, requires_grad=True)
    y = MemoryEfficientSwish()(x).sum()
    assert_graph(y, """
        SumBackward0
          SwishImplementationBackward  saves: x f32[8]
            AccumulateGrad  x f32[8]
    """)


def two_layer_loss():
    x = tg.randn(4, 3)
    y = tg.randn(4, 2)
    w1 = tg.randn(3, 5, requires_grad=True)
    w2 = tg.randn(5, 2, requires_grad=True)
    h_relu = x.mm(w1).clamp(min=0)
    y_pred = h_relu.mm(w2)
    return (y_pred - y).pow(2).sum()


TWO_LAYER = """
    SumBackward0
      PowBackward0  saves: t1 f32[4,2]
        SubBackward0
          MmBackward0  saves: t2 f32[4,5], t3 f32[5,2]
            ClampBackward1  saves: t4 f32[4,5]
              MmBackward0  saves: t5 f32[4,3]
                AccumulateGrad  t6 f32[3,5]
            AccumulateGrad  t3 f32[5,2]
"""


def test_text_is_the_same_on_every_run():
    first = graph_text(two_layer_loss())
    for _ in range(3):
        assert graph_text(two_layer_loss()) == first


def test_two_layer_net_graph_with_names_from_the_callers_variables():
    x = tg.randn(4, 3)
    w1 = tg.randn(3, 5, requires_grad=True)
    w2 = tg.randn(5, 2, requires_grad=True)
    h_relu = x.mm(w1).clamp(min=0)
    loss = h_relu.mm(w2).sum()
    assert_graph(loss, """
        SumBackward0
          MmBackward0  saves: h_relu f32[4,5], w2 f32[5,2]
            ClampBackward1  saves: t1 f32[4,5]
              MmBackward0  saves: x f32[4,3]
                AccumulateGrad  w1 f32[3,5]
            AccumulateGrad  w2 f32[5,2]
    """)


def test_two_layer_net_unnamed_tensors_get_counter_labels():
    assert_graph(two_layer_loss(), TWO_LAYER)


def test_shared_node_is_referenced_not_repeated():
    x = tg.randn(3, requires_grad=True)
    e = x.exp()
    z = (e * e.sin()).sum()
    assert_graph(z, """
        SumBackward0
          MulBackward0  saves: e f32[3], t1 f32[3]
            ExpBackward0  saves: e f32[3]  #1
              AccumulateGrad  x f32[3]
            SinBackward0  saves: e f32[3]
              ExpBackward0 -> (see #1)
    """)


def test_diff_on_a_real_graph():
    x = tg.randn(3, requires_grad=True)
    with pytest.raises(AssertionError) as raised:
        assert_graph(x.exp().mean(), """
            SumBackward0
              ExpBackward0  saves: t1 f32[3]
                AccumulateGrad  x f32[3]
        """)
    assert "-SumBackward0\n+MeanBackward0" in str(raised.value)


def test_deep_chain_is_printed_without_recursion():
    x = tg.randn(2, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0
    lines = graph_text(y.sum(), saved=False).splitlines()
    assert len(lines) == 3002
    assert lines[-1] == " " * 2 * 3001 + "AccumulateGrad  x f32[2]"


def test_op_counts_and_chain_on_a_real_graph():
    loss = two_layer_loss()
    assert_op_counts(loss, {"MmBackward0": 2, "ClampBackward1": 1})
    assert_contains_chain(loss, ["SumBackward0", "PowBackward0", "SubBackward0"])
    assert_contains_chain(loss, ["MmBackward0", "ClampBackward1", "MmBackward0"])
    with pytest.raises(AssertionError, match="no path in the graph goes through"):
        assert_contains_chain(loss, ["SubBackward0", "ClampBackward1"])


def test_detach_cuts_the_graph():
    w1 = tg.randn(3, 5, requires_grad=True)
    w2 = tg.randn(5, 2, requires_grad=True)
    features = tg.randn(4, 3).mm(w1)
    out = features.detach().mm(w2).sum()
    assert_no_path(out, out, w1)  # w1 is not in out's graph at all
    both = features.mm(w2).sum()
    with pytest.raises(AssertionError, match=r"gradients flow along: SumBackward0 -> "
                                             r"MmBackward0 -> MmBackward0 -> AccumulateGrad"):
        assert_no_path(both, both, w1)
    with pytest.raises(ValueError, match="no tensor or node named 'w9'"):
        assert_no_path(out, out, "w9")


def test_saved_counts_and_bytes():
    x = tg.randn(8, requires_grad=True)
    y = MemoryEfficientSwish()(x).sum()
    assert_saved(y, "SwishImplementationBackward", count=1, nbytes=32, names=["x"])
    with pytest.raises(AssertionError, match=r"count: expected 2, found 1"):
        assert_saved(y, "SwishImplementationBackward", count=2)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_violations_and_nan_from_a_recorded_trace():
    x = tg.tensor([1.0, 0.0, 2.0], requires_grad=True)
    with tg.record() as clean:
        x.exp().sum().backward()
    assert_no_violations(clean)
    assert_no_nan(clean)

    with tg.record() as broken:
        h = x.sigmoid()
        h.mul_(2)  # h is saved by SigmoidBackward0
    with pytest.raises(AssertionError, match=r"\[inplace_saved\]"):
        assert_no_violations(broken)

    with tg.record() as with_nan:
        (x.log() * 0).sum().backward()
    with pytest.raises(AssertionError, match="expected no NaN or Inf"):
        assert_no_nan(with_nan)
