"""torch.autograd.functional: vjp, jvp, jacobian, hessian, vhp, hvp.

Ported from PyTorch's test/autograd/test_functional.py (TestAutogradFunctional, the
base-tensor cases; vectorize=True and forward mode are not implemented, see the end),
each run on tracegrad and on torch (``lib``) so the expectation is proven, plus value
comparisons with torch on several functions.
"""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import tracegrad
from tracegrad.autograd import functional as tracegrad_functional


def _same_struct(lib, result, base) -> None:
    """Tensors, or tuples of tensors, of the same sizes."""
    if isinstance(base, tuple):
        assert isinstance(result, tuple) and len(result) == len(base)
        for one, other in zip(result, base):
            assert isinstance(one, lib.Tensor) and one.shape == other.shape
    else:
        assert isinstance(result, lib.Tensor) and result.shape == base.shape


def _interleaved(lib, result, first, second) -> None:
    """A Jacobian-like structure: result[i][j] has shape first[i].shape + second[j].shape."""
    def shape(t):
        return tuple(t.shape)

    if isinstance(first, tuple) and isinstance(second, tuple):
        assert isinstance(result, tuple) and len(result) == len(first)
        for row, one in zip(result, first):
            assert isinstance(row, tuple) and len(row) == len(second)
            for item, two in zip(row, second):
                assert shape(item) == shape(one) + shape(two)
    elif isinstance(first, tuple):
        assert isinstance(result, tuple) and len(result) == len(first)
        for item, one in zip(result, first):
            assert shape(item) == shape(one) + shape(second)
    elif isinstance(second, tuple):
        assert isinstance(result, tuple) and len(result) == len(second)
        for item, two in zip(result, second):
            assert shape(item) == shape(first) + shape(two)
    else:
        assert isinstance(result, lib.Tensor) and shape(result) == shape(first) + shape(second)


def _all_close(one, other) -> bool:
    return np.allclose(np.asarray(one.detach().tolist()), np.asarray(other.detach().tolist()))


def _narrow3(a):
    return 3 * a.narrow(0, 0, 3)


def _narrow3_with_string(a):
    return 3 * a.narrow(0, 0, 3), "bar"


def _detached(a):
    return a.detach()


def _unconnected(a):
    # a non-leaf that requires grad but is not connected to the input
    return a.long().float().requires_grad_().clone()


# -- vjp -----------------------------------------------------------------------------------
def test_vjp_err_check(lib):
    F = lib.autograd.functional
    inp, v = lib.rand(4), lib.ones(3)
    with pytest.raises(TypeError, match="The inputs given to vjp must be either a Tensor"):
        F.vjp(_narrow3, (inp, 2), v)
    with pytest.raises(TypeError, match="The outputs of the user-provided function given to "
                                        "vjp must"):
        F.vjp(_narrow3_with_string, inp, v)
    with pytest.raises(RuntimeError, match="The vector v can only be None if the "
                                           "user-provided function returns"):
        F.vjp(_narrow3, inp)
    with pytest.raises(RuntimeError, match="The given v should contain a single Tensor."):
        F.vjp(_narrow3, inp, (lib.ones_like(inp), lib.ones_like(inp)))
    with pytest.raises(RuntimeError, match="v has invalid size: should be"):
        F.vjp(_narrow3, inp, v[:2])
    _same_struct(lib, F.vjp(_narrow3, inp, v)[1], inp)


@pytest.mark.parametrize("name", ["vjp", "jvp"])
def test_vjp_jvp_err_check_strict(lib, name):
    api = getattr(lib.autograd.functional, name)
    inp, v = lib.rand(4), lib.rand(4)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not "
                                           "require gradients."):
        api(_detached, inp, v, strict=True)
    result = api(_detached, inp, v, strict=False)
    _same_struct(lib, result[1], inp)
    assert result[1].abs().sum().item() == 0.0
    with pytest.raises(RuntimeError, match="The output of the user-provided function is "
                                           "independent of input 0"):
        api(_unconnected, inp, v, strict=True)
    result = api(_unconnected, inp, v, strict=False)
    _same_struct(lib, result[1], inp)
    assert result[1].abs().sum().item() == 0.0
    inp.requires_grad_()  # the Jacobian does not depend on the input
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function is "
                                           "independent of input 0."):
        api(lambda a: a.clone(), inp, v, create_graph=True, strict=True)
    result = api(lambda a: a.clone(), inp, v, create_graph=True, strict=False)
    _same_struct(lib, result[1], inp)
    assert result[1].tolist() == v.tolist()


@pytest.mark.parametrize("name, v_shape", [("vjp", (4,)), ("jvp", (4, 4))])
def test_vjp_jvp_no_grad(lib, name, v_shape):
    api = getattr(lib.autograd.functional, name)
    inputs, v = lib.rand(4, 4), lib.ones(*v_shape)
    with lib.no_grad():
        result = api(lambda x: x.sum(dim=1), inputs, v)
    assert result[0].grad_fn is None and result[1].grad_fn is None
    assert result[1].abs().sum().item() != 0
    inputs.requires_grad_()
    v.requires_grad_()
    with lib.no_grad():
        result = api(lambda x: x.sum(dim=1), inputs, v, create_graph=True)
    assert result[0].grad_fn is not None and result[1].grad_fn is not None
    assert result[1].abs().sum().item() != 0


def test_vjp_output(lib):
    F = lib.autograd.functional
    inputs = lib.rand(4, 4)
    result = F.vjp(lambda x: x.sum(dim=1), inputs, lib.ones(4))
    _same_struct(lib, result[1], inputs)
    assert result[0].grad_fn is None and result[1].grad_fn is None
    inputs = (lib.rand(2), lib.rand(2))
    out, vjp_value = F.vjp(lambda x, y: 2 * x + 3 * y, inputs, lib.ones(2))
    _same_struct(lib, vjp_value, inputs)
    assert out.grad_fn is None and vjp_value[0].grad_fn is None
    assert vjp_value[0].tolist() == [2.0, 2.0] and vjp_value[1].tolist() == [3.0, 3.0]
    v = (lib.tensor([1.0, 0.0]), lib.tensor([1.0, 0.0]))
    out, vjp_value = F.vjp(lambda x, y: (2 * x + 3 * y, x + y), inputs, v)
    _same_struct(lib, vjp_value, inputs)
    assert all(t.grad_fn is None for t in out + vjp_value)
    assert vjp_value[0].tolist() == [3.0, 0.0] and vjp_value[1].tolist() == [4.0, 0.0]


def test_vjp_scalar(lib):
    F = lib.autograd.functional
    inputs, v = lib.rand(4, 4), lib.ones([])
    for result in (F.vjp(lambda x: x.sum(), inputs, v), F.vjp(lambda x: x.sum(), inputs)):
        _same_struct(lib, result[0], v)
        _same_struct(lib, result[1], inputs)
    inputs, v = lib.rand([]), lib.ones(4)
    result = F.vjp(lambda x: x.unsqueeze(0).repeat(4), inputs, v)
    _same_struct(lib, result[0], v)
    _same_struct(lib, result[1], inputs)


def _sum_rows(x):
    return x.sum(dim=1)


def _adder_mul(x, y):
    return 2 * x + 3 * y, x * y


def test_vjp_create_graph(lib):
    F, check, check2 = (lib.autograd.functional, lib.autograd.gradcheck,
                        lib.autograd.gradgradcheck)
    inputs = lib.rand(2, 2, dtype=lib.double).requires_grad_()
    v = lib.ones(2, dtype=lib.double).requires_grad_()
    result = F.vjp(_sum_rows, inputs, v, create_graph=True)
    _same_struct(lib, result[1], inputs)
    assert result[0].grad_fn is not None and result[1].grad_fn is not None
    assert check(lambda inp, v: F.vjp(_sum_rows, inputs, v, create_graph=True), (inputs, v))
    assert check2(lambda inp, v: F.vjp(_sum_rows, inputs, v, create_graph=True), (inputs, v))
    inputs = (lib.rand(2, dtype=lib.double, requires_grad=True),
              lib.rand(2, dtype=lib.double, requires_grad=True))
    v = (lib.tensor([1.0, 0.0], dtype=lib.double, requires_grad=True),
         lib.tensor([1.0, 0.0], dtype=lib.double, requires_grad=True))

    def vjp_of_adder(*args):
        return F.vjp(_adder_mul, args[:2], args[2:], create_graph=True)[1]

    assert check(vjp_of_adder, inputs + v) and check2(vjp_of_adder, inputs + v)

    def composed(*args):
        x, y = args[:2]
        x = x.cos()
        value, grads = F.vjp(_adder_mul, (x, y), args[2:], create_graph=True)
        return (value[0].exp() + value[1].exp() + grads[0].exp() + grads[1].exp() + x.exp()
                + y.exp())

    assert check(composed, inputs + v) and check2(composed, inputs + v)


# -- jvp -----------------------------------------------------------------------------------
def test_jvp_err_check(lib):
    F = lib.autograd.functional
    inp, v = lib.rand(4), lib.rand(4)
    with pytest.raises(TypeError, match="The inputs given to jvp must be either a Tensor"):
        F.jvp(_narrow3, (inp, 2), v)
    with pytest.raises(TypeError, match="The outputs of the user-provided function given to "
                                        "jvp must"):
        F.jvp(_narrow3_with_string, inp, v)
    with pytest.raises(RuntimeError, match="The vector v can only be None if the input to the "
                                           "user-provided function"):
        F.jvp(_narrow3, inp)
    with pytest.raises(RuntimeError, match="The given v should contain a single Tensor."):
        F.jvp(_narrow3, inp, (v, v))
    with pytest.raises(RuntimeError, match="v has invalid size: should be"):
        F.jvp(_narrow3, inp, v[:2])
    _same_struct(lib, F.jvp(_narrow3, inp, v)[1], _narrow3(inp))


def test_jvp_output(lib):
    F = lib.autograd.functional
    result = F.jvp(_sum_rows, lib.rand(4, 4), lib.ones(4, 4))
    _same_struct(lib, result[1], result[0])
    assert result[0].grad_fn is None and result[1].grad_fn is None
    inputs = (lib.rand(2), lib.rand(2))
    out, jvp_value = F.jvp(lambda x, y: 2 * x + 3 * y, inputs, (lib.ones(2), lib.ones(2)))
    _same_struct(lib, jvp_value, out)
    assert out.grad_fn is None and jvp_value.grad_fn is None
    assert jvp_value.tolist() == [5.0, 5.0]
    v = (lib.tensor([1.0, 0.0]), lib.tensor([1.0, 0.0]))
    out, jvp_value = F.jvp(lambda x, y: (2 * x + 3 * y, x + y), inputs, v)
    _same_struct(lib, jvp_value, out)
    assert all(t.grad_fn is None for t in out + jvp_value)
    assert jvp_value[0].tolist() == [5.0, 0.0] and jvp_value[1].tolist() == [2.0, 0.0]


def test_jvp_scalar(lib):
    F = lib.autograd.functional
    result = F.jvp(lambda x: x.sum(), lib.rand(4, 4), lib.ones(4, 4))
    _same_struct(lib, result[0], lib.zeros([]))
    _same_struct(lib, result[1], result[0])
    inputs = lib.rand([])
    for result in (F.jvp(lambda x: x.unsqueeze(0).repeat(4), inputs, lib.ones([])),
                   F.jvp(lambda x: x.unsqueeze(0).repeat(4), inputs)):
        _same_struct(lib, result[0], lib.zeros(4))
        _same_struct(lib, result[1], result[0])


def test_jvp_create_graph(lib):
    F, check, check2 = (lib.autograd.functional, lib.autograd.gradcheck,
                        lib.autograd.gradgradcheck)
    inputs = lib.rand(2, 2, dtype=lib.double).requires_grad_()
    v = lib.ones(2, 2, dtype=lib.double).requires_grad_()
    result = F.jvp(_sum_rows, inputs, v, create_graph=True)
    _same_struct(lib, result[1], result[0])
    assert result[0].grad_fn is not None and result[1].grad_fn is not None
    assert check(lambda inp, v: F.jvp(_sum_rows, inp, v, create_graph=True), (inputs, v))
    assert check2(lambda inp, v: F.jvp(_sum_rows, inp, v, create_graph=True), (inputs, v))
    inputs = (lib.rand(2, dtype=lib.double, requires_grad=True),
              lib.rand(2, dtype=lib.double, requires_grad=True))
    v = (lib.tensor([1.0, 0.0], dtype=lib.double, requires_grad=True),
         lib.tensor([1.0, 0.0], dtype=lib.double, requires_grad=True))

    def jvp_of_adder(*args):
        return F.jvp(_adder_mul, args[:2], args[2:], create_graph=True)[1]

    assert check(jvp_of_adder, inputs + v) and check2(jvp_of_adder, inputs + v)

    def composed(*args):
        x, y = args[:2]
        x = x.cos()
        value, grads = F.jvp(_adder_mul, (x, y), args[2:], create_graph=True)
        return (value[0].exp() + value[1].exp() + grads[0].exp() + grads[1].exp() + x.exp()
                + y.exp())

    assert check(composed, inputs + v) and check2(composed, inputs + v)


# -- jacobian ------------------------------------------------------------------------------
def _exp_reducer(x):
    return x.exp().sum(dim=1)


def test_jacobian_err_check(lib):
    F = lib.autograd.functional
    inp = lib.rand(4)
    with pytest.raises(TypeError, match="The inputs given to jacobian must be either a "
                                        "Tensor"):
        F.jacobian(_narrow3, (inp, 2))
    with pytest.raises(TypeError, match="The outputs of the user-provided function given to "
                                        "jacobian must"):
        F.jacobian(_narrow3_with_string, inp)
    _interleaved(lib, F.jacobian(_narrow3, inp), _narrow3(inp), inp)

    def two_outputs(a, b):
        return b, 3 * a.narrow(0, 0, 3)

    inp = (lib.rand(4), lib.rand(5))
    _interleaved(lib, F.jacobian(two_outputs, inp), two_outputs(*inp), inp)


def test_jacobian_err_check_strict(lib):
    F = lib.autograd.functional
    inp = lib.rand(4)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not "
                                           "require gradients."):
        F.jacobian(_detached, inp, strict=True)
    result = F.jacobian(_detached, inp, strict=False)
    _interleaved(lib, result, inp, inp)
    assert result.abs().sum().item() == 0.0
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is "
                                           "independent of input 0."):
        F.jacobian(_unconnected, inp, strict=True)
    result = F.jacobian(_unconnected, inp, strict=False)
    _interleaved(lib, result, inp, inp)
    assert result.abs().sum().item() == 0.0
    inp.requires_grad_()
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function is "
                                           "independent of input 0."):
        F.jacobian(lambda a: a.clone(), inp, create_graph=True, strict=True)
    result = F.jacobian(lambda a: a.clone(), inp, create_graph=True, strict=False)
    _interleaved(lib, result, inp, inp)
    assert result.tolist() == lib.eye(4).tolist()


@pytest.mark.parametrize("name, function", [("jacobian", lambda x: x),
                                            ("hessian", lambda x: (x ** 3).sum())])
def test_jacobian_hessian_err_check_strict_vectorize(lib, name, function):
    with pytest.raises(RuntimeError, match="not supported together"):
        getattr(lib.autograd.functional, name)(function, lib.rand(4), strict=True,
                                               vectorize=True)


def test_jacobian_no_grad(lib):
    F = lib.autograd.functional
    inputs = lib.rand(4, 4)
    with lib.no_grad():
        result = F.jacobian(_exp_reducer, inputs)
    assert result.grad_fn is None and result.abs().sum().item() != 0
    with lib.no_grad():
        result = F.jacobian(_exp_reducer, inputs, create_graph=True)
    assert result.grad_fn is not None and result.abs().sum().item() != 0


def test_jacobian_output(lib):
    F = lib.autograd.functional
    inputs = lib.rand(4, 4)
    result = F.jacobian(_exp_reducer, inputs)
    _interleaved(lib, result, _exp_reducer(inputs), inputs)
    assert result.grad_fn is None
    inputs = lib.rand(4)
    result = F.jacobian(lambda x: x.clone(), inputs)
    _interleaved(lib, result, inputs, inputs)
    assert result.grad_fn is None and result.tolist() == lib.eye(4).tolist()

    def add_exp_reducer(x, y):
        return (x + y.exp()).sum(dim=1)

    inputs = (lib.rand(4, 4), lib.rand(4, 4))
    result = F.jacobian(add_exp_reducer, inputs)
    _interleaved(lib, result, add_exp_reducer(*inputs), inputs)
    assert result[0].grad_fn is None and result[1].grad_fn is None


def test_jacobian_scalar(lib):
    F = lib.autograd.functional
    inputs = lib.rand(4, 4)
    _same_struct(lib, F.jacobian(lambda x: x.sum(), inputs), inputs)
    _same_struct(lib, F.jacobian(lambda x: x.unsqueeze(0).repeat(4), lib.rand([])),
                 lib.zeros(4))


@pytest.mark.slow  # gradgradcheck of a 16x16 Jacobian: a few seconds
def test_jacobian_create_graph(lib):
    F, check, check2 = (lib.autograd.functional, lib.autograd.gradcheck,
                        lib.autograd.gradgradcheck)
    inputs = lib.rand(4, 4, dtype=lib.double, requires_grad=True)
    result = F.jacobian(_exp_reducer, inputs, create_graph=True)
    _interleaved(lib, result, _exp_reducer(inputs), inputs)
    assert result.grad_fn is not None

    def jacobian_of(inp):
        return F.jacobian(_exp_reducer, inp, create_graph=True)

    assert check(jacobian_of, inputs) and check2(jacobian_of, inputs)

    def add_exp_reducer(x, y):
        return (x + y).exp().sum(dim=1)

    inputs = (lib.rand(4, 4, dtype=lib.double, requires_grad=True),
              lib.rand(4, 4, dtype=lib.double, requires_grad=True))
    result = F.jacobian(add_exp_reducer, inputs, create_graph=True)
    _interleaved(lib, result, add_exp_reducer(*inputs), inputs)
    assert result[0].grad_fn is not None and result[1].grad_fn is not None

    def jacobians_of(*inp):
        return F.jacobian(add_exp_reducer, inp, create_graph=True)

    assert check(jacobians_of, inputs) and check2(jacobians_of, inputs)

    def composed(x, y):
        x = x.cos()
        value, jac = F.jacobian(add_exp_reducer, (x, y), create_graph=True)
        total = value[0].exp().sum() + value[1].exp().sum() + jac[0].exp().sum()
        return total + jac[1].exp().sum() + x.exp().sum() + y.exp().sum()

    assert check(composed, inputs) and check2(composed, inputs)


# -- hessian -------------------------------------------------------------------------------
def _exp_narrow_sum(a):
    return 3 * a.narrow(0, 0, 3).exp().sum()


def test_hessian_err_check(lib):
    F = lib.autograd.functional
    inp = lib.rand(4)
    with pytest.raises(TypeError, match="The inputs given to hessian must be either a Tensor"):
        F.hessian(_exp_narrow_sum, (inp, 2))
    with pytest.raises(TypeError, match="The outputs of the user-provided function given to "
                                        "hessian must"):
        F.hessian(_narrow3_with_string, inp)
    with pytest.raises(RuntimeError, match="The Tensor returned by the function given to "
                                           "hessian should contain a single element"):
        F.hessian(_narrow3, inp)
    with pytest.raises(RuntimeError, match="The function given to hessian should return a "
                                           "single Tensor"):
        F.hessian(lambda a: (3 * a.narrow(0, 0, 3), 3 * a.narrow(0, 0, 3)), inp)
    _interleaved(lib, F.hessian(_exp_narrow_sum, inp), inp, inp)

    def two_inputs(a, b):
        return (3 * b.narrow(0, 0, 3) * a.narrow(0, 0, 3)).sum()

    inp = (lib.rand(4), lib.rand(5))
    _interleaved(lib, F.hessian(two_inputs, inp), inp, inp)


@pytest.mark.parametrize("name", ["hessian", "vhp", "hvp"])
def test_hessian_vhp_hvp_err_check_strict(lib, name):
    api = getattr(lib.autograd.functional, name)
    args = () if name == "hessian" else (lib.rand(4),)
    inp = lib.rand(4)

    def result_of(function, strict):
        result = api(function, inp, *args, strict=strict)
        return result if name == "hessian" else result[1]

    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not "
                                           "require gradients."):
        result_of(lambda a: a.detach().sum(), True)
    assert result_of(lambda a: a.detach().sum(), False).abs().sum().item() == 0.0
    unconnected_message = ("jacobian of the user-provided function with respect to input 0"
                           if name == "hessian" else
                           "The output of the user-provided function is independent of "
                           "input 0")
    with pytest.raises(RuntimeError, match=unconnected_message):
        result_of(lambda a: _unconnected(a).sum(), True)
    assert result_of(lambda a: _unconnected(a).sum(), False).abs().sum().item() == 0.0
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with "
                                           "respect to input 0 is"):
        result_of(lambda a: (3 * a).sum(), True)  # linear: the jacobian does not depend on a
    assert result_of(lambda a: (3 * a).sum(), False).abs().sum().item() == 0.0


def _pow_reducer(x):
    return x.pow(3).sum()


def test_hessian_no_grad(lib):
    F = lib.autograd.functional
    inputs = lib.rand(2, 2)
    with lib.no_grad():
        result = F.hessian(_pow_reducer, inputs)
    assert result.grad_fn is None and result.abs().sum().item() != 0
    with lib.no_grad():
        result = F.hessian(_pow_reducer, inputs, create_graph=True)
    assert result.grad_fn is not None and result.abs().sum().item() != 0


def test_hessian_output(lib):
    F = lib.autograd.functional
    inputs = lib.rand(2, 2)
    result = F.hessian(_pow_reducer, inputs)
    _interleaved(lib, result, inputs, inputs)
    assert result.grad_fn is None
    inputs = (lib.rand(2, 2), lib.rand(2, 2))
    result = F.hessian(lambda x, y: (x + y).pow(3).sum(), inputs)
    _interleaved(lib, result, inputs, inputs)
    assert all(item.grad_fn is None for row in result for item in row)


def test_hessian_scalar(lib):
    F = lib.autograd.functional
    inputs = lib.rand(4, 4)
    _interleaved(lib, F.hessian(lambda x: x.sum(), inputs), inputs, inputs)
    scalar = lib.rand([])
    _same_struct(lib, F.hessian(lambda x: x.sum(), scalar), scalar)
    _interleaved(lib, F.hessian(lambda x: x.sum().view(1, 1, 1), inputs), inputs, inputs)


@pytest.mark.slow  # gradgradcheck of a Hessian: a few seconds
def test_hessian_create_graph(lib):
    F, check, check2 = (lib.autograd.functional, lib.autograd.gradcheck,
                        lib.autograd.gradgradcheck)
    inputs = lib.rand(2, 2, dtype=lib.double, requires_grad=True)
    result = F.hessian(_pow_reducer, inputs, create_graph=True)
    _interleaved(lib, result, inputs, inputs)
    assert result.grad_fn is not None

    def hessian_of(inp):
        return F.hessian(_pow_reducer, inp, create_graph=True)

    assert check(hessian_of, inputs) and check2(hessian_of, inputs)

    def add_pow_reducer(x, y):
        return (x + y).pow(3).sum()

    inputs = (lib.rand(2, 2, dtype=lib.double, requires_grad=True),
              lib.rand(2, 2, dtype=lib.double, requires_grad=True))
    result = F.hessian(add_pow_reducer, inputs, create_graph=True)
    _interleaved(lib, result, inputs, inputs)
    assert all(item.grad_fn is not None for row in result for item in row)

    def flat_hessian(*inp):
        return tuple(item for row in F.hessian(add_pow_reducer, inp, create_graph=True)
                     for item in row)

    assert check(flat_hessian, inputs) and check2(flat_hessian, inputs)

    def composed(x, y):
        x = x.cos()
        value, hess = F.hessian(add_pow_reducer, (x, y), create_graph=True)
        total = value[0].cos().sum() + value[1].cos().sum() + hess[0].cos().sum()
        return total + hess[1].cos().sum() + x.cos().sum() + y.cos().sum()

    assert check(composed, inputs) and check2(composed, inputs)


# -- vhp and hvp ---------------------------------------------------------------------------
def _narrow_then_exp(a, b):
    return (a + 3 * b.narrow(0, 0, 3)).exp().sum()


@pytest.mark.parametrize("name", ["vhp", "hvp"])
def test_vhp_hvp_err_check(lib, name):
    api = getattr(lib.autograd.functional, name)
    inp, v = lib.rand(4), lib.rand(4)
    with pytest.raises(TypeError, match=f"The inputs given to {name} must be either a Tensor"):
        api(_exp_narrow_sum, (inp, 2), v)
    with pytest.raises(TypeError, match=f"The outputs of the user-provided function given to "
                                        f"{name} must"):
        api(_narrow3_with_string, inp, v)
    with pytest.raises(RuntimeError, match=f"The Tensor returned by the function given to "
                                           f"{name} should contain a single element"):
        api(_narrow3, inp, v)
    with pytest.raises(RuntimeError, match="v has invalid size:"):
        api(_exp_narrow_sum, inp, lib.rand(5))
    with pytest.raises(TypeError, match=f"The v given to {name} must be either a Tensor or a "
                                        "tuple of Tensors"):
        api(_exp_narrow_sum, inp, (v, 2))
    _same_struct(lib, api(_exp_narrow_sum, inp, v)[1], inp)

    def two_inputs(a, b):
        return (3 * b.narrow(0, 0, 3) * a.narrow(0, 0, 3)).sum()

    inp, v = (lib.rand(4), lib.rand(5)), (lib.rand(4), lib.rand(5))
    _same_struct(lib, api(two_inputs, inp, v)[1], inp)


@pytest.mark.parametrize("name", ["vhp", "hvp"])
def test_vhp_hvp_no_grad(lib, name):
    api = getattr(lib.autograd.functional, name)
    inputs, v = lib.rand(4, 4), lib.ones(4, 4)
    with lib.no_grad():
        result = api(lambda x: x.exp().sum(), inputs, v)
    assert result[0].grad_fn is None and result[1].grad_fn is None
    assert result[1].abs().sum().item() != 0
    with lib.no_grad():
        result = api(lambda x: x.exp().sum(), inputs, v, create_graph=True)
    assert result[0].grad_fn is not None and result[1].grad_fn is not None
    assert result[1].abs().sum().item() != 0


@pytest.mark.parametrize("name", ["vhp", "hvp"])
def test_vhp_hvp_output(lib, name):
    api = getattr(lib.autograd.functional, name)
    inputs = lib.rand(4, 4)
    result = api(_exp_narrow_sum, inputs, lib.ones(4, 4))
    _same_struct(lib, result[1], inputs)
    assert result[0].grad_fn is None and result[1].grad_fn is None
    inputs, v = (lib.rand(3), lib.rand(4)), (lib.ones(3), lib.ones(4))
    out, value = api(_narrow_then_exp, inputs, v)
    _same_struct(lib, value, inputs)
    assert out.grad_fn is None and value[0].grad_fn is None and value[1].grad_fn is None


@pytest.mark.parametrize("name", ["vhp", "hvp"])
def test_vhp_hvp_scalar(lib, name):
    api = getattr(lib.autograd.functional, name)
    inputs = lib.rand(4, 4)
    _same_struct(lib, api(lambda x: x.exp().sum(), inputs, lib.ones(4, 4))[1], inputs)
    scalar = lib.rand([])
    _same_struct(lib, api(lambda x: x.exp().sum(), scalar, lib.rand([]))[1], scalar)
    _same_struct(lib, api(lambda x: x.exp().sum(), scalar)[1], scalar)
    result = api(lambda x: x.exp().sum().view(1, 1, 1), inputs, lib.rand(4, 4))
    _same_struct(lib, result[1], inputs)


@pytest.mark.parametrize("name", ["vhp", "hvp"])
def test_vhp_hvp_create_graph(lib, name):
    api = getattr(lib.autograd.functional, name)
    check, check2 = lib.autograd.gradcheck, lib.autograd.gradgradcheck
    inputs = lib.rand(4, 4, dtype=lib.double, requires_grad=True)
    v = lib.ones(4, 4, dtype=lib.double, requires_grad=True)
    result = api(_exp_narrow_sum, inputs, v, create_graph=True)
    _same_struct(lib, result[1], inputs)
    assert result[0].grad_fn is not None and result[1].grad_fn is not None

    def product_of(inp, v):
        return api(_exp_narrow_sum, inp, v, create_graph=True)

    assert check(product_of, (inputs, v)) and check2(product_of, (inputs, v))
    inputs = (lib.rand(3, dtype=lib.double, requires_grad=True),
              lib.rand(4, dtype=lib.double, requires_grad=True))
    v = (lib.ones(3, dtype=lib.double, requires_grad=True),
         lib.ones(4, dtype=lib.double, requires_grad=True))
    out, value = api(_narrow_then_exp, inputs, v, create_graph=True)
    _same_struct(lib, value, inputs)
    assert out.grad_fn is not None and value[0].grad_fn is not None

    def products_of(*args):
        return api(_narrow_then_exp, args[:2], args[2:], create_graph=True)[1]

    assert check(products_of, inputs + v) and check2(products_of, inputs + v)

    def composed(*args):
        x, y = args[:2]
        x = x.cos()
        value, grads = api(_narrow_then_exp, (x, y), args[2:], create_graph=True)
        return value.cos() + grads[0].cos().sum() + grads[1].cos() + x.cos().sum() + y.cos()

    assert check(composed, inputs + v) and check2(composed, inputs + v)


# -- the products agree with the whole matrices ---------------------------------------------
def test_jacobian_match_vjp_jvp(lib):
    F = lib.autograd.functional

    def function(x):
        return x ** 3 + x.sum()

    inputs, v = lib.rand(4), lib.rand(4)
    jac = F.jacobian(function, inputs)
    assert _all_close(F.jvp(function, inputs, v)[1], lib.mm(jac, v.unsqueeze(1)).squeeze(1))
    assert _all_close(F.vjp(function, inputs, v)[1], lib.mm(v.unsqueeze(0), jac).squeeze(0))


def test_hessian_match_vhp_hvp(lib):
    F = lib.autograd.functional
    inputs, v = lib.rand(4), lib.rand(4)
    hes = F.hessian(_exp_narrow_sum, inputs)
    hvp = F.hvp(_exp_narrow_sum, inputs, v)[1]
    vhp = F.vhp(_exp_narrow_sum, inputs, v)[1]
    assert _all_close(hvp, lib.mm(hes, v.unsqueeze(1)).squeeze(1))
    assert _all_close(vhp, lib.mm(v.unsqueeze(0), hes).squeeze(0))


# -- values against torch ------------------------------------------------------------------
FUNCTIONS = {
    "polynomial": (lambda L, x: (x ** 3 * 2 - x).sum(), [(3,)]),
    "matmul-tanh": (lambda L, x, w: (x.mm(w).tanh() ** 2).sum(), [(2, 3), (3, 2)]),
    "softmax-log": (lambda L, x: L.log_softmax(x, dim=1).sum() * x.mean(), [(2, 3)]),
    "two-outputs": (lambda L, x, y: ((x * y).sin(), (x - y).exp().sum()), [(3,), (3,)]),
    "sigmoid-rows": (lambda L, x: x.sigmoid().sum(dim=0), [(3, 2)]),
}


def _same_values(ours, theirs) -> None:
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for one, other in zip(ours, theirs):
            _same_values(one, other)
        return
    np.testing.assert_allclose(np.asarray(ours.tolist()), np.asarray(theirs.tolist()),
                               rtol=1e-10, atol=1e-12)


def _scalar_output(function):
    def scalar(L, *args):
        result = function(L, *args)
        return result[1] if isinstance(result, tuple) else result.sum()

    return scalar


@pytest.mark.torch
@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("api", ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"])
def test_values_match_torch(name, api):
    torch = pytest.importorskip("torch")
    function, shapes = FUNCTIONS[name]
    rng = np.random.default_rng(sum(map(ord, name + api)))
    arrays = [rng.standard_normal(shape) for shape in shapes]
    results = []
    for lib in (tracegrad, torch):
        inputs = tuple(lib.tensor(array) for array in arrays)
        inputs = inputs if len(inputs) > 1 else inputs[0]
        functional = lib.autograd.functional
        if api in ("hessian", "vhp", "hvp"):
            target = _scalar_output(function)
        else:
            target = function

        def call(*args, lib=lib, target=target):
            return target(lib, *args)

        if api in ("jacobian", "hessian"):
            results.append(getattr(functional, api)(call, inputs))
            continue
        reference = call(*(inputs if isinstance(inputs, tuple) else (inputs,)))
        vectors = inputs if api in ("jvp", "vhp", "hvp") else reference
        v = tuple(t * 0.5 + 1 for t in vectors) if isinstance(vectors, tuple) \
            else vectors * 0.5 + 1
        results.append(getattr(functional, api)(call, inputs, v))
    _same_values(*results)


# -- what tracegrad does not implement ---------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda F, x: F.jacobian(lambda t: t * 2, x, vectorize=True),
    lambda F, x: F.jacobian(lambda t: t * 2, x, strategy="forward-mode"),
    lambda F, x: F.hessian(lambda t: (t ** 3).sum(), x, vectorize=True),
    lambda F, x: F.hessian(lambda t: (t ** 3).sum(), x, outer_jacobian_strategy="forward-mode"),
], ids=["jacobian-vectorize", "jacobian-forward", "hessian-vectorize", "hessian-forward"])
def test_vectorize_and_forward_mode_say_they_are_not_implemented(call):
    with pytest.raises(NotImplementedError, match="tracegrad does not implement"):
        call(tracegrad.autograd.functional, tracegrad.rand(3))


def test_jacobian_strategy_must_be_known(lib):
    with pytest.raises(AssertionError, match='Expected strategy to be either "forward-mode" or '
                                             '"reverse-mode"'):
        lib.autograd.functional.jacobian(lambda t: t, lib.rand(2), strategy="sideways")


def test_docstring_examples():
    result = doctest.testmod(tracegrad_functional, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
