"""Finding the user's source line: the first frame outside tracegrad itself."""

from __future__ import annotations

import linecache
import os
import sys
import threading
from dataclasses import dataclass

import tracegrad


@dataclass(frozen=True)
class Site:
    """Where in the user's source something happened: the engine notes one per node (when
    anomaly mode or a listener asks), traces keep them (``tracegrad.tracing.model.Site``
    is this class).

    >>> Site("train.py", 12, "step", "loss = model(x).sum()")
    Site(file='train.py', line=12, function='step', code='loss = model(x).sum()')
    >>> str(Site("train.py", 12, "step"))
    'train.py:12'
    """

    file: str
    line: int
    function: str
    code: str = ""  # the text of that line, stripped

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


_PACKAGE_DIR = os.path.dirname(os.path.abspath(tracegrad.__file__)) + os.sep
# Folders whose code is never the user's: tracegrad's own, and (once the PyTorch bridge
# observes a program) torch's, so a site is the user's line, not torch/nn/functional.py.
_internal_dirs: tuple[str, ...] = (_PACKAGE_DIR,)
_internal_files: dict[str, bool] = {}


def _is_internal(filename: str) -> bool:
    internal = _internal_files.get(filename)
    if internal is None:
        path = os.path.abspath(filename)
        internal = path.startswith(_internal_dirs) or filename.startswith("<frozen")
        _internal_files[filename] = internal
    return internal


def add_internal_directory(path: str) -> None:
    """Treat code under ``path`` as library code, skipped when looking for the user's line
    (the PyTorch bridge adds torch's package folder)."""
    global _internal_dirs
    folder = os.path.abspath(path) + os.sep
    if folder not in _internal_dirs:
        _internal_dirs = _internal_dirs + (folder,)
        _internal_files.clear()


def user_site(depth: int = 1):
    """The (file, line, function, code) of the innermost frame outside tracegrad.

    The file is made relative to the working directory where possible, so traces and
    golden files do not depend on where the checkout lives.

    Every op asks while a tracer listens (bench/bench_trace.py (b)): the cache is keyed by
    the code object's identity (hashing a code object hashes its constants, on every call).
    """
    frame = first_user_frame(sys._getframe(depth))
    return None if frame is None else _site_of(frame)


def first_user_frame(frame):
    """``frame`` or the first frame above it outside tracegrad (None: there is none).

    The walk reads the file table inline: it runs for every op while a tracer listens."""
    internal = _internal_files
    while frame is not None:
        filename = frame.f_code.co_filename
        flag = internal.get(filename)
        if flag is None:
            flag = _is_internal(filename)
        if not flag:
            return frame
        frame = frame.f_back
    return None


def _site_of(frame) -> Site:
    # A loop makes the same node on the same line every iteration: Sites are immutable, so
    # one per (code, line) is shared (relpath and linecache cost more than the op itself).
    # The cache is keyed by the instruction (f_lasti): f_lineno decodes the code's line
    # table from its start on every read, which costs more the longer the function (a
    # script's module code). Distinct code objects keep distinct Sites (two copies of one
    # script compile to equal code objects, and each must keep its own file); the entry
    # holds its code object, so the id in the key is never reused while the entry exists.
    code = frame.f_code
    key = (id(code), frame.f_lasti)
    entry = _sites.get(key)
    if entry is not None and entry[0] is code:
        return entry[1]
    line_key = (id(code), frame.f_lineno)  # the instructions of one line share one Site
    entry = _line_sites.get(line_key)
    if entry is not None and entry[0] is code:
        site = entry[1]
    else:
        site = _make_site(frame)
        _line_sites[line_key] = (code, site)
    _sites[key] = (code, site)
    return site


class _EventFrame(threading.local):
    """Per thread: the user's frame that the last ``event_site`` found, waiting for the
    recorder told of the event (see ``event_site``), and how many recorders recording in
    this thread want it (other threads keep no frame)."""

    frame = None
    wanted = 0


event_frame = _EventFrame()


def want_event_frames(wanted: bool) -> None:
    """A recorder starts (True) or stops (False) taking the frames ``event_site`` finds
    in the calling thread (the one it records)."""
    event_frame.wanted = max(0, event_frame.wanted + (1 if wanted else -1))
    event_frame.frame = None


def event_site(depth: int = 1):
    """``user_site`` for an op being recorded: while a recorder wants it, the frame found
    is also left in ``event_frame.frame`` for the recorder, which takes it (and clears it)
    in the event that follows -- it names tensors after that frame's variables, and one
    walk up the stack then serves both (each walk makes a frame object per frame it
    passes: bench/bench_trace.py (b))."""
    frame = first_user_frame(sys._getframe(depth))
    local = event_frame
    if local.wanted:
        local.frame = frame
    if frame is None:
        return None
    return _site_of(frame)


_sites: dict = {}  # (id(code), f_lasti) -> (code, Site)
_line_sites: dict = {}  # (id(code), line) -> (code, Site)


def _make_site(frame) -> Site:
    filename = frame.f_code.co_filename
    line = frame.f_lineno
    code = linecache.getline(filename, line).strip()
    return Site(display_path(filename), line, frame.f_code.co_name, code)


def display_path(filename: str) -> str:
    if filename.startswith("<"):
        return filename
    try:
        relative = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if relative.startswith("..") else relative
