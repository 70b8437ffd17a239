"""``fill_(number)`` and ``zero_()`` write one value everywhere, so PyTorch lets them write
into an expanded view (every element sharing memory gets the same value), while every other
in-place op, ``fill_`` with a tensor value among them, refuses it: on tracegrad and torch."""

import pytest


@pytest.mark.parametrize("write", ["fill", "zero"])
def test_one_value_writes_go_through_an_expanded_view(lib, write):
    base = lib.ones(2, 1)
    view = base.expand(2, 3)
    result = view.fill_(4.0) if write == "fill" else view.zero_()
    expected = 4.0 if write == "fill" else 0.0
    assert result is view
    assert base.tolist() == [[expected], [expected]]
    assert view.tolist() == [[expected] * 3] * 2
    assert base._version == view._version == 1


def test_a_strided_expanded_view_writes_only_its_own_elements(lib):
    base = lib.arange(6.0).reshape(2, 3)
    view = base[:, 1:2].expand(2, 4)
    view.fill_(-1.0)
    assert base.tolist() == [[0.0, -1.0, 2.0], [3.0, -1.0, 5.0]]


@pytest.mark.parametrize("write", [
    lambda view, lib: view.add_(1),
    lambda view, lib: view.mul_(2),
    lambda view, lib: view.fill_(lib.tensor(7.0)),
    lambda view, lib: view.copy_(lib.tensor([1.0, 2.0, 3.0])),
], ids=["add_", "mul_", "fill_tensor", "copy_"])
def test_other_writes_into_an_expanded_view_are_refused(lib, write):
    base = lib.ones(1)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor "
                                           "refers to a single memory location"):
        write(base.expand(3), lib)
    assert base.tolist() == [1.0]
