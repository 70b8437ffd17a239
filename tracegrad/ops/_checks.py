"""Input checks with torch's errors for shape ops whose classes live in shape.py: expand's
sizes and narrow's bounds (issue 16: NumPy would accept the first silently, wrapping a
-1 in a new leading dim, and clip the second).
"""

from __future__ import annotations

from ..errors import InvalidValueError, OutOfRangeError, ShapeError


def expand_shape(tensor, sizes) -> tuple:
    """The target shape of ``tensor.expand(*sizes)`` with -1 resolved, or torch's error."""
    shape = tensor._array.shape
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise ShapeError(
            f"expand({tensor.dtype.name} {list(shape)}, size={list(sizes)}): the number of "
            f"sizes provided ({len(sizes)}) must be greater or equal to the number of "
            f"dimensions in the tensor ({len(shape)}). Hint: expand can add leading "
            "dimensions but not drop any; reshape or squeeze first.")
    resolved = []
    for axis, size in enumerate(sizes):
        size = int(size)
        if axis < lead:
            if size == -1:
                raise ShapeError(
                    f"The expanded size of the tensor (-1) isn't allowed in a leading, "
                    f"non-existing dimension {axis} (expanding {tensor._describe()} to "
                    f"{list(sizes)}). Hint: -1 keeps an existing size; a new leading "
                    "dimension needs an explicit size.")
            if size < 0:
                raise InvalidValueError(
                    f"expand: size {size} at dimension {axis} is negative (expanding "
                    f"{tensor._describe()}). Hint: sizes are non-negative, or -1 to keep "
                    "an existing one.")
            resolved.append(size)
            continue
        existing = shape[axis - lead]
        if size == -1:
            resolved.append(existing)
        elif size != existing and existing != 1:
            raise ShapeError(
                f"The expanded size of the tensor ({size}) must match the existing size "
                f"({existing}) at non-singleton dimension {axis}.  Target sizes: "
                f"{list(sizes)}.  Tensor sizes: {list(shape)} ({tensor._describe()}). Hint: "
                "only dimensions of size 1 can be expanded; use repeat() to copy a "
                "tensor several times.")
        else:
            resolved.append(size)
    return tuple(resolved)


def narrow_start(tensor, axis: int, start: int, length: int) -> int:
    """``start`` of ``narrow(axis, start, length)`` wrapped to non-negative, or torch's error
    when the range leaves the dimension."""
    size = tensor._array.shape[axis]
    if not -size <= start <= size:
        raise OutOfRangeError(
            f"start out of range (expected to be in range of [{-size}, {size}], but got "
            f"{start}) (narrow on dimension {axis} of {tensor._describe()}). Hint: a "
            "negative start counts from the end.")
    if start < 0:
        start += size
    if length < 0:
        raise InvalidValueError(
            f"narrow(): length must be non-negative. (got {length} for "
            f"{tensor._describe()}) Hint: length counts elements from start onward.")
    if start + length > size:
        raise InvalidValueError(
            f"start ({start}) + length ({length}) exceeds dimension size ({size}). "
            f"(narrow on dimension {axis} of {tensor._describe()}) Hint: the slice would "
            f"end at {start + length}; at most {size - start} elements fit from start "
            f"{start}.")
    return start


def wrap_dim(dim: int, ndim: int, tensor=None) -> int:
    """A non-negative axis for ``dim``, with torch's IndexError (naming ``tensor`` when
    given) when out of range."""
    rank = max(ndim, 1)
    if not -rank <= dim < rank:
        described = f" for {tensor._describe()}" if tensor is not None else ""
        raise OutOfRangeError(
            f"Dimension out of range (expected to be in range of [{-rank}, {rank - 1}], but "
            f"got {dim}){described}. Hint: a tensor with {ndim} dimension(s) has dims 0 to "
            f"{rank - 1}, or -{rank} to -1 from the end.")
    return dim + rank if dim < 0 else dim
