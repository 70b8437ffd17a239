"""Small text helpers for graph labels and tooltips: edge summaries, statistics, clipping.

They return plain text; quoting for DOT happens once, in ``dot.py``.
"""

from __future__ import annotations

from ..tracing.model import Stats, Value
from ..tracing.text import bytes_text, number_text, site_full, site_short, size_text

# The words shared with the CLI, the debugger and pytest live in tracing/text.py; what is
# only drawn (edge summaries, tooltip statistics, clipping) is here.
__all__ = ["bytes_text", "clip", "nonfinite_text", "number_text", "site_full", "site_short",
           "size_text", "value_detail", "value_summary"]


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
    stats = value.stats
    norm = stats.norm
    text = f"{size_text(value.shape)} ‖{'?' if norm is None else format(norm, '.4g')}‖"
    if stats.nan_count or stats.inf_count:  # nonfinite_text's test, without the call
        return f"{text} {nonfinite_text(stats)}"
    return text


def value_detail(value: Value) -> str:
    """Shape, dtype and every statistic, for tooltips."""
    stats = value.stats
    numbers = (stats.min, stats.max, stats.mean, stats.norm)
    if None in numbers:
        text = (f"{value.dtype} {size_text(value.shape)} min={number_text(stats.min)} "
                f"max={number_text(stats.max)} mean={number_text(stats.mean)} "
                f"norm={number_text(stats.norm)}")
    else:  # number_text's format, one %-format for all four: a third of the time
        text = f"{value.dtype} {size_text(value.shape)} " + _ALL_STATS % numbers
    if stats.nan_count or stats.inf_count:  # nonfinite_text's test, without the call
        text += " " + nonfinite_text(stats)
    if value.array is None:  # value.summarized, without the property call
        text += " (summary only)"
    return text


_ALL_STATS = "min=%.4g max=%.4g mean=%.4g norm=%.4g"


def clip(text: str, limit: int) -> str:
    """Cut text to ``limit`` characters, ending in ``...`` when cut (torchviz's rule)."""
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."
