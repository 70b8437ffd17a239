"""The .tgtrace file: round trip, determinism, and a loader that only ever raises
TraceFileError for damaged files."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import random
import warnings
import zipfile

import numpy as np
import pytest
from trace_files import as_columns, as_rows, edit_rows

import tracegrad as tg
from tracegrad.errors import TraceFileError
from tracegrad.testing.graph_text import graph_text
from tracegrad.tracing.limits import TraceLimits
from tracegrad.tracing.model import SCHEMA_VERSION, Trace
from tracegrad.tracing.store import save_trace
from tracegrad.tracing.validate import validate_trace


def _program_trace(values: bool = True) -> Trace:
    tg.manual_seed(0)
    x = tg.randn(4, 3)
    w = tg.randn(3, 2, requires_grad=True)
    with tg.record(values=values) as tr:
        h = x.mm(w).relu()
        loss = h.log().sum()  # log(0): Inf stats and violations
        loss.backward()
        z = h * h
        h.add_(1)
        del z
    return tr


def _program_trace_keeping_stats() -> Trace:
    """_program_trace with the arrays of its values that hold an Inf let go, as over the
    memory budget: schema 5 stores their statistics as numbers (and leaves the others'
    to their arrays)."""
    trace = _program_trace()
    values = [record.value for record in trace.tensors.values()]
    values += [value for p in trace.passes for step in p.steps
               for value in (*step.grads_in, *step.grads_out)]
    for value in values:
        if value is not None and value.array is not None and value.stats.inf_count:
            value.array, value.dropped = None, "budget"
    return trace


def test_round_trip_compares_equal(tmp_path):
    trace = _program_trace()
    path = tmp_path / "run.tgtrace"
    trace.save(path)
    loaded = tg.load_trace(path)
    assert loaded == trace
    assert loaded.violations and loaded.passes[0].steps
    some_value = loaded.passes[0].steps[0].grads_in[0]
    assert isinstance(some_value.array, np.ndarray)
    with zipfile.ZipFile(path) as archive:
        document = as_rows(json.loads(archive.read("trace.json")))
        assert document["format"] == "tracegrad-trace"
        assert document["schema_version"] == SCHEMA_VERSION
        assert document["tracegrad"] == tg.__version__
        assert archive.namelist() == ["trace.json", "arrays.bin"]
        # Every array is in the table once, and shared Values and Sites are stored once.
        assert len(document["arrays"]) == len(document["values"]) > 0
        assert len(document["sites"]) == len(set(map(json.dumps, document["sites"])))
    assert sum(1 for step in loaded.passes[0].steps for _ in step.grads_in) > 0
    first, second = loaded.passes[0].steps[:2]
    assert second.grads_in[0] is first.grads_out[0]  # one Value, as when it was recorded


def test_same_program_byte_identical_without_timings(tmp_path):
    first, second = tmp_path / "a.tgtrace", tmp_path / "b.tgtrace"
    _program_trace().save(first, timings=False)
    _program_trace().save(second, timings=False)
    assert first.read_bytes() == second.read_bytes()
    assert all(step.duration_ns == 0 for p in tg.load_trace(first).passes for step in p.steps)


def test_huge_and_non_finite_values_save_without_numpy_warnings(tmp_path):
    """float64 values whose sum and sum of squares overflow (1e308) keep finite, exact
    statistics, and gradients holding both +inf and -inf are summarized: neither may
    print a NumPy RuntimeWarning into the traced program, nor stop the save."""
    x = tg.full((3,), 1e308, dtype=tg.float64, requires_grad=True)
    w = tg.tensor([1.0, float("inf"), -float("inf")], dtype=tg.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with tg.record() as trace:
            (x * 1.0).sum().backward()
            (x * w).sum().backward()
        trace.save(tmp_path / "huge.tgtrace")
    loaded = tg.load_trace(tmp_path / "huge.tgtrace")
    assert loaded == trace
    huge = next(tensor.value for tensor in loaded.tensors.values()
                if tensor.value is not None and tensor.value.shape == (3,)
                and tensor.value.stats.max == 1e308)
    assert huge.stats.mean == pytest.approx(1e308)
    assert huge.stats.norm == pytest.approx(3 ** 0.5 * 1e308)
    mixed = [value for step in loaded.passes[1].steps for value in step.grads_out
             if value is not None and value.stats.inf_count == 2]
    assert mixed and mixed[0].stats.max == mixed[0].stats.min == 1.0  # w: the finite one


def test_names_orjson_refuses_still_round_trip(tmp_path):
    """A lone surrogate in a name is not UTF-8 (orjson refuses it): the json module writes
    it as an escape instead, and the name reads back unchanged; other unicode is kept."""
    x = tg.ones(2, requires_grad=True)
    with tg.record() as trace:
        (x * 2).sum().backward()
    leaf = next(tensor for tensor in trace.tensors.values() if tensor.is_leaf)
    for name in ("größe_λ", "bad\udc80name"):
        leaf.name = name
        trace.save(tmp_path / "named.tgtrace")
        assert tg.load_trace(tmp_path / "named.tgtrace") == trace


def test_non_finite_metadata_is_refused_not_written_as_null(tmp_path):
    trace = _program_trace(values=False)
    trace.metadata["learning_rate"] = float("nan")
    with pytest.raises(ValueError, match="nan.*cannot be stored.*Hint"):
        trace.save(tmp_path / "nan.tgtrace")
    assert not (tmp_path / "nan.tgtrace").exists()


def test_missing_and_not_a_zip(tmp_path):
    with pytest.raises(TraceFileError, match="no such file"):
        tg.load_trace(tmp_path / "absent.tgtrace")
    junk = tmp_path / "junk.tgtrace"
    junk.write_text("print('hello')")
    with pytest.raises(TraceFileError, match="junk.tgtrace.*not a readable zip"):
        tg.load_trace(junk)


def _rewrite(path, out, edit):
    """A copy of the file at ``path`` with ``edit(document, members)`` applied: the document
    seen as one object per record (trace_files.as_rows), written back as columns."""
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    document = as_rows(json.loads(members["trace.json"]))
    edit(document, members)
    members["trace.json"] = json.dumps(as_columns(document)).encode()
    with zipfile.ZipFile(out, "w") as archive:
        for name, payload in members.items():
            archive.writestr(name, payload)


def test_newer_schema_and_wrong_format(tmp_path):
    path = tmp_path / "run.tgtrace"
    _program_trace().save(path)
    newer = tmp_path / "newer.tgtrace"
    _rewrite(path, newer, lambda doc, _: doc.update(schema_version=SCHEMA_VERSION + 1))
    with pytest.raises(TraceFileError, match=f"schema version {SCHEMA_VERSION + 1}.*upgrade"):
        tg.load_trace(newer)
    other = tmp_path / "other.tgtrace"
    _rewrite(path, other, lambda doc, _: doc.update(format="something-else"))
    with pytest.raises(TraceFileError, match="format"):
        tg.load_trace(other)


def test_wrong_types_missing_arrays_and_pickles_are_rejected(tmp_path):
    path = tmp_path / "run.tgtrace"
    _program_trace().save(path)

    def bad_type(document, _):
        document["trace"]["nodes"][0]["name"] = 7

    def missing_array(_, members):
        del members["arrays.bin"]

    def pickled_array(_, members):
        import io

        buffer = io.BytesIO()  # an object array: np.save stores it with pickle
        np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
        members["arrays.bin"] = buffer.getvalue()

    def object_dtype(document, _):
        document["arrays"][0][0] = "|O"

    def outside_blob(document, _):  # the last array runs past the end of arrays.bin
        document["arrays"][-1][1] = [document["array_bytes"]]

    def bad_value_reference(document, _):
        document["trace"]["passes"][0]["steps"][0]["grads_in"] = [len(document["values"])]

    def bad_site_reference(document, _):
        document["trace"]["nodes"][0]["site"] = -1

    def wrong_shape(document, _):
        document["values"][0]["shape"] = [999]

    edits = (bad_type, missing_array, pickled_array, object_dtype, outside_blob,
             bad_value_reference, bad_site_reference, wrong_shape)
    for index, edit in enumerate(edits):
        damaged = tmp_path / f"damaged{index}.tgtrace"
        _rewrite(path, damaged, edit)
        with pytest.raises(TraceFileError, match=f"damaged{index}.tgtrace"):
            tg.load_trace(damaged)


def test_error_names_the_json_path(tmp_path):
    path = tmp_path / "run.tgtrace"
    _program_trace().save(path)
    damaged = tmp_path / "damaged.tgtrace"

    def bad_saved_version(document, _):
        node = next(node for node in document["trace"]["nodes"] if node.get("saved"))
        node["saved"][0]["version"] = "zero"

    _rewrite(path, damaged, bad_saved_version)
    with pytest.raises(TraceFileError, match=r"trace\.nodes\[\d+\]\.saved\[0\]\.version: "
                                             "expected an integer, got a string"):
        tg.load_trace(damaged)


def test_schema_1_files_still_load(tmp_path):
    """Schema 1 wrote everything inline and one .npy member per array."""
    trace = _program_trace()
    inline = {"format": "tracegrad-trace", "schema_version": 1, "tracegrad": "0.1.0",
              "timings": True, "trace": _schema_1_encode(trace, arrays := [])}
    path = tmp_path / "old.tgtrace"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("trace.json", json.dumps(inline))
        for index, array in enumerate(arrays):
            import io

            buffer = io.BytesIO()
            np.save(buffer, array, allow_pickle=False)
            archive.writestr(f"arrays/{index:06d}.npy", buffer.getvalue())
    assert tg.load_trace(path) == trace


def test_schema_3_files_still_load_and_can_still_be_written(tmp_path):
    """Schema 3 had one JSON object per record; schema 4 writes columns, a third the size;
    schema 5 leaves the statistics of stored arrays to the arrays."""
    trace = _program_trace_keeping_stats()
    old, new = tmp_path / "old.tgtrace", tmp_path / "new.tgtrace"
    save_trace(trace, old, schema_version=3)
    save_trace(trace, new)
    with zipfile.ZipFile(old) as archive:
        document = json.loads(archive.read("trace.json"))
    assert document["schema_version"] == 3 and isinstance(document["trace"]["nodes"], list)
    assert tg.load_trace(old) == trace == tg.load_trace(new)
    with zipfile.ZipFile(new) as archive:
        document = json.loads(archive.read("trace.json"))
    assert document["schema_version"] == SCHEMA_VERSION == 5
    assert set(document["trace"]) == {"count", "columns"}
    with pytest.raises(ValueError, match="schema_version must be one of 3, 4, 5, got 6"):
        save_trace(trace, tmp_path / "x.tgtrace", schema_version=6)


def test_schema_4_files_still_load_and_can_still_be_written(tmp_path):
    """Schema 4 stores every value's statistics and lists each array's offset; schema 5
    stores those of values without an array (or whose array does not give them) and
    leaves the offsets implied. Both load to the same trace, statistics included."""
    trace = _program_trace_keeping_stats()
    old, new = tmp_path / "old.tgtrace", tmp_path / "new.tgtrace"
    save_trace(trace, new)  # first: writing schema 4 computes every value's statistics
    save_trace(trace, old, schema_version=4)
    with zipfile.ZipFile(old) as archive:
        document = json.loads(archive.read("trace.json"))
    assert document["schema_version"] == 4 and isinstance(document["arrays"], list)
    stats = document["values"]["columns"]["stats"]
    assert stats["count"] == document["values"]["count"]
    with zipfile.ZipFile(new) as archive:
        document = json.loads(archive.read("trace.json"))
    stats = document["values"]["columns"]["stats"]
    assert 0 < len(stats["rows"]) < document["values"]["count"]
    assert isinstance(document["arrays"], dict)
    from_old, from_new = tg.load_trace(old), tg.load_trace(new)
    assert from_old == trace == from_new
    pairs = [(a.value, b.value) for a, b in zip(from_old.tensors.values(),
                                                from_new.tensors.values()) if a.value]
    assert pairs and all(_same_stats(a.stats, b.stats) for a, b in pairs)


def _same_stats(first, second) -> bool:
    """Equal to the bit (-0.0 is not 0.0)."""
    return all(np.array(getattr(first, name)).tobytes() == np.array(getattr(second, name))
               .tobytes() for name in ("min", "max", "mean", "norm", "nan_count", "inf_count"))


def _columns_of(document, *path):
    """The columns of a nested table: _columns_of(doc, "nodes", "saved") is the table of
    every node's saved tensors."""
    table = document["trace"]
    for name in path:
        table = table["columns"][name]["records"]
    return table


COLUMN_DAMAGE = {  # (edit of the columns, words the error must hold)
    "a column too short": (
        lambda doc: _columns_of(doc, "nodes")["columns"]["name"].pop(),
        "trace.nodes.records.name: expected 7 values, got 6"),
    "lengths that do not add up": (
        lambda doc: doc["trace"]["columns"]["nodes"]["lengths"].__setitem__(0, 5),
        "trace.nodes.lengths: the lengths add up to 5 but there are 7 records"),
    "a negative length": (
        lambda doc: doc["trace"]["columns"]["nodes"]["lengths"].__setitem__(0, -1),
        "trace.nodes.lengths: lengths must be integers >= 0"),
    "a count that is not a number": (
        lambda doc: _columns_of(doc, "nodes", "saved").__setitem__("count", "many"),
        "trace.nodes.records.saved.records: a table's count must be an integer >= 0"),
    "columns not an object": (
        lambda doc: doc["values"].__setitem__("columns", []),
        "values.columns: expected an object of columns, got a list"),
    "a billion statistics asked for by a count alone": (
        lambda doc: doc["values"]["columns"]["stats"]["records"].__setitem__("count", 10 ** 9),
        "values.stats.records: expected 3 records, got 1000000000"),
    "statistics rows that do not rise": (
        lambda doc: doc["values"]["columns"]["stats"]["rows"].reverse(),
        "values.stats.rows: rows must rise from 0 to at most 12"),
    "statistics rows past the table": (
        lambda doc: doc["values"]["columns"]["stats"]["rows"].__setitem__(-1, 13),
        "values.stats.rows: rows must rise from 0 to at most 12"),
    "statistics of the wrong type": (
        lambda doc: doc["values"]["columns"]["stats"]["records"]["columns"]["min"]
        .__setitem__(1, "low"), "values[5].stats.min: expected a number, got a string"),
    "a value with neither statistics nor an array": (
        lambda doc: doc["values"]["columns"]["array"].__setitem__(0, None),
        "values[0].stats: the value has neither statistics nor an array"),
    "two traces": (
        lambda doc: doc["trace"].__setitem__("count", 2), "trace: expected 1 records, got 2"),
    "a required column missing": (
        lambda doc: _columns_of(doc, "tensors")["columns"].pop("dtype"),
        "trace.tensors[0]: missing field 'dtype'"),
    "a wrong type deep in a nested table": (
        lambda doc: _columns_of(doc, "passes", "steps")["columns"]["node"].__setitem__(
            2, "seven"), "trace.passes[0].steps[2].node: expected an integer, got a string"),
    "an edge of three items": (
        lambda doc: _columns_of(doc, "nodes")["columns"]["next"][0].__setitem__(0, [1, 0, 0]),
        "trace.nodes[0].next[0]: expected 2 items, got 3"),
    "a Value row out of the table": (
        lambda doc: _columns_of(doc, "passes", "steps")["columns"]["grads_in"][0].__setitem__(
            0, 10_000), "trace.passes[0].steps[0].grads_in[0]: Value number 10000 is not in"),
    "a Site row of the wrong type": (
        lambda doc: _columns_of(doc, "nodes")["columns"]["site"].__setitem__(1, "a"),
        "trace.nodes[1].site: expected a Site number, got a string"),
}


@pytest.mark.parametrize("case", sorted(COLUMN_DAMAGE))
def test_damaged_columns_name_the_record(tmp_path, case):
    """Damage only the column layout can have: each names the record (or the column) it
    is in, as TraceFileError."""
    edit, words = COLUMN_DAMAGE[case]
    _assert_damage_named(tmp_path, _program_trace_keeping_stats(), edit, words)


def _assert_damage_named(tmp_path, trace: Trace, edit, words: str) -> None:
    """Save ``trace``, apply ``edit`` to its trace.json, and expect a TraceFileError whose
    message contains ``words``."""
    path = tmp_path / "run.tgtrace"
    trace.save(path)
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    document = json.loads(members["trace.json"])
    edit(document)
    members["trace.json"] = json.dumps(document).encode()
    damaged = tmp_path / "damaged.tgtrace"
    _write_zip(damaged, list(members.items()))
    with pytest.raises(TraceFileError) as info:
        tg.load_trace(damaged)
    assert words in str(info.value), str(info.value)


def _chain_trace(length: int = 40) -> Trace:
    x = tg.name(tg.ones(4, requires_grad=True), "x")
    with tg.record() as tr:
        y = x
        for _ in range(length):
            y = y * 1.0
        y.sum().backward()
    return tr


def test_repeated_strings_and_rare_values_take_short_forms(tmp_path):
    """Op names repeat (a string table: codes), a tensor's name is rare (sparse: rows and
    values); both load back as they were."""
    trace = _chain_trace()
    path = tmp_path / "chain.tgtrace"
    trace.save(path)
    with zipfile.ZipFile(path) as archive:
        document = json.loads(archive.read("trace.json"))
    nodes = _columns_of(document, "nodes")["columns"]
    assert nodes["name"]["strings"] == ["MulBackward0", "AccumulateGrad", "SumBackward0"]
    assert len(nodes["name"]["codes"]) == len(trace.nodes)
    tensor_names = _columns_of(document, "tensors")["columns"]["name"]
    assert tensor_names["rows"][0] == 0 and tensor_names["values"][0] == "x"
    assert len(tensor_names["rows"]) < len(trace.tensors) / 4
    assert tg.load_trace(path) == trace


SHORT_FORM_DAMAGE = {
    "a code out of the string table": (
        lambda doc: _columns_of(doc, "nodes")["columns"]["name"]["codes"].__setitem__(5, 9),
        "trace.nodes[5].name: string number 9 is not in the table (3 rows)"),
    "a string table of numbers": (
        lambda doc: _columns_of(doc, "nodes")["columns"]["name"]["strings"].__setitem__(0, 1),
        "trace.nodes.records.name.strings[0]: expected a string, got an integer"),
    "sparse rows out of order": (
        lambda doc: _columns_of(doc, "tensors")["columns"]["name"].update(
            rows=[3, 1], values=["a", "b"]), "rows must rise from 0 to at most"),
    "a sparse row past the end": (
        lambda doc: _columns_of(doc, "tensors")["columns"]["name"].update(rows=[10_000]),
        "rows must rise from 0 to at most"),
    "a sparse value of the wrong type": (
        lambda doc: _columns_of(doc, "tensors")["columns"]["name"]["values"].__setitem__(0, 7),
        "trace.tensors[0].name: expected a string, got an integer"),
    "a code out of the shape table": (  # schema 5 tables shapes as it does strings
        lambda doc: _columns_of(doc, "tensors")["columns"]["shape"]["codes"].__setitem__(3, 4),
        "trace.tensors[3].shape: tuple number 4 is not in the table (2 rows)"),
    "a shape table of strings": (
        lambda doc: _columns_of(doc, "tensors")["columns"]["shape"]["tuples"].__setitem__(
            0, "4"), "trace.tensors.records.shape.tuples[0]: expected a list, got a string"),
    "a shape of text": (
        lambda doc: doc["values"]["columns"]["shape"]["tuples"][0].__setitem__(0, "4"),
        "values.shape.tuples[0][0]: expected an integer, got a string"),
    "shape codes not a list": (
        lambda doc: doc["values"]["columns"]["shape"].__setitem__("codes", 0),
        "values.shape.codes: expected a column (a list), got an integer"),
}


@pytest.mark.parametrize("case", sorted(SHORT_FORM_DAMAGE))
def test_damaged_short_forms_name_the_record(tmp_path, case):
    edit, words = SHORT_FORM_DAMAGE[case]
    _assert_damage_named(tmp_path, _chain_trace(), edit, words)


def _schema_1_encode(value, arrays):
    """The schema-1 encoder: every field, Sites and Values written in place."""
    import dataclasses

    if dataclasses.is_dataclass(value):
        data = {}
        for field in dataclasses.fields(value):
            item = getattr(value, field.name)
            if isinstance(item, dict) and field.name in ("tensors", "nodes"):
                item = [item[key] for key in sorted(item)]
            data[field.name] = _schema_1_encode(item, arrays)
        return data
    if isinstance(value, np.ndarray):
        arrays.append(value)
        return {"npy": len(arrays) - 1}
    if isinstance(value, dict):
        return {str(key): _schema_1_encode(item, arrays) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_schema_1_encode(item, arrays) for item in value]
    return value


def _load_or_clear_error(path) -> None:
    try:
        loaded = tg.load_trace(path)
    except TraceFileError as error:
        assert str(path) in str(error)
        return
    assert isinstance(loaded, Trace)  # a harmless flip: still a well-formed trace
    for record in loaded.tensors.values():
        assert isinstance(record.shape, tuple)
    for node in loaded.nodes.values():
        assert isinstance(node.name, str)


def test_fuzz_truncations_only_give_trace_file_error(tmp_path):
    path = tmp_path / "run.tgtrace"
    _program_trace().save(path)
    payload = path.read_bytes()
    damaged = tmp_path / "truncated.tgtrace"
    offsets = sorted(set(range(0, len(payload), max(1, len(payload) // 150)))
                     | {len(payload) - 1, len(payload) - 22, 1, 4})
    for offset in offsets:
        damaged.write_bytes(payload[:offset])
        with pytest.raises(TraceFileError):
            tg.load_trace(damaged)


def test_fuzz_bit_flips_only_give_trace_file_error_or_a_valid_trace(tmp_path):
    path = tmp_path / "run.tgtrace"
    _program_trace().save(path)
    payload = bytearray(path.read_bytes())
    generator = random.Random(1234)
    damaged = tmp_path / "flipped.tgtrace"
    for _ in range(300):
        flipped = bytearray(payload)
        for _ in range(generator.choice((1, 1, 2, 8))):
            position = generator.randrange(len(flipped))
            flipped[position] ^= 1 << generator.randrange(8)
        damaged.write_bytes(bytes(flipped))
        _load_or_clear_error(damaged)


def test_fuzz_json_corruption_inside_a_valid_zip(tmp_path):
    """Flips inside trace.json itself, re-zipped with a correct CRC, so the decoder (not
    the zip checksum) must catch them."""
    path = tmp_path / "run.tgtrace"
    _program_trace(values=False).save(path)
    with zipfile.ZipFile(path) as archive:
        text = bytearray(archive.read("trace.json"))
    generator = random.Random(99)
    damaged = tmp_path / "json.tgtrace"
    for _ in range(200):
        corrupted = bytearray(text)
        position = generator.randrange(len(corrupted))
        corrupted[position] = generator.choice(b'0123456789"{}[],:nulltruefalse-x')
        with zipfile.ZipFile(damaged, "w") as archive:
            archive.writestr("trace.json", bytes(corrupted))
        _load_or_clear_error(damaged)


def test_summary_text():
    text = _program_trace().summary()
    assert text.splitlines()[0].startswith("trace: ")
    assert "MmBackward0" in text and "backward passes: 1 (" in text
    assert "[inplace_saved]" in text and "[inf]" in text


# -- semantic fuzzing: damaged files either load consistent or raise TraceFileError ------
# FUZZ_CASES files in the default run; TRACEGRAD_FUZZ_CASES=5000 for a longer manual run
# (which also drives the TUI for every file that loads, not only the first few).
FUZZ_CASES = int(os.environ.get("TRACEGRAD_FUZZ_CASES", "300"))
PILOT_FILES = None if "TRACEGRAD_FUZZ_CASES" in os.environ else 4
FUZZ_LIMITS = TraceLimits(max_json_bytes=4 << 20, max_array_bytes=4 << 20)


def _rich_trace() -> Trace:
    """Two passes, a view, a retained gradient, an in-place violation, an Inf."""
    tg.manual_seed(0)
    x = tg.randn(4, 3)
    w = tg.randn(3, 2, requires_grad=True)
    with tg.record(keep_passes=None) as tr:
        h = x.mm(w).relu()
        h.retain_grad()
        top = h[1:]  # a view: its record has a base
        loss = (top.log().sum() + h.sum()) * 0.5
        loss.backward(retain_graph=True)
        loss.backward()
        z = h * h
        h.add_(1)
        del z
    return tr


def _paths(item, path=(), found=None) -> list[tuple]:
    """The path (keys from the top) of every value in a JSON document, depth first."""
    found = [] if found is None else found
    keys = item.keys() if isinstance(item, dict) else range(len(item)) \
        if isinstance(item, list) else ()
    for key in keys:
        found.append((*path, key))
        _paths(item[key], (*path, key), found)
    return found


def _slot(document, path: tuple):
    """(container, key) at ``path``, or None when an earlier change moved it away."""
    container = document
    try:
        for key in path[:-1]:
            container = container[key]
        container[path[-1]]
    except (KeyError, IndexError, TypeError):
        return None
    return container, path[-1]


_REPLACEMENTS = (
    lambda rng: rng.randint(-2, 12), lambda rng: rng.randint(-2, 12),
    lambda rng: rng.randint(-2, 12),  # mostly small ints: references that may exist
    lambda rng: rng.choice([-1, -(2 ** 63), 2 ** 31, 2 ** 63, 2 ** 64, 10 ** 30]),
    lambda rng: None, lambda rng: rng.choice(["", "x", "float31", "[b]oops[/]", "\x00"]),
    lambda rng: rng.choice([0.5, 1e308, -0.0]), lambda rng: rng.choice([[], [0, 0], [[0, 0]]]),
    lambda rng: {}, lambda rng: rng.choice([True, False]),
    lambda rng: [1 << 20] * rng.randint(2, 70),  # a huge shape, or one with many dims
)


def _mutate_document(document: dict, paths: list[tuple], rng: random.Random) -> None:
    """One to three random changes: a replaced value, a deleted key, a duplicated item."""
    for _ in range(rng.choice((1, 1, 2, 3))):
        slot = _slot(document, rng.choice(paths))
        if slot is None:
            continue
        container, key = slot
        if isinstance(container, dict) and rng.random() < 0.15:
            del container[key]
        elif isinstance(container, list) and rng.random() < 0.1:
            container.insert(key, json.loads(json.dumps(container[key])))  # a duplicate
        else:
            container[key] = rng.choice(_REPLACEMENTS)(rng)


def _edge_or_base(document: dict, rng: random.Random) -> None:
    """Edges and bases between existing records: cycles, or harmless extra links."""
    body = document["trace"]
    if rng.random() < 0.5:
        node = rng.choice(body["nodes"])
        node.setdefault("next", []).append([rng.choice(body["nodes"])["id"], 0])
    else:
        rng.choice(body["tensors"])["base"] = rng.choice(body["tensors"])["id"]


def _damaged_members(members: dict, paths: list[tuple], rng: random.Random) -> list:
    """(name, payload) entries of a damaged archive."""
    document = json.loads(members["trace.json"])
    choice = rng.random()
    entries = dict(members)
    if choice < 0.6:
        _mutate_document(document, paths, rng)
    elif choice < 0.75:
        document = edit_rows(document, lambda rows: _edge_or_base(rows, rng))
    elif choice < 0.85 and isinstance(document["arrays"], list):  # schemas 2 to 4
        entry = rng.choice(document["arrays"])  # offsets, sizes and dtypes
        position = rng.randrange(3)
        entry[position] = {0: lambda: rng.choice(["<f8", "|b1", "<U3", "zz"]),
                           1: lambda: [rng.randint(-1, 9)],
                           2: lambda: entry[2] + rng.choice((-16, -1, 1, 8, 16))}[position]()
    elif choice < 0.85:  # schema 5's arrays in columns: dtypes, shapes and codes
        table = document["arrays"]
        name = rng.choice(["dtypes", "shapes", "dtype", "shape"])
        position = rng.randrange(len(table[name]))
        table[name][position] = {
            "dtypes": lambda: rng.choice(["<f8", "|b1", "<U3", "zz", "<f2"]),
            "shapes": lambda: rng.choice([[rng.randint(-1, 9)], [], [2, 0], [1 << 40]]),
            "dtype": lambda: rng.randint(-1, len(table["dtypes"])),
            "shape": lambda: rng.randint(-1, len(table["shapes"]))}[name]()
    elif choice < 0.95:  # a member twice, the second different
        twin = json.loads(json.dumps(document))
        _mutate_document(twin, paths, rng)
        name = rng.choice(["trace.json", "arrays.bin"])
        payload = json.dumps(twin).encode() if name == "trace.json" \
            else members["arrays.bin"][::-1]
        return [*entries.items(), (name, payload)]
    else:  # arrays.bin shorter or longer than the table says
        blob = members["arrays.bin"]
        entries["arrays.bin"] = blob[:rng.randrange(len(blob))] if rng.random() < 0.5 \
            else blob + bytes(rng.choice((1, 16, 4096)))
    entries["trace.json"] = json.dumps(document).encode()
    return list(entries.items())


def _write_zip(path, entries: list) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about duplicate names
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
            for name, payload in entries:
                archive.writestr(name, payload)


def _run_cli(argv: list[str]) -> tuple[int, str, str]:
    from tracegrad.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


def _drive_consumers(path, folder, loaded: Trace) -> None:
    """What a user does with a trace file: --dump, render to DOT, the graph text, the
    summary. Any exception here is a consumer meeting a trace the loader let through."""
    status, dumped, errors = _run_cli(["tui", "--dump", str(path)])
    assert status == 0 and not errors, errors
    assert dumped
    status, _, errors = _run_cli(["render", "--format", "dot", "-o", str(folder / "g.dot"),
                                  str(path)])
    assert status == 0, errors
    graph_text(loaded)
    loaded.summary()


async def _drive_tui(trace: Trace) -> None:
    from tracegrad.tui.app import DebuggerApp

    app = DebuggerApp(trace, source="fuzz.tgtrace", layout_engine="grandalf")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("n", "G", "right_square_bracket", "c")
        await pilot.pause()


def _fuzz(tmp_path, cases: int, seed: int) -> dict:
    path = tmp_path / "run.tgtrace"
    _rich_trace().save(path, timings=False)
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    paths = _paths(json.loads(members["trace.json"]))
    damaged = tmp_path / "damaged.tgtrace"
    counts = {"refused": 0, "loaded": 0, "driven in the TUI": 0}
    seen: set[str] = set()
    for case in range(cases):
        rng = random.Random(seed + case)
        _write_zip(damaged, _damaged_members(members, paths, rng))
        try:
            loaded = tg.load_trace(damaged, limits=FUZZ_LIMITS)
        except TraceFileError as error:
            assert str(damaged) in str(error)
            counts["refused"] += 1
            continue
        counts["loaded"] += 1
        validate_trace(loaded)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # Inf/NaN statistics
            _drive_consumers(damaged, tmp_path, loaded)
        # The TUI costs a second a file here: drive it for each distinct trace, the first
        # few in the default run and all of them in a long one.
        key = _canonical(loaded)
        if key not in seen and (PILOT_FILES is None or len(seen) < PILOT_FILES):
            seen.add(key)
            asyncio.run(_drive_tui(loaded))
            counts["driven in the TUI"] += 1
    return counts


def _canonical(trace: Trace) -> str:
    from tracegrad.tracing.codec import encode_trace

    return json.dumps(encode_trace(trace, [], timings=False), sort_keys=True, default=str)


def test_fuzz_semantic_corruptions_load_consistent_or_raise(tmp_path):
    """Dangling references, cycles, out-of-range values, huge shapes, duplicate members,
    moved offsets: each damaged file raises TraceFileError, or loads into a trace every
    consumer (tui --dump, render, graph_text, summary, the TUI itself) can show."""
    pytest.importorskip("textual")
    counts = _fuzz(tmp_path, FUZZ_CASES, seed=16_000)
    print(f"semantic fuzz: {counts}")
    assert counts["refused"] > FUZZ_CASES // 2 and counts["loaded"] > 0


def test_arrays_are_deflated_only_when_it_pays(tmp_path):
    """Random floats barely shrink and deflate is slow on them: stored as they are.
    Zeros shrink to nothing, fast: deflated. Both load back the same."""
    rng = np.random.default_rng(0)
    for label, array, method in (("noise", rng.normal(size=(512, 1024)), zipfile.ZIP_STORED),
                                 ("zeros", np.zeros((512, 1024)), zipfile.ZIP_DEFLATED)):
        value = tg.tracing.model.Value(array.shape, "float64",
                                       tg.tracing.model.Stats(), array)
        trace = Trace(tensors={0: tg.tracing.model.TensorRecord(
            0, array.shape, "float64", value=value)})
        path = tmp_path / f"{label}.tgtrace"
        trace.save(path)
        with zipfile.ZipFile(path) as archive:
            assert archive.getinfo("arrays.bin").compress_type == method
            assert archive.getinfo("trace.json").compress_type == zipfile.ZIP_DEFLATED
        assert tg.load_trace(path) == trace


def test_commands_say_what_is_wrong_with_a_damaged_file(tmp_path):
    """tui --dump and render: one line naming the file and the place, no traceback."""
    path = tmp_path / "run.tgtrace"
    _program_trace().save(path)
    damaged = tmp_path / "damaged.tgtrace"

    def dangling_step(document, _):
        document["trace"]["passes"][0]["steps"][1]["node"] = 991

    _rewrite(path, damaged, dangling_step)
    for argv in (["tui", "--dump", str(damaged)],
                 ["render", "--format", "dot", "-o", str(tmp_path / "g.dot"), str(damaged)]):
        status, out, errors = _run_cli(argv)
        assert status in (1, 2) and not out
        assert "trace.passes[0].steps[1].node: 991 is not a node id" in errors
        assert "Traceback" not in errors and len(errors.strip().splitlines()) == 1


def _captured_values() -> list:
    """Values as the tracer captures them: arrays of many kinds, shapes and layouts, with
    the edge cases of statistics (signed zeros, NaN, Inf, huge and tiny numbers)."""
    from tracegrad.tracing.values import ValueBudget

    rng = np.random.default_rng(7)
    budget = ValueBudget()
    arrays = [np.array([0.0, -0.0]), np.array([-0.0, 0.0], np.float32),
              np.full((), 3.5, np.float32), np.array([np.nan, 1.0, -np.inf]),
              np.array([1e308, 1e308]),
              np.array([3e38, 3e38], np.float32), np.arange(7, dtype=np.int64),
              np.array([True, False, True]), np.zeros((0, 2), np.float32)]
    for dtype in (np.float32, np.float64):
        for shape in ((1,), (4,), (3, 5), (17, 33), (2, 3, 4), (5000,), (64, 100)):
            scale = 10.0 ** rng.integers(-30, 30)
            arrays.append((rng.standard_normal(shape) * scale).astype(dtype))
    arrays.append(np.asfortranarray(rng.standard_normal((6, 7))))  # stored as numbers
    values = [budget.capture(array) for array in arrays]
    values.append(budget.capture(rng.standard_normal((8, 8))[:, ::3]))  # a strided view
    return values


def test_statistics_left_to_arrays_are_the_same_to_the_bit(tmp_path):
    """Schema 5 stores no statistics for a value whose array gives them; loaded, they are
    computed from the loaded array, and must be the numbers the recording process gets
    from its own copy, to the bit (same bytes, same C order: the same reductions)."""
    from tracegrad.tracing.values import compute_stats, stats_from_arrays

    values = _captured_values()
    left = stats_from_arrays(values)
    assert left.count(False) == 2 and not left[-1] and not left[-2]  # F order, strided
    # Those two are stored as numbers unless the array, C-ordered as the file keeps it,
    # gives them to the bit.
    left = [kept or _same_stats(compute_stats(np.ascontiguousarray(value.array)), value.stats)
            for kept, value in zip(left, values)]
    trace = Trace(tensors={
        index: tg.tracing.model.TensorRecord(id=index, shape=value.shape, dtype=value.dtype,
                                             value=value)
        for index, value in enumerate(values)})
    path = tmp_path / "values.tgtrace"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # computing statistics never warns
        save_trace(trace, path)
        loaded = tg.load_trace(path)
        assert [type(record.value.stats).__name__ for record in loaded.tensors.values()] \
            == ["PendingStats" if kept else "Stats" for kept in left]
        for index, value in enumerate(values):
            assert _same_stats(loaded.tensors[index].value.stats, value.stats), index
    assert loaded == trace


def test_statistics_are_left_to_the_array_only_when_it_gives_them():
    """Pending statistics of the value's own C-ordered copy: left to the array. Computed
    ones (read before saving, or made from a strided view), those of an F-ordered copy, of
    an array given back, or of a value made by hand: stored."""
    from tracegrad.tracing.model import Stats, Value
    from tracegrad.tracing.values import (
        ValueBudget,
        settle_stats,
        stats_from_array,
        stats_from_arrays,
    )

    budget = ValueBudget()
    released = budget.capture(np.ones(5))
    budget.release(released)
    moved = budget.capture(np.ones(5))
    moved.array = None  # by hand, without release(): the statistics' array is gone
    settled = budget.capture(np.ones(5))
    settle_stats(settled)
    values = [budget.capture(np.ones((3, 2))),
              budget.capture(np.asfortranarray(np.ones((3, 2)))), budget.capture(np.ones((4, 4))[:, ::2]), budget.capture(np.ones(3), False),
              Value((2,), "float64", Stats(), np.ones(2)), released, moved, settled]
    assert stats_from_arrays(values) == [True] + [False] * 7
    assert list(map(stats_from_array, values)) == [True] + [False] * 7
    assert type(values[0].stats).__name__ == "PendingStats"  # deciding computed nothing


def test_loaded_records_share_empty_lists_as_recorded_ones_do(tmp_path):
    """Records with nothing in a list or dict field share the model's read-only empties on
    loading, as the recorder's records do (and a change to one raises, naming what to do);
    they compare equal to fresh ones."""
    trace = _chain_trace()
    path = tmp_path / "chain.tgtrace"
    trace.save(path)
    loaded = tg.load_trace(path)
    assert loaded == trace
    record = loaded.tensors[next(iter(loaded.tensors))]
    assert record.versions is tg.tracing.model.NO_ITEMS and record.versions == []
    node = next(node for node in loaded.nodes.values() if not node.saved)
    with pytest.raises(TypeError, match="assign a list of the record's own"):
        node.saved.append(1)
    assert loaded.passes[0].steps[0].hooks is tg.tracing.model.NO_ITEMS
    structure = tmp_path / "structure.tgtrace"
    _program_trace(values=False).save(structure)
    step = tg.load_trace(structure).passes[0].steps[0]
    assert step.grads_in == [None] * len(step.grads_in)
    assert step.grads_in is tg.tracing.model.nones(len(step.grads_in))
