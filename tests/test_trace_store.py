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
from tracegrad.trace.model import SCHEMA_VERSION, Trace


def _program_trace(values: bool = True) -> Trace:
    tg.manual_seed(0)
    x = tg.randn(4, 3)
    w = tg.randn(3, 2, requires_grad=True)
    with tg.trace(values=values) as tr:
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
        assert any(name.startswith("arrays/") for name in archive.namelist())


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
        del members[min(name for name in members if name.startswith("arrays/"))]

    def pickled_array(_, members):
        import io

        buffer = io.BytesIO()  # an object array: np.save stores it with pickle
        np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
        name = min(name for name in members if name.startswith("arrays/"))
        members[name] = buffer.getvalue()

    for index, edit in enumerate((bad_type, missing_array, pickled_array)):
        damaged = tmp_path / f"damaged{index}.tgtrace"
        _rewrite(path, damaged, edit)
        with pytest.raises(TraceFileError, match=f"damaged{index}.tgtrace"):
            tg.load_trace(damaged)


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
