"""Golden DOT text for the tutorials' programs, traced for real and compared exactly.

The programs live in tests/golden/dot/programs.py; each one's expected DOT text is
tests/golden/dot/<program>.dot, with line numbers written as ``N`` (moving a line of
programs.py changes no golden file). After an intended change to the picture, rewrite
the files with

    TRACEGRAD_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q tests/test_draw_golden.py

and review the diff with ``git diff tests/golden/dot``.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
from pathlib import Path

import pytest

import tracegrad as tg

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "golden" / "dot"
UPDATE = os.environ.get("TRACEGRAD_UPDATE_GOLDEN") == "1"


def load_programs():
    spec = importlib.util.spec_from_file_location("golden_dot_programs",
                                                  GOLDEN / "programs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PROGRAMS = load_programs()


def traced(program_name: str, monkeypatch):
    """The Trace of one program, with sites relative to the repository root."""
    monkeypatch.chdir(REPO)  # sites are recorded relative to the working directory
    with tg.record() as trace:
        PROGRAMS.PROGRAMS[program_name]()
    return trace


def compare_with_golden(source: str, golden: Path) -> None:
    if UPDATE or not golden.exists():
        golden.write_text(source, encoding="utf-8")
        if not UPDATE:
            pytest.fail(f"{golden.name} did not exist; written now. Review it and rerun.")
        return
    expected = golden.read_text(encoding="utf-8")
    if source != expected:
        diff = "".join(difflib.unified_diff(
            expected.splitlines(keepends=True), source.splitlines(keepends=True),
            fromfile=f"golden/{golden.name}", tofile="now"))
        pytest.fail(f"DOT text differs from {golden.name} (TRACEGRAD_UPDATE_GOLDEN=1 "
                    f"rewrites it):\n{diff}")


def without_line_numbers(source: str) -> str:
    """The DOT text with every ``file.py:<line>`` as ``file.py:N``: a golden file states the
    picture, so moving a line of programs.py must not break it (the lines themselves are
    checked by the site tests)."""
    return re.sub(r"(\.py):\d+", r"\1:N", source)


@pytest.mark.parametrize("program_name", sorted(PROGRAMS.PROGRAMS))
def test_tutorial_program_matches_its_golden_dot(program_name, monkeypatch):
    source = tg.to_dot(traced(program_name, monkeypatch)).source
    compare_with_golden(without_line_numbers(source), GOLDEN / f"{program_name}.dot")


def test_the_same_program_gives_the_same_text_twice(monkeypatch):
    first = tg.to_dot(traced("two_layer_net", monkeypatch)).source
    second = tg.to_dot(traced("two_layer_net", monkeypatch)).source
    assert first == second


def test_two_layer_net_shows_what_torchviz_shows_and_more(monkeypatch):
    source = tg.to_dot(traced("two_layer_net", monkeypatch)).source
    assert 'label="MyReLUBackward\\nstep 5"' in source  # user Function, its step
    assert 'label="w2\\n(5, 2)\\nstep 4\\nv0 · 40 B"' in source  # leaf also saved: one box
    assert 'label="w1\\n(3, 5)\\nstep 7"' in source  # x's gradient is not needed: w1 unsaved
    assert source.count("\tt0 [") == 1
    assert 'label="loss\\n()" fillcolor=darkolivegreen1' in source
    assert "v0≠v1" not in source  # the optimizer step after backward is no violation


def test_exp_saves_its_own_output_drawn_once_with_both_roles(monkeypatch):
    source = tg.to_dot(traced("exp", monkeypatch)).source
    assert source.count("\tt1 [") == 1
    assert "n0 -> t1" in source
    assert "t1 -> n0 [color=orange dir=none label=result" in source


def test_live_tensor_and_nested_outputs_are_all_drawn():
    x = tg.randn(2, 3, requires_grad=True)
    a = (x * 2).sum()
    b = x.exp()
    source = tg.to_dot({"a": a, "rest": [b, (x.sin(),)]}).source
    for name in ("MulBackward0", "SumBackward0", "ExpBackward0", "SinBackward0"):
        assert name in source
    assert source.count("fillcolor=darkolivegreen1") == 3


def test_inplace_bug_is_drawn_in_red_with_both_lines(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    program = tmp_path / "inplace_bug.py"
    program.write_text(
        "import tracegrad as torch\n"
        "x = torch.randn(3, requires_grad=True)\n"
        "y = x.sigmoid()\n"
        "y.mul_(2)\n"
        "y.sum().backward()\n", encoding="utf-8")
    trace = tg.tracing.run_script(str(program), [])
    assert trace.exception is not None
    source = tg.to_dot(trace).source
    node = next(line for line in source.splitlines() if "SigmoidBackward0" in line
                and "[label=" in line)
    assert "fillcolor=red" in node
    assert "inplace_bug.py:4" in node and "inplace_bug.py:3" in node
    assert "RuntimeError" in source or "InplaceError" in source  # the exception note
