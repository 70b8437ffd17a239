"""Moving elements around: flip, roll, rot90, tril/triu, diag, diag_embed, movedim,
swapaxes, unflatten, tile, repeat_interleave, broadcast_to, tensor_split.

A mixin of Tensor (``class Tensor(..., RearrangeMethods)``): the methods are defined here,
where a reader looks for them. ``movedim`` and ``swapaxes`` are views; they use the view
ops of ops/shape.py (views-inplace's), which also has ``diagonal`` and ``split_with_sizes``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._memory_format import contiguous_format

if TYPE_CHECKING:
    from ..ops import rearrange, shape  # noqa: TC004 - bound at runtime by _bind()
    from ..tensor import Tensor  # noqa: TC004 - bound at runtime by _bind()


class RearrangeMethods:
    __slots__ = ()

    def flip(self, *dims):
        return rearrange.Flip.apply(self, dims=_ints(dims))

    def fliplr(self):
        if self._array.ndim < 2:
            raise _dims_error("fliplr", 2, self)
        return rearrange.Flip.apply(self, dims=(1,))

    def flipud(self):
        if self._array.ndim < 1:
            raise _dims_error("flipud", 1, self)
        return rearrange.Flip.apply(self, dims=(0,))

    def roll(self, shifts, dims=None):
        return rearrange.Roll.apply(self, shifts, dims)

    def rot90(self, k=1, dims=(0, 1)):
        return rearrange.Rot90.apply(self, k, dims)

    def tril(self, diagonal=0):
        return rearrange.Tril.apply(self, diagonal)

    def triu(self, diagonal=0):
        return rearrange.Triu.apply(self, diagonal)

    def tril_(self, diagonal=0):
        return self._inplace("tril_", rearrange.Tril, diagonal)

    def triu_(self, diagonal=0):
        return self._inplace("triu_", rearrange.Triu, diagonal)

    def diag(self, diagonal=0):
        return rearrange.diag(self, diagonal)

    def diag_embed(self, offset=0, dim1=-2, dim2=-1):
        return rearrange.DiagEmbed.apply(self, offset, dim1, dim2)

    def diagonal_scatter(self, src, offset=0, dim1=0, dim2=1):
        return rearrange.DiagonalScatter.apply(self, src, offset, dim1, dim2)

    def movedim(self, source, destination):
        ndim = self._array.ndim
        sources = _ints((source,)) if isinstance(source, int) else tuple(source)
        targets = _ints((destination,)) if isinstance(destination, int) else tuple(destination)
        if len(sources) != len(targets):
            from ..errors import InvalidValueError

            raise InvalidValueError(
                f"movedim: Invalid source or destination dims: source ({list(sources)} dims) "
                f"should contain the same number of dims as destination ({list(targets)} "
                "dims)")
        sources = tuple(shape.wrap_dim(d, ndim) for d in sources)
        targets = tuple(shape.wrap_dim(d, ndim) for d in targets)
        order = [None] * ndim
        for source_dim, target_dim in zip(sources, targets):
            order[target_dim] = source_dim
        rest = iter(d for d in range(ndim) if d not in sources)
        order = [next(rest) if d is None else d for d in order]
        return shape.Permute.apply(self, dims=tuple(order))

    moveaxis = movedim

    def swapaxes(self, axis0, axis1):
        return shape.Transpose.apply(self, axis0, axis1)

    swapdims = swapaxes

    def unflatten(self, dim, sizes):
        ndim = self._array.ndim
        axis = shape.wrap_dim(dim, ndim)
        sizes = tuple(sizes)
        current = self._array.shape
        known = 1
        for size in sizes:
            if size != -1:
                known *= size
        if -1 in sizes:
            sizes = tuple(current[axis] // known if size == -1 else size for size in sizes)
        elif known != current[axis]:
            from ..errors import ShapeError

            raise ShapeError(
                f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of "
                f"dim {dim} ({current[axis]}) in the input tensor ({self._describe()}). Hint: "
                "one size may be -1, to be inferred.")
        return shape.View.apply(self, shape=current[:axis] + sizes + current[axis + 1:])

    def ravel(self):
        return shape.Reshape.apply(self, shape=(-1,)) if self._array.ndim != 1 else self

    def tile(self, *dims):
        dims = _ints(dims)
        if len(dims) < self._array.ndim:
            dims = (1,) * (self._array.ndim - len(dims)) + dims
        return shape.Repeat.apply(self, repeats=dims)

    def repeat_interleave(self, repeats, dim=None, *, output_size=None):
        """Each element (or slice along ``dim``) repeated ``repeats`` times."""
        # (torch flattens first, and flatten gives a 1-d tensor itself: no view)
        source = self if dim is not None else self.flatten()
        axis = shape.wrap_dim(dim, self._array.ndim) if dim is not None else 0
        if isinstance(repeats, Tensor) and repeats._array.ndim > 0:
            counts = repeats._array
            if counts.size not in (1, source._array.shape[axis]):
                from ..errors import InvalidValueError

                raise InvalidValueError(
                    f"repeats must have the same size as input along dim, but got "
                    f"repeats.size(0) = {counts.size} and input.size({axis}) = "
                    f"{source._array.shape[axis]} ({self._describe()}). Hint: give one "
                    "count per element, or a single count for all.")
            positions = self._xp.repeat(self._xp.arange(source._array.shape[axis]),
                                        counts.reshape(-1))
            from ..ops import selection

            return selection.IndexSelect.apply(source, axis, Tensor._wrap(positions, False))
        count = int(repeats)
        sizes = source._array.shape
        spread = shape.Unsqueeze.apply(source, dim=axis + 1)
        expanded = shape.Expand.apply(spread, shape=sizes[:axis + 1] + (count,) +
                                      sizes[axis + 1:])
        result_shape = sizes[:axis] + (sizes[axis] * count,) + sizes[axis + 1:]
        return shape.View.apply(shape.Clone.apply(expanded, contiguous_format),
                                shape=result_shape)

    def broadcast_to(self, size):
        return shape.Expand.apply(self, shape=tuple(size))

    def tensor_split(self, indices_or_sections, dim=0):
        """Pieces along ``dim``: n nearly equal sections, or cut at the given indices."""
        axis = shape.wrap_dim(dim, self._array.ndim)
        length = self._array.shape[axis]
        if isinstance(indices_or_sections, Tensor):
            indices_or_sections = indices_or_sections.tolist()
        if isinstance(indices_or_sections, int):
            sections = indices_or_sections
            if sections <= 0:
                from ..errors import InvalidValueError

                raise InvalidValueError(
                    f"number of sections must be larger than 0, got {sections}")
            small, extra = divmod(length, sections)
            bounds, start = [], 0
            for section in range(sections):
                stop = start + small + (1 if section < extra else 0)
                bounds.append((start, stop))
                start = stop
        else:
            cuts = [0] + [min(max(int(cut), 0), length) for cut in indices_or_sections] + \
                [length]
            bounds = [(cuts[i], max(cuts[i], cuts[i + 1])) for i in range(len(cuts) - 1)]
        return tuple(self.narrow(axis, start, stop - start) for start, stop in bounds)

    def hsplit(self, sections):
        return self.tensor_split(sections, 1 if self._array.ndim > 1 else 0)

    def vsplit(self, sections):
        return self.tensor_split(sections, 0)

    def dsplit(self, sections):
        return self.tensor_split(sections, 2)


def _ints(values) -> tuple:
    if len(values) == 1 and isinstance(values[0], (tuple, list)):
        return tuple(values[0])
    return tuple(values)


def _dims_error(op_name: str, needed: int, tensor):
    from ..errors import InvalidValueError

    return InvalidValueError(f"Input must be >= {needed}-d. ({op_name}: {tensor._describe()})")


def _bind() -> None:
    """The op modules import Tensor, so they are bound here once Tensor exists
    (``tracegrad._methods.bind_ops``), not imported at load time."""
    global Tensor, rearrange, shape
    from ..ops import rearrange, shape
    from ..tensor import Tensor
