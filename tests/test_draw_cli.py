"""`tracegrad render` in a subprocess: scripts, .tgtrace files, formats, crashes, no `dot`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
from test_draw_dot import mul_sum_trace

import tracegrad as tg

REPO = Path(__file__).resolve().parent.parent
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


def render_cli(*args: str, cwd: Path, path: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if path is not None:
        env["PATH"] = path
    return subprocess.run([sys.executable, "-m", "tracegrad", "render", *args],
                          check=False, cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=120)


def svg_titles(path: Path) -> list[str]:
    root = ElementTree.parse(path).getroot()
    return [group.find(f"{SVG}title").text for group in root.iter(f"{SVG}g")
            if group.get("class") == "node"]


@pytest.mark.graphviz
def test_render_a_script_to_svg(tmp_path):
    (tmp_path / "net.py").write_text(TWO_LAYER, encoding="utf-8")
    result = render_cli("net.py", "-o", "graph.svg", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "wrote graph.svg" in result.stderr
    text = (tmp_path / "graph.svg").read_text(encoding="utf-8")
    assert "MmBackward0" in text and "ClampBackward1" in text
    assert len(svg_titles(tmp_path / "graph.svg")) >= 6


def test_render_a_script_to_dot_text_with_options(tmp_path):
    (tmp_path / "net.py").write_text(TWO_LAYER, encoding="utf-8")
    result = render_cli("net.py", "-o", "graph.dot", "--no-show-saved", "--rankdir", "LR",
                        cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    source = (tmp_path / "graph.dot").read_text(encoding="utf-8")
    assert "rankdir=LR" in source and "dir=none" not in source
    assert 'label="w1\\n(3, 5)' in source


@pytest.mark.graphviz
def test_render_a_saved_trace_to_png(tmp_path):
    tg.tracing.save_trace(mul_sum_trace(), tmp_path / "run.tgtrace")
    result = render_cli("run.tgtrace", "-o", "out/graph.png", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "graph.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.graphviz
def test_a_crashing_script_is_still_drawn_and_exits_nonzero(tmp_path):
    (tmp_path / "bug.py").write_text(CRASHES, encoding="utf-8")
    result = render_cli("bug.py", "-o", "bug.svg", cwd=tmp_path)
    assert result.returncode == 1
    assert "bug.py raised" in result.stderr and "what was recorded" in result.stderr
    text = (tmp_path / "bug.svg").read_text(encoding="utf-8")
    assert "SigmoidBackward0" in text and 'fill="red"' in text


def test_without_dot_images_fail_in_one_sentence_but_dot_text_works(tmp_path):
    tg.tracing.save_trace(mul_sum_trace(), tmp_path / "run.tgtrace")
    bare = str(Path(sys.executable).parent)  # python, but no `dot`
    if Path(bare, "dot").exists():
        pytest.skip("the interpreter's directory holds a `dot`")
    result = render_cli("run.tgtrace", "-o", "graph.svg", cwd=tmp_path, path=bare)
    assert result.returncode == 2
    assert "sudo apt-get install graphviz" in result.stderr
    assert result.stderr.count("\n") == 1  # one line
    result = render_cli("run.tgtrace", "--format", "dot", cwd=tmp_path, path=bare)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "run.dot").read_text(encoding="utf-8").startswith("digraph tracegrad")


def test_missing_target_is_a_clear_error(tmp_path):
    result = render_cli("nope.py", "-o", "graph.dot", cwd=tmp_path)
    assert result.returncode == 2
    assert "no such file: 'nope.py'" in result.stderr
