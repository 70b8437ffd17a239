"""Grad modes: no_grad, enable_grad, set_grad_enabled, and the anomaly flag.

The state is module-global (one interpreter thread drives autograd here); ops read
``state.grad_enabled`` once per call, so it must stay a plain attribute lookup.
"""

from __future__ import annotations

import functools


class _State:
    __slots__ = ("anomaly", "anomaly_check_nan", "grad_enabled")

    def __init__(self) -> None:
        self.grad_enabled = True
        self.anomaly = False
        self.anomaly_check_nan = True


state = _State()


def is_grad_enabled() -> bool:
    return state.grad_enabled


class _GradModeContext:
    """Base for the grad-mode context managers; each also works as a decorator."""

    _enable: bool

    def __enter__(self) -> None:
        self._previous = state.grad_enabled
        state.grad_enabled = self._enable

    def __exit__(self, *exc_info) -> None:
        state.grad_enabled = self._previous

    def __call__(self, function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return function(*args, **kwargs)

        return wrapper


class no_grad(_GradModeContext):
    """Disable graph recording: ops inside make tensors with no grad_fn.

    >>> import tracegrad as torch
    >>> x = torch.ones(2, requires_grad=True)
    >>> with torch.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    _enable = False


class enable_grad(_GradModeContext):
    """Re-enable graph recording inside a no_grad block."""

    _enable = True


class set_grad_enabled(_GradModeContext):
    """Set grad mode on or off; takes effect at once, and as a context restores it."""

    def __init__(self, mode: bool) -> None:
        self._enable = bool(mode)
        self._previous = state.grad_enabled
        state.grad_enabled = self._enable

    def __enter__(self) -> None:
        pass

    def __call__(self, function):
        mode = self._enable
        state.grad_enabled = self._previous  # used as a decorator: do not leak the mode

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return function(*args, **kwargs)

        return wrapper


class inference_mode(no_grad):
    def __init__(self, mode: bool = True) -> None:
        self._enable = not mode
