"""The loader's consistency checks: every reference, range, shape and cycle rule, each
broken on purpose in a real saved trace, must give TraceFileError naming the JSON path; and
every trace the recorder makes passes them."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import typing
import zipfile

import pytest
from trace_files import as_columns, as_rows

import tracegrad as tg
from tracegrad.errors import TraceFileError
from tracegrad.tracing import model
from tracegrad.tracing.limits import LIMITS_VARIABLE, TraceLimits
from tracegrad.tracing.validate import FREE, RULES, InvalidTrace, Records, validate_trace

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")


def _program_trace() -> model.Trace:
    """A small program with everything: leaves, an Inf, a backward, an in-place violation."""
    tg.manual_seed(0)
    x = tg.randn(4, 3)
    w = tg.randn(3, 2, requires_grad=True)
    with tg.record() as tr:
        h = x.mm(w).relu()
        loss = h.log().sum()
        loss.backward()
        z = h * h
        h.add_(1)
        del z
    return tr


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("validate") / "run.tgtrace"
    _program_trace().save(path)
    return str(path)


def _edited(saved: str, tmp_path, edit) -> str:
    """A copy of the saved trace with ``edit(trace_body, document)`` applied to its JSON,
    seen as one object per record (trace_files.as_rows) and written back as columns."""
    with zipfile.ZipFile(saved) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    document = as_rows(json.loads(members["trace.json"]))
    edit(document["trace"], document)
    members["trace.json"] = json.dumps(as_columns(document)).encode()
    out = tmp_path / "edited.tgtrace"
    with zipfile.ZipFile(out, "w") as archive:
        for name, payload in members.items():
            archive.writestr(name, payload)
    return str(out)


def _node_position(body, name: str) -> int:
    return next(position for position, node in enumerate(body["nodes"]) if node["name"] == name)


def _set(*path_and_value):
    """An edit that sets body[path...] = value."""
    *path, value = path_and_value

    def edit(body, _):
        target = body
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


# (edit, the JSON path the error must name, words the message must hold)
CORRUPTIONS = {
    "step to a missing node": (
        _set("passes", 0, "steps", 2, "node", 991), "trace.passes[0].steps[2].node",
        "991 is not a node id"),
    "edge to a missing node": (
        _set("nodes", 2, "next", 0, [77, 0]), "trace.nodes[2].next[0]", "77 is not a node id"),
    "negative input number": (
        _set("nodes", 2, "next", 0, [0, -1]), "trace.nodes[2].next[0]",
        "input number -1 is out of range"),
    "saved tensor missing": (
        _set("nodes", 0, "saved", 0, "tensor", 50), "trace.nodes[0].saved[0].tensor",
        "50 is not a tensor id"),
    "negative saved version": (
        _set("nodes", 0, "saved", 0, "version", -1), "trace.nodes[0].saved[0].version",
        "-1 is out of range"),
    "negative nbytes": (
        _set("nodes", 0, "saved", 0, "nbytes", -48), "trace.nodes[0].saved[0].nbytes",
        "out of range"),
    "input tensor missing": (
        _set("nodes", 0, "inputs", 1, 12), "trace.nodes[0].inputs[1]", "12 is not a tensor id"),
    "output tensor missing": (
        _set("nodes", 0, "outputs", 0, -3), "trace.nodes[0].outputs[0]",
        "-3 is not a tensor id"),
    "accumulate leaf missing": (
        _set("nodes", 1, "leaf", 9), "trace.nodes[1].leaf", "9 is not a tensor id"),
    "grad_fn missing": (
        _set("tensors", 2, "grad_fn", 40), "trace.tensors[2].grad_fn", "40 is not a node id"),
    "base missing": (
        _set("tensors", 2, "base", 40), "trace.tensors[2].base", "40 is not a tensor id"),
    "base is itself": (
        _set("tensors", 2, "base", 2), "trace.tensors[2].base", "cycle: 2 -> 2"),
    "negative output_nr": (
        _set("tensors", 2, "output_nr", -1), "trace.tensors[2].output_nr", "out of range"),
    "negative version": (
        _set("tensors", 3, "versions", 0, "version", -2), "trace.tensors[3].versions[0].version",
        "-2 is out of range"),
    "negative dimension": (
        _set("tensors", 0, "shape", [4, -3]), "trace.tensors[0].shape",
        "negative or huge size"),
    "huge shape": (
        _set("tensors", 0, "shape", [1 << 30, 1 << 30]), "trace.tensors[0].shape",
        "TraceLimits.max_elements"),
    "too many dimensions": (
        _set("tensors", 0, "shape", [1] * 65), "trace.tensors[0].shape", "TraceLimits.max_dims"),
    "unknown dtype": (
        _set("tensors", 0, "dtype", "float31"), "trace.tensors[0].dtype",
        "'float31' is not a dtype name torch has"),
    "root missing": (
        _set("passes", 0, "roots", 0, 70), "trace.passes[0].roots[0]", "70 is not a tensor id"),
    "accumulated missing": (
        _set("passes", 0, "steps", 4, "accumulated", 70), "trace.passes[0].steps[4].accumulated",
        "70 is not a tensor id"),
    "huge duration": (
        _set("passes", 0, "steps", 0, "duration_ns", 1 << 70),
        "trace.passes[0].steps[0].duration_ns", "out of range"),
    "step numbered wrong": (
        _set("passes", 0, "steps", 1, "index", 7), "trace.passes[0].steps[1].index",
        "differs from the step's position 1"),
    "pass numbered wrong": (
        _set("passes", 0, "index", 3), "trace.passes[0].index",
        "differs from the pass's position 0"),
    "violation tensor missing": (
        _set("violations", 0, "tensor", 99), "trace.violations[0].tensor",
        "99 is not a tensor id"),
    "violation node missing": (
        _set("violations", 2, "node", 99), "trace.violations[2].node", "99 is not a node id"),
    "violation pass missing": (
        _set("violations", 1, "pass_index", 4), "trace.violations[1].pass_index",
        "4 is not a pass"),
    "violation step missing": (
        _set("violations", 1, "step_index", 5), "trace.violations[1].step_index",
        "5 is not a step of pass 0"),
    "negative violation version": (
        _set("violations", 2, "current_version", -1), "trace.violations[2].current_version",
        "out of range"),
    # Files written before Trace.roots kept roots in metadata: read into trace.roots.
    "old metadata root missing": (
        _set("metadata", "root", 55), "trace.roots[0]", "55 is not a tensor id"),
    "old metadata roots not ids": (
        _set("metadata", "roots", ["a"]), "trace.roots[0]", "a is not a tensor id"),
    "roots missing": (
        _set("roots", [66]), "trace.roots[0]", "66 is not a tensor id"),
    "metadata count negative": (
        _set("metadata", "summarized_values", -4), "trace.metadata.summarized_values",
        "-4 is not a count"),
    "pass node marks not a list": (  # memory.py indexes it by pass (a long fuzz found it)
        _set("metadata", "pass_node_marks", True), "trace.metadata.pass_node_marks",
        "True is not a list of counts"),
}


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_each_inconsistency_names_its_place(saved, tmp_path, case):
    edit, where, words = CORRUPTIONS[case]
    damaged = _edited(saved, tmp_path, edit)
    with pytest.raises(TraceFileError) as info:
        tg.load_trace(damaged)
    assert info.value.where == where
    assert f"{where}: " in str(info.value) and words in str(info.value)
    assert info.value.file == damaged and damaged in str(info.value)
    assert "Hint: " in str(info.value)


def test_tables_are_checked_where_they_are_referred_to(saved, tmp_path):
    def negative_line(body, document):
        document["sites"][body["tensors"][2]["site"]]["line"] = -5

    with pytest.raises(TraceFileError, match=r"trace\.tensors\[2\]\.site\.line: -5 is out"):
        tg.load_trace(_edited(saved, tmp_path, negative_line))

    def too_many_nans(_, document):
        # x has 12 elements (and its statistics, left to its array, are now stored)
        document["values"][0]["stats"] = {"nan_count": 13}

    with pytest.raises(TraceFileError, match=r"trace\.tensors\[0\]\.value\.stats\.nan_count: "
                                             "13 NaN and 0 Inf in 12 elements"):
        tg.load_trace(_edited(saved, tmp_path, too_many_nans))

    def bad_value_dtype(_, document):
        document["values"][8]["dtype"] = "float99"
        del document["values"][8]["array"]  # statistics only: the codec has no array to check
        document["values"][8].setdefault("stats", {})  # schema 5 left them to the array

    with pytest.raises(TraceFileError, match=r"steps\[0\]\.grads_in\[0\]\.dtype: 'float99'"):
        tg.load_trace(_edited(saved, tmp_path, bad_value_dtype))


def test_a_table_row_nothing_refers_to_is_checked_and_named(saved, tmp_path):
    """The loader checks the sites and values tables row by row (not only the rows some
    record refers to): a damaged row nobody uses is named by its place in the table."""
    def unused_bad_value(_, document):
        document["values"].append({"shape": [2], "dtype": "float99", "stats": {}})

    with pytest.raises(TraceFileError) as info:
        tg.load_trace(_edited(saved, tmp_path, unused_bad_value))
    assert info.value.where == f"values[{_value_count(saved)}].dtype"

    def unused_bad_site(_, document):
        document["sites"].append({"file": "x.py", "line": -1, "function": "f", "code": ""})

    with pytest.raises(TraceFileError, match=r"sites\[\d+\]\.line: -1 is out of range"):
        tg.load_trace(_edited(saved, tmp_path, unused_bad_site))


def _value_count(saved: str) -> int:
    with zipfile.ZipFile(saved) as archive:
        return len(as_rows(json.loads(archive.read("trace.json")))["values"])


def test_references_to_ids_with_gaps_and_out_of_range():
    """Ids 0 to n - 1 are checked by their least and greatest; others one by one: both
    refuse an id that is not there."""
    trace = _program_trace()
    last = max(trace.nodes)
    for node_id in (last + 1, -1):
        trace.passes[0].steps[0].node = node_id
        with pytest.raises(InvalidTrace, match=f"steps\\[0\\]\\.node: {node_id} is not"):
            validate_trace(trace)
    trace.passes[0].steps[0].node = last
    trace.nodes[last + 5] = model.NodeRecord(last + 5, "CloneBackward0")  # ids with a gap
    validate_trace(trace)
    trace.passes[0].steps[0].node = last + 2  # within the least and greatest, not there
    with pytest.raises(InvalidTrace, match=f"steps\\[0\\]\\.node: {last + 2} is not a node"):
        validate_trace(trace)


def test_cycles_in_the_graph_are_refused(saved, tmp_path):
    def self_loop(body, _):
        body["nodes"][_node_position(body, "SumBackward0")]["next"] = [[4, 0]]

    with pytest.raises(TraceFileError) as info:
        tg.load_trace(_edited(saved, tmp_path, self_loop))
    assert "cycle: 4 (SumBackward0) -> 4 (SumBackward0)" in str(info.value)
    assert info.value.where == "trace.nodes[4].next"

    def loop_through_three(body, _):  # Mm -> Relu -> ... : Mm's edge back to Log
        body["nodes"][_node_position(body, "MmBackward0")]["next"][1] = [3, 0]

    with pytest.raises(TraceFileError) as info:
        tg.load_trace(_edited(saved, tmp_path, loop_through_three))
    assert "cycle: 0 (MmBackward0) -> 3 (LogBackward0) -> 2 (ReluBackward0) -> " \
           "0 (MmBackward0)" in str(info.value)

    def base_cycle(body, _):
        body["tensors"][2]["base"] = 4
        body["tensors"][4]["base"] = 2

    with pytest.raises(TraceFileError, match="view bases form a cycle: 2 -> 4 -> 2"):
        tg.load_trace(_edited(saved, tmp_path, base_cycle))


def test_a_harmless_change_still_loads(saved, tmp_path):
    """References to other records that exist are consistent: the trace loads."""
    loaded = tg.load_trace(_edited(saved, tmp_path, _set("passes", 0, "steps", 2, "node", 4)))
    assert loaded.passes[0].steps[2].node == 4


def test_every_model_field_has_a_rule():
    """Adding a field to model.py means adding its rule to validate.RULES."""
    # Site is defined with the engine (autograd/site.py) and is model.Site too
    classes = [cls for cls in vars(model).values()
               if dataclasses.is_dataclass(cls) and isinstance(cls, type)
               and (cls.__module__ == model.__name__ or cls is model.Site)]
    assert set(RULES) == set(classes)
    for cls in classes:
        fields = [field.name for field in dataclasses.fields(cls)]
        assert list(RULES[cls]) == fields, f"validate.RULES[{cls.__name__}] is out of date"
    # Every field that holds records names their class, so their rules run too.
    for cls, rules in RULES.items():
        hints = typing.get_type_hints(cls, vars(model))
        for name, rule in rules.items():
            held = {argument for argument in _flatten(hints[name])
                    if dataclasses.is_dataclass(argument)}
            if held:
                assert isinstance(rule, Records) and {rule.cls} == held, (cls, name)
            else:
                assert not isinstance(rule, Records) or rule is FREE, (cls, name)


def _flatten(hint):
    yield hint
    for argument in typing.get_args(hint):
        yield from _flatten(argument)


def test_validate_trace_directly():
    trace = _program_trace()
    validate_trace(trace)
    trace.passes[0].steps[0].node = 991
    with pytest.raises(InvalidTrace) as info:
        validate_trace(trace)
    assert info.value.where == "trace.passes[0].steps[0].node"
    assert isinstance(info.value, ValueError)


def test_recorded_programs_pass_validation():
    """Each example the tests run, recorded: the rules must never refuse a real trace."""
    sys.path.insert(0, EXAMPLES)
    try:
        import two_layer_net

        data = (tg.randn(8, 5), tg.randn(8, 2), tg.randn(5, 4, requires_grad=True),
                tg.randn(4, 2, requires_grad=True))
        with tg.record() as trace:
            two_layer_net.train(steps=3, data=data)
        validate_trace(trace)
        x = tg.randn(3, 4, requires_grad=True)
        view = x[1:].t()
        out = (view * 2).sum()
        validate_trace(tg.tracing.from_tensor(out))
    finally:
        sys.path.remove(EXAMPLES)


def test_limits_from_the_environment(monkeypatch):
    monkeypatch.setenv(LIMITS_VARIABLE, "max_array_bytes=2G, max_json_ratio=80")
    limits = TraceLimits.from_environment()
    assert limits.max_array_bytes == 2 << 30 and limits.max_json_ratio == 80
    assert limits.max_json_bytes == TraceLimits().max_json_bytes
    monkeypatch.setenv(LIMITS_VARIABLE, "max_bytes=1G")
    with pytest.raises(ValueError, match="unknown limit 'max_bytes'.*max_json_bytes"):
        TraceLimits.from_environment()
    monkeypatch.setenv(LIMITS_VARIABLE, "max_dims=lots")
    with pytest.raises(ValueError, match="max_dims='lots' is not a number"):
        TraceLimits.from_environment()
    with pytest.raises(ValueError, match="must be a positive number"):
        TraceLimits(max_elements=0)


def test_limits_from_the_environment_reach_load_trace(saved, tmp_path, monkeypatch):
    edited = _edited(saved, tmp_path, _set("tensors", 0, "shape", [1 << 30, 1 << 11]))
    with pytest.raises(TraceFileError) as info:
        tg.load_trace(edited)
    assert info.value.limit == "max_elements"
    assert f"{LIMITS_VARIABLE}=max_elements=2T" in str(info.value)
    assert f"limits=TraceLimits(max_elements={1 << 41})" in str(info.value)
    monkeypatch.setenv(LIMITS_VARIABLE, "max_elements=2T")
    assert tg.load_trace(edited).tensors[0].shape == (1 << 30, 1 << 11)


@pytest.mark.parametrize("name", ["tracegrad.tracing.store", "tracegrad.tracing.codec",
                                  "tracegrad.tracing.columns",
                                  "tracegrad.tracing.validate", "tracegrad.tracing.limits"])
def test_docstring_examples(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, (name, result)
