"""nn.functional beyond the registry's op cases, against torch: the composite functions
(distances, normalize, one_hot, softsign, KL divergence, ...), argument handling (padding
strings, pad modes, interpolate sizes and scales, legacy reductions) and torch's errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn.functional as F

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _compare(call, arrays, rtol=1e-10, names=True):
    results = []
    for lib in (tg, torch):
        inputs = [lib.tensor(a, requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray)
                  else a for a in arrays]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = call(lib, *inputs)
        if out.requires_grad:
            (out * lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)))
             ).sum().backward()
        grads = [x.grad.numpy() if getattr(x, "grad", None) is not None else None
                 for x in inputs]
        results.append((out, grads))
    (ours, our_grads), (theirs, their_grads) = results
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol,
                               atol=1e-12)
    assert ours.dtype.name == str(theirs.dtype).split(".")[-1]
    if names and theirs.grad_fn is not None:
        assert ours.grad_fn.name() == theirs.grad_fn.name()
    for mine, reference in zip(our_grads, their_grads):
        if reference is None:
            assert mine is None
        else:
            np.testing.assert_allclose(mine, reference, rtol=rtol, atol=1e-12)


COMPOSITES = [
    ("normalize", lambda L, x: L.nn.functional.normalize(x, p=2.0, dim=1), [_x(3, 4)]),
    ("normalize-p1", lambda L, x: L.nn.functional.normalize(x, p=1, dim=0), [_x(3, 4)]),
    ("cosine-similarity", lambda L, a, b: L.nn.functional.cosine_similarity(a, b, dim=1),
     [_x(3, 4), _x(3, 4, seed=1)]),
    ("cosine-similarity-broadcast",
     lambda L, a, b: L.nn.functional.cosine_similarity(a, b, dim=-1),
     [_x(3, 4), _x(1, 4, seed=1)]),
    ("softsign", lambda L, x: L.nn.functional.softsign(x), [_x(3, 4)]),
    ("tanhshrink", lambda L, x: L.nn.functional.tanhshrink(x), [_x(3, 4)]),
    ("softmin", lambda L, x: L.nn.functional.softmin(x, dim=1), [_x(3, 4)]),
    ("l1", lambda L, a, b: L.nn.functional.l1_loss(a, b), [_x(3, 4), _x(3, 4, seed=1)]),
    ("l1-none", lambda L, a, b: L.nn.functional.l1_loss(a, b, reduction="none"),
     [_x(3, 4), _x(3, 4, seed=1)]),
    ("mse-weighted", lambda L, a, b: L.nn.functional.mse_loss(
        a, b, weight=L.tensor(np.arange(12.0).reshape(3, 4))), [_x(3, 4), _x(3, 4, seed=1)]),
    ("l1-legacy-reduce", lambda L, a, b: L.nn.functional.l1_loss(a, b, reduce=False),
     [_x(3, 4), _x(3, 4, seed=1)]),
    ("kl-div-mean", lambda L, a, b: L.nn.functional.kl_div(a, b), [_x(3, 4), np.abs(
        _x(3, 4, seed=1))]),
    ("kl-div-zero-target", lambda L, a: L.nn.functional.kl_div(
        a, L.tensor(np.abs(_x(3, 4, seed=1)) * (_x(3, 4, seed=2) > 0)), reduction="sum"),
     [_x(3, 4)]),
    ("poisson-nll", lambda L, a, b: L.nn.functional.poisson_nll_loss(a, b.abs()),
     [_x(3, 4), _x(3, 4, seed=1)]),
    ("gaussian-nll-homoscedastic", lambda L, a, b, v: L.nn.functional.gaussian_nll_loss(
        a, b, v.abs()), [_x(3, 4), _x(3, 4, seed=1), _x(3, seed=2)]),
    ("gaussian-nll-float-var", lambda L, a, b: L.nn.functional.gaussian_nll_loss(a, b, 0.5),
     [_x(3, 4), _x(3, 4, seed=1)]),
    ("cross-entropy-3d", lambda L, x: L.nn.functional.cross_entropy(
        x, L.tensor([[0, 2], [1, 1]]), ignore_index=1, label_smoothing=0.1), [_x(2, 3, 2)]),
    ("nll-legacy-size-average", lambda L, x: L.nn.functional.nll_loss(
        x, L.tensor([0, 2, 1]), size_average=False), [_x(3, 3)]),
    ("conv1d-same", lambda L, x, w: L.nn.functional.conv1d(x, w, padding="same"),
     [_x(2, 3, 7), _x(4, 3, 4, seed=1)]),
    ("pad-circular", lambda L, x: L.nn.functional.pad(x, (1, 2, 2, 0), mode="circular"),
     [_x(1, 2, 3, 4)]),
    ("interpolate-area", lambda L, x: L.nn.functional.interpolate(x, size=(2, 3), mode="area"),
     [_x(1, 2, 5, 7)]),
    ("interpolate-recompute", lambda L, x: L.nn.functional.interpolate(
        x, scale_factor=1.7, mode="bilinear", recompute_scale_factor=True), [_x(1, 1, 4, 5)]),
    ("upsample-bilinear", lambda L, x: L.nn.functional.upsample_bilinear(x, scale_factor=2),
     [_x(1, 1, 3, 3)]),
    ("sdpa-causal", lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(
        q, k, v, is_causal=True), [_x(2, 4, 3), _x(2, 4, 3, seed=1), _x(2, 4, 3, seed=2)]),
    ("sdpa-bool-mask", lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=L.tensor(np.array([[True, False, True]] * 2))),
     [_x(2, 2, 3), _x(2, 3, 3, seed=1), _x(2, 3, 3, seed=2)]),
    ("pairwise-distance", lambda L, a, b: L.nn.functional.pairwise_distance(a, b, p=3.0),
     [_x(3, 4), _x(3, 4, seed=1)]),
    ("max-pool2d-unbatched-indices", lambda L, x: L.nn.functional.max_pool2d(
        x, 2, return_indices=True)[1].double(), [_x(2, 4, 4)]),
    ("dropout-eval", lambda L, x: L.nn.functional.dropout(x, 0.5, training=False),
     [_x(3, 4)]),
]


@pytest.mark.parametrize("name, call, arrays", COMPOSITES, ids=[c[0] for c in COMPOSITES])
def test_functional_matches_torch(name, call, arrays):
    # Graphs that differ from torch's: pairwise_distance's norm is composed of tensor ops
    # (torch: one NormBackward1), circular padding is a cat (torch: CopySlices), and
    # attention runs the reference math (torch: a fused ScaledDotProductFlashAttention
    # node). Their values and gradients are compared all the same.
    _compare(call, arrays, names=name not in ("pairwise-distance", "sdpa-causal",
                                              "sdpa-bool-mask", "pad-circular"))


def test_embedding_functional_with_padding_and_frequency_scaling():
    weight = _x(6, 3)
    indices = np.array([[1, 2, 2], [5, 1, 0]])
    for options in ({"padding_idx": 2}, {"scale_grad_by_freq": True}):
        _compare(lambda L, w, o=options: L.nn.functional.embedding(L.tensor(indices), w, **o),
                 [weight])


def test_one_hot_matches_torch():
    for arguments in (([0, 3, 1], -1), ([[1, 0], [2, 2]], 4)):
        ours = F.one_hot(tg.tensor(arguments[0]), arguments[1])
        theirs = torch.nn.functional.one_hot(torch.tensor(arguments[0]), arguments[1])
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert ours.dtype == tg.int64


def test_dropout_statistics_and_inplace():
    x = tg.ones(1000)
    out = F.dropout(x, 0.3)
    kept = out.numpy() != 0
    assert 0.6 < kept.mean() < 0.8
    np.testing.assert_allclose(out.numpy()[kept], 1 / 0.7, rtol=1e-6)
    y = tg.ones(10)
    assert F.dropout(y, 0.5, inplace=True) is y
    assert F.dropout(x, 0.0) is x and not F.dropout(x, 1.0).numpy().any()


@pytest.mark.parametrize("call, error, message", [
    (lambda: F.conv2d(tg.zeros(1, 2, 5, 5), tg.zeros(3, 3, 3, 3)), RuntimeError,
     r"expected input\[1, 2, 5, 5\] to have 3 channels, but got 2 channels instead"),
    (lambda: F.conv2d(tg.zeros(3, 8), tg.zeros(4, 3, 3, 3)), RuntimeError,
     "Expected 3D \\(unbatched\\) or 4D \\(batched\\) input to conv2d"),
    (lambda: F.conv2d(tg.zeros(1, 3, 3, 3), tg.zeros(4, 3, 5, 5)), RuntimeError,
     "Kernel size can't be greater than actual input size"),
    (lambda: F.conv2d(tg.zeros(1, 3, 8, 8), tg.zeros(4, 3, 3, 3), stride=2, padding="same"),
     RuntimeError, "padding='same' is not supported for strided convolutions"),
    (lambda: F.conv2d(tg.zeros(1, 3, 8, 8), tg.zeros(4, 3, 3, 3), padding="foo"),
     RuntimeError, "Invalid padding string: 'foo'"),
    (lambda: F.conv2d(tg.zeros(1, 3, 8, 8), tg.zeros(4, 3, 3, 3, dtype=tg.float64)),
     RuntimeError, "expected scalar type Float but found Double"),
    (lambda: F.conv_transpose2d(tg.zeros(1, 3, 4, 4), tg.zeros(3, 2, 3, 3), stride=2,
                                output_padding=2), RuntimeError,
     "output padding must be smaller than either stride or dilation"),
    (lambda: F.max_pool2d(tg.zeros(1, 1, 3, 3), 5), RuntimeError, "Output size is too small"),
    (lambda: F.max_pool2d(tg.zeros(1, 1, 8, 8), 2, padding=2), RuntimeError,
     "pad should be at most half of effective kernel size"),
    (lambda: F.pad(tg.zeros(1, 1, 3, 3), (3, 3, 3, 3), mode="reflect"), RuntimeError,
     "Padding size should be less than the corresponding input dimension"),
    (lambda: F.pad(tg.zeros(1, 1, 3, 3), (1, 1), mode="foo"), NotImplementedError,
     "Unrecognised padding mode foo"),
    (lambda: F.pad(tg.zeros(1, 1, 3, 3), (1, 1), mode="reflect"), NotImplementedError,
     "Padding size 2 is not supported for 4D input tensor"),
    (lambda: F.interpolate(tg.zeros(1, 1, 3, 3), mode="bilinear"), ValueError,
     "either size or scale_factor should be defined"),
    (lambda: F.interpolate(tg.zeros(1, 1, 3), scale_factor=2, mode="bilinear"),
     NotImplementedError, "Got 3D input, but bilinear mode needs 4D input"),
    (lambda: F.interpolate(tg.zeros(1, 1, 3), scale_factor=2, align_corners=True),
     ValueError, "align_corners option can only be set with the interpolating modes"),
    (lambda: F.batch_norm(tg.zeros(1, 3), tg.zeros(3), tg.ones(3), training=True), ValueError,
     "Expected more than 1 value per channel when training"),
    (lambda: F.layer_norm(tg.zeros(2, 3), (4,)), RuntimeError,
     r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\]"),
    (lambda: F.group_norm(tg.zeros(2, 6), 4), RuntimeError,
     "Expected number of channels in input to be divisible by num_groups"),
    (lambda: F.embedding(tg.tensor([5]), tg.zeros(3, 2)), IndexError, "index out of range"),
    (lambda: F.embedding(tg.tensor([1.0]), tg.zeros(3, 2)), RuntimeError,
     "'indices' to have one of the following scalar types: Long, Int"),
    (lambda: F.dropout(tg.zeros(3), 1.5), ValueError,
     "dropout probability has to be between 0 and 1, but got 1.5"),
    (lambda: F.one_hot(tg.tensor([3]), 2), RuntimeError,
     "Class values must be smaller than num_classes"),
    (lambda: F.one_hot(tg.tensor([1.0]), 2), RuntimeError,
     "one_hot is only applicable to index tensor of type LongTensor"),
    (lambda: F.glu(tg.zeros(2, 3)), RuntimeError,
     "Halving dimension must be even, but dimension 1 is size 3"),
    (lambda: F.leaky_relu(tg.tensor([1, 2])), NotImplementedError,
     "\"leaky_relu_cpu\" not implemented for 'Long'"),
    (lambda: F.binary_cross_entropy(tg.tensor([1.5]), tg.tensor([1.0])), RuntimeError,
     "all elements of input should be between 0 and 1"),
    (lambda: F.binary_cross_entropy_with_logits(tg.zeros(3), tg.zeros(4)), ValueError,
     "Target size .* must be the same as input size"),
    (lambda: F.binary_cross_entropy(tg.zeros(3), tg.zeros(3),
                                    weight=tg.ones(3, requires_grad=True)), RuntimeError,
     "not differentiable with respect to argument 'weight'"),
    (lambda: F.smooth_l1_loss(tg.zeros(3), tg.zeros(3), beta=-1), RuntimeError,
     "smooth_l1_loss does not support negative values for beta"),
    (lambda: F.l1_loss(tg.zeros(3), tg.zeros(3), reduction="foo"), ValueError,
     "foo is not a valid value for reduction"),
    (lambda: F.gaussian_nll_loss(tg.zeros(2, 3), tg.zeros(2, 3), tg.ones(3, 3)), ValueError,
     "var is of incorrect size"),
    (lambda: F.cross_entropy(tg.zeros(2, 3), tg.tensor([0, 5])), IndexError,
     "Target 5 is out of bounds"),
])
def test_functional_errors_match_torchs(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_unknown_functional_names_say_tracegrad_does_not_implement_them():
    with pytest.raises(AttributeError, match="does not implement torch.nn.functional.ctc_loss"):
        F.ctc_loss  # noqa: B018
    with pytest.raises(AttributeError, match="does not implement torch.nn.Transformer"):
        tg.nn.Transformer  # noqa: B018
    assert not hasattr(tg.nn, "_private_name")


@pytest.mark.parametrize("call", [
    lambda L, x: L.nn.functional.avg_pool2d(x, 2),
    lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, (3, 2)),
    lambda L, x: L.nn.functional.interpolate(x, scale_factor=2, mode="bilinear"),
    lambda L, x: L.nn.functional.pad(x, (2, 1, 1, 2), mode="reflect"),
], ids=["avg-pool", "adaptive-avg-pool", "bilinear", "reflect-pad"])
def test_an_inf_stays_in_the_windows_that_hold_it(call):
    x = _x(1, 1, 4, 6)
    x[0, 0, 1, 1] = np.inf
    ours = call(tg, tg.tensor(x)).numpy()
    theirs = call(torch, torch.tensor(x)).numpy()
    np.testing.assert_array_equal(np.isfinite(ours), np.isfinite(theirs))
    np.testing.assert_allclose(ours[np.isfinite(theirs)], theirs[np.isfinite(theirs)],
                               rtol=1e-10)
