"""How much a .tgtrace file may make ``load_trace`` read and build.

A trace file is input like any other: a few MB of zip can claim gigabytes once
decompressed, or shapes no machine could hold. ``load_trace`` checks the sizes a file
declares before reading anything and again while it reads, and the validator checks every
shape, against ``TraceLimits``; going over one raises ``TraceFileError`` naming the limit
and how to raise it.

>>> TraceLimits().max_array_bytes == 1 << 30
True
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from typing import Self

LIMITS_VARIABLE = "TRACEGRAD_TRACE_LIMITS"
_SUFFIXES = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


@dataclass(frozen=True)
class TraceLimits:
    """How much a trace file may make ``load_trace`` read and build.

    max_json_bytes   trace.json decompressed
    max_json_ratio   trace.json's decompressed size over its compressed size, checked once
                     it is over 64 MiB (tracegrad writes about 5:1; a decompression bomb
                     reaches 1000:1)
    max_array_bytes  all arrays together, decompressed
    max_elements     elements of any one shape (tensor, value or array)
    max_dims         dimensions of any one shape

    The defaults load every trace recorded with the default values budget (256 MiB) and
    keep a hostile file from taking more than a few GiB. ``load_trace(path, limits=...)``
    takes others; for the command line, set ``TRACEGRAD_TRACE_LIMITS``, e.g.
    ``max_array_bytes=8G,max_json_bytes=2G``.

    >>> TraceLimits.parse("max_array_bytes=8G").max_array_bytes
    8589934592
    """

    max_json_bytes: int = 1 << 30
    max_json_ratio: float = 50.0
    max_array_bytes: int = 1 << 30
    max_elements: int = 1 << 40
    max_dims: int = 64

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"TraceLimits: {field.name} must be a positive number, got "
                                 f"{value!r}")

    @classmethod
    def parse(cls, text: str) -> TraceLimits:
        """Limits from ``name=value,name=value`` (sizes take K, M, G, T suffixes)."""
        names = {field.name: field.type for field in dataclasses.fields(cls)}
        changes: dict[str, float] = {}
        for part in filter(None, (part.strip() for part in text.split(","))):
            name, _, value = part.partition("=")
            name, value = name.strip(), value.strip().lower()
            if name not in names:
                raise ValueError(
                    f"{LIMITS_VARIABLE}: unknown limit {name!r} in {text!r}. Hint: the limits "
                    f"are {', '.join(names)}.")
            try:
                if names[name] == "float":
                    changes[name] = float(value)
                else:
                    number, suffix = value.rstrip("kmgt"), value[len(value.rstrip("kmgt")):]
                    changes[name] = int(float(number) * _SUFFIXES[suffix])
            except (ValueError, KeyError):
                raise ValueError(
                    f"{LIMITS_VARIABLE}: {name}={value!r} is not a number. Hint: write it like "
                    f"{name}=4G.") from None
        return cls(**changes)

    @classmethod
    def from_environment(cls) -> TraceLimits:
        """The limits ``TRACEGRAD_TRACE_LIMITS`` sets, or the defaults."""
        text = os.environ.get(LIMITS_VARIABLE, "")
        return cls.parse(text) if text.strip() else DEFAULT_LIMITS

    def hint(self, name: str, needed: float) -> str:
        """How to raise limit ``name`` to ``needed``, for the Python API and the shell."""
        if name == "max_json_ratio":
            exact = shell = f"{math.ceil(needed)}"
        else:
            shell = _size_text(needed)
            exact = f"{int(needed)}"
        return (f"if you trust this file, raise the limit: load_trace(path, "
                f"limits=TraceLimits({name}={exact})), or for the command line "
                f"{LIMITS_VARIABLE}={name}={shell}")


def _size_text(count: float) -> str:
    """The smallest whole number of K/M/G/T at least ``count`` (bytes or elements)."""
    for suffix, unit in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if count >= unit:
            return f"{math.ceil(count / unit)}{suffix}"
    return str(int(count))


DEFAULT_LIMITS = TraceLimits()


class OverLimit(str):
    """A problem text that says a limit was exceeded; ``limit`` names the TraceLimits field
    (so the error raised for it can carry the name without parsing the text)."""

    limit: str

    def __new__(cls, text: str, limit: str) -> Self:
        problem = super().__new__(cls, text)
        problem.limit = limit
        return problem


__all__ = ["DEFAULT_LIMITS", "LIMITS_VARIABLE", "OverLimit", "TraceLimits"]
