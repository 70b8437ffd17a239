"""graph_text and the structural assertions on hand-built Traces (no tracer involved)."""

from __future__ import annotations

import pytest

from tracegrad.testing.assertions import (
    assert_contains_chain,
    assert_graph,
    assert_no_nan,
    assert_no_path,
    assert_no_violations,
    assert_op_counts,
    assert_saved,
)
from tracegrad.testing.graph_text import graph_text, normalize_text, short_type
from tracegrad.tracing.model import (
    NodeRecord,
    SavedRecord,
    Stats,
    TensorRecord,
    Trace,
    Value,
    Violation,
)


def swish_trace() -> Trace:
    """MemoryEfficientSwish()(x).sum(), as the tracer would record it."""
    trace = Trace()
    trace.tensors[0] = TensorRecord(0, (8,), "float32", name="x", requires_grad=True)
    trace.tensors[1] = TensorRecord(1, (8,), "float32", is_leaf=False, grad_fn=1,
                                    requires_grad=True)
    trace.tensors[2] = TensorRecord(2, (), "float32", is_leaf=False, grad_fn=2,
                                    requires_grad=True)
    trace.nodes[0] = NodeRecord(0, "AccumulateGrad", kind="accumulate", leaf=0)
    trace.nodes[1] = NodeRecord(1, "SwishImplementationBackward", kind="function",
                                inputs=[0], outputs=[1], next=[(0, 0)],
                                saved=[SavedRecord(0, 0, 32, slot="0")])
    trace.nodes[2] = NodeRecord(2, "SumBackward0", inputs=[1], outputs=[2], next=[(1, 0)])
    return trace


def diamond_trace() -> Trace:
    """h = x.exp(); y = (h * h.sin()).sum(): ExpBackward0 is reached twice."""
    trace = Trace()
    trace.tensors[0] = TensorRecord(0, (3,), "float64", name="x", requires_grad=True)
    trace.tensors[1] = TensorRecord(1, (3,), "float64", is_leaf=False, grad_fn=1)
    trace.tensors[2] = TensorRecord(2, (3,), "float64", is_leaf=False, grad_fn=2)
    trace.tensors[3] = TensorRecord(3, (3,), "float64", is_leaf=False, grad_fn=3)
    trace.tensors[4] = TensorRecord(4, (), "float64", is_leaf=False, grad_fn=4, name="y")
    trace.nodes[0] = NodeRecord(0, "AccumulateGrad", kind="accumulate", leaf=0)
    trace.nodes[1] = NodeRecord(1, "ExpBackward0", inputs=[0], outputs=[1], next=[(0, 0)],
                                saved=[SavedRecord(1, 0, 24, slot="result", is_output=True)])
    trace.nodes[2] = NodeRecord(2, "SinBackward0", inputs=[1], outputs=[2], next=[(1, 0)],
                                saved=[SavedRecord(1, 0, 24, slot="self")])
    trace.nodes[3] = NodeRecord(3, "MulBackward0", inputs=[1, 2], outputs=[3],
                                next=[(1, 0), (2, 0)],
                                saved=[SavedRecord(1, 0, 24, slot="self"),
                                       SavedRecord(2, 0, 24, slot="other")])
    trace.nodes[4] = NodeRecord(4, "SumBackward0", inputs=[3], outputs=[4], next=[(3, 0)])
    return trace


def test_swish_text_matches_the_issue_example():
    assert graph_text(swish_trace()) == (
        "SumBackward0\n"
        "  SwishImplementationBackward  saves: x f32[8]\n"
        "    AccumulateGrad  x f32[8]")


def test_shared_subgraph_is_printed_once_and_referenced():
    assert graph_text(diamond_trace()) == (
        "SumBackward0\n"
        "  MulBackward0  saves: t1 f64[3], t2 f64[3]\n"
        "    ExpBackward0  saves: t1 f64[3]  #1\n"
        "      AccumulateGrad  x f64[3]\n"
        "    SinBackward0  saves: t1 f64[3]\n"
        "      ExpBackward0 -> (see #1)")


def test_unnamed_labels_do_not_depend_on_tensor_ids():
    shifted = Trace()
    # The same graph, recorded after 100 unrelated tensors: ids differ, the text must not.
    original = diamond_trace()
    offset = 100
    for record in original.tensors.values():
        record.id += offset
        if record.grad_fn is not None:
            record.grad_fn += offset
        shifted.tensors[record.id] = record
    for node in original.nodes.values():
        node.id += offset
        node.next = [(n + offset, nr) for n, nr in node.next]
        node.inputs = [t + offset for t in node.inputs]
        node.outputs = [t + offset for t in node.outputs]
        node.saved = [SavedRecord(s.tensor + offset, s.version, s.nbytes, s.slot) for s in node.saved]
        if node.leaf is not None:
            node.leaf += offset
        shifted.nodes[node.id] = node
    assert graph_text(shifted) == graph_text(diamond_trace())


def test_unnamed_label_skips_names_the_user_took():
    trace = diamond_trace()
    trace.tensors[0].name = "t1"
    text = graph_text(trace)
    assert "AccumulateGrad  t1 f64[3]" in text
    assert "saves: t2 f64[3], t3 f64[3]" in text


def test_saved_false_leaves_saves_out():
    assert graph_text(swish_trace(), saved=False) == (
        "SumBackward0\n  SwishImplementationBackward\n    AccumulateGrad  x f32[8]")


def test_short_types():
    assert short_type("float64", (2, 3)) == "f64[2,3]"
    assert short_type("int64", ()) == "i64[]"
    assert short_type("bool", (4,)) == "b8[4]"


def test_normalize_text_dedents_and_trims():
    assert normalize_text("\n    A\n      B   \n\n") == "A\n  B"


def test_assert_graph_passes_on_indented_text():
    assert_graph(swish_trace(), """
        SumBackward0
          SwishImplementationBackward  saves: x f32[8]
            AccumulateGrad  x f32[8]
    """)


def test_assert_graph_fails_with_a_unified_diff():
    with pytest.raises(AssertionError) as raised:
        assert_graph(swish_trace(), """
            SumBackward0
              SwishImplementationBackward  saves: x f32[8], t1 f32[8]
                AccumulateGrad  x f32[8]
        """)
    message = str(raised.value)
    assert "--- expected" in message and "+++ actual" in message
    assert "-  SwishImplementationBackward  saves: x f32[8], t1 f32[8]" in message
    assert "+  SwishImplementationBackward  saves: x f32[8]" in message


def test_op_counts():
    assert_op_counts(diamond_trace(), {"ExpBackward0": 1, "MulBackward0": 1})
    assert_op_counts(diamond_trace(), {"ExpBackward0": 1, "MulBackward0": 1, "SinBackward0": 1,
                                       "SumBackward0": 1, "AccumulateGrad": 1}, exact=True)
    with pytest.raises(AssertionError, match=r"MulBackward0: expected 2, found 1"):
        assert_op_counts(diamond_trace(), {"MulBackward0": 2})
    with pytest.raises(AssertionError, match=r"SinBackward0: expected none, found 1"):
        assert_op_counts(diamond_trace(), {"ExpBackward0": 1, "MulBackward0": 1,
                                           "SumBackward0": 1, "AccumulateGrad": 1}, exact=True)


def test_contains_chain():
    assert_contains_chain(diamond_trace(), ["SumBackward0", "MulBackward0", "SinBackward0",
                                            "ExpBackward0"])
    assert_contains_chain(diamond_trace(), ["SinBackward0", "ExpBackward0", "AccumulateGrad"])
    with pytest.raises(AssertionError) as raised:
        assert_contains_chain(diamond_trace(), ["MulBackward0", "AccumulateGrad"])
    message = str(raised.value)
    assert "MulBackward0 -> AccumulateGrad" in message
    assert "SumBackward0 -> MulBackward0 -> ExpBackward0 -> AccumulateGrad" in message


def test_no_path():
    trace = diamond_trace()
    assert_no_path(trace, "SinBackward0", "MulBackward0")
    with pytest.raises(AssertionError, match=r"SumBackward0 -> MulBackward0 -> ExpBackward0 "
                                             r"-> AccumulateGrad"):
        assert_no_path(trace, "y", "x")
    with pytest.raises(ValueError, match="no tensor or node named 'w'"):
        assert_no_path(trace, "y", "w")


def test_saved():
    trace = diamond_trace()
    assert_saved(trace, "MulBackward0", count=2, nbytes=48, names=["t1", "t2"])
    assert_saved(swish_trace(), "SwishImplementationBackward", count=1, names=["x"])
    with pytest.raises(AssertionError, match=r"count: expected 1, found 2"):
        assert_saved(trace, "MulBackward0", count=1)
    with pytest.raises(AssertionError, match=r"nbytes: expected 8, found 48"):
        assert_saved(trace, "MulBackward0", nbytes=8)
    with pytest.raises(AssertionError, match=r"no node named MmBackward0"):
        assert_saved(trace, "MmBackward0", count=1)


def test_no_violations_and_no_nan():
    trace = diamond_trace()
    assert_no_violations(trace)
    assert_no_nan(trace)
    trace.violations.append(Violation("nan", "NaN first appeared in the output of LogBackward0",
                                      node=1))
    with pytest.raises(AssertionError, match=r"(?s)\[nan\].*LogBackward0"):
        assert_no_violations(trace)
    assert_no_violations(trace, kinds=["inplace_saved"])
    with pytest.raises(AssertionError, match="expected no NaN or Inf"):
        assert_no_nan(trace)


def test_no_nan_reads_captured_values():
    trace = diamond_trace()
    trace.tensors[2].value = Value((3,), "float64", Stats(nan_count=2))
    with pytest.raises(AssertionError, match=r"tensor t\d value: 2 NaN, 0 Inf"):
        assert_no_nan(trace)


def test_root_picks_one_graph_of_a_trace():
    trace = diamond_trace()
    trace.tensors[2].name = "s"
    assert graph_text(trace, root="s") == (
        "SinBackward0  saves: t1 f64[3]\n  ExpBackward0  saves: t1 f64[3]\n"
        "    AccumulateGrad  x f64[3]")
    with pytest.raises(ValueError, match="no tensor named 'q'"):
        graph_text(trace, root="q")
