"""Small text helpers for graph labels and tooltips: shapes, bytes, numbers, sites.

They return plain text; quoting for DOT happens once, in ``dot.py``.
"""

from __future__ import annotations

import os

from ..tracing.model import Site, Stats, Value


def shape_text(shape: tuple[int, ...] | None) -> str:
    """``(2, 3)`` as torchviz writes sizes; ``()`` for a scalar, ``(?)`` when unknown.

    >>> shape_text((2, 3))
    '(2, 3)'
    """
    if shape is None:
        return "(?)"
    text = _shape_texts.get(shape)
    if text is None:
        text = "(" + ", ".join(map(str, shape)) + ")"
        if len(_shape_texts) < 4096:  # graphs repeat a few shapes many times
            _shape_texts[shape] = text
    return text


_shape_texts: dict[tuple[int, ...], str] = {}


def bytes_text(count: int) -> str:
    """Bytes in the unit that keeps the number short.

    >>> bytes_text(24), bytes_text(4096)
    ('24 B', '4.0 KiB')
    """
    amount = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if amount < 1024 or unit == "GiB":
            return f"{count} B" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    raise AssertionError("unreachable")


def number_text(value: float | None) -> str:
    return "?" if value is None else format(value, ".4g")


def site_short(site: Site | None) -> str:
    """``net.py:12``: the file's base name and line, short enough for a label."""
    if site is None:
        return "?"
    return f"{os.path.basename(site.file)}:{site.line}"


def site_full(site: Site | None) -> str:
    """``examples/net.py:12 in forward: h = x.mm(w1)`` for tooltips."""
    if site is None:
        return "unknown site"
    text = f"{site.file}:{site.line} in {site.function}"
    return f"{text}: {site.code}" if site.code else text


def nonfinite_text(stats: Stats) -> str:
    """``NaN×2 Inf×1`` or the empty string when every element is finite."""
    parts = []
    if stats.nan_count:
        parts.append(f"NaN×{stats.nan_count}")
    if stats.inf_count:
        parts.append(f"Inf×{stats.inf_count}")
    return " ".join(parts)


def value_summary(value: Value) -> str:
    """One line for an edge: shape, norm, and NaN/Inf counts when there are any.

    >>> from tracegrad.tracing.model import Stats, Value
    >>> value_summary(Value((2, 3), "float32", Stats(norm=1.5)))
    '(2, 3) ‖1.5‖'
    """
    text = f"{shape_text(value.shape)} ‖{number_text(value.stats.norm)}‖"
    bad = nonfinite_text(value.stats)
    return f"{text} {bad}" if bad else text


def value_detail(value: Value) -> str:
    """Shape, dtype and every statistic, for tooltips."""
    stats = value.stats
    text = (f"{value.dtype} {shape_text(value.shape)} min={number_text(stats.min)} "
            f"max={number_text(stats.max)} mean={number_text(stats.mean)} "
            f"norm={number_text(stats.norm)}")
    bad = nonfinite_text(stats)
    if bad:
        text += " " + bad
    if value.summarized:
        text += " (summary only)"
    return text


def clip(text: str, limit: int) -> str:
    """Cut text to ``limit`` characters, ending in ``...`` when cut (torchviz's rule)."""
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."
