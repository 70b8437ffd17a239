"""gradcheck / gradgradcheck: analytical gradients against central finite differences."""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import AutogradError


class GradcheckError(AutogradError):
    """Raised by gradcheck when an analytical gradient disagrees with finite differences."""


def _tensors(inputs):
    from ..tensor import Tensor

    if isinstance(inputs, Tensor):
        return (inputs,)
    return tuple(inputs)


def _outputs(function, inputs):
    from ..tensor import Tensor

    result = function(*inputs)
    if isinstance(result, Tensor):
        return (result,)
    return tuple(item for item in result if isinstance(item, Tensor))


def _numerical_jacobian(function, inputs, index, output_index, eps):
    """d output / d inputs[index], by central differences: shape (in numel, out numel)."""
    from .grad_mode import no_grad

    target = inputs[index]
    flat = target._array.reshape(-1)
    with no_grad():
        columns = []
        for position in range(flat.size):
            original = flat[position].item()
            flat[position] = original + eps
            plus = _outputs(function, inputs)[output_index]._array.astype(np.float64).copy()
            flat[position] = original - eps
            minus = _outputs(function, inputs)[output_index]._array.astype(np.float64).copy()
            flat[position] = original
            columns.append(((plus - minus) / (2 * eps)).reshape(-1))
    return np.stack(columns) if columns else np.zeros((0, 0))


def _analytical_jacobian(function, inputs, index, output_index):
    from ..factories import zeros_like
    from .engine import grad

    outputs = _outputs(function, inputs)
    output = outputs[output_index]
    rows = []
    for position in range(output.numel()):
        seed = zeros_like(output)
        seed._array.reshape(-1)[position] = 1
        (result,) = grad(output, inputs[index], seed, retain_graph=True, allow_unused=True)
        if result is None:
            rows.append(np.zeros(inputs[index].numel()))
        else:
            rows.append(np.asarray(result._array, dtype=np.float64).reshape(-1))
    return np.stack(rows, axis=1) if rows else np.zeros((inputs[index].numel(), 0))


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, fast_mode=False, **unused) -> bool:
    """Check ``func``'s gradients against finite differences, as torch's gradcheck does.

    >>> import tracegrad as torch
    >>> x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    >>> torch.autograd.gradcheck(lambda t: (t * t).sum(), (x,))
    True
    """
    inputs = _tensors(inputs)
    differentiable = [i for i, t in enumerate(inputs)
                      if getattr(t, "requires_grad", False)]
    if not differentiable:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of the them have requires_grad=True.")
    for i in differentiable:
        if inputs[i]._array.dtype != np.float64:
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point "
                f"({inputs[i].dtype!r}). This check will likely fail if all the inputs are "
                "not of double precision floating point. Hint: call .double() on it.",
                stacklevel=2)
    outputs = _outputs(func, inputs)
    for output_index, output in enumerate(outputs):
        if not output.requires_grad:
            continue
        for i in differentiable:
            numerical = _numerical_jacobian(func, inputs, i, output_index, eps)
            analytical = _analytical_jacobian(func, inputs, i, output_index)
            if numerical.shape != analytical.shape or not np.allclose(
                    analytical, numerical, rtol=rtol, atol=atol):
                message = _mismatch_message(output_index, i, numerical, analytical)
                if raise_exception:
                    raise GradcheckError(message)
                return False
    return True


def _mismatch_message(output_index, input_index, numerical, analytical) -> str:
    difference = np.abs(analytical - numerical)
    worst = np.unravel_index(np.argmax(difference), difference.shape)
    return (
        f"Jacobian mismatch for output {output_index} with respect to input {input_index},\n"
        f"numerical:{numerical}\nanalytical:{analytical}\n"
        f"The worst element is d output[{worst[1]}] / d input[{worst[0]}]: analytical "
        f"{analytical[worst]:.6g} vs numerical {numerical[worst]:.6g} (difference "
        f"{difference[worst]:.3g}). Hint: check the backward of the op that consumes input "
        f"{input_index}; tracegrad.testing.gradcheck names the node.")


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, **unused) -> bool:
    """Check second derivatives: gradcheck of the function (inputs, v) -> vJP."""
    from ..factories import randn
    from .engine import grad
    from .grad_mode import enable_grad

    inputs = _tensors(inputs)
    outputs = _differentiable_outputs(func, inputs)
    if grad_outputs is None:
        grad_outputs = tuple(
            randn(o.shape, dtype=o.dtype).requires_grad_(True) for o in outputs)
    grad_outputs = _tensors(grad_outputs)
    count = len(inputs)

    def first_derivatives(*values):
        primal, cotangent = values[:count], values[count:]
        # The numerical Jacobian calls this under no_grad; the vJP needs a graph anyway.
        with enable_grad():
            results = _differentiable_outputs(func, primal)
            used = [t for t in primal if getattr(t, "requires_grad", False)]
            grads = grad(results, used, cotangent, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivatives, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)


def _differentiable_outputs(func, inputs) -> tuple:
    """The outputs a gradient can flow into (an argmax's int64 indices cannot)."""
    return tuple(output for output in _outputs(func, inputs) if output._array.dtype.kind == "f")
