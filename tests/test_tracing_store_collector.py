"""What a load leaves to Python's garbage collector.

A load makes a few objects per record with the collector paused (a 50,000-node chain with
values: 600,000). Left young, the collector would walk them all on resuming, again when
moving them on, and in the full collection their number sets off; the loader files them
with the long-lived objects instead (store._settle_new_objects). Reading a loaded value's
statistics then sets off no collection of its own.
"""

from __future__ import annotations

import gc

import numpy as np

import tracegrad as tg
from tracegrad.tracing.model import Stats
from tracegrad.tracing.values import PendingStats, compute_stats


def _saved_chain(path) -> None:
    tg.manual_seed(0)
    w = tg.randn(3, 2, requires_grad=True)
    with tg.record() as trace:
        tg.randn(4, 3).mm(w).tanh().mul(2.0).sum().backward()
    trace.save(path)


def _generation_of(target: object) -> int | None:
    for generation in range(3):
        if any(item is target for item in gc.get_objects(generation)):
            return generation
    return None


def test_a_loaded_trace_is_filed_with_the_long_lived_objects(tmp_path):
    path = tmp_path / "chain.tgtrace"
    _saved_chain(path)
    loaded = tg.load_trace(path)
    node = next(iter(loaded.nodes.values()))
    step = loaded.passes[0].steps[0]
    assert [_generation_of(item) for item in (loaded, node, step, step.grads_in)] == [2] * 4
    assert gc.get_count()[0] < gc.get_threshold()[0]  # no collection of them pending


def test_objects_the_program_froze_stay_frozen(tmp_path):
    """A program that froze its objects (a server before it forks) keeps them frozen: the
    load leaves its own objects to the collector as they are then."""
    path = tmp_path / "chain.tgtrace"
    _saved_chain(path)
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        loaded = tg.load_trace(path)
        assert gc.get_freeze_count() == frozen
        assert _generation_of(loaded) is not None  # tracked, not frozen
    finally:
        gc.unfreeze()


def test_a_loaded_trace_equals_the_saved_one_with_the_collector_off(tmp_path):
    """Settling the load's objects leaves the collector as the program had it."""
    path = tmp_path / "chain.tgtrace"
    _saved_chain(path)
    gc.disable()
    try:
        loaded = tg.load_trace(path)
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert loaded == tg.load_trace(path)


def test_reading_pending_statistics_gives_the_numbers_and_a_plain_stats():
    array = np.array([[3.0, -4.0], [0.5, 2.0]], np.float32)
    pending = PendingStats.of(array.copy())
    assert type(pending) is PendingStats
    assert pending.norm == compute_stats(array).norm  # the first read computes them all
    assert type(pending) is Stats
    assert pending == compute_stats(array)
    assert not hasattr(pending, "_source")  # the array is let go


def test_statistics_settled_meanwhile_are_read_as_they_are():
    """A second reader (another thread) that finds the array already let go reads the
    numbers the first one set."""
    pending = PendingStats.of(np.array([1.0, 2.0]))
    numbers = compute_stats(np.array([1.0, 2.0]))
    for name in ("min", "max", "mean", "norm", "nan_count", "inf_count"):
        object.__setattr__(pending, name, getattr(numbers, name))
    object.__delattr__(pending, "_source")  # what the first reader does last
    assert pending.max == 2.0 and pending.mean == 1.5

