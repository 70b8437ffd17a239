"""The hand-built traces of trace_builders.py hold together (ids, edges, steps)."""

from __future__ import annotations

from trace_builders import loop_trace, mul_chain_trace, two_layer_trace, wide_trace


def test_two_layer_trace_is_consistent():
    trace = two_layer_trace(violation=True, nan=True, hook=True, passes=2)
    for backward_pass in trace.passes:
        for step in backward_pass.steps:
            node = trace.nodes[step.node]
            assert len(step.grads_out) == len(node.next)
    assert [trace.nodes[step.node].name for step in trace.passes[1].steps] == [
        "SumBackward0", "MmBackward0", "AccumulateGrad", "ReluBackward0", "MmBackward0",
        "AccumulateGrad"]
    assert trace.passes[0].steps[3].grads_out[0].stats.nan_count == 1
    assert trace.tensors[3].version == 1


def test_chain_trace_has_one_step_per_node():
    trace = mul_chain_trace(100)
    assert len(trace.passes[0].steps) == len(trace.nodes) == 100
    assert list(trace.edges())[:2] == [(0, 1, 0), (1, 2, 0)]


def test_loop_trace_passes_have_their_own_graph():
    trace = loop_trace(4, nan_at=2, probes=2)
    assert [p.origin for p in trace.passes] == ["gradcheck"] * 2 + ["user"] * 4
    assert trace.passes[2].steps[2].node == trace.passes[5].steps[2].node == 0
    assert trace.passes[2].steps[1].node != trace.passes[3].steps[1].node
    assert trace.violations[0].pass_index == 4
    for backward_pass in trace.passes:
        for step in backward_pass.steps:
            assert len(step.grads_out) == len(trace.nodes[step.node].next)


def test_wide_trace_has_one_node_with_every_input():
    trace = wide_trace(1000)
    stack = trace.nodes[1000]
    assert len(stack.inputs) == len(stack.next) == 1000
    assert len(trace.passes[0].steps) == 1002
