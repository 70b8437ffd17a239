"""The autograd basics a tutorial teaches: requires_grad, grad_fn, backward, hooks, modes."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg


def test_requires_grad_flags_and_leaves():
    x = tg.ones(3)
    assert x.requires_grad is False and x.is_leaf
    assert x.requires_grad_() is x and x.requires_grad
    y = x * 2
    assert y.requires_grad and not y.is_leaf
    assert tg.ones(2, requires_grad=True).is_leaf


def test_grad_fn_names_follow_pytorch():
    x = tg.randn(3, 4, requires_grad=True)
    w = tg.randn(4, 2, requires_grad=True)
    assert x.sum().grad_fn.name() == "SumBackward0"
    assert x.sum(1).grad_fn.name() == "SumBackward1"
    assert x.mm(w).grad_fn.name() == "MmBackward0"
    assert (x * 2).grad_fn.name() == "MulBackward0"
    assert x.relu().grad_fn.name() == "ReluBackward0"
    assert x.t().grad_fn.name() == "TBackward0"
    assert x.mean().grad_fn.name() == "MeanBackward0"
    assert x.view(12).grad_fn.name() == "ViewBackward0"
    assert "grad_fn=<MulBackward0>" in repr(x * 2)
    node = (x * 2).sum().grad_fn
    assert node.next_functions[0][0].name() == "MulBackward0"
    accumulate = node.next_functions[0][0].next_functions[0][0]
    assert accumulate.name() == "torch::autograd::AccumulateGrad"  # PyTorch's name()
    assert type(accumulate).__name__ == "AccumulateGrad"
    assert node.next_functions[0][0].next_functions[0][0].variable is x


def test_backward_of_scalar_fills_leaf_grads():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.data, [2.0, 4.0, 6.0])
    assert x.grad.grad_fn is None and not x.grad.requires_grad


def test_backward_with_gradient_is_a_vector_jacobian_product():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x * 2  # dy/dx = 4x, diagonal
    v = tg.tensor([0.1, 1.0, 0.0001])
    y.backward(gradient=v)
    np.testing.assert_allclose(x.grad.data, [0.4, 8.0, 0.0012], rtol=1e-6)


def test_gradients_accumulate_over_two_backward_calls():
    x = tg.tensor([1.0, -2.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.data, [6.0, 6.0])
    x.grad.zero_()
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.data, [2.0, -4.0])


def test_retain_grad_keeps_an_intermediate_gradient():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.retain_grad()
    assert y.retains_grad
    z = (y * y).sum()
    z.backward()
    np.testing.assert_allclose(y.grad.data, [6.0, 12.0])
    np.testing.assert_allclose(x.grad.data, [18.0, 36.0])
    w = x * 5
    (w * 1).sum().backward()
    assert w.grad is None  # not retained: non-leaf grads are not kept


def test_register_hook_on_leaf_and_non_leaf_and_remove():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    handle = x.register_hook(lambda grad: seen.append(grad.tolist()))
    y = x * 2
    y_handle = y.register_hook(lambda grad: grad * 10)  # replaces y's gradient
    y.sum().backward()
    assert seen == [[20.0, 20.0]]
    np.testing.assert_allclose(x.grad.data, [20.0, 20.0])
    handle.remove()
    y_handle.remove()
    x.grad = None
    (x * 2).sum().backward()
    assert seen == [[20.0, 20.0]]  # the removed hook did not run again
    np.testing.assert_allclose(x.grad.data, [2.0, 2.0])


def test_register_hook_needs_requires_grad():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't "
                                           "require gradient"):
        tg.ones(2).register_hook(lambda grad: grad)


def test_detach_leaves_the_graph_but_shares_storage():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    d.data[0] = 100.0
    assert y.data[0] == 100.0  # same storage, like torch
    z = (y + d).sum()
    z.backward()
    np.testing.assert_allclose(x.grad.data, [2.0, 2.0])  # no gradient through d


def test_no_grad_enable_grad_and_set_grad_enabled():
    x = tg.ones(2, requires_grad=True)
    with tg.no_grad():
        assert not tg.is_grad_enabled()
        y = x * 2
        with tg.enable_grad():
            z = x * 2
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad
    with tg.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert tg.is_grad_enabled()
    tg.set_grad_enabled(False)
    assert not (x * 2).requires_grad
    tg.set_grad_enabled(True)
    assert (x * 2).requires_grad


def test_grad_modes_as_decorators():
    x = tg.ones(2, requires_grad=True)

    @tg.no_grad()
    def without(t):
        return t * 2

    @tg.enable_grad()
    def with_grad(t):
        return t * 2

    @tg.set_grad_enabled(False)
    def off(t):
        return t * 2

    assert tg.is_grad_enabled()  # set_grad_enabled as a decorator does not leak its mode
    assert not without(x).requires_grad
    with tg.no_grad():
        assert with_grad(x).requires_grad
    assert not off(x).requires_grad
    assert tg.is_grad_enabled()


def test_autograd_grad_does_not_touch_dot_grad():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    (g,) = tg.autograd.grad((x * x).sum(), x)
    np.testing.assert_allclose(g.data, [2.0, 4.0])
    assert x.grad is None


def test_hessian_vector_product_with_create_graph():
    x = tg.tensor([1.0, -2.0, 3.0], dtype=tg.float64, requires_grad=True)
    v = tg.tensor([1.0, 0.5, -1.0], dtype=tg.float64)
    (g,) = tg.autograd.grad((x ** 3).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.data, 3 * x.data ** 2)
    assert g.requires_grad
    (hvp,) = tg.autograd.grad((g * v).sum(), x)
    np.testing.assert_allclose(hvp.data, 6 * x.data * v.data)  # H = diag(6x)


def test_autograd_grad_unused_input():
    x = tg.ones(2, requires_grad=True)
    unused = tg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"appears to not have been used in the graph "
                                           r"\(inputs\[1\]"):
        tg.autograd.grad((x * 2).sum(), [x, unused])
    gx, gu = tg.autograd.grad((x * 2).sum(), [x, unused], allow_unused=True)
    assert gu is None
    np.testing.assert_allclose(gx.data, [2.0, 2.0])


def test_deep_chain_runs_without_recursion_error():
    x = tg.ones(4, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.sum().backward()
    np.testing.assert_allclose(x.grad.data, np.ones(4))


def test_saved_tensors_are_freed_after_backward():
    x = tg.ones(3, requires_grad=True)
    y = (x * x).exp()
    node = y.grad_fn
    y.sum().backward()
    assert all(saved._array is None for saved in node._saved)
    z = (x * x).exp()
    kept = z.grad_fn
    z.sum().backward(retain_graph=True)
    assert all(saved._array is not None for saved in kept._saved)
    z.sum().backward()  # the retained graph runs a second time
    np.testing.assert_allclose(x.grad.data, 3 * 2 * np.e * np.ones(3), rtol=1e-5)


def test_backward_of_several_roots_sharing_a_graph():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    z = y * 3  # z's graph contains y's node: y's node must wait for both gradients
    tg.autograd.backward([y, z])
    np.testing.assert_allclose(x.grad.data, 4 * 2 * x.data)


def test_diamond_graph_accumulates_both_paths():
    x = tg.tensor([1.0, -1.0], requires_grad=True)
    h = x.exp()
    out = (h * 2 + h.sin()).sum()
    out.backward()
    np.testing.assert_allclose(x.grad.data, np.exp(x.data) * (2 + np.cos(np.exp(x.data))))
