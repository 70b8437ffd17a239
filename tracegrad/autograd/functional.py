"""``torch.autograd.functional``: vjp, jvp, jacobian, hessian, vhp, hvp.

Each takes a function of tensors and the point to evaluate it at, and returns what torch
returns: single tensors where a single tensor was given, tuples where tuples were, and
zeros for an output that does not depend on an input (unless ``strict=True``, which
raises torch's errors instead). ``create_graph=True`` keeps the results differentiable.

tracegrad has no forward-mode AD: ``jvp`` and ``hvp`` use the double-backward trick, as
torch's do (the vJP is linear in v, so differentiating it with respect to v gives J u).
``vectorize=True`` and ``strategy="forward-mode"`` need vmap and forward-mode AD, which
tracegrad does not implement; they raise NotImplementedError.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from . import function as _function  # its Tensor is bound once tensor.py has loaded
from .engine import grad as _grad
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


# -- inputs and outputs as tuples --------------------------------------------------------
def _as_tuple(value, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """(whether ``value`` was a tuple, ``value`` as a tuple of Tensors), with torch's
    TypeError when something else was given."""
    is_tuple = isinstance(value, tuple)
    values = value if is_tuple else (value,)
    for index, item in enumerate(values):
        if not isinstance(item, _function.Tensor):
            where = (f"the value at index {index} has type {type(item)}" if is_tuple
                     else f"the given {arg_name} has type {type(item)}")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but {where}.")
    return is_tuple, values


def _unpack(result: tuple, was_tuple) -> Any:
    """Undo _as_tuple on a result: ``was_tuple`` is one flag, or (outer, inner) for the
    nested results of jacobian and hessian."""
    if isinstance(was_tuple, tuple):
        outer, inner = was_tuple
        if not inner:
            result = tuple(item[0] for item in result)
        return result if outer else result[0]
    return result if was_tuple else result[0]


def _prepare(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """New tensor objects for the function to run on: a differentiable alias when the
    caller wants gradients to reach the originals, a detached leaf otherwise. Always new
    objects, so a function that captures the originals is told apart from one that uses
    its arguments."""
    prepared = []
    for tensor in inputs:
        if create_graph and tensor.requires_grad:
            prepared.append(tensor.view_as(tensor))
        else:
            prepared.append(tensor.detach().requires_grad_(need_graph))
    return tuple(prepared)


def _finish(values: tuple, create_graph: bool) -> tuple:
    """Results without history unless the caller asked for it (nested tuples too)."""
    if values and isinstance(values[0], tuple):
        return tuple(_finish(inner, create_graph) for inner in values)
    if create_graph:
        return values
    return tuple(value.detach() for value in values)


def _validate_v(v: tuple, reference: tuple, reference_is_tuple: bool) -> None:
    if len(v) != len(reference):
        if reference_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(reference)} "
                               f"but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for index, (given, expected) in enumerate(zip(v, reference)):
        if given.shape != expected.shape:
            entry = f"Entry {index} in " if reference_is_tuple else ""
            raise RuntimeError(f"{entry}v has invalid size: should be {expected.shape} but "
                               f"got {given.shape}.")


# -- strict mode ---------------------------------------------------------------------------
_NOT_REQUIRING = {
    "outputs": ("Output {i} of the user-provided function does not require gradients. The "
                "outputs must be computed in a differentiable manner from the input when "
                "running in strict mode."),
    "grad_inputs": ("The gradient with respect to input {i} is independent of the inputs of "
                    "the user-provided function. This is not allowed in strict mode."),
    "jacobian": ("While computing the hessian, found that the jacobian of the user-provided "
                 "function with respect to input {i} is independent of the input. This is "
                 "not allowed in strict mode. You should ensure that your function is twice "
                 "differentiable and that the jacobian depends on the inputs (this would be "
                 "violated by a linear function for example)."),
    "hessian": ("The hessian of the user-provided function with respect to input {i} is "
                "independent of the input. This is not allowed in strict mode. You should "
                "ensure that your function is thrice differentiable and that the hessian "
                "depends on the inputs."),
}


def _check_requires_grad(values: tuple, kind: str, strict: bool) -> None:
    if not strict:
        return
    for index, value in enumerate(values):
        if value is None:
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {index}. This is not allowed in strict mode.")
        if not value.requires_grad:
            raise RuntimeError(_NOT_REQUIRING[kind].format(i=index))


_INDEPENDENT = {
    "back": ("The output of the user-provided function is independent of input {i}. This is "
             "not allowed in strict mode."),
    "back_trick": ("The gradient with respect to the input is independent of entry {i} in "
                   "the grad_outputs when using the double backward trick to compute forward "
                   "mode gradients. This is not allowed in strict mode."),
    "double_back": ("The jacobian of the user-provided function is independent of input {i}. "
                    "This is not allowed in strict mode."),
    "double_back_trick": ("The hessian of the user-provided function is independent of entry "
                          "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                          "prevents from using the double backward trick to replace forward "
                          "mode AD."),
}


def _fill_in_zeros(grads: tuple, references: tuple, strict: bool, create_graph: bool,
                   stage: str) -> tuple:
    """Zeros where a gradient is None (an output independent of an input), or torch's
    strict-mode error."""
    filled = []
    for index, grad_value in enumerate(grads):
        if grad_value is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=index))
            grad_value = references[index].new_zeros(references[index].shape)
        elif strict and create_graph and not grad_value.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {index}. This is not allowed in strict mode when "
                               "create_graph=True.")
        filled.append(grad_value)
    return tuple(filled)


def _autograd_grad(outputs: tuple, inputs: tuple, grad_outputs=None, create_graph=False,
                   retain_graph=None) -> tuple:
    """autograd.grad that skips outputs which do not require grad (None for every input
    when none does) and allows unused inputs."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    kept_outputs, kept_grads = [], []
    for output, grad_output in zip(outputs, grad_outputs):
        if output is not None and output.requires_grad:
            kept_outputs.append(output)
            kept_grads.append(grad_output)
    if not kept_outputs:
        return (None,) * len(inputs)
    return _grad(tuple(kept_outputs), inputs, tuple(kept_grads), allow_unused=True,
                 create_graph=create_graph, retain_graph=retain_graph)


def _v_or_scalar(v, reference: tuple, reference_is_tuple: bool, fn_name: str,
                 create_graph: bool, what: str):
    """The vector v as a tuple, checked against ``reference``; None only where torch
    allows it (a single one-element reference)."""
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _prepare(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, reference, reference_is_tuple)
        return v
    if len(reference) != 1 or reference[0].numel() != 1:
        raise RuntimeError(f"The vector v can only be None if {what} a single Tensor with a "
                           "single element.")
    return None


# -- the six functions ---------------------------------------------------------------------
def vjp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), v^T J): the vector-Jacobian product at ``inputs``.

    >>> import tracegrad as torch
    >>> from tracegrad.autograd.functional import vjp
    >>> x = torch.tensor([1.0, 2.0])
    >>> vjp(lambda t: t ** 2, x, torch.ones(2))
    (tensor([1., 4.]), tensor([2., 4.]))
    """
    with enable_grad():
        inputs_is_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        outputs_is_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        v = _v_or_scalar(v, outputs, outputs_is_tuple, "vjp", create_graph,
                         "the user-provided function returns")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grads = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grads, inputs, strict, create_graph, "back")
    return (_unpack(_finish(outputs, create_graph), outputs_is_tuple),
            _unpack(_finish(result, create_graph), inputs_is_tuple))


def jvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), J v): the Jacobian-vector product, by the double-backward trick.

    >>> import tracegrad as torch
    >>> from tracegrad.autograd.functional import jvp
    >>> x = torch.tensor([1.0, 2.0])
    >>> jvp(lambda t: t ** 2, x, torch.tensor([1.0, 0.0]))
    (tensor([1., 4.]), tensor([2., 0.]))
    """
    with enable_grad():
        inputs_is_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph=create_graph, need_graph=True)
        v = _v_or_scalar(v, inputs, inputs_is_tuple, "jvp", create_graph,
                         "the input to the user-provided function is")
        outputs = func(*inputs)
        outputs_is_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        # u^T J for a u that requires grad: differentiating it with respect to u, in the
        # direction v, gives J v.
        grad_outputs = tuple(output.new_zeros(output.shape).requires_grad_(True)
                             for output in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    with set_grad_enabled(True) if create_graph else nullcontext():
        grads = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grads, outputs, strict, create_graph, "back_trick")
    return (_unpack(_finish(outputs, create_graph), outputs_is_tuple),
            _unpack(_finish(result, create_graph), outputs_is_tuple))


def jacobian(func: Callable, inputs, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for output i and input j, a tensor of shape
    ``output_i.shape + input_j.shape`` (nested tuples as torch returns them).

    >>> import tracegrad as torch
    >>> from tracegrad.autograd.functional import jacobian
    >>> jacobian(lambda t: t ** 2, torch.tensor([1.0, 2.0]))
    tensor([[2., 0.],
            [0., 4.]])
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more '
            'performant. Otherwise, prefer to use "reverse-mode".')
    _refuse_unimplemented("jacobian", vectorize, strategy, strict, create_graph)
    with enable_grad():
        inputs_is_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        outputs_is_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        result = tuple(_jacobian_of_output(index, output, inputs, create_graph, strict)
                       for index, output in enumerate(outputs))
        result = _finish(result, create_graph)
        return _unpack(result, (outputs_is_tuple, inputs_is_tuple))


def _jacobian_of_output(index: int, output, inputs: tuple, create_graph: bool,
                        strict: bool) -> tuple:
    """d output / d input_j for every j: one backward pass per element of ``output``."""
    from .._functions import stack  # tracegrad's torch.stack; loads after autograd

    rows: tuple[list, ...] = tuple([] for _ in inputs)
    flat = output.reshape(-1)
    for element in range(output.numel()):
        grads = _autograd_grad((flat[element],), inputs, retain_graph=True,
                               create_graph=create_graph)
        for input_index, (grad_value, tensor) in enumerate(zip(grads, inputs)):
            if grad_value is None:
                if strict:
                    raise RuntimeError(
                        f"Output {index} of the user-provided function is independent of "
                        f"input {input_index}. This is not allowed in strict mode.")
                grad_value = tensor.new_zeros(tensor.shape)
            elif strict and create_graph and not grad_value.requires_grad:
                raise RuntimeError(
                    f"The jacobian of the user-provided function is independent of input "
                    f"{index}. This is not allowed in strict mode when create_graph=True.")
            rows[input_index].append(grad_value)
    return tuple(stack(input_rows, 0).view(tuple(output.shape) + tuple(tensor.shape))
                 for input_rows, tensor in zip(rows, inputs))


def hessian(func: Callable, inputs, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of a scalar function: for inputs i and j, a tensor of shape
    ``input_i.shape + input_j.shape``.

    >>> import tracegrad as torch
    >>> from tracegrad.autograd.functional import hessian
    >>> hessian(lambda t: (t ** 3).sum(), torch.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    inputs_is_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or '
                             '"reverse-mode".')
    _refuse_unimplemented("hessian", vectorize, outer_jacobian_strategy, strict, create_graph)

    def scalar_output(*values):
        output = func(*values)
        output_is_tuple, outputs = _as_tuple(
            output, "outputs of the user-provided function", "hessian")
        _check_requires_grad(outputs, "outputs", strict)
        if output_is_tuple:
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if output.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return output.squeeze()

    def jacobian_of_scalar(*values):
        gradients = jacobian(scalar_output, values, create_graph=True)
        _check_requires_grad(gradients, "jacobian", strict)
        return gradients

    result = jacobian(jacobian_of_scalar, inputs, create_graph=create_graph, strict=strict)
    return _unpack(result, (inputs_is_tuple, inputs_is_tuple))


def vhp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), v^T H) for a scalar function.

    >>> import tracegrad as torch
    >>> from tracegrad.autograd.functional import vhp
    >>> vhp(lambda t: (t ** 3).sum(), torch.tensor([1.0, 2.0]), torch.ones(2))
    (tensor(9.), tensor([ 6., 12.]))
    """
    with enable_grad():
        inputs_is_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _prepare(inputs, create_graph=create_graph, need_graph=True)
        v = _v_or_scalar(v, inputs, inputs_is_tuple, "vhp", create_graph,
                         "the input to the user-provided function is")
        outputs = _scalar_outputs(func, inputs, "vhp", strict)
        gradients = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(gradients, "jacobian", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grads = _autograd_grad(gradients, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grads, inputs, strict, create_graph, "double_back")
    return (_unpack(_finish(outputs, create_graph), False),
            _unpack(_finish(result, create_graph), inputs_is_tuple))


def hvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), H v) for a scalar function, by the double-backward trick (equal to
    vhp when the Hessian is symmetric, as it is for twice-differentiable functions).

    >>> import tracegrad as torch
    >>> from tracegrad.autograd.functional import hvp
    >>> hvp(lambda t: (t ** 3).sum(), torch.tensor([1.0, 2.0]), torch.ones(2))
    (tensor(9.), tensor([ 6., 12.]))
    """
    with enable_grad():
        inputs_is_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _prepare(inputs, create_graph=create_graph, need_graph=True)
        v = _v_or_scalar(v, inputs, inputs_is_tuple, "hvp", create_graph,
                         "the input to the user-provided function is")
        outputs = _scalar_outputs(func, inputs, "hvp", strict)
        gradients = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(gradients, "jacobian", strict)
        grad_gradients = tuple(tensor.new_zeros(tensor.shape).requires_grad_(True)
                               for tensor in inputs)
        double_back = _autograd_grad(gradients, inputs, grad_gradients, create_graph=True)
        _check_requires_grad(gradients, "hessian", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grads = _autograd_grad(double_back, grad_gradients, v, create_graph=create_graph)
        result = _fill_in_zeros(grads, inputs, strict, create_graph, "double_back_trick")
    return (_unpack(_finish(outputs, create_graph), False),
            _unpack(_finish(result, create_graph), inputs_is_tuple))


def _scalar_outputs(func: Callable, inputs: tuple, fn_name: str, strict: bool) -> tuple:
    outputs_is_tuple, outputs = _as_tuple(
        func(*inputs), "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict)
    if outputs_is_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           "contain a single element")
    return outputs


def _refuse_unimplemented(fn_name: str, vectorize: bool, strategy: str, strict: bool,
                          create_graph: bool) -> None:
    """torch's errors for the combinations it refuses, then tracegrad's for the modes it
    does not implement (both need vmap or forward-mode AD)."""
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either '
                'set `create_graph=False` or `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError(
                "torch.autograd.functional.jacobian: `strict=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either '
                'set `strict=False` or `strategy="reverse-mode"`.')
        raise NotImplementedError(
            f"torch.autograd.functional.{fn_name}: tracegrad does not implement "
            'strategy="forward-mode" (it has no forward-mode AD). Hint: use the default '
            'strategy="reverse-mode"; the values are the same.')
    if vectorize:
        if strict:
            raise RuntimeError(
                "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are "
                "not supported together. Please either set `strict=False` or "
                "`vectorize=False`.")
        raise NotImplementedError(
            f"torch.autograd.functional.{fn_name}: tracegrad does not implement "
            "vectorize=True (it needs vmap). Hint: leave vectorize=False; the values are "
            "the same, computed one output element at a time.")
