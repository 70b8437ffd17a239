"""Findings as text with file:line sites, as ``tracegrad check`` and pytest print them.

A *finding* is one mistake in the user's code; it may be recorded as several violations.
One in-place line that changes a tensor two nodes saved is one finding listing both
savers (the trace keeps one violation per saving node, so the picture and the debugger can
mark each node).

>>> from tracegrad.tracing.model import Site, Trace, Violation
>>> violation = Violation(kind="nan", message="NaN first appeared", site=Site("a.py", 3, "f"))
>>> print(format_violation(Trace(), violation))
a.py:3: NaN in forward [nan]
  NaN first appeared
  produced at  a.py:3
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .model import Site, Trace, Violation
from .text import (
    CAUSE_TEXT,
    INPLACE_HINT,
    cause_hint,
    cause_phrase,
    describe_tensor,
    finding_lines,
    format_memory,
    nonfinite_message,
    site_line,
    tolerance_words,
    violation_lines,
)

# The words live in text.py; these names stay importable from here.
__all__ = ["CAUSE_TEXT", "INPLACE_HINT", "Finding", "cause_hint", "cause_phrase",
           "describe_tensor", "findings", "format_finding", "format_memory",
           "format_violation", "nonfinite_message"]


@dataclass
class Finding:
    """One mistake: the violations that record it (several for one in-place line that
    broke several saved copies), first recorded first."""

    violations: list[Violation]

    @property
    def first(self) -> Violation:
        return self.violations[0]

    @property
    def kind(self) -> str:
        return self.first.kind


def findings(trace: Trace, inf: bool = True) -> list[Finding]:
    """The trace's violations grouped into findings, in recording order.

    In-place changes of a saved tensor group by (tensor, in-place line, version it made):
    every node that had saved the tensor is broken by the same line.

    ``inf``: whether Inf counts. True: the first Inf is a finding (and a NaN that Inf
    then made is its consequence, not a finding of its own). False: only NaN counts (an
    Inf can be meant, e.g. a -inf attention mask), so the first NaN is the finding, even
    when it came from an Inf (its cause then names the Inf's line).
    """
    grouped: dict = {}
    result: list[Finding] = []
    for violation in trace.violations:
        if violation.kind == "inf" and not inf:
            continue
        if violation.kind == "nan" and violation.from_nonfinite and inf:
            continue
        if violation.kind == "inplace_saved" and violation.tensor is not None:
            key = (violation.tensor, _site_key(violation.site), violation.current_version)
            finding = grouped.get(key)
            if finding is not None:
                finding.violations.append(violation)
                continue
            finding = grouped[key] = Finding([violation])
        else:
            finding = Finding([violation])
        result.append(finding)
    return result


def format_finding(trace: Trace, finding: Finding) -> str:
    """A finding as ``tracegrad check`` prints it: title line, what happened, every site."""
    return "\n".join(finding_lines(trace, finding.violations))


def format_violation(trace: Trace, violation: Violation) -> str:
    """One violation as ``tracegrad check`` prints it (see ``text.violation_lines``)."""
    return "\n".join(violation_lines(trace, violation))


def _site_key(site: Site | None):
    return (site.file, site.line) if site is not None else None


# -- why no gradient (tracing/why.py) -------------------------------------------------------
# cause -> (what happened, hint). {label}: the tensor; {site}/{other}: the two lines;
# {op}: the node or op; {detail}: the cause's extra word (dtype, error, loss names).
WHY_CAUSES = {
    "has_grad": ("'{label}' has a nonzero gradient after {other}.", ""),
    "integer_dtype": (("'{label}' is {detail}: only floating point tensors can require "
                      "gradients."), "make it with a float dtype (or .float() it)."),
    "requires_grad_false": (("'{label}' does not require grad, so backward "
                            "never gives it a .grad."),
                            ("create it with requires_grad=True, or call "
                            ".requires_grad_() on it before the forward pass.")),
    "detach_": ("'{label}' was taken out of the graph in place by detach_() at {site}.",
                "remove the detach_() call, or detach a copy: h = {label}.detach()."),
    "never_called": ("no backward pass ran, so '{label}' never got a gradient.",
                     "call loss.backward() (or autograd.grad) after the forward pass."),
    "detach": (("the path from the loss to '{label}' is cut by detach() at {site}: the "
               "gradient stops there."),
               ("use the tensor itself where the gradient must flow; detach() only what "
               "must not be trained.")),
    "data": (("the path from the loss to '{label}' is cut by .data at {site}: a tensor "
             "read through .data is outside the graph."),
             "use the tensor itself (not .data) in the computation of the loss."),
    "no_grad": (("the path from the loss to '{label}' is cut at {site}: {op_call} ran while "
                "grad mode was off (inside no_grad / inference_mode / "
                "set_grad_enabled(False)), so it built no node."),
                "compute the loss outside the no_grad block."),
    "untracked": (("the path from the loss to '{label}' is cut at {site}: {op_call} ran on "
                  "values no longer in the graph."),
                  "follow the path back to where the values left the graph."),
    "integer": (("the path from the loss to '{label}' is cut at {site}: {op_call} gives an "
                "integer (or bool) tensor, and gradients do not flow through those."),
                ("keep a floating point path to the loss (e.g. a soft mask instead of a "
                "comparison or argmax).")),
    "item": (("the path from the loss to '{label}' is cut by a .item() round trip: the value "
             "left the graph at {other} and came back as a new tensor at {site}."),
             "use the tensor itself instead of rebuilding it from a Python number."),
    "tolist": (("the path from the loss to '{label}' is cut by a .tolist() round trip: the "
               "values left the graph at {other} and came back as a new tensor at {site}."),
               "use the tensor itself instead of rebuilding it from a list."),
    "numpy": (("the path from the loss to '{label}' is cut by a .numpy() round trip: the "
              "values left the graph at {other} and came back as a new tensor at {site}."),
              "do the computation with tensor ops instead of NumPy."),
    "function_none": (("{op} (forward at {site}) returned None as the gradient of its input "
                      "{detail}, on the way to '{label}'."),
                      ("return a gradient for that input from backward (None means 'no "
                      "gradient').")),
    "none_gradient": (("{op} (forward at {site}) passed no gradient on its input {detail}, "
                      "on the way to '{label}'."), ""),
    "grad_pass": (("the last pass was autograd.grad() at {other}: it returns gradients "
                  "instead of filling .grad."),
                  "use the gradients grad() returns, or call backward()."),
    "retain_graph": (("backward at {other} failed before reaching '{label}': the graph was "
                     "freed by an earlier backward ({detail})."),
                     ("pass retain_graph=True to the first backward, or recompute the "
                     "forward pass before the second.")),
    "backward_failed": ("backward at {other} failed before reaching '{label}': {detail}.",
                        "fix that error first."),
    "not_reached": (("the loss depends on '{label}', but backward at {other} did not reach "
                    "it (backward(inputs=...) or a hook may have stopped it)."), ""),
    "grad_reset": (("'{label}' got its gradient from backward at {other}, and then .grad was "
                   "set to None at {site} (zero_grad() after backward)."),
                   ("call zero_grad() before backward (at the top of the step), not "
                   "between backward and the use of .grad.")),
    "grad_zeroed": (("'{label}' got a nonzero gradient from backward at {other}, and its .grad "
                    "holds only zeros now: it was zeroed in place after that backward "
                    "(zero_grad(set_to_none=False), or .grad.zero_())."),
                    ("zero the gradients before backward (at the top of the step), not "
                    "between backward and the use of .grad.")),
    "wrong_loss": (("backward at {other} started from {detail}, which does not depend on "
                   "'{label}'; the earlier backward at {site} did."),
                   "call backward on the loss that uses '{label}'."),
    "unused_output": (("backward at {other} started from {detail}, which does not depend on "
                      "'{label}': what was computed from it ends unused in {path} (made at "
                      "{site})."),
                      "use that result in the loss, or call backward on the right loss."),
    "not_used": (("backward at {other} started from {detail}, which does not depend on "
                 "'{label}': '{label}' is not used on the way to it."),
                 "use '{label}' in the computation of the loss."),
    "summarized": (("the pass at {other} was summarized to fit the trace's structure budget: "
                   "its steps are not recorded."),
                   "record(structure_budget_bytes=...) keeps more."),
}

# Why a node zeroes a gradient, by node name prefix.
ZERO_CAUSES = {
    "Relu": "a dead ReLU: its inputs were ≤ 0",
    "Threshold": "a dead ReLU: its inputs were ≤ the threshold",
    "Clamp": "a clamp: its inputs were outside the range",
    "Hardtanh": "a clamp (hardtanh): its inputs were outside the range",
    "Sigmoid": "a saturated sigmoid: its outputs were 0 or 1, where the slope underflows to 0",
    "Tanh": "a saturated tanh: its outputs were ±1, where the slope underflows to 0",
    "Mul": "a multiplication by zero: the other factor was 0",
    "Mm": "a product with zeros: the other operand was all zeros",
    "Addmm": "a product with zeros: the other operand was all zeros",
    "Matmul": "a product with zeros: the other operand was all zeros",
    "Bmm": "a product with zeros: the other operand was all zeros",
}
_ZERO_HINTS = {
    "Relu": "check the initialisation and the learning rate; LeakyReLU keeps a slope below 0.",
    "Threshold": "check the initialisation and the learning rate; LeakyReLU keeps a slope.",
    "Sigmoid": "scale the inputs down (normalise, smaller weights).",
    "Tanh": "scale the inputs down (normalise, smaller weights).",
}


def op_call(node_name: str) -> str:
    """The op behind a grad_fn name, as code calls it.

    >>> op_call("MmBackward0"), op_call("argmax"), op_call("TanhBackward0")
    ('mm()', 'argmax()', 'tanh()')
    """
    base = re.sub(r"Backward\d*$", "", node_name) or node_name
    return base[:1].lower() + base[1:] + "()"


def format_why(why) -> str:
    """A WhyNoGrad in words: what happened, where, and a hint.

    >>> from tracegrad.tracing.why import WhyNoGrad
    >>> print(format_why(WhyNoGrad(0, "w1", "detach", site=Site("a.py", 3, "f", "h = w1.detach()"))))
    w1: no gradient [detach]
      the path from the loss to 'w1' is cut by detach() at a.py:3: the gradient stops there.
      at           a.py:3   h = w1.detach()
      Hint: use the tensor itself where the gradient must flow; detach() only what must not be trained.
    """
    if why.cause == "zero":
        return _format_zero(why)
    what, hint = WHY_CAUSES.get(why.cause, ("{label}: {detail}", ""))
    words = {"label": why.label, "site": why.site or "(unknown line)",
             "op_call": op_call(why.op),
                 "other": why.other_site or "(unknown line)", "op": why.op, "detail": why.detail,
                 "path": ", ".join(f"'{name}'" for name in why.path)}
    title = "has a gradient" if why.has_grad else "no gradient"
    lines = [f"{why.label}: {title} [{why.cause}]", "  " + what.format(**words)]
    if why.site is not None:
        lines.append(f"  {'at':<12} {site_line(why.site)}")
    if why.other_site is not None and why.cause != "has_grad":
        label = "value left" if why.cause in ("item", "tolist", "numpy") else "backward at"
        lines.append(f"  {label:<12} {site_line(why.other_site)}")
    if len(why.path) > 1 and why.cause != "unused_output":
        lines.append(f"  {'path':<12} " + " -> ".join(why.path))
    if hint:
        lines.append("  Hint: " + hint.format(**words))
    return "\n".join(lines)


def _format_zero(why) -> str:
    base = why.op.removesuffix("Backward0").removesuffix("Backward1")
    family = next((prefix for prefix in ZERO_CAUSES if base.startswith(prefix)), None)
    share = f" ({why.fraction:.0%} of the elements reaching it)" \
        if why.fraction is not None else ""
    if why.op:
        cause = ZERO_CAUSES.get(family, "it returned zeros from a nonzero gradient")
        what = (f"the gradient of '{why.label}' is all zeros: it became zero at {why.op}"
                f"{share}, {cause}.")
    else:
        what = f"the gradient of '{why.label}' is all zeros from the start of backward."
    lines = [f"{why.label}: zero gradient [zero]", "  " + what]
    if why.site is not None:
        lines.append(f"  {'at':<12} {site_line(why.site)}")
    if why.other_site is not None:
        lines.append(f"  {'backward at':<12} {site_line(why.other_site)}")
    hint = _ZERO_HINTS.get(family)
    if hint:
        lines.append("  Hint: " + hint)
    return "\n".join(lines)


# -- where two runs part (tracing/diff.py) --------------------------------------------------
def format_diff(result) -> str:
    """A TraceDiff in words: the first forward and backward differences, then the graph
    diff when the structures differ.

    >>> from tracegrad.tracing.diff import TraceDiff
    >>> print(format_diff(TraceDiff(names=("a.tgtrace", "b.tgtrace"), rtol=None, atol=None,
    ...                             matched=4)))
    a.tgtrace and b.tgtrace agree: 4 nodes paired, every forward value and gradient within tolerance (torch.testing's default tolerances).
    """
    a_name, b_name = result.names
    tolerance = f" ({tolerance_words(result.rtol, result.atol)})"
    if result.same:
        return (f"{a_name} and {b_name} agree: {result.matched} nodes paired, every forward "
                f"value and gradient within tolerance{tolerance}.")
    lines = []
    for difference in (result.forward, result.backward):
        if difference is not None:
            lines.extend(_format_difference(difference, result.names, tolerance))
    if result.structure:
        lines.append(f"graphs differ: {result.only_a} nodes only in {a_name}, "
                     f"{result.only_b} only in {b_name} ({result.matched} paired)")
        lines.extend("  " + line for line in result.structure.splitlines())
    if result.passes[0] != result.passes[1]:
        lines.append(f"backward passes: {result.passes[0]} in {a_name}, {result.passes[1]} "
                     f"in {b_name}")
    return "\n".join(lines)


def _format_difference(difference, names: tuple[str, str], tolerance: str) -> list[str]:
    a_name, b_name = names
    where = f"{difference.site_a}: " if difference.site_a is not None else ""
    when = "forward" if difference.phase == "forward" else \
        f"backward pass {difference.pass_index}, step {difference.step_index}"
    lines = [(f"{where}the runs part at {difference.name} [{when}]: {difference.what} "
             f"differs{tolerance}")]
    if difference.shape_a is not None:
        lines.append(f"  {'shape':<12} {list(difference.shape_a)} in {a_name}, "
                     f"{list(difference.shape_b)} in {b_name}")
    else:
        element = f"[{', '.join(map(str, difference.index))}]" if difference.index else ""
        what = "statistic" if difference.statistics_only else f"worst {element}".rstrip()
        lines.append(f"  {what:<12} {difference.value_a!r} in {a_name}, "
                     f"{difference.value_b!r} in {b_name} (|diff| "
                     f"{difference.abs_diff:.3g})")
    lines.append(f"  {a_name:<12} {site_line(difference.site_a)}")
    lines.append(f"  {b_name:<12} {site_line(difference.site_b)}")
    if difference.above:
        lines.append(f"  {'ops above':<12} " + "; ".join(difference.above[:4]))
    return lines
