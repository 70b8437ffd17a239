"""Each violation kind, with both of its file:line sites."""

from __future__ import annotations

import inspect

import pytest

import tracegrad as tg

THIS_FILE = "test_tracing_violations.py"


def _line_of(marker: str) -> int:
    """The line number in this file of the line ending with ``# <marker>``."""
    for number, text in enumerate(inspect.getsource(inspect.getmodule(_line_of))
                                  .splitlines(), start=1):
        if text.rstrip().endswith(f"# {marker}"):
            return number
    raise AssertionError(f"marker {marker} not found")


def test_inplace_on_saved_tensor_reported_when_it_happens():
    x = tg.ones(3, requires_grad=True)
    with tg.record() as tr:
        y = x * 2
        z = y * y  # saves-y
        assert not tr.violations
        y.add_(1)  # inplace-y
        (violation,) = tr.violations  # reported before backward runs
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()
    assert len(tr.violations) == 1  # the failing backward does not repeat it
    assert violation.kind == "inplace_saved" and violation.phase == "forward"
    assert violation.site.file.endswith(THIS_FILE)
    assert violation.site.line == _line_of("inplace-y")
    assert violation.other_site.line == _line_of("saves-y")
    assert violation.site.code.startswith("y.add_(1)")
    assert (violation.saved_version, violation.current_version) == (0, 1)
    assert tr.node(violation.node).name == "MulBackward0"
    assert tr.tensor(violation.tensor).name == "y"
    assert "add_" in violation.message and "MulBackward0" in violation.message
    # written before the name was known; the name replaces the placeholder label at the end
    assert violation.message.startswith(
        "'y' float32 [3] was modified in place by 'add_' after MulBackward0 saved it for "
        "backward; backward through it will fail.")
    # the failed pass carries the error, on the step that raised it too
    (failed,) = tr.passes
    assert failed.error.startswith("InplaceError")
    assert failed.steps[-1].error.startswith("InplaceError")
    # the tensor's version history names the op and the line
    (change,) = tr.tensor(violation.tensor).versions
    assert (change.version, change.op, change.site.line) == (1, "add_", _line_of("inplace-y"))


def test_inplace_graph_shows_the_tensor_going_in_and_out():
    x = tg.ones(3, requires_grad=True)
    with tg.record() as tr:
        y = x * 2
        y.add_(1)
    add = next(node for node in tr.iter_nodes() if node.name == "AddBackward0")
    assert add.inputs == add.outputs == [tr.nodes[0].outputs[0]]
    assert tr.tensor(add.outputs[0]).name == "y"
    assert tr.tensor(add.outputs[0]).grad_fn == add.id
    assert sorted(tr.tensors) == list(range(len(tr.tensors)))  # no gaps from temporaries


def test_inplace_after_backward_freed_the_graph_is_fine():
    w = tg.ones(3, requires_grad=True)
    with tg.record() as tr:
        for _ in range(3):
            loss = (w * w).sum()
            loss.backward()
            with tg.no_grad():
                w -= 0.1 * w.grad  # the saved w was freed by backward: no violation
                w.grad.zero_()
    assert tr.violations == []
    assert [(change.version, change.op) for change in tr.tensor(0).versions] == [
        (1, "sub_"), (2, "sub_"), (3, "sub_")]


def test_backward_failure_of_an_inplace_made_before_tracing():
    x = tg.ones(2, requires_grad=True)
    y = x * 1
    z = y * y
    y.mul_(3)
    with tg.record() as tr, pytest.raises(RuntimeError):
        z.sum().backward()
    (violation,) = tr.violations
    assert violation.kind == "inplace_saved" and violation.phase == "backward"
    # made before tracing: no lines were recorded, but the op and the versions are known
    assert violation.other_site is None and violation.site is None
    assert "'mul_'" in violation.message
    assert (violation.saved_version, violation.current_version) == (0, 1)
    assert violation.pass_index == 0


def test_inplace_on_leaf_that_requires_grad():
    with tg.record() as tr:
        w = tg.ones(3, requires_grad=True)  # leaf-made
        with pytest.raises(RuntimeError, match="leaf Variable"):
            w.add_(1)  # leaf-inplace
    (violation,) = tr.violations
    assert violation.kind == "inplace_leaf"
    assert violation.site.line == _line_of("leaf-inplace")
    assert violation.other_site.line == _line_of("leaf-made")
    assert tr.tensor(violation.tensor).name == "w"


def test_nan_in_forward_names_the_producing_line():
    a = tg.tensor([1.0, -1.0], requires_grad=True)
    with tg.record() as tr:
        b = a * 2
        c = b.sqrt()  # nan-forward
        d = c * 3  # propagates: not reported again
        d.sum()
    (violation,) = [v for v in tr.violations if v.phase == "forward"]
    assert violation.kind == "nan"
    assert tr.node(violation.node).name == "SqrtBackward0"
    assert violation.site.line == _line_of("nan-forward")
    assert tr.tensor(violation.tensor).name == "c"


def test_inf_in_backward_names_the_node_and_its_forward_line():
    s = tg.tensor([0.0, 4.0], requires_grad=True)
    with tg.record() as tr:
        r = s.sqrt()  # inf-backward
        (r * 1).sum().backward()
    (violation,) = tr.violations
    assert (violation.kind, violation.phase) == ("inf", "backward")
    assert tr.node(violation.node).name == "SqrtBackward0"
    assert violation.site.line == _line_of("inf-backward")
    step = tr.passes[0].steps[violation.step_index]
    assert step.node == violation.node
    assert step.grads_out[0].stats.inf_count == 1
    assert violation.pass_index == 0


def test_same_nan_in_a_loop_is_reported_once():
    a = tg.tensor([-1.0], requires_grad=True)
    with tg.record() as tr:
        for _ in range(5):
            a.log()
    assert len(tr.violations) == 1


def test_backward_through_freed_graph_names_the_pass_that_freed_it():
    x = tg.ones(2, requires_grad=True)
    with tg.record() as tr:
        loss = (x * x).sum()  # freed-node
        loss.backward()  # first-backward
        with pytest.raises(RuntimeError, match="second time"):
            loss.backward()  # second-backward
    (violation,) = tr.violations
    assert violation.kind == "freed_graph"
    assert violation.pass_index == 0
    assert violation.site.line == _line_of("second-backward")
    assert violation.other_site.line == _line_of("freed-node")
    assert tr.passes[0].site.line == _line_of("first-backward")
    assert tr.passes[1].error.startswith("AutogradError")


def test_retain_graph_then_second_backward_is_clean():
    x = tg.ones(2, requires_grad=True)
    with tg.record() as tr:
        loss = (x * x).sum()
        loss.backward(retain_graph=True)
        loss.backward()
    assert tr.violations == [] and len(tr.passes) == 2
    assert tr.passes[0].retain_graph and not tr.passes[1].retain_graph
