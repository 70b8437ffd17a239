"""`tracegrad render`: scripts, .tgtrace files, formats, crashes, no `dot`, the pass shown,
big graphs. In-process through ``tracegrad.cli.main``."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
from trace_builders import exp_chain_trace, mul_sum_trace

import tracegrad as tg
from tracegrad.cli import main

SVG = "{http://www.w3.org/2000/svg}"

TWO_LAYER = """\
import tracegrad as torch
x = torch.randn(4, 3)
w1 = torch.randn(3, 5, requires_grad=True)
w2 = torch.randn(5, 2, requires_grad=True)
loss = x.mm(w1).clamp(min=0).mm(w2).pow(2).sum()
loss.backward()
"""

CRASHES = """\
import tracegrad as torch
x = torch.randn(3, requires_grad=True)
y = x.sigmoid()
y.mul_(2)
y.sum().backward()
"""

STEPS = """\
import sys
import tracegrad as torch
w = torch.ones(3, requires_grad=True)
steps = int(sys.argv[sys.argv.index("--steps") + 1])
for step in range(steps):
    loss = (w * (step + 1)).sum()
    loss.backward()
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "net.py").write_text(TWO_LAYER, encoding="utf-8")
    return tmp_path


def svg_titles(path: Path) -> list[str]:
    root = ElementTree.parse(path).getroot()
    return [group.find(f"{SVG}title").text for group in root.iter(f"{SVG}g")
            if group.get("class") == "node"]


@pytest.mark.graphviz
def test_render_a_script_to_svg(project, capsys):
    assert main(["render", "-o", "graph.svg", "net.py"]) == 0
    assert capsys.readouterr().err == ("tracegrad render: wrote graph.svg (7 nodes; pass 0 "
                                       "of 1)\n")
    text = (project / "graph.svg").read_text(encoding="utf-8")
    assert "MmBackward0" in text and "ClampBackward1" in text
    assert "backward pass 0 of 1: backward(loss) at net.py:6" in text  # the title
    assert len(svg_titles(project / "graph.svg")) >= 6


def test_render_a_script_to_dot_text_with_options(project):
    assert main(["render", "-o", "graph.dot", "--no-show-saved", "--rankdir", "LR",
                 "net.py"]) == 0
    source = (project / "graph.dot").read_text(encoding="utf-8")
    assert "rankdir=LR" in source and "dir=none" not in source
    assert 'label="w1\\n(3, 5)' in source


def test_script_options_follow_double_dash(project, capsys):
    (project / "steps.py").write_text(STEPS, encoding="utf-8")
    assert main(["render", "-o", "steps.dot", "--pass", "-1", "steps.py", "--",
                 "--steps", "2"]) == 0
    assert "pass 1 of 2" in capsys.readouterr().err
    assert "backward pass 1 of 2: backward(loss)" in (project / "steps.dot").read_text()


@pytest.mark.parametrize("arguments, message", [
    (["--pass", "5"], "pass 5 is out of range: the trace has 1 backward pass (0)."),
    (["--pass", "-2"], "pass -2 is out of range: the trace has 1 backward pass (0)."),
    (["--highlight-step", "40"], ("step 40 is out of range: backward pass 0 has 7 steps "
                                  "(0-6).")),
])
def test_out_of_range_pass_or_step_is_an_error(project, capsys, arguments, message):
    assert main(["render", "-o", "graph.dot", *arguments, "net.py"]) == 2
    assert capsys.readouterr().err.startswith(f"tracegrad render: {message}")
    assert not (project / "graph.dot").exists()


@pytest.mark.graphviz
def test_render_a_saved_trace_to_png(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tg.tracing.save_trace(mul_sum_trace(), tmp_path / "run.tgtrace")
    assert main(["render", "-o", "out/graph.png", "run.tgtrace"]) == 0
    assert (tmp_path / "out" / "graph.png").read_bytes()[:4] == b"\x89PNG"


def test_a_trace_file_takes_no_script_arguments(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    tg.tracing.save_trace(mul_sum_trace(), tmp_path / "run.tgtrace")
    assert main(["render", "run.tgtrace", "--", "--steps", "2"]) == 2
    assert "'run.tgtrace' is a trace file, not a script" in capsys.readouterr().err


def test_a_damaged_trace_file_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "broken.tgtrace").write_bytes(b"PK\x03\x04 not really a zip")
    assert main(["render", "-o", "x.dot", "broken.tgtrace"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("tracegrad render: cannot read trace file") and "Traceback" \
        not in error


@pytest.mark.graphviz
def test_a_crashing_script_is_still_drawn_and_exits_1(project, capsys):
    (project / "bug.py").write_text(CRASHES, encoding="utf-8")
    assert main(["render", "-o", "bug.svg", "bug.py"]) == 1
    error = capsys.readouterr().err
    assert "'bug.py' raised" in error and "what was recorded" in error
    text = (project / "bug.svg").read_text(encoding="utf-8")
    assert "SigmoidBackward0" in text and 'fill="red"' in text


def test_without_dot_images_fail_in_one_sentence_but_dot_text_works(tmp_path, monkeypatch,
                                                                   capsys):
    monkeypatch.chdir(tmp_path)
    tg.tracing.save_trace(mul_sum_trace(), tmp_path / "run.tgtrace")
    bare = str(Path(sys.executable).parent)  # python, but no `dot`
    if Path(bare, "dot").exists():
        pytest.skip("the interpreter's directory holds a `dot`")
    monkeypatch.setenv("PATH", bare)
    assert shutil.which("dot") is None
    assert main(["render", "-o", "graph.svg", "run.tgtrace"]) == 2
    error = capsys.readouterr().err
    assert "sudo apt-get install graphviz" in error
    assert error.count("\n") == 1  # one line
    assert main(["render", "--format", "dot", "run.tgtrace"]) == 0
    assert (tmp_path / "run.dot").read_text(encoding="utf-8").startswith("digraph tracegrad")


def test_a_big_graph_is_drawn_smaller_and_the_command_says_how(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    tg.tracing.save_trace(exp_chain_trace(300), tmp_path / "chain.tgtrace")
    assert main(["render", "--max-nodes", "100", "-o", "chain.dot", "chain.tgtrace"]) == 0
    error = capsys.readouterr().err
    assert ("tracegrad render: render: the graph has about 303 boxes, more than "
            "max_nodes=100") in error
    assert "repeated structure folded: a chain of 301 nodes drawn as 1 box" in error
    source = (tmp_path / "chain.dot").read_text()
    assert "ExpBackward0 ×300" in source and "drawn smaller" in source


def test_render_output_option_after_the_script_is_refused(project, capsys):
    assert main(["render", "net.py", "-o", "graph.svg"]) == 2
    assert "'-o' comes after the target 'net.py'" in capsys.readouterr().err
    assert not (project / "graph.svg").exists()


def test_an_empty_trace_file_is_one_line_not_an_empty_picture(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    tg.tracing.save_trace(tg.Trace(), tmp_path / "empty.tgtrace")
    assert main(["render", "-o", "empty.dot", "empty.tgtrace"]) == 1
    assert capsys.readouterr().err == (
        "tracegrad render: nothing was recorded in 'empty.tgtrace': the trace holds no node, "
        "backward pass or violation. Hint: record it from a script that computes with tensors "
        "that require grad.\n")
    assert not (tmp_path / "empty.dot").exists()


def test_render_defaults_to_the_program_s_own_pass_not_gradcheck_s(tmp_path, monkeypatch,
                                                                   capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "probes.py").write_text(
        "import tracegrad as torch\n"
        "x = torch.randn(2, dtype=torch.float64, requires_grad=True)\n"
        "torch.autograd.gradcheck(lambda t: (t * t).sum(), (x,))\n"
        "loss = (x * 3).sum()\n"
        "loss.backward()\n")
    assert main(["render", "-o", "probes.dot", "probes.py"]) == 0
    trace_passes = capsys.readouterr().err
    source = (tmp_path / "probes.dot").read_text()
    assert "gradcheck probe" not in source
    assert ": backward(loss) at probes.py:5" in source
    assert "pass 0 of" not in trace_passes  # the probes came first
