"""PyTorch's edges where they are not "one per tensor argument".

The engine wires one ``next_functions`` edge per tensor argument of an op. PyTorch's
edges are its differentiable inputs instead, which differs in two ways:

* a Python number operand of ``+ - * /`` is wrapped into a tensor and gets an edge of its
  own, ``(None, 0)``: ``(x * 2).grad_fn.next_functions`` has two entries;
* an index, mask or condition tensor (``where``'s condition, ``masked_fill``'s mask,
  ``gather``'s index, ``nll_loss``'s target) is no input of the derivative: no edge.

An op whose edges differ calls ``select_edges`` (or ``number_edge``) from its forward, which
runs after the wiring; the node's per-argument ``needs_input_grad`` and its backward's
results (one per argument) stay as they are, and the engine maps results to edges through
``_arg_slots``. With nothing recorded (``needs_input_grad`` empty) they do nothing.
"""

from __future__ import annotations

from ..autograd.node import _TUPLE_EDGES, ZERO_NRS, edge_numbers

_NUMBER_META = ((), None)  # (shape, dtype) of an edge that never receives a gradient


def number_edge(ctx, position: int) -> None:
    """Give the Python number at argument ``position`` of a binary op its ``(None, 0)``
    edge, in argument order (``x * 2`` and ``x.add(2)``: two edges, as in PyTorch).

    >>> import tracegrad as torch
    >>> x = torch.ones(2, requires_grad=True)
    >>> [node is None for node, _ in (x * 2).grad_fn.next_functions]
    [False, True]
    """
    if not ctx.needs_input_grad:
        return
    # Two arguments, one of them a tensor: the tensor's edge is the only one so far, in
    # the node's _next0 (connect's one-tensor case). (The node's flat edge fields, written
    # directly -- two edges as two attributes, see Node._next_nodes: this runs for every
    # recorded x * 2.)
    tensor_node, tensor_nr = ctx._next0, ctx._next_nrs[0]
    if position:
        ctx._next1 = None
        ctx._next_nrs = (tensor_nr, 0) if tensor_nr else ZERO_NRS[2]
        ctx._input_meta = (ctx._input_meta[0], _NUMBER_META)
    else:
        ctx._next0, ctx._next1 = None, tensor_node
        ctx._next_nrs = (0, tensor_nr) if tensor_nr else ZERO_NRS[2]
        ctx._input_meta = (_NUMBER_META, ctx._input_meta[0])
    ctx._arg_slots, ctx._num_args = (0, 1), 2


def select_edges(ctx, positions: tuple) -> None:
    """Keep edges only for the arguments at ``positions`` (in that order): a tensor there
    keeps its edge, anything else there (a number, None) gets ``(None, 0)``, and tensors at
    other positions (indices, masks) lose theirs.

    >>> import tracegrad as torch
    >>> x = torch.ones(3, requires_grad=True)
    >>> mask = torch.tensor([True, False, True])
    >>> len(torch.where(mask, x, 0.0).grad_fn.next_functions)  # x and the number
    2
    """
    if not ctx.needs_input_grad:
        return
    slots, metas = ctx._arg_slots, ctx._input_meta
    next_nodes, next_nrs = ctx._next_nodes, ctx._next_nrs
    if slots is None:  # every argument is a tensor: edge i is argument i
        slots = range(len(next_nodes))
    kept_nodes, kept_nrs, kept_metas = [], [], []
    for position in positions:
        if position in slots:
            index = slots.index(position)
            kept_nodes.append(next_nodes[index])
            kept_nrs.append(next_nrs[index])
            kept_metas.append(metas[index])
        else:
            kept_nodes.append(None)
            kept_nrs.append(0)
            kept_metas.append(_NUMBER_META)
    ctx._next_nodes, ctx._next_nrs = tuple(kept_nodes), edge_numbers(tuple(kept_nrs))
    ctx._next1 = _TUPLE_EDGES  # (the tuple, no longer _next0/_next1: see Node._next_nodes)
    ctx._input_meta = tuple(kept_metas)
    ctx._arg_slots, ctx._num_args = tuple(positions), len(ctx.needs_input_grad)
