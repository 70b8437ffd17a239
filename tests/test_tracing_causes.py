"""Why a NaN: the cause of the first NaN/Inf, computed from the values the op saw, on both
engines; the where trap; statistics when the arrays were not kept; the words."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from test_examples import EXAMPLES, load_example

import tracegrad as tg
from tracegrad.tracing.causes import Operand, diagnose, exp_limit
from tracegrad.tracing.nonfinite import explain
from tracegrad.tracing.report import findings, format_finding, format_violation

ENGINES = [pytest.param(False, id="tracegrad"),
           pytest.param(True, id="torch", marks=pytest.mark.torch)]


def _line(example: str, starts: str) -> int:
    source = (EXAMPLES / f"{example}.py").read_text().splitlines()
    return next(number for number, text in enumerate(source, 1) if text.startswith(starts))


def _record(example: str, real_torch: bool):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        with tg.record() as trace:
            load_example(example, real_torch)
    return trace


def _finding(trace, line: int, phase: str = "forward"):
    (violation,) = [v for v in trace.violations if v.site is not None and
                    v.site.line == line and v.phase == phase]
    return violation


@pytest.fixture(scope="module", params=ENGINES)
def nan_bug(request):
    return _record("nan_bug", request.param)


# (line starts with, op, kind, cause, input, count, total, indices, values)
NAN_BUG_CAUSES = [
    ("log_spread = spread.log()", "LogBackward0", "inf", "log_of_zero", "'spread'", 1, 2,
     [[1]], ["0"]),
    ("loss = (log_spread", "MulBackward0", "nan", "inf_times_zero", "'log_spread'", 1, 2,
     [[1]], ["-inf"]),
    ("roots = x.sqrt()", "SqrtBackward0", "nan", "sqrt_of_negative", "'x'", 1, 4, [[2]],
     ["-1"]),
    ("ratio = x / x", "DivBackward0", "nan", "zero_by_zero", "'x'", 1, 4, [[1]], ["0"]),
    ("powered = x.pow(1.5)", "PowBackward0", "nan", "pow_negative_fractional", "'x'", 1, 4,
     [[2]], ["-1"]),
    ("inverse = x.reciprocal()", "ReciprocalBackward0", "inf", "division_by_zero", "'x'", 1,
     4, [[1]], ["0"]),
    ("grown = logits.exp()", "ExpBackward0", "inf", "exp_overflow", "'logits'", 1, 2, [[1]],
     ["100"]),
    ("cancelled = grown - grown", "SubBackward0", "nan", "inf_minus_inf", "'grown'", 1, 2,
     [[1]], ["inf"]),
]


@pytest.mark.parametrize("case", NAN_BUG_CAUSES, ids=[case[3] for case in NAN_BUG_CAUSES])
def test_each_cause_in_nan_bug_names_op_line_cause_and_elements(nan_bug, case):
    starts, op, kind, cause, label, count, total, indices, values = case
    violation = _finding(nan_bug, _line("nan_bug", starts))
    assert nan_bug.node(violation.node).name == op
    assert (violation.kind, violation.cause) == (kind, cause)
    detail = violation.detail
    assert (detail["input"], detail["count"], detail["total"]) == (label, count, total)
    assert (detail["indices"], detail["values"], detail["source"]) == (indices, values, "array")


def test_a_nan_made_from_an_inf_points_upstream(nan_bug):
    log_line = _line("nan_bug", "log_spread = spread.log()")
    loss = _finding(nan_bug, log_line + 1)
    assert loss.from_nonfinite
    assert nan_bug.node(loss.detail["upstream"]).site.line == log_line
    exp_line = _line("nan_bug", "grown = logits.exp()")
    cancelled = _finding(nan_bug, _line("nan_bug", "cancelled = grown - grown"))
    assert nan_bug.node(cancelled.detail["upstream"]).site.line == exp_line
    assert _finding(nan_bug, exp_line).detail["limit"] == 88.72


def test_the_backward_nan_is_log_derivative_at_zero(nan_bug):
    violation = _finding(nan_bug, _line("nan_bug", "log_spread = spread.log()"), "backward")
    assert (violation.kind, violation.cause) == ("nan", "log_grad_at_zero")
    assert (violation.detail["indices"], violation.detail["values"]) == ([[1]], ["0"])


def test_inf_counts_only_when_asked(nan_bug):
    nan_only = [(f.first.kind, f.first.cause) for f in findings(nan_bug, inf=False)]
    assert ("inf", "log_of_zero") not in nan_only and ("nan", "inf_times_zero") in nan_only
    with_inf = [(f.first.kind, f.first.cause) for f in findings(nan_bug, inf=True)]
    # With Inf counted, the NaN the Inf made is its consequence, not a finding of its own.
    assert ("inf", "log_of_zero") in with_inf and ("nan", "inf_times_zero") not in with_inf
    assert ("inf", "exp_overflow") in with_inf


@pytest.mark.parametrize("real_torch", ENGINES)
def test_the_where_trap_names_both_lines_and_the_fix(real_torch):
    trace = _record("where_trap", real_torch)
    trap_line = _line("where_trap", "masked_log = torch.where")
    nan = [v for v in trace.violations if v.kind == "nan"]
    (violation,) = nan  # the fixed version below it makes none
    assert (violation.phase, violation.cause) == ("backward", "where_trap")
    assert trace.node(violation.node).name == "LogBackward0"
    assert violation.site.line == trap_line
    mask = trace.node(violation.detail["mask_node"])
    assert mask.name == "WhereBackward0" and violation.other_site == mask.site
    assert violation.detail["inner_cause"] == "log_grad_at_zero"
    assert (violation.detail["indices"], violation.detail["values"]) == ([[2]], ["0"])
    text = format_finding(trace, findings(trace, inf=False)[0])
    assert f"masked by    WhereBackward0 at {mask.site}" in text
    assert "Hint: mask the input, not the output" in text
    assert "the where trap" in text


def test_where_trap_through_an_op_between_branch_and_where():
    x = tg.tensor([1.0, -4.0], requires_grad=True)
    with np.errstate(all="ignore"), tg.record() as trace:
        y = tg.where(x > 0, x.sqrt() * 2, tg.zeros(2))
        y.sum().backward()
    (forward,) = [v for v in trace.violations if v.phase == "forward"]
    assert forward.cause == "sqrt_of_negative"
    assert trace.node(forward.detail["mask_node"]).name == "WhereBackward0"  # noted at stop
    (backward,) = [v for v in trace.violations if v.phase == "backward"]
    assert backward.cause == "where_trap" and backward.detail["inner_cause"] == \
        "sqrt_of_negative"


def test_statistics_when_the_arrays_were_not_kept():
    x = tg.tensor([2.0, 0.0, 3.0], requires_grad=True)
    with np.errstate(all="ignore"), tg.record(budget_bytes=0) as trace:
        y = x.log()
    (violation,) = trace.violations
    assert violation.detail["source"] == "array"  # the live array, when it happened
    explain(trace, violation)  # again, from the trace alone: statistics only
    assert violation.cause == "log_of_zero"
    assert violation.detail["source"] == "stats"
    assert violation.detail["dropped"] == "over the memory budget"
    assert (violation.detail["min"], violation.detail["max"]) == ("0", "3")
    text = format_finding(trace, findings(trace)[0])
    assert "statistics only" in text and "over the memory budget" in text
    del y


def test_cause_survives_save_and_load(tmp_path):
    x = tg.tensor([1.0, -1.0], requires_grad=True)
    with np.errstate(all="ignore"), tg.record() as trace:
        x.sqrt()
    trace.save(tmp_path / "t.tgtrace")
    (loaded,) = tg.tracing.load_trace(tmp_path / "t.tgtrace").violations
    assert (loaded.cause, loaded.detail["values"]) == ("sqrt_of_negative", ["-1"])


def test_structure_only_recording_still_finds_the_cause():
    x = tg.tensor([[0.5, -2.0], [1.0, 4.0]], requires_grad=True)
    with np.errstate(all="ignore"), tg.record(values=False) as trace:
        x.log()
    (violation,) = trace.violations
    assert (violation.cause, violation.detail["indices"]) == ("log_of_negative", [[0, 1]])


@pytest.mark.parametrize(("name", "values", "kind", "cause", "slot"), [
    ("ExpBackward0", [np.array([700.0, 710.0])], "inf", "exp_overflow", 0),
    ("Log1pBackward0", [np.array([-1.0, 0.0])], "inf", "log_of_zero", 0),
    ("AtanhBackward0", [np.array([1.0, 0.5])], "inf", "atanh_of_one", 0),
    ("AcosBackward0", [np.array([1.5, 0.5])], "nan", "outside_unit", 0),
    ("MmBackward0", [np.array([[np.inf, 1.0]]), np.array([[0.0], [1.0]])], "nan",
     "inf_times_zero", 0),
    ("AddBackward0", [np.array([np.inf]), np.array([-np.inf])], "nan", "inf_minus_inf", 0),
])
def test_rules_per_op_family(name, values, kind, cause, slot):
    operands = [Operand(f"t{index}", value) for index, value in enumerate(values)]
    found, detail = diagnose(name, kind, "forward", operands, dtype="float64")
    assert found == cause and detail["input"] == f"t{slot}"


def test_exp_limit_per_dtype():
    assert round(exp_limit("float32"), 2) == 88.72
    assert round(exp_limit("float64"), 2) == 709.78
    # 700 overflows float32 but not float64
    operand = [Operand("x", np.array([700.0]))]
    assert diagnose("ExpBackward0", "inf", "forward", operand, dtype="float64")[0] is None
    assert diagnose("ExpBackward0", "inf", "forward", operand, dtype="float32")[0] == \
        "exp_overflow"


def test_no_rule_falls_back_to_overflow_or_undefined():
    x = tg.full((2,), 1e30, requires_grad=True)
    with np.errstate(all="ignore"), tg.record() as trace:
        (x * x).sum()
    (violation,) = trace.violations
    assert (violation.kind, violation.cause) == ("inf", "overflow")
    assert "the values grew too large for float32" in format_violation(trace, violation)
