"""The .tgtrace zip as hostile input: size limits checked before and while decompressing,
duplicate members, array offsets exactly where the writer puts them (or, since schema 5,
implied by an arrays table in columns), and schema-1 .npy
headers parsed strictly -- every problem a TraceFileError, never a huge allocation or
another exception."""

from __future__ import annotations

import io
import json
import struct
import tracemalloc
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.errors import TraceFileError
from tracegrad.tracing import model
from tracegrad.tracing.limits import TraceLimits
from tracegrad.tracing.store import save_trace

HEADER = {"format": "tracegrad-trace", "schema_version": 2, "tracegrad": "0.1.0"}


def _zip(path, members: dict, compression=zipfile.ZIP_DEFLATED) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about duplicate names
        with zipfile.ZipFile(path, "w", compression) as archive:
            for name, payload in members.items() if isinstance(members, dict) else members:
                archive.writestr(name, payload)
    return str(path)


def _document(**fields) -> bytes:
    return json.dumps({**HEADER, "arrays": [], "array_bytes": 0, "trace": {}, **fields}).encode()


def _with_declared_size(path, member: str, size: int) -> None:
    """Make the zip's central directory claim ``size`` decompressed bytes for ``member``
    (what zipfile trusts), as a crafted file would."""
    data = bytearray(Path(path).read_bytes())
    name = member.encode()
    position = data.find(b"PK\x01\x02")
    while position >= 0:
        name_length = struct.unpack_from("<H", data, position + 28)[0]
        if bytes(data[position + 46:position + 46 + name_length]) == name:
            struct.pack_into("<I", data, position + 24, size)
        position = data.find(b"PK\x01\x02", position + 4)
    Path(path).write_bytes(bytes(data))


def _peak_bytes(function) -> int:
    tracemalloc.start()
    try:
        function()
    except TraceFileError:
        pass
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def test_declared_sizes_over_the_limit_are_refused_before_reading(tmp_path):
    path = _zip(tmp_path / "claims.tgtrace", {"trace.json": _document()})
    _with_declared_size(path, "trace.json", 3 << 30)
    with pytest.raises(TraceFileError) as info:
        tg.load_trace(path)
    assert info.value.limit == "max_json_bytes"
    message = str(info.value)
    assert "trace.json would take 3221225472 bytes decompressed, over the limit of " \
           "1073741824 (TraceLimits.max_json_bytes)" in message
    assert "TRACEGRAD_TRACE_LIMITS=max_json_bytes=3G" in message
    assert _peak_bytes(lambda: tg.load_trace(path)) < 4 << 20


def test_a_decompression_bomb_is_refused_by_its_ratio(tmp_path):
    path = tmp_path / "bomb.tgtrace"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive, \
            archive.open("trace.json", "w", force_zip64=True) as member:
        member.write(_document()[:-1] + b" ")
        chunk = b" " * (1 << 20)
        for _ in range(65):  # 65 MiB of spaces: about 64 KB compressed
            member.write(chunk)
        member.write(b"}")
    assert path.stat().st_size < 1 << 20
    with pytest.raises(TraceFileError, match=r"decompress \d+ times its stored size.*"
                                             r"TraceLimits\.max_json_ratio.*bomb") as info:
        tg.load_trace(path)
    assert info.value.limit == "max_json_ratio"
    assert _peak_bytes(lambda: tg.load_trace(path)) < 4 << 20


def test_the_arrays_table_is_checked_against_the_limit_before_reading(tmp_path):
    huge = _document(arrays=[["<f4", [1 << 29], 0]], array_bytes=2 << 30)
    path = _zip(tmp_path / "arrays.tgtrace", {"trace.json": huge})
    with pytest.raises(TraceFileError, match=r"arrays\.bin would take 2147483648 bytes.*"
                                             r"max_array_bytes") as info:
        tg.load_trace(path)
    assert info.value.limit == "max_array_bytes"
    limits = TraceLimits(max_array_bytes=4 << 30)
    with pytest.raises(TraceFileError, match="member arrays.bin is missing"):
        tg.load_trace(path, limits=limits)  # trusted: now the missing member is the problem
    small = _document(arrays=[["<f4", [4], 0]], array_bytes=16)
    path = _zip(tmp_path / "small.tgtrace", {"trace.json": small, "arrays.bin": bytes(16)})
    with pytest.raises(TraceFileError, match="TraceLimits.max_array_bytes"):
        tg.load_trace(path, limits=TraceLimits(max_array_bytes=8))


def _saved_program(tmp_path, schema_version: int | None = None) -> str:
    tg.manual_seed(0)
    w = tg.randn(3, 2, requires_grad=True)
    with tg.record() as trace:
        (w * w).sum().backward()
    path = tmp_path / "run.tgtrace"
    if schema_version is None:
        trace.save(path)
    else:
        save_trace(trace, path, schema_version=schema_version)
    return str(path)


def _members(path) -> dict:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_sizes_are_checked_while_streaming_too(tmp_path):
    """A central directory that understates or overstates a member's size: reading stops
    at the declared size and the zip's CRC or our count catches the difference."""
    path = _saved_program(tmp_path)
    for name in ("trace.json", "arrays.bin"):
        for change in (-1, +1, -8):
            damaged = tmp_path / f"lying-{name}{change}.tgtrace"
            damaged.write_bytes(Path(path).read_bytes())
            size = zipfile.ZipFile(path).getinfo(name).file_size
            _with_declared_size(damaged, name, size + change)
            with pytest.raises(TraceFileError, match="lying"):
                tg.load_trace(damaged)


def test_duplicate_members_are_refused(tmp_path):
    members = _members(_saved_program(tmp_path))
    for name in ("trace.json", "arrays.bin"):
        entries = [*members.items(), (name, members[name])]
        path = _zip(tmp_path / f"twice-{name}.tgtrace", entries)
        with pytest.raises(TraceFileError, match=f"holds '{name}' more than once"):
            tg.load_trace(path)


@pytest.mark.parametrize("change, words", [
    (lambda table: table[1].__setitem__(2, table[1][2] + 1), "starts at byte"),  # unaligned
    (lambda table: table[1].__setitem__(2, table[1][2] + 16), "starts at byte"),  # a gap
    (lambda table: table[1].__setitem__(2, 0), "starts at byte 0"),  # overlapping
    (lambda table: table[0][1].append(2), "starts at byte"),  # the first runs over the next
    (lambda table: table.pop(), "covers"),  # array_bytes does not match the table
    (lambda table: table[0].__setitem__(0, "<U4"), "which a trace never stores"),
    (lambda table: table[0].__setitem__(0, "float31"), "which is not a dtype"),
    (lambda table: table[0].__setitem__(1, [-1]), "negative"),
])
def test_array_offsets_must_be_exactly_where_the_writer_puts_them(tmp_path, change, words):
    """Schemas 2 to 4 list each array's offset (schema 5 leaves them implied)."""
    members = _members(_saved_program(tmp_path, schema_version=4))
    document = json.loads(members["trace.json"])
    assert [entry[2] for entry in document["arrays"]][:2] == [0, 32]  # [3, 2] f4: 24 -> 32
    change(document["arrays"])
    members["trace.json"] = json.dumps(document).encode()
    path = _zip(tmp_path / "offsets.tgtrace", members)
    with pytest.raises(TraceFileError, match=words):
        tg.load_trace(path)


@pytest.mark.parametrize("change, words", [
    (lambda table: table["dtype"].pop(), "dtype codes and"),
    (lambda table: table["shape"].__setitem__(0, 7), "shape codes that are not numbers"),
    (lambda table: table["dtype"].__setitem__(0, -1), "dtype codes that are not numbers"),
    (lambda table: table["dtype"].__setitem__(0, "0"), "dtype codes that are not numbers"),
    (lambda table: table.__setitem__("shapes", [[3, "2"], []]), "no list of shapes"),
    (lambda table: table.__setitem__("dtypes", "<f4"), "no list of dtypes"),
    (lambda table: table["shapes"][0].append(2), "covers"),  # the arrays outgrow the bytes
    (lambda table: table["shapes"].__setitem__(0, [-1]), "negative"),
    (lambda table: table["shapes"].__setitem__(0, [1 << 40, 1 << 40]), "over the limit"),
    (lambda table: table["dtypes"].__setitem__(0, "<U4"), "which a trace never stores"),
    (lambda table: table["dtypes"].__setitem__(0, "float31"), "which is not a dtype"),
    (lambda table: table["dtypes"].__setitem__(0, "<f8"), "covers"),
    (lambda table: [table[name].pop() for name in ("dtype", "shape")], "covers"),
])
def test_array_columns_must_cover_the_arrays_exactly(tmp_path, change, words):
    """Schema 5's arrays table in columns: codes into a list of dtypes and one of shapes,
    each array right after the one before; anything else is refused, naming the problem."""
    members = _members(_saved_program(tmp_path))
    document = json.loads(members["trace.json"])
    assert document["arrays"]["shapes"][:2] == [[3, 2], []]  # w and the loss
    change(document["arrays"])
    members["trace.json"] = json.dumps(document).encode()
    path = _zip(tmp_path / "columns.tgtrace", members)
    with pytest.raises(TraceFileError, match=words):
        tg.load_trace(path)


def test_arrays_of_every_kind_come_back_as_they_were(tmp_path):
    """Arrays loaded as rows of one view per dtype and shape (schema 5) are the arrays
    saved: values, shapes, dtypes, C order, writable, and independent of each other;
    arrays with no dimensions or no elements too."""
    arrays = [np.arange(6, dtype=np.float32).reshape(3, 2), np.float64(2.5) * np.ones(()),
              np.zeros((0, 3), np.float32), np.arange(5, dtype=np.int64),
              np.asfortranarray(np.arange(6.0).reshape(2, 3)), np.array([True, False]),
              np.arange(6, dtype=np.float32).reshape(3, 2) + 1, np.ones(3, np.complex64)]
    trace = model.Trace(tensors={
        index: model.TensorRecord(id=index, shape=array.shape, dtype=array.dtype.name,
                                  value=model.Value(array.shape, array.dtype.name,
                                                    model.Stats(), array.copy()))
        for index, array in enumerate(arrays)})
    path = tmp_path / "kinds.tgtrace"
    save_trace(trace, path)
    loaded = tg.load_trace(path)
    for index, array in enumerate(arrays):
        got = loaded.tensors[index].value.array
        assert got.dtype == array.dtype and got.shape == array.shape
        assert np.array_equal(got, array) and got.flags.c_contiguous and got.flags.writeable
    loaded.tensors[0].value.array[...] = -1  # a row of a shared view: only its own bytes
    assert np.array_equal(loaded.tensors[6].value.array, arrays[6])


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _schema_1(tmp_path, npy: bytes, shape=(2, 3), dtype="float32") -> str:
    value = {"shape": list(shape), "dtype": dtype, "stats": {}, "array": {"npy": 0}}
    trace = {"tensors": [{"id": 0, "shape": list(shape), "dtype": dtype, "value": value}]}
    document = json.dumps({**HEADER, "schema_version": 1, "trace": trace}).encode()
    return _zip(tmp_path / "old.tgtrace", {"trace.json": document, "arrays/000000.npy": npy})


def test_schema_1_arrays_load_with_the_strict_npy_reader(tmp_path):
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    for layout in (array, np.asfortranarray(array)):
        loaded = tg.load_trace(_schema_1(tmp_path, _npy(layout))).tensors[0].value.array
        np.testing.assert_array_equal(loaded, array)
        loaded += 1  # writable, as np.load's arrays are


def _header_replaced(old: bytes, new: bytes) -> bytes:
    data = _npy(np.zeros((2, 3), np.float32))
    length = struct.unpack_from("<H", data, 8)[0]
    header = data[10:10 + length].replace(old, new)
    return data[:8] + struct.pack("<H", len(header)) + header + data[10 + length:]


BAD_HEADERS = {
    "unterminated tuple": _header_replaced(b"(2, 3)", b"(2, 3"),  # tokenize.TokenError once
    "unterminated string": _header_replaced(b"'<f4'", b"'<f4"),
    "an expression": _header_replaced(b"(2, 3)", b"__import__('os').getcwd()"),
    "a huge size": _header_replaced(b"(2, 3)", b"(" + b"9" * 5000 + b",)"),
    "a structured dtype": _header_replaced(b"'<f4'", b"[('a', '<f4')]"),
    "an object dtype": _header_replaced(b"'<f4'", b"'|O'"),
    "a key twice": _header_replaced(b"'shape': (2, 3)", b"'shape': (2, 3), 'shape': (6,)"),
    "a missing key": _header_replaced(b"'fortran_order': False, ", b""),
    "an extra key": _header_replaced(b"'shape'", b"'extra': 1, 'shape'"),
    "a negative size": _header_replaced(b"(2, 3)", b"(-2, 3)"),
    "a shape too big": _header_replaced(b"(2, 3)", b"(4294967296, 4294967296)"),
    "the wrong data size": _header_replaced(b"(2, 3)", b"(2, 4)"),
    "not npy at all": b"PK\x03\x04 not an array",
    "a future version": b"\x93NUMPY\x09\x00" + bytes(20),
    "a truncated header": _npy(np.zeros(3))[:30],
    "a header length past the end": b"\x93NUMPY\x01\x00\xff\xff{'descr'",
}


@pytest.mark.parametrize("case", sorted(BAD_HEADERS))
def test_bad_npy_headers_give_trace_file_error(tmp_path, case):
    with pytest.raises(TraceFileError, match=r"arrays/000000\.npy"):
        tg.load_trace(_schema_1(tmp_path, BAD_HEADERS[case]))


def test_load_trace_checks_its_limits_argument(tmp_path):
    with pytest.raises(TypeError, match="limits must be a TraceLimits"):
        tg.load_trace(tmp_path / "x.tgtrace", limits={"max_json_bytes": 1})


def test_schema_5_packs_the_same_bytes_as_schema_4():
    """arrays.bin is the same bytes in both schemas, whatever the arrays' layout (C, F,
    strided, empty, no dimensions): only the table describing it changed."""
    from tracegrad.tracing.store import _pack_array_columns, _pack_arrays

    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((3, 5)), np.asfortranarray(rng.standard_normal((4, 3))),
              np.zeros((0,)), np.ones(()), np.arange(7, dtype=np.int8),
              np.asfortranarray(rng.standard_normal((2, 9)), dtype=np.float32),
              rng.standard_normal((6, 6))[:, ::2], np.array([True])]
    old_table, old_blob = _pack_arrays(arrays)
    table, blob = _pack_array_columns(arrays)
    assert bytes(blob) == bytes(old_blob)
    assert [[table["dtypes"][d], table["shapes"][s]] for d, s in
            zip(table["dtype"], table["shape"])] == [entry[:2] for entry in old_table]
