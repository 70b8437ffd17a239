"""``new_*``: tensors made like this one (same dtype and device by default).

A mixin of Tensor (``class Tensor(..., ConstructionMethods)``): the methods are defined here, where a
reader looks for them.
"""

from __future__ import annotations


class ConstructionMethods:
    __slots__ = ()

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        from ..factories import zeros

        return zeros(*size, dtype=dtype or self.dtype, device=device or self.device,
                     requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        from ..factories import ones

        return ones(*size, dtype=dtype or self.dtype, device=device or self.device,
                    requires_grad=requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        from ..factories import full

        return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                    requires_grad=requires_grad)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        from ..factories import tensor

        return tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                      requires_grad=requires_grad)
