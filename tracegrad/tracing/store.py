"""The .tgtrace file: a zip of ``trace.json`` and ``arrays.bin``, loaded without pickle.

``trace.json`` holds ``{"format": "tracegrad-trace", "schema_version": N, "tracegrad": "0.1.0",
"timings": true, "arrays": [[dtype, shape, offset], ...], "array_bytes": N, "sites": [...],
"values": [...], "trace": {...}}`` (see codec.py for the last three); array number i is the
raw bytes of ``arrays.bin`` at its offset (C order, 16-byte aligned). One member for all
arrays instead of one ``.npy`` each: a 50,000-node trace holds 100,000 arrays, and a zip
member costs more than a small array. Schema-1 files (``arrays/NNNNNN.npy``) still load.

Files are written deterministically (fixed timestamps, fixed order), so the same program
saved with ``timings=False`` gives a byte-identical file. Anything wrong with a file -- not
a zip, truncated, a flipped bit, a missing member, data of the wrong type, a newer schema --
raises ``TraceFileError`` naming the file and the problem.

>>> import os, tempfile
>>> from tracegrad.tracing.model import Trace
>>> path = os.path.join(tempfile.mkdtemp(), "empty.tgtrace")
>>> save_trace(Trace(), path)
>>> load_trace(path) == Trace()
True
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import math
import os
import struct
import tempfile
import zipfile
import zlib

import numpy as np

from .. import __version__
from ..errors import TraceFileError
from .codec import DecodeError, decode_trace, encode_trace
from .model import FORMAT_NAME, SCHEMA_VERSION, Trace

TRACE_MEMBER = "trace.json"
ARRAYS_MEMBER = "arrays.bin"
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)
_MAX_JSON_BYTES = 1 << 31
_ALIGN = 16
_ARRAY_KINDS = frozenset("biufc")  # bool, integers, floats, complex: never object arrays


@contextlib.contextmanager
def _gc_paused():
    """Building or parsing a trace makes hundreds of thousands of containers and no cycles;
    the collector would rescan them all again and again (two thirds of a load's time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def save_trace(trace: Trace, path: str | os.PathLike, timings: bool = True) -> None:
    """Write ``trace`` to ``path`` (a .tgtrace zip).

    ``timings=False`` stores every step's duration as 0, so that running the same program
    twice gives byte-identical files (durations are the one thing that varies).
    """
    arrays: list[np.ndarray] = []
    with _gc_paused():
        body = encode_trace(trace, arrays, timings=timings)
        table, blob = _pack_arrays(arrays)
        document = {"format": FORMAT_NAME, "schema_version": SCHEMA_VERSION,
                    "tracegrad": __version__, "timings": bool(timings),
                    "arrays": table, "array_bytes": len(blob), **body}
        text = json.dumps(document, allow_nan=False, separators=(",", ":"),
                          default=_json_scalar)
    _write_atomically(os.fspath(path), text.encode("utf-8"), blob)


def _write_atomically(path: str, text: bytes, blob: bytes) -> None:
    """Write the zip to a temporary file in the same folder, flush it to disk, then rename
    it over ``path``: whatever interrupts the save (an exception, a signal, a crash),
    ``path`` holds either the complete new trace or what it held before, never part of
    one. The temporary file has a unique name (two saves never share one) and is removed
    when the save fails."""
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.",
                                         suffix=".partial", dir=directory)
    try:
        with os.fdopen(handle, "wb") as file:
            with zipfile.ZipFile(file, "w") as archive:
                _write_member(archive, TRACE_MEMBER, text)
                if blob:
                    _write_member(archive, ARRAYS_MEMBER, blob)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes it 0600
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _pack_arrays(arrays: list[np.ndarray]) -> tuple[list, bytes]:
    """([dtype, shape, offset] per array, their bytes end to end, each aligned)."""
    table, parts, offset = [], [], 0
    for array in arrays:
        data = array.tobytes()  # C order whatever the array's layout
        table.append([array.dtype.str, list(array.shape), offset])
        padding = -len(data) % _ALIGN
        parts.append(data + bytes(padding) if padding else data)
        offset += len(data) + padding
    return table, b"".join(parts)


def _json_scalar(value):
    """NumPy scalars that found their way into a record (np.int64 in attrs, ...)."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _write_member(archive: zipfile.ZipFile, name: str, payload: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    # Level 1: three times faster than the default on JSON, a few per cent larger.
    archive.writestr(info, payload, compresslevel=1)


def load_trace(path: str | os.PathLike) -> Trace:
    """Read a .tgtrace file. Never unpickles anything; a bad file raises TraceFileError.

    >>> load_trace("/nonexistent.tgtrace")
    Traceback (most recent call last):
    ...
    tracegrad.errors.TraceFileError: cannot read trace file '/nonexistent.tgtrace': no such file. Hint: write one with `tracegrad run script.py -o run.tgtrace` or trace.save(path).
    """
    name = os.fspath(path)
    if not os.path.exists(name):
        raise TraceFileError(
            f"cannot read trace file '{name}': no such file. Hint: write one with "
            "`tracegrad run script.py -o run.tgtrace` or trace.save(path).")
    try:
        with _gc_paused():
            return _load(name)
    except TraceFileError:
        raise
    except DecodeError as error:
        raise _file_error(name, f"its data does not match the trace format ({error})") \
            from None
    except zipfile.BadZipFile as error:
        raise _file_error(name, f"it is not a readable zip archive ({error}); the file is "
                                "truncated, corrupted, or not a .tgtrace file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise _file_error(name, f"{TRACE_MEMBER} is not valid JSON ({error})") from None
    except (OSError, EOFError, ValueError, KeyError, IndexError, TypeError, OverflowError,
            NotImplementedError, RuntimeError, MemoryError, AttributeError, zlib.error,
            struct.error) as error:
        # zlib.error, struct.error and numpy's header errors all land here: the file
        # is damaged in some way the zip layer did not catch first.
        raise _file_error(name, f"it is damaged ({type(error).__name__}: {error})") \
            from None


def _file_error(name: str, problem: str) -> TraceFileError:
    return TraceFileError(
        f"cannot read trace file '{name}': {problem}. Hint: re-record it with "
        "`tracegrad run script.py -o run.tgtrace`.")


def _load(name: str) -> Trace:
    with zipfile.ZipFile(name) as archive:
        members = set(archive.namelist())
        if TRACE_MEMBER not in members:
            raise _file_error(name, f"the archive has no {TRACE_MEMBER}; it is not a "
                                    ".tgtrace file")
        info = archive.getinfo(TRACE_MEMBER)
        if info.file_size > _MAX_JSON_BYTES:
            raise _file_error(name, f"{TRACE_MEMBER} claims {info.file_size} bytes")
        document = json.loads(archive.read(TRACE_MEMBER).decode("utf-8"))
        version = _check_header(name, document)
        if version == 1:
            load_array = _npy_loader(name, archive, members)
        else:
            load_array = _packed_loader(name, archive, members, document)
        return decode_trace(document, load_array)


def _npy_loader(name: str, archive: zipfile.ZipFile, members: set):
    """Schema 1: one ``arrays/NNNNNN.npy`` member per array."""
    def load_array(index: int) -> np.ndarray:
        member = f"arrays/{index:06d}.npy"
        if member not in members:
            raise _file_error(name, f"the array {member} is missing")
        with archive.open(member) as stream:
            return np.load(io.BytesIO(stream.read()), allow_pickle=False)

    return load_array


def _packed_loader(name: str, archive: zipfile.ZipFile, members: set, document: dict):
    """Schema 2: every array in ``arrays.bin``, described by the document's table."""
    table, expected_bytes = document.get("arrays"), document.get("array_bytes")
    if type(table) is not list or type(expected_bytes) is not int:
        raise _file_error(name, f"{TRACE_MEMBER} has no valid 'arrays' table")
    blob: list[bytearray] = []  # read on first use: a structure-only trace has none

    def load_array(index: int) -> np.ndarray:
        if not 0 <= index < len(table):
            raise _file_error(name, f"array number {index} is not in the table "
                                    f"({len(table)} arrays)")
        if not blob:
            if ARRAYS_MEMBER not in members:
                raise _file_error(name, f"the member {ARRAYS_MEMBER} is missing")
            # A bytearray, so the arrays loaded from it are writable, as np.load's are.
            blob.append(bytearray(archive.read(ARRAYS_MEMBER)))
            if len(blob[0]) != expected_bytes:
                raise _file_error(name, f"{ARRAYS_MEMBER} has {len(blob[0])} bytes, the "
                                        f"table says {expected_bytes}")
        return _unpack_array(name, blob[0], index, table[index])

    return load_array


_dtypes: dict[str, np.dtype] = {}


def _unpack_array(name: str, blob: bytearray, index: int, entry) -> np.ndarray:
    problem = None
    if type(entry) is not list or len(entry) != 3 or type(entry[0]) is not str \
            or type(entry[1]) is not list or type(entry[2]) is not int:
        problem = "is not [dtype, shape, offset]"
    elif not all(type(size) is int and size >= 0 for size in entry[1]):
        problem = f"has an invalid shape {entry[1]}"
    else:
        dtype = _dtypes.get(entry[0])
        if dtype is None:  # a TypeError for nonsense: reported as damage
            dtype = _dtypes[entry[0]] = np.dtype(entry[0])
        count = math.prod(entry[1])
        offset = entry[2]
        if dtype.kind not in _ARRAY_KINDS or dtype.fields is not None:
            problem = f"has dtype {entry[0]!r}, which a trace never stores"
        elif offset < 0 or offset + count * dtype.itemsize > len(blob):
            problem = f"lies outside {ARRAYS_MEMBER} (offset {offset}, {count} items)"
    if problem is not None:
        raise _file_error(name, f"array number {index} {problem}")
    return np.frombuffer(blob, dtype, count, offset).reshape(entry[1])


def _check_header(name: str, document) -> int:
    if not isinstance(document, dict) or document.get("format") != FORMAT_NAME:
        raise _file_error(name, f"{TRACE_MEMBER} does not say format '{FORMAT_NAME}'")
    version = document.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise _file_error(name, "its schema_version is missing or not an integer")
    if version > SCHEMA_VERSION:
        raise TraceFileError(
            f"cannot read trace file '{name}': it has schema version {version}, written by "
            f"tracegrad {document.get('tracegrad', '?')}; this tracegrad ({__version__}) "
            f"reads schema version {SCHEMA_VERSION} and older. Hint: upgrade tracegrad.")
    if version < 1:
        raise _file_error(name, f"its schema_version {version} is not valid")
    if "trace" not in document:
        raise _file_error(name, f"{TRACE_MEMBER} has no 'trace' entry")
    return version
