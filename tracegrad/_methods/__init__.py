"""Tensor's methods and operators, one mixin per family; ``Tensor`` inherits them all.

Each method is a thin call into an op in ``tracegrad.ops``. The op modules import
``Tensor`` itself, so these modules cannot import them at load time: ``bind_ops`` binds
them once ``Tensor`` exists (tensor.py calls it at its end).
"""

from __future__ import annotations

from . import (
    arithmetic,
    comparison,
    construction,
    indexing,
    inplace,
    legacy,
    math,
    reduction,
    shape,
)
from .arithmetic import ArithmeticMethods
from .comparison import ComparisonMethods
from .construction import ConstructionMethods
from .indexing import IndexingMethods
from .inplace import InplaceMethods
from .legacy import LegacyMethods
from .math import MathMethods
from .reduction import ReductionMethods, ValuesIndices
from .shape import ShapeMethods

_MODULES = (arithmetic, comparison, construction, indexing, inplace, legacy, math, reduction,
            shape)


def bind_ops() -> None:
    for module in _MODULES:
        bind = getattr(module, "_bind", None)
        if bind is not None:
            bind()


__all__ = ["ArithmeticMethods", "ComparisonMethods", "ConstructionMethods", "IndexingMethods",
           "InplaceMethods", "LegacyMethods", "MathMethods", "ReductionMethods", "ShapeMethods",
           "ValuesIndices", "bind_ops"]
