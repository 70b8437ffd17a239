"""A Trace in a notebook: a one-line repr, the picture as SVG, a text fallback without
Graphviz; and the progress line the command line shows on a terminal."""

from __future__ import annotations

import io
import shutil
import textwrap

import pytest

import tracegrad as tg


def two_layer_trace():
    tg.manual_seed(0)
    x = tg.randn(64, 100)
    w1 = tg.randn(100, 50, requires_grad=True)
    w2 = tg.randn(50, 10, requires_grad=True)
    with tg.record() as trace:
        for _ in range(3):
            loss = x.mm(w1).clamp(min=0).mm(w2).pow(2).sum()
            loss.backward()
    return trace


def test_repr_is_one_short_line_however_big_the_trace():
    trace = two_layer_trace()
    text = repr(trace)
    assert text == "<Trace: 17 nodes, 3 backward passes, 0 violations>"
    assert str(trace) == text


def test_counts_of_one_are_singular():
    w = tg.ones(2, requires_grad=True)
    with tg.record() as trace:
        (w * 3).sum().backward()
    trace.metadata["program"] = "net.py"
    assert repr(trace) == "<Trace of net.py: 3 nodes, 1 backward pass, 0 violations>"
    assert trace.summary().splitlines()[0] == ("trace: 3 tensors, 3 nodes, 1 backward pass, "
                                               "0 violations")


@pytest.mark.graphviz
def test_a_cell_ending_in_the_trace_draws_it():
    trace = two_layer_trace()
    bundle = trace._repr_mimebundle_()
    assert bundle["image/svg+xml"].lstrip().startswith(("<?xml", "<svg", "<!DOCTYPE"))
    assert "MmBackward0" in bundle["image/svg+xml"]
    assert "backward pass 0 of 3" in bundle["image/svg+xml"]
    assert bundle["text/plain"].startswith("trace: ")
    assert trace._repr_svg_() == bundle["image/svg+xml"]
    assert "image/svg+xml" not in trace._repr_mimebundle_(exclude=["image/svg+xml"])


def test_without_graphviz_the_cell_shows_text_and_how_to_install(monkeypatch, tmp_path):
    trace = two_layer_trace()
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot`
    assert shutil.which("dot") is None
    assert trace._repr_svg_() is None
    bundle = trace._repr_mimebundle_()
    assert list(bundle) == ["text/plain"]
    assert bundle["text/plain"].startswith("trace: 18 tensors, 17 nodes")
    assert "sudo apt-get install graphviz" in bundle["text/plain"]


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_script_run_shows_progress_on_a_terminal(tmp_path, monkeypatch):
    from tracegrad.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "slow.py").write_text(textwrap.dedent("""
        import time
        import tracegrad as torch
        w = torch.ones(2, requires_grad=True)
        for _ in range(3):
            (w * 2).sum().backward()
            time.sleep(0.15)
        print("done")
    """))
    stdout, stderr = FakeTerminal(), FakeTerminal()
    monkeypatch.setattr("sys.stdout", stdout)
    monkeypatch.setattr("sys.stderr", stderr)
    assert main(["run", "slow.py"]) == 0
    shown = stderr.getvalue()
    assert "tracing slow.py" in shown
    assert "backward pass" in shown and "nodes" in shown  # the recorder's counts, live
    assert "done" in shown + stdout.getvalue()  # the script's print is not lost


def test_no_progress_outside_a_terminal(tmp_path, monkeypatch, capsys):
    from tracegrad.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "quick.py").write_text("import tracegrad as torch\n"
                                       "(torch.ones(2, requires_grad=True) * 2).sum()"
                                       ".backward()\n")
    assert main(["run", "quick.py"]) == 0
    assert capsys.readouterr().err == ("tracegrad run: wrote quick.tgtrace (3 nodes, "
                                       "1 backward pass, 0 violations)\n")
