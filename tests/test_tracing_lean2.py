"""Fewer objects per recorded op and step, the same traces: deferred flow results swept
while few, saved-tensor watches kept as the builder's own entries of their nodes."""

from __future__ import annotations

import gc

import tracegrad as tg
from tracegrad.tracing import flows
from tracegrad.tracing.recorder import Recorder


def _update_loop(steps: int, keep: list | None = None):
    w = tg.ones(4, requires_grad=True)
    recorder = Recorder(values=False)
    with recorder as trace:
        for _ in range(steps):
            loss = (w * 2.0).sum()
            loss.backward()
            with tg.no_grad():
                step = w - 0.1 * w.grad  # a result nobody reads: deferred, then gone
                if keep is not None:
                    keep.append(step)
                w.grad = None
    return recorder, trace


def test_deferred_results_that_died_are_swept_while_few():
    recorder, trace = _update_loop(1000)
    assert len(trace.passes) == 1000
    # a result deferred every step, each dead by the next: the table stays small (it
    # held all 1000 entries before)
    assert 0 < len(recorder._pending) <= 2 * flows._SWEEP_AT <= 200
    # nothing used them: no flow recorded for them (w.grad = None is one flow, kept updated)
    assert [flow.kind for flow in trace.flows] == ["grad_reset"]


def test_live_deferred_results_survive_sweeps_and_are_recorded_when_used():
    kept: list = []
    recorder, _ = _update_loop(3 * flows._SWEEP_AT, kept)
    assert len(recorder._pending) >= len(kept)  # all alive: none swept
    w = tg.ones(4, requires_grad=True)
    with recorder:
        (kept[0] * w).sum()  # the first step's result, used long after: recorded now
    (flow,) = [flow for flow in recorder.trace.flows if flow.kind == "no_grad"]
    assert flow.sources == [0]
    record = recorder.trace.tensors[flow.results[0]]
    assert record.site is not None and record.site.code.startswith("step = w - 0.1")


def test_an_inplace_change_of_a_saved_tensor_is_found_through_the_node_entry():
    x = tg.ones(3, requires_grad=True)
    with tg.record() as trace:
        h = x * 2
        y = h * h  # saves h twice  # noqa: F841 - its node must stay alive
        h.add_(1.0)
    (violation,) = [v for v in trace.violations if v.kind == "inplace_saved"]
    assert trace.nodes[violation.node].name == "MulBackward0"
    assert violation.saved_version == 0 and violation.current_version == 1
    assert trace.tensors[violation.tensor].name == "h"


def test_a_watched_node_that_died_is_skipped():
    x = tg.ones(3, requires_grad=True)
    with tg.record() as trace:
        h = x * 2
        y = h * h
        del y  # the node that saved h is gone before anyone asks about watches
        gc.collect()
        h.add_(1.0)
    assert [v for v in trace.violations if v.kind == "inplace_saved"] == []
