"""Every op, forward and backward side by side, one family per module.

The registry (``registry()``) is the one list of what exists: gradchecks, docs and the
graph legend read it.
"""

from __future__ import annotations

# Tensor first: every op module imports it, and tensor.py binds the op modules into its
# methods as it finishes loading (tracegrad._methods.bind_ops).
from .. import tensor as _tensor  # noqa: F401, I001
from ..autograd.function import Op


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
        conversion,
        convolution,
        embedding,
        indexing,
        linalg,
        loss,
        normalization,
        padding,
        pixel_shuffle,
        pooling,
        recurrent,
        reduce,
        resample,
        shape,
        unary,
    )

    found: dict[str, type] = {}
    pending = list(Op.__subclasses__())
    while pending:
        op = pending.pop()
        pending.extend(op.__subclasses__())
        if op.__module__.startswith(__name__ + "."):
            found[op.__name__] = op
    return dict(sorted(found.items()))
