"""A torch tensor's graph, read without recording: from_tensor, graph_text / assert_graph,
to_dot -- names from the code and from named_parameters(), and a 100,000-deep chain."""

from __future__ import annotations

import re
import sys

import pytest

import tracegrad as tg
from tracegrad.testing import assert_graph, assert_op_counts, assert_saved, graph_text
from tracegrad.tracing import from_tensor

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")


def test_graph_text_of_a_torch_tensor_names_what_the_code_names():
    torch.manual_seed(0)
    x = torch.randn(4, 5)
    w = torch.randn(5, 3, requires_grad=True)
    loss = x.mm(w).sigmoid().sum()
    assert_graph(loss, """
        SumBackward0
          SigmoidBackward0  saves: t1 f32[4,3]
            MmBackward0  saves: x f32[4,5]
              AccumulateGrad  w f32[5,3]
    """)
    assert_op_counts(loss, {"MmBackward0": 1, "AccumulateGrad": 1}, exact=False)
    assert_saved(loss, "SigmoidBackward0", count=1, nbytes=4 * 3 * 4)


def test_from_tensor_reads_saved_versions_and_shared_subgraphs():
    w = torch.ones(3, requires_grad=True)
    h = w * 2
    y = h.exp()  # saves its result
    total = (y * h).sum()  # h is used twice: one node, two edges into it
    trace = from_tensor(total)
    assert trace.roots and trace.roots[0] in trace.tensors
    names = [node.name for node in trace.iter_nodes()]
    assert sorted(names) == ["AccumulateGrad", "ExpBackward0", "MulBackward0", "MulBackward0",
                             "SumBackward0"]
    exp_node = next(node for node in trace.iter_nodes() if node.name == "ExpBackward0")
    (saved,) = exp_node.saved
    assert (saved.slot, saved.is_output, saved.version) == ("result", True, 0)
    assert trace.tensor(saved.tensor).name == "y"
    text = graph_text(total)
    assert "#1" in text and "(see #1)" in text  # h's node printed once, referenced after


def test_from_tensor_of_a_modified_graph_reads_the_version_it_saved():
    w = torch.ones(3, requires_grad=True)
    y = w.exp()
    y.add_(1)  # ExpBackward0 saved y at version 0; it is now at 1
    trace = from_tensor(y)
    exp_node = next(node for node in trace.iter_nodes() if node.name == "ExpBackward0")
    assert [(s.version, trace.tensor(s.tensor).version) for s in exp_node.saved] == [(0, 0)]


def test_an_nn_sequential_mlp_shows_its_parameter_names_in_the_picture():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    points = torch.randn(8, 2)
    loss = model(points).pow(2).mean()
    source = tg.to_dot(loss).source
    for name in ("0.weight", "0.bias", "2.weight", "2.bias"):
        assert re.search(rf"label=\"?{re.escape(name)}\\n", source) or f"{name}\\n" in source, \
            name
    text = graph_text(loss)
    assert "AccumulateGrad  0.weight f32[4,2]" in text and "TBackward0" in text


def test_several_torch_tensors_are_drawn_with_their_shared_graph():
    w = torch.ones(3, requires_grad=True)
    h = w * 2
    first, second = h.sum(), h.mean()
    source = tg.to_dot({"first": first, "second": [second]}).source
    assert source.count("label=MulBackward0") == 1
    assert "SumBackward0" in source and "MeanBackward0" in source


def test_a_torch_tensor_without_a_graph_says_so():
    with pytest.raises(ValueError, match="has no autograd graph"):
        graph_text(torch.ones(3))


@pytest.mark.slow
def test_a_100000_deep_torch_chain_through_from_tensor_and_to_dot():
    x = torch.ones(2, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # anything recursive would die at once
    try:
        trace = from_tensor(y)
        folded = tg.to_dot(y).source  # the whole DOT of 100,000 nodes: test_draw_dot.py
    finally:
        sys.setrecursionlimit(limit)
    assert len(trace.nodes) == 100_001
    assert sum(1 for node in trace.iter_nodes() if node.name == "MulBackward0") == 100_000
    assert all(node.attrs.get("other") == 1.0 for node in trace.iter_nodes()
               if node.name == "MulBackward0")  # the 1.0 torch saved, as a number
    assert "MulBackward0" in folded and len(folded) < 100_000  # the chain is one folded box


@pytest.mark.parametrize("make", [
    lambda: torch.randn(3, 4, requires_grad=True),
    lambda: torch.randn(2, dtype=torch.float64, requires_grad=True),
    lambda: torch.randn(2, dtype=torch.bfloat16, requires_grad=True),
    lambda: torch.randn(2, dtype=torch.complex64, requires_grad=True),
    lambda: torch.tensor(1.0, requires_grad=True),
    lambda: torch.randn(2, 3, device="meta", requires_grad=True),
    lambda: torch.randn(4, 6)[:, ::2].requires_grad_(),
], ids=["f32", "f64", "bf16", "c64", "0-d", "meta", "strided"])
def test_an_accumulate_grad_node_describes_its_output_as_torchs_input_metadata_does(make):
    # The adapter reads an AccumulateGrad's output from its leaf (not _input_metadata):
    # the same shape, dtype and device torch's engine checks the leaf's gradient against.
    from tracegrad.bridge.adapters import Registry, _output_meta
    leaf = make()
    accumulate = (leaf * 2).grad_fn.next_functions[0][0]
    assert accumulate.name().endswith("AccumulateGrad")
    node = Registry().node(accumulate)
    assert node._is_accumulate and node.variable.subject is leaf
    assert node._output_meta == _output_meta(accumulate._input_metadata)
    shape, dtype, device = node._output_meta[0]
    assert (shape, dtype.name, device) == (tuple(leaf.shape), str(leaf.dtype)[6:],
                                           str(leaf.device))


def test_a_nodes_outputs_are_read_from_torchs_metadata_when_first_asked():
    # A recording reads a node's output metadata only where no tensor stands for an output
    # (adapters.TorchNode._output_meta); what it reads is torch's, even after the node died.
    from tracegrad.bridge.adapters import Registry

    x = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    first, second = x.split([2, 2])
    fn = first.grad_fn
    node = Registry().node(fn)
    assert node._outputs == 2 and "_output_meta" not in vars(node)
    del first, second, fn
    assert [(shape, dtype.name, device) for shape, dtype, device in node._output_meta] == \
        [((2, 6), "float64", "cpu"), ((2, 6), "float64", "cpu")]
    assert "_metas" not in vars(node)  # read once, then let go
