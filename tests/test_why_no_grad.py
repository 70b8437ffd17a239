"""Why a tensor has no gradient (tracing/why.py): one program per cause in
examples/no_grad/, each explained with its cause and the line that caused it; the value
flow the engine reports for it (tracing/flows.py); assert_has_grad; `tracegrad why`."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.autograd import events
from tracegrad.cli import main
from tracegrad.testing import assert_has_grad
from tracegrad.tracing.runner import run, run_script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = os.path.join(ROOT, "examples", "no_grad")


def _program(name: str) -> str:
    return os.path.join(PROGRAMS, f"{name}.py")


def _line_of(name: str, marker: str) -> int:
    with open(_program(name)) as handle:
        lines = handle.read().splitlines()
    return next(number for number, line in enumerate(lines, 1) if marker in line)


# program -> (cause, a piece of the line named as the cut, op named or "")
CUTS = {
    "detach": ("detach", "features = h.detach()", ""),
    "data": ("data", "x.mm(w1.data)", ""),
    "no_grad": ("no_grad", "h = x.mm(w1).tanh()", "MmBackward0"),
    "integer": ("integer", "argmax(dim=1)", "argmax"),
    "item_round_trip": ("item", "torch.tensor(value, requires_grad=True)", ""),
    "function_none": ("function_none", "Scale.apply(x, w1)", "ScaleBackward"),
    "zero_grad_after": ("grad_reset", "optimizer.zero_grad()", ""),
    "unused_output": ("unused_output", "prediction = x.mm(w1)", ""),
}
ZEROS = {  # program -> (node that zeroed the gradient, its line, words)
    "dead_relu": ("ReluBackward0", "x.mm(w1).relu()", "dead ReLU"),
    "clamp": ("ClampBackward1", "clamp(max=-1.0)", "clamp"),
    "saturated_sigmoid": ("SigmoidBackward0", "sigmoid()", "saturated sigmoid"),
    "multiply_by_zero": ("MulBackward0", "* mask", "multiplication by zero"),
}


def test_every_program_in_examples_no_grad_is_checked():
    names = {name[:-3] for name in os.listdir(PROGRAMS) if name.endswith(".py")}
    assert names == set(CUTS) | set(ZEROS) | {"requires_grad_false", "never_called",
                                             "retain_graph"}


@pytest.mark.parametrize("name", sorted(CUTS))
def test_a_cut_is_named_with_its_line(name):
    cause, marker, op = CUTS[name]
    why = run_script(_program(name)).why_no_grad("w1")
    assert (why.cause, why.has_grad) == (cause, False)
    assert why.site is not None and why.site.line == _line_of(name, marker), str(why)
    assert why.op == op
    text = str(why)
    assert text.startswith(f"w1: no gradient [{cause}]")
    assert f"{name}.py:{why.site.line}" in text and "Hint:" in text


def test_the_path_through_the_cut_names_the_program_variables():
    why = run_script(_program("detach")).why_no_grad("w1")
    assert why.path == ["w1", "h", "features", "loss"]
    assert "w1 -> h -> features -> loss" in str(why)


def test_an_item_round_trip_names_both_lines():
    why = run_script(_program("item_round_trip")).why_no_grad("w1")
    assert why.other_site.line == _line_of("item_round_trip", "value = x.mm(w1)")
    assert "value left" in str(why)


@pytest.mark.parametrize("name", sorted(ZEROS))
def test_a_zero_gradient_names_the_node_that_zeroed_it(name):
    node, marker, words = ZEROS[name]
    why = run_script(_program(name)).why_no_grad("w1")
    assert (why.cause, why.has_grad, why.op) == ("zero", True, node), str(why)
    assert why.site.line == _line_of(name, marker)
    assert why.fraction == 1.0
    assert words in str(why) and "(100% of the elements reaching it)" in str(why)


def test_a_partly_dead_relu_is_not_a_zero_gradient():
    x = tg.tensor([[1.0, -1.0]])
    w = tg.tensor([[1.0], [1.0]], requires_grad=True)
    with tg.record() as trace:
        (x * w.t()).relu().sum().backward()
    assert trace.why_no_grad(w).cause == "has_grad"


def test_backward_never_called_and_a_failed_second_backward():
    why = run_script(_program("never_called")).why_no_grad("w1")
    assert why.cause == "never_called" and "no backward pass ran" in str(why)
    why = run_script(_program("retain_graph")).why_no_grad("w1")
    assert why.cause == "retain_graph"
    assert why.other_site.line == _line_of("retain_graph", "    loss.backward()")
    assert "retain_graph=True" in str(why)


def test_requires_grad_false_on_a_tensor_the_graph_never_saw():
    result = run(_program("requires_grad_false"))
    with pytest.raises(ValueError, match="no tensor named 'w1'.*w2"):
        result.trace.why_no_grad("w1")
    why = result.trace.why_no_grad(result.namespace["w1"])
    assert why.cause == "requires_grad_false"
    assert "does not require grad" in str(why)


def test_an_integer_tensor_and_detach_in_place():
    w = tg.ones(3, requires_grad=True)
    with tg.record() as trace:
        h = w * 2
        h.detach_()
        (h * tg.ones(3, requires_grad=True)).sum().backward()
    assert trace.why_no_grad(h).cause == "detach_"
    with tg.record() as trace:
        steps = tg.arange(3)
        (steps * w).sum().backward()
    assert trace.why_no_grad(steps).cause == "integer_dtype"


def test_a_comparison_mask_cuts_the_path():
    w = tg.tensor([0.5, -1.0, 2.0], requires_grad=True)
    scale = tg.ones(1, requires_grad=True)
    with tg.record() as trace:
        mask = w > 0
        loss = (mask.float() * scale).sum()
        loss.backward()
    why = trace.why_no_grad(w)
    assert (why.cause, why.op) == ("integer", "gt")
    assert why.site.code == "mask = w > 0"


def test_autograd_grad_fills_no_dot_grad():
    w = tg.ones(3, requires_grad=True)
    with tg.record() as trace:
        tg.autograd.grad((w * 3).sum(), w)
    assert trace.why_no_grad(w).cause == "grad_pass"


def test_unknown_names_and_ids_are_refused_with_the_names_there_are():
    w1 = tg.ones(2, requires_grad=True)
    with tg.record() as trace:
        (w1 * 2).sum().backward()
    with pytest.raises(ValueError, match="no tensor named 'nope'.*w1"):
        trace.why_no_grad("nope")
    with pytest.raises(ValueError, match="no tensor with id 999"):
        trace.why_no_grad(999)


def test_a_saved_trace_keeps_the_flows_and_the_answers(tmp_path):
    trace = run_script(_program("detach"))
    trace.save(tmp_path / "detach.tgtrace")
    loaded = tg.load_trace(tmp_path / "detach.tgtrace")
    assert [flow.kind for flow in loaded.flows] == [flow.kind for flow in trace.flows]
    assert str(loaded.why_no_grad("w1")) == str(trace.why_no_grad("w1"))


# -- the events and their cost ----------------------------------------------------------------
def test_flows_are_recorded_only_for_values_gradients_could_follow():
    data = tg.randn(4, 3)
    w = tg.randn(3, 2, requires_grad=True)
    with tg.record() as trace:
        scaled = data * 2  # data needs no gradient: not a flow
        with tg.no_grad():
            (scaled * 3).sum()
        features = w.detach()
        features.numpy()  # remembered, a flow only if it comes back
        frozen = (scaled.mm(features) + 1).sum().item()
    kinds = [(flow.kind, flow.op) for flow in trace.flows]
    assert kinds == [("detach", ""), ("untracked", "MmBackward0"),
                     ("untracked", "AddBackward0"), ("untracked", "SumBackward0")]
    assert isinstance(frozen, float)


def test_zero_grad_every_step_keeps_one_flow_per_tensor():
    w = tg.ones(3, requires_grad=True)
    optimizer = tg.optim.SGD([w], lr=0.1)
    with tg.record() as trace:
        for _ in range(5):
            optimizer.zero_grad()
            (w * w).sum().backward()
            optimizer.step()
        optimizer.zero_grad()
    resets = [flow for flow in trace.flows if flow.kind == "grad_reset"]
    assert len(resets) == 1 and resets[0].pass_index == 4
    assert trace.why_no_grad(w).cause == "grad_reset"


def test_no_listener_no_events():
    calls = []

    class Spy(events.Listener):
        def on_detach(self, source, result, kind):
            calls.append(kind)

        def on_untracked_op(self, name, args, outputs, grad_enabled):
            calls.append((name, grad_enabled))

        def on_value_out(self, tensor, kind, value):
            calls.append(kind)

        def on_grad_reset(self, tensor):
            calls.append("reset")

    w = tg.ones(2, requires_grad=True)
    w.detach()
    w.data  # noqa: B018 - the event is what is tested
    assert calls == [] and events.listener is None
    with events.subscribe(Spy()):
        w.detach()
        _ = w.data
        with tg.no_grad():
            w * 2
        w.sum().item()
        w.grad = None
    assert calls == ["detach", "data", ("MulBackward0", False), "item", "reset"]


# -- assert_has_grad ----------------------------------------------------------------------------
def test_assert_has_grad_passes_on_a_nonzero_gradient():
    w1 = tg.ones(3, requires_grad=True)
    loss = (w1 * 2).sum()
    loss.backward()
    assert_has_grad(loss, w1)


def test_assert_has_grad_explains_from_the_running_recording():
    w1 = tg.ones(3, requires_grad=True)
    with tg.record():
        loss = (w1.detach() * 2).sum() + tg.ones(1, requires_grad=True).sum()
        loss.backward()
        with pytest.raises(AssertionError, match=r"(?s)w1.grad is None.*\[detach\]"):
            assert_has_grad(loss, w1)


def test_assert_has_grad_without_a_recording_reads_the_graph():
    w1 = tg.ones(3, requires_grad=True)
    loss = (w1.detach() * 2).sum() + tg.ones(1, requires_grad=True).sum()
    loss.backward()
    with pytest.raises(AssertionError, match="does not reach it. Record the program"):
        assert_has_grad(loss, w1)
    loss = (w1 * 0).sum()
    loss.backward()
    with pytest.raises(AssertionError, match="all zeros"):
        assert_has_grad(loss, w1)


# -- tracegrad why --------------------------------------------------------------------------
def test_why_cli_explains_and_exits_1(capsys):
    assert main(["why", _program("no_grad"), "w1"]) == 1
    captured = capsys.readouterr()
    assert "w1: no gradient [no_grad]" in captured.out
    assert captured.err.endswith("tracegrad why: 1 tensor without a nonzero gradient\n")


def test_why_cli_without_names_checks_every_named_leaf(capsys):
    assert main(["why", _program("detach")]) == 1
    out = capsys.readouterr().out
    assert "w1: no gradient [detach]" in out and "w2:" not in out
    assert main(["why", os.path.join(ROOT, "examples", "exp_function.py")]) == 0
    assert "has a gradient" in capsys.readouterr().err


def test_why_cli_on_a_trace_file_and_on_a_live_tensor(tmp_path, capsys):
    output = str(tmp_path / "t.tgtrace")
    assert main(["run", "-o", output, _program("dead_relu")]) == 0
    assert main(["why", output, "w1", "w2"]) == 1
    out = capsys.readouterr().out
    assert "w1: zero gradient [zero]" in out and "zero at ReluBackward0" in out
    # w2 multiplies the dead ReLU's zeros: its gradient is zero at the product
    assert "w2: zero gradient [zero]" in out and "the other operand was all zeros" in out
    assert main(["why", _program("requires_grad_false"), "w1"]) == 1
    assert "[requires_grad_false]" in capsys.readouterr().out


def test_why_cli_usage_errors_exit_2(tmp_path, capsys):
    assert main(["why", _program("detach"), "nope"]) == 2
    assert "tracegrad why: no tensor named 'nope'" in capsys.readouterr().err
    assert main(["why", _program("detach"), "w1", "--pass", "3"]) == 2
    assert "Put tracegrad's options before the target" in capsys.readouterr().err
    assert main(["why", "--pass", "3", _program("detach"), "w1"]) == 2
    assert "--pass 3: the trace has 1 backward pass" in capsys.readouterr().err
    assert main(["why", str(tmp_path / "missing.tgtrace"), "w1"]) == 2


def test_why_cli_passes_script_arguments_after_the_double_dash(tmp_path, capsys):
    script = tmp_path / "args.py"
    script.write_text("import sys\nimport tracegrad as torch\n"
                      "w1 = torch.ones(2, requires_grad=True)\n"
                      "loss = (w1 * float(sys.argv[1])).sum()\nloss.backward()\n")
    assert main(["why", str(script), "w1", "--", "0"]) == 1
    assert "[zero]" in capsys.readouterr().out
    assert main(["why", str(script), "w1", "--", "2"]) == 0


def test_numbers_flow_out_only_when_small():
    from tracegrad.tracing.flows import value_key

    assert value_key(np.zeros(5000)) is None and value_key("text") is None
    assert value_key([1, 2]) == value_key(np.array([1.0, 2.0]))


@pytest.mark.parametrize("name", ["tracegrad.tracing.why", "tracegrad.tracing.flows",
                                  "tracegrad.tracing.diff", "tracegrad.testing.answers"])
def test_docstring_examples(name, tmp_path, monkeypatch):
    import doctest
    import importlib

    monkeypatch.chdir(tmp_path)
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# -- the same programs on real torch, observed through the bridge -----------------------------
def _on_torch(name: str, folder):
    """(trace, the program's globals) of examples/no_grad/NAME.py run on real torch (a copy
    with the one changed import swapped back, run as tracegrad runs a script)."""
    pytest.importorskip("torch")
    with open(_program(name)) as handle:
        source = handle.read().replace("import tracegrad as torch", "import torch")
    path = folder / f"{name}.py"
    path.write_text(source)
    result = run(str(path))
    return result.trace, result.namespace


# torch names its nodes and ops its own way: what differs, by program
_TORCH_OPS = {"no_grad": "mm"}


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(set(CUTS) | set(ZEROS) | {"never_called",
                                                                 "retain_graph"}))
def test_the_same_answer_on_real_torch(name, tmp_path):
    ours = run_script(_program(name)).why_no_grad("w1")
    trace, namespace = _on_torch(name, tmp_path)
    assert trace.metadata["engine"] == "torch"
    theirs = trace.why_no_grad(namespace["w1"])
    assert (theirs.cause, theirs.label) == (ours.cause, "w1"), str(theirs)
    assert (theirs.site and theirs.site.line) == (ours.site and ours.site.line)
    assert theirs.op == _TORCH_OPS.get(name, ours.op)
    assert theirs.fraction == ours.fraction


@pytest.mark.torch
def test_requires_grad_false_on_real_torch(tmp_path):
    trace, namespace = _on_torch("requires_grad_false", tmp_path)
    assert trace.why_no_grad(namespace["w1"]).cause == "requires_grad_false"


def test_a_later_backward_on_another_loss_is_the_wrong_loss():
    w1 = tg.ones(3, requires_grad=True)
    w2 = tg.ones(3, requires_grad=True)
    with tg.record() as trace:
        first = (w1 * 2).sum()
        first.backward()
        w1.grad = None
        second = (w2 * 3).sum()
        second.backward()
    why = trace.why_no_grad(w1)
    assert why.cause == "wrong_loss" and why.detail == "second"
    assert why.site.code == "first.backward()" and why.other_site.code == "second.backward()"


def test_a_zero_gradient_is_found_from_statistics_when_arrays_were_not_kept():
    w1 = tg.full((3, 2), -1.0, requires_grad=True)
    x = tg.ones(4, 3)
    with tg.record(budget_bytes=0) as trace:  # statistics only, for every value
        x.mm(w1).relu().sum().backward()
    assert trace.passes[-1].steps[-1].grad_after.array is None
    why = trace.why_no_grad(w1)
    assert (why.cause, why.op, why.fraction) == ("zero", "ReluBackward0", None)
    assert "(100% of" not in str(why)


# -- a gradient zeroed in place after backward: .grad is there, and all zeros ----------------
_ZEROED = {
    "optimizer": "opt.zero_grad(set_to_none=False)\n",
    "tutorial": "with torch.no_grad():\n    w1 -= 0.1 * w1.grad\n    w1.grad.zero_()\n",
}


def _zeroed_script(folder, how: str, library: str = "tracegrad as torch"):
    script = folder / f"zeroed_{how}.py"
    script.write_text(f"import {library}\n"
                      "w1 = torch.ones(2, requires_grad=True)\n"
                      "opt = torch.optim.SGD([w1], lr=0.1)\n"
                      "loss = (w1 * 3.0).sum()\n"
                      "loss.backward()\n" + _ZEROED[how])
    return script


@pytest.mark.parametrize("how", sorted(_ZEROED))
def test_a_gradient_zeroed_in_place_after_backward_is_not_called_nonzero(how, tmp_path):
    """The trace records the accumulated gradient (nonzero); the live tensor's .grad is
    all zeros now. The answer must say so, not 'has a nonzero gradient'."""
    result = run(str(_zeroed_script(tmp_path, how)))
    w1 = result.namespace["w1"]
    assert w1.grad is not None and not w1.grad.any()
    why = result.trace.why_no_grad(w1)
    assert (why.cause, why.has_grad) == ("grad_zeroed", False), str(why)
    assert why.other_site.line == 5  # loss.backward()
    assert "holds only zeros now" in str(why) and "zero_grad(set_to_none=False)" in str(why)
    # The trace alone (a name, a loaded file) cannot know: it keeps the recorded answer.
    assert result.trace.why_no_grad("w1").cause == "has_grad"


def test_a_gradient_zeroed_after_a_later_pass_does_not_change_an_earlier_one():
    w = tg.ones(2, requires_grad=True)
    with tg.record() as trace:
        (w * 3.0).sum().backward()
        (w * 2.0).sum().backward()
        w.grad.zero_()
    assert trace.why_no_grad(w).cause == "grad_zeroed"
    assert trace.why_no_grad(w, pass_index=0).cause == "has_grad"


def test_why_cli_reads_the_scripts_own_tensor(tmp_path, capsys):
    assert main(["why", str(_zeroed_script(tmp_path, "optimizer")), "w1"]) == 1
    out = capsys.readouterr().out
    assert "w1: no gradient [grad_zeroed]" in out and "holds only zeros now" in out


@pytest.mark.torch
@pytest.mark.parametrize("how", sorted(_ZEROED))
def test_a_gradient_zeroed_in_place_on_real_torch(how, tmp_path):
    pytest.importorskip("torch")
    result = run(str(_zeroed_script(tmp_path, how, library="torch")))
    assert result.trace.metadata["engine"] == "torch"
    assert result.trace.why_no_grad(result.namespace["w1"]).cause == "grad_zeroed"
