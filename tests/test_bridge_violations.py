"""Every violation kind on real torch programs, with both sites, the moment it happens --
and PyTorch's own errors still raised exactly as without tracing."""

from __future__ import annotations

import pytest

import tracegrad as tg

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")


def _error_of(program) -> tuple[str, str]:
    with pytest.raises(Exception) as caught:
        program()
    return type(caught.value).__name__, str(caught.value)


def _inplace_bug(record_into=None):
    torch.manual_seed(0)
    x, target = torch.randn(8, 4), torch.randn(8, 2)
    w1 = torch.randn(4, 16, requires_grad=True)
    w2 = torch.randn(16, 2, requires_grad=True)
    h = x.mm(w1).relu()
    prediction = h.mm(w2)
    loss = (prediction - target).pow(2).mean()
    h += 0.1  # the bug
    if record_into is not None:
        record_into.append([v.kind for v in record_into[0].violations])
    loss.backward()


def test_inplace_on_a_saved_tensor_is_reported_at_the_inplace_line_at_once():
    seen = []
    with pytest.raises(RuntimeError) as caught, tg.record() as tr:
        seen.append(tr)
        _inplace_bug(seen)
    assert seen[1] == ["inplace_saved", "inplace_saved"]  # before backward ran
    relu, mm = tr.violations
    for violation, saver, line in ((relu, "ReluBackward0", "h = x.mm(w1).relu()"),
                                   (mm, "MmBackward0", "prediction = h.mm(w2)")):
        assert violation.kind == "inplace_saved" and violation.phase == "forward"
        assert violation.site.code == "h += 0.1  # the bug"
        assert violation.other_site.code == line
        assert tr.node(violation.node).name == saver
        assert (violation.saved_version, violation.current_version) == (0, 1)
        assert tr.tensor(violation.tensor).name == "h"
        assert (f"'h' float32 [8, 16] was modified in place by 'add_' after {saver} saved it "
                "for backward") in violation.message
    # PyTorch's own version-counter error still fires, word for word
    assert (type(caught.value).__name__, str(caught.value)) == _error_of(_inplace_bug)
    assert "is at version 1; expected version 0 instead" in str(caught.value)


def test_inplace_under_no_grad_on_a_saved_tensor_is_reported():
    w = torch.ones(3, requires_grad=True)
    with tg.record() as tr:
        y = w.sigmoid()
        with torch.no_grad():
            y.mul_(2)
    (violation,) = tr.violations
    assert violation.kind == "inplace_saved" and violation.site.code == "y.mul_(2)"
    assert violation.other_site.code == "y = w.sigmoid()"


def test_changes_torch_does_not_check_are_not_violations():
    w = torch.ones(3, requires_grad=True)
    with tg.record() as tr:
        y = w * w  # saves w twice
        w.data.add_(1)  # .data has a version counter of its own: torch never complains
        z = y.exp()
        z.detach().zero_()  # shares z's counter: ExpBackward0 saved z -- this one is real
        fresh = torch.ones(3)
        fresh.add_(1)  # nobody saved it
    assert [(v.kind, tr.node(v.node).name) for v in tr.violations] == [
        ("inplace_saved", "ExpBackward0")]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_inplace_on_a_leaf_names_the_line_and_where_the_leaf_was_made():
    def program():
        w = torch.randn(3, requires_grad=True)
        w.add_(1)

    with pytest.raises(RuntimeError) as caught, tg.record() as tr:
        program()
    (violation,) = tr.violations
    assert violation.kind == "inplace_leaf"
    assert violation.site.code == "w.add_(1)"
    assert violation.other_site.code == "w = torch.randn(3, requires_grad=True)"
    assert "'w' float32 [3]" in violation.message
    assert (type(caught.value).__name__, str(caught.value)) == _error_of(program)


def test_first_nan_and_inf_in_forward_and_in_backward():
    scores = torch.tensor([[0.5, 1.5, 2.5], [1.0, 1.0, 1.0]], requires_grad=True)
    with tg.record() as tr:
        centered = scores - scores.mean(dim=1, keepdim=True)
        spread = centered.pow(2).sum(dim=1)
        log_spread = spread.log()
        loss = (log_spread * centered.sum(dim=1)).sum()
        loss.backward()
    found = [(v.kind, v.phase, v.site.code) for v in tr.violations]
    loss_line = "loss = (log_spread * centered.sum(dim=1)).sum()"
    assert found == [
        ("inf", "forward", "log_spread = spread.log()"),
        ("nan", "forward", loss_line),  # the first NaN: -inf * 0, made from the Inf
        ("inf", "backward", loss_line),
        ("nan", "backward", "log_spread = spread.log()")]
    forward = tr.violations[0]
    assert tr.node(forward.node).name == "LogBackward0"
    assert tr.tensor(forward.tensor).name == "log_spread"
    assert [v.cause for v in tr.violations] == [
        "log_of_zero", "inf_times_zero", "nonfinite_input", "log_grad_at_zero"]
    assert tr.violations[1].from_nonfinite and tr.violations[1].detail["upstream"] == \
        forward.node
    assert [(v.pass_index, v.step_index) for v in tr.violations[2:]] == [(0, 1), (0, 3)]
    assert bool(scores.grad.isnan().any())


def test_backward_through_a_freed_graph_names_both_passes():
    def program():
        w = torch.ones(3, requires_grad=True)
        loss = w.sigmoid().sum()
        loss.backward()
        loss.backward()

    with pytest.raises(RuntimeError) as caught, tg.record() as tr:
        program()
    (violation,) = tr.violations
    assert violation.kind == "freed_graph" and violation.pass_index == 0
    assert violation.site.code == "loss.backward()" and violation.site.line == \
        tr.passes[1].site.line and tr.passes[0].site.line == violation.site.line - 1
    assert violation.other_site.code == "loss = w.sigmoid().sum()"
    assert tr.node(violation.node).name == "SigmoidBackward0"
    assert tr.passes[1].error.startswith("RuntimeError: Trying to backward through the graph")
    assert tr.passes[1].steps[-1].error is not None
    assert (type(caught.value).__name__, str(caught.value)) == _error_of(program)


def test_a_change_made_before_recording_is_found_when_backward_fails():
    w = torch.ones(3, requires_grad=True)
    y = w.exp()  # ExpBackward0 saves its result y
    y.add_(1)  # not recorded: before the recording
    with pytest.raises(RuntimeError, match="modified by an inplace operation"), \
            tg.record() as tr:
        y.sum().backward()
    (violation,) = tr.violations
    assert violation.kind == "inplace_saved" and violation.phase == "backward"
    assert (violation.saved_version, violation.current_version) == (0, 1)
    assert tr.node(violation.node).name == "ExpBackward0"
