"""Inference tensors: what ``inference_mode()`` creates, and what it refuses afterwards.

Ported from PyTorch's TestAutogradInferenceMode (test/autograd/test_inference_mode.py) in our
own words, with the cases torch's C++ inference_mode test and the messages add; each runs on
tracegrad and on torch. (``transpose_`` and ``out=`` are not in tracegrad: their cases use
``add_``/``mul_`` only.)
"""

from __future__ import annotations

import threading

import pytest

import tracegrad
from tracegrad.autograd.grad_mode import inference_flags

VERSION = "Inference tensors do not track version counter."
INPLACE = ("Inplace update to inference tensor outside InferenceMode is not allowed.You can "
           "make a clone to get a normal tensor before doing inplace update.See "
           "https://github.com/pytorch/rfcs/pull/17 for more details.")
SAVE = ("Inference tensors cannot be saved for backward. Please do not use Tensors created in "
        "inference mode in computation tracked by autograd. To work around this, you can "
        "make a clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` "
        "instead of `torch.inference_mode()`.")
REQUIRES_GRAD = ("Setting requires_grad=True on inference tensor outside InferenceMode is not "
                 "allowed.")


def has_no_version_counter(tensor) -> bool:
    """torch's own test of an inference tensor: reading ``_version`` raises."""
    try:
        _ = tensor._version
    except RuntimeError as error:
        assert str(error) == VERSION
        return True
    return False


def raises_exactly(message: str):
    """``pytest.raises(RuntimeError)`` whose message starts with torch's whole message
    (tracegrad may add what it knows after it)."""
    return pytest.raises(RuntimeError, match="^" + _escape(message))


def _escape(text: str) -> str:
    import re

    return re.escape(text)


# -- creation -------------------------------------------------------------------------------
def test_tensors_made_in_inference_mode_are_inference_tensors(lib):
    normal = lib.ones(2, 3)
    with lib.inference_mode():
        made = {
            "factory": lib.ones(1, 2, 3),
            "factory requiring grad": lib.ones(1, 2, 3, requires_grad=True),
            "tensor()": lib.tensor([1.0, 2.0]),
            "randn": lib.randn(2),
            "zeros_like": lib.zeros_like(normal),
            "op on a normal tensor": normal * 2,
            "clone of a normal tensor": normal.clone(),
            "reduction": normal.sum(),
            "split of a factory tensor": lib.ones(4).split(2)[1],
        }
        assert made["factory requiring grad"].requires_grad
    for name, tensor in made.items():
        assert tensor.is_inference(), name
        assert lib.is_inference(tensor), name
        assert has_no_version_counter(tensor), name
    assert not normal.is_inference() and not has_no_version_counter(normal)


def test_is_inference_of_a_non_tensor_is_a_type_error(lib):
    with pytest.raises(TypeError, match=r"^is_inference\(\): argument 'input' \(position 1\) "
                                        "must be Tensor, not int"):
        lib.is_inference(1)


def test_decorated_function_returns_inference_tensors(lib):
    @lib.inference_mode()
    def square(x):
        assert lib.is_inference_mode_enabled()
        return x * x

    for requires_grad in (True, False):
        out = square(lib.ones(1, 2, 3, requires_grad=requires_grad))
        assert lib.is_inference(out) and not out.requires_grad


def test_inference_mode_false_inside_makes_normal_tensors(lib):
    with lib.inference_mode():
        inference = lib.ones(2)
        with lib.inference_mode(False):
            assert not lib.ones(2).is_inference()
            assert not (inference * 2).is_inference()  # an op on one: a normal tensor
            assert inference.view(2).is_inference()  # a view of one: an inference tensor
        assert lib.ones(2).is_inference()


def test_enable_grad_inside_inference_mode_reports_on_and_records_nothing(lib):
    w = lib.ones(2, requires_grad=True)
    with lib.inference_mode():
        with lib.enable_grad():
            y = w * 2
            assert lib.is_grad_enabled() and lib.is_inference_mode_enabled()
            assert not y.requires_grad and y.grad_fn is None and y.is_inference()
            with lib.no_grad():
                assert not lib.is_grad_enabled()
            assert lib.is_grad_enabled()
            with lib.inference_mode(False):
                z = w * 2
                assert z.requires_grad and not z.is_inference()
            assert lib.is_grad_enabled()
        assert not lib.is_grad_enabled()
        with lib.set_grad_enabled(True):
            assert lib.is_grad_enabled() and not (w * 2).requires_grad
        assert not lib.is_grad_enabled()
        lib.set_grad_enabled(True)  # called, not entered: until inference mode ends
        assert lib.is_grad_enabled() and not (w * 2).requires_grad
        assert lib.enable_grad()(lambda: (w * 2).requires_grad)() is False
    assert lib.is_grad_enabled() and (w * 2).requires_grad
    with lib.no_grad():
        with lib.inference_mode(), lib.enable_grad():
            assert lib.is_grad_enabled()
        assert not lib.is_grad_enabled()


def test_views_of_inference_tensors_are_inference_tensors_not_views(lib):
    for requires_grad in (True, False):
        with lib.inference_mode():
            c = lib.ones(1, 2, 3, requires_grad=requires_grad)
            inside = c.view(-1)
            assert inside.is_inference() and not inside.requires_grad
        for out in (c.view(-1), c[0], c.view_as(c), c.detach(), c.data, inside.view(6)):
            assert out.is_inference()
            assert not out.requires_grad and not out._is_view() and out.is_leaf
            assert out._base is None
        assert has_no_version_counter(c.view(-1))


def test_aliases_of_a_normal_tensor_made_in_inference_mode_stay_normal(lib):
    for requires_grad in (True, False):
        a = lib.ones(1, 2, 3, requires_grad=requires_grad).clone()
        with lib.inference_mode():
            view = a.view(-1)
            view_of_view = view.view(-1)
            detached, data = a.detach(), a.data
        for out in (view, view_of_view):
            assert not out.is_inference() and out._is_view() and out._base is a
            assert out.requires_grad == requires_grad
        assert not detached.is_inference() and not data.is_inference()
        with lib.inference_mode():
            detached.add_(1)  # shares a's counter
            data.add_(1)  # a counter of its own
        assert a._version == 1 and data._version == 1


def test_ops_on_inference_tensors_outside_give_normal_tensors(lib):
    for requires_grad in (True, False):
        with lib.inference_mode():
            c = lib.ones(1, 2, 3, requires_grad=requires_grad)
            d = lib.ones(1, 2, 3)
        # Only inference tensors in: no graph, even from one that requires grad (torch has
        # no autograd kernel for them), so nothing is saved either.
        for out in (c.exp(), c * c, c.pow(2), c ** 2, c + d, c.sum(dim=1), lib.cat([c, d]),
                    c.clamp(0, 1), c.relu(), 2 / c):
            assert not out.is_inference() and not out.requires_grad and out.is_leaf
            assert out.grad_fn is None
        # A Python number given to add/sub/mul/div is a (normal) tensor to torch: recorded.
        # (torch names 2 - c's node SubBackward0 here, RsubBackward1 for a normal c)
        for out in (c * 2, 2 * c, c + 2, c - 2, 2 - c, c / 2, c.add(2), c.mul(2), c.sub(1),
                    c.div(2), lib.mul(c, 2)):
            assert not out.is_inference() and out.requires_grad == requires_grad
            assert (out.grad_fn is not None) == requires_grad
        assert not c.clone().is_inference()


# -- in place -------------------------------------------------------------------------------
def test_inplace_on_inference_tensor_inside_inference_mode(lib):
    @lib.inference_mode()
    def run(requires_grad):
        c = lib.ones(1, 2, 3, requires_grad=requires_grad)
        c.add_(2)
        c[0, 0, 0] = 5.0
        assert c.is_inference() and c.requires_grad == requires_grad
        return c

    assert run(False).tolist() == [[[5.0, 3.0, 3.0], [3.0, 3.0, 3.0]]]
    assert run(True).requires_grad


@pytest.mark.parametrize("change", ["add_", "mul_", "zero_", "fill_", "copy_", "setitem",
                                    "view add_", "clamp_", "uniform_"])
def test_inplace_on_inference_tensor_outside_is_refused_after_the_write(lib, change):
    with lib.inference_mode():
        c = lib.ones(3)
    do = {"add_": lambda: c.add_(1), "mul_": lambda: c.mul_(2), "zero_": lambda: c.zero_(),
          "fill_": lambda: c.fill_(7.0), "copy_": lambda: c.copy_(lib.full((3,), 5.0)),
          "setitem": lambda: c.__setitem__(0, 9.0), "view add_": lambda: c[1:].add_(1),
          "clamp_": lambda: c.clamp_(0, 0.5), "uniform_": lambda: c.uniform_(2, 3)}[change]
    for context in (lambda: lib.inference_mode(False), lib.no_grad, lib.enable_grad):
        with context(), raises_exactly(INPLACE):
            do()
    # As in torch, the kernel ran before the version bump that refuses it: data changed.
    expected = {"add_": [4.0] * 3, "mul_": [8.0] * 3, "zero_": [0.0] * 3,
                "fill_": [7.0] * 3, "copy_": [5.0] * 3, "setitem": [9.0, 1.0, 1.0],
                "view add_": [1.0, 4.0, 4.0], "clamp_": [0.5] * 3}
    if change in expected:
        assert c.tolist() == expected[change]
    assert c.is_inference() and c.grad_fn is None


def test_recorded_inplace_on_inference_tensor_leaves_its_history_alone(lib):
    w = lib.ones(3, requires_grad=True)
    with lib.inference_mode():
        c = lib.ones(3)
    with raises_exactly(INPLACE):
        c.add_(w)
    assert c.tolist() == [2.0, 2.0, 2.0]
    assert c.grad_fn is None and not c.requires_grad and c.is_inference()


def test_normal_tensor_changed_in_place_in_inference_mode_keeps_its_counter(lib):
    for requires_grad in (True, False):
        a = lib.ones(1, 2, 3, requires_grad=requires_grad).clone()
        with lib.inference_mode():
            a.add_(2)
            a.add_(2)
            assert not a.is_inference() and a.requires_grad == requires_grad
            view = a.view(-1)
            assert not view.is_inference() and view.requires_grad == requires_grad
            view.add_(1)
            assert a._version == view._version == 3
        a.add_(1)
        assert not a.is_inference() and a._version == 4


def test_saved_tensor_changed_in_inference_mode_fails_backward(lib):
    a = lib.ones(1, 2, 3, requires_grad=True).clone()
    out = a * a
    with lib.inference_mode():
        a.add_(2)
    assert not a.is_inference()
    with pytest.raises(RuntimeError, match="one of the variables needed for gradient "
                                           "computation has been modified by an inplace "
                                           "operation"):
        out.backward(lib.ones_like(out))


@pytest.mark.parametrize("indirect", [False, True])
def test_view_made_in_inference_mode_changed_in_place_outside(lib, indirect):
    for requires_grad in (True, False):
        a = lib.ones(1, 2, 3, requires_grad=requires_grad).clone()
        with lib.inference_mode():
            view = a.view(-1)
        if not requires_grad:
            (a if indirect else view).add_(2)
            assert view.grad_fn is None
            continue
        if indirect:
            a.add_(2)
            message = ("A view was created in inference mode and its base or another view of "
                       "its base has been modified inplace in normal mode. Given that this use "
                       "case is ambiguous and error-prone, it is forbidden. You can clarify "
                       "your code by moving both the view and the inplace either both inside "
                       "the inference_mode block (if you don't want the inplace to be "
                       "tracked) or both outside (if you want the inplace to be tracked).")
            with raises_exactly(message):
                _ = view.grad_fn
        else:
            message = ("A view was created in inference mode and is being modified inplace in "
                       "normal mode.")
            with raises_exactly(message):
                view.add_(2)


def test_view_of_view_made_in_inference_mode_says_so(lib):
    a = lib.ones(1, 2, 3, requires_grad=True).clone()
    with lib.inference_mode():
        view = a.view(-1)
    again = view.view(2, 3)
    assert again.requires_grad and again.grad_fn is not None
    with raises_exactly("Output 0 of View is a view of a view which was created in inference "
                        "mode and is being modified inplace in normal mode."):
        again.add_(1)


# -- requires_grad and saving -----------------------------------------------------------------
def test_requires_grad_on_inference_tensor(lib):
    with lib.inference_mode():
        c = lib.ones(2)
        assert c.requires_grad_().requires_grad  # inside: allowed
        d = lib.ones(2)
    for set_it in (lambda: d.requires_grad_(), lambda: setattr(d, "requires_grad", True),
                   lambda: c.requires_grad_()):
        with raises_exactly(REQUIRES_GRAD):
            set_it()
    assert not d.requires_grad
    assert not c.requires_grad_(False).requires_grad  # turning it off is allowed
    assert not c.clone().requires_grad_().is_inference()  # the way out: a clone
    with lib.inference_mode():
        integers = lib.ones(2, dtype=lib.int64)
    with pytest.raises(RuntimeError, match="^only Tensors of floating point dtype can require "
                                           "gradients"):
        integers.requires_grad_()  # the dtype is checked first


def test_inference_tensor_cannot_be_saved_for_backward(lib):
    for requires_grad in (True, False):
        s = lib.ones(1, 2, 3, requires_grad=requires_grad)
        with lib.inference_mode():
            c = lib.ones(1, 2, 3, requires_grad=requires_grad)
        out = c.add(s)  # add saves nothing
        assert not out.is_inference() and out.requires_grad == requires_grad
        if not requires_grad:
            assert (c * s).grad_fn is None  # nothing recorded, nothing saved
            continue
        out.backward(lib.ones_like(out))  # a leaf inference tensor still gets its gradient
        assert c.grad.tolist() == [[[1.0] * 3] * 2]
        for saving in (lambda c, s: c * s, lambda c, s: s * c,
                       lambda c, s: s[0].mm(c[0].t()), lambda c, s: c.mul(s[0, 0])):
            with raises_exactly(SAVE):
                saving(c, s)


def test_normal_tensor_saved_with_inference_tensor_operand(lib):
    s = lib.ones(1, 2, 3, requires_grad=True)
    with lib.inference_mode():
        c = lib.full((1, 2, 3), 2.0)
    for saving in (lambda: s * c, lambda: c * s, lambda: s.clone().mul_(c),
                   lambda: lib.nn.functional.linear(c[0], s[0])):
        with raises_exactly(SAVE):
            saving()
    out = (s + c).sum()  # saves nothing: fine
    out.backward()
    assert s.grad.tolist() == [[[1.0] * 3] * 2]
    (s * c.clone()).sum().backward()  # the workaround torch's message names
    assert s.grad.tolist() == [[[3.0] * 3] * 2]


def test_custom_function_cannot_save_inference_tensor(lib):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, factor):
            ctx.save_for_backward(factor)
            return x * factor

        @staticmethod
        def backward(ctx, grad):
            (factor,) = ctx.saved_tensors
            return grad * factor, None

    w = lib.ones(3, requires_grad=True)
    with lib.inference_mode():
        factor = lib.full((3,), 2.0)
    with raises_exactly(SAVE):
        Scale.apply(w, factor)
    Scale.apply(w, factor.clone()).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0, 2.0]


def test_module_output_in_inference_mode(lib):
    lib.manual_seed(0)
    layer = lib.nn.Linear(3, 2)
    with lib.inference_mode():
        x = lib.ones(1, 3)
        out = layer(x)
    assert out.is_inference() and not out.requires_grad
    assert not layer.weight.is_inference()
    with raises_exactly(SAVE):
        layer(x)  # the inference input is saved for the weight's gradient
    layer(x.clone()).sum().backward()
    assert layer.weight.grad.tolist() == [[1.0] * 3] * 2


def test_parameter_of_an_inference_tensor(lib):
    with lib.inference_mode():
        c = lib.ones(3)
        inside = lib.nn.Parameter(lib.ones(2))
    assert inside.is_inference() and inside.requires_grad
    with raises_exactly(REQUIRES_GRAD):
        lib.nn.Parameter(c)
    frozen = lib.nn.Parameter(c, requires_grad=False)
    assert frozen.is_inference() and not frozen.requires_grad
    assert not lib.nn.Parameter(c.clone()).is_inference()


def test_increment_version_skips_inference_tensors(lib):
    with lib.inference_mode():
        c = lib.ones(3)
        lib.autograd.graph.increment_version(c)
    lib.autograd.graph.increment_version(c)
    normal = lib.ones(3)
    lib.autograd.graph.increment_version(normal)
    assert normal._version == 1 and has_no_version_counter(c)


def test_training_state_touched_in_inference_mode_stays_normal(lib):
    lib.manual_seed(0)
    layer = lib.nn.Linear(2, 2)
    with lib.inference_mode():
        state = {name: value * 1 for name, value in layer.state_dict().items()}
    assert all(value.is_inference() for value in state.values())
    layer.load_state_dict(state)  # copies into the parameters: fine
    optimizer = lib.optim.SGD(layer.parameters(), lr=0.1)
    layer(lib.ones(1, 2)).sum().backward()
    with lib.inference_mode():
        optimizer.step()  # in place on normal tensors: allowed, and counted
    assert not layer.weight.is_inference() and layer.weight._version > 0
    assert layer.weight.requires_grad


def test_backward_inside_inference_mode(lib):
    w = lib.ones(2, requires_grad=True)
    y = (w * w).sum()
    with lib.inference_mode():
        y.backward()
    assert w.grad.tolist() == [2.0, 2.0] and w.grad.is_inference()
    y = (w * w).sum()
    with lib.inference_mode():
        (grad,) = lib.autograd.grad(y, w, create_graph=True)  # no graph made of it
    assert grad.is_inference() and not grad.requires_grad and grad.grad_fn is None


# -- tracegrad only -------------------------------------------------------------------------
def test_inference_flags_count_open_blocks_in_every_thread():
    assert inference_flags.entered == 0
    seen = []

    def inner():
        with tracegrad.inference_mode():
            seen.append((inference_flags.entered, tracegrad.ones(1).is_inference()))

    with tracegrad.inference_mode():
        with tracegrad.inference_mode(False):
            assert inference_flags.entered == 1
            assert not tracegrad.ones(1).is_inference()
        thread = threading.Thread(target=inner)
        thread.start()
        thread.join()
    assert seen == [(2, True)]
    assert inference_flags.entered == 0

    def other_thread():
        # Another thread's inference mode: this thread's tensors stay normal.
        seen.append(tracegrad.ones(1).is_inference())

    with tracegrad.inference_mode():
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
    assert seen[-1] is False
    assert inference_flags.entered == 0


def test_inference_flags_restored_when_the_block_raises():
    with pytest.raises(ValueError), tracegrad.inference_mode():
        raise ValueError
    assert inference_flags.entered == 0 and not tracegrad.ones(1).is_inference()
