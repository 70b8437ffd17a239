"""The TUI's node panel shows a NaN's cause (the words tracegrad check prints) and what
the node keeps for backward."""

from __future__ import annotations

import numpy as np
from test_tui_app import run_async, screen_text
from tracegrad.tui.app import DebuggerApp

import tracegrad as tg


def _where_trap_trace():
    x = tg.tensor([4.0, 1.0, 0.0, 2.0], requires_grad=True)
    with np.errstate(all="ignore"), tg.record() as trace:
        masked_log = tg.where(x > 0, x.log(), tg.zeros_like(x))
        masked_log.sum().backward()
    return trace


@run_async
async def test_node_panel_shows_the_nan_cause_and_saved_bytes():
    trace = _where_trap_trace()
    app = DebuggerApp(trace, source="where.py")
    async with app.run_test(size=(160, 150)) as pilot:
        await pilot.pause()
        step = trace.passes[0].steps[app.step_index]
        assert trace.node(step.node).name == "LogBackward0"  # opens at the violation
        text = screen_text(app)
        assert "cause: the where trap" in text
        # log's x (16 B) and, as torch, where's condition (4 bools) until where's step ran
        assert "saved tensors: 16 B here; backward keeps 20 B at its peak" in text


@run_async
async def test_node_panel_says_when_a_tensor_is_saved_twice():
    x = tg.ones(4, requires_grad=True)
    with tg.record() as trace:
        a = x.exp()
        (a * a).sum().backward()
    app = DebuggerApp(trace, source="twice.py")
    async with app.run_test(size=(160, 150)) as pilot:
        await pilot.press("home", "n")  # SumBackward0, then MulBackward0
        text = screen_text(app)
        assert "MulBackward0" in text
        assert "saved twice (16 B): also saved by ExpBackward0 at" in text
