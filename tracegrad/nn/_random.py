"""The NumPy generator behind nn's random draws (dropout masks, init, shuffling).

``generator=None`` means tracegrad's global generator, the one ``tracegrad.manual_seed``
reseeds (read at call time, since ``manual_seed`` replaces it).
"""

from __future__ import annotations

import numpy as np

from .. import factories


def numpy_generator(generator=None) -> np.random.Generator:
    """The ``np.random.Generator`` to draw from for ``generator`` (None: the global one)."""
    if generator is None:
        return factories._generator
    if isinstance(generator, np.random.Generator):
        return generator
    for attribute in ("_numpy", "_generator", "_rng"):  # a tracegrad Generator
        inner = getattr(generator, attribute, None)
        if isinstance(inner, np.random.Generator):
            return inner
    raise TypeError(f"expected a tracegrad.Generator (or None) as generator, got "
                    f"{type(generator).__name__}")


def uniform(shape, generator=None, like=None) -> np.ndarray:
    """Uniform [0, 1) float64 draws of ``shape`` on the host."""
    return numpy_generator(generator).random(shape)
