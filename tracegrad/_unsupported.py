"""The error for a torch name tracegrad does not implement, in one place.

Every namespace that mirrors one of torch's (``tracegrad``, ``Tensor``, ``tracegrad.nn``,
``tracegrad.nn.functional``, ``tracegrad.linalg``, ...) answers a miss the same way: an
``AttributeError`` (so ``hasattr`` and ``getattr(x, name, default)`` keep working) that says
which torch name is missing and how to observe the script on real PyTorch instead.

A module uses it from its ``__getattr__``::

    def __getattr__(name: str):
        raise missing_attribute("torch.nn", name, "module 'tracegrad.nn'")

>>> from tracegrad._unsupported import missing_attribute
>>> print(missing_attribute("torch.linalg", "matrix_exp", "module 'tracegrad.linalg'"))
tracegrad does not implement torch.linalg.matrix_exp (module 'tracegrad.linalg' has no attribute 'matrix_exp'). A script that uses it can still be observed on real PyTorch: keep `import torch` and run it with `tracegrad run`.
"""

from __future__ import annotations


def missing_attribute(torch_namespace: str, name: str, owner: str) -> AttributeError:
    """The ``AttributeError`` for ``<owner>.<name>``, which mirrors ``<torch_namespace>``.

    ``owner`` is Python's own wording for the object (``"module 'tracegrad.nn'"``,
    ``"'Tensor' object"``), kept in the message so it still reads like Python's.
    Private and dunder names are not torch API: they get Python's plain message, so
    protocols that probe for them (copy, pickle, numpy) see an ordinary miss.
    """
    plain = f"{owner} has no attribute '{name}'"
    if name.startswith("_"):
        return AttributeError(plain)
    return AttributeError(
        f"tracegrad does not implement {torch_namespace}.{name} ({plain}). A script that "
        "uses it can still be observed on real PyTorch: keep `import torch` and run it "
        "with `tracegrad run`.")
