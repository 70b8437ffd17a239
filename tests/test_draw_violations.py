"""Every violation of a trace appears in its picture: on the box of its node or tensor, or
as a note of its own (a leaf changed in place and never used, a node of another pass)."""

from __future__ import annotations

import textwrap

import pytest

import tracegrad as tg
from tracegrad.tracing.text import violation_mark as violation_label

PROGRAMS = {
    "leaf_only_inplace": """
        import tracegrad as torch
        w = torch.ones(3, requires_grad=True)
        try:
            w.add_(1)                      # refused: a leaf that requires grad
        except RuntimeError:
            pass
        b = torch.ones(2, requires_grad=True)
        (b * 2).sum().backward()            # a graph that never touches w
    """,
    "inplace_on_saved": """
        import tracegrad as torch
        x = torch.randn(8, 4)
        w1 = torch.randn(4, 16, requires_grad=True)
        w2 = torch.randn(16, 2, requires_grad=True)
        h = x.mm(w1).relu()
        loss = h.mm(w2).pow(2).mean()
        h += 0.1
        loss.backward()
    """,
    "nan_forward_and_backward": """
        import tracegrad as torch
        s = torch.tensor([[0.5, 1.5], [1.0, 1.0]], requires_grad=True)
        c = s - s.mean(dim=1, keepdim=True)
        loss = (c.pow(2).sum(dim=1).log() * c.sum(dim=1)).sum()
        loss.backward()
    """,
    "freed_graph": """
        import tracegrad as torch
        w = torch.ones(2, requires_grad=True)
        y = (w * w).sum()
        y.backward()
        y.backward()
    """,
    "violation_in_a_later_pass": """
        import tracegrad as torch
        w = torch.ones(2, requires_grad=True)
        for step in range(2):
            h = w * 2
            out = (h * h).sum()
            if step == 1:
                h.add_(1)
            out.backward()
    """,
}


def traced(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(PROGRAMS[name]))
    return tg.tracing.run_script(str(path), [])


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_violation_is_in_the_dot(tmp_path, monkeypatch, name):
    trace = traced(tmp_path, monkeypatch, name)
    assert trace.violations, "the program was meant to make a violation"
    source = tg.to_dot(trace).source
    for violation in trace.violations:
        for line in violation_label(violation):
            assert line in source, f"{violation.kind} not drawn: {line!r}"


def test_a_leaf_changed_in_place_and_never_used_gets_its_own_red_box(tmp_path, monkeypatch):
    trace = traced(tmp_path, monkeypatch, "leaf_only_inplace")
    (violation,) = trace.violations
    assert violation.kind == "inplace_leaf"
    source = tg.to_dot(trace).source
    box = next(line for line in source.splitlines() if line.startswith(f"\tt{violation.tensor} ["))
    assert box.startswith(f'\tt{violation.tensor} [label="w\\n(3)\\nin-place on a leaf at ')
    assert "fillcolor=red" in box


def test_a_violation_of_another_pass_is_a_note_saying_so(tmp_path, monkeypatch):
    trace = traced(tmp_path, monkeypatch, "violation_in_a_later_pass")
    source = tg.to_dot(trace, pass_index=0).source
    assert "(not in the graph of pass 0)" in source
    assert "shape=note" in source
