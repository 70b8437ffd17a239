"""Hooks as PyTorch runs them: tensor hooks, node pre/post hooks, retain_grad,
post-accumulate-grad hooks, their order, what they may return, and `.grad` itself.

Ported from PyTorch's test/test_autograd.py (test_hooks*, test_hook_*, test_tensor_hooks*,
test_post_accumulate_grad_hook*, test_retain_grad*, test_prehook_ordering, ...) in our own
words. Every test runs on tracegrad and, where it is installed, on torch, so each
expectation is proven on the real thing.
"""

from __future__ import annotations

import copy
import gc
import warnings
import weakref

import pytest
from tutorial_programs import double_mul_function, mul2_function

import tracegrad


def close(a, b) -> bool:
    """Equal up to float32 rounding (relative to the size of the values)."""
    return bool((a - b).abs().max() <= 1e-5 * (1 + b.abs().max()))


# -- tensor hooks ------------------------------------------------------------------------
def test_tensor_hooks_fire_once_per_backward_and_can_be_removed(lib):
    x = lib.ones(5, 5, requires_grad=True)
    y = (lib.ones(5, 5) * 4).requires_grad_(True)
    counter = [0]

    def count(increment):
        def hook(grad):
            assert isinstance(grad, lib.Tensor)
            counter[0] += increment

        return hook

    z = x ** 2 + x * 2 + x * y + y
    x.register_hook(count(0))
    first = z.register_hook(count(1))
    z.backward(lib.ones(5, 5), retain_graph=True)
    assert counter[0] == 1
    second = z.register_hook(count(2))
    z.backward(lib.ones(5, 5), retain_graph=True)
    assert counter[0] == 4
    second.remove()
    z.backward(lib.ones(5, 5), retain_graph=True)
    assert counter[0] == 5

    # A hook that returns a tensor replaces the gradient flowing on.
    first.remove()
    z.register_hook(lambda grad: grad.mul(2))
    with lib.no_grad():
        y.grad.zero_()
    z.backward(lib.ones(5, 5), retain_graph=True)
    assert close(y.grad, (x + 1) * 2)
    y.register_hook(lambda grad: grad.mul(2))
    with lib.no_grad():
        y.grad.zero_()
    z.backward(lib.ones(5, 5))
    assert close(y.grad, (x + 1) * 4)


def test_hook_without_a_name_runs(lib):
    class CloneGrad:
        def __call__(self, grad):
            return grad.clone()

    x = lib.randn(5, requires_grad=True).clone()
    x.register_hook(CloneGrad())
    x.sum().backward()


def test_hooks_on_each_output_of_a_function_get_their_own_gradient(lib):
    class TwoOutputs(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            assert ctx.needs_input_grad[0] and not ctx.needs_input_grad[1]
            return x, y

        @staticmethod
        def backward(ctx, grad_x, grad_y):
            return grad_x, None

    called = []

    def hook(grad):
        assert grad is not None
        called.append(True)

    x, y = lib.randn(5, 5, requires_grad=True), lib.randn(5, 5)
    rx, ry = TwoOutputs.apply(x, y)
    rx.register_hook(hook)
    ry.register_hook(hook)
    (rx + ry).sum().backward()
    assert called


def test_a_hook_on_a_returned_input_sees_only_its_own_use(lib):
    class Identity(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a, a + b

        @staticmethod
        def backward(ctx, grad_a, grad_b):
            return grad_a + grad_b, grad_b

    x, y = lib.randn(5, 5, requires_grad=True), lib.randn(5, 5, requires_grad=True)
    q, p = Identity.apply(x, y)
    seen = []
    q.register_hook(lambda grad: seen.append(grad.clone()))
    (q + p + x).sum().backward()
    assert close(seen[0], lib.ones(5, 5))
    assert close(x.grad, lib.ones(5, 5) * 3)
    assert close(y.grad, lib.ones(5, 5))


def test_hook_gets_none_for_an_output_that_got_no_gradient(lib):
    # Backward through one output of a two-output node: the other output's hooks are
    # called with None (PyTorch's test_grad_nonleaf_register_hook, on a Function: in
    # tracegrad unbind makes one node per slice, so it has no such output).
    fn = double_mul_function(lib)
    x = lib.randn(5, requires_grad=True)
    first, second = fn(x)
    seen = ["not called"]

    def hook(grad):
        seen[0] = grad

    first.register_hook(hook)
    first.sum().backward(retain_graph=True)
    assert close(seen[0], lib.ones(5))
    assert close(x.grad, lib.full((5,), 2.0))
    second.sum().backward()
    assert seen[0] is None
    assert close(x.grad, lib.full((5,), 5.0))


def test_grad_of_several_non_leaves_does_not_run_their_base_hooks(lib):
    x = lib.randn(4, 2, requires_grad=True)
    a, b = x.chunk(2)
    called = []
    x.register_hook(lambda *grads: called.append(True))
    go = lib.randn(2, 2)
    grad_a, grad_b = lib.autograd.grad((a + 2 * b), [a, b], grad_outputs=go,
                                       create_graph=True)
    assert close(grad_a, go) and close(grad_b, go * 2)
    assert not called
    assert x.grad is None


# -- node hooks ----------------------------------------------------------------------------
@pytest.mark.parametrize("custom", [True, False], ids=["function", "builtin"])
def test_node_pre_and_post_hooks(lib, custom):
    mul2 = mul2_function(lib) if custom else (lambda x: x * 2)
    a = lib.tensor([1.0], requires_grad=True)
    b = mul2(a)
    post_calls, pre_calls = [0], [0]

    def posthook(grad_inputs, grad_outputs):
        assert pre_calls[0] == 3
        assert close(grad_outputs[0], lib.ones(1) * 8)
        assert close(grad_inputs[0], lib.ones(1) * 16)
        post_calls[0] += 1
        return grad_inputs

    def prehook(grad_outputs):
        pre_calls[0] += 1
        return (grad_outputs[0] * 2,)

    b.grad_fn.register_hook(posthook)
    b.grad_fn.register_hook(posthook)
    b.grad_fn.register_prehook(prehook)
    b.grad_fn.register_prehook(lambda grads: None)
    b.grad_fn.register_prehook(prehook)
    b.grad_fn.register_prehook(prehook)
    b.grad_fn.register_prehook(lambda grads: grads)
    b.grad_fn.register_prehook(lambda grads: None)
    b.sum().backward()
    assert post_calls[0] == 2 and pre_calls[0] == 3

    a = lib.rand(3, 3, requires_grad=True)
    b = mul2(a)
    b.grad_fn.register_prehook(lambda grads: None)
    b.sum().backward()
    assert close(a.grad, lib.ones(3, 3) * 2)


def test_pre_hook_on_a_multi_output_function(lib):
    class DoubleMul2(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, a, y):
            ctx.a = a
            return a * x * 2, a, a * y * 2

        @staticmethod
        def backward(ctx, g1, _a, g2):
            return ctx.a * g1 * 2, None, ctx.a * g2 * 2

    calls = [0]

    def prehook(grad_outputs):
        g1, ga, g2 = grad_outputs
        assert ga is None
        calls[0] += 1
        return g1 * 2, None, g2 * 2

    a, b = lib.randn(3, 3, requires_grad=True), lib.randn(3, 3, requires_grad=True)
    c, _, d = DoubleMul2.apply(a, 3, b)
    c.grad_fn.register_prehook(prehook)
    (c + d).sum().backward()
    assert calls[0] == 1
    assert close(a.grad, lib.ones(3, 3) * 12) and close(b.grad, lib.ones(3, 3) * 12)


@pytest.mark.parametrize("custom", [True, False], ids=["function", "builtin"])
def test_removing_node_hooks_before_and_during_backward(lib, custom):
    mul2 = mul2_function(lib) if custom else (lambda x: x * 2)
    a = lib.rand(3, 3, requires_grad=True)
    b = mul2(a)
    calls = [0]

    def prehook(grads):
        calls[0] += 1

    handle = b.grad_fn.register_prehook(prehook)
    b.grad_fn.register_prehook(prehook)
    handle.remove()
    b.sum().backward()
    assert calls[0] == 1

    # Removing a hook while the node's hooks run does not stop it this time (the hooks
    # run from a snapshot); removing a removed hook again is harmless.
    a = lib.rand(3, 3, requires_grad=True)
    b = mul2(a)
    calls[0] = 0

    def remover(grads):
        second.remove()
        third.remove()

    b.grad_fn.register_prehook(remover)
    second = b.grad_fn.register_prehook(prehook)
    third = b.grad_fn.register_prehook(prehook)
    third.remove()
    b.sum().backward()
    assert calls[0] == 1
    assert close(a.grad, lib.ones(3, 3) * 2)


@pytest.mark.parametrize("custom", [True, False], ids=["function", "builtin"])
@pytest.mark.parametrize("on_tensor", [True, False], ids=["tensor_hook", "node_hook"])
def test_a_hook_holding_its_node_is_freed_with_the_graph(lib, custom, on_tensor):
    class Identity(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    class Marker:
        pass

    count = [0]

    def scope():
        a = lib.tensor(1.0, requires_grad=True)
        b = Identity.apply(a) if custom else a.clone()
        node = b.grad_fn
        marker = Marker()

        def hook(*args):
            assert node is not None and marker is not None  # a cycle through the hook
            count[0] += 1

        if on_tensor:
            b.register_hook(hook)
        else:
            b.grad_fn.register_hook(hook)
        return b.clone(), weakref.ref(marker)

    enabled = gc.isenabled()
    gc.disable()
    try:
        out, reference = scope()
        out.backward(retain_graph=True)
        gc.collect()
        out.backward(retain_graph=True)  # the collector did not break the live graph
        assert count[0] == 2 and reference() is not None
        del out
        gc.collect()
        assert reference() is None
    finally:
        if enabled:
            gc.enable()


def test_handle_is_a_context_manager(lib):
    x = lib.ones(2, requires_grad=True)
    with x.register_hook(lambda grad: grad * 10):
        (x * 1).sum().backward()
    assert close(x.grad, lib.full((2,), 10.0))
    (x * 1).sum().backward()
    assert close(x.grad, lib.full((2,), 11.0))


# -- hook order ------------------------------------------------------------------------------
def test_tensor_hooks_run_before_node_pre_hooks(lib):
    log = []

    def tensor_hook(grad):
        log.append(1)
        return grad * 3

    def node_prehook(grads):
        log.append(2)
        return tuple(grad * 2 for grad in grads)

    a = lib.tensor(1.0, requires_grad=True)
    b = a.clone()
    b.grad_fn.register_prehook(node_prehook)
    b.register_hook(tensor_hook)
    b.grad_fn.register_prehook(node_prehook)
    accumulate = b.grad_fn.next_functions[0][0]
    a.register_hook(tensor_hook)
    accumulate.register_prehook(node_prehook)
    a.register_hook(tensor_hook)

    b.sum().backward(retain_graph=True)
    assert log == [1, 2, 2, 1, 1, 2]

    # autograd.grad runs an input's tensor hooks, but not its AccumulateGrad's pre-hooks.
    log.clear()
    lib.autograd.grad(b.sum(), inputs=(a,), retain_graph=True)
    assert log == [1, 2, 2, 1, 1]

    # backward(inputs=(b,)) runs b's node; retain_grad sees the tensor hook's result, not
    # what the node pre-hooks do later.
    log.clear()
    b.sum().backward(inputs=(b,))
    assert log == [1, 2, 2]
    assert b.grad.item() == 3


def test_retain_grad_sees_every_tensor_hook(lib):
    def double(grad):
        return grad * 2

    a = lib.tensor(1.0, requires_grad=True)
    b = a.clone()
    b.register_hook(double)
    b.retain_grad()
    b.register_hook(double)
    b.clone().backward()
    assert b.grad.item() == 4

    a = lib.tensor(1.0, requires_grad=True)
    b = a.clone()
    b.retain_grad()
    b.register_hook(double)
    b.clone().backward()
    assert b.grad.item() == 2


def test_accumulate_grad_node_hooks_see_the_leaf_tensor_hooks(lib):
    a = lib.tensor(1.0, requires_grad=True)
    seen = []

    def posthook(grad_inputs, grad_outputs):
        seen.append(("post", len(grad_inputs), grad_outputs[0].item()))

    def prehook(grad_outputs):
        seen.append(("pre", len(grad_outputs), grad_outputs[0].item()))

    b = a.clone()
    accumulate = b.grad_fn.next_functions[0][0]
    accumulate.register_hook(posthook)
    accumulate.register_prehook(prehook)
    a.register_hook(lambda grad: grad * 2)
    b.backward()
    assert seen == [("pre", 1, 2.0), ("post", 0, 2.0)]


def test_hooks_of_nodes_outside_backward_inputs_do_not_run(lib):
    def fail(*args):
        raise RuntimeError("must not run")

    a = lib.tensor(1.0, requires_grad=True)
    a.register_hook(fail)
    b = lib.tensor(1.0, requires_grad=True)
    c = a.clone()
    c.grad_fn.next_functions[0][0].register_hook(fail)
    (a + b + c).sum().backward(inputs=[b])
    assert b.grad.item() == 1


def test_which_hooks_grad_and_backward_run(lib):
    a = lib.tensor(1.0, requires_grad=True)
    b = a * 2
    c = b * 2
    counts = {"tensor": 0, "pre": 0, "post": 0}

    def tensor_hook(grad):
        counts["tensor"] += 1

    def prehook(grads):
        counts["pre"] += 1

    def posthook(grad_inputs, grad_outputs):
        counts["post"] += 1

    a.register_hook(tensor_hook)
    b.register_hook(tensor_hook)
    accumulate = b.grad_fn.next_functions[0][0]
    accumulate.register_hook(posthook)
    accumulate.register_prehook(prehook)
    b.grad_fn.register_hook(posthook)
    b.grad_fn.register_prehook(prehook)

    def run(action):
        counts.update(tensor=0, pre=0, post=0)
        action()
        return counts["tensor"], counts["pre"], counts["post"]

    # grad wrt b: b's tensor hook runs, b's node (and so its node hooks) does not
    assert run(lambda: lib.autograd.grad(c, inputs=(b,), retain_graph=True)) == (1, 0, 0)
    # grad wrt a and b: b's node runs to reach a; AccumulateGrad does not run under grad
    assert run(lambda: lib.autograd.grad(c, inputs=(a, b), retain_graph=True)) == (2, 1, 1)
    assert run(lambda: c.backward(retain_graph=True)) == (2, 2, 2)
    assert run(lambda: c.backward(inputs=(a, b), retain_graph=True)) == (2, 2, 2)


# -- what a hook may return ------------------------------------------------------------------
def test_tensor_hook_returning_a_non_tensor_raises_type_error(lib):
    x = lib.ones(2, requires_grad=True)
    y = x * 2
    y.register_hook(lambda grad: 1)
    with pytest.raises(TypeError, match="expected Variable, but hook returned 'int'"):
        y.sum().backward()


def test_tensor_hook_changing_the_size_raises(lib):
    x = lib.ones(2, requires_grad=True)
    y = x * 2

    def widen(grad):
        return lib.ones(3)

    y.register_hook(widen)
    with pytest.raises(RuntimeError, match="hook 'widen' has changed the size of value"):
        y.sum().backward()


def test_tensor_hook_changing_the_dtype_raises(lib):
    x = lib.ones(2, requires_grad=True)
    y = x * 2

    def to_double(grad):
        return grad.double()

    y.register_hook(to_double)
    with pytest.raises(RuntimeError, match=r"hook 'to_double' has changed the type of value "
                                           r"\(was torch.FloatTensor got torch.DoubleTensor\)"):
        y.sum().backward()


def test_leaf_hook_changing_the_size_raises(lib):
    z = lib.ones(2, requires_grad=True)
    z.register_hook(lambda grad: lib.ones(3))
    with pytest.raises(RuntimeError, match="has changed the size of value"):
        (z * 2).sum().backward()
    assert z.grad is None


def test_hook_errors_name_the_tensor_and_give_a_hint():
    x = tracegrad.ones(2, requires_grad=True)
    y = x * 2

    def widen(grad):
        return tracegrad.ones(3)

    y.register_hook(widen)
    with pytest.raises(tracegrad.AutogradError) as info:
        y.sum().backward()
    message = str(info.value)
    assert "MulBackward0" in message and "float32 [2]" in message and "Hint:" in message


def test_node_prehook_return_values_are_checked(lib):
    x = lib.ones(2, requires_grad=True)
    cases = [
        (lambda grads: 1, TypeError, "expected tuple, but hook returned 'int'"),
        (lambda grads: [grads[0]], TypeError, "expected tuple, but hook returned 'list'"),
        (lambda grads: (grads[0], grads[0]), RuntimeError,
         r"has returned an incorrect number of values \(got 2, but expected 1\)"),
        (lambda grads: (grads[0].double(),), RuntimeError, "has changed the type of value"),
        (lambda grads: (lib.ones(5),), RuntimeError, "has changed the size of value"),
    ]
    for hook, error, pattern in cases:
        y = x * 2
        y.grad_fn.register_prehook(hook)
        with pytest.raises(error, match=pattern):
            y.sum().backward()
    y = x * 2
    y.grad_fn.register_prehook(lambda grads: (None,))  # dropping a gradient is allowed
    y.sum().backward()


def test_node_posthook_return_values_are_checked(lib):
    x = lib.ones(2, requires_grad=True)
    y = x * x
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: 1)
    with pytest.raises(TypeError, match="expected tuple, but hook returned 'int'"):
        y.sum().backward()
    y = x * x
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0],))
    with pytest.raises(RuntimeError, match="has returned an incorrect number of values"):
        y.sum().backward()


def test_a_hook_cannot_turn_a_missing_gradient_into_one(lib):
    first, second = double_mul_function(lib)(lib.randn(3, requires_grad=True))
    second.register_hook(lambda grad: lib.ones(3))
    with pytest.raises(RuntimeError, match="can't replace a None gradient with a non-None"):
        first.sum().backward()


# -- retain_grad -----------------------------------------------------------------------------
def test_retain_grad_accumulates_and_is_a_noop_on_leaves(lib):
    inp = lib.rand(1, 3, requires_grad=True)
    h1 = inp * 3
    out = (h1 * h1).sum()
    h1.retain_grad()
    h1.retain_grad()
    out.backward(retain_graph=True)
    assert close(h1 * 2, h1.grad)
    out.backward(retain_graph=True)
    assert close(h1 * 4, h1.grad)
    with lib.no_grad():
        inp.grad.zero_()
    inp.retain_grad()
    inp.retain_grad()
    out.backward()
    assert close(inp * 18, inp.grad)


def test_retain_grad_follows_the_tensor_through_in_place_ops(lib):
    a = lib.tensor([1.0], requires_grad=True).clone()
    a.retain_grad()
    a.mul_(2)
    a.sum().backward()
    assert close(a.grad, lib.tensor([1.0]))

    a = lib.tensor([1.0], requires_grad=True).clone()
    a.retain_grad()
    a.mul_(2)
    a.mul_(2)
    a.sum().backward()
    assert close(a.grad, lib.tensor([1.0]))


def test_retain_grad_follows_the_base_through_in_place_on_a_view(lib):
    # The gradient is wrt the latest version of x: 1, not 4.
    x = lib.tensor([1.0], requires_grad=True).clone()
    x.retain_grad()
    x_view = x[:]
    x_view *= 2
    x *= 2
    x.sum().backward()
    assert close(x.grad, lib.tensor([1.0]))

    base = lib.tensor([1.0], requires_grad=True).clone()
    view, view2 = base[:], base[:]
    view.retain_grad()
    view2.retain_grad()
    view.mul_(2)
    (view + view2).sum().backward()
    assert close(view.grad, view2.grad) and close(view.grad, lib.tensor([1.0]))

    x = lib.zeros(4)  # a base that did not require grad: nothing to move
    x.view(2, 2).add_(lib.randn(2, 2, requires_grad=True))


def test_retain_grad_on_a_multi_output_function_after_in_place(lib):
    fn = double_mul_function(lib)
    b = lib.rand(3, 3, requires_grad=True)
    first, second = fn(b)
    first.retain_grad()
    second.retain_grad()
    first.mul_(2)
    (first + second).sum().backward()
    got_first, got_second = first.grad, second.grad

    a = b.detach().requires_grad_(True)
    first, second = fn(a)
    first.mul_(2)
    expected = lib.autograd.grad((first + second).sum(), inputs=(first, second))
    assert close(got_first, expected[0]) and close(got_second, expected[1])


def test_retain_grad_does_not_keep_the_tensor_alive(lib):
    x = lib.ones(5, 5, requires_grad=True)

    def scope():
        y = x * 2
        y.retain_grad()
        return y * 0.5, weakref.ref(y)  # (PyTorch's test divides; tracegrad's div saves y)

    z, reference = scope()
    assert reference() is None
    z.sum().backward()


def test_tensor_hooks_stay_with_the_version_they_were_registered_on(lib):
    counts = [0, 0]

    def before(grad):
        counts[0] += 1
        assert close(grad, lib.tensor([4.0]))  # x2 from mul_, x2 from `after`
        return grad * 2

    def after(grad):
        counts[1] += 1
        assert close(grad, lib.tensor([1.0]))
        return grad * 2

    a = lib.tensor([1.0], requires_grad=True)
    b = a.clone()
    b.register_hook(before)
    b.mul_(2)
    b.register_hook(after)
    b.sum().backward()
    assert counts == [1, 1]
    assert close(a.grad, lib.tensor([8.0]))


def test_tensor_hooks_after_in_place_on_a_multi_output_function(lib):
    fn = double_mul_function(lib)
    counts = [0, 0, 0]
    b = lib.rand(3, 3, requires_grad=True)
    out1, out2 = fn(b)

    def hook_for(index, factor):
        def hook(grad):
            counts[index] += 1
            assert close(grad, lib.ones_like(out1) * factor)

        return hook

    handles = [out1.register_hook(hook_for(0, 2)), out2.register_hook(hook_for(1, 3))]
    out1.mul_(2)
    handles.append(out1.register_hook(hook_for(2, 1)))
    (out1 + out2 * 3).sum().backward()
    assert counts == [1, 1, 1]
    for handle in handles:
        handle.remove()


# -- post-accumulate-grad hooks --------------------------------------------------------------
def test_post_accumulate_grad_hook_only_on_leaves(lib):
    leaf = lib.rand(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered "
                                           "on non-leaf tensors"):
        (2.0 * leaf).register_post_accumulate_grad_hook(lambda tensor: None)
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't "
                                           "require gradient"):
        lib.ones(2).register_post_accumulate_grad_hook(lambda tensor: None)


def test_post_accumulate_grad_hooks_run_in_order(lib):
    def subtract_grad(tensor):
        tensor.sub_(tensor.grad)

    def times_four(tensor):
        tensor.mul_(4.0)

    tensor = lib.rand(3, requires_grad=True)
    reference = tensor.detach().clone()
    tensor.register_post_accumulate_grad_hook(subtract_grad)
    tensor.register_post_accumulate_grad_hook(times_four)
    tensor.sum().backward()
    assert close(4.0 * (reference - 1.0), tensor)


def test_post_accumulate_grad_hook_on_several_tensors(lib):
    def subtract_grad(tensor):
        tensor.sub_(tensor.grad)

    first, second = lib.rand(3, requires_grad=True), lib.rand(5, requires_grad=True)
    first_ref, second_ref = first.detach().clone(), second.detach().clone()
    first.register_post_accumulate_grad_hook(subtract_grad)
    second.register_post_accumulate_grad_hook(subtract_grad)
    first.sum().backward()
    second.sum().backward()
    assert close(first_ref - 1.0, first) and close(second_ref - 1.0, second)


def test_post_accumulate_grad_hook_must_return_none(lib):
    tensor = lib.rand(2, 3, requires_grad=True)
    tensor.register_post_accumulate_grad_hook(lambda t: t.grad)
    with pytest.raises(RuntimeError, match="hooks should return None."):
        tensor.sum().backward()


def test_post_accumulate_grad_hook_order_with_node_hooks(lib):
    tensor = lib.rand(3, requires_grad=True)
    accumulate = tensor.view_as(tensor).grad_fn.next_functions[0][0]

    def set_grad(grad_inputs, grad_outputs):
        tensor.grad = grad_outputs[0].mul(10)

    def add_half(t):
        t.grad.add_(0.5)

    tensor.register_hook(lambda grad: grad.sub(2.0))
    accumulate.register_prehook(lambda grads: (grads[0].div(5.0),))
    tensor.register_post_accumulate_grad_hook(add_half)
    accumulate.register_hook(set_grad)
    tensor.sum().backward()
    # tensor hook, node pre-hook, accumulate, post-accumulate hook, node post-hook:
    # ((1 - 2) / 5 + 0.5) * 10 = 3
    assert close(tensor.grad, lib.tensor([3.0, 3.0, 3.0]))


def test_optimizer_step_in_backward_with_post_accumulate_hooks(lib):
    lib.manual_seed(0)
    model = lib.nn.Linear(3, 2)
    inputs = lib.rand(2, 3)
    optimizers = {}

    def step(param):
        optimizers[param].step()
        optimizers[param].zero_grad()

    handles = []
    for param in model.parameters():
        optimizers[param] = lib.optim.SGD([param], lr=0.1)
        handles.append(param.register_post_accumulate_grad_hook(step))
    reference = copy.deepcopy(model)
    reference_optimizer = lib.optim.SGD(reference.parameters(), lr=0.1)
    for _ in range(3):
        model(inputs).sum().backward()
        reference(inputs).sum().backward()
        reference_optimizer.step()
        reference_optimizer.zero_grad()
    for expected, got in zip(reference.parameters(), model.parameters()):
        assert close(expected, got)
    frozen = [param.detach().clone() for param in model.parameters()]
    for handle in handles:
        handle.remove()
    model(inputs).sum().backward()
    for before, param in zip(frozen, model.parameters()):
        assert close(before, param)


def test_post_accumulate_grad_hook_is_released_with_its_tensor(lib):
    def scope():
        captured = lib.rand(3)

        def hook(tensor):
            tensor.sub_(tensor.grad)
            tensor.add_(captured)

        tensor = lib.rand(3, requires_grad=True)
        tensor.register_post_accumulate_grad_hook(hook)
        tensor.sum().backward()
        return tensor, weakref.ref(captured)

    tensor, reference = scope()
    assert reference() is not None
    del tensor
    gc.collect()
    assert reference() is None


# -- backward(inputs=...) --------------------------------------------------------------------
def test_backward_with_inputs_fills_only_those(lib):
    x = lib.randn(2, 2, dtype=lib.float64, requires_grad=True)
    y = lib.randn(2, 2, dtype=lib.float64, requires_grad=True)

    def fn():
        return x ** 2 + y * x + y ** 2

    gradient = lib.ones(2, 2, dtype=lib.float64)
    lib.autograd.backward(fn(), gradient, inputs=[x, y])
    assert close(x.grad, 2 * x + y) and close(y.grad, x + 2 * y)
    with lib.no_grad():
        x.grad.zero_()
        y.grad.zero_()
    lib.autograd.backward(fn(), gradient, inputs=[x])
    assert close(x.grad, 2 * x + y) and close(y.grad, lib.zeros(2, 2, dtype=lib.float64))
    with lib.no_grad():
        x.grad.zero_()
    lib.autograd.backward(fn(), gradient, inputs=y)
    assert close(x.grad, lib.zeros(2, 2, dtype=lib.float64))
    with pytest.raises(RuntimeError, match="cannot be empty"):
        lib.autograd.backward(fn(), gradient, inputs=[])


def test_backward_with_a_scalar_input(lib):
    x = lib.randn([], dtype=lib.float64, requires_grad=True)
    (x ** 2).backward(inputs=x)
    assert close(x.grad, 2 * x)


def test_backward_with_non_leaf_inputs_accumulates_into_their_grad(lib):
    x = lib.randn(2, 2, dtype=lib.float64, requires_grad=True)
    x_nonleaf = x * 1
    y = lib.randn(2, 2, dtype=lib.float64, requires_grad=True)
    z = lib.randn(2, 2, dtype=lib.float64, requires_grad=True)
    out = x_nonleaf ** 2 + y * x_nonleaf + y ** 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the create_graph reference-cycle warning
        out.backward(lib.ones(2, 2, dtype=lib.float64), create_graph=True,
                     inputs=[x, y, x_nonleaf])
        assert close(y.grad, x + 2 * y)
        assert close(x.grad, 2 * x + y)
        assert close(x_nonleaf.grad, 2 * x_nonleaf + y)
        assert x_nonleaf.retains_grad
        # an input the outputs do not depend on just gets no gradient
        out.backward(lib.ones(2, 2, dtype=lib.float64), create_graph=True, inputs=[z])
    assert z.grad is None
    x.grad = y.grad = x_nonleaf.grad = None


def test_backward_inputs_must_require_grad(lib):
    x = lib.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has "
                                           "requires_grad=False"):
        lib.autograd.backward((x * 2).sum(), inputs=[lib.ones(2)])


# -- accumulation into .grad ----------------------------------------------------------------
def test_accumulation_in_place_unless_create_graph(lib):
    def compute(create_graph):
        x = lib.randn(5, 5, requires_grad=True)
        y = x + 2
        y.backward(lib.ones(5, 5), retain_graph=True)
        first, snapshot = x.grad, x.grad.clone()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y.backward(lib.ones(5, 5), create_graph=create_graph)
        return x, first, snapshot

    x, first, snapshot = compute(create_graph=False)
    assert first is x.grad and close(first, snapshot * 2)
    x, first, snapshot = compute(create_graph=True)
    assert first is not x.grad and close(first, snapshot)


def test_leaves_never_share_gradient_memory():
    # Backward hands both leaves views of one array. PyTorch 2.13 keeps both views as the
    # leaves' .grad, so the second accumulation writes through both (it gives 3, not 2);
    # tracegrad copies a gradient that does not own its memory.
    class TwoViews(tracegrad.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, grad):
            flat = grad.reshape(-1) * 1
            return flat.view(2, 2), flat.view(2, 2)

    a = tracegrad.ones(2, 2, requires_grad=True)
    b = tracegrad.ones(2, 2, requires_grad=True)
    for _ in range(2):
        TwoViews.apply(a, b).sum().backward()
    assert close(a.grad, tracegrad.full((2, 2), 2.0))
    assert close(b.grad, tracegrad.full((2, 2), 2.0))


def test_create_graph_makes_grad_a_recorded_copy(lib):
    x = lib.ones(2, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (x * x).sum().backward(create_graph=True)
        assert type(x.grad.grad_fn).__name__ == "CopyBackwards"
        assert x.grad.grad_fn.next_functions[0] == (None, 0)
        (x * x).sum().backward(create_graph=True)
    assert x.grad.grad_fn.name() == "AddBackward0"
    x.grad = None


def test_backward_with_create_graph_warns_once(lib):
    if lib is tracegrad:
        tracegrad.autograd.engine._create_graph_warned = False  # PyTorch: once per process
    else:
        lib.set_warn_always(True)
    try:
        b = lib.randn(3, requires_grad=True, dtype=lib.float64)
        c = b * b
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            c.backward(lib.ones_like(c), create_graph=True)
        b.grad = None
        assert any("Using backward() with create_graph=True" in str(w.message)
                   for w in caught)
        assert all(w.category is UserWarning for w in caught)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.autograd.grad(c, b, lib.ones_like(c), create_graph=True)
        assert not any("Using backward() with create_graph=True" in str(w.message)
                       for w in caught)
    finally:
        if lib is not tracegrad:
            lib.set_warn_always(False)


# -- .grad as an attribute -------------------------------------------------------------------
def test_reading_grad_of_a_non_leaf_warns(lib):
    dummy = lib.empty(1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dummy.requires_grad_()
        assert dummy.grad is None
        assert len(caught) == 0
        dummy = dummy.clone()
        assert dummy.grad is None
        assert len(caught) == 1
        assert caught[0].category is UserWarning
        assert "is not a leaf Tensor is being accessed" in str(caught[0].message)
        dummy.retain_grad()
        assert dummy.grad is None
        assert len(caught) == 1


def test_deleting_grad_sets_it_to_none(lib):
    x = lib.randn(5, 5, requires_grad=True)
    x.grad = lib.ones(5, 5)
    del x.grad
    assert x.grad is None


@pytest.mark.parametrize("bad, error, pattern", [
    ("wrong_size", RuntimeError, (r"attempting to assign a gradient of size '\[3\]' to a "
                                  r"tensor of size '\[2\]'")),
    ("wrong_dtype", RuntimeError, ("attempting to assign a gradient with dtype 'double' to a "
                                   "tensor with grad_dtype 'Float'")),
    ("a_list", TypeError, ("assigned grad expected to be a Tensor or None but got grad of "
                           "type list")),
    ("itself", RuntimeError, "can't assign Variable as its own grad"),
])
def test_assigning_a_wrong_grad_raises(lib, bad, error, pattern):
    x = lib.ones(2, requires_grad=True)
    value = {"wrong_size": lib.ones(3), "wrong_dtype": lib.ones(2, dtype=lib.float64),
             "a_list": [1.0, 2.0], "itself": x}[bad]
    with pytest.raises(error, match=pattern):
        x.grad = value
    assert x.grad is None


def test_a_wrong_grad_never_reaches_the_optimizer():
    # Issue 16: SGD.step used to broadcast a wrong-sized .grad into the weights.
    weight = tracegrad.ones(2, requires_grad=True)
    with pytest.raises(tracegrad.ShapeError) as info:
        weight.grad = tracegrad.ones(3)
    assert "float32 [2]" in str(info.value) and "Hint:" in str(info.value)
