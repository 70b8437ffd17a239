"""Gradient cases for nn's ops (``tracegrad/ops/activation.py``, ``convolution.py``, ...),
merged into ``test_ops_gradients.CASES``: each op is checked against finite differences
(first and second derivatives) and, with torch installed, against torch.

Same shape as ``test_ops_gradients.Case``: ``call(lib, *inputs)`` runs with ``lib`` being
tracegrad or torch on the same float64 inputs.
"""

from __future__ import annotations

import numpy as np
from op_case import Case

from tracegrad.ops import activation, loss, normalization, recurrent, resample, rrelu, unary


def _F(lib):
    return lib.nn.functional


def _statistics(x, eps=1e-5, dim=-1):
    """The mean and inverse std of x's rows, as layer_norm's forward keeps them. (Made from
    x with graph: the node's gradient for x already includes their dependence on x -- its
    edges for them get none -- and the node's own backward, differentiated again, reads
    them as the functions of x they are.)"""
    mean = x.mean(dim, keepdim=True)
    variance = ((x - mean) ** 2).mean(dim, keepdim=True)
    if dim == 0:  # batch_norm's, one per channel
        return mean.reshape(-1), ((variance + eps) ** -0.5).reshape(-1)
    return mean, (variance + eps) ** -0.5


def _batch_norm_train(L, x, w, b):
    mean, var = L.zeros(3, dtype=L.float64), L.ones(3, dtype=L.float64)
    return _F(L).batch_norm(x, mean, var, w, b, training=True, momentum=0.3)


def _batch_norm_eval(L, x, w, b):
    mean = L.tensor([0.1, -0.2, 0.3], dtype=L.float64)
    var = L.tensor([1.5, 0.5, 2.0], dtype=L.float64)
    return _F(L).batch_norm(x, mean, var, w, b, training=False)


def _lstm_layer(L, x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse=False):
    return recurrent.MkldnnRnnLayer.apply(x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse=reverse)


# seq 3, batch 2, input 3, hidden 2: every part of the cell at half the finite differences
# of hidden 3 (input and hidden sizes differ, so a swapped weight fails on shapes)
_LSTM_SHAPES = ((3, 2, 3), (8, 3), (8, 2), (8,), (8,), (2, 2), (2, 2))
_MAP = (resample.pad_map("reflect", 4, 2, 1), resample.linear_map(3, 5, None, False, "float64"))


def _pooled_indices(L, *shape):
    """A max pool's indices (kernel 2) of a fixed input of ``shape``: what max_unpool takes."""
    x = L.arange(float(np.prod(shape))).reshape(*shape).sin()
    pool = {2: _F(L).max_pool1d, 3: _F(L).max_pool1d, 4: _F(L).max_pool2d,
            5: _F(L).max_pool3d}[len(shape)]
    return pool(x, 2, return_indices=True)[1]


def _binary(L, x, t):
    return _F(L).binary_cross_entropy(x.sigmoid(), t.sigmoid())


NN_CASES: dict[str, list] = {
    # -- activations --------------------------------------------------------------------
    "LeakyRelu": [Case(((3, 4),), lambda L, x: _F(L).leaky_relu(x, 0.2))],
    "Elu": [Case(((3, 4),), lambda L, x: _F(L).elu(x, 0.7)),
            Case(((3, 4),), lambda L, x: _F(L).selu(x))],
    "Celu": [Case(((3, 4),), lambda L, x: _F(L).celu(x, 1.5))],
    "Gelu": [Case(((3, 4),), lambda L, x: _F(L).gelu(x * 2)),
             Case(((3, 4),), lambda L, x: _F(L).gelu(x * 2, approximate="tanh"))],
    # the backward nodes of piecewise-linear activations (create_graph): the mask in grad,
    # zero in self (inputs away from the kinks)
    "ThresholdBackward": [Case(((3, 4), (3, 4)), lambda L, g, x: activation.ThresholdBackward
                               .apply(g, x, 0.1), in_torch=False)],
    # training with lower == upper: the drawn slopes are known (in evaluation torch's
    # saved noise is memory it never writes: its values are compared in test_nn_more_layers)
    "RreluWithNoise": [Case(((3, 4),), lambda L, x: _F(L).rrelu(x, 0.2, 0.2, training=True))],
    "RreluWithNoiseBackward": [Case(((3, 4), (3, 4)), lambda L, g, x: rrelu
                                    .RreluWithNoiseBackward.apply(g, x, None, 0.1, 0.3, False),
                                    in_torch=False)],
    "LeakyReluBackward": [Case(((3, 4), (3, 4)), lambda L, g, x: activation.LeakyReluBackward
                               .apply(g, x, 0.2), in_torch=False)],
    "HardtanhBackward": [Case(((3, 4), (3, 4)), lambda L, g, x: activation.HardtanhBackward
                              .apply(g, x, -0.5, 0.5), in_torch=False)],
    "TanhBackward": [Case(((3, 4), (3, 4)), lambda L, g, y: unary.TanhBackward.apply(
        g, y.tanh()), in_torch=False)],
    "SigmoidBackward": [Case(((3, 4), (3, 4)), lambda L, g, y: unary.SigmoidBackward.apply(
        g, y.sigmoid()), in_torch=False)],
    "SoftmaxBackwardData": [Case(((3, 4), (3, 4)), lambda L, g, y: unary.SoftmaxBackwardData
                                 .apply(g, y.softmax(1), 1, 1), in_torch=False)],
    "LogSoftmaxBackwardData": [Case(((3, 4), (3, 4)), lambda L, g, y: unary
                                    .LogSoftmaxBackwardData.apply(g, y.log_softmax(1), 1, 1),
                                    in_torch=False)],
    "EluBackward": [Case(((3, 4), (3, 4)), lambda L, g, x: activation.EluBackward.apply(
        g, x, 0.7, 1.2, 0.9), in_torch=False)],
    "SoftplusBackward": [Case(((3, 4), (3, 4)), lambda L, g, x: activation.SoftplusBackward
                              .apply(g, x * 3, 2.0, 4.0), in_torch=False)],
    "HardswishBackward": [Case(((3, 4), (3, 4)), lambda L, g, x: activation.HardswishBackward
                               .apply(g, x * 2), in_torch=False)],
    "LogSigmoidBackward": [Case(((3, 4), (3, 4)), lambda L, g, x: activation
                                .LogSigmoidBackward.apply(g, x * 2), in_torch=False)],
    "GluBackward": [Case(((3, 2), (3, 4)), lambda L, g, x: activation.GluBackward.apply(
        g, x, 1), in_torch=False),
        Case(((2, 3), (4, 3)), lambda L, g, x: activation.GluBackward.apply(g, x, -2),
             in_torch=False)],
    "SmoothL1LossBackward": [Case(((), (3, 4), (3, 4)), lambda L, g, x, t: loss
                                  .SmoothL1LossBackward.apply(g, x, t, "mean", 0.7),
                                  in_torch=False),
                             Case(((3, 4), (3, 4), (3, 4)), lambda L, g, x, t: loss
                                  .SmoothL1LossBackward.apply(g, x, t, "none", 1.5),
                                  in_torch=False)],
    "HuberLossBackward": [Case(((), (3, 4), (3, 4)), lambda L, g, x, t: loss
                               .HuberLossBackward.apply(g, x, t, "sum", 0.8), in_torch=False),
                          Case(((3, 4), (3, 4), (3, 4)), lambda L, g, x, t: loss
                               .HuberLossBackward.apply(g, x, t, "none", 1.2), in_torch=False)],
    "NativeLayerNormBackward": [Case(((3, 4), (3, 4), (4,)), lambda L, g, x, w: normalization
                                     .NativeLayerNormBackward.apply(g, x, *_statistics(x), w,
                                                                    w * 0, (4,)),
                                     in_torch=False),
                                Case(((3, 4), (3, 4)), lambda L, g, x: normalization
                                     .NativeLayerNormBackward.apply(g, x, *_statistics(x),
                                                                    None, None, (4,)),
                                     in_torch=False)],
    "NativeBatchNormBackward": [Case(((3, 4), (3, 4), (4,)), lambda L, g, x, w: normalization
                                     .NativeBatchNormBackward.apply(
                                         g, x, w, None, None, *_statistics(x, dim=0), True,
                                         1e-5), in_torch=False),
                                Case(((3, 4), (3, 4), (4,)), lambda L, g, x, w: normalization
                                     .NativeBatchNormBackward.apply(
                                         g, x, w, L.full((4,), 0.5, dtype=L.float64),
                                         L.full((4,), 2.0, dtype=L.float64), L.zeros(0),
                                         L.zeros(0), False, 1e-5), in_torch=False)],
    "SoftshrinkBackward": [Case(((3, 4), (3, 4)), lambda L, g, x: activation
                                .SoftshrinkBackward.apply(g, x * 2, 0.5), in_torch=False)],
    "HardshrinkBackward": [Case(((3, 4), (3, 4)), lambda L, g, x: activation
                                .HardshrinkBackward.apply(g, x * 2, 0.5), in_torch=False)],
    "HardsigmoidBackward": [Case(((3, 4), (3, 4)), lambda L, g, x: activation
                                 .HardsigmoidBackward.apply(g, x * 4), in_torch=False,
                                 no_derivative=True)],
    "GeluBackward": [Case(((3, 4), (3, 4)), lambda L, g, x: activation.GeluBackward.apply(
        g, x, "none"), in_torch=False),
        Case(((3, 4), (3, 4)), lambda L, g, x: activation.GeluBackward.apply(g, x, "tanh"),
             in_torch=False)],
    "Softplus": [Case(((3, 4),), lambda L, x: _F(L).softplus(x * 3, beta=2.0, threshold=4.0))],
    "Hardtanh": [Case(((3, 4),), lambda L, x: _F(L).hardtanh(x, -0.5, 0.8)),
                 Case(((3, 4),), lambda L, x: _F(L).relu6(x * 4 + 3))],
    "Hardsigmoid": [Case(((3, 4),), lambda L, x: _F(L).hardsigmoid(x * 4),
                         no_second_derivative=True)],
    "Hardswish": [Case(((3, 4),), lambda L, x: _F(L).hardswish(x * 4))],
    "Mish": [Case(((3, 4),), lambda L, x: _F(L).mish(x * 2))],
    "LogSigmoid": [Case(((3, 4),), lambda L, x: _F(L).logsigmoid(x * 3))],
    "Glu": [Case(((3, 4),), lambda L, x: _F(L).glu(x)),
            Case(((4, 3),), lambda L, x: _F(L).glu(x, 0))],
    "PreluKernel": [Case(((2, 3, 4), (3,)), lambda L, x, w: _F(L).prelu(x, w)),
                    Case(((3, 4), (1,)), lambda L, x, w: _F(L).prelu(x, w))],
    "Threshold": [Case(((3, 4),), lambda L, x: _F(L).threshold(x, 0.1, -2.0))],
    "Softshrink": [Case(((3, 4),), lambda L, x: _F(L).softshrink(x, 0.3))],
    "Hardshrink": [Case(((3, 4),), lambda L, x: _F(L).hardshrink(x, 0.3))],
    # -- convolution --------------------------------------------------------------------
    "Convolution": [
        Case(((1, 2, 5, 4), (3, 2, 3, 2), (3,)),
             lambda L, x, w, b: _F(L).conv2d(x, w, b, stride=(2, 1), padding=1)),
        Case(((1, 4, 5, 5), (4, 2, 3, 3)),
             lambda L, x, w: _F(L).conv2d(x, w, None, padding=2, dilation=2, groups=2)),
        Case(((2, 2, 9), (3, 2, 4), (3,)),
             lambda L, x, w, b: _F(L).conv1d(x, w, b, stride=2, padding="valid")),
        Case(((1, 2, 5, 5), (3, 2, 2, 2)), lambda L, x, w: _F(L).conv2d(x, w, padding="same")),
        Case(((1, 4, 3, 3), (4, 2, 3, 3), (4,)),
             lambda L, x, w, b: _F(L).conv_transpose2d(x, w, b, stride=2, padding=1,
                                                       output_padding=1, groups=2)),
    ],
    "Im2Col": [Case(((1, 2, 4, 5),), lambda L, x: _F(L).unfold(x, (2, 3), padding=1,
                                                              stride=(2, 1)))],
    "Col2Im": [Case(((2, 12, 9),), lambda L, c: _F(L).fold(c, (5, 4), 2, stride=(2, 1),
                                                           padding=(1, 0)))],
    # -- pooling and resampling -----------------------------------------------------------
    "MaxPool2DWithIndices": [
        Case(((1, 2, 5, 6),), lambda L, x: _F(L).max_pool2d(x, 3, stride=2, padding=1)),
        Case(((2, 3, 5, 5),), lambda L, x: _F(L).max_pool2d(x, 2, ceil_mode=True)),
        Case(((2, 3, 7),), lambda L, x: _F(L).max_pool1d(x, 3, stride=2, dilation=2))],
    "MaxPool3DWithIndices": [
        Case(((1, 2, 4, 5, 3),), lambda L, x: _F(L).max_pool3d(x, 3, stride=2, padding=1)),
        Case(((2, 3, 3, 4),), lambda L, x: _F(L).max_pool3d(
            x, (2, 3, 2), stride=(1, 2, 2), dilation=(2, 1, 1), ceil_mode=True))],
    "AdaptiveMaxPool2D": [Case(((2, 3, 7, 5),), lambda L, x: _F(L).adaptive_max_pool2d(
        x, (3, 2)))],
    "AdaptiveMaxPool3D": [Case(((1, 2, 5, 3, 4),), lambda L, x: _F(L).adaptive_max_pool3d(
        x, (2, 2, 3)))],
    "ChannelShuffle": [Case(((2, 6, 2, 3),), lambda L, x: _F(L).channel_shuffle(x, 3)),
                       Case(((4, 2, 3),), lambda L, x: _F(L).channel_shuffle(x, 2))],
    "MaxUnpool2D": [
        Case(((1, 2, 2, 3),), lambda L, x: _F(L).max_unpool2d(x, _pooled_indices(L, 1, 2, 4, 6), 2)),
        Case(((2, 3),), lambda L, x: _F(L).max_unpool1d(x, _pooled_indices(L, 2, 6), 2))],
    "MaxUnpool3D": [Case(((1, 2, 2, 1, 2),), lambda L, x: _F(L).max_unpool3d(
        x, _pooled_indices(L, 1, 2, 4, 3, 4), 2, output_size=(5, 3, 4)))],
    "AvgPool3D": [
        Case(((1, 2, 4, 5, 3),), lambda L, x: _F(L).avg_pool3d(x, 3, stride=2, padding=1)),
        Case(((2, 3, 4, 3),), lambda L, x: _F(L).avg_pool3d(
            x, 2, ceil_mode=True, count_include_pad=False, padding=1)),
        Case(((1, 1, 3, 4, 4),), lambda L, x: _F(L).avg_pool3d(x, 3, 1, 1, divisor_override=2))],
    "AdaptiveAvgPool3D": [Case(((1, 2, 5, 3, 4),), lambda L, x: _F(L).adaptive_avg_pool3d(
        x, (2, None, 3)))],
    "AvgPool2D": [
        Case(((2, 3, 6, 7),), lambda L, x: _F(L).avg_pool2d(x, 3, stride=2, padding=1)),
        Case(((1, 2, 5, 5),), lambda L, x: _F(L).avg_pool2d(
            x, 2, ceil_mode=True, count_include_pad=False)),
        Case(((1, 2, 4, 4),), lambda L, x: _F(L).avg_pool2d(x, 3, 1, 1, divisor_override=2))],
    "AdaptiveAvgPool2D": [Case(((2, 3, 7, 5),), lambda L, x: _F(L).adaptive_avg_pool2d(
        x, (3, 2))), Case(((2, 3, 9),), lambda L, x: _F(L).adaptive_avg_pool1d(x, 4))],
    "ReflectionPad1D": [Case(((2, 3, 5),), lambda L, x: _F(L).pad(x, (2, 3), mode="reflect"))],
    "ReflectionPad2D": [Case(((2, 3, 4, 5),), lambda L, x: _F(L).pad(x, (1, 2, 3, 0),
                                                                     mode="reflect"))],
    "ReflectionPad3D": [Case(((1, 2, 3, 3, 4),), lambda L, x: _F(L).pad(
        x, (1, 1, 0, 2, 1, 0), mode="reflect"))],
    "ReplicationPad1D": [Case(((2, 5),), lambda L, x: _F(L).pad(x, (3, 1), mode="replicate"))],
    "ReplicationPad2D": [Case(((2, 3, 4, 5),), lambda L, x: _F(L).pad(x, (2, 1, 0, 3),
                                                                      mode="replicate"))],
    "ReplicationPad3D": [Case(((1, 1, 2, 3, 3),), lambda L, x: _F(L).pad(
        x, (1, 0, 2, 1, 1, 1), mode="replicate"))],
    "UpsampleNearest1D": [Case(((2, 3, 4),), lambda L, x: _F(L).interpolate(x, size=7))],
    "UpsampleNearest2D": [Case(((1, 2, 3, 4),), lambda L, x: _F(L).interpolate(
        x, scale_factor=(2, 1.5)))],
    "UpsampleNearestExact1D": [Case(((2, 3, 4),), lambda L, x: _F(L).interpolate(
        x, size=6, mode="nearest-exact"))],
    "UpsampleNearestExact2D": [Case(((1, 2, 3, 4),), lambda L, x: _F(L).interpolate(
        x, size=(5, 7), mode="nearest-exact"))],
    "UpsampleLinear1D": [Case(((2, 3, 4),), lambda L, x: _F(L).interpolate(
        x, size=7, mode="linear")), Case(((2, 3, 4),), lambda L, x: _F(L).interpolate(
            x, scale_factor=2.5, mode="linear", align_corners=True))],
    "UpsampleBilinear2D": [Case(((1, 2, 3, 4),), lambda L, x: _F(L).interpolate(
        x, scale_factor=2, mode="bilinear")), Case(((1, 2, 3, 4),), lambda L, x: _F(
            L).interpolate(x, size=(5, 6), mode="bilinear", align_corners=True))],
    "Resample": [Case(((2, 4, 3),), lambda L, x: resample.Resample.apply(x, _MAP),
                      in_torch=False)],
    "ResampleBackward": [Case(((2, 7, 5),), lambda L, g: resample.ResampleBackward.apply(
        g, _MAP, resample.Resample), in_torch=False)],
    "PixelShuffle": [Case(((2, 8, 2, 3),), lambda L, x: _F(L).pixel_shuffle(x, 2))],
    "PixelUnshuffle": [Case(((1, 2, 4, 6),), lambda L, x: _F(L).pixel_unshuffle(x, 2))],
    "ConstantPadNd": [Case(((2, 3, 4),), lambda L, x: _F(L).pad(x, (1, 2, -1, 1), value=0.5)),
                      Case(((2, 3, 4),), lambda L, x: _F(L).pad(x, (0, 0, 0, 0, 2, 1)))],
    # -- normalization --------------------------------------------------------------------
    "NativeBatchNorm": [Case(((3, 3, 2, 2), (3,), (3,)), _batch_norm_train),
                        Case(((4, 3), (3,), (3,)), _batch_norm_eval),
                        Case(((4, 3, 5),), lambda L, x: _F(L).instance_norm(x))],
    "NativeLayerNorm": [Case(((2, 3, 4), (3, 4), (3, 4)),
                             lambda L, x, w, b: _F(L).layer_norm(x, (3, 4), w, b)),
                        Case(((3, 5),), lambda L, x: _F(L).layer_norm(x, (5,)))],
    "NativeGroupNorm": [Case(((2, 4, 3), (4,), (4,)),
                             lambda L, x, w, b: _F(L).group_norm(x, 2, w, b))],
    # -- embedding, recurrence ------------------------------------------------------------
    # padding_idx and scale_grad_by_freq change the gradient on purpose (no longer the
    # derivative): tests/test_nn_functional.py compares them with torch instead.
    "Embedding": [Case(((5, 3),), lambda L, w: _F(L).embedding(L.tensor([[0, 2, 2], [4, 1, 0]]),
                                                               w))],
    "EmbeddingBag": [
        Case(((6, 3),), lambda L, w: _F(L).embedding_bag(
            L.tensor([0, 2, 2, 5, 1, 0, 3]), w, L.tensor([0, 3, 3]))),
        Case(((6, 3),), lambda L, w: _F(L).embedding_bag(
            L.tensor([[0, 2, 4], [5, 1, 2]]), w, mode="max", padding_idx=2)),
        Case(((6, 3), (7,)), lambda L, w, p: _F(L).embedding_bag(
            L.tensor([0, 2, 2, 5, 1, 0, 3]), w, L.tensor([0, 2, 6, 7]), mode="sum",
            per_sample_weights=p, include_last_offset=True))],
    "Pdist": [Case(((4, 3),), lambda L, x: _F(L).pdist(x)),
              Case(((4, 3),), lambda L, x: _F(L).pdist(x, 1.5)),
              Case(((3, 2),), lambda L, x: _F(L).pdist(x, 1)),
              Case(((3, 4),), lambda L, x: _F(L).pdist(x, float("inf"))),
              Case(((5, 2),), lambda L, x: _F(L).pdist(x, 3))],
    "MkldnnRnnLayer": [Case(_LSTM_SHAPES, _lstm_layer, in_torch=False),
                       Case(_LSTM_SHAPES, lambda L, *a: _lstm_layer(L, *a, reverse=True),
                            in_torch=False)],
    # -- losses ---------------------------------------------------------------------------
    "BinaryCrossEntropy": [Case(((3, 4), (3, 4)), _binary),
                           Case(((5,), (5,)), lambda L, x, t: _F(L).binary_cross_entropy(
                               x.sigmoid(), t.sigmoid(), L.tensor(np.linspace(0.5, 1.5, 5)),
                               reduction="sum"))],
    "BinaryCrossEntropyWithLogits": [
        Case(((3, 4), (3, 4)), lambda L, x, t: _F(L).binary_cross_entropy_with_logits(
            x * 3, t.sigmoid())),
        Case(((3, 4), (3, 4)), lambda L, x, t: _F(L).binary_cross_entropy_with_logits(
            x * 3, t.sigmoid(), pos_weight=L.tensor([0.5, 1.0, 2.0, 3.0], dtype=L.float64),
            reduction="none"))],
    "SmoothL1Loss": [Case(((3, 4), (3, 4)), lambda L, x, t: _F(L).smooth_l1_loss(
        x, t, beta=0.7)), Case(((3, 4), (4,)), lambda L, x, t: _F(L).smooth_l1_loss(
            x, t.expand(3, 4), reduction="none"))],
    "MultiMarginLoss": [
        Case(((3, 4),), lambda L, x: _F(L).multi_margin_loss(x, L.tensor([0, 3, 1])),
             no_second_derivative=True),
        Case(((3, 4),), lambda L, x: _F(L).multi_margin_loss(
            x, L.tensor([2, 3, 1]), p=2, margin=0.7, weight=L.tensor(
                [0.5, 1.0, 2.0, 0.3], dtype=L.float64), reduction="none"),
             no_second_derivative=True)],
    "MultiMarginLossBackward": [Case(((), (3, 4)), lambda L, g, x: loss.MultiMarginLossBackward
                                     .apply(g, x, L.tensor([0, 3, 1]), 1, 1.0, None, "sum"),
                                     in_torch=False, no_derivative=True)],
    "MultilabelMarginLoss": [
        Case(((3, 4),), lambda L, x: _F(L).multilabel_margin_loss(
            x, L.tensor([[0, 3, -1, 1], [2, 2, 0, -1], [-1, 0, 0, 0]])),
             no_second_derivative=True),
        Case(((4,),), lambda L, x: _F(L).multilabel_margin_loss(
            x, L.tensor([1, 2, -1, 0]), reduction="none"), no_second_derivative=True)],
    "MultilabelMarginLossBackward": [Case(((3,), (3, 4)), lambda L, g, x: (
        loss.MultilabelMarginLossBackward.apply(
            g, x, L.tensor([[1.0, 0, 0, 1], [0, 0, 1, 0], [0, 0, 0, 0]], dtype=L.float64),
            (np.array([[True, True, False, False]] * 3), np.array([[0, 3, -1, 0]] * 3)),
            "none")), in_torch=False, no_derivative=True)],
    "SoftMarginLoss": [Case(((3, 4),), lambda L, x: _F(L).soft_margin_loss(
        x * 2, L.tensor(np.sign(np.linspace(-1, 1, 12) + 0.05).reshape(3, 4))))],
    "HuberLoss": [Case(((3, 4), (3, 4)), lambda L, x, t: _F(L).huber_loss(
        x * 2, t, delta=0.8, reduction="sum"))],
}
