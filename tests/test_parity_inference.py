"""Inference tensors meeting autograd, as torch 2.13 does it: a ``.grad`` accumulated inside
``inference_mode()``, and the reflected operators (``2 - c``, ``2 ** c``, ...) of an
inference tensor that requires grad. Each test runs on tracegrad and on torch (``lib``); the
expectations were read from torch (autograd/inference.py explains the rules behind them).
"""

from __future__ import annotations

import re

import pytest
from test_autograd_inference_tensors import INPLACE, SAVE  # torch's words, written once


def out_refused(op_name: str) -> str:
    return (f"{op_name}(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad.")


def raises_exactly(message: str):
    """torch's whole message first (tracegrad may add what it knows after it)."""
    return pytest.raises(RuntimeError, match="^" + re.escape(message))


def values(tensor) -> list:
    return tensor.detach().tolist()


# -- a .grad accumulated inside inference mode ------------------------------------------------
def test_a_grad_made_inside_inference_mode_is_an_inference_tensor(lib):
    w = lib.ones(2, requires_grad=True)
    loss = (w * 3).sum()
    with lib.inference_mode():
        loss.backward()
    assert w.grad.is_inference() and values(w.grad) == [3.0, 3.0]
    with raises_exactly("Inference tensors do not track version counter."):
        _ = w.grad._version


def test_a_backward_outside_adds_into_an_inference_grad_then_refuses(lib):
    w = lib.ones(2, requires_grad=True)
    loss = (w * 3).sum()
    with lib.inference_mode():
        loss.backward()
    with raises_exactly(INPLACE):
        (w * 3).sum().backward()
    # torch's in-place add ran before its version bump refused: the sum is written
    assert values(w.grad) == [6.0, 6.0] and w.grad.is_inference()
    loss = (w * 1).sum()
    with lib.no_grad(), raises_exactly(INPLACE):  # the same under no_grad and with inputs=
        loss.backward()
    with raises_exactly(INPLACE):
        lib.autograd.backward((w * 1).sum(), inputs=[w])
    assert values(w.grad) == [8.0, 8.0]


def test_the_refusal_comes_before_post_accumulate_hooks(lib):
    w = lib.ones(2, requires_grad=True)
    seen = []
    w.register_post_accumulate_grad_hook(lambda tensor: seen.append(values(tensor.grad)))
    loss = (w * w).sum()
    with lib.inference_mode():
        loss.backward(retain_graph=True)
    assert seen == [[2.0, 2.0]]
    with raises_exactly(INPLACE):
        loss.backward(retain_graph=True)
    assert seen == [[2.0, 2.0]] and values(w.grad) == [4.0, 4.0]


def test_create_graph_outside_adds_out_of_place_into_a_normal_grad(lib):
    w = lib.ones(2, requires_grad=True)
    loss = (w * w).sum()
    with lib.inference_mode():
        loss.backward(retain_graph=True)
    first = w.grad
    with pytest.warns(UserWarning, match="create_graph=True will create a reference cycle"):
        loss.backward(create_graph=True)
    assert w.grad is not first and not w.grad.is_inference()
    assert w.grad.grad_fn.name() == "AddBackward0" and values(w.grad) == [4.0, 4.0]
    assert values(first) == [2.0, 2.0]


def test_a_normal_grad_accumulated_inside_inference_mode_stays_normal(lib):
    w = lib.ones(2, requires_grad=True)
    loss = (w * 2).sum()
    loss.backward(retain_graph=True)
    grad = w.grad
    assert grad._version == 0
    loss.backward(retain_graph=True)  # grad += new: an in-place add bumps the version
    assert grad._version == 1
    with lib.inference_mode():
        loss.backward(retain_graph=True)
        assert grad._version == 2
        with lib.inference_mode():  # an inference .grad is changed freely inside
            v = lib.ones(2, requires_grad=True)
    assert w.grad is grad and not grad.is_inference() and values(grad) == [6.0, 6.0]
    del v


def test_an_inference_grad_accumulates_inside_inference_mode(lib):
    w = lib.ones(2, requires_grad=True)
    loss = (w * w).sum()
    with lib.inference_mode():
        loss.backward(retain_graph=True)
        grad = w.grad
        loss.backward(retain_graph=True)
    assert w.grad is grad and values(grad) == [4.0, 4.0] and grad.is_inference()


def test_optimizers_with_an_inference_grad(lib):
    w = lib.ones(2, requires_grad=True)
    loss = (w * w).sum()
    with lib.inference_mode():
        loss.backward(retain_graph=True)
    optimizer = lib.optim.SGD([w], lr=0.1, momentum=0.9)
    optimizer.step()  # reads the grad only
    optimizer.step()
    with raises_exactly(INPLACE):  # grad.zero_() outside inference mode
        optimizer.zero_grad(set_to_none=False)
    with raises_exactly(INPLACE):
        lib.nn.utils.clip_grad_norm_([w], 0.1)
    optimizer.zero_grad()  # set to None: allowed
    assert w.grad is None


# -- reflected operators and their function forms -------------------------------------------
def describe(lib, make):
    """The node ``make()`` records: its name, which edges lead somewhere, its _saved_alpha;
    or the error it raises."""
    try:
        out = make()
    except RuntimeError as error:
        return ("raises", str(error).split(" (")[0] if str(error).startswith("Inference")
                else str(error))
    node = out.grad_fn
    if node is None:
        return None
    edges = tuple(next_node is not None for next_node, _ in node.next_functions)
    return node.name(), edges, getattr(node, "_saved_alpha", None)


# what torch 2.13 records, first for a normal leaf, then for an inference tensor that requires
# grad used outside inference mode
REFLECTED = {
    "2 - c": (lambda L, c: 2 - c, ("RsubBackward1", (True,), 1),
              ("SubBackward0", (False, True), 1)),
    "2.5 - c": (lambda L, c: 2.5 - c, ("RsubBackward1", (True,), 1),
                ("SubBackward0", (False, True), 1)),
    "rsub(c, 2, alpha=3)": (lambda L, c: L.rsub(c, 2, alpha=3), ("RsubBackward1", (True,), 3),
                            ("SubBackward0", (False, True), 3)),
    "rsub(c, t, alpha=2)": (lambda L, c: L.rsub(c, L.ones(2), alpha=2),
                            ("RsubBackward0", (True, False), 2),
                            ("RsubBackward0", (True, False), 2)),
    "c.__rsub__(t)": (lambda L, c: c.__rsub__(L.ones(2)), ("RsubBackward0", (True, False), 1),
                      ("RsubBackward0", (True, False), 1)),
    "t - c": (lambda L, c: L.ones(2) - c, ("SubBackward0", (False, True), 1),
              ("SubBackward0", (False, True), 1)),
    "c - 2": (lambda L, c: c - 2, ("SubBackward0", (True, False), 1),
              ("SubBackward0", (True, False), 1)),
    "2 + c": (lambda L, c: 2 + c, ("AddBackward0", (True, False), 1),
              ("AddBackward0", (True, False), 1)),
    "2 * c": (lambda L, c: 2 * c, ("MulBackward0", (True, False), None),
              ("MulBackward0", (True, False), None)),
    "2 / c": (lambda L, c: 2 / c, ("MulBackward0", (True, False), None), None),
    "c / 2": (lambda L, c: c / 2, ("DivBackward0", (True, False), None),
              ("DivBackward0", (True, False), None)),
    "div(2, c)": (lambda L, c: L.div(2, c), ("DivBackward0", (False, True), None),
                  ("raises", SAVE)),
    "true_divide(2, c)": (lambda L, c: L.true_divide(2, c), ("DivBackward0", (False, True), None),
                          ("raises", SAVE)),
    "c.div(2, floor)": (lambda L, c: c.div(2, rounding_mode="floor"),
                        ("DivBackward2", (True, False), None),
                        ("DivBackward2", (True, False), None)),
    "2 ** c": (lambda L, c: 2 ** c, ("PowBackward2", (True,), None), ("raises", out_refused("pow"))),
    "pow(2.0, c)": (lambda L, c: L.pow(2.0, c), ("PowBackward2", (True,), None),
                    ("raises", out_refused("pow"))),
    "c ** 2": (lambda L, c: c ** 2, ("PowBackward0", (True,), None), None),
    "2 // c": (lambda L, c: 2 // c, ("torch::autograd::NotImplemented", (True,), None),
               ("torch::autograd::NotImplemented", (True,), None)),
    "c // 2": (lambda L, c: c // 2, ("torch::autograd::NotImplemented", (True,), None),
               ("torch::autograd::NotImplemented", (True,), None)),
    "2 % c": (lambda L, c: 2 % c, ("torch::autograd::NotImplemented", (True,), None),
              ("raises", SAVE)),
    "c % 2": (lambda L, c: c % 2, ("RemainderBackward0", (True,), None),
              ("RemainderBackward1", (True, False), None)),
    "fmod(c, 2)": (lambda L, c: L.fmod(c, 2), ("FmodBackward0", (True,), None),
                   ("FmodBackward1", (True, False), None)),
    "xlogy(2, c)": (lambda L, c: L.xlogy(2, c), ("XlogyBackward1", (True,), None),
                    ("raises", SAVE)),
    "xlogy(c, 2)": (lambda L, c: L.xlogy(c, 2), ("XlogyBackward2", (True,), None),
                    ("raises", SAVE)),
    "-c": (lambda L, c: -c, ("NegBackward0", (True,), None), None),
}


@pytest.mark.parametrize("expression", list(REFLECTED))
def test_reflected_operators_of_a_normal_tensor(lib, expression):
    make, normal, _ = REFLECTED[expression]
    c = lib.ones(2, requires_grad=True)
    assert describe(lib, lambda: make(lib, c)) == normal


@pytest.mark.parametrize("expression", list(REFLECTED))
def test_reflected_operators_of_an_inference_tensor_requiring_grad(lib, expression):
    make, _, inference = REFLECTED[expression]
    with lib.inference_mode():
        c = lib.ones(2, requires_grad=True)
    assert describe(lib, lambda: make(lib, c)) == inference


@pytest.mark.parametrize("expression", list(REFLECTED))
def test_reflected_operators_inside_inference_mode_record_nothing(lib, expression):
    make = REFLECTED[expression][0]
    c = lib.ones(2, requires_grad=True)
    with lib.inference_mode():
        out = make(lib, c)
    assert out.grad_fn is None and out.is_inference()


def test_the_recorded_overloads_give_torch_gradients(lib):
    with lib.inference_mode():
        c = lib.tensor([1.5, -2.5], requires_grad=True)
    (2 - c).sum().backward()
    assert values(c.grad) == [-1.0, -1.0]
    c.grad = None
    lib.rsub(c, 2, alpha=3).sum().backward()
    assert values(c.grad) == [-3.0, -3.0]
    c.grad = None
    ((c % 2) + lib.fmod(c, 2)).sum().backward()
    assert values(c.grad) == [2.0, 2.0]


def test_rsub_of_two_tensors_backpropagates_alpha(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([[3.0], [4.0]], requires_grad=True)
    out = lib.rsub(a, b, alpha=2)
    assert values(out) == [[1.0, -1.0], [2.0, 0.0]]
    out.sum().backward()
    assert values(a.grad) == [-4.0, -4.0] and values(b.grad) == [[2.0], [2.0]]


# -- ops torch computes by filling a new normal tensor -----------------------------------------
INTO_NEW = {
    "c.clone()": (lambda L, c: c.clone(), "torch::autograd::CopyBackwards"),
    "c.double()": (lambda L, c: c.double(), "torch::autograd::CopyBackwards"),
    "c.to(float64)": (lambda L, c: c.to(L.float64), "torch::autograd::CopyBackwards"),
    "c.type(float64)": (lambda L, c: c.type(L.float64), "torch::autograd::CopyBackwards"),
    "float_power(c, 2)": (lambda L, c: L.float_power(c, 2), "PowBackward0"),
    "c.abs()": (lambda L, c: c.abs(), ("raises", out_refused("abs"))),
    "c.mean()": (lambda L, c: c.mean(), ("raises", out_refused("sum"))),
    "c.mean(0)": (lambda L, c: c.mean(0), ("raises", out_refused("sum"))),
    "c.logsumexp(0)": (lambda L, c: c.logsumexp(0), ("raises", out_refused("logsumexp"))),
    "c.to(float32)": (lambda L, c: c.to(L.float32), None),  # (the tensor itself)
    "c.var(0)": (lambda L, c: c.var(0), None),
    "c.std(1)": (lambda L, c: c.std(1), None),
    "c.var()": (lambda L, c: c.var(), ("raises", out_refused("sum"))),
    "c.var((0, 1))": (lambda L, c: c.var((0, 1)), ("raises", out_refused("sum"))),
    "c.std()": (lambda L, c: c.std(), ("raises", out_refused("sum"))),
}


def _node_or_error(lib, make):
    with lib.inference_mode():
        c = lib.ones(2, 3, requires_grad=True)
    described = describe(lib, lambda: make(lib, c))
    return described if described is None or described[0] == "raises" else described[0]


@pytest.mark.parametrize("expression", list(INTO_NEW))
def test_ops_torch_computes_into_a_new_normal_tensor(lib, expression):
    make, expected = INTO_NEW[expression]
    assert _node_or_error(lib, make) == expected


def test_the_copy_torch_records_for_an_inference_tensor_gives_its_gradient(lib):
    with lib.inference_mode():
        c = lib.tensor([1.0, 2.0], requires_grad=True)
    out = c.double()
    assert out.dtype == lib.float64 and not out.is_inference()
    assert [node is None for node, _ in out.grad_fn.next_functions] == [True, False]
    (out * out).sum().backward()
    assert c.grad.tolist() == [2.0, 4.0] and c.grad.dtype == lib.float32


ADVANCED_INDEXING = {
    "c[[0]]": (lambda L, c: c[[0]], "IndexBackward0"),
    "c[c > 0]": (lambda L, c: c[c > 0], "IndexBackward0"),
    "c[:, [1]]": (lambda L, c: c[:, [1]], "IndexBackward0"),
}


@pytest.mark.parametrize("expression", list(ADVANCED_INDEXING))
def test_advanced_indexing_of_an_inference_tensor(lib, request, expression):
    make, expected = ADVANCED_INDEXING[expression]
    if lib.__name__ == "tracegrad":
        request.applymarker(pytest.mark.xfail(
            strict=True, reason="not implemented: torch's Python indexing makes the index a "
                                "normal tensor, whose autograd key records the index op "
                                "(autograd/inference.py)"))
    assert _node_or_error(lib, make) == expected


def test_indexing_an_inference_tensor_with_an_int_and_a_list_records_nothing(lib):
    assert _node_or_error(lib, lambda L, c: c[0, [1, 2]]) is None
