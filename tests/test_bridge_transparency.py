"""A torch program behaves exactly as without tracing: the same values, bit for bit, and the
same exceptions, word for word -- PyTorch's own version-counter error included."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from example_programs import load_example

import tracegrad as tg

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")


def _outcome(program, traced: bool):
    """("ok", [arrays]) or ("raised", type name, message) of one run of ``program``."""
    torch.manual_seed(0)
    try:
        if traced:
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)  # the bridge never failed
                with tg.record() as trace:
                    values = program()
            assert trace.metadata.get("engine") == "torch"
        else:
            values = program()
    except Exception as error:  # noqa: BLE001 - the exception is what is compared
        return ("raised", type(error).__name__, str(error))
    return ("ok", [np.asarray(value.detach().numpy() if hasattr(value, "detach") else value)
                   for value in values])


def two_layer_steps():
    module = load_example("two_layer_net", real_torch=True)
    x, y = torch.randn(8, 6), torch.randn(8, 2)
    w1 = torch.randn(6, 4, requires_grad=True)
    w2 = torch.randn(4, 2, requires_grad=True)
    history = module.train(steps=5, data=(x, y, w1, w2))
    return [torch.tensor(history), w1, w2]


def mlp_with_adam():
    model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    points, labels = torch.randn(16, 2), torch.randint(0, 3, (16,))
    losses = []
    for _ in range(4):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(points), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return [*losses, *model.parameters()]


def hooks_and_retained_gradients():
    x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    h = x * 2
    h.retain_grad()
    h.register_hook(lambda grad: grad * 3)
    x.register_hook(lambda grad: grad + 1)
    (h * h).sum().backward()
    return [x.grad, h.grad]


def second_derivative():
    x = torch.tensor([0.5, 2.0], requires_grad=True)
    (first,) = torch.autograd.grad((x ** 3).sin().sum(), x, create_graph=True)
    (second,) = torch.autograd.grad(first.sum(), x)
    return [first, second]


def inplace_through_a_view():
    w = torch.ones(4, requires_grad=True)
    h = w * 2
    h[1:3] = h[1:3] * 5
    h.sum().backward()
    return [h, w.grad]


def custom_function_twice():
    module = load_example("two_layer_net", real_torch=True)
    x = torch.randn(5, requires_grad=True)
    out = module.MyReLU.apply(module.MyReLU.apply(x * 2) - 0.5)
    out.sum().backward()
    return [out, x.grad]


def inplace_bug():
    x = torch.randn(8, 4)
    w1 = torch.randn(4, 16, requires_grad=True)
    h = x.mm(w1).relu()
    loss = h.pow(2).mean()
    h += 0.1
    loss.backward()
    return [loss]


def detached_alias_changed():
    w = torch.ones(3, requires_grad=True)
    y = w.exp()
    y.detach().zero_()  # shares y's version counter
    y.sum().backward()
    return [w.grad]


def leaf_changed_in_place():
    w = torch.randn(3, requires_grad=True)
    w.mul_(2)
    return [w]


def freed_graph():
    w = torch.ones(3, requires_grad=True)
    loss = w.sigmoid().sum()
    loss.backward()
    loss.backward()
    return [w.grad]


def shape_mismatch():
    return [torch.randn(3, 4, requires_grad=True).mm(torch.randn(5, 2))]


def unused_input():
    x, unused = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    return list(torch.autograd.grad((x * 2).sum(), [x, unused]))


def hook_raises():
    def hook(grad):
        raise ValueError("a hook of the program failed")

    w = torch.ones(2, requires_grad=True)
    h = w * 2
    h.register_hook(hook)
    h.sum().backward()
    return [w.grad]


def non_scalar_backward():
    (torch.ones(3, requires_grad=True) * 2).backward()
    return []


PROGRAMS = [two_layer_steps, mlp_with_adam, hooks_and_retained_gradients, second_derivative,
            inplace_through_a_view, custom_function_twice, inplace_bug,
            detached_alias_changed, leaf_changed_in_place, freed_graph, shape_mismatch,
            unused_input, hook_raises, non_scalar_backward]
RAISES = {inplace_bug, detached_alias_changed, leaf_changed_in_place, freed_graph,
          shape_mismatch, unused_input, hook_raises, non_scalar_backward}


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.__name__ for p in PROGRAMS])
def test_same_values_and_exceptions_with_and_without_tracing(program):
    untraced, traced = _outcome(program, traced=False), _outcome(program, traced=True)
    assert untraced[0] == ("raised" if program in RAISES else "ok"), untraced
    if untraced[0] == "raised":
        assert traced == untraced
        return
    assert traced[0] == "ok", traced
    assert len(traced[1]) == len(untraced[1])
    for ours, theirs in zip(traced[1], untraced[1]):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        assert ours.tobytes() == theirs.tobytes()  # bit for bit


def test_pytorchs_version_error_still_fires_when_tracing():
    outcome = _outcome(inplace_bug, traced=True)
    assert outcome[:2] == ("raised", "RuntimeError")
    assert "modified by an inplace operation" in outcome[2]
    assert "is at version 1; expected version 0 instead" in outcome[2]
