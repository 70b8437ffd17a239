"""Every op, forward and backward side by side, one family per module.

The registry (``registry()``) is the one list of what exists: gradchecks, docs and the
graph legend read it.
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
