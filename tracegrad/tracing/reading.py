"""Reading a .tgtrace zip as hostile input: each member once, never more bytes than the
limits allow, and arrays exactly where the writer puts them.

A member's size is checked against ``TraceLimits`` from the size the zip declares, before
a byte is decompressed, and again while it streams in (a zip can lie about sizes; zipfile
stops at the declared size and checks the CRC, and we stop at the limit). Each member is
read into one buffer of its final size: no second copy, so memory stays at what the limits
allow. The arrays table of schema 2 must place every array exactly where the writer does
(one after the other, each 16-byte aligned, in table order), so no two arrays overlap and
none reads padding or another array's bytes. Schema-1 ``.npy`` members are parsed by a
strict reader of the header numpy writes (no ``ast``, no pickle).

Problems raise ``DamagedArchive``; ``load_trace`` turns it into ``TraceFileError`` with the
file name.
"""

from __future__ import annotations

import math
import re
import struct
import zipfile
from collections import Counter
from collections.abc import Callable
from itertools import chain, compress, repeat
from operator import getitem, is_

import numpy as np

from .limits import TraceLimits
from .validate import shape_problem

TRACE_MEMBER = "trace.json"
ARRAYS_MEMBER = "arrays.bin"
ALIGN = 16  # the writer starts every array at a multiple of this
_RATIO_FLOOR = 64 << 20  # trace.json's compression ratio matters only above this size
_CHUNK = 16 << 20  # bytes decompressed at a time
_ARRAY_KINDS = frozenset("biufc")  # bool, integers, floats, complex: never object arrays


class DamagedArchive(Exception):
    """What is wrong with the archive; ``limit`` names the TraceLimits field it went over."""

    def __init__(self, problem: str, limit: str | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.limit = limit


class TraceArchive:
    """The members of an open .tgtrace zip, read within ``limits``."""

    def __init__(self, archive: zipfile.ZipFile, limits: TraceLimits) -> None:
        self.archive = archive
        self.limits = limits
        infos = archive.infolist()
        repeated = sorted(name for name, count in
                          Counter(info.filename for info in infos).items() if count > 1)
        if repeated:
            # zipfile would silently give the last one; another reader, the first.
            raise DamagedArchive(
                f"the archive holds {repeated[0]!r} more than once; a .tgtrace file has each "
                "member once")
        self.members = {info.filename: info for info in infos}

    # -- trace.json --------------------------------------------------------------------
    def read_document_bytes(self) -> bytearray:
        """The bytes of trace.json, after the size checks."""
        info = self.members.get(TRACE_MEMBER)
        if info is None:
            raise DamagedArchive(f"the archive has no {TRACE_MEMBER}; it is not a .tgtrace file")
        limits = self.limits
        self._check_size(TRACE_MEMBER, info.file_size, limits.max_json_bytes, "max_json_bytes")
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > _RATIO_FLOOR and ratio > limits.max_json_ratio:
            raise DamagedArchive(
                f"{TRACE_MEMBER} would decompress {ratio:.0f} times its stored size "
                f"({info.compress_size} to {info.file_size} bytes), over the limit of "
                f"{limits.max_json_ratio:g} (TraceLimits.max_json_ratio), as a decompression "
                f"bomb does; {limits.hint('max_json_ratio', ratio)}", "max_json_ratio")
        return self.read(info)

    # -- arrays ------------------------------------------------------------------------
    def packed_arrays(self, document: dict) -> Callable[[int], np.ndarray]:
        """Schema 2: every array in ``arrays.bin``, described by the document's table (in
        columns since schema 5: ``_ArrayColumns``)."""
        table, total = document.get("arrays"), document.get("array_bytes")
        if type(table) is dict and type(total) is int:
            return self._array_columns(table, total)
        if type(table) is not list or type(total) is not int:
            raise DamagedArchive(f"{TRACE_MEMBER} has no valid 'arrays' table")
        entries = self._check_table(table, total)
        info = self._blob_info(total)
        blob: list[bytearray] = []  # read on first use: a structure-only trace needs none

        def load_array(index: int) -> np.ndarray:
            if not 0 <= index < len(entries):
                raise DamagedArchive(f"array number {index} is not in the table "
                                     f"({len(entries)} arrays)")
            if not blob:
                # A bytearray: arrays from it are writable, as np.load's are.
                blob.append(self.read(info))
            dtype, count, offset, shape = entries[index]
            return np.frombuffer(blob[0], dtype, count, offset).reshape(shape)

        return load_array

    def _array_columns(self, table: dict, total: int) -> Callable[[int], np.ndarray]:
        """Schema 5: ``{"dtypes": [...], "shapes": [...], "dtype": [codes], "shape":
        [codes]}``, one code pair per array; each array starts where the one before ends,
        16-byte aligned, so offsets are not stored. Checked whole (each distinct dtype and
        shape once, the offsets in NumPy), and an array is a row of a view over the bytes
        that holds every array of its dtype and shape: a tenth of the cost of a frombuffer
        and reshape per array, on 100,000 small arrays (bench/bench_trace.py (d))."""
        columns = _ArrayColumns(table, total, self.limits)
        self._check_size(ARRAYS_MEMBER, total, self.limits.max_array_bytes, "max_array_bytes")
        info = self._blob_info(total)
        views: dict[int, np.ndarray | _NoRows] = {}
        blob: list[bytearray] = []  # read on first use: a structure-only trace needs none
        keys, slots, count = columns.keys, columns.slots, len(columns.keys)

        def load_array(index: int) -> np.ndarray:
            if not 0 <= index < count:
                raise DamagedArchive(f"array number {index} is not in the table "
                                     f"({count} arrays)")
            if not blob:
                blob.append(self.read(info))  # a bytearray: arrays from it are writable
            key = keys[index]
            view = views.get(key)
            if view is None:
                view = views[key] = columns.view(blob[0], key)
            if view is _NO_ROWS:  # no dimensions, or no elements: one array at a time
                dtype, shape = columns.kind(key)
                return np.frombuffer(blob[0], dtype, math.prod(shape),
                                     slots[index] * ALIGN).reshape(shape)
            return view[slots[index]]

        def load_arrays(numbers: list[int]) -> list[np.ndarray]:
            """``load_array`` of each number (ints), in C for arrays with a view."""
            if numbers and not 0 <= min(numbers) <= max(numbers) < count:
                load_array(next(number for number in numbers if not 0 <= number < count))
            if not numbers:
                return []
            if not blob:
                blob.append(self.read(info))
            kinds = list(map(keys.__getitem__, numbers))
            for key in set(kinds) - views.keys():
                views[key] = columns.view(blob[0], key)
            chosen = list(map(views.__getitem__, kinds))
            arrays = list(map(getitem, chosen, map(slots.__getitem__, numbers)))
            # Arrays without dimensions or elements (a loss, a scalar): one at a time.
            for position in compress(range(len(arrays)), map(is_, arrays, repeat(None))):
                arrays[position] = load_array(numbers[position])
            return arrays

        def kinds(numbers: list[int]) -> tuple[list[int], Callable]:
            """Each array's kind as a number (numbers already loaded), and what gives a
            kind's (dtype, shape): the table's, without asking the arrays."""
            return list(map(keys.__getitem__, numbers)), columns.kind

        load_array.many = load_arrays  # type: ignore[attr-defined]
        load_array.kinds = kinds  # type: ignore[attr-defined]
        return load_array

    def _check_table(self, table: list, total: int) -> list[tuple]:
        """(dtype, element count, offset, shape) per entry; every offset where the writer
        puts it, the last array ending where ``array_bytes`` says."""
        limits = self.limits
        entries = []
        expected = 0
        for index, entry in enumerate(table):
            if type(entry) is not list or len(entry) != 3 or type(entry[0]) is not str \
                    or type(entry[1]) is not list or type(entry[2]) is not int \
                    or not all(type(size) is int for size in entry[1]):
                raise DamagedArchive(f"array number {index} is not [dtype, shape, offset]")
            dtype = _array_dtype(entry[0], f"array number {index}")
            shape = tuple(entry[1])
            problem = shape_problem(shape, limits)
            if problem is not None:
                raise DamagedArchive(f"array number {index}: {problem}",
                                     getattr(problem, "limit", None))
            if entry[2] != expected:
                raise DamagedArchive(
                    f"array number {index} starts at byte {entry[2]} of {ARRAYS_MEMBER}; the "
                    f"writer puts it at {expected} (right after the one before, "
                    f"{ALIGN}-byte aligned)")
            count = math.prod(shape)
            entries.append((dtype, count, expected, shape))
            size = count * dtype.itemsize
            expected += size + (-size % ALIGN)
        if expected != total:
            raise DamagedArchive(f"the arrays table covers {expected} bytes of "
                                 f"{ARRAYS_MEMBER}, but 'array_bytes' says {total}")
        self._check_size(ARRAYS_MEMBER, total, limits.max_array_bytes, "max_array_bytes")
        return entries

    def _blob_info(self, total: int) -> zipfile.ZipInfo | None:
        """arrays.bin's entry, declaring the size the table needs (checked up front; the
        bytes are read when an array is first needed)."""
        info = self.members.get(ARRAYS_MEMBER)
        if info is None:
            if total:
                raise DamagedArchive(f"the member {ARRAYS_MEMBER} is missing")
            return None
        if info.file_size != total:
            raise DamagedArchive(f"{ARRAYS_MEMBER} holds {info.file_size} bytes, the table "
                                 f"says {total}")
        return info

    def npy_arrays(self) -> Callable[[int], np.ndarray]:
        """Schema 1: one ``arrays/NNNNNN.npy`` member per array."""
        used = [0]

        def load_array(index: int) -> np.ndarray:
            member = f"arrays/{index:06d}.npy"
            info = self.members.get(member)
            if info is None:
                raise DamagedArchive(f"the array {member} is missing")
            used[0] += info.file_size
            self._check_size("the arrays/*.npy members", used[0], self.limits.max_array_bytes,
                             "max_array_bytes")
            return parse_npy(self.read(info), member, self.limits)

        return load_array

    # -- reading within the limits -----------------------------------------------------
    def _check_size(self, what: str, size: int, limit: int, name: str) -> None:
        if size > limit:
            raise DamagedArchive(
                f"{what} would take {size} bytes decompressed, over the limit of {limit} "
                f"(TraceLimits.{name}); {self.limits.hint(name, size)}", name)

    def read(self, info: zipfile.ZipInfo) -> bytearray:
        """The member's bytes: exactly ``info.file_size`` of them (checked while reading),
        into one buffer."""
        size = info.file_size
        buffer = bytearray(size)
        view = memoryview(buffer)
        filled = 0
        with self.archive.open(info) as stream:
            while True:
                chunk = stream.read(min(_CHUNK, size - filled) or 1)
                if not chunk:
                    break
                if filled + len(chunk) > size:
                    raise DamagedArchive(f"{info.filename} decompresses to more than the "
                                         f"{size} bytes it declares")
                view[filled:filled + len(chunk)] = chunk
                filled += len(chunk)
        view.release()
        if filled != size:
            raise DamagedArchive(f"{info.filename} holds {filled} bytes, fewer than the "
                                 f"{size} it declares; the file is truncated")
        return buffer


class _NoRows:
    """Where an array kind has no view: every row is None (made one at a time instead)."""

    def __getitem__(self, slot: int) -> None:
        return None


_NO_ROWS = _NoRows()


class _ArrayColumns:
    """A schema-5 arrays table, checked: each array's kind (``keys``: its dtype code and
    shape code in one int) and where it starts (``slots``: in units of ``ALIGN`` bytes)."""

    def __init__(self, table: dict, total: int, limits: TraceLimits) -> None:
        dtype_names, shapes = table.get("dtypes"), table.get("shapes")
        dtype_codes, shape_codes = table.get("dtype"), table.get("shape")
        if type(dtype_names) is not list or not set(map(type, dtype_names)) <= {str}:
            raise DamagedArchive(f"{TRACE_MEMBER}'s arrays table has no list of dtypes")
        if type(shapes) is not list or not set(map(type, shapes)) <= {list} or \
                not set(map(type, chain.from_iterable(shapes))) <= {int}:
            raise DamagedArchive(f"{TRACE_MEMBER}'s arrays table has no list of shapes")
        for codes, what, choices in ((dtype_codes, "dtype", dtype_names),
                                     (shape_codes, "shape", shapes)):
            if type(codes) is not list or not set(map(type, codes)) <= {int} or (
                    codes and not 0 <= min(codes) <= max(codes) < len(choices)):
                raise DamagedArchive(f"{TRACE_MEMBER}'s arrays table has {what} codes that "
                                     f"are not numbers of its {len(choices)} {what}s")
        if len(dtype_codes) != len(shape_codes):
            raise DamagedArchive(f"{TRACE_MEMBER}'s arrays table has {len(dtype_codes)} dtype "
                                 f"codes and {len(shape_codes)} shape codes")
        self.dtypes = [_array_dtype(name, f"the arrays table's dtype {name!r}")
                       for name in dtype_names]
        self.shapes = list(map(tuple, shapes))
        for shape in self.shapes:
            problem = shape_problem(shape, limits)
            if problem is not None:
                raise DamagedArchive(f"an array of the arrays table: {problem}",
                                     getattr(problem, "limit", None))
        # Sizes in NumPy: elements within max_elements, itemsize at most 16, so int64 holds
        # each size; their sum is checked in float64 before int64 could overflow.
        elements = np.array([math.prod(shape) for shape in self.shapes] or [0], np.int64)
        itemsizes = np.array([dtype.itemsize for dtype in self.dtypes] or [0], np.int64)
        dtype_codes = np.array(dtype_codes, np.int64)
        shape_codes = np.array(shape_codes, np.int64)
        sizes = elements[shape_codes] * itemsizes[dtype_codes]
        sizes += -sizes % ALIGN
        if sizes.size and float(sizes.astype(np.float64).sum()) > 2 ** 62:
            raise DamagedArchive("the arrays table's arrays would take more than 2**62 bytes")
        ends = np.cumsum(sizes)
        covered = int(ends[-1]) if ends.size else 0
        if covered != total:
            raise DamagedArchive(f"the arrays table covers {covered} bytes of "
                                 f"{ARRAYS_MEMBER}, but 'array_bytes' says {total}")
        self.slots = ((ends - sizes) // ALIGN).tolist()
        self.keys = (dtype_codes * len(self.shapes) + shape_codes).tolist()

    def kind(self, key: int) -> tuple[np.dtype, tuple[int, ...]]:
        return self.dtypes[key // len(self.shapes)], self.shapes[key % len(self.shapes)]

    def view(self, blob: bytearray, key: int) -> np.ndarray | _NoRows:
        """Every array of one kind that could start in ``blob`` (one per ``ALIGN`` bytes),
        as rows of one view; ``_NO_ROWS`` for arrays without dimensions or elements (a row
        of a view would be a NumPy scalar, or start past the end)."""
        dtype, shape = self.kind(key)
        size = math.prod(shape) * dtype.itemsize
        if not shape or not size:
            return _NO_ROWS
        strides = [dtype.itemsize]
        for length in reversed(shape[1:]):
            strides.append(strides[-1] * length)
        rows = (len(blob) - size) // ALIGN + 1
        return np.ndarray((rows, *shape), dtype, blob, 0, (ALIGN, *reversed(strides)))


_dtypes: dict[str, np.dtype] = {}


def _array_dtype(text: str, what: str) -> np.dtype:
    """The numpy dtype a table or header names: plain numbers and bools only."""
    dtype = _dtypes.get(text)
    if dtype is not None:
        return dtype
    try:
        dtype = np.dtype(text)
    except (TypeError, ValueError, SyntaxError):
        raise DamagedArchive(f"{what} has dtype {text!r}, which is not a dtype") from None
    if dtype.kind not in _ARRAY_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise DamagedArchive(f"{what} has dtype {text!r}, which a trace never stores")
    _dtypes[text] = dtype
    return dtype


# -- .npy (schema 1) ---------------------------------------------------------------------
_NPY_MAGIC = b"\x93NUMPY"
# One entry of the header dict numpy writes: {'descr': '<f4', 'fortran_order': False,
# 'shape': (3, 4), }
_NPY_ENTRY = re.compile(
    r"\s*'(descr|fortran_order|shape)'\s*:\s*"
    r"('[^'\\]{1,32}'|True|False|\((?:\s*\d{1,19}\s*,)*(?:\s*\d{1,19}\s*)?\))\s*(?:,|(?=\Z))")


def parse_npy(data: bytearray, member: str, limits: TraceLimits) -> np.ndarray:
    """The array in ``data`` (a whole .npy file), or DamagedArchive naming ``member``."""
    if data[:6] != _NPY_MAGIC or len(data) < 10:
        raise DamagedArchive(f"{member} is not a .npy array (it lacks numpy's magic string)")
    major = data[6]
    if major == 1:
        (header_length,), start = struct.unpack_from("<H", data, 8), 10
    elif major in (2, 3) and len(data) >= 12:
        (header_length,), start = struct.unpack_from("<I", data, 8), 12
    else:
        raise DamagedArchive(f"{member} has .npy format version {major}, which numpy never "
                             "wrote")
    header = bytes(data[start:start + header_length])
    if len(header) != header_length:
        raise DamagedArchive(f"{member} is truncated inside its header")
    descr, fortran_order, shape = _parse_npy_header(header.decode("latin-1"), member)
    dtype = _array_dtype(descr, member)
    problem = shape_problem(shape, limits)
    if problem is not None:
        raise DamagedArchive(f"{member}: {problem}",
                             getattr(problem, "limit", None))
    count = math.prod(shape)
    body = start + header_length
    if len(data) - body != count * dtype.itemsize:
        raise DamagedArchive(f"{member} holds {len(data) - body} bytes of data; its header "
                             f"says {list(shape)} {dtype} ({count * dtype.itemsize} bytes)")
    array = np.frombuffer(data, dtype, count, body)
    return array.reshape(shape, order="F" if fortran_order else "C")


def _parse_npy_header(text: str, member: str) -> tuple[str, bool, tuple[int, ...]]:
    """descr, fortran_order and shape from the header's dict literal, each exactly once."""
    text = text.rstrip(" \n")
    found: dict[str, str] = {}
    if text.startswith("{") and text.endswith("}"):
        inside, position = text[1:-1].rstrip(), 0
        while position < len(inside):
            match = _NPY_ENTRY.match(inside, position)
            if match is None or match.group(1) in found:
                found.clear()
                break
            found[match.group(1)] = match.group(2)
            position = match.end()
    if set(found) != {"descr", "fortran_order", "shape"}:
        raise DamagedArchive(f"{member} has a .npy header numpy does not write: "
                             f"{text[:80]!r}")
    sizes = found["shape"].strip("()").split(",")
    shape = tuple(int(size) for size in sizes if size.strip())
    return found["descr"][1:-1], found["fortran_order"] == "True", shape


__all__ = ["ARRAYS_MEMBER", "TRACE_MEMBER", "DamagedArchive", "TraceArchive", "parse_npy"]
