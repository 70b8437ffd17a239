"""A result's memory layout is torch 2.13's: ``stride()``, ``is_contiguous()``, whether a
``view`` works and the node a later ``reshape`` records all follow from it.

Ops torch writes into a fresh contiguous tensor (scans, softmax, layer_norm, cat, roll, pad,
tril, masked_fill, reductions) give a row-major result for a permuted or strided input;
ops that keep the input's format (clone, flip, sort, the ``*_like`` factories, ``.to``)
give its layout; ``where`` follows TensorIterator's rule. Also: ``torch.memory_format`` and
its values, ``contiguous``/``is_contiguous``/``clone``/``to`` with ``memory_format``, and the
channels-last formats refused in words (tracegrad does not implement them)."""
from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import tracegrad as tg

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")


def _values(lib, *shape):
    count = 1
    for size in shape:
        count *= size
    return (lib.arange(float(count), dtype=lib.float64).reshape(*shape) / 7 - 3).sin()


# Inputs of shape (5, 4, 3), laid out in four ways.
LAYOUTS = {
    "contiguous": lambda L: _values(L, 5, 4, 3),
    "permuted": lambda L: _values(L, 3, 4, 5).permute(2, 1, 0),
    "transposed": lambda L: _values(L, 5, 3, 4).transpose(1, 2),
    "strided": lambda L: _values(L, 5, 4, 6)[:, :, ::2],
}

OPS = {
    "cumsum": lambda L, a: a.cumsum(1),
    "cumprod": lambda L, a: a.cumprod(0),
    "cummax": lambda L, a: a.cummax(1)[0],
    "cummin_indices": lambda L, a: a.cummin(2)[1],
    "logcumsumexp": lambda L, a: a.logcumsumexp(1),
    "softmax": lambda L, a: a.softmax(0),
    "log_softmax": lambda L, a: a.log_softmax(2),
    "logsigmoid": lambda L, a: L.nn.functional.logsigmoid(a),
    "layer_norm": lambda L, a: L.nn.functional.layer_norm(a, (3,)),
    "masked_fill": lambda L, a: a.masked_fill(a > 0, 0.5),
    "tril": lambda L, a: a.tril(),
    "triu": lambda L, a: a.triu(1),
    "roll": lambda L, a: a.roll(1, 1),
    "roll_flat": lambda L, a: a.roll(2),
    "pad": lambda L, a: L.nn.functional.pad(a, (1, 1)),
    "cat": lambda L, a: L.cat([a, a], 1),
    "stack": lambda L, a: L.stack([a, a]),
    "std": lambda L, a: a.std(1),
    "var_keepdim": lambda L, a: a.var(0, keepdim=True),
    "std_mean": lambda L, a: L.std_mean(a, 1)[1],
    "logsumexp": lambda L, a: a.logsumexp(1),
    "norm": lambda L, a: a.norm(dim=1),
    "vector_norm": lambda L, a: L.linalg.vector_norm(a, ord=1, dim=(0, 2)),
    "sum": lambda L, a: a.sum(1),
    "topk": lambda L, a: a.topk(2, 1)[0],
    "clone": lambda L, a: a.clone(),
    "clone_contiguous": lambda L, a: a.clone(memory_format=L.contiguous_format),
    "contiguous": lambda L, a: a.contiguous(),
    "flip": lambda L, a: a.flip(1),
    "sort": lambda L, a: a.sort(1)[0],
    "sort_indices": lambda L, a: a.sort(2)[1],
    "exp": lambda L, a: a.exp(),
    "where": lambda L, a: L.where(a > 0, a, _values(L, 5, 4, 3)),
    "where_second": lambda L, a: L.where(_values(L, 5, 4, 3) > 0, _values(L, 5, 4, 3), a),
    "zeros_like": lambda L, a: L.zeros_like(a),
    "full_like": lambda L, a: L.full_like(a, 2.0),
    "empty_like_contiguous": lambda L, a: L.empty_like(a, memory_format=L.contiguous_format),
    "double": lambda L, a: a.double(),
    "to_float32": lambda L, a: a.to(L.float32),
    "to_copy": lambda L, a: a.to(copy=True),
    "to_contiguous": lambda L, a: a.to(L.float32, memory_format=L.contiguous_format),
    # elementwise on two operands of different layouts: the first one's decides (torch's
    # TensorIterator), where NumPy prefers row-major
    "add_other_contiguous": lambda L, a: a + _values(L, 5, 4, 3),
    "add_contiguous_first": lambda L, a: _values(L, 5, 4, 3) + a,
    "sub_broadcast": lambda L, a: a - _values(L, 4, 3),
    "mul_broadcast_first": lambda L, a: _values(L, 4, 1) * a,
    "div_scaled": lambda L, a: a / (_values(L, 5, 4, 3) + 5),
    "pow_tensor": lambda L, a: a.abs().pow(_values(L, 5, 4, 3)),
    "atan2": lambda L, a: L.atan2(a, _values(L, 5, 4, 3)),
    "maximum": lambda L, a: L.maximum(a, _values(L, 5, 4, 3)),
    "lerp_tensor": lambda L, a: L.lerp(a, _values(L, 5, 4, 3), _values(L, 5, 4, 3).abs()),
    "addcmul": lambda L, a: L.addcmul(a, a, _values(L, 5, 4, 3)),
    "compare": lambda L, a: (a > _values(L, 5, 4, 3)).float() * 1,
    "mse_none": lambda L, a: L.nn.functional.mse_loss(a, _values(L, 5, 4, 3), reduction="none"),
    "l1_none": lambda L, a: L.nn.functional.l1_loss(a, _values(L, 5, 4, 3), reduction="none"),
    "bce_none": lambda L, a: L.nn.functional.binary_cross_entropy(
        a.sigmoid(), _values(L, 5, 4, 3).sigmoid(), reduction="none"),
    "smooth_l1_none": lambda L, a: L.nn.functional.smooth_l1_loss(
        a, _values(L, 5, 4, 3), reduction="none"),
    "cross": lambda L, a: L.linalg.cross(a, _values(L, 5, 4, 3)),
    "reshape_after_cumsum": lambda L, a: a.cumsum(1).reshape(60),
    "reshape_after_clone": lambda L, a: a.clone().reshape(5, 12),
}


def _describe(lib, make_input, op):
    leaf = make_input(lib).requires_grad_()
    result = op(lib, leaf)
    node = result.grad_fn
    return (tuple(result.shape), result.stride(), result.is_contiguous(),
            node.name() if node is not None else None)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", OPS)
def test_result_layout_as_torch(op, layout):
    expected = _describe(torch, LAYOUTS[layout], OPS[op])
    assert _describe(tg, LAYOUTS[layout], OPS[op]) == expected


@pytest.mark.parametrize("layout", ["permuted", "strided"])
def test_values_and_gradients_unchanged_by_layout(layout):
    """The copies into torch's layout change strides, never a value or a gradient."""
    got = {}
    for lib in (torch, tg):
        leaf = LAYOUTS[layout](lib).requires_grad_()
        out = (leaf.cumsum(1).softmax(0) * leaf.flip(2)).sort(1)[0].clone()
        out.pow(2).sum().backward()
        got[lib] = (out.detach().numpy(), leaf.grad.numpy())
    np.testing.assert_allclose(got[tg][0], got[torch][0], rtol=1e-12)
    np.testing.assert_allclose(got[tg][1], got[torch][1], rtol=1e-12)


def test_view_of_a_row_major_result_works_as_in_torch():
    for lib in (torch, tg):
        permuted = _values(lib, 3, 4, 5).permute(2, 1, 0)
        assert permuted.cumsum(1).view(60).shape == (60,)
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            permuted.clone().view(60)


def test_memory_format_values():
    assert repr(tg.contiguous_format) == "torch.contiguous_format"
    assert repr(tg.channels_last_3d) == "torch.channels_last_3d"
    for name in ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d"):
        assert isinstance(getattr(tg, name), tg.memory_format)
        assert pickle.loads(pickle.dumps(getattr(tg, name))) is getattr(tg, name)
    with pytest.raises(TypeError, match="cannot create 'torch.memory_format' instances"):
        tg.memory_format()


@pytest.mark.parametrize("call, expected", [
    (lambda L, x: x.contiguous(memory_format=L.preserve_format),
     (RuntimeError, "preserve memory format is unsupported by the contiguous operator")),
    (lambda L, x: x.clone(memory_format=3),
     (TypeError, "clone(): argument 'memory_format' must be torch.memory_format, not int")),
    (lambda L, x: L.zeros_like(x, memory_format=3),
     (TypeError, "zeros_like(): argument 'memory_format' must be torch.memory_format, not int")),
    (lambda L, x: x.is_contiguous(memory_format=3),
     (TypeError, "is_contiguous(): argument 'memory_format' must be torch.memory_format, not int")),
    (lambda L, x: L.zeros(2, memory_format=L.contiguous_format),
     (TypeError, "zeros() got an unexpected keyword argument 'memory_format'")),
    (lambda L, x: L.empty(2, memory_format=L.preserve_format),
     (RuntimeError, "unsupported memory format Preserve")),
    (lambda L, x: x.to(L.float64, True, True, True),
     (TypeError, "to() received an invalid combination of arguments - got (")),
])
def test_memory_format_errors_as_torch(call, expected):
    kind, words = expected
    for lib in (torch, tg):
        x = _values(lib, 3, 4, 5).permute(2, 1, 0)
        with pytest.raises(kind) as raised:
            call(lib, x)
        assert words in str(raised.value)


@pytest.mark.parametrize("call", [
    lambda L, x: x.contiguous(memory_format=L.channels_last),
    lambda L, x: x.clone(memory_format=L.channels_last),
    lambda L, x: x.to(memory_format=L.channels_last_3d),
    lambda L, x: L.zeros_like(x, memory_format=L.channels_last),
    lambda L, x: L.empty(2, 3, 4, 5, memory_format=L.channels_last),
])
def test_channels_last_is_refused_in_words(call):
    x = _values(tg, 2, 3, 4, 5)
    with pytest.raises(NotImplementedError, match="does not implement the channels-last"):
        call(tg, x)


@pytest.mark.parametrize("make", [
    lambda L: _values(L, 2, 3, 4, 5),
    lambda L: _values(L, 2, 4, 5, 3).permute(0, 3, 1, 2),
    lambda L: _values(L, 2, 4, 5, 1).permute(0, 3, 1, 2),
    lambda L: _values(L, 2, 4, 5, 3).permute(0, 3, 1, 2)[:, :, :, ::2],
    lambda L: _values(L, 2, 3, 4, 5, 6).permute(0, 4, 1, 2, 3),
    lambda L: _values(L, 3, 4, 5).permute(2, 1, 0),
])
def test_is_contiguous_and_to_by_memory_format_as_torch(make):
    def answers(lib):
        x = make(lib)
        return (x.is_contiguous(), x.is_contiguous(memory_format=lib.channels_last),
                x.is_contiguous(memory_format=lib.channels_last_3d),
                x.is_contiguous(memory_format=lib.contiguous_format),
                x.to(memory_format=lib.contiguous_format).stride(),
                x.to(memory_format=lib.contiguous_format) is x)
    assert answers(tg) == answers(torch)


def test_to_copy_records_a_copy_and_keeps_the_rest_as_torch():
    for lib in (torch, tg):
        leaf = _values(lib, 3, 4).requires_grad_()
        assert leaf.to(lib.float64) is leaf
        assert leaf.to("cpu", lib.float64, False, False) is leaf
        copied = leaf.to(copy=True)
        assert copied is not leaf and copied.grad_fn.name() == "ToCopyBackward0"
        assert leaf.to(lib.float64, False, True).grad_fn.name() == "ToCopyBackward0"


@pytest.mark.parametrize("make", [
    lambda L: _values(L, 3, 4).t(),
    lambda L: _values(L, 3, 4, 5).permute(2, 0, 1),
    lambda L: _values(L, 3, 8)[:, ::2],
    lambda L: _values(L, 3, 4).t().numpy(),
    lambda L: _values(L, 3, 8)[:, ::2].numpy(),
])
def test_tensor_from_data_keeps_its_layout_as_torch(make):
    """``torch.tensor(t)`` copies as ``t.to(copy=True)`` does: in the source's layout
    (made dense); ``as_tensor`` shares the source's memory."""
    def strides(lib):
        with warnings.catch_warnings():  # (torch.tensor(tensor)'s advice to clone)
            warnings.simplefilter("ignore", UserWarning)
            made = lib.tensor(make(lib))
        return made.stride(), lib.as_tensor(make(lib)).stride()
    assert strides(tg) == strides(torch)


def _random_layout(shape, rng):
    """An array of ``shape`` laid out at random: dims permuted, maybe every other element
    of the innermost, maybe one dim broadcast, maybe leading dims indexed away."""
    ndim = len(shape)
    order = list(range(ndim))
    rng.shuffle(order)
    step = rng.choice([1, 1, 2])
    stored = [shape[dim] for dim in order]
    stored[-1] *= step
    array = np.arange(float(np.prod(stored))).reshape(stored)[..., ::step]
    array = array.transpose(np.argsort(order))
    if rng.random() < 0.3:
        dim = rng.randrange(ndim)
        array = np.broadcast_to(array[tuple(slice(0, 1) if d == dim else slice(None)
                                            for d in range(ndim))], shape)
    if rng.random() < 0.2:
        array = array[(0,) * rng.randrange(1, ndim)]
    return array


def _torch_alike(array):
    """A torch tensor with ``array``'s shape and strides (its values do not matter)."""
    extent = sum((size - 1) * step // array.itemsize
                 for size, step in zip(array.shape, array.strides))
    return torch.zeros(extent + 1, dtype=torch.float64).as_strided(
        array.shape, [step // array.itemsize for step in array.strides])


def test_iterator_layout_follows_tensor_iterator_on_random_layouts():
    """``_layout.iterator_layout`` against torch's own ``a + b`` and ``where`` on 600
    random layouts of 2-4 dims (permuted, strided, broadcast): the same strides on every
    dimension of size > 1. (Where operands give a size-1 dimension clashing strides, torch
    may give that dimension another stride; no view, reshape or ``is_contiguous`` answer
    depends on it.)"""
    import random

    from tracegrad._layout import iterator_layout

    rng = random.Random(7)
    for _ in range(600):
        shape = tuple(rng.choice([1, 2, 3, 4]) for _ in range(rng.choice([2, 3, 4])))
        arrays = [_random_layout(shape, rng) for _ in range(rng.choice([2, 3]))]
        tensors = [_torch_alike(array) for array in arrays]
        if len(arrays) == 2:
            expected = tensors[0] + tensors[1]
            ours = iterator_layout(arrays[0] + arrays[1], *arrays)
        else:
            condition = iterator_layout(arrays[0] > 0, arrays[0], 0)
            assert condition.strides == (tensors[0] > 0).stride()
            expected = torch.where(tensors[0] > 0, tensors[1], tensors[2])
            ours = iterator_layout(np.where(condition, arrays[1], arrays[2]), condition,
                                   arrays[1], arrays[2])
        wide = [dim for dim, size in enumerate(expected.shape) if size > 1]
        assert [ours.strides[dim] // 8 for dim in wide] == \
            [expected.stride()[dim] for dim in wide], (shape, [a.strides for a in arrays])


def _matrix(lib, *batch):
    count = 9 * int(np.prod(batch or (1,)))
    return (lib.arange(float(count), dtype=lib.float64).reshape(*batch, 3, 3).sin()
            + 2 * lib.eye(3, dtype=lib.float64)).requires_grad_()


LAPACK = {
    "inv": lambda L: L.linalg.inv(_matrix(L)),
    "inv_batched": lambda L: L.linalg.inv(_matrix(L, 2)),
    "inverse": lambda L: _matrix(L).inverse(),
    "solve": lambda L: L.linalg.solve(_matrix(L), L.ones(3, 2, dtype=L.float64)),
    "solve_batched": lambda L: L.linalg.solve(_matrix(L, 2), L.ones(2, 3, 4, dtype=L.float64)),
    "solve_vector": lambda L: L.linalg.solve(_matrix(L), L.ones(3, dtype=L.float64)),
    "cholesky": lambda L: L.linalg.cholesky(_matrix(L) @ _matrix(L).mT),
    "cholesky_upper": lambda L: L.linalg.cholesky(_matrix(L) @ _matrix(L).mT, upper=True),
    "cholesky_inverse": lambda L: L.cholesky_inverse(L.linalg.cholesky(
        _matrix(L) @ _matrix(L).mT)),
    "qr_q": lambda L: L.linalg.qr(_matrix(L)[:, :2])[0],
    "qr_r": lambda L: L.linalg.qr(_matrix(L)[:, :2])[1],
    "qr_complete": lambda L: L.linalg.qr(_matrix(L)[:, :2], mode="complete")[0],
    "qr_r_mode": lambda L: L.linalg.qr(_matrix(L), mode="r")[1],
    "svd_u": lambda L: L.linalg.svd(_matrix(L))[0],
    "svd_vh_wide": lambda L: L.linalg.svd(_matrix(L)[:2], full_matrices=False)[2],
    "svd_vh_batched": lambda L: L.linalg.svd(_matrix(L, 2))[2],
    "eigh": lambda L: L.linalg.eigh(_matrix(L) + _matrix(L).mT)[1],
    "eigh_batched": lambda L: L.linalg.eigh((_matrix(L) + _matrix(L).mT).expand(2, 3, 3))[1],
    "lstsq": lambda L: L.linalg.lstsq(_matrix(L, 2), L.ones(2, 3, 2, dtype=L.float64)).solution,
    "pinv": lambda L: L.linalg.pinv(_matrix(L)),
    "det": lambda L: L.linalg.det(_matrix(L, 2)),
}


@pytest.mark.parametrize("name", LAPACK)
def test_factors_and_solutions_column_major_as_torch(name):
    """torch's LAPACK-backed ops return each matrix column-major (strides (..., 1, rows)):
    ``view(-1)`` of an inverse fails in torch, and here."""
    results = {}
    for lib in (torch, tg):
        out = LAPACK[name](lib)
        results[lib] = (tuple(out.shape), out.stride(), out.is_contiguous(),
                        out.grad_fn.name())
    assert results[tg] == results[torch]


@pytest.mark.parametrize("k", range(-5, 6))
@pytest.mark.parametrize("dims", [(0, 1), (1, 0), (0, 2), (2, 1)])
def test_rot90_values_and_layout_as_torch(k, dims):
    """torch turns by a flip and, for an odd turn, a transpose of the flipped copy."""
    results = {}
    for lib in (torch, tg):
        out = lib.rot90(_values(lib, 2, 3, 4), k, dims)
        results[lib] = (out.numpy().tolist(), out.stride())
    assert results[tg] == results[torch]


INDEXING = {
    "columns": lambda L, a: a[:, [0, 2]],
    "columns_ellipsis": lambda L, a: a[..., [1, 0]],
    "rows": lambda L, a: a[[0, 2]],
    "pairs": lambda L, a: a[[0, 1], [1, 2]],
    "apart": lambda L, a: a[[0, 1], :, [1, 0]],
    "one_column": lambda L, a: a[:, [1]],
    "tensor_of_indices": lambda L, a: a[:, L.tensor([[0, 1], [2, 0]])],
    "mask_rows": lambda L, a: a[L.tensor([True, False, True, False, True])],
    "mask_inner": lambda L, a: a[:, L.tensor([True, False, True, True])],
    "after_slice": lambda L, a: a[1:, [0, 2]],
    "after_int": lambda L, a: a[1, :, [0, 2]],
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", INDEXING)
def test_advanced_indexing_layout_as_torch(name, layout):
    """torch's index kernel keeps the source's layout around the index's dims, where NumPy
    puts the index's dims first (``x[:, [0, 2]]`` of a row-major x came out
    column-major)."""
    results = {}
    for lib in (torch, tg):
        out = INDEXING[name](lib, LAYOUTS[layout](lib).requires_grad_())
        results[lib] = (tuple(out.shape), out.stride(), out.detach().numpy().tolist())
    assert results[tg] == results[torch]


GRADIENTS = {
    "row_major_leaf_through_transpose": lambda L: _grad_of(
        L, L.ones(3, 4), lambda w: (w.t() * L.arange(12.0).reshape(4, 3)).sum()),
    "permuted_leaf": lambda L: _grad_of(L, L.ones(4, 3).t(), lambda w: (w * 2).sum()),
    "permuted_leaf_through_transpose": lambda L: _grad_of(
        L, L.ones(4, 3).t(), lambda w: (w.t() * 2).sum()),
    "expanded_use": lambda L: _grad_of(L, L.ones(3, 4), lambda w: w.expand(2, 3, 4).sum()),
    "matmul_right": lambda L: _grad_of(L, L.ones(3, 4), lambda w: (L.ones(4, 5).t() @ w.t())
                                       .sum()),
    "strided_use": lambda L: _grad_of(L, L.ones(6, 4), lambda w: w[:, ::2].sum()),
    "permuted_3d_leaf": lambda L: _grad_of(L, L.ones(2, 3, 4).permute(2, 0, 1),
                                           lambda w: (w.exp() * 2).sum()),
    "autograd_grad": lambda L: _grad_of(L, L.ones(3, 4), lambda w: (w.t() * 2).sum(),
                                        through_grad=True),
}


def _grad_of(lib, leaf, loss, through_grad=False):
    leaf = leaf.requires_grad_()
    if through_grad:
        return lib.autograd.grad(loss(leaf), leaf)[0]
    loss(leaf).backward()
    return leaf.grad


@pytest.mark.parametrize("name", GRADIENTS)
def test_leaf_gradient_layout_as_torch(name):
    """A leaf's first ``.grad`` obeys torch's gradient layout contract: strided as the leaf
    when the leaf is dense (a permuted parameter gets a permuted gradient), row-major
    otherwise; a gradient that already obeys is kept in its own layout."""
    assert GRADIENTS[name](tg).stride() == GRADIENTS[name](torch).stride()
