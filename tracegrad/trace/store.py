"""The .tgtrace file: a zip of ``trace.json`` and ``arrays/NNNNNN.npy``, loaded without pickle.

``trace.json`` holds ``{"format": "tracegrad-trace", "schema_version": N, "tracegrad": "0.1.0",
"trace": {...}}``; arrays are referred to by number. Files are written deterministically
(fixed timestamps, fixed order), so the same program saved with ``timings=False`` gives a
byte-identical file. Anything wrong with a file -- not a zip, truncated, a flipped bit, a
missing member, data of the wrong type, a newer schema -- raises ``TraceFileError`` naming
the file and the problem.

>>> import os, tempfile
>>> from tracegrad.trace.model import Trace
>>> path = os.path.join(tempfile.mkdtemp(), "empty.tgtrace")
>>> save_trace(Trace(), path)
>>> load_trace(path) == Trace()
True
"""

from __future__ import annotations

import io
import json
import os
import struct
import zipfile
import zlib

import numpy as np

from .. import __version__
from ..errors import TraceFileError
from .codec import DecodeError, decode_trace, encode_trace
from .model import FORMAT_NAME, SCHEMA_VERSION, Trace

TRACE_MEMBER = "trace.json"
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)
_MAX_JSON_BYTES = 1 << 31


def save_trace(trace: Trace, path: str | os.PathLike, timings: bool = True) -> None:
    """Write ``trace`` to ``path`` (a .tgtrace zip).

    ``timings=False`` stores every step's duration as 0, so that running the same program
    twice gives byte-identical files (durations are the one thing that varies).
    """
    arrays: list[np.ndarray] = []
    document = {"format": FORMAT_NAME, "schema_version": SCHEMA_VERSION,
                "tracegrad": __version__, "timings": bool(timings),
                "trace": encode_trace(trace, arrays, timings=timings)}
    text = json.dumps(document, allow_nan=False, separators=(",", ":"))
    temporary = f"{os.fspath(path)}.partial"
    with zipfile.ZipFile(temporary, "w") as archive:
        _write_member(archive, TRACE_MEMBER, text.encode("utf-8"))
        for index, array in enumerate(arrays):
            buffer = io.BytesIO()
            np.save(buffer, np.asarray(array, order="C"), allow_pickle=False)
            _write_member(archive, _array_member(index), buffer.getvalue())
    os.replace(temporary, path)  # a crash mid-write never leaves a half file under path


def _write_member(archive: zipfile.ZipFile, name: str, payload: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    archive.writestr(info, payload)


def _array_member(index: int) -> str:
    return f"arrays/{index:06d}.npy"


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
        _check_header(name, document)

        def load_array(index: int) -> np.ndarray:
            member = _array_member(index)
            if member not in members:
                raise _file_error(name, f"the array {member} is missing")
            with archive.open(member) as stream:
                return np.load(io.BytesIO(stream.read()), allow_pickle=False)

        return decode_trace(document["trace"], load_array)


def _check_header(name: str, document) -> None:
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
