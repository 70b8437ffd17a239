"""What makes the tracer cheap to leave on keeps traces exactly as they were: statistics
computed on first read, shared empty lists, lookups dropped at stop, a gradient's Value
shared with the leaf's .grad, the fast finiteness check, Sites cached by code object."""

from __future__ import annotations

import copy
import gc
import json
import pickle
import warnings
import weakref

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.autograd.site import user_site
from tracegrad.tracing.codec import encode_trace
from tracegrad.tracing.model import NO_ATTRS, NO_ITEMS, Stats
from tracegrad.tracing.values import (
    PendingStats,
    ValueBudget,
    compute_stats,
    is_finite,
    settle_stats,
)


# -- statistics computed on first read ---------------------------------------------------
def test_a_kept_value_computes_its_statistics_when_first_read():
    budget = ValueBudget()
    data = np.array([3.0, -4.0, 1.5], dtype=np.float32)
    value = budget.capture(data)
    assert type(value.stats) is PendingStats
    data[:] = 100.0  # the program changes the tensor afterwards: the copy was taken
    assert value.stats.max == 3.0 and value.stats.min == -4.0
    assert type(value.stats) is Stats
    assert value.stats == compute_stats(np.array([3.0, -4.0, 1.5], dtype=np.float32))


@pytest.mark.parametrize("read", [
    lambda stats: stats.__dict__["norm"],  # the trace file's encoder reads records so
    lambda stats: pickle.loads(pickle.dumps(stats)).norm,
    lambda stats: repr(stats),
    lambda stats: stats.has_nonfinite,
    lambda stats: stats == Stats(),
])
def test_any_read_of_pending_statistics_gives_the_computed_numbers(read):
    data = np.arange(6, dtype=np.float64).reshape(2, 3)
    stats = PendingStats.of(data.copy())
    read(stats)
    assert type(stats) is Stats
    assert stats == compute_stats(data)
    assert "_source" not in stats.__dict__


def test_a_strided_array_gets_its_statistics_at_capture():
    """A copy of a strided view is laid out differently (sums would round differently):
    its statistics come from the view itself, at once."""
    base = np.random.default_rng(0).standard_normal((64, 50)).astype(np.float32)
    view = base[:, ::2]
    value = ValueBudget().capture(view)
    assert type(value.stats) is Stats
    assert value.stats == compute_stats(view)


def test_releasing_an_array_computes_its_statistics_first():
    budget = ValueBudget()
    data = np.array([1.0, float("nan"), 2.0])
    value = budget.capture(data)
    budget.release(value)
    assert value.array is None and value.dropped == "pass"
    assert type(value.stats) is Stats
    assert (value.stats.nan_count, value.stats.max) == (1, 2.0)
    settle_stats(value)  # settled already: nothing changes
    assert value.stats.nan_count == 1


def test_a_saved_trace_holds_the_statistics_an_eager_capture_computed():
    x = tg.tensor([[1.0, -2.0], [3.0, 0.5]], requires_grad=True)
    with tg.record() as tr:
        y = (x * 3).exp()
        y.sum().backward()
    body = encode_trace(tr, [], timings=False)  # nothing read the statistics before
    for row in body["values"]:
        assert "stats" in row
    records = [record for record in tr.tensors.values() if record.value is not None]
    assert records
    for record in records:
        assert record.value.stats == compute_stats(record.value.array)
    json.dumps(body, default=str)


# -- shared empty lists ------------------------------------------------------------------
def test_records_share_one_empty_list_and_adding_to_it_raises():
    x = tg.ones(3, requires_grad=True)
    with tg.record() as tr:
        (x * 2).sum().backward()
    tensor = tr.tensors[0]
    assert tensor.versions is NO_ITEMS and tensor.versions == []
    assert tr.passes[0].steps[0].hooks is NO_ITEMS
    with pytest.raises(TypeError, match="shared by trace records"):
        tensor.versions.append(None)
    assert NO_ITEMS == [] and NO_ATTRS == {}
    with pytest.raises(TypeError, match="shared by trace records"):
        NO_ATTRS["dim"] = 0
    copied = copy.deepcopy(tr)  # copies and pickles share the one empty list too
    assert copied.tensors[0] == tensor and copied.tensors[0].versions is NO_ITEMS
    assert pickle.loads(pickle.dumps(tensor)).versions is NO_ITEMS
    assert pickle.loads(pickle.dumps(tr.nodes[0])).attrs is NO_ATTRS


def test_an_inplace_change_and_a_hook_give_their_record_a_list_of_its_own():
    x = tg.ones(3, requires_grad=True)
    with tg.record() as tr:
        y = x * 2
        z = x * 3
        y.add_(1)
        y.register_hook(lambda grad: grad * 1)
        (y.sum() + z.sum()).backward()
    changed = [record for record in tr.tensors.values() if record.versions]
    assert [len(record.versions) for record in changed] == [1]
    assert changed[0].versions[0].op == "add_"
    assert all(record.versions is NO_ITEMS for record in tr.tensors.values()
               if record is not changed[0])
    hooked = [step for step in tr.passes[0].steps if step.hooks]
    assert len(hooked) == 1 and hooked[0].hooks is not NO_ITEMS
    assert NO_ITEMS == []


# -- what a finished recording keeps -------------------------------------------------------
def test_a_finished_trace_is_freed_without_the_cyclic_collector():
    def record():
        x = tg.ones(2, requires_grad=True)
        with tg.record() as tr:
            (x * 2).sum().backward()
        return weakref.ref(tr)

    collecting = gc.isenabled()
    gc.disable()
    try:
        reference = record()
        assert reference() is None
    finally:
        if collecting:
            gc.enable()


def test_stop_keeps_lookups_of_live_objects_only():
    x = tg.ones(2, requires_grad=True)
    recorder = tg.record()
    with recorder as tr:
        for _ in range(3):
            (x * 2).sum().backward()
    builder = recorder.builder
    assert len(tr.tensors) > 1
    assert [tensor_id for tensor_id, _ in builder._tensor_ids.values()] == [0]  # x
    assert builder.known_tensor(x) == 0
    assert tr.why_no_grad(x) is not None  # the trace still finds a live tensor


# -- a leaf's .grad shares the Value of the gradient its step received -----------------------
def test_grad_after_accumulating_into_zeros_shares_the_incoming_value():
    tg.manual_seed(0)
    w = tg.randn(30, 20, requires_grad=True)
    x = tg.randn(8, 30)
    w.grad = tg.zeros(30, 20)
    with tg.record() as tr:
        x.mm(w).pow(2).sum().backward()
    step = tr.passes[0].steps[-1]
    incoming, after = step.grads_in[0], step.grad_after
    assert after is not incoming
    assert after.array is incoming.array and after.stats is incoming.stats
    assert np.array_equal(after.array, w.grad.numpy())
    assert after == incoming


def test_a_post_accumulate_hook_that_changes_grad_gets_its_own_value():
    def double(tensor) -> None:
        tensor.grad.mul_(2)

    w = tg.ones(4, requires_grad=True)
    w.register_post_accumulate_grad_hook(double)
    with tg.record() as tr:
        (w * 3).sum().backward()
    step = tr.passes[0].steps[-1]
    assert step.grads_in[0].stats.max == 3.0
    assert step.grad_after.stats.max == 6.0
    assert step.grad_after.array is not step.grads_in[0].array


# -- finiteness --------------------------------------------------------------------------
@pytest.mark.parametrize("size", [1, 8, 16, 17, 1000])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_is_finite_finds_nan_and_inf_anywhere(size, dtype):
    data = np.ones(size, dtype=dtype)
    assert is_finite(data) and is_finite(data.reshape(1, size)) and is_finite(data[:1][0])
    for bad in (np.nan, np.inf, -np.inf):
        spoiled = data.copy()
        spoiled[size // 2] = bad
        assert not is_finite(spoiled)
        assert not is_finite(spoiled.reshape(1, size))


@pytest.mark.parametrize("size", [4, 1000])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_is_finite_is_true_and_silent_for_large_finite_values(size, dtype):
    data = np.full(size, np.finfo(dtype).max, dtype=dtype)
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow in the check must not warn
        assert is_finite(data)
        assert not is_finite(np.append(data, np.array([np.inf], dtype=dtype)))
    assert np.geterr() == before  # the program's own error state is untouched


# -- sites -------------------------------------------------------------------------------
def test_one_site_per_line_and_one_per_code_object():
    def here():
        return user_site(1)

    assert here() is here()
    source = "def where():\n    return site(1)\n"
    first, second = {"site": user_site}, {"site": user_site}
    exec(compile(source, "first_copy.py", "exec"), first)  # noqa: S102 - our own source
    exec(compile(source, "second_copy.py", "exec"), second)  # noqa: S102
    assert first["where"]().file == "first_copy.py"
    assert second["where"]().file == "second_copy.py"
    assert first["where"]() is first["where"]()
