"""Random draws as tensor methods: bernoulli, multinomial, and the in-place fills
exponential_, geometric_, cauchy_, log_normal_, bernoulli_, random_ (uniform_ and normal_
are in inplace.py).

A mixin of Tensor (``class Tensor(..., SamplingMethods)``): the methods are defined here,
where a reader looks for them. Each takes torch's ``generator=``.
"""

from __future__ import annotations


def _fill(self, op_name: str, kind: str, a, b, generator):
    from ..autograd.grad_mode import state
    from ..factories import _random_like

    if state.grad_enabled and self.requires_grad:
        self._check_inplace_allowed(op_name)
    self._array[...] = _random_like(self, kind, a, b, generator)
    self._after_inplace(op_name)
    return self


class SamplingMethods:
    __slots__ = ()

    def bernoulli(self, p=None, *, generator=None):
        from ..factories import bernoulli

        return bernoulli(self, p, generator=generator)

    def multinomial(self, num_samples, replacement=False, *, generator=None):
        from ..factories import multinomial

        return multinomial(self, num_samples, replacement, generator=generator)

    def bernoulli_(self, p=0.5, *, generator=None):
        if not isinstance(p, (int, float)):  # a tensor of probabilities
            from ..factories import bernoulli

            draws = bernoulli(p.detach().expand(self.shape).to(self.dtype)
                              if p._array.dtype.kind == "f" else p.float(),
                              generator=generator)
            return _write(self, "bernoulli_", draws._array)
        return _fill(self, "bernoulli_", "bernoulli", p, None, generator)

    def exponential_(self, lambd=1.0, *, generator=None):
        return _fill(self, "exponential_", "exponential", lambd, None, generator)

    def geometric_(self, p, *, generator=None):
        return _fill(self, "geometric_", "geometric", p, None, generator)

    def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
        return _fill(self, "cauchy_", "cauchy", median, sigma, generator)

    def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
        return _fill(self, "log_normal_", "log_normal", mean, std, generator)

    def random_(self, from_=0, to=None, *, generator=None):
        """Whole numbers in [from, to) (to=None: up to 2**mantissa for floats, the dtype's
        max for integers, as torch)."""
        import numpy as np

        if to is None:
            dtype = self._array.dtype
            if dtype.kind == "f":
                to = 2 ** (np.finfo(dtype).nmant + 1) + 1
            elif dtype.kind == "b":
                to = 2
            else:
                to = int(np.iinfo(dtype).max) + 1
            if from_ != 0 and to is None:
                from_, to = 0, from_
        return _fill(self, "random_", "random", from_, to, generator)


def _write(self, op_name, array):
    from ..autograd.grad_mode import state

    if state.grad_enabled and self.requires_grad:
        self._check_inplace_allowed(op_name)
    self._array[...] = array
    self._after_inplace(op_name)
    return self
