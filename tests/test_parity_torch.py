"""Where tracegrad once differed from PyTorch in silence: what a node saves, its edges, its
name, the version-counter message. Each test runs the same program on both engines and
compares what PyTorch shows (issues 10 and 11)."""

from __future__ import annotations

import itertools
import warnings

import pytest

import tracegrad

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")


def _saved(grad_fn, names):
    """``grad_fn._saved_<name>`` for each name: a shape, None, or the plain value."""
    shown = []
    for name in names:
        value = getattr(grad_fn, f"_saved_{name}")
        shown.append(tuple(value.shape) if hasattr(value, "shape") else value)
    return shown


# op -> (call, argument shapes, saved names)
PRODUCTS = {
    "mm": (lambda lib, a, b: a.mm(b), [(2, 3), (3, 4)], ["self", "mat2"]),
    "mv": (lambda lib, a, b: a.mv(b), [(2, 3), (3,)], ["self", "vec"]),
    "dot": (lambda lib, a, b: a.dot(b), [(3,), (3,)], ["self", "tensor"]),
    "bmm": (lambda lib, a, b: a.bmm(b), [(2, 2, 3), (2, 3, 4)], ["self", "mat2"]),
    "mul": (lambda lib, a, b: a * b, [(3,), (3,)], ["self", "other"]),
    "div": (lambda lib, a, b: a / b, [(3,), (3,)], ["self", "other"]),
    "addmm": (lambda lib, a, b, c: lib.addmm(a, b, c), [(4,), (2, 3), (3, 4)],
              ["mat1", "mat2", "alpha", "beta"]),
    "addmv": (lambda lib, a, b, c: lib.addmv(a, b, c), [(2,), (2, 3), (3,)],
              ["mat", "vec", "alpha", "beta"]),
    "baddbmm": (lambda lib, a, b, c: lib.baddbmm(a, b, c), [(4,), (2, 2, 3), (2, 3, 4)],
                ["batch1", "batch2", "alpha", "beta"]),
    "addbmm": (lambda lib, a, b, c: lib.addbmm(a, b, c), [(4,), (2, 2, 3), (2, 3, 4)],
               ["batch1", "batch2", "alpha", "beta"]),
    "linear": (lambda lib, a, b, c: lib.nn.functional.linear(b, c, a), [(4,), (2, 3), (4, 3)],
               ["mat1", "mat2", "alpha", "beta"]),
}
PRODUCT_CASES = [(name, needs) for name, (_, shapes, _) in PRODUCTS.items()
                 for needs in itertools.product((False, True), repeat=len(shapes)) if any(needs)]


@pytest.mark.parametrize(("name", "needs"), PRODUCT_CASES,
                         ids=[f"{n}-{''.join('g' if x else '_' for x in r)}"
                              for n, r in PRODUCT_CASES])
def test_products_save_only_what_a_needed_gradient_uses(name, needs):
    call, shapes, names = PRODUCTS[name]

    def saved(lib):
        args = [lib.ones(*shape, requires_grad=need) for shape, need in zip(shapes, needs)]
        return _saved(call(lib, *args).grad_fn, names)

    assert saved(tracegrad) == saved(torch)


@pytest.mark.parametrize("needs", [(True, False), (False, True), (True, True)])
def test_products_saving_less_still_give_torchs_gradients(needs):
    def grads(lib):
        lib.manual_seed(0)
        a = lib.tensor([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]], requires_grad=needs[0])
        b = lib.tensor([[2.0, 1.0], [-1.0, 0.5], [4.0, -3.0]], requires_grad=needs[1])
        c = lib.tensor([1.5, -0.5, 2.0], requires_grad=needs[1])
        outputs = (a.mm(b).sum() + (a / c).sum() + lib.addmm(lib.zeros(2), a, c.view(3, 1)
                                                                .expand(3, 2)).sum())
        outputs.backward()
        return [value for t in (a, b, c) if t.requires_grad
                for value in t.grad.flatten().tolist()]

    assert grads(tracegrad) == pytest.approx(grads(torch))


def _version_error(lib, program) -> str:
    with pytest.raises(RuntimeError) as info:
        program(lib)
    return str(info.value)


def _saved_output_changed(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp()  # ExpBackward0 saves its output
    y.add_(1)
    y.sum().backward()


def _saved_input_changed(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x.add(1)
    product = h * h  # saves h, then h's grad_fn becomes MulBackward0
    h.mul_(2)
    product.sum().backward()


def _saved_leaf_changed(lib):
    x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64, requires_grad=True)
    y = x.sin()
    with lib.no_grad():
        x.add_(1)
    y.sum().backward()


def _saved_base_changed_through_a_view(lib):
    x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    h = x.clone()
    product = h * h
    h[1:3] = 0.0  # h's grad_fn becomes CopySlices
    product.sum().backward()


def _custom_function_output_changed(lib):
    class Twice(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = Twice.apply(x)
    product = y * y
    y.add_(1)
    product.sum().backward()


@pytest.mark.parametrize("program", [
    _saved_output_changed, _saved_input_changed, _saved_leaf_changed,
    _saved_base_changed_through_a_view, _custom_function_output_changed],
    ids=lambda program: program.__name__.strip("_"))
@pytest.mark.parametrize("anomaly", [False, True], ids=["plain", "anomaly"])
def test_the_version_error_begins_with_torchs_message_word_for_word(program, anomaly):
    def message(lib):
        with lib.autograd.set_detect_anomaly(anomaly), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's anomaly mode warns with the traceback
            return _version_error(lib, program)

    theirs = message(torch)
    ours = message(tracegrad)
    assert ours.startswith(theirs)  # what tracegrad adds comes after


def test_forward_op_name_strips_only_a_numbered_backward_suffix():
    from tracegrad.autograd.node import Node, forward_op_name

    def named(name):
        return type("Named", (Node,), {"_name": name})()

    assert [forward_op_name(named(name)) for name in (
        "AddBackward0", "AddBackward1", "MyFunctionBackward", "CopySlices",
        "torch::autograd::CopySlices", "BackwardHookFunctionBackward", "XBackwardY")] == [
        "Add", "Add1", "MyFunction", "CopySlices", "torch::autograd::CopySlices",
        "BackwardHookFunction", "XBackwardY"]


def _named_nodes(lib):
    x = lib.ones(3, requires_grad=True)
    base = x.clone()
    base[0] = 2.0
    copied = lib.empty(3)
    copied.copy_(x)
    accumulate = (x * 2).grad_fn.next_functions[0][0]
    return [(node.name(), type(node).__name__, repr(node).split(" object")[0])
            for node in (accumulate, base.grad_fn, copied.grad_fn)] + [repr(base), repr(copied)]


def test_node_names_class_names_and_reprs_match_torch():
    assert _named_nodes(tracegrad) == _named_nodes(torch)
