"""3-d pooling (max, average, adaptive) against torch beyond the registry's op cases: every
output (values and indices), gradients, node names, unbatched inputs, the modules and
torch's errors, word for word. The generalisation touched the 2-d pools' argument checks
too: their errors are checked here as well."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _both(call, shape, seed=0):
    """``call(lib, x)`` in tracegrad and torch on the same float64 input: the outputs as
    tuples, and the input's gradient of a weighted sum of the first output."""
    array = np.random.default_rng(seed).standard_normal(shape)
    results = []
    for lib in (tg, torch):
        x = lib.tensor(array, requires_grad=True)
        out = call(lib, x)
        outs = out if isinstance(out, tuple) else (out,)
        weights = np.linspace(-1, 1, outs[0].numel()).reshape(tuple(outs[0].shape))
        (outs[0] * lib.tensor(weights)).sum().backward()
        results.append((outs, x.grad.numpy()))
    return results


POOLS = [
    ("max", lambda L, x: L.nn.functional.max_pool3d(x, 2), (2, 3, 4, 5, 6)),
    ("max-padded", lambda L, x: L.nn.functional.max_pool3d(
        x, 3, stride=2, padding=1, return_indices=True), (1, 2, 5, 6, 7)),
    ("max-dilated-ceil", lambda L, x: L.nn.functional.max_pool3d(
        x, (2, 3, 2), stride=(1, 2, 2), dilation=(2, 1, 1), ceil_mode=True,
        return_indices=True), (2, 2, 6, 7, 5)),
    ("max-unbatched", lambda L, x: L.nn.functional.max_pool3d(
        x, 2, ceil_mode=True, return_indices=True), (3, 5, 5, 5)),
    ("max-with-indices", lambda L, x: L.nn.functional.max_pool3d_with_indices(x, 2, 1),
     (1, 2, 3, 4, 5)),
    ("avg", lambda L, x: L.nn.functional.avg_pool3d(x, 3, 2, 1), (1, 2, 5, 6, 7)),
    ("avg-exclude-pad-ceil", lambda L, x: L.nn.functional.avg_pool3d(
        x, 3, 2, 1, count_include_pad=False, ceil_mode=True), (1, 2, 6, 6, 7)),
    ("avg-divisor", lambda L, x: L.nn.functional.avg_pool3d(
        x, 2, 1, 1, ceil_mode=True, divisor_override=3), (2, 4, 4, 5)),
    ("adaptive-avg", lambda L, x: L.nn.functional.adaptive_avg_pool3d(x, (2, 3, None)),
     (2, 2, 5, 7, 4)),
    ("adaptive-avg-to-one", lambda L, x: L.nn.functional.adaptive_avg_pool3d(x, 1),
     (2, 2, 5, 7, 4)),
    ("adaptive-avg-grow", lambda L, x: L.nn.functional.adaptive_avg_pool3d(x, (4, 5, 2)),
     (1, 2, 3, 2, 2)),
    ("adaptive-max", lambda L, x: L.nn.functional.adaptive_max_pool3d(
        x, (2, 3, 4), return_indices=True), (2, 2, 5, 7, 6)),
    ("adaptive-max-unbatched", lambda L, x: L.nn.functional.adaptive_max_pool3d_with_indices(
        x, 3), (2, 5, 7, 6)),
    ("adaptive-max-grow", lambda L, x: L.nn.functional.adaptive_max_pool3d(
        x, (4, 3, 5), True), (1, 2, 3, 2, 4)),
    ("module-max", lambda L, x: L.nn.MaxPool3d(2, 1, 1, return_indices=True)(x),
     (1, 2, 3, 4, 5)),
    ("module-avg", lambda L, x: L.nn.AvgPool3d(2, ceil_mode=True)(x), (1, 2, 3, 4, 5)),
    ("module-adaptive-avg", lambda L, x: L.nn.AdaptiveAvgPool3d((2, 1, 3))(x),
     (1, 2, 3, 4, 5)),
    ("module-adaptive-max", lambda L, x: L.nn.AdaptiveMaxPool3d(2, True)(x), (1, 2, 3, 4, 5)),
    ("lp-pool", lambda L, x: L.nn.functional.lp_pool3d(x, 2, 2), (1, 2, 4, 5, 4)),
    ("lp-pool-strided-ceil", lambda L, x: L.nn.functional.lp_pool3d(
        x.abs(), 1.5, (2, 3, 2), 2, True), (2, 5, 6, 5)),
    ("lp-pool-inf", lambda L, x: L.nn.functional.lp_pool3d(x, float("inf"), 2),
     (1, 2, 4, 4, 4)),
    ("module-lp-pool", lambda L, x: L.nn.LPPool3d(3, (1, 2, 2))(x), (1, 2, 3, 4, 5)),
    # lp_pool1d/2d now run through the same code as lp_pool3d
    ("lp-pool-1d", lambda L, x: L.nn.functional.lp_pool1d(x, 2, 3, 2), (2, 3, 9)),
    ("lp-pool-2d-minus-inf", lambda L, x: L.nn.functional.lp_pool2d(x, -float("inf"), 2),
     (2, 4, 6)),
    # the 2-d max pools now run through the same n-d code
    ("max-2d", lambda L, x: L.nn.functional.max_pool2d(x, 3, 2, 1, 2, True, True),
     (2, 2, 9, 8)),
    ("adaptive-max-2d", lambda L, x: L.nn.functional.adaptive_max_pool2d(x, (3, 4), True),
     (2, 7, 6)),
]


@pytest.mark.parametrize("call,shape", [case[1:] for case in POOLS],
                         ids=[case[0] for case in POOLS])
def test_pool_matches_torch(call, shape):
    (ours, our_grad), (theirs, their_grad) = _both(call, shape)
    assert len(ours) == len(theirs)
    for mine, reference in zip(ours, theirs):
        assert tuple(mine.shape) == tuple(reference.shape)
        assert mine.dtype.name == str(reference.dtype).split(".")[-1]
        np.testing.assert_allclose(mine.detach().numpy(), reference.detach().numpy(),
                                   rtol=1e-12, atol=1e-12)
    assert ours[0].grad_fn.name() == theirs[0].grad_fn.name()
    np.testing.assert_allclose(our_grad, their_grad, rtol=1e-12, atol=1e-12)


def test_saved_parameters_as_torch_shows_them():
    for lib in (tg, torch):
        x = lib.ones(1, 1, 4, 4, 4, requires_grad=True)
        node = lib.nn.functional.max_pool3d(x, 2, padding=1, dilation=(1, 2, 1)).grad_fn
        assert (node._saved_kernel_size, node._saved_stride, node._saved_padding,
                node._saved_dilation, node._saved_ceil_mode) == (
            (2, 2, 2), (), (1, 1, 1), (1, 2, 1), False)
        node = lib.nn.functional.avg_pool3d(x, 3, (1, 2, 1), 1, False, False, 5).grad_fn
        assert (node._saved_kernel_size, node._saved_stride, node._saved_padding,
                node._saved_ceil_mode, node._saved_count_include_pad,
                node._saved_divisor_override) == ((3, 3, 3), (1, 2, 1), (1, 1, 1), False,
                                                  False, 5)


def test_module_reprs_match_torch():
    for build in (lambda nn: nn.MaxPool3d(3, 2, 1, ceil_mode=True),
                  lambda nn: nn.AvgPool3d((2, 3, 2), padding=1),
                  lambda nn: nn.AdaptiveAvgPool3d((None, 2, 3)),
                  lambda nn: nn.AdaptiveMaxPool3d(4, return_indices=True),
                  lambda nn: nn.LPPool3d(1.5, (1, 2, 3), 2, True)):
        assert repr(build(tg.nn)) == repr(build(torch.nn))


def _ones(lib, *shape):
    return lib.ones(*shape)


ERRORS = [
    ("max-input-dims", lambda L: L.nn.functional.max_pool3d(_ones(L, 2, 3), 2)),
    ("max-too-small", lambda L: L.nn.functional.max_pool3d(_ones(L, 1, 2, 3, 3, 3), 4)),
    ("max-pad", lambda L: L.nn.functional.max_pool3d(_ones(L, 1, 2, 3, 3, 3), 2, padding=2)),
    ("max-kernel-zero", lambda L: L.nn.functional.max_pool3d(_ones(L, 1, 2, 3, 3, 3), 0)),
    ("max-kernel-negative", lambda L: L.nn.functional.max_pool3d(
        _ones(L, 1, 2, 3, 3, 3), (2, -1, 2))),
    ("max-stride-negative", lambda L: L.nn.functional.max_pool3d(
        _ones(L, 1, 2, 3, 3, 3), 2, -1)),
    ("max-dilation-zero", lambda L: L.nn.functional.max_pool3d(
        _ones(L, 1, 2, 3, 3, 3), 2, 2, 0, 0)),
    ("max-kernel-length", lambda L: L.nn.functional.max_pool3d(_ones(L, 1, 2, 3, 3, 3),
                                                                (2, 2))),
    ("max-stride-length", lambda L: L.nn.functional.max_pool3d(_ones(L, 1, 2, 3, 3, 3),
                                                                2, (1, 1))),
    ("max-padding-length", lambda L: L.nn.functional.max_pool3d(_ones(L, 1, 2, 3, 3, 3),
                                                                 2, 1, (1, 1))),
    ("max-dilation-length", lambda L: L.nn.functional.max_pool3d(_ones(L, 1, 2, 3, 3, 3),
                                                                  2, 1, 0, (1, 1))),
    ("avg-input-dims", lambda L: L.nn.functional.avg_pool3d(_ones(L, 2, 3), 2)),
    ("avg-smaller-than-kernel", lambda L: L.nn.functional.avg_pool3d(
        _ones(L, 1, 2, 3, 3, 3), (4, 2, 2))),
    ("avg-smaller-than-kernel-padded", lambda L: L.nn.functional.avg_pool3d(
        _ones(L, 1, 2, 3, 3, 3), 4, padding=2)),
    ("avg-divisor-zero", lambda L: L.nn.functional.avg_pool3d(
        _ones(L, 1, 2, 3, 3, 3), 2, divisor_override=0)),
    ("avg-stride-zero", lambda L: L.nn.functional.avg_pool3d(_ones(L, 1, 2, 3, 3, 3), 2, 0)),
    ("avg-kernel-length", lambda L: L.nn.functional.avg_pool3d(_ones(L, 1, 2, 3, 3, 3),
                                                                (2, 2))),
    ("avg-stride-length", lambda L: L.nn.functional.avg_pool3d(_ones(L, 1, 2, 3, 3, 3),
                                                                2, (2, 2))),
    ("avg-padding-length", lambda L: L.nn.functional.avg_pool3d(_ones(L, 1, 2, 3, 3, 3),
                                                                 2, 2, (0, 0))),
    ("adaptive-avg-dims", lambda L: L.nn.functional.adaptive_avg_pool3d(_ones(L, 2, 3), 2)),
    ("adaptive-max-dims", lambda L: L.nn.functional.adaptive_max_pool3d(_ones(L, 2, 3), 2)),
    ("adaptive-avg-size", lambda L: L.nn.functional.adaptive_avg_pool3d(
        _ones(L, 1, 2, 3, 3, 3), (2, 2))),
    ("adaptive-max-size", lambda L: L.nn.functional.adaptive_max_pool3d(
        _ones(L, 1, 2, 3, 3, 3), (2, 2))),
    ("max-2d-kernel-length", lambda L: L.nn.functional.max_pool2d(_ones(L, 2, 4, 4),
                                                                   (2, 2, 2))),
    ("max-2d-stride-negative", lambda L: L.nn.functional.max_pool2d(_ones(L, 2, 4, 4), 2, -1)),
    ("avg-2d-kernel-negative", lambda L: L.nn.functional.avg_pool2d(_ones(L, 2, 4, 4), -1)),
    ("avg-2d-padding-length", lambda L: L.nn.functional.avg_pool2d(_ones(L, 2, 4, 4), 2, 2,
                                                                    (0, 0, 0))),
    ("adaptive-max-2d-dims", lambda L: L.nn.functional.adaptive_max_pool2d(_ones(L, 3), 2)),
    ("adaptive-max-2d-size", lambda L: L.nn.functional.adaptive_max_pool2d(
        _ones(L, 1, 2, 4, 4), (2, 2, 2))),
    ("adaptive-avg-2d-size", lambda L: L.nn.functional.adaptive_avg_pool2d(
        _ones(L, 1, 2, 4, 4), (2, 2, 2))),
    ("adaptive-max-size-long", lambda L: L.nn.functional.adaptive_max_pool2d(
        _ones(L, 2, 4, 4), (2, 2, 2))),
    ("adaptive-avg-size-long", lambda L: L.nn.functional.adaptive_avg_pool3d(
        _ones(L, 2, 4, 4), (2, 2, 2))),
]


@pytest.mark.parametrize("call", [case[1] for case in ERRORS], ids=[case[0] for case in ERRORS])
def test_errors_in_torchs_words(call):
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(tg)
    # ours may say more (which input) after torch's words
    assert str(ours.value).startswith(str(theirs.value).splitlines()[0].removesuffix(
        " for input"))
