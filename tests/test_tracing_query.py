"""The one way in (``tracing.query.as_trace``) and the questions a Trace answers itself:
its roots, what a node reaches, which step ran a node."""

from __future__ import annotations

import json
import zipfile

import pytest

import tracegrad as tg
from tracegrad.tracing.model import BackwardPass, NodeRecord, Step, TensorRecord, Trace
from tracegrad.tracing.query import as_trace
from tracegrad.tracing.store import save_trace


def _leaves():
    w = tg.ones(2, requires_grad=True)
    b = tg.zeros(2, requires_grad=True)
    return w, b


def test_tensors_give_a_trace_with_typed_roots_in_the_order_given():
    w, b = _leaves()
    first, second = w * 2, w + b
    trace = as_trace({"first": first, "rest": [second, first]})
    assert [trace.tensor(root).name for root in trace.roots] == ["first", "second"]
    assert [trace.node(node).name for node in trace.root_nodes()] == [
        "MulBackward0", "AddBackward0"]
    assert trace.metadata.get("root") is None and trace.metadata.get("roots") is None


def test_a_trace_and_a_recorder_are_taken_as_they_are():
    w, _ = _leaves()
    recorder = tg.record()
    with recorder as trace:
        (w * 3).sum().backward()
    assert as_trace(recorder) is trace
    assert as_trace(trace) is trace
    assert trace.roots == []  # a recording's roots are its passes'


def test_anything_else_is_a_type_error_with_a_hint():
    with pytest.raises(TypeError, match=r"got dict with no tensors in it\. Hint: "):
        as_trace({"a": 1})


def test_reachable_is_depth_first_in_edge_order_and_skips_what_is_cut_off():
    w, b = _leaves()
    left = w * 2
    cut = (b * 5).detach()
    loss = (left * left + cut).sum()
    trace = as_trace(loss)
    names = [trace.node(node).name for node in trace.reachable(trace.root_nodes())]
    assert names == ["SumBackward0", "AddBackward0", "MulBackward0", "MulBackward0",
                     "AccumulateGrad"]
    assert trace.reachable([]) == []


def test_a_leaf_root_starts_at_its_accumulate_grad_when_one_is_recorded():
    trace = Trace(tensors={0: TensorRecord(0, (2,), "float32", requires_grad=True)},
                  nodes={4: NodeRecord(4, "AccumulateGrad", kind="accumulate", leaf=0)},
                  roots=[0])
    assert trace.root_nodes() == [4]
    assert as_trace(tg.ones(2, requires_grad=True)).root_nodes() == []  # nothing ran yet


def test_locate_finds_the_first_step_that_ran_a_node():
    trace = Trace(nodes={3: NodeRecord(3, "MulBackward0")}, passes=[
        BackwardPass(0, steps=[Step(0, node=1)]),
        BackwardPass(1, steps=[Step(0, node=2), Step(1, node=3), Step(2, node=3)])])
    assert trace.locate(3) == (1, 1)
    assert trace.locate(3, pass_index=0) is None
    assert trace.locate(3, pass_index=7) is None
    assert trace.passes[1].steps_by_node()[3].index == 1


def test_files_that_kept_roots_in_metadata_still_load(tmp_path):
    w, _ = _leaves()
    loss = (w * 2).sum()
    path = tmp_path / "old.tgtrace"
    trace = tg.tracing.from_tensor(loss)
    save_trace(trace, path, schema_version=3)  # the layout of the files that did this
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    document = json.loads(members["trace.json"])
    root = document["trace"].pop("roots")[0]
    document["trace"]["metadata"]["root"] = root  # how from_tensor wrote it before
    members["trace.json"] = json.dumps(document).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, payload in members.items():
            archive.writestr(name, payload)
    loaded = tg.load_trace(path)
    assert loaded.roots == trace.roots
    assert "root" not in loaded.metadata
    assert loaded.root_nodes() == trace.root_nodes()
