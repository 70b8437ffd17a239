"""nn layers added for the curriculum's programs (local_response_norm, ...) against torch:
values, gradients (and gradcheck in float64), modules' reprs and torch's errors. The
graphs of the composites are compared node by node in ``test_parity_composites.py``; the
ops they add have cases in ``op_cases_nn.py``."""

from __future__ import annotations

import numpy as np
import pytest
from test_parity_composites import _graph

import tracegrad as tg

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _array(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _values_and_gradients(call, *arrays):
    """``call(lib, *inputs)`` in tracegrad and torch on float64 leaves made of ``arrays``:
    the output, and each input's gradient of a weighted sum of it, per library."""
    results = []
    for lib in (tg, torch):
        inputs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = call(lib, *inputs)
        weights = np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape))
        (out * lib.tensor(weights)).sum().backward()
        results.append((out.detach().numpy(), [x.grad.numpy() for x in inputs]))
    return results


def _assert_as_torch(call, *arrays):
    (ours, our_grads), (theirs, their_grads) = _values_and_gradients(call, *arrays)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    for mine, reference in zip(our_grads, their_grads):
        np.testing.assert_allclose(mine, reference, rtol=1e-11, atol=1e-12)


def _assert_same_error(call):
    """torch's exception class and message's first line (the rest is torch's C++ context;
    ours may add lines of its own), its sizes being ours (tracegrad.Size)."""
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(tg)
    words = str(theirs.value).splitlines()[0].replace("torch.Size", "tracegrad.Size")
    assert str(ours.value).startswith(words)


# -- local_response_norm ------------------------------------------------------------------
@pytest.mark.parametrize("shape,size,options", [
    ((2, 5, 4), 3, {}),
    ((2, 6, 3, 4), 2, {"alpha": 0.5, "beta": 0.6, "k": 2.0}),
    ((1, 4, 2, 3, 2), 5, {"alpha": 0.1}),
    ((1, 3, 2, 2, 2, 2), 1, {}),
])
def test_local_response_norm_as_torch(shape, size, options):
    _assert_as_torch(lambda L, x: L.nn.functional.local_response_norm(x, size, **options),
                     _array(*shape))


def test_local_response_norm_gradcheck():
    x = tg.tensor(_array(2, 5, 3, 2), requires_grad=True)
    def call(x):
        return tg.nn.functional.local_response_norm(x, 3, alpha=0.5, k=1.5)
    assert tg.autograd.gradcheck(call, (x,))
    assert tg.autograd.gradgradcheck(call, (x,))


def test_local_response_norm_of_an_empty_input_is_the_input():
    x = tg.zeros(0, 3, 4)
    assert tg.nn.functional.local_response_norm(x, 2) is x


def test_local_response_norm_errors_and_repr():
    _assert_same_error(lambda L: L.nn.functional.local_response_norm(L.ones(2, 3), 2))
    assert repr(tg.nn.LocalResponseNorm(3, k=2)) == repr(torch.nn.LocalResponseNorm(3, k=2))


# -- embedding_bag ------------------------------------------------------------------------
_INDICES = np.array([1, 2, 4, 5, 4, 3, 2, 9, 4, 7])


def _bags(lib, weight, samples=None, indices=_INDICES, offsets=(0, 3, 3, 7), **options):
    return lib.nn.functional.embedding_bag(
        lib.tensor(indices), weight, None if offsets is None else lib.tensor(offsets),
        per_sample_weights=samples, **options)


BAGS = {
    **{f"{mode}-{name}": (dict(mode=mode, **options), offsets)
       for mode in ("sum", "mean", "max")
       for name, options, offsets in (
           ("plain", {}, (0, 3, 3, 7)),  # with an empty bag
           ("padding", {"padding_idx": 4}, (0, 3, 3, 7)),
           ("negative-padding", {"padding_idx": -6}, (0, 3, 3, 7)),
           ("last-offset", {"include_last_offset": True}, (0, 3, 3, 7)),
           ("one-bag", {}, (0,)),
           ("padding-only-bag", {"padding_idx": 1}, (0, 1, 4)))},
    # scale_grad_by_freq: torch 2.13's count (see ops/embedding._bag_frequencies)
    "sum-frequency": (dict(mode="sum", scale_grad_by_freq=True), (0, 3, 3, 7)),
    "mean-frequency-padding": (dict(mode="mean", scale_grad_by_freq=True, padding_idx=2),
                               (0, 5)),
}


@pytest.mark.parametrize("options,offsets", BAGS.values(), ids=list(BAGS))
def test_embedding_bag_as_torch(options, offsets):
    _assert_as_torch(lambda L, w: _bags(L, w, offsets=offsets, **options), _array(10, 3))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_of_a_matrix_is_one_bag_per_row(mode):
    _assert_as_torch(lambda L, w: _bags(L, w, indices=_INDICES.reshape(2, 5), offsets=None,
                                        mode=mode, padding_idx=9), _array(10, 3))


@pytest.mark.parametrize("options", [{}, {"padding_idx": 4}, {"scale_grad_by_freq": True},
                                     {"include_last_offset": True}])
def test_embedding_bag_per_sample_weights_as_torch(options):
    _assert_as_torch(lambda L, w, p: _bags(L, w, p, mode="sum", **options),
                     _array(10, 3), _array(10, seed=1))


def test_embedding_bag_max_keeps_the_first_of_equal_maxima():
    weight = np.array([[1.0, 2.0], [1.0, 0.0], [0.0, 2.0]])
    _assert_as_torch(lambda L, w: _bags(L, w, indices=np.array([1, 0, 2, 2, 1]),
                                        offsets=(0, 3), mode="max"), weight)


def test_embedding_bag_node_as_torch():
    for lib in (tg, torch):
        weight = lib.ones(10, 3, dtype=lib.float64, requires_grad=True)
        node = _bags(lib, weight, padding_idx=3, mode="max").grad_fn
        assert node.name() == "EmbeddingBagBackward0"
        assert (node._saved_mode, node._saved_padding_idx, node._saved_sparse,
                node._saved_scale_grad_by_freq, node._saved_weight_sym_argsize_0,
                node._saved_weight, node._saved_per_sample_weights) == (
            2, 3, False, False, 10, None, None)
        assert node._saved_offsets.tolist() == [0, 3, 3, 7]
        assert node.next_functions[1] == (None, 0)


def test_embedding_bag_gradcheck():
    weight = tg.tensor(_array(10, 3), requires_grad=True)
    samples = tg.tensor(_array(10, seed=1), requires_grad=True)
    def call(weight, samples):
        return _bags(tg, weight, samples, mode="sum", padding_idx=2)
    assert tg.autograd.gradcheck(call, (weight, samples))
    assert tg.autograd.gradgradcheck(call, (weight, samples))
    def maximum(weight):
        return _bags(tg, weight, mode="max")
    assert tg.autograd.gradcheck(maximum, (weight,))


def test_embedding_bag_module_as_torch():
    for build in (lambda nn: nn.EmbeddingBag(10, 3),
                  lambda nn: nn.EmbeddingBag(10, 3, max_norm=1.5, norm_type=1.0,
                                             scale_grad_by_freq=True, mode="sum",
                                             padding_idx=-2),
                  # Embedding's repr is written by the same code now
                  lambda nn: nn.Embedding(10, 3, padding_idx=-1, max_norm=1.0, norm_type=1.5,
                                          scale_grad_by_freq=True, sparse=True)):
        ours, theirs = build(tg.nn), build(torch.nn)
        assert repr(ours) == repr(theirs)
        assert ours.padding_idx == theirs.padding_idx
    weight = _array(10, 3)
    results = []
    for lib in (tg, torch):
        bag = lib.nn.EmbeddingBag.from_pretrained(lib.tensor(weight), mode="max",
                                                  include_last_offset=True)
        assert not bag.weight.requires_grad
        results.append(bag(lib.tensor(_INDICES), lib.tensor([0, 4, 10])).numpy())
    np.testing.assert_allclose(*results)
    assert tg.nn.EmbeddingBag(5, 2, padding_idx=1).weight[1].abs().sum().item() == 0


def test_embedding_bag_max_norm_renormalizes_the_used_rows_in_place():
    weight = _array(10, 3) * 3
    results = []
    for lib in (tg, torch):
        table = lib.tensor(weight)
        _bags(lib, table, max_norm=1.0, mode="sum")
        results.append(table.numpy())
    np.testing.assert_allclose(*results, rtol=1e-6)


def _weights(lib, *shape, dtype="float64"):
    return lib.ones(*shape, dtype=getattr(lib, dtype))


BAG_ERRORS = {
    "samples-shape": lambda L: _bags(L, _weights(L, 10, 3), _weights(L, 7), mode="sum"),
    "weight-dims": lambda L: _bags(L, _weights(L, 30)),
    "matrix-with-offsets": lambda L: _bags(L, _weights(L, 10, 3),
                                          indices=_INDICES.reshape(2, 5)),
    "no-offsets": lambda L: _bags(L, _weights(L, 10, 3), offsets=None),
    "offsets-dims": lambda L: L.nn.functional.embedding_bag(
        L.tensor(_INDICES), _weights(L, 10, 3), L.tensor([[0]])),
    "input-dims": lambda L: _bags(L, _weights(L, 10, 3), indices=_INDICES.reshape(5, 2, 1),
                                  offsets=None),
    "mode": lambda L: _bags(L, _weights(L, 10, 3), mode="median"),
    "max-frequency": lambda L: _bags(L, _weights(L, 10, 3), mode="max",
                                     scale_grad_by_freq=True),
    "max-sparse": lambda L: _bags(L, _weights(L, 10, 3), mode="max", sparse=True),
    "samples-mean": lambda L: _bags(L, _weights(L, 10, 3), _weights(L, 10)),
    "float-indices": lambda L: L.nn.functional.embedding_bag(
        L.tensor([1.0, 2.0]), _weights(L, 10, 3), L.tensor([0])),
    "float-offsets": lambda L: L.nn.functional.embedding_bag(
        L.tensor([1, 2]), _weights(L, 10, 3), L.tensor([0.0])),
    "integer-weight": lambda L: L.nn.functional.embedding_bag(
        L.tensor([1, 2]), _weights(L, 10, 3, dtype="int32"), L.tensor([0])),
    "samples-dtype": lambda L: _bags(L, _weights(L, 10, 3), _weights(L, 10, dtype="float32"),
                                     mode="sum"),
    "padding-range": lambda L: _bags(L, _weights(L, 10, 3), padding_idx=10),
    "first-offset": lambda L: _bags(L, _weights(L, 10, 3), offsets=(1, 3)),
    "last-offset": lambda L: _bags(L, _weights(L, 10, 3), offsets=(0, 11)),
    "index-range": lambda L: _bags(L, _weights(L, 6, 3)),
    "negative-index": lambda L: L.nn.functional.embedding_bag(
        L.tensor([1, -1]), _weights(L, 10, 3), L.tensor([0])),
    "module-padding": lambda L: L.nn.EmbeddingBag(4, 2, padding_idx=4),
}


@pytest.mark.parametrize("call", BAG_ERRORS.values(), ids=list(BAG_ERRORS))
def test_embedding_bag_errors_in_torchs_words(call):
    _assert_same_error(call)


# -- max_unpool ---------------------------------------------------------------------------
def _pool_indices(lib, dims, shape, *pool_args):
    x = lib.tensor(_array(*shape, seed=3))
    return getattr(lib.nn.functional, f"max_pool{dims}d")(x, *pool_args, return_indices=True)[1]


UNPOOLS = {
    "1d": (1, (2, 3, 9), (3, 2, 1), {}),
    "1d-unbatched-output-size": (1, (3, 8), (2,), {"output_size": [9]}),
    "2d": (2, (2, 2, 5, 6), (2,), {}),
    # overlapping windows: one element can be the maximum of two (a repeated index)
    "2d-overlapping": (2, (1, 2, 6, 5), (3, 1, 1), {}),
    "2d-output-size-with-batch": (2, (1, 2, 5, 5), (2,), {"output_size": (1, 2, 5, 5)}),
    "3d": (3, (1, 2, 4, 6, 4), (2,), {}),
    "3d-unbatched-strided": (3, (2, 5, 4, 6), ((3, 2, 2), (2, 1, 2), (1, 0, 1)), {}),
}


@pytest.mark.parametrize("dims,shape,pool_args,options", UNPOOLS.values(), ids=list(UNPOOLS))
def test_max_unpool_as_torch(dims, shape, pool_args, options):
    def call(L, x):
        indices = _pool_indices(L, dims, shape, *pool_args)
        return getattr(L.nn.functional, f"max_unpool{dims}d")(x, indices, *pool_args, **options)
    pooled_shape = tuple(_pool_indices(torch, dims, shape, *pool_args).shape)
    _assert_as_torch(call, _array(*pooled_shape))
    for lib in (tg, torch):  # the node torch records (1-d: its squeeze above)
        x = lib.tensor(_array(*pooled_shape), requires_grad=True)
        node = call(lib, x).grad_fn
        assert (node.name(), node.next_functions[0][0].name() if dims == 1 else None) == (
            ("SqueezeBackward1", "MaxUnpool2DBackward0") if dims == 1
            else (f"MaxUnpool{dims}DBackward0", None))


def test_max_unpool_modules_as_torch():
    for build in (lambda nn: nn.MaxUnpool1d(3, 1, 1), lambda nn: nn.MaxUnpool2d(2),
                  lambda nn: nn.MaxUnpool3d((1, 2, 3), padding=1)):
        assert repr(build(tg.nn)) == repr(build(torch.nn))
    results = []
    for lib in (tg, torch):
        pool, unpool = lib.nn.MaxPool2d(2, return_indices=True), lib.nn.MaxUnpool2d(2)
        x = lib.tensor(_array(1, 1, 5, 5))
        results.append(unpool(*pool(x), output_size=x.size()).numpy())
    np.testing.assert_array_equal(*results)


UNPOOL_ERRORS = {
    "index-dtype": lambda L: L.nn.functional.max_unpool2d(
        L.ones(1, 2, 2), L.zeros(1, 2, 2, dtype=L.int32), 2),
    "input-dims": lambda L: L.nn.functional.max_unpool3d(
        L.ones(2, 2, 2), L.zeros(2, 2, 2, dtype=L.int64), 2),
    "1d-input-dims": lambda L: L.nn.functional.max_unpool1d(
        L.ones(2), L.zeros(2, dtype=L.int64), 2),
    "index-shape": lambda L: L.nn.functional.max_unpool2d(
        L.ones(1, 2, 2), L.zeros(1, 1, 2, dtype=L.int64), 2),
    "index-range": lambda L: L.nn.functional.max_unpool2d(
        L.ones(1, 2, 2), L.tensor([[[0, 1], [2, 16]]]), 2),
    "negative-index": lambda L: L.nn.functional.max_unpool3d(
        L.ones(1, 1, 1, 2), L.tensor([[[[0, -3]]]]), 2),
    "output-size-length": lambda L: L.nn.functional.max_unpool2d(
        L.ones(1, 2, 2), L.zeros(1, 2, 2, dtype=L.int64), 2, output_size=(3, 3, 3)),
    "output-size-range": lambda L: L.nn.functional.max_unpool2d(
        L.ones(1, 2, 2), L.zeros(1, 2, 2, dtype=L.int64), 2, output_size=(9, 4)),
    "3d-stride": lambda L: L.nn.functional.max_unpool3d(
        L.ones(1, 1, 1, 2), L.zeros(1, 1, 1, 2, dtype=L.int64), 2, 0),
}


@pytest.mark.parametrize("call", UNPOOL_ERRORS.values(), ids=list(UNPOOL_ERRORS))
def test_max_unpool_errors_in_torchs_words(call):
    _assert_same_error(call)


# -- pdist --------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [2.0, 0.0, 1.0, 0.5, 3.0, float("inf")])
def test_pdist_as_torch(p):
    rows = _array(5, 3)
    rows[3] = rows[1]  # a zero distance: torch's gradient there is 0
    _assert_as_torch(lambda L, x: L.nn.functional.pdist(x, p), rows)


def test_pdist_node_and_edge_cases_as_torch():
    for lib in (tg, torch):
        x = lib.tensor(_array(4, 3), requires_grad=True)
        node = lib.nn.functional.pdist(x, 1.5).grad_fn
        assert (node.name(), node._saved_p, tuple(node._saved_result.shape)) == (
            "PdistBackward0", 1.5, (6,))
        assert tuple(lib.nn.functional.pdist(x[:1]).shape) == (0,)
        assert lib.nn.functional.pdist(x[:, :0]).tolist() == [0.0] * 6
    _assert_same_error(lambda L: L.nn.functional.pdist(L.ones(3)))
    _assert_same_error(lambda L: L.nn.functional.pdist(L.ones(3, 2), -1))
    _assert_same_error(lambda L: L.nn.functional.pdist(L.ones(3, 2, dtype=L.int64)))


# -- channel_shuffle ----------------------------------------------------------------------
@pytest.mark.parametrize("shape,groups", [((2, 6, 3, 2), 3), ((3, 4, 2), 2), ((1, 6, 2), 6),
                                          ((2, 4, 1, 2, 3), 1)])
def test_channel_shuffle_as_torch(shape, groups):
    _assert_as_torch(lambda L, x: L.nn.functional.channel_shuffle(x, groups), _array(*shape))
    _assert_as_torch(lambda L, x: L.nn.ChannelShuffle(groups)(x), _array(*shape))
    for lib in (tg, torch):
        out = lib.nn.functional.channel_shuffle(lib.ones(*shape, requires_grad=True), groups)
        assert (out.grad_fn.name(), out.grad_fn._saved_groups, out.is_contiguous()) == (
            "ChannelShuffleBackward0", groups, True)
    assert repr(tg.nn.ChannelShuffle(groups)) == repr(torch.nn.ChannelShuffle(groups))


@pytest.mark.parametrize("shape,groups", [((2, 6, 3), 4), ((2, 6, 3), 0), ((2, 6, 3), -1),
                                          ((6,), 2), ((2, 6), 2)])
def test_channel_shuffle_errors_in_torchs_words(shape, groups):
    _assert_same_error(lambda L: L.nn.functional.channel_shuffle(L.ones(*shape), groups))


# -- multi_margin_loss, multilabel_margin_loss --------------------------------------------
_CLASSES = np.array([0, 3, 1, 4])
_LABELS = np.array([[0, 3, -1, 1, 2], [2, -1, 0, 0, 0], [-1, 0, 0, 0, 0], [4, 4, 1, 0, 2]])
_CLASS_WEIGHTS = np.array([0.5, 1.0, 2.0, 0.3, 0.8])


def _multi_margin(options, sample=None):
    def call(L, x):
        given = {key: L.tensor(value) if key == "weight" else value
                 for key, value in options.items()}
        if sample is None:
            return L.nn.functional.multi_margin_loss(x, L.tensor(_CLASSES), **given)
        return L.nn.functional.multi_margin_loss(x[sample], L.tensor(_CLASSES[sample]), **given)
    return call


MARGIN_OPTIONS = [{}, {"p": 2}, {"margin": 0.5, "weight": _CLASS_WEIGHTS},
                  {"reduction": "none"}, {"reduction": "sum", "p": 2, "margin": 2.0}]


@pytest.mark.parametrize("options", MARGIN_OPTIONS)
@pytest.mark.parametrize("sample", [None, 1])
def test_multi_margin_loss_as_torch(options, sample):
    _assert_as_torch(_multi_margin(options, sample), _array(4, 5))


@pytest.mark.parametrize("reduction", ["mean", "none", "sum"])
@pytest.mark.parametrize("sample", [None, 0, 3])
def test_multilabel_margin_loss_as_torch(reduction, sample):
    labels = _LABELS if sample is None else _LABELS[sample]
    _assert_as_torch(lambda L, x: L.nn.functional.multilabel_margin_loss(
        x if sample is None else x[sample], L.tensor(labels), reduction=reduction),
        _array(4, 5))


def test_margin_losses_nodes_and_second_derivatives_as_torch():
    for lib in (tg, torch):
        x = lib.tensor(_array(4, 5), requires_grad=True)
        for loss, name in ((_multi_margin({"weight": _CLASS_WEIGHTS})(lib, x),
                            "multi_margin_loss_backward"),
                           (lib.nn.functional.multilabel_margin_loss(x, lib.tensor(_LABELS)),
                            "multilabel_margin_loss_backward")):
            assert loss.grad_fn._saved_reduction == 1
            (grad,) = lib.autograd.grad(loss, x, create_graph=True)
            assert grad.grad_fn.name() == "torch::autograd::NotImplemented"
            with pytest.raises(RuntimeError, match=f"derivative for aten::{name} is not "):
                grad.sum().backward()
    for lib in (tg, torch):
        node = _multi_margin({"p": 2, "margin": 0.5})(
            lib, lib.ones(4, 5, dtype=lib.float64, requires_grad=True)).grad_fn
        assert (node._saved_p, node._saved_margin, node._saved_weight) == (2, 0.5, None)
        node = lib.nn.functional.multilabel_margin_loss(
            lib.ones(4, 5, dtype=lib.float64, requires_grad=True), lib.tensor(_LABELS)).grad_fn
        assert node._saved_is_target.tolist() == [
            [1, 0, 0, 1, 0], [0, 0, 1, 0, 0], [0, 0, 0, 0, 0], [1, 1, 1, 0, 1]]


def test_margin_loss_modules_as_torch():
    for build in (lambda nn: nn.MultiMarginLoss(), lambda nn: nn.MultiLabelMarginLoss(),
                  lambda nn: nn.MultiMarginLoss(p=2, margin=0.5, reduction="sum")):
        assert repr(build(tg.nn)) == repr(build(torch.nn))
    _assert_as_torch(lambda L, x: L.nn.MultiMarginLoss(
        2, 0.5, L.tensor(_CLASS_WEIGHTS))(x, L.tensor(_CLASSES)), _array(4, 5))
    _assert_as_torch(lambda L, x: L.nn.MultiLabelMarginLoss(reduction="sum")(
        x, L.tensor(_LABELS)), _array(4, 5))


MARGIN_ERRORS = {
    "class-range": lambda L: L.nn.functional.multi_margin_loss(L.ones(3, 4),
                                                               L.tensor([0, 4, 1])),
    "negative-class": lambda L: L.nn.functional.multi_margin_loss(L.ones(3, 4),
                                                                  L.tensor([0, -1, 1])),
    "target-size": lambda L: L.nn.functional.multi_margin_loss(L.ones(3, 4), L.tensor([0, 1])),
    "input-dims": lambda L: L.nn.functional.multi_margin_loss(L.ones(1, 3, 4),
                                                              L.tensor([0, 1, 2])),
    "p": lambda L: L.nn.functional.multi_margin_loss(L.ones(3, 4), L.tensor([0, 1, 2]), p=3),
    "weight-dims": lambda L: L.nn.functional.multi_margin_loss(
        L.ones(3, 4), L.tensor([0, 1, 2]), weight=L.ones(1, 4)),
    "weight-size": lambda L: L.nn.functional.multi_margin_loss(
        L.ones(3, 4), L.tensor([0, 1, 2]), weight=L.ones(3)),
    "weight-dtype": lambda L: L.nn.functional.multi_margin_loss(
        L.ones(3, 4), L.tensor([0, 1, 2]), weight=L.ones(4, dtype=L.float64)),
    "weight-requires-grad": lambda L: L.nn.functional.multi_margin_loss(
        L.ones(3, 4), L.tensor([0, 1, 2]), weight=L.ones(4, requires_grad=True)),
    "float-target": lambda L: L.nn.functional.multi_margin_loss(L.ones(3, 4),
                                                                L.tensor([0.0, 1, 2])),
    "integer-input": lambda L: L.nn.functional.multi_margin_loss(
        L.ones(3, 4, dtype=L.int32), L.tensor([0, 1, 2])),
    "reduction": lambda L: L.nn.functional.multi_margin_loss(L.ones(3, 4), L.tensor([0, 1, 2]),
                                                             reduction="mine"),
    "module-p": lambda L: L.nn.MultiMarginLoss(p=3),
    "labels-shape": lambda L: L.nn.functional.multilabel_margin_loss(
        L.ones(3, 4), L.zeros(2, 4, dtype=L.int64)),
    "labels-range": lambda L: L.nn.functional.multilabel_margin_loss(
        L.ones(1, 4), L.tensor([[0, 4, -1, 0]])),
    "labels-below": lambda L: L.nn.functional.multilabel_margin_loss(
        L.ones(1, 4), L.tensor([[0, -2, -1, 0]])),
    "labels-dtype": lambda L: L.nn.functional.multilabel_margin_loss(L.ones(1, 4),
                                                                     L.zeros(1, 4)),
    "labels-input-dims": lambda L: L.nn.functional.multilabel_margin_loss(
        L.ones(1, 1, 4), L.zeros(1, 1, 4, dtype=L.int64)),
}


@pytest.mark.parametrize("call", MARGIN_ERRORS.values(), ids=list(MARGIN_ERRORS))
def test_margin_loss_errors_in_torchs_words(call):
    _assert_same_error(call)


# -- rrelu --------------------------------------------------------------------------------
@pytest.mark.parametrize("bounds", [(1 / 8, 1 / 3), (0.2, 0.2), (-0.5, 0.1)])
def test_rrelu_in_evaluation_as_torch(bounds):
    rows = _array(3, 4)
    rows[0, 0] = 0.0  # the mean slope's side, as torch's leaky_relu_backward
    _assert_as_torch(lambda L, x: L.nn.functional.rrelu(x, *bounds), rows)
    _assert_as_torch(lambda L, x: L.nn.RReLU(*bounds).eval()(x), rows)


def test_rrelu_in_training_draws_a_slope_per_negative_element():
    """Other numbers than torch's generator: the graph, the shape and how the output, the
    saved noise and the gradient relate are torch's."""
    rows = _array(40, 5)
    rows[0, 0] = 0.0  # drawn too (torch's kernel: input <= 0)
    for lib in (tg, torch):
        x = lib.tensor(rows, requires_grad=True)
        out = lib.nn.RReLU(0.1, 0.3)(x)
        noise = out.grad_fn._saved_noise.numpy()
        assert (out.grad_fn.name(), out.grad_fn._saved_training) == (
            "RreluWithNoiseBackward0", True)
        assert ((noise == 1) == (rows > 0)).all()
        assert ((noise[rows <= 0] >= 0.1) & (noise[rows <= 0] <= 0.3)).all()
        assert len(np.unique(noise[rows <= 0])) > 1
        np.testing.assert_allclose(out.detach().numpy(), rows * noise)
        (grad,) = lib.autograd.grad(out.sum(), x, create_graph=True)
        np.testing.assert_allclose(grad.detach().numpy(), noise)
        assert grad.grad_fn.name() == "RreluWithNoiseBackwardBackward0"


def test_rrelu_draws_from_tracegrads_generator():
    draws = []
    for _ in range(2):
        tg.manual_seed(7)
        draws.append(tg.nn.functional.rrelu(-tg.ones(10), training=True).tolist())
    assert draws[0] == draws[1] and draws[0] != tg.nn.functional.rrelu(
        -tg.ones(10), training=True).tolist()


def test_rrelu_in_place_module_repr_and_errors():
    for lib in (tg, torch):
        x = lib.tensor(_array(3, 4))
        assert lib.nn.functional.rrelu_(x) is x
        np.testing.assert_allclose(x.numpy(), np.where(_array(3, 4) > 0, 1, 0.5 * (1 / 8 + 1 / 3))
                                   * _array(3, 4))
    assert repr(tg.nn.RReLU(0.1, 0.3, True)) == repr(torch.nn.RReLU(0.1, 0.3, True))
    assert repr(tg.nn.RReLU()) == repr(torch.nn.RReLU())
    _assert_same_error(lambda L: L.nn.functional.rrelu(L.ones(3), 0.5, 0.1))


# -- gumbel_softmax -----------------------------------------------------------------------
@pytest.mark.parametrize("options", [{}, {"tau": 0.5, "dim": 0}, {"hard": True},
                                     {"hard": True, "dim": 0, "tau": 2.0}])
def test_gumbel_softmax_graph_as_torch(options):
    """A random draw (tracegrad's generator): the graph, shapes and the distribution's
    invariants are torch's."""
    seen = {}
    for lib in (tg, torch):
        x = lib.tensor(_array(3, 4), requires_grad=True)
        out = lib.nn.functional.gumbel_softmax(x, **options)
        dim = options.get("dim", -1)
        values = out.detach().numpy()
        np.testing.assert_allclose(values.sum(dim), 1.0)
        if options.get("hard"):  # one-hot, the gradient the soft sample's
            assert set(np.unique(values)) == {0.0, 1.0}
            (grad,) = lib.autograd.grad((out * lib.tensor(_array(3, 4, seed=1))).sum(), x)
            assert np.abs(grad.numpy()).sum() > 0
        seen[lib] = (_graph(out), tuple(out.shape), out.dtype.is_floating_point)
    assert seen[tg] == seen[torch]


def test_gumbel_softmax_hard_is_straight_through():
    """hard=True: one-hot forward, the soft sample's gradient backward (the same draw)."""
    x = tg.tensor(_array(3, 4), requires_grad=True)
    tg.manual_seed(3)
    soft = tg.nn.functional.gumbel_softmax(x, tau=0.7)
    (soft_grad,) = tg.autograd.grad((soft * tg.tensor(_array(3, 4, seed=1))).sum(), x)
    tg.manual_seed(3)
    hard = tg.nn.functional.gumbel_softmax(x, tau=0.7, hard=True)
    (hard_grad,) = tg.autograd.grad((hard * tg.tensor(_array(3, 4, seed=1))).sum(), x)
    np.testing.assert_array_equal(hard.detach().numpy().argmax(-1), soft.detach().numpy()
                                  .argmax(-1))
    np.testing.assert_allclose(hard_grad.numpy(), soft_grad.numpy())
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated and has no effect."):
        tg.nn.functional.gumbel_softmax(x, eps=1e-5)
