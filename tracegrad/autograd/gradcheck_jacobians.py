"""The Jacobians gradcheck compares: numerical ones by central differences, analytical ones
by backward passes; and the two functions torch deprecated but still exports
(``get_numerical_jacobian``, ``get_analytical_jacobian``).

Jacobians are host (NumPy) arrays laid out as torch lays them out: one row per element of
the input, one column per element of the output, so ``J[i, j] = d output[j] / d input[i]``.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from .. import backends
from ..errors import AutogradError
from . import function as _function  # its Tensor is bound once tensor.py has loaded
from .engine import grad as _grad
from .function import Op


class GradcheckError(AutogradError):
    """Raised by gradcheck and gradgradcheck when a check fails (a RuntimeError, as
    ``torch.autograd.gradcheck.GradcheckError`` is)."""


class UndefinedGrad(Op):
    """Identity forward; backward passes an undefined (None) gradient on, as torch's
    ``torch._C._functions.UndefinedGrad`` does, to see how backward copes with one."""

    node_name = "UndefinedGradBackward"
    array_backward = True

    @staticmethod
    def forward(ctx, a):
        return a._array.view()

    @staticmethod
    def backward(ctx, grad):
        return (None,)


def is_float_tensor(value) -> bool:
    return isinstance(value, _function.Tensor) and value._array.dtype.kind == "f"


def _differentiable_inputs(inputs) -> list:
    return [value for value in inputs
            if isinstance(value, _function.Tensor) and value.requires_grad]


def _as_tuple(value) -> tuple:
    if isinstance(value, tuple):
        return value
    if isinstance(value, list):
        return tuple(value)
    return (value,)


# -- numerical: central differences ----------------------------------------------------
def _same_dtype_and_shape(before, after, eps, index) -> None:
    """torch's AssertionError for outputs that depend on the input values this way."""
    where = f"on index {index} " if index is not None else ""
    if before.shape != after.shape:
        raise AssertionError(
            f"Expected `func` to return outputs with the same shape when inputs are "
            f"perturbed {where}by {eps}, but got: shapes {before.shape} and {after.shape}.")
    if before.dtype != after.dtype:
        raise AssertionError(
            f"Expected `func` to return outputs with the same dtype when inputs are "
            f"perturbed {where}by {eps}, but got: dtypes {before.dtype} and {after.dtype}.")


def _float_outputs(func, inputs) -> list:
    """The float outputs of ``func(*inputs)``, copied (as torch clones them): an output
    that is a view of an input would otherwise change with the next perturbation."""
    return [_function.Tensor._wrap(output._array.copy(), False)
            for output in _as_tuple(func(*inputs)) if is_float_tensor(output)]


def _central_difference(func, inputs, target, index, step, eps) -> list:
    """(f(x + step) - f(x - step)) / (2 eps) for each float output, with ``target``
    perturbed at ``index`` (an element, or ``...`` for a whole-tensor step).

    The target's array is changed in place and put back, the way torch perturbs
    ``input.data``: the function sees its own input objects, and no version bumps.
    """
    array = target._array
    original = array[index].copy()
    check = functools.partial(_same_dtype_and_shape, eps=eps,
                              index=index if index is not Ellipsis else None)
    try:
        array[index] = original - step
        minus = _float_outputs(func, inputs)
        array[index] = original + step
        plus = _float_outputs(func, inputs)
    finally:
        array[index] = original
    columns = []
    for low, high in zip(minus, plus):
        check(low, high)
        difference = (high._array - low._array) / (2 * eps)  # in the output's dtype
        if isinstance(difference, np.generic):  # NumPy gives 0-d results as scalars
            difference = np.asarray(difference)
        columns.append(backends.to_host(difference).reshape(-1))
    return columns


def _numerical_for_target(func, inputs, target, float_outputs, eps) -> list:
    """d output / d target for every float output: arrays of (target numel, output numel)
    in the output's dtype."""
    jacobians = [np.zeros((target.numel(), output.numel()), dtype=output._array.dtype)
                 for output in float_outputs]
    for row, index in enumerate(np.ndindex(*target.shape)):
        for jacobian, column in zip(jacobians, _central_difference(
                func, inputs, target, index, eps, eps)):
            jacobian[row] = column
    return jacobians


def numerical_jacobians(func, inputs, func_out, eps) -> list:
    """``[input][float output]`` Jacobians of ``func`` for each differentiable input."""
    float_outputs = [output for output in func_out if is_float_tensor(output)]
    return [_numerical_for_target(func, inputs, target, float_outputs, eps)
            for target in _differentiable_inputs(inputs)]


def numerical_jvps(func, inputs, func_out, all_u, eps) -> list:
    """``[input][float output]`` J u, each flat: the whole input moved along ``u`` at once."""
    results = []
    for target, u in zip(_differentiable_inputs(inputs), all_u):
        step = (u * eps).reshape(target.shape).astype(target._array.dtype)
        xp = target._xp
        if xp is not np:
            step = xp.asarray(step)
        results.append(_central_difference(func, inputs, target, Ellipsis, step, eps))
    return results


# -- analytical: backward passes ---------------------------------------------------------
FAILED_NONDET_NOTE = (
    "\n\nNOTE: If your op relies on non-deterministic operations, this failure might be "
    "expected. Call gradcheck/gradgradcheck with `nondet_tol=<tol>` as a keyword argument "
    "to allow for it.")


def _vjps(output, differentiable: list, grad_output) -> list:
    grads = _grad(output, differentiable, grad_output, retain_graph=True, allow_unused=True)
    return [None if grad_value is None else grad_value._array.copy() for grad_value in grads]


def _rows(output, differentiable: list) -> list:
    """backward once per output element: ``[input][output element]`` gradient arrays."""
    seed = output.new_zeros(output.shape)
    flat = seed._array.reshape(-1)  # a view: new_zeros is contiguous
    rows: list[list] = [[] for _ in differentiable]
    for position in range(flat.size):
        flat[...] = 0
        flat[position] = 1
        for per_input, grad_value in zip(rows, _vjps(output, differentiable, seed)):
            per_input.append(grad_value)
    return rows


def _stack(rows: list, differentiable: list, count: int) -> tuple[list, bool, bool]:
    """Columns into (input numel, count) host arrays of the input's dtype, with whether
    every gradient had its input's shape and dtype."""
    jacobians, sizes_ok, types_ok = [], True, True
    for per_input, tensor in zip(rows, differentiable):
        jacobian = np.zeros((tensor.numel(), count), dtype=tensor._array.dtype)
        for column, grad_value in enumerate(per_input):
            if grad_value is None:
                continue
            if grad_value.shape != tuple(tensor.shape):
                sizes_ok = False
                continue
            if grad_value.dtype != tensor._array.dtype:
                types_ok = False
            jacobian[:, column] = backends.to_host(grad_value).reshape(-1)
        jacobians.append(jacobian)
    return jacobians, sizes_ok, types_ok


def _reentrant(first: list, second: list, nondet_tol: float) -> bool:
    for one, two in zip(first, second):
        if one.size and np.abs(one.astype(np.float64) - two.astype(np.float64)).max() \
                > nondet_tol:
            return False
    return True


def _check_attributes(reentrant: bool, sizes_ok: bool, types_ok: bool, nondet_tol: float,
                      check_grad_dtypes: bool, output_index: int) -> None:
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if not reentrant:
        raise GradcheckError(
            "Backward is not reentrant, i.e., running backward with same input and "
            "grad_output multiple times gives different values, although analytical "
            f"gradient matches numerical gradient.The tolerance for nondeterminism was "
            f"{nondet_tol}. (tracegrad: backward of output {output_index} ran twice with "
            f"the same inputs.){FAILED_NONDET_NOTE}")


def checked_analytical_jacobian(inputs, output, nondet_tol, check_grad_dtypes,
                                output_index) -> list:
    """d output / d input for each differentiable input, by backward passes run twice:
    a difference between the runs beyond ``nondet_tol`` is a non-reentrant backward."""
    differentiable = _differentiable_inputs(inputs)
    first, sizes_ok, types_ok = _stack(_rows(output, differentiable), differentiable,
                                       output.numel())
    second, _, _ = _stack(_rows(output, differentiable), differentiable, output.numel())
    _check_attributes(_reentrant(first, second, nondet_tol), sizes_ok, types_ok, nondet_tol,
                      check_grad_dtypes, output_index)
    return first


def checked_vjps(inputs, output, v: np.ndarray, nondet_tol, check_grad_dtypes,
                 output_index) -> list:
    """v^T J for each differentiable input (flat float arrays), run twice as above."""
    differentiable = _differentiable_inputs(inputs)
    seed = output.new_zeros(output.shape)
    seed._array[...] = backends.to_device(
        v.reshape(output.shape).astype(output._array.dtype), output.device)
    runs = []
    for _ in range(2):
        columns = [[grad_value] for grad_value in _vjps(output, differentiable, seed)]
        runs.append(_stack(columns, differentiable, 1))
    (first, sizes_ok, types_ok), (second, _, _) = runs
    _check_attributes(_reentrant(first, second, nondet_tol), sizes_ok, types_ok, nondet_tol,
                      check_grad_dtypes, output_index)
    return [jacobian[:, 0] for jacobian in first]


# -- the deprecated public helpers -------------------------------------------------------
_PRIVATE_API = ("`{name}` was part of PyTorch's private API and not meant to be exposed. We "
                "are deprecating it and it will be removed in a future version of PyTorch. "
                "If you have a specific use for this or feature request for this to be a "
                "stable API, please file us an issue at "
                "https://github.com/pytorch/pytorch/issues/new")


def get_numerical_jacobian(fn, inputs, target=None, eps=1e-3, grad_out=1.0) -> tuple:
    """Deprecated in torch: the numerical Jacobian of ``fn(inputs)`` (``fn`` takes the
    inputs as one tuple; its first output counts) for each tensor in ``target`` (default:
    ``inputs``) that requires grad, each of shape (target numel, output numel)."""
    warnings.warn(_PRIVATE_API.format(name="get_numerical_jacobian"), FutureWarning,
                  stacklevel=2)
    if grad_out != 1.0:
        raise ValueError("Expected grad_out to be 1.0. get_numerical_jacobian no longer "
                         "supports values of grad_out != 1.0.")
    inputs = _as_tuple(inputs)
    targets = _as_tuple(inputs if target is None else target)

    def packed(*values):
        return fn(values)

    float_outputs = _float_outputs(packed, inputs)
    jacobians = []
    for value in _differentiable_inputs(targets):
        per_output = _numerical_for_target(packed, inputs, value, float_outputs, eps)
        jacobians.append(_function.Tensor._wrap(per_output[0], False))
    return tuple(jacobians)


def get_analytical_jacobian(inputs, output, nondet_tol=0.0, grad_out=1.0) -> tuple:
    """Deprecated in torch: (Jacobians of ``output`` for each input that requires grad,
    whether backward is reentrant, whether the gradients had the inputs' sizes, whether
    they had the inputs' dtypes)."""
    warnings.warn(_PRIVATE_API.format(name="get_analytical_jacobian"), FutureWarning,
                  stacklevel=2)
    if grad_out != 1.0:
        raise ValueError("Expected grad_out to be 1.0. get_analytical_jacobian no longer "
                         "supports values of grad_out != 1.0.")
    differentiable = _differentiable_inputs(_as_tuple(inputs))
    first, sizes_ok, types_ok = _stack(_rows(output, differentiable), differentiable,
                                       output.numel())
    second, _, _ = _stack(_rows(output, differentiable), differentiable, output.numel())
    jacobians = tuple(_function.Tensor._wrap(jacobian, False) for jacobian in first)
    return jacobians, _reentrant(first, second, nondet_tol), sizes_ok, types_ok
