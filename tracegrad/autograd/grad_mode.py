"""Grad modes -- no_grad, enable_grad, set_grad_enabled, inference_mode -- and the state
the engine reads on every op.

``state`` holds what PyTorch keeps per thread (grad mode, inference mode): it is a
``threading.local``, so ``no_grad`` in one thread never changes another, and a new thread
starts with grad mode on. Anomaly mode is process-wide in PyTorch, so its two flags are
class attributes of the same object: ``state.anomaly`` reads the same value in every
thread, and only anomaly.py sets them (on the class, and in ``anomaly_flags``, a plain
object that per-op checks read).

Ops ask whether they record through ``grad_off.threads`` first: how many threads have grad
mode off now, in the whole process (0 almost always). Only when it is not 0 do they read
the thread-local ``state.grad_enabled`` -- a ``threading.local`` read costs a tiny op what
eight plain attribute reads do (bench/bench_engine.py (a)). ``_State`` keeps the count
exact: every write of ``grad_enabled``, wherever it is made, goes through its
``__setattr__``.

The context managers follow ``torch.autograd.grad_mode``: each also decorates a function,
and a decorated generator has the mode set around every resume, not only the first call
(PyTorch's ``_DecoratorContextManager``). As in PyTorch, decorating a class is deprecated
(FutureWarning) and an ``async def`` function gets the mode only while its coroutine object
is created.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import warnings
from collections.abc import Callable


class _GradOff:
    """How many threads have grad mode off now, all threads together (``threads``).

    When it is 0, grad mode is on in every thread, so the hot paths need not read their
    thread's own flag: ``not grad_off.threads or state.grad_enabled`` is exactly
    ``state.grad_enabled``, one plain attribute read in the common case.
    """

    __slots__ = ("threads",)

    def __init__(self) -> None:
        self.threads = 0


grad_off = _GradOff()
_grad_off_lock = threading.Lock()  # (threads switch between the read and the write of +=)


_lock_grad_off, _unlock_grad_off = _grad_off_lock.acquire, _grad_off_lock.release


def _count_grad_off(change: int) -> None:
    # (the lock's bound methods, made once: `with` makes two method objects per call, and
    # grad mode changes a few times per training step -- no_grad, Function.apply, backward)
    _lock_grad_off()
    try:
        grad_off.threads += change
    finally:
        _unlock_grad_off()


class _GradOffShare:
    """A thread's part of ``grad_off.threads``, kept in its thread-local state: when a
    thread ends with grad mode off, its state is dropped and this gives the part back
    (otherwise every other thread would take the slower read for the rest of the run)."""

    __slots__ = ("off",)

    def __init__(self) -> None:
        self.off = False

    def __del__(self) -> None:
        if self.off and _count_grad_off is not None:  # (None: the interpreter is exiting)
            self.off = False
            _count_grad_off(-1)


class _State(threading.local):
    """Autograd's mode flags: per thread unless noted.

    ``threading.local`` runs ``__init__`` once in each thread that reads the object, so
    every thread starts from PyTorch's defaults.
    """

    # Process-wide, as PyTorch's AnomalyMode: class attributes, set only on the class
    # (anomaly.set_anomaly_enabled) so no thread can shadow them.
    anomaly = False
    anomaly_check_nan = True

    def __init__(self) -> None:
        self._grad_off_share = _GradOffShare()
        self.grad_enabled = True  # whether ops record (read after grad_off: see there)
        self.inference = False
        # Inside inference mode nothing records, whatever the grad mode: grad_enabled stays
        # False there, and this is the grad mode is_grad_enabled() reports (enable_grad()
        # inside inference mode turns it on, as torch's GradMode, and records nothing).
        self.inference_grad = False

    def __setattr__(self, name: str, value) -> None:
        # Every write of grad_enabled -- the context managers here, Function.apply, the
        # engine during backward -- keeps grad_off.threads the count of threads with it off.
        if name == "grad_enabled":
            share = self._grad_off_share
            off = not value
            if share.off is not off:
                _count_grad_off(-1 if share.off else 1)  # (counted before ops read it)
                share.off = off
        # A thread-local's __dict__ is this thread's: a store into it is what
        # threading.local's own __setattr__ does for a name the class does not define,
        # without the call through its wrapper (super()'s, or the slot's: a few per step).
        self.__dict__[name] = value


state = _State()


class _AnomalyFlags:
    """Anomaly mode's flags as a plain object: the same values as ``state.anomaly`` and
    ``state.anomaly_check_nan`` without the thread-local lookup, for per-op checks (an op
    then reads one thread-local attribute, ``state.grad_enabled``, and no more)."""

    __slots__ = ("check_nan", "enabled")

    def __init__(self) -> None:
        self.enabled = False
        self.check_nan = True


anomaly_flags = _AnomalyFlags()


class _InferenceFlags:
    """How many ``inference_mode()`` blocks are open, in all threads together: a plain
    attribute that the paths making a new tensor read first (0 almost always), so that only
    while some thread is in inference mode do they read the thread-local ``state.inference``
    to decide whether the tensor is an inference tensor (autograd/inference.py)."""

    __slots__ = ("entered",)

    def __init__(self) -> None:
        self.entered = 0


inference_flags = _InferenceFlags()


def is_grad_enabled() -> bool:
    """Whether ops in this thread record a graph.

    >>> import tracegrad as torch
    >>> with torch.no_grad():
    ...     torch.is_grad_enabled()
    False
    """
    return state.inference_grad if state.inference else state.grad_enabled


def is_inference_mode_enabled() -> bool:
    """Whether this thread is inside ``inference_mode()`` (as ``torch.is_inference_mode_enabled``)."""
    return state.inference


def _set_grad_enabled(mode: bool) -> None:
    if not isinstance(mode, bool):
        raise TypeError(
            f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, not "
            f"{type(mode).__name__}")
    if state.inference:
        state.inference_grad = mode  # (nothing records inside inference mode)
    else:
        state.grad_enabled = mode


# -- decorating functions and generators ---------------------------------------------------
def _wrap_generator(make_context: Callable, function: Callable) -> Callable:
    """``function`` is a generator function: enter the mode around every step of the
    generator (its first run, each send/throw/close) and leave it at each yield, so the
    caller's code between steps runs in the caller's mode."""

    @functools.wraps(function)
    def generator_context(*args, **kwargs):
        generator = function(*args, **kwargs)
        try:
            with make_context():
                response = generator.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with make_context():
                        generator.close()
                    raise
                except BaseException:  # noqa: BLE001 - re-thrown into the generator
                    with make_context():
                        response = generator.throw(*sys.exc_info())
                else:
                    with make_context():
                        response = generator.send(request)
        except StopIteration as stop:
            return stop.value

    return generator_context


def _decorate(make_context: Callable, function: Callable) -> Callable:
    if inspect.isgeneratorfunction(function):
        return _wrap_generator(make_context, function)

    @functools.wraps(function)
    def decorate_context(*args, **kwargs):
        with make_context():
            return function(*args, **kwargs)

    return decorate_context


_new_object = object.__new__


class _DecoratorContextManager:
    """A context manager that also decorates: each call of the decorated function runs in a
    fresh copy of it (``clone()``), so one decorator is safe to re-enter and nest."""

    def __call__(self, function: Callable) -> Callable:
        if inspect.isclass(function):
            warnings.warn(
                "Decorating classes is deprecated and will be disabled in future versions. "
                "You should only decorate functions or methods. To preserve the current "
                "behavior of class decoration, you can directly decorate the `__init__` "
                "method and nothing else.", FutureWarning, stacklevel=2)
            original = function

            def function(*args, **kwargs):
                return original(*args, **kwargs)

        return _decorate(self.clone, function)

    def __enter__(self) -> None:
        raise NotImplementedError

    def __exit__(self, *exc_info: object) -> None:
        raise NotImplementedError

    def clone(self):
        return self.__class__()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Also usable as ``@no_grad`` without parentheses, as in PyTorch."""

    def __new__(cls, orig_func: Callable | None = None):
        if orig_func is None:
            return _new_object(cls)  # (object's: super() would make an object per call)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Disable graph recording in this thread: ops inside make tensors with no grad_fn.

    Also a decorator (``@no_grad()`` or ``@no_grad``); other threads are unaffected.

    >>> import tracegrad as torch
    >>> x = torch.ones(2, requires_grad=True)
    >>> with torch.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    def __init__(self) -> None:
        self.prev = False

    def __enter__(self) -> None:
        self.prev = previous = (state.grad_enabled, state.inference_grad)
        # Each write is a Python call (_State.__setattr__): a flag that already holds the
        # value is left alone (an optimizer step enters no_grad once per step).
        if previous[0] is not False:
            state.grad_enabled = False
        if previous[1] is not False:
            state.inference_grad = False

    def __exit__(self, *exc_info: object) -> None:
        _restore(self.prev)


class enable_grad(_NoParamDecoratorContextManager):
    """Re-enable graph recording (inside a ``no_grad`` block), in this thread.

    >>> import tracegrad as torch
    >>> x = torch.ones(2, requires_grad=True)
    >>> with torch.no_grad(), torch.enable_grad():
    ...     (x * 2).requires_grad
    True
    """

    def __enter__(self) -> None:
        self.prev = (state.grad_enabled, state.inference_grad)
        if state.inference:
            state.inference_grad = True  # reported on; inference mode still records nothing
        else:
            state.grad_enabled = True

    def __exit__(self, *exc_info: object) -> None:
        _restore(self.prev)


def _restore(previous: tuple) -> None:
    """Put back ``(grad_enabled, inference_grad)`` as no_grad and enable_grad found them,
    writing only a flag that changed (each write is a Python call)."""
    grad_enabled, inference_grad = previous
    if state.grad_enabled is not grad_enabled:
        state.grad_enabled = grad_enabled
    if state.inference_grad is not inference_grad:
        state.inference_grad = inference_grad


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode on or off in this thread: at once when called, and restored on leaving
    the ``with`` block. As a decorator it leaves the caller's mode alone.

    >>> import tracegrad as torch
    >>> _ = torch.set_grad_enabled(False)
    >>> torch.is_grad_enabled()
    False
    >>> _ = torch.set_grad_enabled(True)
    """

    def __init__(self, mode: bool) -> None:
        self.prev = is_grad_enabled()
        self.mode = mode
        _set_grad_enabled(mode)

    def __call__(self, function: Callable) -> Callable:
        _set_grad_enabled(self.prev)  # undo the call's own effect: only the function gets it
        return super().__call__(function)

    def __enter__(self) -> None:
        _set_grad_enabled(self.mode)

    def __exit__(self, *exc_info: object) -> None:
        _set_grad_enabled(self.prev)

    def __repr__(self) -> str:
        return f"{type(self).__module__}.{type(self).__qualname__}(mode={self.mode})"

    __str__ = __repr__

    def clone(self) -> set_grad_enabled:
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Inference mode: grad mode off (``inference_mode(False)`` turns it back on), in this
    thread. Also a decorator, with or without parentheses.

    Tensors created inside are *inference tensors*, as PyTorch's (autograd/inference.py):
    ``is_inference()`` is True, ``._version`` raises, they cannot be saved for backward, and
    outside inference mode they cannot be changed in place nor set to require grad. A view
    of a normal tensor made inside stays a normal tensor.

    As in PyTorch, ``enable_grad()`` (or ``set_grad_enabled(True)``) nested inside turns
    the reported grad mode on but records nothing: only ``inference_mode(False)`` records
    inside.

    >>> import tracegrad as torch
    >>> with torch.inference_mode():
    ...     torch.is_inference_mode_enabled(), torch.is_grad_enabled()
    (True, False)
    """

    def __new__(cls, mode: bool = True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode

    def __enter__(self) -> None:
        self._previous = (state.grad_enabled, state.inference, state.inference_grad)
        state.grad_enabled = not self.mode
        state.inference = self.mode
        state.inference_grad = False
        if self.mode:
            inference_flags.entered += 1

    def __exit__(self, *exc_info: object) -> None:
        state.grad_enabled, state.inference, state.inference_grad = self._previous
        if self.mode:
            inference_flags.entered -= 1

    def clone(self) -> inference_mode:
        return self.__class__(self.mode)


class _Multithreading(threading.local):
    def __init__(self) -> None:
        self.enabled = True


_multithreading = _Multithreading()


def is_multithreading_enabled() -> bool:
    """Whether backward may use device worker threads (``torch.autograd`` keeps this per
    thread; tracegrad always runs backward on the calling thread, so it is only a flag)."""
    return _multithreading.enabled


class set_multithreading_enabled(_DecoratorContextManager):
    """Set the multithreaded-backward flag of this thread (as PyTorch, at once when
    called, restored on leaving a ``with`` block). tracegrad's backward always runs on the
    calling thread, so the flag changes nothing else."""

    def __init__(self, mode: bool) -> None:
        self.prev = _multithreading.enabled
        _multithreading.enabled = bool(mode)
        self.mode = mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc_info: object) -> None:
        _multithreading.enabled = self.prev

    def clone(self) -> set_multithreading_enabled:
        return self.__class__(self.mode)
