"""Pilot tests of the backward debugger: every binding and panel, at 120x40 and 80x24.

Each test presses keys and asserts both the app's state and the text on screen.
"""

from __future__ import annotations

import pytest
from textual.widgets import DataTable
from trace_builders import two_layer_trace
from tracegrad.tui.app import DebuggerApp
from tracegrad.tui.widgets.graph_view import GraphView
from tracegrad.tui.widgets.help_screen import HelpScreen
from tracegrad.tui.widgets.pass_bar import PassBar
from tracegrad.tui.widgets.prompt import PromptScreen
from tracegrad.tui.widgets.violations_list import ViolationsList
from tui_driving import BIG, SMALL, answer, run_async, screen_text


def make_app(tmp_path=None, **trace_options) -> DebuggerApp:
    return DebuggerApp(two_layer_trace(**trace_options), source="net.py", export_dir=tmp_path)


@pytest.mark.parametrize("size", [BIG, SMALL])
@run_async
async def test_opens_with_every_panel_visible(size):
    app = make_app(violation=True, hook=True)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert (app.pass_index, app.step_index) == (0, 3)  # at the violation
        for name in ("SumBackward0", "MmBackward0", "ReluBackward0"):
            assert name in text
        assert "mk" in text and "shape" in text  # the steps header
        assert "graph" in text and "node" in text and "violations (1)" in text
        assert "step 3  ReluBackward0" in text
        assert "[ReluBackward0]" in app.query_one(GraphView).visible_text()
        assert " n Next" in text and "? Help" in text and "q Quit" in text  # the footer
        assert "pass 0 (1 of 1): backward(loss)" in app.query_one(PassBar).render().plain


@run_async
async def test_next_previous_first_last_keys():
    app = make_app()
    async with app.run_test(size=BIG) as pilot:
        await pilot.press("n")
        assert app.step_index == 1
        await pilot.press("down", "j")
        assert app.step_index == 3
        assert "step 3  ReluBackward0" in screen_text(app)
        await pilot.press("p", "up")
        assert app.step_index == 1
        await pilot.press("k")
        assert app.step_index == 0
        await pilot.press("p")  # stays at the first step
        assert app.step_index == 0
        await pilot.press("end")
        assert app.step_index == 5
        await pilot.press("n")  # stays at the last step
        assert app.step_index == 5
        assert "step 5/5" in screen_text(app)
        await pilot.press("home")
        assert app.step_index == 0
        await pilot.press("G")
        assert app.step_index == 5
        await pilot.press("g")
        assert app.step_index == 0


@run_async
async def test_current_node_is_highlighted_and_executed_nodes_styled():
    app = make_app()
    async with app.run_test(size=BIG) as pilot:
        await pilot.press("n", "n", "n")
        graph = app.query_one(GraphView)
        relu_node = 2
        assert graph.current_node == relu_node
        assert graph.node_style(relu_node) == "bold black on yellow"
        assert graph.node_style(5) == "green"  # SumBackward0 ran at step 0
        assert graph.node_style(0) == "grey62"  # AccumulateGrad w1 runs at step 5
        assert "[ReluBackward0]" in graph.visible_text()
        assert "[AccumulateGrad w2]" in graph.visible_text()


@run_async
async def test_pass_keys_and_pass_list():
    app = make_app(passes=3)
    async with app.run_test(size=BIG) as pilot:
        bar = app.query_one(PassBar)
        await pilot.press("n", "n", "right_square_bracket")
        assert (app.pass_index, app.step_index) == (1, 0)
        assert "pass 1 (2 of 3)" in bar.render().plain
        assert "pass 1/2" in screen_text(app)
        await pilot.press("right_square_bracket", "right_square_bracket")
        assert app.pass_index == 2
        assert "last backward pass" in app.status_text
        await pilot.press("left_square_bracket")
        assert app.pass_index == 1
        await pilot.press("P")  # the pass list, opened on the current pass
        text = screen_text(app)
        assert "passes (! violation" in text and "backward(loss) at" in text
        await pilot.press("up", "enter")
        assert (app.pass_index, app.step_index) == (0, 0)


@run_async
async def test_continue_stops_at_violations_and_breakpoints():
    app = make_app(violation=True, nan=True)
    async with app.run_test(size=BIG) as pilot:
        await pilot.press("n")  # MmBackward0
        await pilot.press("b")
        assert app.breakpoints == frozenset({"MmBackward0"})
        assert "breakpoint on every MmBackward0" in app.status_text
        await pilot.press("home", "c")
        assert app.step_index == 1
        assert "breakpoint" in app.status_text
        await pilot.press("c")
        assert app.step_index == 3  # the in-place violation and the NaN
        assert "violation" in app.status_text
        await pilot.press("c")
        assert app.step_index == 4  # MmBackward0 again (and its NaN input)
        await pilot.press("c")
        assert app.step_index == 5  # its gradient holds the NaN too
        await pilot.press("c")
        assert app.step_index == 5
        assert "no breakpoint" in app.status_text
        await pilot.press("home", "n", "b")  # toggle it off again
        assert app.breakpoints == frozenset()
        assert "removed" in app.status_text


@run_async
async def test_breakpoint_mark_in_steps_table():
    app = make_app()
    async with app.run_test(size=BIG) as pilot:
        await pilot.press("n", "b")
        steps_table = [line[:47] for line in screen_text(app).splitlines()]  # left column
        marked = [line for line in steps_table if "MmBackward0" in line and "│" in line]
        assert len(marked) == 2 and all(" * " in line for line in marked), marked
        assert not any(" * " in line for line in steps_table if "ReluBackward0" in line)


@run_async
async def test_go_to_step_prompt():
    app = make_app()
    async with app.run_test(size=BIG) as pilot:
        await pilot.press("colon")
        assert isinstance(app.screen, PromptScreen)
        assert "go to step (0-5)" in screen_text(app)
        await pilot.press("4", "enter")
        assert app.step_index == 4
        await pilot.press("colon", "9", "9", "enter")
        assert app.step_index == 4
        assert "pass 0 has no step 99; expected 0-5" in app.status_text
        await pilot.press("colon", "x", "enter")
        assert "'x' is neither a step nor pass:step" in app.status_text
        await pilot.press("colon", "2", "escape")
        assert app.step_index == 4
        assert not isinstance(app.screen, PromptScreen)


@run_async
async def test_search_by_name_op_and_tensor():
    app = make_app(passes=2)
    async with app.run_test(size=BIG) as pilot:
        await answer(pilot, "slash", "relu")
        assert (app.pass_index, app.step_index) == (0, 3)
        assert "ReluBackward0" in app.status_text
        await answer(pilot, "slash", "w1")  # AccumulateGrad of leaf w1
        assert app.step_index == 5
        await answer(pilot, "slash", "layer1")  # module scope
        assert app.step_index == 4
        await answer(pilot, "slash", "nosuchop")
        assert app.step_index == 4
        assert "no step's node matches" in app.status_text


@run_async
async def test_run_until_conditions():
    app = make_app(nan=True, hook=True)
    async with app.run_test(size=BIG) as pilot:
        assert app.step_index == 3  # it opens at the NaN
        await pilot.press("home")
        await answer(pilot, "u", "nan")
        assert app.step_index == 3
        assert "stopped at step 3" in app.status_text
        await pilot.press("home")
        await answer(pilot, "u", "hook")
        assert app.step_index == 1
        await pilot.press("home")
        await answer(pilot, "u", "op accumulate")
        assert app.step_index == 2
        await pilot.press("home")
        await answer(pilot, "u", "norm > 1e9")
        assert app.step_index == 0
        assert "no later step" in app.status_text
        await answer(pilot, "u", "bogus")
        assert "cannot understand 'bogus'" in app.status_text


@pytest.mark.graphviz
@run_async
async def test_draw_svg_writes_the_file(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=BIG) as pilot:
        await pilot.press("n", "n", "n", "e")  # ReluBackward0
        await app.workers.wait_for_complete()
        await pilot.pause()
        path = tmp_path / "net-pass0-step3.svg"
        assert app.last_export == path, app.status_text
        svg = path.read_text()
        assert svg.lstrip().startswith(("<?xml", "<svg"))
        assert 'stroke-width="3"' in svg  # the current step, outlined
        assert "wrote" in app.status_text and str(path) in app.status_text


@run_async
async def test_help_screen_lists_bindings():
    app = make_app()
    async with app.run_test(size=BIG) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        assert "run until" in text and "continue_run" not in text
        assert "Continue" in text and "Search" in text
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


@run_async
async def test_quit_key_exits():
    app = make_app()
    async with app.run_test(size=BIG) as pilot:
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


@run_async
async def test_violation_panel_shows_sites_and_versions_and_jumps():
    app = make_app(violation=True)
    async with app.run_test(size=BIG) as pilot:
        text = screen_text(app)
        assert "inplace_saved" in text
        assert "examples/hand_built_net.py:9" in text  # the in-place op
        violations = app.query_one(ViolationsList)
        violations.focus()
        await pilot.press("down", "enter")  # highlight the first, select it
        await pilot.pause()
        assert (app.pass_index, app.step_index) == (0, 3)
        text = screen_text(app)
        assert "saved by     ReluBackward0 at examples/hand_built_net.py:8" in text
        assert "in-place op  examples/hand_built_net.py:9" in text
        assert "version      saved at 0, now 1" in text


@run_async
async def test_node_panel_sections():
    app = make_app(violation=True, hook=True)
    async with app.run_test(size=(120, 80)) as pilot:
        await pilot.press("home", "n")  # MmBackward0 with a hook, saves r (modified), w2
        text = screen_text(app)
        assert "module layer2" in text
        assert "examples/hand_built_net.py:10" in text and "y = r.mm(w2)" in text
        assert "input 0: r (non-leaf" in text and "input 1: w2 (leaf" in text
        assert "in  0: float32 [4, 2]" in text and "norm" in text
        assert "out 0 → ReluBackward0" in text and "out 1 → AccumulateGrad" in text
        assert "post hook print_grad: left the gradient unchanged" in text
        saved_lines = [line for line in text.splitlines() if "version" in line]
        assert any("self" in line and "version 0" in line and "version 1" in line
                   for line in saved_lines)
        await pilot.press("n")  # AccumulateGrad w2: the leaf's .grad
        assert "w2.grad after accumulation (pass 0)" in screen_text(app)


@run_async
async def test_values_table_and_cycling():
    app = make_app()
    async with app.run_test(size=(120, 80)) as pilot:
        await pilot.press("n")
        grid = app.query_one("#values-grid", DataTable)
        assert grid.row_count == 4 and len(grid.columns) == 3  # grad in [4, 2] + row column
        assert "values: grad in 0 (1/5" in screen_text(app)
        await pilot.press("v")
        assert app.value_choice == 1
        assert grid.row_count == 4 and len(grid.columns) == 6  # grad out 0 is [4, 5]
        assert "values: grad out 0 (2/5" in screen_text(app)


@run_async
async def test_summarized_values_say_so():
    app = make_app(summarized=True)
    async with app.run_test(size=(120, 80)) as pilot:
        await pilot.press("n")
        text = screen_text(app)
        assert "statistics only: over the memory budget" in text
        grid = app.query_one("#values-grid", DataTable)
        assert grid.row_count == 0


@run_async
async def test_clicking_a_step_selects_it():
    app = make_app()
    async with app.run_test(size=BIG) as pilot:
        await pilot.click("#steps", offset=(5, 5))  # border, header, then steps 0..
        await pilot.pause()
        assert app.step_index == 3


@run_async
async def test_crashed_program_opens_at_the_failing_step():
    app = make_app(violation=True, exception=True)
    async with app.run_test(size=BIG) as pilot:
        await pilot.pause()
        assert app.step_index == 3
        assert "the program raised RuntimeError" in app.status_text
        text = screen_text(app)
        assert "error: RuntimeError" in text
        assert "the program raised RuntimeError at" in text  # violations list


@run_async
async def test_trace_without_backward():
    from tracegrad.tracing.model import Trace

    app = DebuggerApp(Trace())
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("n", "c", "b", "e")
        await pilot.pause()
        assert app.step_index == 0
        assert "no backward pass" in app.status_text


@run_async
async def test_source_context_from_the_real_file(tmp_path):
    source = tmp_path / "net.py"
    source.write_text("\n".join(f"line_{number} = {number}" for number in range(1, 15)) + "\n")
    app = DebuggerApp(two_layer_trace(source=str(source)))
    async with app.run_test(size=(120, 60)) as pilot:
        await pilot.press("n", "n", "n")  # ReluBackward0, recorded at line 8
        text = screen_text(app)
        for number in (6, 7, 8, 9, 10):
            assert f"line_{number} = {number}" in text
        assert "line_12" not in text
