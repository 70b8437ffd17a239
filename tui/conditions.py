"""The small language of "run until": when should stepping stop?

Terms (case-insensitive), combined with ``and`` (binds tighter) and ``or``:

    nan | inf | nonfinite       a gradient at this step holds a NaN / an Inf / either
    op NAME  (op=NAME, op:NAME) the node's name contains NAME ("mm", "ReluBackward0")
    norm > X  (>=, <, <=)       some gradient in or out of the step has that L2 norm
    hook                        a hook fired at this step
    violation                   the step has an in-place violation
    error                       the step raised
    step >= N  (>, <, <=, ==)   the step index

Example:
    >>> condition = parse_condition("nan or norm > 1e3")
    >>> condition.text
    'nan or norm > 1e3'
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

from tracegrad.errors import ConditionError
from tracegrad.tracing.model import Step

from .session import MARK_VIOLATION, DebugSession, step_gradients

_COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le,
    "==": operator.eq, "=": operator.eq,
}
_COMPARISON = re.compile(r"^(norm|grad norm|step)\s*(>=|<=|==|=|>|<)\s*(\S+)$")
_OP = re.compile(r"^op\s*[:= ]\s*(\S+)$")

# A term tests (session, pass index, step) -> bool.
Term = Callable[[DebugSession, int, Step], bool]


@dataclass(frozen=True)
class Condition:
    """A parsed condition: ``any`` of ``all`` of terms (or of ands)."""

    text: str
    clauses: tuple[tuple[Term, ...], ...]

    def matches(self, session: DebugSession, pass_index: int, step_index: int) -> bool:
        step = session.step(pass_index, step_index)
        return any(all(term(session, pass_index, step) for term in clause)
                   for clause in self.clauses)


def parse_condition(text: str) -> Condition:
    """Parse a run-until condition; raise ConditionError saying what was not understood."""
    source = text.strip()
    if not source:
        raise ConditionError(
            "run until: the condition is empty.\n"
            "Hint: try `nan`, `op MmBackward0`, `norm > 100`, or `nan or norm > 1e3`.")
    clauses = []
    for alternative in re.split(r"\s+or\s+", source, flags=re.IGNORECASE):
        terms = tuple(_parse_term(part.strip())
                      for part in re.split(r"\s+and\s+", alternative, flags=re.IGNORECASE))
        clauses.append(terms)
    return Condition(source, tuple(clauses))


def _parse_term(term: str) -> Term:
    lowered = term.lower()
    if lowered in ("nan", "inf", "nonfinite"):
        return _nonfinite_term(lowered)
    if lowered == "hook":
        return lambda session, pass_index, step: bool(step.hooks)
    if lowered == "error":
        return lambda session, pass_index, step: step.error is not None
    if lowered == "violation":
        return lambda session, pass_index, step: (
            MARK_VIOLATION in session.row(pass_index, step.index).marks)
    op_match = _OP.match(term)
    if op_match:
        needle = op_match.group(1).lower()
        return lambda session, pass_index, step: (
            needle in session.trace.nodes[step.node].name.lower())
    comparison = _COMPARISON.match(lowered)
    if comparison:
        subject, symbol, number = comparison.groups()
        try:
            threshold = float(number)
        except ValueError:
            raise ConditionError(
                f"run until: {number!r} in {term!r} is not a number.\n"
                f"Expected `{subject} {symbol} NUMBER`, e.g. `{subject} {symbol} 10`.") from None
        compare = _COMPARISONS[symbol]
        if subject == "step":
            return lambda session, pass_index, step: compare(step.index, threshold)
        return lambda session, pass_index, step: any(
            value is not None and value.stats.norm is not None
            and compare(value.stats.norm, threshold) for value in step_gradients(step))
    raise ConditionError(
        f"run until: cannot understand {term!r}.\n"
        "Expected one of: nan, inf, nonfinite, hook, violation, error, op NAME, "
        "norm > X, step >= N (joined with and / or).\n"
        "Hint: `op mm` stops at the first node whose name contains 'mm'.")


def _nonfinite_term(kind: str) -> Term:
    def holds(session: DebugSession, pass_index: int, step: Step) -> bool:
        for value in step_gradients(step):
            if value is None:
                continue
            if kind in ("nan", "nonfinite") and value.stats.nan_count > 0:
                return True
            if kind in ("inf", "nonfinite") and value.stats.inf_count > 0:
                return True
        return False
    return holds
