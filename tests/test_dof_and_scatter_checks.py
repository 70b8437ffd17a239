"""Two of torch's messages, word for word: the degrees-of-freedom warning names the op the
user called (var, std, var_mean, std_mean), and a scatter whose index is larger than its
src (or than self, apart from the scatter dimension) is refused with torch's error instead
of a NumPy broadcasting error."""

from __future__ import annotations

import warnings

import pytest

import tracegrad as tg


def _dof_warnings(lib, name):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        getattr(lib, name)(lib.tensor([1.0]))
    return [(w.category, str(w.message), w.filename) for w in caught]


@pytest.mark.parametrize("name", ["var", "std", "var_mean", "std_mean"])
def test_the_dof_warning_names_the_op_and_the_users_line(name):
    (category, message, filename), = _dof_warnings(tg, name)
    assert category is UserWarning
    assert message.startswith(f"{name}(): degrees of freedom is <= 0. Correction should be "
                              "strictly less than the reduction factor")
    assert filename == __file__


@pytest.mark.torch
@pytest.mark.parametrize("name", ["var", "std", "var_mean", "std_mean"])
def test_the_dof_warning_is_torchs(name):
    torch = pytest.importorskip("torch")
    (_, ours, _), = _dof_warnings(tg, name)
    (_, theirs, _), = _dof_warnings(torch, name)
    assert theirs.startswith(ours.split(" (")[0])


SCATTERS = {
    "scatter, src too small": lambda L, x: x.scatter(0, L.tensor([[0, 1, 2, 0]]), L.ones(2, 3)),
    "scatter, index wider than self": lambda L, x: x.scatter(
        0, L.tensor([[0, 1, 2, 0, 1]]), L.ones(1, 5)),
    "scatter a value, index wider than self": lambda L, x: x.scatter(
        0, L.tensor([[0, 1, 2, 0, 1]]), 2.0),
    "scatter_add, src too small": lambda L, x: x.scatter_add(
        1, L.tensor([[0, 1, 2]]), L.ones(1, 2)),
    "scatter_reduce, src too small": lambda L, x: x.scatter_reduce(
        0, L.tensor([[0, 1, 2, 0]]), L.ones(1, 3), "sum"),
    "gather, index wider than self": lambda L, x: x.gather(0, L.tensor([[0, 1, 2, 0, 1]])),
}


def _message(lib, call):
    with pytest.raises(RuntimeError) as caught:
        call(lib, lib.zeros(3, 4))
    return str(caught.value)


@pytest.mark.parametrize("case", SCATTERS)
def test_a_bad_scatter_index_is_refused_in_torchs_words(case):
    message = _message(tg, SCATTERS[case])
    assert message.startswith(("Expected index [", "Size does not match at dimension 1"))
    assert "to be no larger than self [3, 4] apart from dimension" in message


@pytest.mark.torch
@pytest.mark.parametrize("case", SCATTERS)
def test_a_bad_scatter_index_is_refused_as_torch_refuses_it(case):
    torch = pytest.importorskip("torch")
    ours, theirs = _message(tg, SCATTERS[case]), _message(torch, SCATTERS[case])
    assert ours.startswith(theirs), (ours, theirs)


def test_a_larger_src_is_fine_as_in_torch():
    out = tg.zeros(3, 4).scatter(0, tg.tensor([[0, 1, 2, 0]]), tg.ones(5, 6))
    assert out.sum().item() == 4.0
