"""The legacy Tensor methods torch still runs: ``type``, ``new``, ``resize_``,
``resize_as_``, the ``volatile`` flag, the conversions to the dtypes legacy code names by
type (``byte``, ``char``, ``short``, ``bfloat16``), and ``data_ptr`` and ``is_signed``.

A mixin of Tensor (``class Tensor(..., LegacyMethods)``); the constructors they share with
``torch.Tensor(...)`` and ``torch.FloatTensor(...)`` live in ``tracegrad/_legacy.py``,
bound here by ``_bind`` (that module imports Tensor).
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype, backends
from ..errors import AutogradError

_legacy = None  # tracegrad._legacy, bound by _bind()
Tensor = None  # tracegrad.Tensor, bound by _bind()


def _bind() -> None:
    global _legacy, Tensor
    from .. import _legacy as module

    _legacy, Tensor = module, module.Tensor


class LegacyMethods:
    __slots__ = ()

    def type(self, dtype=None, non_blocking: bool = False, **kwargs):
        """With no argument, the legacy type name (``'torch.FloatTensor'``); otherwise
        this tensor converted to that type (a class, a type name or a dtype), or itself
        when it already is one.

        >>> import tracegrad as torch
        >>> x = torch.ones(2)
        >>> x.type(), x.type(torch.DoubleTensor).type(), x.type('torch.LongTensor')
        ('torch.FloatTensor', 'torch.DoubleTensor', tensor([1, 1]))
        """
        if dtype is None:
            return _legacy.type_name(self)
        target, device_type = _legacy.parse_type(dtype)
        numpy_dtype = _dtype.to_numpy_dtype(target)
        result = self
        if device_type is not None and device_type != self.device.type:
            result = result.to(device_type)
        if numpy_dtype != result._array.dtype:
            result = result.to(target)
        return result

    def new(self, *args, **kwargs):
        """The legacy constructor with this tensor's dtype and device: ``x.new(2, 3)``
        (a shape; zeros here, uninitialized in torch), ``x.new([1, 2])`` (data),
        ``x.new()`` (empty), ``x.new(other)`` (an alias of ``other``, same dtype only).

        >>> import tracegrad as torch
        >>> x = torch.zeros(1, dtype=torch.float64)
        >>> x.new(2, 3).shape, x.new([1, 2])
        (tracegrad.Size([2, 3]), tensor([1., 2.], dtype=tracegrad.float64))
        """
        return _legacy.construct("new", self.dtype, self, args, kwargs, exact_dtype=True)

    def resize_(self, *sizes, memory_format=None):
        """Give this tensor a new shape over the same storage, as torch does: the
        elements are read in storage order from where this tensor starts; growing past
        the storage allocates more (zeros here, uninitialized in torch).

        >>> import tracegrad as torch
        >>> torch.arange(6.0).resize_(2, 2)
        tensor([[0., 1.],
                [2., 3.]])
        """
        if self.requires_grad:
            raise AutogradError(
                f"cannot resize variables that require grad ({self._describe()}). Hint: "
                "resize a detached copy (x.detach().clone().resize_(...)), or use "
                "reshape/view, which autograd can follow.")
        shape = _legacy.parse_size("resize_", sizes)
        if shape == self._array.shape:
            return self  # torch leaves the version alone when nothing changes
        self._array = _resized(self._array, shape)
        self._after_inplace("resize_")
        return self

    def resize_as_(self, the_template, memory_format=None):
        """``resize_`` to ``the_template``'s shape."""
        if not isinstance(the_template, Tensor):
            raise TypeError(f"resize_as_(): argument 'the_template' (position 1) must be "
                            f"Tensor, not {type(the_template).__name__}")
        return self.resize_(tuple(the_template.shape))

    def byte(self):
        """``self.to(torch.uint8)``."""
        return self.to(_dtype.uint8)

    def char(self):
        """``self.to(torch.int8)``."""
        return self.to(_dtype.int8)

    def short(self):
        """``self.to(torch.int16)``."""
        return self.to(_dtype.int16)

    def bfloat16(self):
        """``self.to(torch.bfloat16)``: a clear error, NumPy has no bfloat16."""
        return self.to(_dtype.bfloat16)

    def data_ptr(self) -> int:
        """The address of the first element (tensors sharing storage from the same
        element have the same one)."""
        return _address(self._array)

    def is_signed(self) -> bool:
        """Whether the dtype has a sign (floats and signed integers)."""
        return self.dtype.is_signed

    @property
    def volatile(self) -> bool:
        """Always False: volatile was removed from torch (``no_grad`` replaced it)."""
        warnings.warn("volatile was removed (Variable.volatile is always False)",
                      UserWarning, stacklevel=2)
        return False


def _resized(array, shape: tuple):
    """``array``'s storage seen as a contiguous tensor of ``shape`` from ``array``'s first
    element on; a new buffer (old elements first) when the storage is too small."""
    xp = backends.array_module(array)
    count = int(np.prod(shape, dtype=np.int64))
    storage = _storage_from(array)
    if storage is not None and count <= storage.size:
        return storage[:count].reshape(shape)
    old = storage if storage is not None else array.reshape(-1)
    grown = xp.zeros(count, dtype=array.dtype)
    grown[:old.size] = old
    return grown.reshape(shape)


def _storage_from(array):
    """A 1-d view of the buffer ``array`` lives in, starting at its first element; None
    when that buffer is not a plain contiguous one (then the elements are copied)."""
    root = array
    while root.base is not None and hasattr(root.base, "reshape") and hasattr(
            root.base, "flags"):
        root = root.base
    if root.dtype != array.dtype or not root.flags.c_contiguous:
        return None
    offset_bytes = _address(array) - _address(root)
    if offset_bytes % array.itemsize:
        return None
    return root.reshape(-1)[offset_bytes // array.itemsize:]


def _address(array) -> int:
    if isinstance(array, np.ndarray):
        return array.__array_interface__["data"][0]
    return array.data.ptr  # cupy
