"""Every op, forward and backward side by side, one family per module.

The registry (``registry()``) is the one list of what exists: gradchecks, docs and the
graph legend read it.

Writing an op's backward -- one formula, run two ways. ``backward(ctx, grad)`` returns one
gradient per forward argument (None where none is needed). Without ``create_graph`` the
engine builds no graph of the backward pass, so it hands the formula backend arrays
(NumPy/CuPy) and ``ctx.saved_tensors`` gives arrays too: every step is one array call. With
``create_graph`` (and when a node is called directly) the same formula gets Tensors and
records itself, which is what makes second derivatives work. To be run on arrays, an op
sets ``array_backward = True`` and writes its formula with what both kinds of value share:

- Python's operators (``+ - * / **``, unary ``-``, comparisons) between the gradient, the
  saved values and plain numbers;
- ``.shape``/``.ndim`` of the gradient and saved values, ``ctx``'s own attributes;
- the functions of ``tracegrad.ops._math`` (``where``, ``sum_keepdims``, ``matmul``, ...)
  for anything else: each has an array and a Tensor implementation and picks by what it
  is given; ``_math.apply(Op, ...)`` runs another op as a step (recorded beside Tensors,
  its forward on the arrays otherwise).

A result may be a NumPy scalar or broadcast wider than its input (as ``a * b`` gives it for
broadcast operands), or of a promoted dtype: the engine sums it down to the input's shape
and casts it to the input's dtype, in one place, as torch's ``validate_outputs`` does -- so
a formula need not. An op whose formula still needs Tensor methods leaves
``array_backward`` False (the default): it then always runs on Tensors, the engine
wrapping the arrays for it -- correct, just slower; tests/test_array_backward_coverage.py
asks for a reason. A subclass that replaces ``backward`` says again whether its own
formula runs on arrays.
"""

from __future__ import annotations

# Tensor first: every op module imports it, and tensor.py binds the op modules into its
# methods as it finishes loading (tracegrad._methods.bind_ops).
from .. import tensor as _tensor  # noqa: F401
from ..autograd.function import Op


def __getattr__(name: str):
    """``tracegrad.ops`` is tracegrad's op classes; torch.ops (``torch.ops.aten.add``, custom
    operator namespaces) is something else, which tracegrad does not have."""
    import importlib
    import importlib.util

    if importlib.util.find_spec(f"{__name__}.{name}") is not None:  # an op module not
        return importlib.import_module(f".{name}", __name__)        # imported yet
    if name.startswith("_"):
        raise AttributeError(f"module 'tracegrad.ops' has no attribute '{name}'")
    raise AttributeError(
        f"tracegrad does not implement torch.ops (torch.ops.{name} is PyTorch's operator "
        f"registry; tracegrad.ops holds tracegrad's own op classes, listed by "
        "tracegrad.ops.registry()). A script that uses torch.ops can still be observed on "
        "real PyTorch: keep `import torch` and run it with `tracegrad run`.")


def registry() -> dict[str, type]:
    """op class name -> op class, for every built-in op, sorted by name.

    Keyed by the class (``"Mul"``, ``"View"``), not by the node name, because several ops
    share one PyTorch node name (``ToDtype`` and ``ToDevice`` are both ``ToCopyBackward0``).
    The node name is ``op._node_class._name``.

    >>> from tracegrad import ops
    >>> ops.registry()["Mul"]._node_class._name
    'MulBackward0'
    """
    from . import (  # noqa: F401 - imported to register their ops
        activation,
        arith,
        attention,
        binary,
        conversion,
        convolution,
        decompositions,
        distance,
        embedding,
        indexing,
        linalg,
        loss,
        matrices,
        normalization,
        norms,
        padding,
        pixel_shuffle,
        pointwise,
        pooling,
        rearrange,
        recurrent,
        reduce,
        resample,
        rrelu,
        sampling,
        scan,
        selection,
        shape,
        sorting,
        statistics,
        unary,
    )

    found: dict[str, type] = {}
    pending = list(Op.__subclasses__())
    while pending:
        op = pending.pop()
        pending.extend(op.__subclasses__())
        # a name with a leading underscore is a shared base, never applied itself
        if op.__module__.startswith(__name__ + ".") and not op.__name__.startswith("_"):
            found[op.__name__] = op
    return dict(sorted(found.items()))
