"""PyTorch gives inf and nan without a word; NumPy prints a RuntimeWarning (or, with warnings
as errors, stops the program). tracegrad silences NumPy's floating-point warnings in the
forwards that can raise them and around each backward pass (autograd/quiet.py), and gives
user code inside a pass -- hooks, custom Functions -- the user's own NumPy setting back."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracegrad as tg

INF, NAN = float("inf"), float("nan")

# name -> (leaf values, the program); each value is a case where a NumPy computation
# divides by zero, overflows or makes a nan, forward or backward.
PROGRAMS = {
    "div by zero": ([1.0, 0.0, -1.0], lambda L, x: x / L.tensor([0.0, 0.0, 0.0])),
    "div, zero divisor": ([0.0, 2.0], lambda L, x: L.tensor([1.0, 0.0]) / x),
    "number / tensor": ([0.0, 2.0], lambda L, x: 1.0 / x),
    "inf / inf": ([INF, 1.0], lambda L, x: x / x),
    "exp overflow": ([100.0, 1000.0], lambda L, x: x.exp()),
    "exp2 and expm1": ([1000.0, 1.0], lambda L, x: x.exp2() + x.expm1()),
    "log of 0 and -1": ([0.0, -1.0, 1.0], lambda L, x: x.log()),
    "log2, log10, log1p": ([0.0, -1.0], lambda L, x: x.log2() + x.log10() + (x - 1).log1p()),
    "sqrt at 0": ([0.0, -1.0, 4.0], lambda L, x: x.sqrt()),
    "rsqrt, reciprocal": ([0.0, 4.0], lambda L, x: x.rsqrt() + x.reciprocal()),
    "pow": ([0.0, -1.0], lambda L, x: x ** 0.5 + x ** -1),
    "sinh, cosh": ([100.0, 1.0], lambda L, x: x.sinh() + x.cosh()),
    "atanh at 1": ([1.0, 2.0], lambda L, x: x.atanh()),
    "atan2 at the origin": ([0.0], lambda L, x: L.atan2(x, x * 2)),
    "hypot at the origin": ([0.0], lambda L, x: L.hypot(x, x)),
    "xlogy at 0": ([0.0, 1.0], lambda L, x: L.xlogy(x, x * 0)),
    "sum overflow": ([3e38, 3e38], lambda L, x: x.sum() + x.mean()),
    "softmax of inf": ([INF, 1.0], lambda L, x: x.softmax(0)),
    "log_softmax of -inf": ([-INF, -INF], lambda L, x: x.log_softmax(0)),
    "layer_norm, eps 0": ([1.0, 1.0], lambda L, x: L.nn.functional.layer_norm(
        x.reshape(1, 2), (2,), eps=0.0)),
    "normalize a zero row": ([0.0, 0.0], lambda L, x: L.nn.functional.normalize(
        x.reshape(1, 2))),
}


def _run(library, values, program, create_graph=False):
    """Forward, then backward of a fixed weighting (so each output gets a gradient):
    the output and the gradient as NumPy arrays."""
    x = library.tensor(values, requires_grad=True)
    y = program(library, x)
    weight = library.tensor(np.linspace(0.5, 1.5, y.numel()).reshape(tuple(y.shape)),
                            dtype=y.dtype)
    (grad,) = library.autograd.grad((y * weight).sum(), x, create_graph=create_graph)
    return y.detach().numpy(), grad.detach().numpy()


@pytest.mark.parametrize("name", PROGRAMS)
@pytest.mark.parametrize("create_graph", [False, True], ids=["arrays", "tensors"])
def test_no_warning_escapes(name, create_graph):
    values, program = PROGRAMS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _run(tg, values, program, create_graph)


@pytest.mark.torch
@pytest.mark.parametrize("name", PROGRAMS)
def test_the_infs_and_nans_are_torchs(name):
    torch = pytest.importorskip("torch")
    values, program = PROGRAMS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = _run(tg, values, program)
    theirs = _run(torch, values, program)
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(mine, reference, rtol=1e-6, equal_nan=True)


def test_the_callers_numpy_setting_is_back_after_a_pass():
    x = tg.tensor([0.0], requires_grad=True)
    with np.errstate(divide="raise", over="warn", invalid="ignore", under="print"):
        before = np.geterr()
        x.log().sum().backward()
        assert np.geterr() == before
        y = x.log()
        y.register_hook(_fails)
        with pytest.raises(ValueError, match="a failing hook"):
            y.sum().backward()
        assert np.geterr() == before


def _fails(grad):
    raise ValueError("a failing hook")


class _DividesInBackward(tg.autograd.Function):
    """User code: its backward divides NumPy arrays by zero."""

    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, grad):
        np.float64(1.0) / np.zeros(1)
        return grad


def test_a_custom_functions_backward_runs_under_the_callers_setting():
    x = tg.tensor([1.0], requires_grad=True)
    for create_graph in (False, True):
        with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
            tg.autograd.grad(_DividesInBackward.apply(x).sum(), x, create_graph=create_graph)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="divide by zero"):
            _DividesInBackward.apply(x).sum().backward()


@pytest.mark.parametrize("where", ["tensor", "pre", "post", "post_accumulate"])
def test_hooks_run_under_the_callers_setting(where):
    x = tg.tensor([0.0], requires_grad=True)
    y = x.log()

    def hook(*args):
        np.float64(1.0) / np.zeros(1)

    if where == "tensor":
        y.register_hook(hook)
    elif where == "pre":
        y.grad_fn.register_prehook(hook)
    elif where == "post":
        y.grad_fn.register_hook(hook)
    else:
        x.register_post_accumulate_grad_hook(hook)
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        y.sum().backward()


def test_built_in_formulas_stay_quiet_under_a_raising_setting():
    # the caller's "raise" is for its own code: torch's ops never raise on inf or nan
    x = tg.tensor([0.0, 1.0], requires_grad=True)
    with np.errstate(all="raise"):
        (x.log() / x).sum().backward()
    assert np.isnan(x.grad[0].item()) or np.isinf(x.grad[0].item())


# -- every op, on infs, nans, zeros and huge values ---------------------------------------
# Each op's cases from tests/test_ops_gradients.py, their inputs filled with values that make
# NumPy warn (0, +-inf, nan, +-1e308, a subnormal), forward and backward, with warnings as
# errors: torch is silent on all of them, so no NumPy RuntimeWarning may escape. (An op may
# refuse such input -- a singular matrix, a loss target out of range -- with an error, as
# torch does; only a warning fails the test.)
from test_ops_gradients import CASES  # noqa: E402

_SPECIAL = np.array([0.0, INF, -INF, NAN, 1e308, -1e308, 1.0, -1.0, 5e-324, -0.0, 2.0, 0.5])


def _special_inputs(case, rotation: int) -> list:
    inputs = []
    for position, shape in enumerate(case.shapes):
        values = np.resize(np.roll(_SPECIAL, rotation + 5 * position), int(np.prod(shape)))
        inputs.append(tg.tensor(values.reshape(shape), dtype=tg.float64, requires_grad=True))
    return inputs


# How an op refuses input (a singular matrix, nan where an index is needed); a RuntimeWarning
# is none of these, so it passes through.
_REFUSALS = (RuntimeError, ValueError, TypeError, IndexError)


def _forward_and_backward(case, rotation: int, create_graph: bool) -> None:
    inputs = _special_inputs(case, rotation)
    try:
        outputs = case.call(tg, *inputs)
    except _REFUSALS:  # refused, as torch may refuse it: nothing to differentiate
        return
    outputs = [output for output in (outputs if isinstance(outputs, (tuple, list))
                                     else (outputs,))
               if isinstance(output, tg.Tensor) and output.requires_grad]
    if not outputs:
        return
    loss = sum((output * 0.5).sum() for output in outputs)
    try:
        tg.autograd.grad(loss, inputs, create_graph=create_graph, allow_unused=True)
    except _REFUSALS:
        pass


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_warning_escapes_any_op_on_special_values(name):
    for case in CASES[name]:
        if case.no_derivative:
            continue
        for rotation in (0, 3, 6, 9):
            for create_graph in (False, True):
                with warnings.catch_warnings():
                    # (torch's own UserWarnings, conv's padding='same' one, are not at issue)
                    warnings.simplefilter("error", RuntimeWarning)
                    _forward_and_backward(case, rotation, create_graph)


def test_no_warning_is_shown_with_pythons_default_filters():
    # a fresh interpreter: Python's own filters (RuntimeWarning shown once per place)
    import subprocess
    import sys

    program = (
        "import tracegrad as tg\n"
        "x = tg.tensor([0.0, 1e308, float('inf'), float('nan')], requires_grad=True)\n"
        "y = (x * x + x - x) / x\n"
        "(y.exp() + x.log() + (x @ x) + x.var() + x.cumsum(0)).sum().backward()\n"
        "print('ok')\n")
    done = subprocess.run([sys.executable, "-W", "default", "-c", program],
                          capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "ok", done.stderr
    assert "Warning" not in done.stderr, done.stderr


def test_the_filter_is_narrow():
    # the user's own NumPy code still warns: only warnings from tracegrad's modules are quiet
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.float64(1.0) / np.zeros(1)
    assert [str(w.message) for w in caught] == ["divide by zero encountered in divide"]
    import re

    from tracegrad.autograd import quiet

    with warnings.catch_warnings():  # (pytest's own block around collection dropped it;
        warnings.resetwarnings()      # the plugin's session filter is the same rule)
        quiet.install_filter()
        installed = [entry for entry in warnings.filters
                     if entry[0] == "ignore" and entry[2] is RuntimeWarning
                     and entry[3] is not None and entry[3].pattern == r"tracegrad\."]
    assert len(installed) == 1
    assert installed[0][1].pattern == quiet.FLOAT_WARNINGS
    assert re.match(quiet.FLOAT_WARNINGS, "overflow encountered in multiply")
    assert not re.match(quiet.FLOAT_WARNINGS, "Mean of empty slice")
