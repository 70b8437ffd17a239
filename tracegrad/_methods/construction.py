"""``new_*``: tensors made like this one (same dtype and device unless given).

A mixin of Tensor (``class Tensor(..., ConstructionMethods)``): the methods are defined
here, where a reader looks for them. Sizes are given as torch takes them: ints
(``x.new_zeros(2, 3)``), one sequence (``x.new_zeros((2, 3))``) or ``size=``; ``new_full``
takes one sequence only. ``layout`` and ``pin_memory`` are accepted with their defaults.
"""

from __future__ import annotations

import warnings

from .. import _dtype

_factories = None  # tracegrad.factories, bound by _bind() (it imports Tensor)
_legacy = None  # tracegrad._legacy, bound by _bind()


def _bind() -> None:
    global _factories, _legacy
    from .. import _legacy as legacy_module
    from .. import factories

    _factories, _legacy = factories, legacy_module


class ConstructionMethods:
    __slots__ = ()

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False, layout=None,
                  pin_memory=False, **keywords):
        """A tensor of zeros with this tensor's dtype and device (unless given).

        >>> import tracegrad as torch
        >>> torch.ones(1, dtype=torch.float64).new_zeros(2, 3).dtype
        tracegrad.float64
        """
        shape = _shape("new_zeros", size, keywords)
        _dtype.check_layout(layout, "new_zeros")
        return self._new_filled(_factories.zeros, shape, dtype, device, requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False, layout=None,
                 pin_memory=False, **keywords):
        """A tensor of ones with this tensor's dtype and device (unless given)."""
        shape = _shape("new_ones", size, keywords)
        _dtype.check_layout(layout, "new_ones")
        return self._new_filled(_factories.ones, shape, dtype, device, requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False, layout=None,
                  pin_memory=False, **keywords):
        """An uninitialized tensor in torch; zeros here, so runs are reproducible."""
        shape = _shape("new_empty", size, keywords)
        _dtype.check_layout(layout, "new_empty")
        return self._new_filled(_factories.empty, shape, dtype, device, requires_grad)

    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False,
                 layout=None, pin_memory=False):
        """A tensor filled with ``fill_value``, in this tensor's dtype (unless given).

        >>> import tracegrad as torch
        >>> torch.zeros(1, dtype=torch.int64).new_full((2,), 3.5)
        tensor([3, 3])
        """
        if not isinstance(size, (tuple, list)):
            raise TypeError(f"new_full(): argument 'size' (position 1) must be tuple of "
                            f"ints, not {type(size).__name__}")
        shape = _legacy.parse_size("new_full", (tuple(size),))
        _dtype.check_layout(layout, "new_full")
        target = self._new_dtype(dtype, requires_grad)
        result = _factories.full(shape, fill_value, dtype=target,
                                 device=device if device is not None else self.device)
        return result.requires_grad_(True) if requires_grad else result

    def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None,
                   pin_memory=False):
        """A copy of ``data`` with this tensor's dtype and device (unless given). From a
        tensor it warns, as torch does: ``data.detach().clone()`` says what it does.

        >>> import tracegrad as torch
        >>> torch.zeros(1).new_tensor([1, 2])
        tensor([1., 2.])
        """
        if isinstance(data, ConstructionMethods):
            warnings.warn(
                "To copy construct from a tensor, it is recommended to use "
                "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
                "requires_grad_(True), rather than tensor.new_tensor(sourceTensor).",
                UserWarning, stacklevel=2)
            data = data.detach()
        _dtype.check_layout(layout, "new_tensor")
        target = self._new_dtype(dtype, requires_grad)
        result = _factories.tensor(data, dtype=target,
                                   device=device if device is not None else self.device)
        return result.requires_grad_(True) if requires_grad else result

    def _new_dtype(self, dtype, requires_grad: bool) -> _dtype.dtype:
        target = self.dtype if dtype is None else _dtype.from_numpy_dtype(
            _dtype.to_numpy_dtype(dtype))
        if requires_grad:
            _legacy.check_requires_grad_dtype(target)
        return target

    def _new_filled(self, factory, shape: tuple, dtype, device, requires_grad: bool):
        target = self._new_dtype(dtype, requires_grad)
        return factory(shape, dtype=target,
                       device=device if device is not None else self.device,
                       requires_grad=requires_grad)


def _shape(who: str, size: tuple, keywords: dict) -> tuple:
    """The size of a ``new_*`` call: positional ints or one sequence, or ``size=``."""
    if keywords:
        if set(keywords) != {"size"} or size:
            unexpected = next(key for key in keywords if key != "size") if set(
                keywords) != {"size"} else "size"
            raise TypeError(f"{who}() got an unexpected keyword argument '{unexpected}'")
        size = (keywords["size"],)
    if not size:
        raise TypeError(f'{who}() missing 1 required positional arguments: "size"')
    return _legacy.parse_size(who, size)
