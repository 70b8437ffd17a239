"""Graphs too large to lay out are drawn smaller, never refused: module boxes, then folded
chains and fans, then a summary; decided before the full graph is planned; every violation
still drawn."""

from __future__ import annotations

import warnings

import pytest
from trace_builders import exp_chain_trace

import tracegrad as tg
from tracegrad.draw import plan as plan_module
from tracegrad.draw import sizing
from tracegrad.tracing.model import (
    BackwardPass,
    NodeRecord,
    Site,
    Step,
    TensorRecord,
    Trace,
    Violation,
)


def wide_trace(leaves: int) -> Trace:
    """loss = torch.stack(leaves).sum(), with its backward pass."""
    trace = Trace()
    for number in range(leaves):
        trace.tensors[number] = TensorRecord(number, (3,), "float32", name=f"w{number}",
                                             requires_grad=True)
        trace.nodes[number] = NodeRecord(number, "AccumulateGrad", kind="accumulate",
                                         leaf=number)
    stacked, loss = leaves, leaves + 1
    trace.tensors[stacked] = TensorRecord(stacked, (leaves, 3), "float32", is_leaf=False,
                                          grad_fn=stacked, requires_grad=True)
    trace.tensors[loss] = TensorRecord(loss, (), "float32", name="loss", is_leaf=False,
                                       grad_fn=loss, requires_grad=True)
    trace.nodes[stacked] = NodeRecord(stacked, "StackBackward0", outputs=[stacked],
                                      next=[(number, 0) for number in range(leaves)])
    trace.nodes[loss] = NodeRecord(loss, "SumBackward0", outputs=[loss], next=[(stacked, 0)])
    trace.passes.append(BackwardPass(0, roots=[loss], steps=[
        Step(0, loss), Step(1, stacked),
        *(Step(2 + number, number) for number in range(leaves))]))
    return trace


def dot_of(trace, **options) -> tuple[str, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        source = tg.to_dot(trace, **options).source
    return source, [str(warning.message) for warning in caught]


def test_a_wide_graph_folds_its_leaves_into_one_box():
    source, notes = dot_of(wide_trace(3000), max_nodes=100)
    assert notes == [(
        "render: the graph has about 3,004 boxes, more than max_nodes=100 that `dot` lays out "
        "in reasonable time; repeated structure folded: a fan of same-named inputs of 3,000 "
        "nodes drawn as 1 box (4 boxes). Pass max_nodes=None to lay out every node.")]
    assert "AccumulateGrad ×3,000" in source and "leaves: w0, w1, ..., w2999" in source
    assert "StackBackward0\\nstep 1" in source  # the kept node keeps its step
    assert len(source) < 5_000  # tooltips list 8 inputs, not 3,000
    assert "drawn smaller: the graph has about 3,004 boxes" in source  # the title says so


def test_a_long_chain_is_one_box():
    source, notes = dot_of(exp_chain_trace(5000), max_nodes=100)
    assert "a chain of 5,001 nodes drawn as 1 box" in notes[0]
    assert "ExpBackward0 ×5,000" in source and "leaves: x" in source


def test_if_even_folded_it_is_too_big_a_summary_is_drawn():
    trace = exp_chain_trace(50)
    for number in range(51, 400, 2):  # many short chains joined: nothing folds enough
        trace.nodes[number] = NodeRecord(number, "AddBackward0",
                                         next=[(number - 50, 0), (number - 51, 0)])
    source, notes = dot_of(trace, max_nodes=3, pass_index="all")
    assert "drawn as a summary of its nodes by op" in notes[0]
    assert "too many to draw" in source and "ExpBackward0 ×" in source


def test_every_violation_survives_folding():
    trace = exp_chain_trace(300)
    trace.violations.append(Violation("nan", "NaN first appeared", node=150,
                                      site=Site("prog.py", 7, "<module>")))
    trace.violations.append(Violation("inplace_leaf", "in-place on a leaf", tensor=0,
                                      site=Site("prog.py", 2, "<module>")))
    source, _ = dot_of(trace, max_nodes=50)
    assert "NaN first appears here (forward) at prog.py:7" in source
    assert "in-place on a leaf at prog.py:2" in source
    summary, _ = dot_of(trace, max_nodes=1)
    assert "NaN first appears here" in summary and "in-place on a leaf" in summary


def test_the_full_graph_is_never_planned_when_its_counts_are_too_big(monkeypatch):
    planned = []
    real = plan_module.plan_graph

    def recording_plan(trace, outputs=None, options=None):
        planned.append(len(trace.nodes))
        return real(trace, outputs, options)

    monkeypatch.setattr(sizing, "plan_graph", recording_plan)
    dot_of(exp_chain_trace(20_000), max_nodes=500)
    assert planned and max(planned) <= 500


def test_max_nodes_none_draws_everything():
    source, notes = dot_of(exp_chain_trace(300), max_nodes=None)
    assert notes == [] and source.count("label=ExpBackward0") == 300


@pytest.mark.graphviz
def test_render_of_a_big_graph_to_svg_never_fails(tmp_path):
    with pytest.warns(tg.draw.GraphCollapsedWarning):
        path = tg.render(wide_trace(20_000), tmp_path / "wide.svg")
    with open(path, encoding="utf-8") as file:
        assert "AccumulateGrad ×20,000" in file.read()
