"""How ``tests/test_ops_gradients.py`` calls one op: shared by its case tables
(``test_ops_gradients.CASES`` and ``op_cases_nn.NN_CASES``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Case:
    shapes: tuple  # one shape per float64 input that requires grad
    call: Callable  # call(lib, *inputs) -> tensor or tuple of tensors
    positive: tuple = ()  # indices of inputs drawn from [0.5, 2) (log, sqrt, pow bases)
    in_torch: bool = True  # False for internal ops torch has no public form of
    gradcheck: dict = field(default_factory=dict)  # extra gradcheck keywords
    # torch defines no derivative: backward must raise (in torch and here) instead
    no_derivative: bool = False
    # torch defines no derivative of its backward (hardsigmoid): a second derivative must
    # raise (in torch and here)
    no_second_derivative: bool = False
    # a random draw torch differentiates as zero: the values differ from torch's stream, so
    # only shapes, node names and the (zero) gradients are compared
    random_draw: bool = False
