"""``grad_fn._saved_<name>`` values that torch shows in another form than the op keeps.

Most saved values are declared in an op's ``saved_names`` (``"keepdim=keepdim"``); the
ones here need a conversion, done when the attribute is read, so the forward pays no more
than storing the value as given.

>>> import tracegrad as torch
>>> x = torch.ones(2, 3, requires_grad=True)
>>> torch.softmax(x, -1).grad_fn._saved_dim == 2 ** 64 - 1  # as torch 2.13 shows it
True
>>> torch.nn.functional.mse_loss(x, x.detach()).grad_fn._saved_reduction
1
"""
from __future__ import annotations

from collections.abc import Callable

_UINT64 = 1 << 64
# torch's Reduction enum, which its loss nodes save in place of the string
REDUCTION_ENUM = {"none": 0, "mean": 1, "sum": 2}


def as_torch_int(value) -> int:
    """A saved int64 as torch's node shows it: through an unsigned conversion, so a
    negative value (dim=-1, ignore_index=-100) reads ``2**64 + value``."""
    value = int(value)
    return value + _UINT64 if value < 0 else value


def as_torch_ints(values) -> tuple[int, ...] | None:
    """A saved int list (``dim`` of sum/mean/var) as torch shows it: a tuple, as given
    (not wrapped or sorted), each item as :func:`as_torch_int` shows it."""
    if values is None:
        return None
    if isinstance(values, (list, tuple)):
        return tuple(as_torch_int(value) for value in values)
    return (as_torch_int(values),)


def show_saved(op, name: str, read: Callable) -> None:
    """Give ``op``'s nodes a ``_saved_<name>`` property that returns ``read(node)``."""
    setattr(op._node_class, f"_saved_{name}", property(read))


def show_given(op, names: tuple, attribute: str = "given") -> None:
    """``_saved_<name>`` for each of ``names``: the int the op was given at that position of
    the node's ``attribute`` tuple, as :func:`as_torch_int` shows it (diagonal's offset,
    dim1, dim2)."""
    for index, name in enumerate(names):
        show_saved(op, name, lambda node, index=index: as_torch_int(
            getattr(node, attribute)[index]))


def show_input_sizes(op, name: str = "self_sym_sizes", edge: int = 0) -> None:
    """``_saved_<name>``: the shape of the op's tensor input at ``edge`` (torch's saved
    ``self.sym_sizes()``), read from the node's input metadata."""
    show_saved(op, name, lambda node: tuple(node._input_meta[edge][0]))


def show_dim_and_sizes(*ops) -> None:
    """``_saved_dim`` (as given) and ``_saved_self_sym_sizes`` (the input's shape) for ops
    along one dim that keep them as torch's nodes do (sort, topk, median, mode, ...)."""
    for op in ops:
        show_saved(op, "dim", lambda node: as_torch_int(node.given))
        show_saved(op, "self_sym_sizes", lambda node: tuple(node._input_meta[0][0]))
