"""What the recorder keeps: .grad per pass, pass origin and labels, values where the bug
is (with the reason when they are missing), and structure within its budget."""

from __future__ import annotations

import contextlib
import io
import json
import re
import tracemalloc
import zipfile

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.tracing import keep, run_script
from tracegrad.tracing.model import (
    DROPPED_BUDGET,
    DROPPED_PASS,
    ORIGIN_GRADCHECK,
    SCHEMA_VERSION,
    Trace,
)
from tracegrad.tracing.store import save_trace


def dangling_references(trace: Trace) -> list[tuple]:
    """Every id a record names that the trace does not hold (empty when consistent)."""
    nodes, tensors = trace.nodes, trace.tensors
    bad: list[tuple] = []
    for backward_pass in trace.passes:
        bad += [("step", step.node) for step in backward_pass.steps if step.node not in nodes]
        bad += [("accumulated", step.accumulated) for step in backward_pass.steps
                if step.accumulated is not None and step.accumulated not in tensors]
        bad += [("root", root) for root in backward_pass.roots if root not in tensors]
    for node in nodes.values():
        bad += [("next", node.id, next_id) for next_id, _ in node.next
                if next_id is not None and next_id not in nodes]
        referenced = [*node.inputs, *node.outputs, node.leaf,
                      *(saved.tensor for saved in node.saved)]
        bad += [("node tensor", node.id, tensor_id) for tensor_id in referenced
                if tensor_id is not None and tensor_id not in tensors]
    for record in tensors.values():
        if record.grad_fn is not None and record.grad_fn not in nodes:
            bad.append(("grad_fn", record.id, record.grad_fn))
        if record.base is not None and record.base not in tensors:
            bad.append(("base", record.id, record.base))
    for violation in trace.violations:
        if violation.node is not None and violation.node not in nodes:
            bad.append(("violation node", violation.node))
        if violation.tensor is not None and violation.tensor not in tensors:
            bad.append(("violation tensor", violation.tensor))
    return bad


# -- .grad per pass ------------------------------------------------------------------------
def test_grad_after_each_pass_is_what_the_program_printed():
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        trace = run_script("examples/autograd_basics.py", [])
    # "accumulation:\n  first: tensor([3., 3.])\n  second: tensor([6., 6.])"
    section = printed.getvalue().split("accumulation:")[1]
    first = [float(x) for x in re.search(r"first: tensor\(\[(.*?)\]", section)[1].split(",")]
    second = [float(x) for x in re.search(r"second: tensor\(\[(.*?)\]", section)[1].split(",")]
    w_passes = [backward_pass for backward_pass in trace.passes
                if any(trace.tensors[tensor_id].name == "w"
                       for tensor_id in backward_pass.grads_after())]
    assert len(w_passes) == 2
    (w_id,) = w_passes[0].grads_after()
    after_first, after_second = (backward_pass.grads_after()[w_id]
                                 for backward_pass in w_passes)
    # The first of the two passes is in the middle of the program: keep_passes=(2, 2) keeps
    # its statistics only, and they say 3 (not 6, the .grad after the last pass).
    assert after_first.array is None and after_first.dropped == DROPPED_PASS
    assert after_first.stats.min == after_first.stats.max == pytest.approx(first[0])
    np.testing.assert_allclose(after_second.array, second)
    assert trace.grad_after(w_id, w_passes[0].index) is after_first
    assert trace.grad_after(w_id, w_passes[1].index) is after_second
    assert trace.tensors[w_id].grad is after_second  # .grad after the last pass


def test_grad_after_keeps_each_pass_value_with_arrays():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    with tg.record(keep_passes=None) as tr:
        for _ in range(3):
            (w * 3).sum().backward()
    values = [backward_pass.grads_after() for backward_pass in tr.passes]
    (w_id,) = values[0]
    assert [list(value[w_id].array) for value in values] == [[3, 3], [6, 6], [9, 9]]


# -- where passes come from -----------------------------------------------------------------
def test_pass_labels_say_what_started_them():
    x = tg.ones(3, requires_grad=True)
    w = tg.ones(3, requires_grad=True)
    with tg.record() as tr:
        loss = (x * w).sum()
        loss.backward(retain_graph=True)
        tg.autograd.grad(loss, x, retain_graph=True)
        tg.autograd.grad(loss, (x, w), retain_graph=True)
        loss.backward(inputs=[w])
        (w * 2).sum().backward()
    labels = [backward_pass.label for backward_pass in tr.passes]
    assert labels == ["backward(loss)", "grad(loss, x)", "grad(loss, (x, w))",
                      "backward(loss, inputs=w)", "backward((w * 2).sum())"]
    first = tr.passes[0]
    assert first.site.file.endswith("test_tracing_keep.py")
    assert first.describe() == f"backward(loss) at {first.site}"
    assert "loss.backward(retain_graph=True)" in first.site.code


def test_gradcheck_probes_are_marked_grouped_and_labelled():
    def cube(t):
        return (t * t * t).sum()

    x = tg.randn(4, dtype=tg.float64, requires_grad=True)
    with tg.record() as tr:
        assert tg.autograd.gradcheck(cube, (x,))
        cube(x).backward()
    probes = [backward_pass for backward_pass in tr.passes if not backward_pass.is_user]
    assert probes and len(probes) == len(tr.passes) - 1
    for probe in probes:
        assert probe.origin == ORIGIN_GRADCHECK
        assert probe.label.startswith("gradcheck(") and "cube" in probe.label
        assert "gradcheck(cube, (x,))" in probe.site.code
    assert [backward_pass.label for backward_pass in tr.user_passes()] == [
        "backward(cube(x))"]


def test_linear_function_example_has_one_pass_of_its_own():
    trace = run_script("examples/linear_function.py", [])
    probes = [p for p in trace.passes if not p.is_user]
    assert len(probes) > 1000  # one backward pass per probe of the Jacobian
    assert [p.label for p in trace.user_passes()] == ["backward(y.sum())"]
    probe_sites = {(p.label, p.site.line) for p in probes}
    assert {label for label, _ in probe_sites} == {"gradcheck(linear)"}
    assert len(probe_sites) == 2  # with and without bias
    summary = trace.summary()
    assert f"{len(probes):,} gradcheck probes (hidden by default)" in summary
    assert "1 pass the program started" in summary
    # The program's own pass keeps its values; probes (no findings) keep statistics only.
    assert [p.values_captured for p in trace.user_passes()] == [True]
    assert not any(p.values_captured for p in trace.passes if not p.is_user)


# -- values where the bug is ------------------------------------------------------------------
def _loop(steps: int, nan_at: int | None = None, **options) -> Trace:
    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(4, 8), tg.nn.ReLU(), tg.nn.Linear(8, 1))
    optimizer = tg.optim.SGD(model.parameters(), lr=0.01)
    x, y = tg.randn(16, 4), tg.randn(16, 1)
    with tg.record(**options) as tr:
        for step in range(steps):
            optimizer.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            if step == nan_at:
                loss = loss * tg.tensor(float("nan"))
            loss.backward()
            optimizer.step()
    return tr


def test_values_kept_for_first_last_and_passes_with_findings():
    trace = _loop(12, nan_at=6, keep_passes=(2, 2))
    kept = [p.index for p in trace.passes if p.values_captured]
    # 0, 1 first; 5 (before the NaN), 6 (NaN appears); after it the weights are NaN, so
    # every later pass sees NaN and keeps its values too; 10, 11 last.
    assert kept == [0, 1, 5, 6, 7, 8, 9, 10, 11]
    assert [p.index for p in trace.passes if not p.values_captured] == [2, 3, 4]
    middle = trace.passes[3].steps[0].grads_in[0]
    assert middle.array is None and middle.dropped == DROPPED_PASS
    assert middle.dropped_reason == "not kept for this pass"
    assert trace.passes[5].steps[0].grads_in[0].array is not None


def test_values_kept_around_a_violation_in_the_middle():
    w = tg.ones(3, requires_grad=True)
    with tg.record(keep_passes=(1, 1)) as tr:
        for step in range(7):
            h = w * 2
            z = h * h
            if step == 3:
                h.add_(1)  # a saved tensor modified in place: reported in forward
            else:
                z.sum().backward()
    # The program kept going (backward was skipped where it would fail): passes 0..5.
    assert len(tr.passes) == 6
    assert [p.values_captured for p in tr.passes] == [True, False, True, True, False, True]
    assert tr.violations[0].kind == "inplace_saved"


def test_over_budget_values_say_so():
    w = tg.ones(1000, requires_grad=True)
    with tg.record(budget_bytes=6000) as tr:
        (w * 2).sum().backward()
    reasons = {value.dropped for record in tr.tensors.values()
               for value in (record.value,) if value is not None and value.array is None}
    assert reasons == {DROPPED_BUDGET}
    value = next(record.value for record in tr.tensors.values()
                 if record.value is not None and record.value.array is None)
    assert value.dropped_reason == "over the memory budget"


# -- structure within its budget -------------------------------------------------------------
def test_structure_budget_summarizes_middle_passes_and_keeps_the_rest_consistent():
    unlimited = _loop(40, nan_at=20)
    trace = _loop(40, nan_at=20, structure_budget_bytes=400_000)
    full = [p.index for p in trace.passes if not p.summarized]
    assert {0, 1, 19, 20, 38, 39} <= set(full)  # first, last, the NaN and the pass before
    assert len(full) < 20
    assert trace.metadata["summarized_passes"] >= 20
    assert dangling_references(trace) == []
    for backward_pass, reference in zip(trace.passes, unlimited.passes):
        assert backward_pass.step_count == reference.step_count
        if backward_pass.summarized:
            assert backward_pass.steps == [] and not backward_pass.values_captured
            names = sorted(unlimited.nodes[step.node].name for step in reference.steps)
            assert sorted(name for name, count in backward_pass.op_counts.items()
                          for _ in range(count)) == names
    assert len(trace.nodes) < len(unlimited.nodes) / 2
    summary = trace.summary()
    assert "structure budget 390.6 KiB reached:" in summary
    assert "passes summarized: steps counted per op" in summary


def test_structure_estimate_tracks_real_memory():
    """The estimate the budget is checked against stays within a factor of 2 of what
    tracemalloc measures for the trace's structure (values off, so no arrays)."""
    x = tg.ones(4, requires_grad=True)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        recorder = tg.record(values=False)
        with recorder as trace:
            y = x
            for _ in range(1500):
                y = y * 1.0
            y.sum().backward()
            del y
        measured = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    estimate = recorder.ledger.estimate(trace)
    assert measured / 2 < estimate < measured * 2, (estimate, measured)


def test_training_loop_structure_stays_flat():
    """A long loop under a small structure budget: the trace stops growing."""
    budget = 300_000
    lengths = []
    for steps in (30, 90):
        trace = _loop(steps, structure_budget_bytes=budget)
        lengths.append(len(trace.nodes) + len(trace.tensors))
        assert dangling_references(trace) == []
    assert lengths[1] <= lengths[0] * 1.2


def test_chain_over_the_structure_budget_is_counted_not_recorded():
    x = tg.ones(4, requires_grad=True)
    with tg.record(structure_budget_bytes=1_000_000) as tr:
        y = x
        for _ in range(3000):
            y = y * 1.0
        y = y * tg.tensor(float("inf"))  # where Inf appears, over the budget
        y.sum().backward()
    unrecorded = tr.metadata["unrecorded_ops"]
    assert tr.metadata["structure_over_budget"] is True
    recorded = sum(1 for node in tr.nodes.values() if node.name == "MulBackward0")
    assert unrecorded["MulBackward0"] + recorded == 3001 and unrecorded["SumBackward0"] == 1
    (backward_pass,) = tr.passes
    assert backward_pass.summarized and backward_pass.step_count == 3001 + 1 + 1  # and Sum, AccumulateGrad
    assert backward_pass.op_counts["MulBackward0"] == 3001
    assert [v.kind for v in tr.violations] == ["inf"]  # still found, without a node
    assert "counted, not recorded" in tr.violations[0].message
    assert dangling_references(tr) == []
    summary = tr.summary()
    assert "forward ops counted, not recorded: MulBackward0" in summary
    assert len(tr.nodes) * keep.NODE_BYTES < 1_000_000


def test_summarized_trace_round_trips_and_old_schema_loads(tmp_path):
    trace = _loop(30, nan_at=15, structure_budget_bytes=300_000)
    path = tmp_path / "loop.tgtrace"
    trace.save(path)
    loaded = tg.load_trace(path)
    assert loaded == trace
    assert any(p.summarized and p.op_counts for p in loaded.passes)
    with zipfile.ZipFile(path) as archive:
        assert json.loads(archive.read("trace.json"))["schema_version"] == SCHEMA_VERSION >= 3


def test_schema_2_file_loads_with_defaults(tmp_path):
    """A file written before schema 3 has none of its fields: they read as defaults."""
    w = tg.ones(2, requires_grad=True)
    with tg.record() as tr:
        (w * 3).sum().backward()
    path = tmp_path / "new.tgtrace"
    save_trace(tr, path, schema_version=3)  # one object per record, as schema 2 had
    old_path = tmp_path / "old.tgtrace"
    with zipfile.ZipFile(path) as archive:
        document = json.loads(archive.read("trace.json"))
        blob = archive.read("arrays.bin")
    document["schema_version"] = 2
    for backward_pass in document["trace"]["passes"]:
        for key in ("origin", "label", "summarized", "summarized_steps", "op_counts"):
            backward_pass.pop(key, None)
        for step in backward_pass["steps"]:
            step.pop("grad_after", None)
    for value in document["values"]:
        value.pop("dropped", None)
    with zipfile.ZipFile(old_path, "w") as archive:
        archive.writestr("trace.json", json.dumps(document))
        archive.writestr("arrays.bin", blob)
    loaded = tg.load_trace(old_path)
    (backward_pass,) = loaded.passes
    assert backward_pass.label == "" and backward_pass.is_user
    assert backward_pass.describe().startswith("backward() at ")
    assert backward_pass.grads_after() == {}
    assert loaded.grad_after(1, 0) is None


def test_svg_tooltip_shows_grad_after_the_drawn_pass():
    pytest.importorskip("graphviz")
    w = tg.name(tg.tensor([1.0, 2.0], requires_grad=True), "w")
    with tg.record(keep_passes=None) as tr:
        for _ in range(2):
            (w * 3).sum().backward()
    first = tg.to_dot(tr, pass_index=0).source
    second = tg.to_dot(tr, pass_index=1).source
    assert "grad: float32 (2) min=3 max=3" in first
    assert "grad: float32 (2) min=6 max=6" in second
