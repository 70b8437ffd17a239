"""Views and reshapes: view, reshape, transpose, squeeze, expand, split, ...

A mixin of Tensor (``class Tensor(..., ShapeMethods)``): the methods are defined here, where a
reader looks for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _memory_format

if TYPE_CHECKING:
    from ..ops import shape


class ShapeMethods:
    __slots__ = ()

    def view(self, *sizes):
        if len(sizes) == 1 and not isinstance(sizes[0], (int, tuple, list)):
            return self.to(sizes[0])  # view(dtype)
        return shape.View.apply(self, shape=shape.infer_shape(sizes, self._array.size, self))

    def view_as(self, other):
        return self.view(other.shape)

    def reshape(self, *sizes):
        """A view when the strides allow (ViewBackward0), else a copy (UnsafeViewBackward0),
        as torch decides."""
        return shape.reshape(self, shape.infer_shape(sizes, self._array.size, self))

    def reshape_as(self, other):
        return self.reshape(other.shape)

    def flatten(self, start_dim=0, end_dim=-1):
        ndim = self._array.ndim
        start, end = shape.wrap_dim(start_dim, ndim), shape.wrap_dim(end_dim, ndim)
        if start > end:
            from ..errors import InvalidValueError

            raise InvalidValueError(
                "flatten() has invalid args: start_dim cannot come after end_dim")
        if ndim == 0:
            return self.reshape(1)
        if start == end:  # nothing to merge: torch gives the tensor itself, no view
            return self
        sizes = self._array.shape
        middle = 1
        for size in sizes[start:end + 1]:
            middle *= size
        return shape.reshape(self, sizes[:start] + (middle,) + sizes[end + 1:])

    def t(self):
        return shape.T.apply(self)

    @property
    def T(self):
        if self._array.ndim <= 2:
            return shape.T.apply(self)
        return shape.Permute.apply(self, dims=tuple(reversed(range(self._array.ndim))))

    @property
    def mT(self):
        return shape.Transpose.apply(self, -2, -1)

    def transpose(self, dim0, dim1):
        return shape.Transpose.apply(self, dim0, dim1)

    def permute(self, *dims):
        return shape.Permute.apply(self, dims=_sizes(dims))

    def unsqueeze(self, dim):
        return shape.Unsqueeze.apply(self, dim=dim)

    def squeeze(self, dim=None):
        if dim is None:
            return shape.SqueezeAll.apply(self)
        if isinstance(dim, (tuple, list)):
            return shape.SqueezeDims.apply(self, dim=tuple(dim))
        return shape.Squeeze.apply(self, dim=dim)

    def expand(self, *sizes):
        return shape.Expand.apply(self, shape=_sizes(sizes))

    def expand_as(self, other):
        return shape.Expand.apply(self, shape=tuple(other.shape))

    def repeat(self, *sizes):
        return shape.Repeat.apply(self, repeats=_sizes(sizes))

    def split(self, split_size, dim=0):
        return shape.split(self, split_size, dim)

    def chunk(self, chunks, dim=0):
        return shape.chunk(self, chunks, dim)

    def split_with_sizes(self, split_sizes, dim=0):
        return shape.split_with_sizes(self, split_sizes, dim)

    def unsafe_split(self, split_size, dim=0):
        return shape.split(self, split_size, dim, unsafe=True)

    def unsafe_split_with_sizes(self, split_sizes, dim=0):
        return shape.split_with_sizes(self, split_sizes, dim, unsafe=True)

    def unsafe_chunk(self, chunks, dim=0):
        return shape.chunk(self, chunks, dim, unsafe=True)

    def unbind(self, dim=0):
        return shape.unbind(self, dim)

    def narrow(self, dim, start, length):
        return shape.narrow(self, dim, start, length)

    def diagonal(self, offset=0, dim1=0, dim2=1):
        """The diagonal as a view (its last dim); in-place changes reach the tensor."""
        return shape.Diagonal.apply(self, offset, dim1, dim2)

    def as_strided(self, size, stride, storage_offset=None):
        """A view of this tensor's storage with the given sizes, strides (in elements) and
        offset -- PyTorch's ``as_strided``; the offset defaults to this tensor's."""
        return shape.AsStrided.apply(self, tuple(size), tuple(stride), storage_offset)

    def stride(self, dim=None):
        """Strides in elements, as torch gives them. An empty tensor's are row-major ones
        (torch's, sizes of 0 counted as 1): NumPy gives an empty array zero strides."""
        array = self._array
        if array.size:
            itemsize = array.itemsize
            strides = tuple(step // itemsize for step in array.strides)
        else:
            strides, step = [], 1
            for size in reversed(array.shape):
                strides.append(step)
                step *= max(size, 1)
            strides = tuple(reversed(strides))
        return strides if dim is None else strides[shape.wrap_dim(dim, array.ndim)]

    def storage_offset(self) -> int:
        """Where this tensor starts in its base's storage, in elements."""
        from ..autograd import views

        return views.geometry(self)[2]

    def _is_view(self) -> bool:
        return self._base is not None

    def contiguous(self, memory_format=None):
        if memory_format is not None:
            _memory_format.check_memory_format(memory_format, "contiguous", preserve=False)
        if self._array.flags.c_contiguous:
            return self
        return shape.Clone.apply(self, _memory_format.contiguous_format)

    def is_contiguous(self, memory_format=None):
        if memory_format is None:
            return bool(self._array.flags.c_contiguous)
        return _memory_format.is_contiguous_as(self._array, memory_format)

    def clone(self, memory_format=None):
        """A copy in the layout ``memory_format`` asks for: by default
        (torch.preserve_format) this tensor's own, as torch's clone keeps it."""
        if memory_format is None:
            return shape.Clone.apply(self)
        _memory_format.check_memory_format(memory_format, "clone")
        return shape.Clone.apply(self, memory_format)


def _sizes(sizes):
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        return tuple(sizes[0])
    return tuple(sizes)


def _bind() -> None:
    """The op modules import Tensor, so they are bound here once Tensor exists
    (``tracegrad._methods.bind_ops``), not imported at load time."""
    global Tensor, shape
    from ..ops import shape
    from ..tensor import Tensor
