"""Where two runs part (tracing/diff.py): a planted 1e-3 change in one custom backward is
reported at that node and not later; a changed input, an extra op; identical runs agree;
`tracegrad diff`; and the tutorial programs traced on tracegrad's engine and on real torch
from the same inputs agree within tolerance."""

from __future__ import annotations

import numpy as np
import pytest
from tutorial_programs import my_relu_on

import tracegrad as tg
from tracegrad.cli import main
from tracegrad.testing import diff_traces

DATA = np.random.default_rng(0)
X, W1, W2, Y = (DATA.standard_normal(shape).astype(np.float32)
                for shape in ((6, 4), (4, 5), (5, 3), (6, 3)))


def _net(lib=tg, scale: float = 1.0, extra: bool = False, x=X):
    relu = my_relu_on(lib, scale).apply
    w1 = lib.tensor(W1, requires_grad=True)
    w2 = lib.tensor(W2, requires_grad=True)
    with tg.record() as trace:
        h = relu(lib.tensor(x).mm(w1))
        if extra:
            h = h * 1.0
        loss = (h.mm(w2) - lib.tensor(Y)).pow(2).sum()
        loss.backward()
    return trace


def test_identical_runs_agree():
    result = diff_traces(_net(), _net())
    assert result.same and result.first is None and result.structure == ""
    assert "agree: 8 nodes paired" in str(result)


def test_a_planted_change_in_one_custom_backward_is_reported_at_that_node():
    result = diff_traces(_net(), _net(scale=1.001))
    assert result.forward is None and result.structure == ""
    difference = result.backward
    assert difference.name == "MyReLUBackward"  # not MmBackward0 or w1's AccumulateGrad
    assert difference.what.startswith("gradient to input 0 (MmBackward0")
    ratio = difference.value_b / difference.value_a
    assert ratio == pytest.approx(1.001, rel=1e-5)
    assert difference.site_a.code == difference.site_b.code == \
        "h = relu(lib.tensor(x).mm(w1))"
    assert difference.above and difference.above[0].startswith("MmBackward0 at ")
    text = str(result)
    assert "the runs part at MyReLUBackward [backward pass 0, step 5]" in text, text
    assert "ops above" in text


def test_a_changed_input_is_reported_at_the_first_node_that_reads_it():
    x = X.copy()
    x[2, 1] += 1e-3
    difference = diff_traces(_net(), _net(x=x)).forward
    assert (difference.phase, difference.name) == ("forward", "MmBackward0")
    assert difference.what.startswith("input 0 (")  # the data, a leaf: named at its reader
    assert difference.index == (2, 1)
    assert difference.value_b - difference.value_a == pytest.approx(1e-3, abs=1e-6)


def test_an_extra_node_is_a_graph_diff():
    result = diff_traces(_net(), _net(extra=True), names=("a", "b"))
    assert (result.only_a, result.only_b) == (0, 1)
    assert "+" in result.structure and "MulBackward0" in result.structure
    assert result.forward is None and result.backward is None
    assert "graphs differ: 0 nodes only in a, 1 only in b" in str(result)


def test_tolerances_decide():
    a, b = _net(), _net(scale=1.001)
    assert not diff_traces(a, b).same
    assert diff_traces(a, b, rtol=2e-3).same


def test_diff_cli_exit_statuses(tmp_path, capsys):
    paths = []
    for index, scale in enumerate((1.0, 1.0, 1.001)):
        path = tmp_path / f"{index}.tgtrace"
        _net(scale=scale).save(path)
        paths.append(str(path))
    assert main(["diff", paths[0], paths[1]]) == 0
    assert "agree" in capsys.readouterr().out
    assert main(["diff", paths[0], paths[2]]) == 1
    out = capsys.readouterr().out
    assert "the runs part at MyReLUBackward" in out and paths[2] in out
    assert main(["diff", "--rtol", "0.01", paths[0], paths[2]]) == 0
    capsys.readouterr()
    assert main(["diff", paths[0], str(tmp_path / "missing.tgtrace")]) == 2
    assert capsys.readouterr().err.startswith("tracegrad diff: ")


# -- tracegrad's engine against real torch ---------------------------------------------------
def _tutorial(lib, name: str):
    """Run a tutorial program's core on ``lib`` from the same NumPy inputs."""
    from test_examples import load_example

    rng = np.random.default_rng(1)

    def tensor(*shape, grad=False):
        return lib.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=grad)

    module = load_example(name, real_torch=lib is not tg)
    with tg.record() as trace:
        if name.startswith("two_layer_net"):
            module.train(steps=2, data=(tensor(4, 6), tensor(4, 2), tensor(6, 3, grad=True),
                                        tensor(3, 2, grad=True)))
        elif name == "linear_function":
            module.linear(tensor(4, 5, grad=True), tensor(3, 5, grad=True),
                          tensor(3, grad=True)).sum().backward()
        elif name == "exp_function":
            module.Exp.apply(tensor(5, grad=True)).sum().backward()
        elif name == "global_max_pool":
            module.GlobalMaxPool.apply(tensor(2, 3, 4, 5, grad=True))[0].sum().backward()
        elif name == "swish":
            for swish in (module.Swish(), module.MemoryEfficientSwish()):
                swish(tensor(4, 8, grad=True)).sum().backward()
    return trace


@pytest.mark.torch
@pytest.mark.parametrize("name", ["two_layer_net", "two_layer_net_clamp", "linear_function",
                                  "exp_function", "global_max_pool", "swish"])
def test_tracegrad_and_torch_agree_on_the_tutorial_programs(name):
    torch = pytest.importorskip("torch")
    ours, theirs = _tutorial(tg, name), _tutorial(torch, name)
    assert theirs.metadata["engine"] == "torch"
    result = diff_traces(ours, theirs, rtol=1e-4, atol=1e-5)
    assert result.forward is None and result.backward is None, str(result)
    assert result.matched == len(ours.nodes) == len(theirs.nodes), str(result)


@pytest.mark.torch
def test_a_planted_change_is_found_between_the_engines():
    torch = pytest.importorskip("torch")
    result = diff_traces(_net(tg), _net(torch, scale=1.001), rtol=1e-4, atol=1e-5)
    assert result.forward is None
    assert result.backward.name == "MyReLUBackward", str(result)
