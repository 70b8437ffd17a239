"""``einsum``, built from permute, reshape, sum, diagonal and bmm, the way torch
contracts: operands left to right, each pair as one batched matrix product.

So the graph shows the products that ran (BmmBackward0 with the views around it) rather
than one opaque node, and the gradients come from those ops' backward.
"""

from __future__ import annotations

import string

from ..errors import InvalidValueError, ShapeError
from ..tensor import Tensor


def parse(equation: str, operands) -> tuple[list[str], str]:
    """Subscripts per operand and for the output, with ``...`` spelled out as letters."""
    equation = equation.replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise InvalidValueError(
            "einsum(): more operands were provided than specified in the equation"
            if len(operands) > len(terms) else
            "einsum(): fewer operands were provided than specified in the equation")
    used = set(equation) - set(".,->")
    spare = iter(letter for letter in string.ascii_letters if letter not in used)
    ellipsis_letters = None
    expanded = []
    for term, operand in zip(terms, operands):
        ndim = operand._array.ndim
        if "..." in term:
            explicit = len(term) - 3
            count = ndim - explicit
            if count < 0:
                raise ShapeError(f"einsum(): the number of subscripts in the equation "
                                 f"({explicit}) is more than the number of dimensions ({ndim}) "
                                 f"for operand {len(expanded)}")
            if ellipsis_letters is None:
                ellipsis_letters = ""
            while len(ellipsis_letters) < count:
                ellipsis_letters = next(spare) + ellipsis_letters
            term = term.replace("...", ellipsis_letters[len(ellipsis_letters) - count:])
        elif len(term) != ndim:
            raise ShapeError(
                f"einsum(): the number of subscripts in the equation ({len(term)}) does not "
                f"match the number of dimensions ({ndim}) for operand {len(expanded)} and no "
                "ellipsis was given")
        for letter in term:
            if letter not in string.ascii_letters:
                raise InvalidValueError(f"einsum(): invalid subscript given at index "
                                        f"{equation.index(letter)} in the equation string, "
                                        "subscripts must be in [a-zA-Z]")
        expanded.append(term)
    if arrow:
        if "..." in output:
            output = output.replace("...", ellipsis_letters or "")
    else:  # implicit output: the ellipsis, then every letter seen once, sorted
        counts = {}
        for term in expanded:
            for letter in term:
                counts[letter] = counts.get(letter, 0) + 1
        ellipsis = ellipsis_letters or ""
        output = ellipsis + "".join(sorted(letter for letter, count in counts.items()
                                           if count == 1 and letter not in ellipsis))
    return expanded, output


def _take_diagonals(tensor: Tensor, term: str) -> tuple[Tensor, str]:
    """A letter repeated in one operand ('ii') selects the diagonal."""
    while True:
        seen = {}
        repeat = None
        for position, letter in enumerate(term):
            if letter in seen:
                repeat = (seen[letter], position)
                break
            seen[letter] = position
        if repeat is None:
            return tensor, term
        first, second = repeat
        tensor = tensor.diagonal(0, first, second)  # the diagonal becomes the last dim
        tensor = tensor.movedim(-1, first)  # back where the letter first appeared
        letter = term[first]
        rest = [t for i, t in enumerate(term) if i not in (first, second)]
        term = "".join(rest[:first]) + letter + "".join(rest[first:])


def _sum_out(tensor: Tensor, term: str, keep: set) -> tuple[Tensor, str]:
    axes = tuple(i for i, letter in enumerate(term) if letter not in keep)
    if not axes:
        return tensor, term
    return tensor.sum(dim=axes), "".join(letter for letter in term if letter in keep)


def _sizes(operands, terms) -> dict:
    sizes: dict[str, int] = {}
    for operand, term in zip(operands, terms):
        for letter, size in zip(term, operand._array.shape):
            known = sizes.get(letter)
            if known is None or known == 1:
                sizes[letter] = size
            elif size != 1 and size != known:
                raise ShapeError(
                    f"einsum(): operands do not broadcast with remapped shapes "
                    f"(original->remapped): subscript '{letter}' has size {known} and "
                    f"{size} ({operand._describe()})")
    return sizes


def _contract_pair(left, left_term, right, right_term, keep: set, sizes: dict):
    """One pair: batch letters (in both, kept), contracted (in both, not kept), and the
    letters of one side only, as (batch, rows, inner) @ (batch, inner, columns)."""
    batch = [x for x in left_term if x in right_term and x in keep]
    inner = [x for x in left_term if x in right_term and x not in keep]
    rows = [x for x in left_term if x not in right_term]
    columns = [x for x in right_term if x not in left_term]
    if not inner:  # nothing to contract: a broadcast product, as torch does it
        term = batch + rows + columns
        left = _arranged(left, left_term, batch + rows, sizes, unexpanded=True)
        right = _arranged(right, right_term, batch + columns, sizes, unexpanded=True)
        left = left.reshape(tuple(left.shape) + (1,) * len(columns)) if columns else left
        if rows:
            right_shape = tuple(right.shape)
            right = right.reshape(right_shape[:len(batch)] + (1,) * len(rows) +
                                  right_shape[len(batch):])
        return left * right, "".join(term)
    left = _arranged(left, left_term, batch + rows + inner, sizes)
    right = _arranged(right, right_term, batch + inner + columns, sizes)
    count = _product(sizes[x] for x in batch)
    left = left.reshape(count, _product(sizes[x] for x in rows),
                        _product(sizes[x] for x in inner))
    right = right.reshape(count, _product(sizes[x] for x in inner),
                          _product(sizes[x] for x in columns))
    from .linalg import Bmm

    product = Bmm.apply(left, right)
    term = batch + rows + columns
    return product.reshape(tuple(sizes[x] for x in term)), "".join(term)


def _arranged(tensor, term: str, order: list, sizes: dict, unexpanded: bool = False):
    """``tensor`` permuted into ``order`` and expanded where a broadcast dim has size 1."""
    if list(term) != order:
        tensor = tensor.permute(*(term.index(letter) for letter in order))
    if unexpanded:
        return tensor
    target = tuple(sizes[letter] for letter in order)
    if tuple(tensor.shape) != target:
        tensor = tensor.expand(*target)
    return tensor


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
    terms, output = parse(equation, operands)
    for letter in output:
        if not any(letter in term for term in terms):
            raise InvalidValueError(f"einsum(): output subscript {letter} does not appear in "
                                    "the equation for any input operand")
    sizes = _sizes(operands, terms)
    tensors = []
    for operand, term in zip(operands, terms):
        tensor, term = _take_diagonals(operand, term)
        tensors.append((tensor, term))
    result, term = tensors[0]
    for position in range(1, len(tensors)):
        later = set(output).union(*(t for _, t in tensors[position + 1:]))
        right, right_term = tensors[position]
        result, term = _sum_out(result, term, later | set(right_term))
        right, right_term = _sum_out(right, right_term, later | set(term))
        result, term = _contract_pair(result, term, right, right_term, later, sizes)
    result, term = _sum_out(result, term, set(output))
    if term != output:
        result = result.permute(*(term.index(letter) for letter in output))
    return result
