"""The .tgtrace file: round trip, determinism, and a loader that only ever raises
TraceFileError for damaged files."""

from __future__ import annotations

import json
import random
import zipfile

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.errors import TraceFileError
from tracegrad.tracing.model import SCHEMA_VERSION, Trace


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
        document = json.loads(archive.read("trace.json"))
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


def test_missing_and_not_a_zip(tmp_path):
    with pytest.raises(TraceFileError, match="no such file"):
        tg.load_trace(tmp_path / "absent.tgtrace")
    junk = tmp_path / "junk.tgtrace"
    junk.write_text("print('hello')")
    with pytest.raises(TraceFileError, match="junk.tgtrace.*not a readable zip"):
        tg.load_trace(junk)


def _rewrite(path, out, edit):
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    document = json.loads(members["trace.json"])
    edit(document, members)
    members["trace.json"] = json.dumps(document).encode()
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

    def outside_blob(document, _):
        document["arrays"][-1][2] = document["array_bytes"]

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
