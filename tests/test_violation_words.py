"""Each kind of violation reads the same wherever it is shown: ``tracegrad check``, the
debugger (its text and ``--dump``), the picture's tooltip (in the SVG itself) and a failed
pytest assertion all hold the block ``tracing.text.violation_lines`` writes."""

from __future__ import annotations

import html
import re
import shutil
import textwrap

import pytest
from tracegrad.tui.dump import dump_steps
from tracegrad.tui.formatting import describe_violation

import tracegrad as tg
from tracegrad.cli import main
from tracegrad.testing import assert_no_violations
from tracegrad.tracing import run_script
from tracegrad.tracing.text import violation_lines

# One small program per kind; each makes exactly one violation of that kind.
PROGRAMS = {
    "inplace_saved": """
        import tracegrad as torch
        x = torch.ones(3, requires_grad=True)
        y = x * 2
        s = y.sigmoid()
        s.mul_(2)
    """,
    "inplace_leaf": """
        import tracegrad as torch
        w = torch.ones(3, requires_grad=True)
        try:
            w.add_(1)
        except RuntimeError:
            pass
    """,
    "nan": """
        import tracegrad as torch
        x = torch.tensor([-1.0, 2.0], requires_grad=True)
        y = x.log()
    """,
    "inf": """
        import tracegrad as torch
        x = torch.tensor([0.0, 4.0], requires_grad=True)
        x.sqrt().sum().backward()
    """,
    "freed_graph": """
        import tracegrad as torch
        x = torch.ones(2, requires_grad=True)
        loss = (x * x).sum()
        loss.backward()
        try:
            loss.backward()
        except RuntimeError:
            pass
    """,
}


@pytest.fixture(params=sorted(PROGRAMS))
def recorded(request, tmp_path, monkeypatch):
    """(kind, script path, its trace, the violation, the block every view must show)."""
    monkeypatch.chdir(tmp_path)
    kind = request.param
    script = tmp_path / f"{kind}.py"
    script.write_text(textwrap.dedent(PROGRAMS[kind]))
    trace = run_script(str(script.name))
    assert [violation.kind for violation in trace.violations] == [kind]
    violation = trace.violations[0]
    return kind, script.name, trace, violation, violation_lines(trace, violation)


def test_the_block_has_a_heading_what_happened_and_sites(recorded):
    kind, script, trace, violation, lines = recorded
    assert re.match(rf"{re.escape(script)}:\d+: .+ \[{kind}\]$", lines[0])
    assert "Hint: " in lines[1]
    assert violation.message == lines[1].strip()  # what a saved file holds
    if trace.tensors.get(violation.tensor) is not None:
        assert trace.tensors[violation.tensor].name in lines[1]  # named, not t<N>


def test_check_prints_the_block(recorded, capsys):
    _, script, _, _, lines = recorded
    main(["check", "--inf", script])  # (Inf counts only with --inf)
    assert "\n".join(lines) in capsys.readouterr().out


def test_the_debugger_shows_the_block(recorded):
    _, _, trace, violation, lines = recorded
    assert describe_violation(violation, trace).plain.splitlines() == lines
    short = describe_violation(violation, trace, full=False).plain.splitlines()
    assert short == [lines[0], *lines[2:]]  # the list leaves the message to the panel
    assert "\n".join("  " + line for line in lines) in dump_steps(trace, all_passes=True)


def test_a_failed_assertion_says_the_block(recorded):
    _, _, trace, _, lines = recorded
    with pytest.raises(AssertionError) as caught:
        assert_no_violations(trace)
    assert "\n".join("    " + line for line in lines) in str(caught.value)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_the_svg_tooltip_holds_the_block(recorded, tmp_path):
    _, _, trace, _, lines = recorded
    path = tmp_path / "graph.svg"
    tg.render(trace, str(path), pass_index="all")
    # Graphviz keeps runs of spaces as " \xa0": read them back as spaces.
    tooltips = [html.unescape(title).replace("\xa0", " ") for title in
                re.findall(r'xlink:title="([^"]*)"', path.read_text(encoding="utf-8"))]
    assert any("\n".join(lines) in tooltip for tooltip in tooltips)
