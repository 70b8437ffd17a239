"""The side-by-side diff of two traces (``tracegrad tui A B``, ``tracegrad diff --tui``):
Pilot tests on two runs parted by a planted change, the agree case, the graph diff, and
the command line without a terminal and with ``--dump``."""

from __future__ import annotations

import io
import sys

import pytest
from tracegrad.tui.diff_app import DiffApp
from tracegrad.tui.widgets.help_screen import HelpScreen
from tui_driving import BIG, SMALL, run_async, screen_text

import tracegrad as tg
from tracegrad.tracing import save_trace


def scaled_run(scale: float, extra: bool = False, shift: float = 0.0):
    """A custom Function whose backward is multiplied by ``scale`` (1.001: the planted bug).
    ``extra`` adds an op, so the graphs differ; ``shift`` moves the input, so the forward
    values differ too."""

    class Triple(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, grad):
            return grad * 3 * scale

    weight = tg.tensor([0.5, -1.0, 2.0 + shift, 1.5], requires_grad=True)
    with tg.record() as trace:
        tripled = Triple.apply(weight)
        if extra:
            tripled = tripled.exp()
        loss = (tripled * tripled).sum()
        loss.backward()
    return trace


NAMES = ("good.tgtrace", "bad.tgtrace")


def parted_app() -> DiffApp:
    return DiffApp(scaled_run(1.0), scaled_run(1.001), names=NAMES)


@pytest.mark.parametrize("size", [BIG, SMALL])
@run_async
async def test_opens_at_the_node_where_the_runs_part(size):
    app = parted_app()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "the runs part at TripleBackward [backward pass 0," in text
        assert "good.tgtrace" in text and "bad.tgtrace" in text
        # both sides: the node, its line, the differing gradient's worst element, both values
        side_a = "\n".join(app.view.side(0))
        side_b = "\n".join(app.view.side(1))
        for side in (side_a, side_b):
            assert "TripleBackward  [backward step 2]" in side
            assert "tripled = Triple.apply(weight)" in side
            assert "gradient to input 0 (AccumulateGrad of 'weight') differs" in side
            assert "worst [2]" in side
            assert "MulBackward0 at " in side  # the op above
        # the gradient to weight[2] is 2 * 3 * 6 * 3 = 36 in one run, 36.036 in the other
        assert "worst [2]: 36.0" in side_a and "other: 36.036" in side_a
        assert "worst [2]: 36.036" in side_b and "other: 36.0" in side_b
        if size == BIG:
            assert "TripleBackward  [backward step 2]" in text
            assert "Triple.apply(weight)" in text
            assert "36.036" in text and "tolerance" in text
        assert "q Quit" in text and "? Help" in text


@run_async
async def test_n_and_p_step_both_sides_through_the_pass():
    app = parted_app()
    async with app.run_test(size=BIG) as pilot:
        start = app.view.position
        assert app.view.place.step_index == 2
        await pilot.press("n")
        assert app.view.place.step_index == 3
        text = screen_text(app)
        assert text.count("AccumulateGrad  [backward step 3]") == 2
        assert "(the runs part at step 2)" in text
        await pilot.press("p", "p")
        assert app.view.place.step_index == 1 and app.view.position == start - 1
        await pilot.press("p", "p")  # stays at the first step
        assert app.view.place.step_index == 0
        assert "already at the first step" in screen_text(app)


@run_async
async def test_n_moves_between_differences_when_there_are_several():
    app = DiffApp(scaled_run(1.0), scaled_run(1.0, shift=0.5), names=NAMES)
    async with app.run_test(size=BIG) as pilot:
        await pilot.pause()
        assert app.view.by_differences
        assert app.view.place.difference.phase == "forward"
        text = screen_text(app)
        assert "showing difference 1 of 2" in text
        assert "TripleBackward  [forward]" in text and "input 0 ('weight', a leaf) differs" in text
        await pilot.press("n")
        assert app.view.place.difference.phase == "backward"
        assert "showing difference 2 of 2" in screen_text(app)


@run_async
async def test_agreeing_traces_say_so():
    app = DiffApp(scaled_run(1.0), scaled_run(1.0), names=NAMES)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "good.tgtrace and bad.tgtrace agree" in text
        await pilot.press("n")
        assert "nothing to step through" in screen_text(app)


@run_async
async def test_differing_graphs_show_the_unified_diff():
    app = DiffApp(scaled_run(1.0), scaled_run(1.0, extra=True), names=NAMES)
    async with app.run_test(size=BIG) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "graphs differ (unified diff)" in text
        assert "+" in app.view.result.structure and "ExpBackward0" in text


@run_async
async def test_help_and_quit():
    app = parted_app()
    async with app.run_test(size=BIG) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert "next difference" in screen_text(app)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("q")
    assert app.return_code == 0


# -- the command line -----------------------------------------------------------------------
@pytest.fixture
def saved_pair(tmp_path):
    paths = [tmp_path / "good.tgtrace", tmp_path / "bad.tgtrace"]
    for path, scale in zip(paths, (1.0, 1.001)):
        save_trace(scaled_run(scale), path)
    return [str(path) for path in paths]


def run_main(capsys, monkeypatch, *args):
    from tracegrad.cli import main

    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    status = main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.parametrize("command", [["tui"], ["diff", "--tui"]])
def test_without_a_terminal_it_says_so(capsys, monkeypatch, saved_pair, command):
    status, out, err = run_main(capsys, monkeypatch, *command, *saved_pair)
    assert status == 2
    assert "needs an interactive terminal" in err
    assert f"tracegrad tui --dump {saved_pair[0]} {saved_pair[1]}" in err
    assert "Traceback" not in err


def test_dump_prints_the_two_sides(capsys, monkeypatch, saved_pair):
    status, out, err = run_main(capsys, monkeypatch, "tui", "--dump", *saved_pair)
    assert status == 1, err
    assert "the runs part at TripleBackward [backward pass 0, step 2]" in out
    row = next(line for line in out.splitlines() if line.startswith("worst [2]"))
    left, right = row.split(" | ")
    assert "36.0" in left and "36.036" in right
    assert out.count("tripled = Triple.apply(weight)") >= 2


def test_dump_of_agreeing_traces(capsys, monkeypatch, saved_pair):
    status, out, _ = run_main(capsys, monkeypatch, "tui", "--dump", saved_pair[0],
                              saved_pair[0])
    assert status == 0
    assert "agree" in out


@pytest.mark.parametrize("command", [["tui", "--dump"], ["diff"]])
def test_rtol_and_atol_mean_what_they_mean_for_tracegrad_diff(capsys, monkeypatch, saved_pair,
                                                              command):
    # The planted bug scales one gradient by 1.001: inside rtol=1e-2, outside rtol=1e-4.
    status, out, err = run_main(capsys, monkeypatch, *command, "--rtol", "1e-2", "--atol",
                                "0", *saved_pair)
    assert status == 0, err
    assert "agree" in out and "(rtol=0.01, atol=0.0)" in out
    status, out, err = run_main(capsys, monkeypatch, *command, "--rtol", "1e-4", *saved_pair)
    assert status == 1, err
    assert "the runs part at TripleBackward [backward pass 0, step 2]" in out
    assert ("tolerance: rtol=0.0001" if command[0] == "tui" else "(rtol=0.0001)") in out


def test_tui_view_shows_the_tolerance_it_was_given():
    app = DiffApp(scaled_run(1.0), scaled_run(1.001), names=NAMES, atol=1e-9, rtol=1e-6)
    assert "tolerance: rtol=1e-06, atol=1e-09" in app.view.side(0)
    assert "tolerance: torch.testing's default tolerances" in parted_app().view.side(1)


def test_tolerances_with_one_target_are_refused(capsys, monkeypatch, saved_pair):
    status, _, err = run_main(capsys, monkeypatch, "tui", "--dump", "--atol", "1e-3",
                              saved_pair[0])
    assert status == 2
    assert "tracegrad tui: --rtol and --atol are the tolerances for comparing two traces" in err
