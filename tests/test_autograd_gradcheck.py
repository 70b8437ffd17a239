"""gradcheck and gradgradcheck, as strict as PyTorch's.

Ported from PyTorch's test_autograd.py (test_gradcheck_* and test_unrelated_inputs, the
dense real-tensor parts: sparse, MKLDNN, complex and forward-mode cases are out of
tracegrad's scope), each run on tracegrad and on torch (``lib``), in slow and fast mode,
plus tracegrad's own: the worst element named in the message, the deprecated Jacobian
helpers, what is not implemented.
"""

from __future__ import annotations

import doctest
import importlib
import warnings

import numpy as np
import pytest
from tutorial_programs import BadSquare

import tracegrad

MODES = [pytest.param(False, id="slow"), pytest.param(True, id="fast")]


def _module(lib):
    """``torch.autograd.gradcheck`` the module (the attribute is the function)."""
    return importlib.import_module(f"{lib.__name__}.autograd.gradcheck")


def _quiet(function):
    """Call ``function`` with the float32-input warning silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return function()


def _hooked_clone(x, hook):
    y = x.clone()
    y.register_hook(hook)
    return y


def _non_det_function(lib):
    class NonDetFunc(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, jitter=0.0):
            ctx._jitter = jitter
            return x

        @staticmethod
        def backward(ctx, grad_out):
            noise = 1 + lib.rand_like(grad_out) * ctx._jitter
            return NonDetFunc.apply(grad_out, ctx._jitter) * noise, None

    return NonDetFunc


@pytest.mark.parametrize("fast_mode", MODES)
def test_gradcheck_single_input(lib, fast_mode):
    def times_five(inp):
        return inp.mul(5)

    assert lib.autograd.gradcheck(times_five, lib.rand(10, dtype=lib.float64,
                                                       requires_grad=True),
                                  fast_mode=fast_mode)
    assert lib.autograd.gradgradcheck(times_five, lib.rand(10, dtype=lib.float64,
                                                           requires_grad=True),
                                      fast_mode=fast_mode)


@pytest.mark.parametrize("fast_mode", MODES)
def test_gradcheck_nondeterministic(lib, fast_mode):
    check, check2 = lib.autograd.gradcheck, lib.autograd.gradgradcheck
    NonDetFunc = _non_det_function(lib)
    inp = lib.randn(5, 5, dtype=lib.float64, requires_grad=True)
    assert check(lambda x: NonDetFunc.apply(x, 0.0), inp, check_batched_grad=False,
                 fast_mode=fast_mode)
    with pytest.raises(RuntimeError, match="Backward is not reentrant"):
        check(lambda x: NonDetFunc.apply(x, 1e-6), inp, check_batched_grad=False,
              fast_mode=fast_mode)
    with pytest.raises(RuntimeError, match="Backward is not reentrant"):
        check2(lambda x: NonDetFunc.apply(x, 1e-12), inp, check_batched_grad=False,
               fast_mode=fast_mode)
    assert check(lambda x: NonDetFunc.apply(x, 0.0), inp, nondet_tol=1e-5,
                 check_batched_grad=False, fast_mode=fast_mode)
    assert check(lambda x: NonDetFunc.apply(x, 1e-6), inp, nondet_tol=1e-5,
                 check_batched_grad=False, fast_mode=fast_mode)
    assert check2(lambda x: NonDetFunc.apply(x, 1e-12), inp, nondet_tol=1e-5,
                  check_batched_grad=False, fast_mode=fast_mode)


@pytest.mark.parametrize("fast_mode", MODES)
def test_gradcheck_validates_inputs(lib, fast_mode):
    check = lib.autograd.gradcheck
    # none requires grad: raises even with raise_exception=False
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        check(lambda x: x, (lib.rand(10),), raise_exception=False, fast_mode=fast_mode)
    # not double precision: a warning
    x = lib.ones(1, dtype=lib.float32, requires_grad=True)
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double "
                                         "precision"):
        assert check(lambda x: x, (x,), atol=1e-1, fast_mode=fast_mode)
    # a dimension with stride 0 (expand): raises even with raise_exception=False
    x = lib.ones(1, dtype=lib.float64, requires_grad=True).expand((2, 2))
    with pytest.raises(RuntimeError, match="The 0th input has a dimension with stride 0"):
        check(lambda x: x, (x,), raise_exception=False, fast_mode=fast_mode)


@pytest.mark.parametrize("fast_mode", MODES)
def test_gradcheck_check_no_differentiable_outputs(lib, fast_mode):
    check = lib.autograd.gradcheck
    x = lib.ones((1,), dtype=lib.float64, requires_grad=True)

    def cut_off(t):  # depends on x numerically, but no gradient flows
        return t.detach() * 3

    with pytest.raises(RuntimeError, match="Numerical gradient for function expected to be "
                                           "zero"):
        check(cut_off, x, fast_mode=fast_mode)
    assert check(cut_off, x, raise_exception=False, fast_mode=fast_mode) is False
    assert check(lambda t: (), (x,), fast_mode=fast_mode)
    assert check(lambda t: (t > 0).double(), (x,), fast_mode=fast_mode)


@pytest.mark.parametrize("fast_mode", MODES)
def test_gradcheck_backward_mul_by_grad_output(lib, fast_mode):
    check = lib.autograd.gradcheck
    x = lib.ones(1, dtype=lib.float64, requires_grad=True)

    def adds_to_grad(t):
        return _hooked_clone(t, lambda g: g + 1e-2)

    with pytest.raises(RuntimeError, match="backward not multiplied by grad_output"):
        check(adds_to_grad, (x,), atol=1e-1, fast_mode=fast_mode)
    assert check(adds_to_grad, (x,), atol=1e-1, raise_exception=False,
                 fast_mode=fast_mode) is False


@pytest.mark.parametrize("fast_mode", MODES)
@pytest.mark.parametrize("lib_name", [
    "tracegrad",  # graph-api: the engine now calls tensor hooks with None, as torch does
    pytest.param("torch", marks=pytest.mark.torch)])
def test_gradcheck_undefined_grad(lib_name, fast_mode):
    lib = pytest.importorskip(lib_name)

    def raises_on_undefined(x):
        def hook(grad):
            if grad is None:
                raise RuntimeError("x is undefined")

        return _hooked_clone(x, hook)

    x = lib.ones(1, dtype=lib.float64, requires_grad=True)
    warned = pytest.warns(UserWarning, match="Backwards compatibility: New undefined gradient "
                                             "support checking feature")
    raised = pytest.raises(RuntimeError, match="Expected backward function to handle "
                                               "undefined output grads")
    with warned, raised:
        lib.autograd.gradcheck(raises_on_undefined, (x,), fast_mode=fast_mode)


@pytest.mark.parametrize("fast_mode", MODES)
def test_gradcheck_undefined_grad_of_a_wrong_multi_output_backward(lib, fast_mode):
    """With two outputs, each is made undefined in turn (the other getting a zero
    gradient); a backward that then returns a non-zero gradient is caught."""
    class TwoOutputs(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, first, second):
            if first is None and second is None:
                return None
            if first is None or second is None:
                present = first if first is not None else second
                if bool((present == 0).all()):
                    return lib.ones_like(present)  # wrong on purpose: zeros in, ones out
                first = first if first is not None else lib.zeros_like(present)
                second = second if second is not None else lib.zeros_like(present)
            return first * 2 + second * 3

    x = lib.ones(2, dtype=lib.float64, requires_grad=True)
    warned = pytest.warns(UserWarning, match="Backwards compatibility")
    raised = pytest.raises(RuntimeError, match="Expected all input grads to be undefined or "
                                               "zero when all output grads are undefined")
    with warned, raised:
        lib.autograd.gradcheck(TwoOutputs.apply, (x,), fast_mode=fast_mode)


@pytest.mark.parametrize("fast_mode", MODES)
def test_gradcheck_jacobian_mismatch(lib, fast_mode):
    def adds_to_grad(x):
        return _hooked_clone(x, lambda g: g + 1e-2)

    x = lib.ones(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Jacobian mismatch for output 0 with respect to "
                                           "input 0"):
        _quiet(lambda: lib.autograd.gradcheck(adds_to_grad, (x,), fast_mode=fast_mode))
    assert _quiet(lambda: lib.autograd.gradcheck(adds_to_grad, (x,), raise_exception=False,
                                                 fast_mode=fast_mode)) is False


@pytest.mark.parametrize("fast_mode", MODES)
def test_gradcheck_output_shape_or_dtype_depend_on_values(lib, fast_mode):
    def shape_changes(x):
        return lib.cat([x, x]) if lib.all(x >= 1) else x

    def dtype_changes(x):
        return x.to(lib.float32) if lib.all(x >= 1) else x

    a = lib.ones(1, dtype=lib.float64, requires_grad=True)
    with pytest.raises(AssertionError, match="return outputs with the same shape when inputs "
                                             "are perturbed"):
        lib.autograd.gradcheck(shape_changes, (a,), fast_mode=fast_mode)
    with pytest.raises(AssertionError, match="return outputs with the same dtype when inputs "
                                             "are perturbed"):
        lib.autograd.gradcheck(dtype_changes, (a,), fast_mode=fast_mode)


def test_gradcheck_get_numerical_jacobian(lib):
    get_numerical_jacobian = _module(lib).get_numerical_jacobian

    def function(inputs):
        x, y = inputs
        return 2 * x + y, x + 2 * y

    a = lib.rand(2, 2, dtype=lib.float64, requires_grad=True)
    b = lib.rand(2, 2, dtype=lib.float64, requires_grad=True)
    eye = np.eye(4)
    with pytest.warns(FutureWarning, match="get_numerical_jacobian` was part of PyTorch's "
                                           "private API"):
        jacobian = get_numerical_jacobian(function, (a, b), target=a, eps=1e-6)
    assert len(jacobian) == 1
    np.testing.assert_allclose(np.asarray(jacobian[0].tolist()), 2 * eye, atol=1e-6)
    with pytest.warns(FutureWarning, match="private API"):
        jacobian = get_numerical_jacobian(function, (a, b), eps=1e-6)
    np.testing.assert_allclose(np.asarray(jacobian[0].tolist()), 2 * eye, atol=1e-6)
    np.testing.assert_allclose(np.asarray(jacobian[1].tolist()), eye, atol=1e-6)
    with warnings.catch_warnings(), pytest.raises(ValueError, match="Expected grad_out to be "
                                                                    "1.0"):
        warnings.simplefilter("ignore", FutureWarning)
        get_numerical_jacobian(function, (a, b), eps=1e-6, grad_out=2.0)


def test_gradcheck_get_analytical_jacobian(lib):
    get_analytical_jacobian = _module(lib).get_analytical_jacobian
    a = lib.rand(2, 2, dtype=lib.float64, requires_grad=True)
    b = lib.rand(2, 2, dtype=lib.float64, requires_grad=True)
    outputs = (2 * a + b, a + 2 * b)
    with pytest.warns(FutureWarning, match="get_analytical_jacobian` was part of PyTorch's "
                                           "private API"):
        jacobians, reentrant, sizes_ok, types_ok = get_analytical_jacobian((a, b), outputs[0])
    assert jacobians[0].tolist() == (2 * np.eye(4)).tolist()
    assert jacobians[1].tolist() == np.eye(4).tolist()
    assert reentrant and sizes_ok and types_ok
    NonDetFunc = _non_det_function(lib)
    outputs = NonDetFunc.apply(a, 1e-6)
    with pytest.warns(FutureWarning, match="private API"):
        _, reentrant, _, _ = get_analytical_jacobian((a,), outputs)
    assert not reentrant
    with warnings.catch_warnings(), pytest.raises(ValueError, match="Expected grad_out to be "
                                                                    "1.0"):
        warnings.simplefilter("ignore", FutureWarning)
        get_analytical_jacobian((a,), outputs, grad_out=2.0)


@pytest.mark.parametrize("fast_mode", MODES)
def test_gradcheck_custom_error(lib, fast_mode):
    GradcheckError = _module(lib).GradcheckError
    assert issubclass(GradcheckError, RuntimeError)

    def adds_to_grad(x):
        return _hooked_clone(x, lambda g: g + 1e-2)

    x = lib.ones(2, 2, requires_grad=True)
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to "
                                             "input 0"):
        _quiet(lambda: lib.autograd.gradcheck(adds_to_grad, (x,), fast_mode=fast_mode))

    def not_a_gradcheck_error(x):
        raise RuntimeError("Not a GradcheckError!")

    # raise_exception=False catches only GradcheckError
    with pytest.raises(RuntimeError, match="Not a GradcheckError!"):
        _quiet(lambda: lib.autograd.gradcheck(not_a_gradcheck_error, (x,),
                                              fast_mode=fast_mode, raise_exception=False))


def test_gradcheck_requires_a_mode(lib):
    with pytest.raises(AssertionError, match="Expected at least one of check_forward_ad or "
                                             "check_backward_ad to be True"):
        lib.autograd.gradcheck(lambda t: t, (lib.ones(1, dtype=lib.float64,
                                                      requires_grad=True),),
                               check_backward_ad=False)


def test_unrelated_inputs(lib):
    # test_unrelated_inputs: grad(grad)check with a differentiable input that is not used
    x = lib.rand(10, dtype=lib.float64, requires_grad=True)
    y = lib.rand(10, dtype=lib.float64, requires_grad=True)
    assert lib.autograd.gradcheck(lambda x, y: x * x, (x, y))
    assert lib.autograd.gradgradcheck(lambda x, y: x * x, (x, y))


def _square_with_first_order_backward(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 2 * x.detach()  # right values, but no second derivative

    return Square


@pytest.mark.parametrize("fast_mode", MODES)
def test_gradgradcheck_catches_a_backward_that_is_not_differentiable(lib, fast_mode):
    Square = _square_with_first_order_backward(lib)
    x = lib.rand(3, dtype=lib.float64, requires_grad=True)
    assert lib.autograd.gradcheck(Square.apply, (x,), fast_mode=fast_mode)
    with pytest.raises(RuntimeError, match="Jacobian mismatch for output 0 with respect to "
                                           "input 0"):
        lib.autograd.gradgradcheck(Square.apply, (x,), fast_mode=fast_mode)
    grad_output = lib.rand(3, dtype=lib.float64, requires_grad=True)
    assert lib.autograd.gradgradcheck(lambda t: t ** 3, (x,), (grad_output,),
                                      fast_mode=fast_mode)
    assert lib.autograd.gradgradcheck(lambda t: t ** 3, (x,),
                                      gen_non_contig_grad_outputs=True)


# -- tracegrad's own -----------------------------------------------------------------------
def test_mismatch_names_the_worst_element_by_its_indices():
    x = tracegrad.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=tracegrad.float64,
                         requires_grad=True)
    with pytest.raises(tracegrad.autograd.gradcheck_jacobians.GradcheckError) as info:
        tracegrad.autograd.gradcheck(BadSquare.apply, (x,))
    message = str(info.value)
    assert message.startswith("Jacobian mismatch for output 0 with respect to input 0,\n"
                              "numerical:tensor([[2.0000, 0.0000, 0.0000, 0.0000],")
    assert ("The worst element is d output[1, 1] / d input[1, 1]: analytical 12 vs numerical "
            "8") in message


def test_fast_mode_failure_recomputes_the_slow_jacobians():
    def adds_to_grad(x):
        return _hooked_clone(x, lambda g: g + 1e-2)

    x = tracegrad.ones(2, dtype=tracegrad.float64, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        tracegrad.autograd.gradcheck(adds_to_grad, (x,), fast_mode=True)
    message = str(info.value)
    assert "Below, we recompute numerical and analytical jacobians in slow mode" in message
    assert "The max per-element difference (slow mode) is: 0.01" in message


@pytest.mark.parametrize("flag", ["check_batched_grad", "check_forward_ad"])
def test_batched_and_forward_checks_are_not_implemented(flag):
    x = tracegrad.ones(2, dtype=tracegrad.float64, requires_grad=True)
    with pytest.raises(NotImplementedError, match=f"tracegrad does not implement gradcheck's "
                                                  f"{flag}=True"):
        tracegrad.autograd.gradcheck(lambda t: t * 2, (x,), **{flag: True})
    with pytest.raises(NotImplementedError, match="check_fwd_over_rev=True"):
        tracegrad.autograd.gradgradcheck(lambda t: t * 2, (x,), check_fwd_over_rev=True)


def test_fast_mode_leaves_the_random_generator_alone():
    tracegrad.manual_seed(7)
    expected = tracegrad.randn(3).tolist()
    tracegrad.manual_seed(7)
    x = tracegrad.rand(3, dtype=tracegrad.float64, requires_grad=True)
    tracegrad.manual_seed(7)
    tracegrad.autograd.gradcheck(lambda t: t.sin(), (x,), fast_mode=True)
    assert tracegrad.randn(3).tolist() == expected


def test_perturbation_does_not_bump_versions_or_leave_traces():
    x = tracegrad.rand(2, 3, dtype=tracegrad.float64, requires_grad=True)
    before = x.detach().clone()
    transposed = x.t()  # a non-contiguous input is perturbed element by element too
    assert tracegrad.autograd.gradcheck(lambda t: (t * t).sum(dim=0), (transposed,))
    assert x._version == 0 and x.tolist() == before.tolist()


def test_docstring_examples():
    for name in ("tracegrad.autograd.gradcheck", "tracegrad.autograd.gradcheck_jacobians"):
        result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
        assert result.failed == 0
