"""``einsum``, taking torch's steps so the graph is torch's node for node.

Every operand is first brought to one common dim order: the output's dims, then the
dims to be summed out (a broadcast ``...`` not in the output first, then the letters in
``A-Za-z`` order). A letter repeated within an operand takes a diagonal; a letter an
operand lacks becomes an unsqueezed dim of size 1; then one permute aligns it (recorded
even when it changes nothing, as torch's is). Operands are then multiplied left to right
in pairs: a dim only one side of the pair still needs is summed (keeping the dim) before
the product, and dims both sides share and nobody later needs are contracted with one
``bmm`` between a permute + reshape of each side and a view + permute of the result.
Contracted dims stay as size-1 dims until the end, where one view drops them.
"""

from __future__ import annotations

from ..errors import InvalidValueError, ShapeError
from ..tensor import Tensor

_ELLIPSIS = "..."


def _labels(term: str, offset: int, operand: int | None) -> list:
    """The labels of one term, ``...`` kept as one item; ``offset`` is where the term
    starts in the equation (for torch's error message about a bad character)."""
    labels, index, found = [], 0, False
    while index < len(term):
        char = term[index]
        if char == " ":
            pass
        elif char == ".":
            if found:
                raise InvalidValueError(
                    f"einsum(): found '.' for operand {operand} for which an ellipsis was "
                    "already found" if operand is not None else
                    "einsum(): found '.' for output but an ellipsis (...) was already found")
            if term[index:index + 3] != _ELLIPSIS or index + 2 >= len(term):
                raise InvalidValueError(
                    f"einsum(): found '.' for operand {operand} that is not part of any "
                    "ellipsis" if operand is not None else
                    "einsum(): found '.' for output that is not part of any ellipsis (...)")
            labels.append(_ELLIPSIS)
            found = True
            index += 2
        elif char.isascii() and char.isalpha():
            labels.append(char)
        else:
            raise InvalidValueError(f"einsum(): invalid subscript given at index "
                                    f"{offset + index} in the equation string, subscripts "
                                    "must be in [a-zA-Z]")
        index += 1
    return labels


def parse(equation: str, operands) -> tuple[list[list], list | None]:
    """Labels per operand and for the output (None when the equation has no arrow)."""
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) > len(operands):
        raise InvalidValueError(
            "einsum(): fewer operands were provided than specified in the equation")
    offsets, start = [], 0
    for term in terms:
        offsets.append(start)
        start += len(term) + 1
    inputs = [_labels(term, offset, position)
              for position, (term, offset) in enumerate(zip(terms, offsets))]
    if len(terms) < len(operands):
        raise InvalidValueError(
            "einsum(): more operands were provided than specified in the equation")
    output = _labels(rhs, len(lhs) + 2, None) if arrow else None
    return inputs, output


def _layout(inputs: list, output: list | None, operands):
    """The common dim order: a list of keys (a letter, or an int for a dim of the
    broadcast ``...``), and how many of them the output keeps."""
    counts: dict[str, int] = {}
    ellipsis_dims = 0
    for position, (labels, operand) in enumerate(zip(inputs, operands)):
        ndim = operand._array.ndim
        named = len([label for label in labels if label != _ELLIPSIS])
        has_ellipsis = _ELLIPSIS in labels
        if has_ellipsis:
            ellipsis_dims = max(ellipsis_dims, ndim - named)
        for label in labels:
            if label != _ELLIPSIS:
                counts[label] = counts.get(label, 0) + 1
        if (named > ndim) if has_ellipsis else (named != ndim):
            raise ShapeError(
                f"einsum(): the number of subscripts in the equation ({named}) "
                + (f"is more than the number of dimensions ({ndim}) for operand {position}"
                   if has_ellipsis else
                   f"does not match the number of dimensions ({ndim}) for operand "
                   f"{position} and no ellipsis was given"))
    ellipsis = list(range(ellipsis_dims))
    if output is None:  # implicit: the ``...`` dims, then each letter seen once, sorted
        order = ellipsis + sorted(label for label, count in counts.items() if count == 1)
        ellipsis_kept = True
    else:
        order, ellipsis_kept = [], False
        for label in output:
            if label == _ELLIPSIS:
                order.extend(ellipsis)
                ellipsis_kept = True
            elif label in order or label not in counts:
                raise InvalidValueError(
                    f"einsum(): output subscript {label} "
                    + ("appears more than once in the output" if label in order else
                       "does not appear in the equation for any input operand"))
            else:
                order.append(label)
    kept = len(order)
    if not ellipsis_kept:
        order.extend(ellipsis)
    order.extend(sorted(label for label in counts if label not in order))
    return order, kept, ellipsis_dims


def _aligned(operands, inputs, order, ellipsis_dims):
    """Each operand with torch's diagonals, unsqueezes and permute into ``order``, and
    for each dim how many operands have it with a size other than 1."""
    place = {key: index for index, key in enumerate(order)}
    label_sizes: dict[str, int] = {}
    ellipsis_sizes = [1] * ellipsis_dims
    holders = [0] * len(order)
    aligned = []
    for position, (tensor, labels) in enumerate(zip(operands, inputs)):
        permutation = [None] * len(order)
        dim = 0
        for label in labels:
            if label == _ELLIPSIS:
                covered = tensor._array.ndim - (len(labels) - 1)
                for key in range(ellipsis_dims - covered, ellipsis_dims):
                    size = tensor.shape[dim]
                    if size != 1:
                        if ellipsis_sizes[key] not in (1, size):
                            raise ShapeError(
                                f"einsum(): dimension {dim} covered by ellipsis in operand "
                                f"{position}has size {size} which does not broadcast with "
                                f"previously seen ellipsis with size {ellipsis_sizes[key]} "
                                "for the respective dimension")
                        ellipsis_sizes[key] = size
                        holders[place[key]] += 1
                    permutation[place[key]] = dim
                    dim += 1
            elif permutation[place[label]] is None:
                size = tensor.shape[dim]
                if size != 1:
                    known = label_sizes.get(label, 1)
                    if known not in (1, size):
                        raise ShapeError(
                            f"einsum(): subscript {label} has size {size} for operand "
                            f"{position} which does not broadcast with previously seen "
                            f"size {known}")
                    label_sizes[label] = size
                    holders[place[label]] += 1
                permutation[place[label]] = dim
                dim += 1
            else:  # the letter again in this operand: its diagonal, where it first was
                first = permutation[place[label]]
                if tensor.shape[dim] != tensor.shape[first]:
                    raise ShapeError(
                        f"einsum(): subscript {label} is repeated for operand {position} "
                        f"but the sizes don't match, {tensor.shape[dim]} != "
                        f"{tensor.shape[first]}")
                tensor = tensor.diagonal(0, first, dim).movedim(-1, first)
        for index, source in enumerate(permutation):
            if source is None:  # a dim this operand lacks, as size 1 at the end
                tensor = tensor.unsqueeze(dim)
                permutation[index] = dim
                dim += 1
        aligned.append(tensor.permute(*permutation))
    return aligned, holders


def _pair_product(left: Tensor, right: Tensor, summed: list) -> Tensor:
    """``(left * right).sum(summed, keepdim=True)`` for two aligned operands, as one bmm
    of (shared, left only, summed) by (shared, summed, right only)."""
    if not summed:
        return left * right
    shared, left_only, right_only = [], [], []
    for dim in range(left.dim()):
        if dim in summed:
            continue
        on_left, on_right = left.shape[dim] != 1, right.shape[dim] != 1
        if on_left and on_right:
            shared.append(dim)
        elif on_left:
            left_only.append(dim)
        else:
            right_only.append(dim)
    if left_only and right_only and left_only[-1] > right_only[-1]:
        # torch swaps the pair when the last dim only one side has is the left's, so
        # that the product's columns are that dim
        left, right, left_only, right_only = right, left, right_only, left_only
    result_order = shared + left_only + summed + right_only
    result_shape = ([left.shape[d] for d in shared + left_only] + [1] * len(summed)
                    + [right.shape[d] for d in right_only])
    left = left.permute(*result_order).reshape(
        _product(left.shape[d] for d in shared), _product(left.shape[d] for d in left_only),
        _product(left.shape[d] for d in summed))
    right = right.permute(*(shared + summed + right_only + left_only)).reshape(
        _product(right.shape[d] for d in shared), _product(right.shape[d] for d in summed),
        _product(right.shape[d] for d in right_only))
    from .linalg import Bmm

    product = Bmm.apply(left, right).view(*result_shape)
    back = [0] * len(result_order)
    for index, dim in enumerate(result_order):
        back[dim] = index
    return product.permute(*back)


def _product(values) -> int:
    result = 1
    for value in values:
        result *= value
    return result


def einsum(equation: str, *operands) -> Tensor:
    """Einstein summation, e.g. ``einsum("bij,bjk->bik", a, b)``.

    >>> import tracegrad as torch
    >>> torch.einsum("ij,j->i", torch.ones(2, 3), torch.arange(3.0))
    tensor([3., 3.])
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise InvalidValueError("einsum(): must provide at least one operand")
    inputs, output = parse(equation, operands)
    order, kept, ellipsis_dims = _layout(inputs, output, operands)
    tensors, holders = _aligned(operands, inputs, order, ellipsis_dims)
    while len(tensors) > 1:
        left, right = tensors.pop(0), tensors.pop(0)
        summed, left_alone, right_alone = [], [], []
        for dim in range(kept, len(order)):
            on_left, on_right = left.shape[dim] != 1, right.shape[dim] != 1
            if on_left and on_right:
                holders[dim] -= 1
                if holders[dim] == 1:  # no later operand has it: contract it now
                    summed.append(dim)
                    holders[dim] = 0
            elif holders[dim] == 1:  # only one side has it and nobody later does
                if on_left:
                    left_alone.append(dim)
                    holders[dim] = 0
                elif on_right:
                    right_alone.append(dim)
                    holders[dim] = 0
        if left_alone:
            left = left.sum(left_alone, keepdim=True)
        if right_alone:
            right = right.sum(right_alone, keepdim=True)
        tensors.insert(0, _pair_product(left, right, summed))
    result = tensors[0]
    if len(order) == kept:
        return result
    if len(operands) > 1:  # every summed dim already has size 1
        return result.view(*result.shape[:kept])
    return result.sum(list(range(kept, len(order))))
