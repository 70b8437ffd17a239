"""Pilot tests of moving through a training loop's passes, at 120x40 and 80x24: stepping
on across passes, searching forward through later passes, pass:step, where the debugger
opens, gradcheck's probes, holding ``]``, and what the panels say about each pass."""

from __future__ import annotations

import asyncio
import time

import pytest
from textual import events
from trace_builders import deep_trace, loop_trace, two_layer_trace, wide_trace
from tracegrad.tui.app import DebuggerApp
from tracegrad.tui.widgets.graph_view import GraphView
from tracegrad.tui.widgets.key_bar import KeyBar
from tracegrad.tui.widgets.pass_bar import PassBar
from tui_driving import BIG, SMALL, answer, run_async, screen_text

SIZES = pytest.mark.parametrize("size", [BIG, SMALL], ids=["120x40", "80x24"])


# -- stepping across passes -------------------------------------------------------------------
@SIZES
@run_async
async def test_next_at_the_last_step_goes_on_to_the_next_pass(size):
    app = DebuggerApp(loop_trace(3))
    async with app.run_test(size=size) as pilot:
        assert (app.pass_index, app.step_index) == (0, 0)
        await pilot.press("n", "n")
        assert (app.pass_index, app.step_index) == (0, 2)
        await pilot.press("n")
        assert (app.pass_index, app.step_index) == (1, 0)
        assert "on to the next pass: pass 1: backward(loss)" in app.status_text
        await pilot.press("p")
        assert (app.pass_index, app.step_index) == (0, 2)
        assert "back to the previous pass: pass 0" in app.status_text
        await pilot.press("end", "n", "end", "n", "end", "n")
        assert (app.pass_index, app.step_index) == (2, 2)
        assert "at the last step of the last backward pass" in app.status_text
        await pilot.press("home", "p", "home", "p", "home", "p")
        assert (app.pass_index, app.step_index) == (0, 0)
        assert "at the first step of the first backward pass" in app.status_text


@SIZES
@run_async
async def test_stepping_skips_summarized_passes_and_brackets_show_them(size):
    app = DebuggerApp(loop_trace(4, summarized=(1, 2)))
    async with app.run_test(size=size) as pilot:
        await pilot.press("end", "n")
        assert (app.pass_index, app.step_index) == (3, 0)
        await pilot.press("left_square_bracket")
        assert app.pass_index == 2
        text = screen_text(app)
        assert "summarized: 3 steps counted" in text
        assert "(a summarized pass: no graph recorded)" in app.query_one(GraphView).visible_text()


@SIZES
@run_async
async def test_continue_and_run_until_search_later_passes(size):
    app = DebuggerApp(loop_trace(8, nan_at=5))
    async with app.run_test(size=size) as pilot:
        assert (app.pass_index, app.step_index) == (5, 1)  # opens at the first violation
        await pilot.press("g", "left_square_bracket", "left_square_bracket")
        assert (app.pass_index, app.step_index) == (3, 0)
        await pilot.press("c")
        assert (app.pass_index, app.step_index) == (5, 0)  # the NaN flows in at step 0
        assert "stopped at pass 5, step 0" in app.status_text
        await pilot.press("home", "left_square_bracket")
        await answer(pilot, "u", "op mul")
        assert (app.pass_index, app.step_index) == (4, 1)  # the same pass first
        await answer(pilot, "u", "nan")
        assert (app.pass_index, app.step_index) == (5, 0)
        await answer(pilot, "colon", "7:2")
        await pilot.press("c")
        assert (app.pass_index, app.step_index) == (7, 2)
        assert "no breakpoint, violation or NaN/Inf after this step" in app.status_text
        await answer(pilot, "u", "norm > 1e9")
        assert "no later step matches, in this pass or a later one" in app.status_text


@SIZES
@run_async
async def test_go_to_pass_and_step(size):
    app = DebuggerApp(loop_trace(300))
    async with app.run_test(size=size) as pilot:
        await answer(pilot, "colon", "250:2")
        assert (app.pass_index, app.step_index) == (250, 2)
        assert "pass 250 (251 of 300)" in app.query_one(PassBar).render().plain
        await answer(pilot, "colon", "1")
        assert (app.pass_index, app.step_index) == (250, 1)
        await answer(pilot, "colon", "12:")
        assert (app.pass_index, app.step_index) == (12, 0)
        await answer(pilot, "colon", "400:0")
        assert app.pass_index == 12 and "there is no pass 400; passes are 0-299" in \
            app.status_text
        await answer(pilot, "colon", "3:9")
        assert "pass 3 has no step 9; expected 0-2" in app.status_text


# -- where it opens -----------------------------------------------------------------------------
@run_async
async def test_opens_on_the_first_pass_of_the_program_when_there_is_no_finding():
    app = DebuggerApp(loop_trace(3, probes=5))
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        assert (app.pass_index, app.step_index) == (5, 0)  # not on gradcheck's probes
        assert app.status_text == ""


@run_async
async def test_opens_on_the_first_violation_with_a_message():
    app = DebuggerApp(loop_trace(10, nan_at=7))
    async with app.run_test(size=BIG) as pilot:
        await pilot.pause()
        assert (app.pass_index, app.step_index) == (7, 1)
        assert "opened at the first violation: pass 7, step 1" in app.status_text


@run_async
async def test_opens_on_the_failing_step_before_an_earlier_violation():
    app = DebuggerApp(two_layer_trace(violation=True, exception=True, passes=1))
    async with app.run_test(size=BIG) as pilot:
        await pilot.pause()
        assert (app.pass_index, app.step_index) == (0, 3)
        assert "the program raised RuntimeError" in app.status_text


# -- gradcheck's probes -------------------------------------------------------------------
@SIZES
@run_async
async def test_gradcheck_probes_are_hidden_until_asked_for(size):
    app = DebuggerApp(loop_trace(2, probes=40))
    async with app.run_test(size=size) as pilot:
        bar = app.query_one(PassBar)
        assert "40 gradcheck probe passes hidden (a shows)" in bar.render().plain
        await pilot.press("left_square_bracket")
        assert app.pass_index == 40 and "first backward pass" in app.status_text
        await pilot.press("a")
        assert "showing 40 gradcheck probe passes" in app.status_text
        await pilot.press("left_square_bracket")
        assert app.pass_index == 39
        assert "gradcheck(f) probe 40 of 40 at" in bar.render().plain
        await pilot.press("a")  # hiding them again leaves the probe for a pass of the program
        assert app.pass_index == 40
        await answer(pilot, "colon", "3:0")  # going to one shows them
        assert app.pass_index == 3 and "one of gradcheck's probes" in app.status_text


# -- holding ] ------------------------------------------------------------------------------
@run_async
async def test_holding_bracket_on_500_passes_settles():
    """Keys 30 ms apart, as when ``]`` is held: every press moves one pass, nothing echoes
    back after the last one, ``n`` still works, and the idle app does not spin."""
    app = DebuggerApp(loop_trace(500))
    async with app.run_test(size=BIG) as pilot:
        await pilot.pause()
        for _ in range(15):
            await pilot.press("right_square_bracket")
            await pilot.pause(0.03)
        assert app.pass_index == 15
        changes = app.pass_changes
        await pilot.pause(0.2)
        assert app.pass_changes == changes and app.pass_index == 15
        await pilot.press("n")
        assert (app.pass_index, app.step_index) == (15, 1)
        started = time.process_time()
        await asyncio.sleep(0.4)
        assert time.process_time() - started < 0.2  # idle: no loop of messages
        assert app.pass_changes == changes


@run_async
async def test_keys_faster_than_the_app_draws_still_settle():
    """A terminal delivers keys without waiting for the app: 20 ``]`` posted 5 ms apart
    land on pass 20 and stay there (the Select that used to show the pass echoed each
    change back as a new one, flickering between passes forever)."""
    app = DebuggerApp(loop_trace(500))
    async with app.run_test(size=BIG) as pilot:
        await pilot.pause()
        for _ in range(20):
            app.post_message(events.Key("right_square_bracket", "]"))
            await asyncio.sleep(0.005)
        await pilot.pause(0.4)
        changes = app.pass_changes
        assert app.pass_index == 20
        await pilot.pause(0.2)
        assert app.pass_changes == changes


# -- what the panels show ---------------------------------------------------------------------
@SIZES
@run_async
async def test_graph_shows_only_the_current_pass(size):
    app = DebuggerApp(loop_trace(25))
    async with app.run_test(size=size) as pilot:
        await answer(pilot, "colon", "12:1")
        graph = app.query_one(GraphView)
        drawn = set(graph.layout_data.nodes)
        ran = set(app.session.steps_by_node(12))
        assert drawn <= ran and len(drawn) == 3
        assert graph.visible_text().count("[MulBackward0]") == 1
        assert "3 of 3 nodes in pass 12" in graph.border_subtitle


@run_async
async def test_graph_uses_the_room_it_has():
    """More of the graph where the pane is bigger, and drawn over most of its rows."""
    shown = {}
    for size in ((80, 24), (200, 60)):
        app = DebuggerApp(deep_trace(1000))
        async with app.run_test(size=size) as pilot:
            await answer(pilot, "colon", "1000")
            graph = app.query_one(GraphView)
            shown[size] = len(graph.layout_data.nodes)
            rows = graph.visible_text().splitlines()
            drawn = [row for row in rows if row.strip()]
            assert len(drawn) >= 0.8 * graph.size.height, (size, len(drawn), graph.size)
    assert 7 <= shown[(80, 24)] < shown[(200, 60)], shown


@SIZES
@run_async
async def test_steps_table_names_parameters(size):
    app = DebuggerApp(loop_trace(1))
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert ("AccumulateGrad 0.weight" if size == BIG else "… 0.weight") in text


@run_async
async def test_node_panel_shows_grad_after_this_pass():
    app = DebuggerApp(two_layer_trace(passes=3))
    async with app.run_test(size=(120, 80)) as pilot:
        first = app.trace.passes[0].steps[5].grad_after.stats.max
        await pilot.press("end")
        assert "w1.grad after accumulation (pass 0)" in screen_text(app)
        assert f"max {first:.4g}" in screen_text(app)
        await pilot.press("right_square_bracket", "right_square_bracket", "end")
        third = app.trace.passes[2].steps[5].grad_after.stats.max
        assert abs(third - 3 * first) < 1e-4
        assert f"max {third:.4g}" in screen_text(app)


@run_async
async def test_node_panel_says_why_values_are_missing():
    app = DebuggerApp(loop_trace(6, kept=(0, 1, 4, 5)))
    async with app.run_test(size=(200, 60)) as pilot:
        await answer(pilot, "colon", "2:1")
        text = screen_text(app)
        assert "arrays not kept for this pass (keep_passes=(2, 2) keeps the first 2" in text
        assert "statistics only: not kept for this pass" in text
        await answer(pilot, "colon", "4:1")
        assert "not kept for this pass" not in screen_text(app)
    app = DebuggerApp(two_layer_trace(summarized=True))
    async with app.run_test(size=(120, 60)) as pilot:
        await pilot.press("n")
        assert "statistics only: over the memory budget" in screen_text(app)


@pytest.mark.slow
@run_async
async def test_a_node_with_100000_inputs_does_not_freeze_the_panels():
    app = DebuggerApp(wide_trace(100_000))
    async with app.run_test(size=BIG) as pilot:
        await pilot.pause()
        started = time.process_time()  # CPU time: a loaded CI machine stretches wall time
        await pilot.press("n")  # StackBackward0: 100,000 inputs and outgoing gradients
        await pilot.pause()
        assert time.process_time() - started < 2.0  # a freeze guard (it took minutes)
        text = screen_text(app)
        assert "input 0: x0" in text
        await answer(pilot, "colon", "50000")
        assert app.step_index == 50000 and "AccumulateGrad x49998" in screen_text(app)
    from tracegrad.tui.widgets.node_panel import MAX_ITEMS, build_sections

    session = app.session
    stack = session.trace.nodes[100_000]
    plain = "\n".join(getattr(section, "plain", "") for section in build_sections(
        session, 0, session.step(0, 1), stack))
    assert f"... and {100_000 - MAX_ITEMS:,} more inputs (of 100,000)" in plain
    assert f"... and {100_000 - MAX_ITEMS:,} more outgoing gradients" in plain


# -- conventions -------------------------------------------------------------------------------
@run_async
async def test_help_shows_keys_as_they_are_typed():
    app = DebuggerApp(loop_trace(2))
    async with app.run_test(size=BIG) as pilot:
        await pilot.press("question_mark")
        text = screen_text(app)
        for key in ("]", "[", ":", "/", "?", "n ↓ j"):
            assert f" {key} " in text, key
        assert "right_square_bracket" not in text and "question_mark" not in text
        assert "pass:step" in text


@pytest.mark.parametrize("width, every", [(200, True), (80, False)])
@run_async
async def test_key_bar_shows_every_binding_that_fits(width, every):
    app = DebuggerApp(loop_trace(2))
    async with app.run_test(size=(width, 30)) as pilot:
        await pilot.pause()
        bar = app.query_one(KeyBar).visible_text()
        assert bar.startswith(" n Next  p Prev  ] Pass+  [ Pass-  c Continue")
        assert bar.rstrip().endswith("? Help  q Quit")
        assert len(bar.rstrip()) <= width
        shown = [binding for binding in app.BINDINGS if f" {binding.description} " in bar + " "]
        assert (len(shown) == len(app.BINDINGS)) is every


@run_async
async def test_command_palette_lists_the_actions():
    app = DebuggerApp(loop_trace(3))
    async with app.run_test(size=BIG) as pilot:
        await pilot.press("ctrl+p", *"pass+")
        await pilot.pause(0.3)
        text = screen_text(app)
        assert "Pass+ (])" in text and "next backward pass" in text
        await pilot.press("enter")
        await pilot.pause()
        assert app.pass_index == 1


@run_async
async def test_a_message_leaves_the_status_line_at_the_next_move():
    app = DebuggerApp(loop_trace(2))
    async with app.run_test(size=BIG) as pilot:
        await pilot.press("b")
        assert "breakpoint on every SumBackward0" in app.status_text
        await pilot.press("n")
        assert app.status_text == ""


@run_async
async def test_long_messages_wrap_instead_of_being_cut_off():
    app = DebuggerApp(loop_trace(2))
    async with app.run_test(size=SMALL) as pilot:
        await answer(pilot, "u", "bogus")
        text = " ".join(line.strip() for line in screen_text(app).splitlines()[-6:])
        for fragment in ("cannot understand 'bogus'", "op NAME", "norm > X",
                         "stops at the first node whose name contains 'mm'"):
            assert fragment in text, fragment
