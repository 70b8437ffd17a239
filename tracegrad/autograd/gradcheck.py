"""gradcheck / gradgradcheck: analytical gradients against finite differences, as strict as
PyTorch's.

``gradcheck(func, inputs)`` checks, in torch's order:

1. the inputs: at least one requires grad (ValueError), none has a dimension with stride 0
   (RuntimeError), a warning for the ones that are not float64;
2. for each differentiable output and input, the Jacobian backward computes against
   central differences, with backward run twice to catch a non-reentrant (non-deterministic)
   backward beyond ``nondet_tol``; outputs whose shape or dtype change when an input is
   perturbed raise AssertionError; with no differentiable output, the numerical Jacobian
   must be zero;
3. that backward with zero output gradients gives zero input gradients of the inputs'
   dtype and shape ("backward not multiplied by grad_output");
4. with ``check_undefined_grad``, that backward copes with undefined (None) output grads.

``fast_mode=True`` compares v^T J u for random unit vectors u, v instead of whole
Jacobians, as torch does, and recomputes the slow Jacobians for the message on failure.
A failure raises ``GradcheckError`` (a RuntimeError) with torch's message plus the worst
element, or returns False with ``raise_exception=False``. The Jacobian arithmetic lives in
``gradcheck_jacobians.py``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from ..errors import AutogradError
from . import function as _function  # its Tensor is bound once tensor.py has loaded
from . import gradcheck_jacobians as _jacobians
from .engine import grad as _grad
from .gradcheck_jacobians import (  # torch exposes them from this module
    GradcheckError,
    get_analytical_jacobian,
    get_numerical_jacobian,
)

__all__ = ["GradcheckError", "get_analytical_jacobian", "get_numerical_jacobian",
           "gradcheck", "gradgradcheck"]

_NOT_IMPLEMENTED = ("tracegrad does not implement {what} (it has no {why}). Hint: leave it "
                    "at its default ({default}).")


def gradcheck(func: Callable, inputs, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True,
              fast_mode: bool = False, masked: bool | None = None) -> bool:
    """Check ``func``'s gradients against finite differences, as torch's gradcheck does.

    >>> import tracegrad as torch
    >>> x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    >>> torch.autograd.gradcheck(lambda t: (t * t).sum(), (x,))
    True
    """
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError(
            "Expected at least one of check_forward_ad or check_backward_ad to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError(
            "Setting check_batched_grad=True requires check_backward_ad to be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError(
            "Setting check_batched_forward_grad=True requires check_forward_ad to be True")
    _refuse_unimplemented(check_forward_ad=check_forward_ad,
                          check_batched_grad=check_batched_grad,
                          check_batched_forward_grad=check_batched_forward_grad)
    try:
        return _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
                          check_grad_dtypes, fast_mode, bool(masked))
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _refuse_unimplemented(**flags: bool) -> None:
    reasons = {"check_forward_ad": "forward-mode AD",
               "check_batched_grad": "vmap to batch gradients",
               "check_batched_forward_grad": "forward-mode AD or vmap",
               "check_fwd_over_rev": "forward-mode AD"}
    for name, value in flags.items():
        if value:
            raise NotImplementedError(_NOT_IMPLEMENTED.format(
                what=f"gradcheck's {name}=True", why=reasons[name], default="False"))


def _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
               check_grad_dtypes, fast_mode, masked) -> bool:
    inputs = _as_tuple(inputs)
    _check_inputs(inputs)
    func_out = _as_tuple(func(*inputs))
    outputs = _differentiable_outputs(func_out)
    if fast_mode:
        _fast_check(func, inputs, func_out, outputs, eps, atol, rtol, nondet_tol,
                    check_grad_dtypes)
    else:
        _slow_check(func, inputs, func_out, outputs, eps, atol, rtol, nondet_tol,
                    check_grad_dtypes)
    _check_backward_multiplies_grad_output(outputs, inputs, masked)
    if check_undefined_grad:
        _check_undefined_output_grads(func, inputs)
    return True


# -- inputs and outputs ----------------------------------------------------------------
def _as_tuple(value) -> tuple:
    if isinstance(value, tuple):
        return value
    if isinstance(value, list):
        return tuple(value)
    return (value,)


def _differentiable_outputs(func_out: tuple) -> tuple:
    """The outputs a gradient flows into. Items that are not tensors are left out (torch
    would fail on them with an AttributeError)."""
    return tuple(output for output in func_out
                 if isinstance(output, _function.Tensor) and output.requires_grad)


def _check_inputs(inputs: tuple) -> None:
    any_requires_grad = False
    for index, value in enumerate(inputs):
        if not (isinstance(value, _function.Tensor) and value.requires_grad):
            continue
        if value._array.dtype != np.float64:
            warnings.warn(
                f"Input #{index} requires gradient and is not a double precision floating "
                "point or complex. This check will likely fail if all the inputs are not of "
                f"double precision floating point or complex. (tracegrad: input #{index} "
                f"is {value.dtype.name}; call .double() on it.)", UserWarning, stacklevel=3)
        if any(stride == 0 and size > 1 for stride, size in zip(value.stride(), value.shape)):
            raise AutogradError(
                f"The {index}th input has a dimension with stride 0. gradcheck only supports "
                "inputs that are non-overlapping to be able to compute the numerical "
                "gradients correctly. You should call .contiguous on the input before "
                "passing it to gradcheck.")
        any_requires_grad = True
    if not any_requires_grad:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of them have requires_grad=True.")


def _differentiable_inputs(inputs: tuple) -> list:
    return [value for value in inputs
            if isinstance(value, _function.Tensor) and value.requires_grad]


# -- slow mode: whole Jacobians ----------------------------------------------------------
def _slow_check(func, inputs, func_out, outputs, eps, atol, rtol, nondet_tol,
                check_grad_dtypes) -> None:
    numerical = _jacobians.numerical_jacobians(func, inputs, func_out, eps)
    if not outputs:
        for per_input in numerical:
            for jacobian in per_input:
                if np.any(jacobian != 0):
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return
    # numerical[input][output] covers every float output; keep the differentiable ones
    float_outputs = [output for output in func_out if _jacobians.is_float_tensor(output)]
    keep = [index for index, output in enumerate(float_outputs) if output.requires_grad]
    for output_index, output in enumerate(outputs):
        analytical = _jacobians.checked_analytical_jacobian(
            inputs, output, nondet_tol, check_grad_dtypes, output_index)
        for input_index, expected in enumerate(numerical):
            found = analytical[input_index]
            wanted = expected[keep[output_index]]
            if not _allclose(found, wanted, rtol, atol):
                raise GradcheckError(_mismatch_message(
                    output_index, input_index, wanted, found, output, inputs))


def _allclose(analytical: np.ndarray, numerical: np.ndarray, rtol: float, atol: float) -> bool:
    """torch.allclose(analytical, numerical) after promoting both to one dtype."""
    dtype = np.promote_types(analytical.dtype, numerical.dtype)
    return bool(np.allclose(analytical.astype(dtype), numerical.astype(dtype), rtol=rtol,
                            atol=atol))


def _mismatch_message(output_index: int, input_index: int, numerical, analytical, output,
                      inputs, fast_detail: str = "") -> str:
    """torch's message, then tracegrad's: the worst element, named by its indices."""
    message = (f"Jacobian mismatch for output {output_index:d} with respect to input "
               f"{input_index:d},\nnumerical:{_show(numerical)}\nanalytical:"
               f"{_show(analytical)}\n{fast_detail}")
    if numerical.ndim != 2 or numerical.size == 0:
        return message
    difference = np.abs(analytical.astype(np.float64) - numerical.astype(np.float64))
    row, column = np.unravel_index(np.argmax(difference), difference.shape)
    input_shape = _differentiable_inputs(inputs)[input_index].shape
    where_in = _index_text(row, input_shape)
    where_out = _index_text(column, output.shape)
    return message + (
        f"The worst element is d output[{where_out}] / d input[{where_in}]: analytical "
        f"{float(analytical[row, column]):.6g} vs numerical "
        f"{float(numerical[row, column]):.6g} (difference "
        f"{float(difference[row, column]):.3g}). Hint: check the backward of the op that "
        f"consumes input {input_index}; tracegrad.testing.gradcheck names the node.")


def _index_text(flat_index, shape) -> str:
    if len(shape) <= 1:
        return str(int(flat_index))
    return ", ".join(str(int(i)) for i in np.unravel_index(int(flat_index), tuple(shape)))


def _show(array: np.ndarray):
    """A Jacobian printed as torch prints the tensor (``tensor([[2., 0.], ...])``)."""
    if array.ndim == 0:
        return float(array)
    return _function.Tensor._wrap(np.ascontiguousarray(array), False)


# -- fast mode: v^T J u ----------------------------------------------------------------
def _fast_check(func, inputs, func_out, outputs, eps, atol, rtol, nondet_tol,
                check_grad_dtypes) -> None:
    differentiable = _differentiable_inputs(inputs)
    generator = np.random.default_rng(67280421310721)  # its own: the user's RNG is left alone
    all_u = [_unit_vector(tensor.numel(), generator) for tensor in differentiable]
    all_v = [_unit_vector(output.numel(), generator) for output in outputs]
    numerical = _jacobians.numerical_jvps(func, inputs, func_out, all_u, eps)
    if not outputs:
        for per_input in numerical:
            for jvp in per_input:
                if jvp.size and np.abs(jvp).max() > nondet_tol:
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return
    float_outputs = [output for output in func_out if _jacobians.is_float_tensor(output)]
    keep = [index for index, output in enumerate(float_outputs) if output.requires_grad]
    for output_index, (output, v) in enumerate(zip(outputs, all_v)):
        vjps = _jacobians.checked_vjps(inputs, output, v, nondet_tol, check_grad_dtypes,
                                       output_index)
        for input_index, (vjp, u) in enumerate(zip(vjps, all_u)):
            analytical = np.asarray(float(np.dot(vjp.astype(np.float64), u)))
            jvp = numerical[input_index][keep[output_index]]
            numeric = np.asarray(float(np.dot(v, jvp.astype(np.float64))))
            adjusted_atol = atol * float(u.sum()) * float(v.sum())
            if not _allclose(analytical, numeric, rtol, adjusted_atol):
                detail = _slow_mode_detail(func, inputs, func_out, output_index, input_index,
                                           eps, rtol, atol)
                raise GradcheckError(_mismatch_message(
                    output_index, input_index, numeric, analytical, output, inputs, detail))


def _unit_vector(size: int, generator) -> np.ndarray:
    vector = generator.random(size)
    norm = np.linalg.norm(vector)
    return vector / norm if norm else vector


def _slow_mode_detail(func, inputs, func_out, output_index, input_index, eps, rtol,
                      atol) -> str:
    """Fast mode's failure message: the whole Jacobians, recomputed in slow mode."""
    numerical = _jacobians.numerical_jacobians(func, inputs, func_out, eps)
    float_outputs = [output for output in func_out if _jacobians.is_float_tensor(output)]
    keep = [index for index, output in enumerate(float_outputs) if output.requires_grad]
    slow_numerical = numerical[input_index][keep[output_index]]
    output = _differentiable_outputs(func_out)[output_index]
    slow_analytical = _jacobians.checked_analytical_jacobian(
        inputs, output, float("inf"), False, output_index)[input_index]
    worst = float(np.abs(slow_numerical - slow_analytical).max()) if slow_numerical.size \
        else 0.0
    detail = (
        "\nThe above quantities relating the numerical and analytical jacobians are computed "
        "\nin fast mode (v^T J u for random unit vectors u and v). Below, we recompute "
        "numerical and analytical jacobians in slow mode:\n\n"
        f"Numerical:\n {_show(slow_numerical)}\nAnalytical:\n{_show(slow_analytical)}\n\n"
        f"The max per-element difference (slow mode) is: {worst}.\n")
    if _allclose(slow_analytical, slow_numerical, rtol, atol):
        detail += ("Fast gradcheck failed but element-wise differences are small. This means "
                   "that the test might've passed in slow_mode! Hint: call gradcheck with "
                   "fast_mode=False.\n")
    return detail


# -- what backward does with zero and undefined output grads ---------------------------
def _check_backward_multiplies_grad_output(outputs: tuple, inputs: tuple,
                                           masked: bool) -> None:
    differentiable = _differentiable_inputs(inputs)
    if not differentiable:
        raise GradcheckError("no Tensors requiring grad found in input")
    if not outputs:
        return
    zeros = tuple(output.new_zeros(output.shape) for output in outputs)
    grads = _grad(outputs, differentiable, zeros, allow_unused=True)
    for grad_value, tensor in zip(grads, differentiable):
        if grad_value is None:
            continue
        values = grad_value._array
        is_zero = bool((values == 0).all()) if not masked else bool(
            np.allclose(np.asarray(values.tolist(), dtype=np.float64), 0))
        if not is_zero:
            raise GradcheckError("backward not multiplied by grad_output")
        if grad_value._array.dtype != tensor._array.dtype:
            raise GradcheckError("grad is incorrect type")
        if grad_value.device != tensor.device:
            raise GradcheckError("grad is incorrect device")
        if grad_value.shape != tensor.shape:
            raise GradcheckError("grad is incorrect size")


def _warn_undefined_grad_check() -> None:
    warnings.warn(
        "Backwards compatibility: New undefined gradient support checking feature is "
        "enabled by default, but it may break existing callers of this function. If this is "
        'true for you, you can call this function with "check_undefined_grad=False" to '
        "disable the feature", UserWarning, stacklevel=4)


def _check_undefined_output_grads(func, inputs: tuple) -> None:
    """Backward must run when every output grad (and, with several outputs, each one in
    turn) is undefined, and give undefined or zero input grads then."""
    differentiable = _differentiable_inputs(inputs)
    first = _differentiable_outputs(_as_tuple(func(*inputs)))
    cases = [[_jacobians.UndefinedGrad.apply(output) for output in first]]
    if len(first) > 1:
        for undefined_index in range(len(first)):
            fresh = _differentiable_outputs(_as_tuple(func(*inputs)))
            cases.append([_jacobians.UndefinedGrad.apply(output)
                          if index == undefined_index else output
                          for index, output in enumerate(fresh)])
    for outputs in cases:
        if not outputs:
            continue
        zeros = tuple(output.new_zeros(output.shape) for output in outputs)
        try:
            grads = _grad(tuple(outputs), differentiable, zeros, allow_unused=True)
        except RuntimeError as error:
            _warn_undefined_grad_check()
            raise GradcheckError(
                "Expected backward function to handle undefined output grads. Please look at "
                '"Notes about undefined output gradients" in '
                '"tools/autograd/derivatives.yaml"') from error
        for grad_value in grads:
            if grad_value is not None and not bool((grad_value._array == 0).all()):
                _warn_undefined_grad_check()
                raise GradcheckError(
                    "Expected all input grads to be undefined or zero when all output grads "
                    'are undefined or zero. Please look at "Notes about undefined output '
                    'gradients" in "tools/autograd/derivatives.yaml"')


# -- gradgradcheck ---------------------------------------------------------------------
def gradgradcheck(func: Callable, inputs, grad_outputs=None, *, eps: float = 1e-6,
                  atol: float = 1e-5, rtol: float = 1e-3,
                  gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True,
                  nondet_tol: float = 0.0, check_undefined_grad: bool = True,
                  check_grad_dtypes: bool = False, check_batched_grad: bool = False,
                  check_fwd_over_rev: bool = False, check_rev_over_rev: bool = True,
                  fast_mode: bool = False, masked: bool = False) -> bool:
    """Check second derivatives: gradcheck of (inputs, v) -> the vector-Jacobian product.

    >>> import tracegrad as torch
    >>> x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    >>> torch.autograd.gradgradcheck(lambda t: (t ** 3).sum(), (x,))
    True
    """
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError(
            "Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError(
            "Setting check_undefined_grad=True requires check_rev_over_rev to be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError(
            "Setting check_batched_grad=True requires check_rev_over_rev to be True")
    _refuse_unimplemented(check_fwd_over_rev=check_fwd_over_rev,
                          check_batched_grad=check_batched_grad)
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        outputs = _differentiable_outputs(_as_tuple(func(*inputs)))
        grad_outputs = tuple(_random_grad_output(output, gen_non_contig_grad_outputs)
                             for output in outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    count = len(grad_outputs)
    input_slots = {index for index, value in enumerate(inputs)
                   if isinstance(value, _function.Tensor) and value.requires_grad}
    grad_output_slots = {index for index, value in enumerate(grad_outputs)
                         if value.requires_grad}

    def first_derivatives(*values):
        # The function gradcheck differentiates: its inputs and the output grads in, the
        # input grads (made with create_graph) out.
        primal = tuple(value.requires_grad_() if index in input_slots else value
                       for index, value in enumerate(values[:len(values) - count]))
        outputs = _differentiable_outputs(_as_tuple(func(*primal)))
        cotangents = tuple(value.requires_grad_() if index in grad_output_slots else value
                           for index, value in enumerate(values[len(values) - count:]))
        used = tuple(value for index, value in enumerate(primal) if index in input_slots)
        grads = _grad(outputs, used, cotangents, create_graph=True, allow_unused=True)
        return tuple(grad_value for grad_value in grads if grad_value is not None)

    return gradcheck(first_derivatives, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, fast_mode=fast_mode,
                     masked=masked)


_grad_output_generator = np.random.default_rng(20240601)


def _random_grad_output(output, non_contiguous: bool):
    """Like torch.testing.make_tensor(low=-1, high=1, requires_grad=True): uniform values
    in [-1, 1) of the output's shape, dtype (float64 for a non-float output) and device."""
    numpy_dtype = output._array.dtype if output._array.dtype.kind == "f" else np.float64
    shape = tuple(output.shape)
    if non_contiguous:
        values = _grad_output_generator.uniform(-1, 1, shape + (2,))[..., 0]
    else:
        values = _grad_output_generator.uniform(-1, 1, shape)
    array = values.astype(numpy_dtype, copy=False)
    xp = output._xp
    if xp is not np:
        array = xp.asarray(array)
    return _function.Tensor._wrap(array, True)
