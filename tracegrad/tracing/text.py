"""Trace data as words: shapes, dtypes, bytes, sites, tensors and violations.

Everything that shows a trace to a person -- ``tracegrad check``, the summary, the
debugger, the picture's tooltips and the pytest assertions -- takes its words from here, so
the same violation reads the same everywhere. A violation is described from its structured
fields when it is shown (tensor and node ids, sites, versions, op), never from text patched
after the fact, so a tensor named late reads with its name.

>>> from tracegrad.tracing.model import Site, Trace, Violation
>>> violation = Violation(kind="nan", message="NaN first appeared", site=Site("a.py", 3, "f"))
>>> print("\\n".join(violation_lines(Trace(), violation)))
a.py:3: NaN in forward [nan]
  NaN first appeared
  produced at  a.py:3
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from .model import Site, TensorRecord, Trace, Violation

# -- shapes, dtypes, bytes, numbers --------------------------------------------------------


def shape_text(shape: Sequence[int]) -> str:
    """``[8, 16]``: a shape as ``list(torch.Size)`` prints it (messages, the debugger).

    >>> shape_text((8, 16)), shape_text(())
    ('[8, 16]', '[]')
    """
    return "[" + ", ".join(str(size) for size in shape) + "]"


def size_text(shape: Sequence[int] | None) -> str:
    """``(2, 3)``: a shape as torchviz writes sizes in its pictures (``()`` for a scalar,
    ``(?)`` when unknown), so its users read ours the same way.

    >>> size_text((2, 3)), size_text(None)
    ('(2, 3)', '(?)')
    """
    if shape is None:
        return "(?)"
    key = tuple(shape)
    text = _size_texts.get(key)
    if text is None:
        text = "(" + ", ".join(map(str, key)) + ")"
        if len(_size_texts) < 4096:  # a graph repeats a few shapes many times: cache them
            _size_texts[key] = text
    return text


_size_texts: dict[tuple[int, ...], str] = {}

_SHORT_DTYPES = {
    "float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "bool": "b8", "complex64": "c64", "complex128": "c128",
}


def short_type(dtype: str, shape: Sequence[int]) -> str:
    """``f32[3,4]``: dtype and shape in the fewest characters (jaxpr style), for the
    canonical graph text, where every saved tensor gets one.

    >>> short_type("float32", (3, 4))
    'f32[3,4]'
    """
    return f"{_SHORT_DTYPES.get(dtype, dtype)}[{','.join(str(size) for size in shape)}]"


def bytes_text(count: int) -> str:
    """Bytes in the unit that keeps the number short.

    >>> bytes_text(24), bytes_text(4096), bytes_text(3 << 30)
    ('24 B', '4.0 KiB', '3.0 GiB')
    """
    amount = float(count)
    for unit in ("B", "KiB", "MiB"):
        if amount < 1024:
            return f"{count} B" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{amount:.1f} GiB"


def number_text(value: float | None, missing: str = "?") -> str:
    """A statistic in four significant digits; ``missing`` when there is none.

    >>> number_text(0.123456), number_text(None)
    ('0.1235', '?')
    """
    return missing if value is None else format(value, ".4g")


# -- sites ------------------------------------------------------------------------------


def site_short(site: Site | None) -> str:
    """``net.py:12``: the file's base name and line, short enough for a label."""
    if site is None:
        return "?"
    return f"{os.path.basename(site.file)}:{site.line}"


def site_full(site: Site | None) -> str:
    """``examples/net.py:12 in forward: h = x.mm(w1)``: file, line, function and code."""
    if site is None:
        return "unknown site"
    text = f"{site.file}:{site.line} in {site.function}"
    return f"{text}: {site.code}" if site.code else text


def site_line(site: Site | None) -> str:
    """``examples/net.py:12   h = x.mm(w1)``: the site as a violation's block lists it."""
    if site is None:
        return "(unknown line)"
    return f"{site}" + (f"   {site.code}" if site.code else "")


def site_inline(site: Site | None) -> str:
    """``net.py:12 (h = x.mm(w1))``: a site inside a sentence."""
    if site is None:
        return "(line unknown)"
    return f"{site}" + (f" ({site.code})" if site.code else "")


# -- tensors ----------------------------------------------------------------------------


def describe_tensor(record: TensorRecord) -> str:
    """``'h' float32 [8, 16]``, or ``t4 float32 [8, 16]`` when it has no name.

    >>> describe_tensor(TensorRecord(4, (8, 16), "float32"))
    't4 float32 [8, 16]'
    """
    label = f"'{record.name}'" if record.name else f"t{record.id}"
    return f"{label} {record.dtype} {shape_text(record.shape)}"


# -- violations -------------------------------------------------------------------------


@dataclass(frozen=True)
class KindWords:
    """The words for one kind of violation.

    ``title`` heads its block (``{phase}`` is filled in), ``site`` and ``other_site`` label
    the violation's two sites, ``mark`` is the few words on the picture's red box.
    """

    title: str
    site: str
    other_site: str | None
    mark: str


VIOLATION_KINDS: dict[str, KindWords] = {
    "inplace_saved": KindWords("in-place change of a tensor saved for backward",
                               "in-place op", "saved by", "modified in place"),
    "inplace_leaf": KindWords("in-place change of a leaf that requires grad",
                              "in-place op", "leaf made", "in-place on a leaf"),
    "nan": KindWords("NaN in {phase}", "produced at", None, "NaN first appears here"),
    "inf": KindWords("Inf in {phase}", "produced at", None, "Inf first appears here"),
    "freed_graph": KindWords("backward through a freed graph", "backward at", "node made",
                             "graph freed"),
}


def kind_words(kind: str) -> KindWords:
    """The words for ``kind``; a kind this version does not know reads as its name."""
    words = VIOLATION_KINDS.get(kind)
    return words if words is not None else KindWords(kind, "site", "other site", kind)


INPLACE_HINT = ("Hint: use the out-of-place op (e.g. 'y = y + 1' instead of 'y += 1'), or "
                ".clone() the tensor before changing it.")
LEAF_HINT = ("Hint: do the update under `with tracegrad.no_grad():` (as an optimizer step "
             "does), or use an out-of-place op.")
FREED_HINT = ("Hint: pass retain_graph=True to that earlier backward() if you need to run "
              "backward through the graph twice.")


def violation_title(violation: Violation) -> str:
    """``in-place change of a tensor saved for backward``, ``NaN in backward``, ..."""
    return kind_words(violation.kind).title.format(phase=violation.phase)


def violation_lines(trace: Trace, violation: Violation) -> list[str]:
    """The block that describes one violation: ``site: title [kind]``, what happened, each
    site with its label and code, and the versions. ``tracegrad check`` prints it, the
    debugger shows it, the picture's tooltip holds it, a failed assertion says it."""
    return finding_lines(trace, [violation])


def finding_lines(trace: Trace, violations: Sequence[Violation]) -> list[str]:
    """:func:`violation_lines` for one mistake recorded as several violations: one in-place
    line that broke what several nodes saved reads as one block naming every saver."""
    first = violations[0]
    words = kind_words(first.kind)
    location = f"{first.site}: " if first.site is not None else ""
    lines = [f"{location}{violation_title(first)} [{first.kind}]",
             f"  {violation_message(trace, first, violations)}"]
    if first.site is not None:
        lines.append(f"  {words.site:<12} {site_line(first.site)}")
    if first.kind == "inplace_saved":
        for violation in violations:
            if violation.other_site is None:
                continue
            node = trace.nodes.get(violation.node) if violation.node is not None else None
            by = f"{node.name} at " if node is not None else ""
            lines.append(f"  {words.other_site:<12} {by}{site_line(violation.other_site)}")
    elif words.other_site is not None and first.other_site is not None:
        lines.append(f"  {words.other_site:<12} {site_line(first.other_site)}")
    versions = sorted({violation.saved_version for violation in violations
                       if violation.saved_version is not None})
    if versions:
        saved_at = ", ".join(str(version) for version in versions)
        lines.append(f"  {'version':<12} saved at {saved_at}, now {first.current_version}")
    return lines


def violation_mark(violation: Violation) -> list[str]:
    """The short lines on the picture's red box: what went wrong, and where.

    >>> violation_mark(Violation("inplace_leaf", "", site=Site("/a/net.py", 9, "f")))
    ['in-place on a leaf at net.py:9']
    """
    words = kind_words(violation.kind)
    kind = violation.kind
    if kind == "inplace_saved":
        versions = ""
        if violation.saved_version is not None and violation.current_version is not None:
            versions = f" v{violation.saved_version}→v{violation.current_version}"
        return [f"{words.mark}{versions} at {site_short(violation.site)}",
                f"saved at {site_short(violation.other_site)}"]
    if kind in ("nan", "inf"):
        return [f"{words.mark} ({violation.phase}) at {site_short(violation.site)}"]
    if kind == "freed_graph":
        return [f"{words.mark} by pass {violation.pass_index}"]
    return [f"{words.mark} at {site_short(violation.site)}"]


def violation_message(trace: Trace, violation: Violation,
                      group: Sequence[Violation] = ()) -> str:
    """What happened, in one or two sentences with a hint, written from the violation's
    fields and the records they name (so the tensor reads by its current name). When the
    trace lacks those records (a hand-made Violation), the stored ``message``.

    ``group`` is every violation of the same finding (in-place changes: every saver).
    """
    compose = _MESSAGES.get(violation.kind)
    text = compose(trace, violation, list(group) or [violation]) if compose else None
    return text if text is not None else violation.message


def describe_violations(trace: Trace) -> None:
    """Write each violation's ``message`` from its fields again (after tensors were named),
    so the stored text -- what a saved file and ``violation.message`` hold -- is the text
    every view shows."""
    for violation in trace.violations:
        violation.message = violation_message(trace, violation)


def _inplace_saved(trace: Trace, violation: Violation, group: list[Violation]) -> str | None:
    tensor = trace.tensors.get(violation.tensor) if violation.tensor is not None else None
    savers = [trace.nodes.get(member.node) if member.node is not None else None
              for member in group]
    if tensor is None or any(node is None for node in savers):
        return None
    op = _inplace_op(tensor, violation)
    op = f" by '{op}'" if op else ""
    failed = any(member.phase == "backward" for member in group)
    them = "them" if len(savers) > 1 else "it"
    names = _and([node.name for node in savers if node is not None])
    return (f"{describe_tensor(tensor)} was modified in place{op} after {names} saved it for "
            f"backward; backward through {them} {'failed' if failed else 'will fail'}. "
            f"{INPLACE_HINT}")


def _inplace_leaf(trace: Trace, violation: Violation, _group) -> str | None:
    tensor = trace.tensors.get(violation.tensor) if violation.tensor is not None else None
    if tensor is None:
        return None
    op = _inplace_op(tensor, violation)
    change = f"in-place '{op}'" if op else "in-place change"
    return f"{change} on {describe_tensor(tensor)}, a leaf that requires grad. {LEAF_HINT}"


def _nonfinite(trace: Trace, violation: Violation, _group) -> str | None:
    node = trace.nodes.get(violation.node) if violation.node is not None else None
    if node is None:
        return None
    what = "NaN" if violation.kind == "nan" else "Inf"
    if violation.phase == "forward":
        tensor = trace.tensors.get(violation.tensor) if violation.tensor is not None else None
        if tensor is None:
            return None
        hint = nonfinite_hint(violation.kind, node.name, "forward", tensor.dtype)
        return (f"{what} first appeared in forward: {node.name} produced "
                f"{describe_tensor(tensor)} from finite inputs. {hint}")
    edge = f" for input {violation.input_nr}" if violation.input_nr is not None else ""
    where = (f" (pass {violation.pass_index}, step {violation.step_index})"
             if violation.pass_index is not None and violation.step_index is not None else "")
    earlier = _forward_nonfinite_before(trace, violation)
    if earlier is not None:
        # A non-finite forward value flows into every derivative that uses it: the cause
        # is the forward finding, whatever this op is.
        hint = (f"Hint: a forward value was already non-finite (see the finding at "
                f"{site_inline(earlier.site)}); fix that first.")
    else:
        hint = nonfinite_hint(violation.kind, node.name, "backward",
                              _gradient_dtype(trace, node, violation.input_nr))
    return (f"{what} first appeared in backward: {node.name} returned a non-finite gradient"
            f"{edge} from finite incoming gradients{where}. {hint}")


def _freed_graph(trace: Trace, violation: Violation, _group) -> str | None:
    node = trace.nodes.get(violation.node) if violation.node is not None else None
    if node is None:
        return None
    earlier = violation.pass_index
    if earlier is not None and 0 <= earlier < len(trace.passes):
        by = f"backward pass {earlier} (at {site_inline(trace.passes[earlier].site)})"
    else:
        by = "a backward pass that ran before tracing started"
    return (f"backward through {node.name}, whose saved tensors were already freed by {by}. "
            f"{FREED_HINT}")


_MESSAGES = {"inplace_saved": _inplace_saved, "inplace_leaf": _inplace_leaf,
             "nan": _nonfinite, "inf": _nonfinite, "freed_graph": _freed_graph}


def _inplace_op(tensor: TensorRecord, violation: Violation) -> str:
    """The in-place op (``add_``) behind the violation, "" when not known."""
    if violation.op:
        return violation.op
    for change in tensor.versions:
        if change.version == violation.current_version:
            return change.op
    return ""


def _forward_nonfinite_before(trace: Trace, violation: Violation) -> Violation | None:
    """The first forward NaN/Inf finding recorded before ``violation``, if any."""
    for other in trace.violations:
        if other is violation:
            return None
        if other.kind in ("nan", "inf") and other.phase == "forward":
            return other
    return None


def _gradient_dtype(trace: Trace, node, input_nr: int | None) -> str:
    """The dtype of the gradient a node returned for an input: that input's dtype."""
    if input_nr is not None and 0 <= input_nr < len(node.inputs):
        tensor = trace.tensors.get(node.inputs[input_nr])
        if tensor is not None:
            return tensor.dtype
    return "float32"


def _and(words: list[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


# -- hints for non-finite values, by the op that made them ---------------------------------
# Node name prefix -> what makes that op's result (forward) or derivative (backward) NaN/Inf.
_NONFINITE_CAUSES = {
    "Log": "log of 0 or of a negative value",
    "Sqrt": "sqrt of a negative value (or its derivative at 0)",
    "Rsqrt": "rsqrt of 0 or of a negative value",
    "Pow": "pow of 0 to a negative power (or of a negative value to a fractional power)",
    "Div": "division by 0",
    "Reciprocal": "reciprocal of 0",
    "Exp": "exp of a large value (overflow)",
    "Acos": "acos/asin outside [-1, 1] (or their derivative at ±1)",
    "Asin": "acos/asin outside [-1, 1] (or their derivative at ±1)",
    "Atanh": "atanh at ±1",
    "Mm": "a product whose values overflow",
    "Bmm": "a product whose values overflow",
    "Addmm": "a product whose values overflow",
    "Matmul": "a product whose values overflow",
    "Mv": "a product whose values overflow",
    "Dot": "a product whose values overflow",
    "Mul": "a product whose values overflow (or 0 × Inf)",
    "Sum": "a sum whose values overflow (or Inf - Inf)",
    "Mean": "a mean whose values overflow (or Inf - Inf)",
}
_OVERFLOW_HINT = ("the values grew too large for {dtype}: check the scale of the inputs and "
                  "weights, lower the learning rate, or clip gradients")


def nonfinite_hint(kind: str, node_name: str, phase: str, dtype: str = "float32") -> str:
    """A hint for a NaN/Inf that ``node_name`` produced, right for that op.

    >>> nonfinite_hint("inf", "MmBackward0", "backward")
    'Hint: a product whose values overflow; the values grew too large for float32: check the scale of the inputs and weights, lower the learning rate, or clip gradients.'
    >>> nonfinite_hint("inf", "LogBackward0", "forward")
    'Hint: look for log of 0 or of a negative value on that line.'
    """
    base = node_name.removesuffix("Backward0").removesuffix("Backward1")
    cause = _NONFINITE_CAUSES.get(base)
    if cause is not None and "overflow" in cause:
        return f"Hint: {cause}; {_OVERFLOW_HINT.format(dtype=dtype)}."
    if cause is not None:
        where = "on that line" if phase == "forward" else "at the values that line saw"
        return f"Hint: look for {cause} {where}."
    if kind == "inf":
        return (f"Hint: an Inf usually means an overflow or a division by 0; "
                f"{_OVERFLOW_HINT.format(dtype=dtype)}.")
    if phase == "forward":
        return ("Hint: a NaN from finite inputs comes from an undefined operation: 0/0, "
                "Inf - Inf, 0 × Inf, or log/sqrt of a negative value on that line.")
    return ("Hint: the derivative of that line's op is undefined at the values it saw "
            "(0/0, Inf - Inf, 0 × Inf).")
