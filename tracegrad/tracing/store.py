"""The .tgtrace file: a zip of ``trace.json`` and ``arrays.bin``, loaded without pickle.

``trace.json`` holds ``{"format": "tracegrad-trace", "schema_version": N, "tracegrad": "0.1.0",
"timings": true, "arrays": {"dtypes": [...], "shapes": [...], "dtype": [codes], "shape":
[codes]}, "array_bytes": N, "sites": ..., "values": ..., "trace": ...}``; the last three are
tables of records in columns (schemas 4 and 5, see columns.py; schemas 1 to 3 wrote one
object per record, see codec.py, and still load). Array number i has dtype
``dtypes[dtype[i]]`` and shape ``shapes[shape[i]]``, and is the raw bytes of ``arrays.bin``
right after array i - 1 (C order, each start 16-byte aligned). Schema 5 writes that table
in columns and leaves the statistics of values stored whole to their arrays (columns.py);
schemas 2 to 4 list ``[dtype, shape, offset]`` per array (``schema_version=4`` still writes
them so), and every value's statistics.
One member for all arrays instead of one ``.npy`` each: a 50,000-node trace holds 100,000
arrays, and a zip member costs more than a small array. trace.json is deflated; arrays.bin
only when that pays (see ``_worth_compressing``). Schema-1 files (``arrays/NNNNNN.npy``)
still load.

Files are written deterministically (fixed timestamps, fixed order), so the same program
saved with ``timings=False`` gives a byte-identical file. A file is read as hostile input
(reading.py: sizes within ``TraceLimits``, each member once, exact array offsets) and what
it decodes to is validated (validate.py: references, ranges, shapes, cycles) before the
caller sees it. Anything wrong -- not a zip, truncated, a flipped bit, a missing or repeated
member, data of the wrong type or out of range, a dangling reference, a size over a limit,
a newer schema -- raises ``TraceFileError`` naming the file, the problem and, where it has
one, the place in the file (``error.where``).

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
import json
import os
import struct
import tempfile
import zipfile
import zlib
from functools import partial
from itertools import accumulate, chain, compress, repeat
from operator import add, attrgetter, mod, neg, not_

import numpy as np
import orjson

from .. import __version__
from ..errors import TraceFileError
from .codec import DecodeError, decode_trace, encode_trace
from .columns import decode_columns, encode_columns
from .graph import gc_paused as _gc_paused  # building or parsing: no cycles, millions of objects
from .limits import TraceLimits
from .model import FORMAT_NAME, SCHEMA_VERSION, Trace
from .reading import ALIGN, ARRAYS_MEMBER, TRACE_MEMBER, DamagedArchive, TraceArchive
from .validate import InvalidTrace, validate_trace

_FIXED_TIME = (1980, 1, 1, 0, 0, 0)


def save_trace(trace: Trace, path: str | os.PathLike, timings: bool = True, *,
               schema_version: int = SCHEMA_VERSION) -> None:
    """Write ``trace`` to ``path`` (a .tgtrace zip).

    ``timings=False`` stores every step's duration as 0, so that running the same program
    twice gives byte-identical files (durations are the one thing that varies).
    ``schema_version=4`` writes the layout tracegrad read before schema 5 (the statistics
    of every value stored, those of arrays stored whole too), ``schema_version=3`` the one
    before columns (one JSON object per record); both are larger and slower.
    """
    if schema_version not in _ENCODERS:
        raise ValueError(f"save_trace: schema_version must be one of "
                         f"{', '.join(map(str, sorted(_ENCODERS)))}, got {schema_version!r}")
    arrays: list[np.ndarray] = []
    with _gc_paused():
        body = _ENCODERS[schema_version](trace, arrays, timings=timings)
        table, blob = _pack_array_columns(arrays) if schema_version >= 5 \
            else _pack_arrays(arrays)
        document = {"format": FORMAT_NAME, "schema_version": schema_version,
                    "tracegrad": __version__, "timings": bool(timings),
                    "arrays": table, "array_bytes": len(blob), **body}
        text = _dumps(document)
        # Let the document go while the collector is paused: a collection on resuming
        # would otherwise walk its lists (a list of Value rows per step) only to find
        # them garbage a moment later -- a tenth of a save with values (bench_trace (d)).
        del document, body, table
    _write_atomically(os.fspath(path), text, blob)


def _dumps(document: dict) -> bytes:
    """trace.json's bytes. orjson writes them six times faster than the json module
    (bench/bench_trace.py (d)); what it refuses (a lone surrogate in a name, an int over
    64 bits) goes through the json module, which writes those as escapes and digits. Both
    are deterministic, and both read back the same. Non-finite floats never get here:
    orjson would write them as null, so the column encoder refuses them first (statistics
    are finite by construction, attributes hold nan/inf as text)."""
    try:
        return orjson.dumps(document, default=_json_scalar)
    except TypeError:
        return json.dumps(document, allow_nan=False, separators=(",", ":"),
                          default=_json_scalar).encode("utf-8")


# Schema 5 writes columns, leaving the statistics of stored arrays to the arrays; schema 4,
# columns with every value's statistics (columns.py); schema 3, one object per record
# (codec.py).
_ENCODERS = {5: partial(encode_columns, stats_from_arrays=True), 4: encode_columns,
             3: encode_trace}
assert SCHEMA_VERSION in _ENCODERS


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


def _pack_arrays(arrays: list[np.ndarray]) -> tuple[list, bytearray]:
    """([dtype, shape, offset] per array, their bytes end to end, each aligned).

    The bytes go straight into one buffer of the final size: a training loop's trace can
    hold the whole values budget (256 MiB), and a copy per array plus a join would double
    that twice."""
    table, offset = [], 0
    for array in arrays:
        table.append([array.dtype.str, list(array.shape), offset])
        offset += array.nbytes + (-array.nbytes % ALIGN)
    blob = bytearray(offset)
    for array, (_, _, start) in zip(arrays, table):
        if array.nbytes:
            # C order whatever the array's layout, as tobytes() would give.
            target = np.frombuffer(blob, array.dtype, array.size, start)
            target[...] = array.reshape(-1)
    return table, blob


def _pack_array_columns(arrays: list[np.ndarray]) -> tuple[dict, bytearray]:
    """Schema 5's arrays table, in columns -- ``{"dtypes": [...], "shapes": [...], "dtype":
    [codes], "shape": [codes]}``, offsets implied (reading.py, ``_ArrayColumns``) -- and the
    arrays' bytes end to end, each aligned, joined in one buffer (C order whatever the
    array's layout, as tobytes() would give). A list per array and a copy per array
    through NumPy were a fifth of a save with values (bench/bench_trace.py (d))."""
    # Each distinct dtype object asked for its name once: ``dtype.str`` makes a new string
    # on every read, and 100,000 arrays share one or two dtypes (bench_trace (d)).
    dtype_objects = list(map(_dtype_of, arrays))
    unique = dict(zip(map(id, dtype_objects), dtype_objects))  # by id: the arrays hold them
    names = {key: dtype.str for key, dtype in unique.items()}
    dtypes = list(map(names.__getitem__, map(id, dtype_objects)))
    shapes = list(map(attrgetter("shape"), arrays))
    dtype_codes = {name: code for code, name in enumerate(dict.fromkeys(dtypes))}
    shape_codes = {shape: code for code, shape in enumerate(dict.fromkeys(shapes))}
    sizes = list(map(_nbytes, arrays))
    paddings = list(map(mod, map(neg, sizes), repeat(ALIGN)))
    # Each array, then the zeros that pad it to ALIGN (b"" when none), joined in C. An
    # array not in C order (F-ordered, rare) holds zeros there until it is copied in
    # below, one at a time: copies of them all would hold their bytes twice meanwhile.
    parts = list(arrays)
    others = list(compress(range(len(parts)), map(not_, map(_c_ordered, parts))))
    if others:
        zeros = memoryview(bytes(max(map(sizes.__getitem__, others))))
        for index in others:
            parts[index] = zeros[:sizes[index]]
    if any(paddings):
        blob = bytearray().join(chain.from_iterable(zip(parts, map(_PADDING.__getitem__,
                                                                   paddings))))
    else:  # every array a multiple of ALIGN bytes (a chain's 4 float32s): no b"" between
        blob = bytearray().join(parts)  # them, which made the join 3.6 times slower
    if others:
        starts = [0, *accumulate(map(add, sizes, paddings))]
        for index in others:
            array = arrays[index]
            np.frombuffer(blob, array.dtype, array.size, starts[index])[...] = \
                array.reshape(-1)
    table = {"dtypes": list(dtype_codes), "shapes": list(map(list, shape_codes)),
             "dtype": list(map(dtype_codes.__getitem__, dtypes)),
             "shape": list(map(shape_codes.__getitem__, shapes))}
    return table, blob


_PADDING = [bytes(size) for size in range(ALIGN)]
_c_ordered, _nbytes = attrgetter("flags.c_contiguous"), attrgetter("nbytes")
_dtype_of = attrgetter("dtype")


def _json_scalar(value):
    """NumPy scalars that found their way into a record (np.int64 in attrs, ...)."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _write_member(archive: zipfile.ZipFile, name: str, payload: bytes | bytearray) -> None:
    info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED if _worth_compressing(name, payload) \
        else zipfile.ZIP_STORED
    info.external_attr = 0o644 << 16
    # Level 1: three times faster than the default on JSON, a few per cent larger.
    archive.writestr(info, payload, compresslevel=1)


_PROBES = 16  # samples of arrays.bin compressed to decide whether all of it is worth it
_PROBE_BYTES = 64 << 10
_WORTH_RATIO = 0.5  # compress when it at least halves the size


def _worth_compressing(name: str, payload: bytes | bytearray) -> bool:
    """Whether to deflate a member. trace.json always (JSON shrinks about 5:1, fast); the
    arrays only when a few samples halve. Captured floats shrink little (0.7 on a training
    loop's values) and deflate crawls over them (13 MB/s): a 2,000-pass loop with values in
    every pass spent 15 of its 16 s of saving there. Zeros and repeats, which do shrink, are
    also what deflate handles fast. Deterministic: same bytes, same choice."""
    if name != ARRAYS_MEMBER or len(payload) <= _PROBES * _PROBE_BYTES:
        return name != ARRAYS_MEMBER or len(zlib.compress(payload, 1)) <= \
            _WORTH_RATIO * len(payload)
    stride = len(payload) // _PROBES
    compressed = sum(len(zlib.compress(payload[start:start + _PROBE_BYTES], 1))
                     for start in range(0, stride * _PROBES, stride))
    return compressed <= _WORTH_RATIO * _PROBES * _PROBE_BYTES


def load_trace(path: str | os.PathLike, limits: TraceLimits | None = None) -> Trace:
    """Read a .tgtrace file. Never unpickles anything; a bad file raises TraceFileError.

    The file is hostile input until checked: sizes are capped by ``limits`` (default:
    ``TraceLimits.from_environment()``, i.e. ``TRACEGRAD_TRACE_LIMITS`` or the defaults)
    before anything is decompressed, and the decoded trace is validated (every reference,
    range and shape; see validate.py), so what comes back is consistent.

    >>> load_trace("/nonexistent.tgtrace")
    Traceback (most recent call last):
    ...
    tracegrad.errors.TraceFileError: cannot read trace file '/nonexistent.tgtrace': no such file. Hint: write one with `tracegrad run script.py -o run.tgtrace` or trace.save(path).
    """
    name = os.fspath(path)
    if limits is None:
        limits = TraceLimits.from_environment()
    elif not isinstance(limits, TraceLimits):
        raise TypeError(f"load_trace: limits must be a TraceLimits, got "
                        f"{type(limits).__name__}. Hint: limits=TraceLimits(max_array_bytes=...)")
    if not os.path.exists(name):
        raise TraceFileError(
            f"cannot read trace file '{name}': no such file. Hint: write one with "
            "`tracegrad run script.py -o run.tgtrace` or trace.save(path).", file=name)
    try:
        with _gc_paused():
            trace = _load(name, limits)
            _settle_new_objects()
            return trace
    except TraceFileError:
        raise
    except DamagedArchive as error:
        raise _file_error(name, error.problem, limit=error.limit) from None
    except InvalidTrace as error:
        raise _file_error(name, f"its records do not fit together: {error}",
                          where=error.where, limit=error.limit) from None
    except DecodeError as error:
        raise _file_error(name, f"its data does not match the trace format ({error})",
                          where=error.where) from None
    except zipfile.BadZipFile as error:
        raise _file_error(name, f"it is not a readable zip archive ({error}); the file is "
                                "truncated, corrupted, or not a .tgtrace file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise _file_error(name, f"{TRACE_MEMBER} is not valid JSON ({error})") from None
    except (OSError, EOFError, ValueError, KeyError, IndexError, TypeError, OverflowError,
            NotImplementedError, RuntimeError, MemoryError, AttributeError, zlib.error,
            struct.error) as error:
        # zlib.error and struct.error land here: the file is damaged in some way the zip
        # layer did not catch first.
        raise _file_error(name, f"it is damaged ({type(error).__name__}: {error})") \
            from None


def _settle_new_objects() -> None:
    """File what the load made (600,000 records and lists for a 50,000-node chain with
    values, made while the collector was paused) with the long-lived objects, unexamined.

    Left young, the collector would walk them all three times over: in the first
    collection after the pause (2 us a node, inside the load), when it moves them to the
    middle generation, and in the full collection their number then sets off -- 0.5 s
    charged to whatever the program allocates next, reading the statistics after a load
    (bench/bench_trace.py (d)). ``gc.freeze()`` then ``gc.unfreeze()`` moves every
    tracked object to the oldest generation in two list splices; the next full collection
    examines them as it would have, without being brought forward by them. Nothing is
    lost: a young object of the program's own that was garbage in a cycle waits for that
    collection. Not done when the program keeps objects frozen itself (a server that
    froze them before forking): unfreezing would hand those back to the collector."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def _file_error(name: str, problem: str, where: str | None = None,
                limit: str | None = None) -> TraceFileError:
    hint = ("Hint: the file was damaged or changed after it was written; re-record it with "
            "`tracegrad run script.py -o run.tgtrace`.")
    if limit is not None:  # the problem says how to raise the limit
        hint = "Hint: a file over a limit may be a decompression bomb; check where it came from."
    return TraceFileError(f"cannot read trace file '{name}': {problem}. {hint}", file=name,
                          where=where, limit=limit)


def _load(name: str, limits: TraceLimits) -> Trace:
    with zipfile.ZipFile(name) as zip_file:
        archive = TraceArchive(zip_file, limits)
        text = archive.read_document_bytes()
        try:
            return _decoded(name, archive, _loads(text), limits)
        except (DecodeError, InvalidTrace):
            # orjson reads an integer beyond 64 bits as a float: read a file found wrong
            # again with the json module, so the problem is told about the integer itself.
            return _decoded(name, archive, json.loads(text), limits)


def _decoded(name: str, archive: TraceArchive, document, limits: TraceLimits) -> Trace:
    version = _check_header(name, document)
    if version == 1:
        load_array = archive.npy_arrays()
    else:
        load_array = archive.packed_arrays(document)
    tables: dict = {}  # the sites and values every reference resolved to (schema 4 on)
    if version >= 4:
        trace = decode_columns(document, load_array, tables)
    else:  # one object per record (schemas 1 to 3)
        trace = decode_trace(document, load_array)
    validate_trace(trace, limits, tables=tables)
    return trace


def _loads(data: bytes | bytearray):
    """trace.json's document: orjson reads it 1.4 times as fast as the json module; a
    file it refuses goes to the json module, which also reads what ``_dumps`` wrote with
    it (a lone surrogate's escape) and words the error when the file is broken."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


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
