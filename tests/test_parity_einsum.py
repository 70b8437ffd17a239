"""einsum against torch 2.13: the whole graph (names and each permute's dims, breadth
first), the values, the gradients and the errors, over equations of every kind; and the
layout of reductions' results, which decides whether a later reshape is a view."""

from __future__ import annotations

import numpy as np
import pytest
from test_ops_gradients import graph_nodes

import tracegrad as tg

torch = pytest.importorskip("torch")

EQUATIONS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk->ki", [(2, 3), (3, 4)]),  # torch swaps the pair: the bmm's left is b
    ("bij,bjk->bki", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bjk->bik", [(1, 3, 4), (2, 4, 5)]),  # batch broadcast: no swap
    ("aij,bjk->kbia", [(2, 3, 4), (6, 4, 5)]),
    ("aij,bjk->kaib", [(2, 3, 4), (6, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("iij->j", [(3, 3, 4)]), ("iji->j", [(3, 4, 3)]),
    ("i,j", [(3,), (4,)]), ("i,i->", [(3,), (3,)]), ("ij->", [(2, 3)]), ("ij->ji", [(2, 3)]),
    ("ij", [(2, 3)]), ("ijk->kji", [(2, 3, 4)]), ("Ab,bC->AC", [(2, 3), (3, 4)]),
    ("...ij,...jk", [(2, 2, 3), (2, 3, 4)]), ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]),
    ("...i->...", [(2, 3, 4)]), ("...ij->ij", [(5, 2, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("i,i,i->i", [(3,), (3,), (3,)]), ("ab,cd,ef->", [(2, 3), (2, 2), (3, 1)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]), ("ij,ij->i", [(2, 3), (2, 3)]),
    ("ij,kj->ik", [(1, 3), (4, 3)]), ("ij,jk->ik", [(2, 1), (3, 4)]),
    ("aj,bj->ba", [(2, 3), (1, 3)]), ("ij,j->i", [(2, 3), (3,)]), ("j,ij->i", [(3,), (2, 3)]),
    ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]), ("bdc,ded->c", [(3, 2, 2), (2, 2, 2)]),
    ("ccd,cdb->b", [(3, 3, 1), (3, 2, 3)]), (",", [(), ()]), ("->", [()]),
]


def _signature(outputs) -> list:
    return [(node.name(), tuple(getattr(node, "_saved_dims", ()) or ()))
            for node in graph_nodes(outputs)]


def _run(lib, equation, arrays):
    inputs = [lib.tensor(array, dtype=lib.float64, requires_grad=True) for array in arrays]
    output = lib.einsum(equation, *inputs)
    weight = np.random.default_rng(3).standard_normal(tuple(output.shape))
    (output * lib.tensor(weight)).sum().backward()
    grads = [None if i.grad is None else i.grad.numpy() for i in inputs]
    return _signature([output]), output.detach().numpy(), grads


@pytest.mark.parametrize("equation,shapes", EQUATIONS, ids=[e for e, _ in EQUATIONS])
def test_einsum_builds_torchs_graph_values_and_gradients(equation, shapes):
    rng = np.random.default_rng(len(equation))
    arrays = [rng.standard_normal(shape) for shape in shapes]
    ours, theirs = _run(tg, equation, arrays), _run(torch, equation, arrays)
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12, atol=1e-12)
    assert ours[1].shape == theirs[1].shape
    for mine, reference in zip(ours[2], theirs[2]):
        np.testing.assert_allclose(mine, reference, rtol=1e-12, atol=1e-12)


ERRORS = [
    ("ij,jk->ik", [(2, 3), (4, 5)]), ("ii->i", [(2, 3)]), ("...ij,...jk", [(2, 2, 3), (3, 3, 4)]),
    ("ij->ii", [(2, 2)]), ("ij->k", [(2, 2)]), ("ij,jk", [(2, 3)]), ("ij", [(2, 3), (3, 3)]),
    ("ijk", [(2, 3)]), ("...ijk", [(2, 3)]), ("i.j", [(2, 3)]), ("i1", [(2, 3)]),
    ("ij->i1", [(2, 3)]), ("ij->i.", [(2, 3)]), ("......", [(2,)]), ("ij->...i...", [(2, 3)]),
]


@pytest.mark.parametrize("equation,shapes", ERRORS, ids=[e for e, _ in ERRORS])
def test_einsum_refuses_as_torch_does(equation, shapes):
    with pytest.raises(RuntimeError) as theirs:
        torch.einsum(equation, *[torch.zeros(shape) for shape in shapes])
    with pytest.raises(RuntimeError) as ours:
        tg.einsum(equation, *[tg.zeros(shape) for shape in shapes])
    assert str(ours.value) == str(theirs.value)


REDUCTIONS = {
    "sum": lambda x: x.sum(1), "sum_keepdim": lambda x: x.sum(1, keepdim=True),
    "sum_dims": lambda x: x.sum([0, 2]), "mean": lambda x: x.mean(1),
    "prod": lambda x: x.prod(1), "amax": lambda x: x.amax(1), "amin": lambda x: x.amin(2),
    "nansum": lambda x: x.nansum(1), "aminmax": lambda x: x.aminmax(dim=1)[1],
    "max": lambda x: x.max(1).values,
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_a_reduction_of_a_permuted_tensor_is_laid_out_as_torchs(name):
    # torch allocates a reduction's result contiguous; NumPy would keep the permuted layout
    for lib in (tg, torch):
        x = lib.arange(60.0).reshape(3, 4, 5).permute(2, 0, 1)
        result = REDUCTIONS[name](x)
        if lib is tg:
            ours = (result.stride(), result.is_contiguous(), result.tolist())
        else:
            assert ours == (result.stride(), result.is_contiguous(), result.tolist())
