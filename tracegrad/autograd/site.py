"""Finding the user's source line: the first frame outside tracegrad itself."""

from __future__ import annotations

import linecache
import os
import sys

import tracegrad

_PACKAGE_DIR = os.path.dirname(os.path.abspath(tracegrad.__file__)) + os.sep
_internal_files: dict[str, bool] = {}


def _is_internal(filename: str) -> bool:
    internal = _internal_files.get(filename)
    if internal is None:
        path = os.path.abspath(filename)
        internal = path.startswith(_PACKAGE_DIR) or filename.startswith("<frozen")
        _internal_files[filename] = internal
    return internal


def user_site(depth: int = 1):
    """The (file, line, function, code) of the innermost frame outside tracegrad.

    The file is made relative to the working directory where possible, so traces and
    golden files do not depend on where the checkout lives.
    """
    frame = sys._getframe(depth)
    while frame is not None and _is_internal(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return None
    # A loop makes the same node on the same line every iteration: Sites are immutable, so
    # one per (code, line) is shared (relpath and linecache cost more than the op itself).
    # The file is part of the key: code objects compare equal across files when their
    # source is the same (two copies of one script), and each must keep its own file.
    code = frame.f_code
    key = (code, code.co_filename, frame.f_lineno)
    site = _sites.get(key)
    if site is None:
        site = _sites[key] = _make_site(frame)
    return site


_sites: dict = {}


def _make_site(frame):
    from ..tracing.model import Site

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
