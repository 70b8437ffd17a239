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
        """Schema 2: every array in ``arrays.bin``, described by the document's table."""
        table, total = document.get("arrays"), document.get("array_bytes")
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
