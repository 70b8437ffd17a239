"""Backward steps recorded on arrays, with the recorder's shortcuts (a gradient handed on
as it came is not checked for NaN/Inf again), make the same trace as the same steps told
in Tensors, where every gradient is checked: same steps, gradients, values, violations.

The Tensor path is the one hooks, anomaly mode and the PyTorch bridge take, so it is the
reference; the programs below put NaN and Inf where a shortcut could miss them.
"""

from __future__ import annotations

import pytest
from tutorial_programs import BadSquare, MyReLU, double_mul_function

import tracegrad
from tracegrad.autograd.events import _as_tensors
from tracegrad.tracing.recorder import Recorder


class TensorStepRecorder(Recorder):
    """A recorder told every step in Tensors, as if each node had hooks."""

    def on_node_start_arrays(self, node, grads_in, tensors: bool = False) -> None:
        super().on_node_start_arrays(node, grads_in if tensors else _as_tensors(grads_in),
                                     True)

    def on_node_end_arrays(self, node, grads_out, duration_ns: int,
                           tensors: bool = False) -> None:
        super().on_node_end_arrays(node, grads_out if tensors else _as_tensors(grads_out),
                                   duration_ns, True)


def chain_with_nan():
    """A chain whose gradient turns Inf midway (sqrt at 0), then NaN (times 0), which the
    additions and multiplications after it hand on."""
    x = tracegrad.ones(4, requires_grad=True)
    w = tracegrad.full((4,), 0.5)
    y = x
    for index in range(12):
        y = y * w if index % 2 == 0 else y + w
        if index == 5:
            y = (y * 0).sqrt()
    y.sum().backward()


def chain_with_inf_then_nan():
    """Inf made in backward (log at 0), handed on, then turned into NaN (times 0)."""
    x = tracegrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    z = (x * 0).log()
    y = z + 1.0
    y = y + 2.0
    (y * 0).sum().backward()


def hook_poisons_in_place():
    """A tensor hook that writes NaN into the gradient it is given (returning None), on a
    node whose gradient the steps after it hand on."""
    x = tracegrad.ones(3, requires_grad=True)
    a = x * 2
    b = a + 1
    c = b + 1

    def poison(grad):
        grad.mul_(float("nan"))

    b.register_hook(poison)
    ((c + a) * 1.5).sum().backward()


def shared_gradient():
    """One gradient on two edges (an addition of a tensor to itself) and to two consumers."""
    x = tracegrad.ones(5, requires_grad=True)
    h = x * 3
    s = h + h
    t = s + 1
    (t * s).sum().backward()


def training_loop():
    """The tutorial's two-layer net with MyReLU, a few passes, grads not zeroed."""
    tracegrad.manual_seed(0)
    x, y = tracegrad.randn(8, 6), tracegrad.randn(8, 2)
    w1 = tracegrad.randn(6, 5, requires_grad=True)
    w2 = tracegrad.randn(5, 2, requires_grad=True)
    for _ in range(4):
        loss = (MyReLU.apply(x.mm(w1)).mm(w2) - y).pow(2).sum()
        loss.backward()


def grads_and_double_backward():
    """grad() with create_graph, a second backward through it, a multi-output Function,
    a planted wrong backward, and a backward that fails."""
    tracegrad.manual_seed(1)
    b = tracegrad.randn(3, requires_grad=True)
    (grad_b,) = tracegrad.autograd.grad((b * b * b).sum(), b, create_graph=True)
    (grad_b * grad_b).sum().backward()
    first, second = double_mul_function(tracegrad)(b)
    (first.sum() + second.sum()).backward()
    BadSquare.apply(b + 1).sum().backward()
    with pytest.raises(ValueError, match="planted"):
        Fails.apply(b * 2).sum().backward()


class Fails(tracegrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("a planted failure in backward")


PROGRAMS = [chain_with_nan, chain_with_inf_then_nan, hook_poisons_in_place, shared_gradient,
            training_loop, grads_and_double_backward]


def _trace_file(recorder_class, program, values: bool, tmp_path, name: str) -> bytes:
    recorder = recorder_class(values=values, keep_passes=None)
    with recorder:
        program()
    path = tmp_path / f"{name}.tgtrace"
    recorder.trace.save(path, timings=False)
    return path.read_bytes()


@pytest.mark.parametrize("values", [True, False], ids=["values", "structure"])
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda program: program.__name__)
def test_steps_on_arrays_record_what_steps_in_tensors_record(program, values, tmp_path):
    on_arrays = _trace_file(Recorder, program, values, tmp_path, "arrays")
    in_tensors = _trace_file(TensorStepRecorder, program, values, tmp_path, "tensors")
    assert on_arrays == in_tensors


def test_a_nan_handed_on_by_additions_is_found_once_where_it_appeared():
    with tracegrad.record() as trace:
        chain_with_nan()
    steps = trace.passes[0].steps
    found = [(violation.kind, trace.node(violation.node).name, violation.step_index)
             for violation in trace.violations]
    # sqrt's gradient at 0 is Inf; the multiplication by 0 before it (run next) makes NaN
    at = next(index for index, step in enumerate(steps)
              if trace.node(step.node).name == "SqrtBackward0")
    assert found == [("inf", "SqrtBackward0", at), ("nan", "MulBackward0", at + 1)]
    # ... which every step after them hands on: the gradients say so, no violation does
    assert all(step.grads_out[0].stats.nan_count == 4 for step in steps[at + 1:-1])
    assert not any(value.stats.has_nonfinite for step in steps[:at]
                   for value in step.grads_out if value is not None)


def test_a_hook_that_writes_nan_in_place_is_seen_by_the_steps_after_it():
    with tracegrad.record() as trace:
        hook_poisons_in_place()
    steps = trace.passes[0].steps
    names = [trace.node(step.node).name for step in steps]
    assert names[-2:] == ["MulBackward0", "AccumulateGrad"]  # a = x * 2, then x.grad
    multiply, accumulate = steps[-2:]
    assert multiply.grads_in[0].stats.nan_count == 3
    assert multiply.grads_out[0].stats.nan_count == 3
    assert accumulate.grad_after.stats.nan_count == 3


# The example programs, recorded whole (forward ops, in-place changes, names, values,
# violations, backward steps): the recorder's shortcuts give the file the steps told in
# Tensors give, and recording the same program again gives the same bytes (node and tensor
# ids, names, values: a golden file or a diff of two traces never flickers). The larger
# training examples run in test_examples.py; these cover the kinds of event (in-place
# violations, NaN, custom Functions, legacy Variables, hooks), ending in an error too.
SMALL_EXAMPLES = ["autograd_basics", "exp_function", "global_max_pool", "inplace_bug",
                  "legacy_autograd_mechanics", "legacy_bad_fft", "nan_bug", "swish",
                  "where_trap"]


def _example_file(recorder_class, name: str, values: bool, tmp_path, label: str,
                  monkeypatch) -> bytes:
    from example_programs import EXAMPLES

    from tracegrad.tracing import runner

    monkeypatch.setattr(runner, "Recorder", recorder_class)
    tracegrad.manual_seed(0)  # (a few examples draw unseeded random inputs)
    trace = runner.run_script(str(EXAMPLES / f"{name}.py"), values=values, keep_passes=None)
    assert trace.nodes
    path = tmp_path / f"{label}.tgtrace"
    trace.save(path, timings=False)
    return path.read_bytes()


@pytest.mark.parametrize("values", [True, False], ids=["values", "structure"])
@pytest.mark.parametrize("name", SMALL_EXAMPLES)
def test_examples_record_the_same_bytes_every_time_and_either_way(name, values, tmp_path,
                                                                  monkeypatch, capsys):
    first = _example_file(Recorder, name, values, tmp_path, "first", monkeypatch)
    again = _example_file(Recorder, name, values, tmp_path, "again", monkeypatch)
    in_tensors = _example_file(TensorStepRecorder, name, values, tmp_path, "tensors",
                               monkeypatch)
    assert first == again
    assert first == in_tensors
