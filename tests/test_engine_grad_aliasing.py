"""A leaf's ``.grad`` never aliases a gradient someone else holds, and is kept in place.

AccumulateGrad may keep (steal) the incoming gradient instead of copying it only when
nothing else references it and it owns its memory; otherwise it copies (first gradient) or
adds in place (later ones), so ``.grad`` keeps its identity across steps. These tests
mutate one gradient and look at the others: a wrong steal shows as a changed value.
Every test runs on tracegrad and, where installed, on torch (the ``lib`` fixture).
"""

from __future__ import annotations

from tutorial_programs import my_relu_on


def _values(tensor) -> list:
    return tensor.detach().reshape(-1).tolist()


def test_two_leaves_given_one_gradient_do_not_share_it(lib):
    # AddBackward0 hands the same gradient to both inputs.
    a = lib.zeros(3, requires_grad=True)
    b = lib.zeros(3, requires_grad=True)
    (a + b).sum().backward()
    with lib.no_grad():
        a.grad.add_(10)
    assert _values(a.grad) == [11.0, 11.0, 11.0]
    assert _values(b.grad) == [1.0, 1.0, 1.0]


def test_a_leaf_used_twice_gets_the_sum_not_an_alias(lib):
    x = lib.ones(2, requires_grad=True)
    y = lib.ones(2, requires_grad=True)
    (x * 2 + x * 3 + y * 4).sum().backward()
    assert _values(x.grad) == [5.0, 5.0]
    with lib.no_grad():
        y.grad.mul_(0)
    assert _values(x.grad) == [5.0, 5.0] and _values(y.grad) == [0.0, 0.0]


def test_a_tensor_hook_that_keeps_the_gradient_does_not_alias_grad(lib):
    x = lib.ones(3, requires_grad=True)
    seen = []
    x.register_hook(seen.append)
    (x * 2).sum().backward()
    with lib.no_grad():
        seen[0].add_(100)  # the hook's tensor, changed after the pass
    assert _values(x.grad) == [2.0, 2.0, 2.0]


def test_a_hook_on_an_intermediate_that_keeps_the_gradient(lib):
    x = lib.ones(2, 2, requires_grad=True)
    seen = []
    h = x.mm(lib.ones(2, 2))
    h.register_hook(seen.append)
    (h * 1).sum().backward()  # (h's gradient then is a tensor of its own, not expanded)
    expected = _values(x.grad)
    with lib.no_grad():
        seen[0].fill_(-7)
    assert _values(x.grad) == expected == [2.0, 2.0, 2.0, 2.0]


def test_a_custom_function_that_returns_and_keeps_its_gradient(lib):
    kept = []

    class Identity(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad_output):
            kept.append(grad_output)
            return grad_output  # the very tensor it was given

    x = lib.zeros(3, requires_grad=True)
    (Identity.apply(x) * 2).sum().backward()
    with lib.no_grad():
        kept[0].add_(5)
    assert _values(x.grad) == [2.0, 2.0, 2.0]


def test_a_custom_function_relu_gradient_is_the_leaf_grad_and_writable(lib):
    MyReLU = my_relu_on(lib)  # the tutorial's: its backward clones and writes into the clone

    x = lib.tensor([-1.0, 2.0, -3.0, 4.0], requires_grad=True)
    upstream = lib.tensor([1.0, 2.0, 3.0, 4.0])
    MyReLU.apply(x).backward(upstream)
    assert _values(x.grad) == [0.0, 2.0, 0.0, 4.0]
    assert _values(upstream) == [1.0, 2.0, 3.0, 4.0]  # the clone, not the given gradient
    with lib.no_grad():
        x.grad.add_(1)  # .grad owns writable memory of its own
    assert _values(x.grad) == [1.0, 3.0, 1.0, 5.0]
    assert _values(upstream) == [1.0, 2.0, 3.0, 4.0]


def test_the_given_root_gradient_is_never_kept_as_grad(lib):
    x = lib.zeros(3, requires_grad=True)
    gradient = lib.ones(3)
    x.backward(gradient)  # the leaf is the root: its gradient is the given one
    with lib.no_grad():
        x.grad.add_(1)
    assert _values(gradient) == [1.0, 1.0, 1.0]
    assert _values(x.grad) == [2.0, 2.0, 2.0]


def test_sum_gradient_is_a_writable_grad_of_its_own(lib):
    # x.sum()'s gradient is one value broadcast to x's shape: .grad must be a real copy.
    x = lib.zeros(2, 3, requires_grad=True)
    x.sum().backward()
    with lib.no_grad():
        x.grad[0, 0] = 5
    assert _values(x.grad) == [5.0, 1.0, 1.0, 1.0, 1.0, 1.0]


def test_grad_keeps_its_identity_when_zeroed_between_steps(lib):
    w = lib.ones(2, 2, requires_grad=True)
    x = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
    x.mm(w).sum().backward()
    grad = w.grad
    first = _values(grad)
    with lib.no_grad():
        w -= 0.1 * w.grad
        w.grad.zero_()
    x.mm(w).sum().backward()
    assert w.grad is grad and _values(grad) == first
    x.mm(w).sum().backward()  # not zeroed: adds in place, same tensor
    assert w.grad is grad and _values(grad) == [2 * value for value in first]


def test_post_accumulate_hook_sees_grad_and_its_change_stays(lib):
    w = lib.ones(3, requires_grad=True)
    seen = []

    def hook(tensor):
        seen.append(tensor.grad)
        tensor.grad.mul_(2)

    w.register_post_accumulate_grad_hook(hook)
    (w * 3).sum().backward()
    assert seen[0] is w.grad and _values(w.grad) == [6.0, 6.0, 6.0]


def test_zero_of_a_large_grad_zeroes_it_in_place(lib):
    # (large enough for tracegrad's memset path: _methods/inplace.py _MEMSET_BYTES)
    w = lib.ones(1000, 100, requires_grad=True)
    (w * 3).sum().backward()
    grad = w.grad
    version = grad._version
    with lib.no_grad():
        w.grad.zero_()
    assert w.grad is grad and grad._version == version + 1
    assert not bool(grad.any())


def test_zero_of_a_large_view_touches_only_the_view(lib):
    base = lib.ones(400, 300, dtype=lib.float64)
    base[:200].zero_()  # contiguous
    base[200:, ::2].zero_()  # strided
    assert not bool(base[:200].any())
    assert not bool(base[200:, ::2].any()) and bool(base[200:, 1::2].all())
