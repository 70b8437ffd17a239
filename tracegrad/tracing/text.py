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


# -- nodes and tolerances ------------------------------------------------------------------


def describe_node(trace: Trace, node_id: int | None) -> str:
    """``MulBackward0 at net.py:3``, ``AccumulateGrad of 'w'``: a node as where-two-runs-part
    names the ops around the place where they differ (``(not recorded)`` when it is not in
    ``trace``).

    >>> import tracegrad
    >>> w = tracegrad.ones(3, requires_grad=True)
    >>> with tracegrad.record() as tr:
    ...     (w * 2).sum().backward()
    >>> [describe_node(tr, node.id).split(" at ")[0] for node in tr.iter_nodes()]
    ['MulBackward0', "AccumulateGrad of 'w'", 'SumBackward0']
    >>> describe_node(tr, None)
    '(not recorded)'
    """
    if node_id is None or node_id not in trace.nodes:
        return "(not recorded)"
    node = trace.nodes[node_id]
    if node.kind == "accumulate" and node.leaf is not None and node.leaf in trace.tensors:
        return f"AccumulateGrad of '{trace.tensors[node.leaf].label}'"
    return f"{node.name} at {node.site}" if node.site is not None else node.name


def tolerance_words(rtol: float | None, atol: float | None) -> str:
    """The tolerance two runs were compared with, as ``tracegrad diff`` and its TUI say it.

    >>> tolerance_words(None, None)
    "torch.testing's default tolerances"
    >>> tolerance_words(1e-3, None), tolerance_words(1e-3, 0.0)
    ('rtol=0.001', 'rtol=0.001, atol=0.0')
    """
    if rtol is None and atol is None:
        return "torch.testing's default tolerances"
    if rtol is not None and atol is not None:
        return f"rtol={rtol}, atol={atol}"
    return f"rtol={rtol}" if rtol is not None else f"atol={atol}"


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
    if first.kind in ("nan", "inf"):
        lines += nonfinite_lines(trace, first)
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
    if violation.phase == "forward":
        tensor = trace.tensors.get(violation.tensor) if violation.tensor is not None else None
        if tensor is None:
            return None
        inputs = "inputs that held Inf but no NaN" if violation.from_nonfinite \
            else "finite inputs"
        return nonfinite_message(trace, violation,
                                 f"produced {describe_tensor(tensor)} from {inputs}")
    edge = f" for input {violation.input_nr}" if violation.input_nr is not None else ""
    where = (f" (pass {violation.pass_index}, step {violation.step_index})"
             if violation.pass_index is not None and violation.step_index is not None else "")
    incoming = "incoming gradients that held Inf but no NaN" if violation.from_nonfinite \
        else "finite incoming gradients"
    return nonfinite_message(trace, violation, f"returned a non-finite gradient{edge} from "
                             f"{incoming}{where}")


def nonfinite_message(trace: Trace, violation: Violation, made: str) -> str:
    """What a NaN/Inf finding says in one sentence and its hint; ``made`` says what the op
    did (``produced 'h' float32 [2] from finite inputs``). The cause, with its evidence,
    has lines of its own in the block (:func:`nonfinite_lines`)."""
    node = trace.nodes.get(violation.node) if violation.node is not None else None
    what = "NaN" if violation.kind == "nan" else "Inf"
    name = node.name if node is not None else "an op"
    text = f"{what} first appeared in {violation.phase}: {name} {made}."
    hint = _nonfinite_hint(trace, violation)
    return f"{text} {hint}" if hint else text


def _nonfinite_hint(trace: Trace, violation: Violation) -> str:
    if _mask(trace, violation) is not None and violation.phase == "forward":
        return f"Hint: {CAUSE_TEXT['where_trap'][1]}."
    if violation.cause is not None:
        return cause_hint(trace, violation, upstream=False)  # a line of the block names it
    # A trace recorded before causes: no values to explain it from.
    earlier = _forward_nonfinite_before(trace, violation) \
        if violation.phase == "backward" else None
    if earlier is not None:
        # A non-finite forward value flows into every derivative that uses it: the cause
        # is the forward finding, whatever this op is.
        return (f"Hint: a forward value was already non-finite (see the finding at "
                f"{site_inline(earlier.site)}); fix that first.")
    fallback = "overflow" if violation.kind == "inf" else "undefined"
    hint = CAUSE_TEXT[fallback][1].format(dtype=_finding_dtype(trace, violation), limit="")
    return f"Hint: {CAUSE_TEXT[fallback][0].format(dtype=_finding_dtype(trace, violation))}; " \
        f"{hint}."


def nonfinite_lines(trace: Trace, violation: Violation) -> list[str]:
    """The cause of a NaN/Inf finding and the lines that go with it (the where that masked
    it, the op where a non-finite input first appeared), as the block lists them."""
    lines = []
    phrase = cause_phrase(trace, violation)
    if phrase:
        lines.append(f"  {'cause':<12} {phrase}")
    mask = _mask(trace, violation)
    if mask is not None:
        lines.append(f"  {'masked by':<12} {mask.name} at {site_line(mask.site)}")
        if violation.phase == "forward":
            lines.append(f"  {'':<12} backward still runs through it: 0 × an infinite "
                         "derivative = NaN (the where trap)")
    upstream = _upstream_node(trace, violation)
    if upstream is not None:
        label = "first Inf" if _first_kind(trace, upstream.id) == "inf" else "first NaN"
        lines.append(f"  {label:<12} {upstream.name} at {site_line(upstream.site)}")
    return lines


def _mask(trace: Trace, violation: Violation):
    mask = violation.detail.get("mask_node") if violation.detail else None
    return trace.nodes.get(mask) if mask is not None else None


def _upstream_node(trace: Trace, violation: Violation):
    upstream = violation.detail.get("upstream") if violation.detail else None
    return trace.nodes.get(upstream) if upstream is not None else None


def _first_kind(trace: Trace, node_id: int) -> str:
    for violation in trace.violations:
        if violation.node == node_id and violation.phase == "forward":
            return violation.kind
    return "nan"


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


def _and(words: list[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


# -- why a NaN / Inf: the words for each cause (causes.py and nonfinite.py find them) ---
# cause -> (what happened, the hint). ``{limit}`` and ``{dtype}`` come from the finding.
CAUSE_TEXT: dict[str, tuple[str, str]] = {
    "log_of_zero": ("log of 0", ("add a small epsilon or clamp the input first "
                    "(x.clamp_min(1e-12).log())")),
    "log_of_negative": ("log of a negative value", ("check the sign of the input; clamp it "
                        "to a positive minimum before log")),
    "sqrt_of_negative": ("sqrt of a negative value", "clamp the input to >= 0 before sqrt"),
    "division_by_zero": ("division by 0", ("add a small epsilon to the denominator or mask "
                         "the zeros before dividing")),
    "zero_by_zero": ("0/0", "add a small epsilon to the denominator or mask the zeros"),
    "inf_by_inf": ("Inf/Inf", "the operands overflowed first: fix where they became Inf"),
    "inf_minus_inf": ("Inf - Inf", "the operands overflowed first: fix where they became Inf"),
    "inf_times_zero": ("Inf × 0", "an Inf operand met a 0: fix where the Inf came from"),
    "pow_negative_fractional": ("pow of a negative base to a fractional exponent",
                                "clamp the base to >= 0 or use x.abs() ** p * x.sign()"),
    "pow_zero_negative": ("pow of 0 to a negative exponent",
                          "add a small epsilon to the base"),
    "pow_grad_at_zero": ("the derivative of pow at base 0 with an exponent below 1",
                         "add a small epsilon to the base"),
    "exp_overflow": ("exp overflow past {limit} in {dtype}",
                     "subtract the maximum first (logsumexp / softmax do), or clamp the input"),
    "outside_unit": ("asin/acos/atanh of a value outside [-1, 1]",
                     "clamp the input to [-1 + eps, 1 - eps]"),
    "atanh_of_one": ("atanh at ±1", "clamp the input to [-1 + eps, 1 - eps]"),
    "asin_grad_at_one": ("the derivative of asin/acos at ±1 (1/sqrt(1 - x²))",
                         "clamp the input to [-1 + eps, 1 - eps]"),
    "log_grad_at_zero": ("the derivative of log at 0 (1/x)",
                         "add a small epsilon or clamp the input before log"),
    "sqrt_grad_at_zero": ("the derivative of sqrt at 0 (1/(2·sqrt(x)))",
                          "use (x + eps).sqrt(); for a norm, add eps inside the sqrt"),
    "nonfinite_input": ("an input that was already non-finite",
                        "fix the op that made it first"),
    "nonfinite_gradient": ("an incoming gradient that already held Inf",
                           "fix the op whose gradient became Inf first"),
    "where_trap": (("the where trap: the branch the mask dropped was non-finite in forward, "
                   "and its gradient there is 0 × Inf = NaN"),
                   ("mask the input, not the output: where(mask, f(where(mask, x, safe)), 0), "
                   "so f never sees the values the mask drops")),
    "overflow": ("an overflow: the values grew too large for {dtype}",
                 ("check the scale of the inputs and weights, lower the learning rate, or "
                 "clip gradients")),
    "undefined": (("an undefined operation (0/0, Inf - Inf, 0 × Inf, log or sqrt of a "
                  "negative value)"), "look at the values that line saw"),
}


def cause_phrase(trace: Trace, violation: Violation) -> str:
    """The cause with its evidence, e.g. ``log of 0 at 1 of 2 elements of 'spread' ([1] =
    0)``; "" when the finding has no cause (traces recorded before causes).

    >>> v = Violation(kind="inf", message="", cause="log_of_zero", detail={"input": "s",
    ...     "source": "array", "count": 1, "total": 2, "indices": [[1]], "values": ["0"]})
    >>> cause_phrase(Trace(), v)
    'log of 0 at 1 of 2 elements of s ([1] = 0)'
    """
    if violation.cause is None:
        return ""
    detail = violation.detail
    what, _ = CAUSE_TEXT.get(violation.cause, (violation.cause, ""))
    dtype = _finding_dtype(trace, violation)
    what = what.format(limit=detail.get("limit", "?"), dtype=dtype)
    inner = detail.get("inner_cause")
    if violation.cause == "where_trap" and inner in CAUSE_TEXT:
        what += f" ({CAUSE_TEXT[inner][0]})"
    return what + _evidence(trace, detail)


def _evidence(trace: Trace, detail: dict) -> str:
    if not detail or "input" not in detail:
        return ""
    tensor = trace.tensors.get(detail.get("tensor")) if detail.get("tensor") is not None \
        else None
    label = f"'{tensor.name}'" if tensor is not None and tensor.name else detail["input"]
    if detail.get("source") == "stats":
        kept = detail.get("dropped") or "not kept"
        bounds = f"; min {detail['min']}, max {detail['max']}" if "min" in detail else ""
        return f" in {label} (its values: {kept}, statistics only{bounds})"
    elements = ", ".join(f"{index} = {value}" for index, value in
                         zip(detail.get("indices", []), detail.get("values", [])))
    more = ", ..." if detail.get("count", 0) > len(detail.get("indices", [])) else ""
    return (f" at {detail.get('count')} of {detail.get('total')} elements of {label} "
            f"({elements}{more})")


def cause_hint(trace: Trace, violation: Violation, upstream: bool = True) -> str:
    """``Hint: ...`` for a finding with a cause ("" without one); ``upstream``: name the
    op where a non-finite input first appeared."""
    if violation.cause is None:
        return ""
    _, hint = CAUSE_TEXT.get(violation.cause, ("", ""))
    hint = hint.format(dtype=_finding_dtype(trace, violation), limit="")
    upstream = _upstream(trace, violation) if upstream else ""
    if upstream:
        hint += f" ({upstream})"
    return f"Hint: {hint}." if hint else ""


def _upstream(trace: Trace, violation: Violation) -> str:
    node = trace.nodes.get(violation.detail.get("upstream")) \
        if violation.detail.get("upstream") is not None else None
    if node is None:
        return ""
    return f"it first became non-finite in {node.name} at {site_inline(node.site)}"


def _finding_dtype(trace: Trace, violation: Violation) -> str:
    node = trace.nodes.get(violation.node) if violation.node is not None else None
    for tensor_id in (node.outputs if node is not None else ()):
        record = trace.tensors.get(tensor_id)
        if record is not None:
            return record.dtype
    return "float32"


# -- what backward keeps (memory.py computes it) -----------------------------------------
def format_memory(trace: Trace, report, top: int = 5) -> list[str]:
    """The memory report as lines: totals and peak, then the largest modules, lines and
    tensors saved twice (``top`` of each).

    >>> from tracegrad.tracing.memory import MemoryReport
    >>> format_memory(Trace(), MemoryReport())
    ['saved for backward: nothing']
    """
    if not report.saved_count:
        return ["saved for backward: nothing"]
    when = f" (as pass {report.peak_pass} started)" if report.peak_pass is not None else \
        " (at the end, no backward ran)"
    lines = [(f"saved for backward: {report.saved_count} tensors, "
             f"{bytes_text(report.saved_bytes)} ({bytes_text(report.distinct_bytes)} in "
             f"distinct storage); peak held between forward and backward "
             f"{bytes_text(report.peak_bytes)}{when}")]
    modules = [(name, size) for name, size in report.by_module if name != "(no module)"]
    if modules:
        lines.append("  at the peak, by module:")
        lines += [f"    {name:<28} {bytes_text(size):>10}" for name, size in modules[:top]]
    lines.append("  at the peak, by line:")
    for site, size, names in report.by_line[:top]:
        lines.append(f"    {bytes_text(size):>10}  {', '.join(names)} at {site_line(site)}")
    if report.saved_twice:
        lines.append("  saved twice:")
        for twice in report.saved_twice[:top]:
            lines.append(f"    {bytes_text(twice.nbytes):>10}  {_twice(trace, twice)}")
    return lines


def _twice(trace: Trace, twice) -> str:
    record = trace.tensors.get(twice.tensor)
    what = describe_tensor(record) if record is not None else f"t{twice.tensor}"
    counts: dict[str, int] = {}
    for holder in twice.holders:
        label = f"{holder.name} ({holder.site})" if holder.site is not None else holder.name
        counts[label] = counts.get(label, 0) + 1
    by = _and([label if count == 1 else f"{label} ×{count}"
               for label, count in counts.items()])
    if twice.kind == "copy":
        original = trace.tensors.get(twice.original)
        source = describe_tensor(original) if original is not None else f"t{twice.original}"
        return f"{what}, a copy of {source}: both saved, by {by}"
    return f"{what} saved by {by}"
