"""The debugger's logic without a terminal: steps, marks, navigation, run-until, layout, dump."""

from __future__ import annotations

import shutil

import pytest
from trace_builders import loop_trace, mul_chain_trace, two_layer_trace
from tracegrad.tui.conditions import parse_condition
from tracegrad.tui.dump import dump_steps
from tracegrad.tui.graph_layout import draw_edges, layout_graph
from tracegrad.tui.session import DebugSession

from tracegrad.errors import ConditionError, TracegradError


def test_rows_carry_name_shape_and_marks():
    session = DebugSession(two_layer_trace(violation=True, nan=True, hook=True))
    rows = [session.row(0, index) for index in range(session.step_count(0))]
    assert [row.node_name for row in rows] == [
        "SumBackward0", "MmBackward0", "AccumulateGrad", "ReluBackward0", "MmBackward0",
        "AccumulateGrad"]
    assert [row.shape for row in rows] == ["[]", "[4, 2]", "[5, 2]", "[4, 5]", "[4, 5]",
                                           "[3, 5]"]
    assert [row.marks for row in rows] == ["", "h", "", "!N", "N", "N"]


def test_violation_without_step_is_located_by_its_node():
    trace = two_layer_trace(violation=True)
    trace.violations[0].pass_index = trace.violations[0].step_index = None
    session = DebugSession(trace)
    assert session.violation_location(trace.violations[0]) == (0, 3)
    assert session.row(0, 3).marks == "!"


def test_next_stop_honours_breakpoints_and_marks():
    session = DebugSession(two_layer_trace(violation=True))
    assert session.next_stop((0, 0), frozenset()) == (0, 3)
    assert session.next_stop((0, 0), frozenset({"MmBackward0"})) == (0, 1)
    assert session.next_stop((0, 3), frozenset()) is None


def test_search_wraps_then_looks_in_other_passes():
    session = DebugSession(two_layer_trace(passes=2))
    assert session.search(0, 3, "sum") == (0, 0)  # wrapped around
    assert session.search(0, 0, "LAYER2") == (0, 1)  # module scope, case-insensitive
    assert session.search(0, 0, "") is None
    assert session.search(0, 0, "nothing") is None


def test_neighbourhood_is_bounded_and_breadth_first():
    session = DebugSession(mul_chain_trace(1000))
    assert list(session.neighbourhood(500, radius=2, limit=100)) == [500, 501, 499, 502, 498]
    assert len(session.neighbourhood(500, radius=50, limit=7)) == 7


@pytest.mark.parametrize("text, expected", [
    ("nan", [3, 4, 5]),  # the NaN flows on into later steps
    ("NaN or hook", [1, 3, 4, 5]),
    ("op mm", [1, 4]),
    ("op=ReluBackward0", [3]),
    ("norm > 0 and step >= 4", [4, 5]),
    ("violation", [3]),
    ("inf", []),
])
def test_run_until_conditions_match_the_right_steps(text, expected):
    session = DebugSession(two_layer_trace(violation=True, nan=True, hook=True))
    condition = parse_condition(text)
    assert [index for index in range(6) if condition.matches(session, 0, index)] == expected


@pytest.mark.parametrize("text, fragment", [
    ("", "empty"),
    ("norm > lots", "'lots' in 'norm > lots' is not a number"),
    ("explode", "cannot understand 'explode'"),
])
def test_bad_conditions_say_what_is_wrong(text, fragment):
    with pytest.raises(ConditionError, match=fragment) as caught:
        parse_condition(text)
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, TracegradError)


@pytest.mark.parametrize("engine", [
    pytest.param("dot", marks=pytest.mark.graphviz), "grandalf"])
def test_layout_puts_backward_order_top_to_bottom(engine):
    nodes = [(0, "SumBackward0"), (1, "MulBackward0"), (2, "AccumulateGrad"),
             (3, "ExpBackward0")]
    layout = layout_graph(nodes, [(0, 1), (1, 2), (1, 3)], engine=engine)
    assert layout.engine == engine
    rows = {node_id: placed.row for node_id, placed in layout.nodes.items()}
    assert rows[0] < rows[1] < rows[2] and rows[2] == rows[3]
    left, right = sorted([layout.nodes[2], layout.nodes[3]], key=lambda node: node.column)
    assert left.column + left.width <= right.column  # boxes do not overlap
    grid = draw_edges(layout)
    arrows = sum(row.count("v") for row in grid)
    assert arrows == 3  # one arrowhead per edge, just above its head node


def test_layout_falls_back_to_grandalf_without_dot(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    layout = layout_graph([(0, "A"), (1, "B")], [(0, 1)])
    assert layout.engine == "grandalf"


def test_dump_lists_every_step_with_marks_and_violations():
    text = dump_steps(two_layer_trace(violation=True, hook=True, passes=2))
    lines = text.splitlines()
    assert lines[0].startswith("pass 0: backward(loss) at examples/hand_built_net.py:12")
    assert "    3  ReluBackward0           [4, 5]          !" in lines
    assert "    1  MmBackward0             [4, 2]          h" in lines
    assert text.count("SumBackward0") == 2
    assert "in-place op  examples/hand_built_net.py:9" in text
    assert "saved by     ReluBackward0 at examples/hand_built_net.py:8" in text
    assert "version      saved at 0, now 1" in text


def test_dump_of_a_crashed_program_names_the_exception():
    text = dump_steps(two_layer_trace(exception=True))
    assert "(failed)" in text.splitlines()[0]
    assert "the program raised RuntimeError at examples/hand_built_net.py:12" in text


# -- passes: visible ones, labels, locations across passes ----------------------------------
def test_probe_passes_are_hidden_numbered_and_shown_on_request():
    session = DebugSession(loop_trace(2, probes=3))
    assert session.visible == [3, 4] and session.probe_count == 3
    assert session.neighbour_pass(3, -1) is None
    session.set_show_probes(True)
    assert session.visible == [0, 1, 2, 3, 4]
    assert session.pass_label(1) == ("pass 1: gradcheck(f) probe 2 of 3 at "
                                     "examples/hand_built_net.py:30, 3 steps")
    assert session.pass_label(3, short=True) == "pass 3: backward(loss), 3 steps"


def test_a_trace_of_probes_only_shows_them():
    trace = loop_trace(0, probes=2)
    assert DebugSession(trace).visible == [0, 1]


def test_locations_run_on_through_later_passes_and_skip_hidden_ones():
    session = DebugSession(loop_trace(3, probes=1, nan_at=2))
    assert list(session.locations_after((1, 1))) == [(1, 2), (2, 0), (2, 1), (2, 2), (3, 0),
                                                     (3, 1), (3, 2)]
    assert session.next_stop((1, 0), frozenset()) == (3, 0)
    assert session.next_stop((1, 0), frozenset({"MulBackward0"})) == (1, 1)
    assert session.start_location() == (3, 1)  # the violation
    assert DebugSession(loop_trace(3, probes=1)).start_location() == (1, 0)


def test_neighbour_pass_with_steps_skips_summarized_passes():
    session = DebugSession(loop_trace(5, summarized=(1, 2)))
    assert session.neighbour_pass(0, 1) == 1
    assert session.neighbour_pass(0, 1, with_steps=True) == 3
    assert session.neighbour_pass(3, -1, with_steps=True) == 0
    assert session.pass_label(1) == ("pass 1: backward(loss) at "
                                     "examples/hand_built_net.py:21, 3 steps (summarized)")


@pytest.mark.parametrize("text, expected", [
    ("250:3", (250, 3)), ("7", (4, 7)), ("12:", (12, 0)), (" 3 : 1 ", (3, 1))])
def test_parse_location(text, expected):
    from tracegrad.tui.session import parse_location

    assert parse_location(text, 4) == expected


@pytest.mark.parametrize("text", ["", "x", "1:y", "a:1"])
def test_parse_location_refuses_what_is_not_a_place(text):
    from tracegrad.tui.session import parse_location

    with pytest.raises(ValueError):
        parse_location(text, 0)


def test_rows_name_the_parameter_an_accumulate_fills():
    session = DebugSession(two_layer_trace())
    assert session.row(0, 2).label == "AccumulateGrad w2"
    assert session.row(0, 2).node_name == "AccumulateGrad"  # what breakpoints match
    assert session.row(0, 1).label == "MmBackward0"


def test_dump_shows_the_programs_passes_and_hides_probes():
    trace = loop_trace(2, probes=3, summarized=(1,))
    text = dump_steps(trace)
    assert "gradcheck(f)" not in text
    assert "(3 gradcheck probe passes not shown)" in text
    assert "pass 3: backward(loss) at examples/hand_built_net.py:21, 3 steps" in text
    assert "    2  AccumulateGrad 0.weight" in text
    assert ("  steps counted, not recorded (structure budget): AccumulateGrad 1, "
            "MulBackward0 1, SumBackward0 1") in text
    every = dump_steps(trace, all_passes=True)
    assert "pass 0: gradcheck(f) probe 1 of 3 at" in every and "not shown" not in every
