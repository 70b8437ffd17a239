"""Fewer objects per recorded op and step, the same traces: deferred flow results swept
while few, saved-tensor watches kept as the builder's own entries of their nodes."""

from __future__ import annotations

import copy
import gc
import pickle

import pytest

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


# -- op parameters shared by nodes with the same ones --------------------------------------
def _chain_trace():
    w = tg.full((8,), 0.5)
    x = tg.ones(8, requires_grad=True)
    with tg.record(values=False) as trace:
        y = x
        for _ in range(3):
            y = (y.pow(2) + w) * 2.0
            y.sum(dim=0, keepdim=True)
    return trace


def test_nodes_with_the_same_parameters_share_one_read_only_dict():
    trace = _chain_trace()
    pows = [node for node in trace.iter_nodes() if node.name == "PowBackward0"]
    sums = [node for node in trace.iter_nodes() if node.name == "SumBackward1"]
    assert len(pows) == 3 and len(sums) == 3
    assert pows[0].attrs == {"exponent": 2} and pows[0].attrs is pows[2].attrs
    assert sums[0].attrs is sums[1].attrs and sums[0].attrs["keepdim"] is True
    with pytest.raises(TypeError, match="shared by trace records"):
        pows[0].attrs["alpha"] = 2
    with pytest.raises(TypeError, match="assign a dict of the record's own"):
        sums[0].attrs.update(dim=[1])
    sums[0].attrs = {**sums[0].attrs, "dims": [5]}  # a record's own: the others keep theirs
    assert sums[1].attrs["dims"] == [0] and sums[0].attrs["dims"] == [5]


def test_shared_parameters_copy_pickle_and_save_as_plain_dicts(tmp_path):
    trace = _chain_trace()
    add = next(node for node in trace.iter_nodes() if node.name == "PowBackward0")
    for node in (copy.deepcopy(trace).nodes[add.id], pickle.loads(pickle.dumps(add)),
                 copy.copy(add.attrs)):
        attrs = node if isinstance(node, dict) else node.attrs
        assert type(attrs) is dict and attrs == {"exponent": 2}
        attrs["alpha"] = 2  # a copy's dict is its own
    assert add.attrs == {"exponent": 2}
    trace.save(tmp_path / "t.json")
    assert tg.tracing.load_trace(tmp_path / "t.json").nodes[add.id].attrs == add.attrs


def test_parameters_equal_in_python_but_not_in_json_are_not_shared():
    from tracegrad.autograd.node import Node
    from tracegrad.tracing.graph import node_attrs

    class ScaleBackward(Node):
        pass

    def node(**params):
        made = ScaleBackward.__new__(ScaleBackward)
        made.__dict__.update(params)
        return made

    as_int, as_bool, as_float = node(factor=1), node(factor=True), node(factor=1.0)
    dims, float_dims = node(dim=(1, 2)), node(dim=(1.0, 2.0))
    assert node_attrs(as_int) == {"factor": 1} and node_attrs(as_int) is node_attrs(node(factor=1))
    assert type(node_attrs(as_bool)["factor"]) is bool
    assert type(node_attrs(as_float)["factor"]) is float  # (floats are never shared)
    assert node_attrs(dims) == {"dim": [1, 2]} and node_attrs(dims) is node_attrs(node(dim=(1, 2)))
    assert node_attrs(float_dims) == {"dim": [1.0, 2.0]}
    assert type(node_attrs(float_dims)["dim"][0]) is float
