"""Where tracegrad once differed from PyTorch in silence: what a node saves, its edges, its
name, the version-counter message. Each test runs the same program on both engines and
compares what PyTorch shows (issues 10 and 11)."""

from __future__ import annotations

import itertools

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
