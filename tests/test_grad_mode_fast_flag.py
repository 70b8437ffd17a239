"""The process-wide shortcut for "does this op record?" (grad_mode.grad_off).

Ops read ``grad_off.threads`` (how many threads have grad mode off now) before their
thread's own flag, and trust it when it is 0. These tests hold the two to each other at
the edges: nested and failing blocks, other threads, threads that end with grad mode
off, and the writers outside grad_mode.py (Function.apply, backward).
"""

from __future__ import annotations

import gc
import threading

import pytest

import tracegrad as torch
from tracegrad.autograd.grad_mode import grad_off


@pytest.fixture(autouse=True)
def _back_at_rest():
    """Each test leaves the count as it found it (0 unless a thread of an earlier test
    is still running with grad mode off: counts below are relative to it)."""
    global _base
    _base = grad_off.threads
    assert torch.is_grad_enabled()
    yield
    assert grad_off.threads == _base


_base = 0


def off() -> int:
    """Threads with grad mode off now, that this test turned off."""
    return grad_off.threads - _base


def records() -> bool:
    """Whether a product made now gets a grad_fn (the shortcut's read, in an op)."""
    return (torch.ones(2, requires_grad=True) * 2).grad_fn is not None


def test_counts_threads_not_blocks():
    with torch.no_grad():
        assert off() == 1
        with torch.no_grad():
            assert off() == 1  # already off in this thread
            with torch.enable_grad():
                assert off() == 0
                assert records()
            assert off() == 1
            assert not records()
    assert records()


def test_an_exception_inside_no_grad_restores():
    with pytest.raises(ZeroDivisionError):
        with torch.no_grad():
            assert not records()
            1 / 0  # noqa: B018
    assert off() == 0
    assert records()


def test_set_grad_enabled_called_and_inference_mode():
    torch.set_grad_enabled(False)
    try:
        assert off() == 1
        assert not records()
    finally:
        torch.set_grad_enabled(True)
    assert off() == 0
    with torch.inference_mode():
        assert off() == 1
        assert not records()
        with torch.inference_mode(False):
            assert off() == 0
            assert records()
    assert records()


def test_a_mode_in_another_thread_does_not_reach_this_one():
    entered, release = threading.Event(), threading.Event()
    seen = {}

    def worker():
        with torch.no_grad():
            seen["worker records"] = records()
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        assert entered.wait(10)
        assert off() == 1  # the worker's: this thread must still record
        assert records()
        with torch.no_grad():
            assert off() == 2
            assert not records()
        assert records()
    finally:
        release.set()
        thread.join()
    assert seen == {"worker records": False}


def test_this_threads_mode_does_not_reach_another():
    seen = []
    with torch.no_grad():
        thread = threading.Thread(target=lambda: seen.append(records()))
        thread.start()
        thread.join()
    assert seen == [True]  # a new thread starts with grad mode on


def test_a_thread_that_ends_with_grad_off_gives_its_share_back():
    thread = threading.Thread(target=lambda: torch.set_grad_enabled(False))
    thread.start()
    thread.join()
    gc.collect()  # (its thread-local state is dropped as the thread ends)
    assert off() == 0
    assert records()


def test_writers_outside_grad_mode_are_counted():
    seen = {}

    class Probe(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):  # forward runs with grad mode off, as in PyTorch
            seen["forward"] = (off(), records())
            return x * 3

        @staticmethod
        def backward(ctx, grad):  # and so does backward without create_graph
            seen["backward"] = (off(), records())
            return grad * 3

    x = torch.ones(2, requires_grad=True)
    y = Probe.apply(x)
    assert y.grad_fn is not None
    y.sum().backward()
    assert seen == {"forward": (1, False), "backward": (1, False)}
    assert x.grad.tolist() == [3.0, 3.0]
    (g,) = torch.autograd.grad(Probe.apply(x).sum(), x, create_graph=True)
    assert seen["backward"] == (0, True)
