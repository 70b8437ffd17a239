"""Parameter: a Tensor that a Module registers as one of its learnable weights."""

from __future__ import annotations

from ..autograd.inference import INFERENCE_COUNTER
from ..autograd.node import VersionCounter
from ..tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that requires grad by default and that Modules collect.

    When a module registers it, its display ``name`` becomes its qualified name
    (``"0.weight"``, ``"layer1.bias"``), so traces and graphs label it.

    >>> import tracegrad as torch
    >>> p = torch.nn.Parameter(torch.zeros(2))
    >>> p.requires_grad, p.is_leaf
    (True, True)
    """

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        if data is None:
            from ..factories import empty

            data = empty(0)
        # Share the array (as torch does): Parameter(t) is a new leaf over t's storage.
        self._array = data._array if isinstance(data, Tensor) else Tensor(data)._array
        self.requires_grad = False
        # Parameter(t) of an inference tensor is one (as torch's alias of it): requiring
        # grad is then refused outside inference mode.
        inference = isinstance(data, Tensor) and data._counter is INFERENCE_COUNTER
        self._version_counter = INFERENCE_COUNTER if inference else VersionCounter()
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        copied = Parameter(Tensor._wrap(self._array.copy(), False), self.requires_grad)
        if self.grad is not None:
            copied.grad = Tensor._wrap(self.grad._array.copy(), False)
        memo[id(self)] = copied
        return copied

    def __reduce_ex__(self, protocol):
        return (Parameter, (Tensor._wrap(self._array, False), self.requires_grad))
