"""Every op in ``tracegrad.ops.registry()`` against finite differences, and against torch.

``CASES`` says how to call each op. An op in the registry without a case fails
``test_every_registered_op_has_a_case``, so a new op cannot go untested. Each case is
written once as ``call(lib, *inputs)`` and runs with ``lib = tracegrad`` and, where torch is
installed, ``lib = torch`` on the same float64 data.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from op_case import Case
from op_cases_nn import NN_CASES

import tracegrad as tg
from tracegrad import ops
from tracegrad.ops import arith, indexing, linalg
from tracegrad.ops import shape as shape_ops
from tracegrad.ops.conversion import ToDevice


def _rows(lib):
    return lib.tensor([[0, 2], [1, 3], [3, 0]])


def _copy_into(lib, a, b):
    c = a * 1
    c.copy_(b)
    return c


def _fill(lib, a):
    c = a * 1
    c.fill_(2.0)
    return c + a


def _zero(lib, a):
    c = a * 1
    c.zero_()
    return c + a


def _aten(lib, name: str, op, *args):
    """torch's ``torch.ops.aten.<name>`` (an overload torch's Python API does not reach),
    tracegrad's op that records the same node."""
    if lib is tg:
        return op.apply(*args)
    function = lib.ops.aten
    for part in name.split("."):
        function = getattr(function, part)
    return function(*args)


def _index_put_rows(lib, a, v):
    c = a * 1
    c[lib.tensor([0, 2])] = v
    return c


def _index_put_column(lib, a, v):
    c = a * 1
    c[:, [0]] = v  # a full slice is skipped: index_put_ on c itself
    return c


def _fill_tensor(lib, a, v):
    c = a * 1
    c.fill_(v)
    return c + a


# In-place changes through views: CopySlices on the base, AsStridedBackward0 on the view.
def _setitem_view(lib, a, v):
    c = a * 1
    c[1:3, 0] = v
    return c


def _setitem_iadd(lib, a, v):
    c = a * 1
    c[1] += v  # add_ on the view, then copy_ back through a second view
    return c


def _inplace_on_view(lib, a, w):
    b = a * 1
    b[1:].mul_(w)
    return b


def _inplace_view_of_view(lib, a, w):
    b = a * 1
    v = b.view(12)[2:8].view(2, 3)
    v.add_(w)
    return b, v


def _inplace_transposed(lib, a):
    b = a * 1
    b.t()[0].mul_(2.5)
    return b


def _inplace_saving_output_on_view(lib, a):
    b = a * 1
    b[0].exp_()
    return b


def _inplace_saving_old_self(lib, a, w):
    y = a * 1
    y.mul_(w)  # MulBackward0 needs y's old value: a clone, tied to y's old history
    return y


def _view_read_after_base_changed(lib, a, w):
    b = a * 1
    v = b[1]
    b.mul_(w)  # v's grad_fn is regenerated over b's new history
    return v


def _as_strided_backward_accumulates(lib, a):
    b = a * 1
    e = b[0].expand(3, 4)  # overlapping: its regenerated grad_fn must sum
    b.mul_(2.0)
    return e


def _index_put_mask(lib, a):
    c = a * 2
    c[c > 0] = 0
    return c


CASES: dict[str, list[Case]] = {
    "Abs": [Case(((3, 4),), lambda L, x: x.abs())],
    "Add": [Case(((3, 4), (4,)), lambda L, a, b: a + b),
            Case(((3, 4),), lambda L, a: 2.5 + a)],
    "Cat": [Case(((2, 3), (4, 3)), lambda L, a, b: L.cat([a, b], 0)),
            Case(((2, 3), (2, 1)), lambda L, a, b: L.cat([a, b], dim=-1))],
    "Clamp": [Case(((3, 4),), lambda L, x: x.clamp(-0.5, 0.5)),
              Case(((3, 4),), lambda L, x: x.clamp(max=0.3)),
              Case(((3, 4),), lambda L, x: L.clamp(x, min=-0.2))],
    "ClampTensor": [Case(((3, 4), (4,), (3, 1)), lambda L, x, low, high: x.clamp(low, high)),
                    Case(((3, 4), (3, 4)), lambda L, x, low: L.clamp(x, min=low))],
    "ClampMax": [Case(((3, 4),), lambda L, x: x.clamp_max(0.3))],
    "ClampMin": [Case(((3, 4),), lambda L, x: L.clamp_min(x, -0.2))],
    "ClampMinTensor": [Case(((3, 4), (4,)), lambda L, x, low: x.clamp_min(low))],
    "ClampMaxTensor": [Case(((3, 4), (3, 1)), lambda L, x, high: L.clamp_max(x, high))],
    "Clone": [Case(((3, 4),), lambda L, x: x.clone())],
    "Copy": [Case(((3, 4), (4,)), _copy_into)],
    "Cos": [Case(((3, 4),), lambda L, x: x.cos())],
    "Div": [Case(((3, 4), (3, 1)), lambda L, a, b: a / b, positive=(1,)),
            Case(((3,),), lambda L, b: b / 2.0, positive=(0,))],
    "Dot": [Case(((5,), (5,)), lambda L, a, b: L.dot(a, b))],
    "Exp": [Case(((3, 4),), lambda L, x: x.exp())],
    "Alias": [Case(((3, 4),), lambda L, x: x[...])],
    "AsStrided": [Case(((3, 4),), lambda L, x: x.as_strided((2, 2), (1, 2), 1)),
                  Case(((3, 4), (3, 4)), _view_read_after_base_changed),
                  Case(((3, 4),), _as_strided_backward_accumulates)],
    "Diagonal": [Case(((3, 4),), lambda L, x: x.diagonal()),
                 Case(((3, 4),), lambda L, x: x.diagonal(1)),
                 Case(((2, 3, 4),), lambda L, x: L.diagonal(x, -1, 0, 2)),
                 Case(((2, 3, 4),), lambda L, x: L.diagonal(x, 1, 1, 2))],
    "DiagonalBackward": [Case(((3,),), lambda L, g: shape_ops.DiagonalBackward.apply(
        g, (3, 4), 1, 0, 1), in_torch=False)],
    "Expand": [Case(((3, 1),), lambda L, x: x.expand(2, 3, 4))],
    "Fill": [Case(((3, 4),), _fill)],
    "FillTensor": [Case(((3, 4), ()), _fill_tensor)],
    "Gather": [Case(((3, 4),), lambda L, x: x.gather(1, L.tensor([[0, 0], [1, 3], [2, 1]])))],
    "Index": [Case(((4, 3),), lambda L, x: x[L.tensor([0, 2, 2])]),
              Case(((4, 3),), lambda L, x: x[x > 0]),
              Case(((4, 3),), lambda L, x: x[[0, 3, 3], [1, 2, 2]])],
    # the backward of select and slice as nodes (create_graph): torch's ops of those names
    "SelectBackward": [Case(((3,),), lambda L, g: _aten(
        L, "select_backward", indexing.SelectBackward, g, (3, 4), 1, -2))],
    "SliceBackward": [Case(((2, 4),), lambda L, g: _aten(
        L, "slice_backward", indexing.SliceBackward, g, (3, 4), 0, 1, 3, 1))],
    "IndexAccumulate": [Case(((3, 2),), lambda L, g: indexing.IndexAccumulate.apply(
        g, shape=(4, 2), index=np.array([0, 2, 2])), in_torch=False)],
    # indexing's backward under create_graph: torch's zeros.index_put_(..., accumulate=True)
    "IndexPutImpl": [Case(((3, 2),), lambda L, g: indexing._index_backward(
        g, (4, 2), np.array([0, 2, 2])) if L is tg else L.ops.aten._index_put_impl_(
        L.zeros(4, 2, dtype=g.dtype), [L.tensor([0, 2, 2])], g, True))],
    "IndexPut": [Case(((4, 3), (2, 3)), _index_put_rows),
                 Case(((4, 3), (4, 1)), _index_put_column),
                 Case(((4, 3),), _index_put_mask)],
    "Log": [Case(((3, 4),), lambda L, x: x.log(), positive=(0,))],
    "LogSoftmax": [Case(((3, 4),), lambda L, x: x.log_softmax(dim=1)),
                   Case(((3, 4),), lambda L, x: L.log_softmax(x, 0))],
    "MaskedFill": [Case(((3, 4),), lambda L, x: x.masked_fill(
        L.tensor([True, False, False, True]), 0.5))],
    "MaskedFillTensor": [Case(((3, 4), ()), lambda L, x, v: x.masked_fill(
        L.tensor([True, False, False, True]), v))],
    "SqueezeInPlace": [Case(((4,), (4, 3)), lambda L, a, b: a @ b)],
    "Bmm": [Case(((2, 3, 4), (2, 4, 5)), lambda L, a, b: L.bmm(a, b))],
    "MaxAll": [Case(((3, 4),), lambda L, x: x.max())],
    "MaxDim": [Case(((3, 4),), lambda L, x: L.max(x, 1)),
               Case(((3, 4),), lambda L, x: x.max(dim=0, keepdim=True))],
    "Maximum": [Case(((3, 4), (4,)), lambda L, a, b: L.maximum(a, b))],
    "Mean": [Case(((2, 3, 4),), lambda L, x: x.mean(1)),
             Case(((2, 3, 4),), lambda L, x: x.mean((0, 2), keepdim=True))],
    "MeanAll": [Case(((3, 4),), lambda L, x: x.mean())],
    "MinAll": [Case(((3, 4),), lambda L, x: x.min())],
    "MinDim": [Case(((3, 4),), lambda L, x: L.min(x, -1, keepdim=True))],
    "Minimum": [Case(((3, 4), (3, 4)), lambda L, a, b: L.minimum(a, b))],
    "Mm": [Case(((3, 4), (4, 2)), lambda L, a, b: a.mm(b))],
    "Mul": [Case(((3, 4), (3, 1)), lambda L, a, b: a * b),
            Case(((3, 4),), lambda L, a: a * 3.0)],
    "Mv": [Case(((3, 4), (4,)), lambda L, a, b: a @ b)],
    # torch's Scalar overloads, as its own C++ records them (MulBackward1, ...)
    "MulScalar": [Case(((3, 4),), lambda L, x: _aten(L, "mul.Scalar", arith.MulScalar, x, 0.5))],
    "DivScalar": [Case(((3, 4),), lambda L, x: _aten(L, "div.Scalar", arith.DivScalar, x, 4))],
    "AddScalar": [Case(((3, 4),), lambda L, x: _aten(L, "add.Scalar", arith.AddScalar, x, 2.5))],
    "SubScalar": [Case(((3, 4),), lambda L, x: _aten(L, "sub.Scalar", arith.SubScalar, x, 1))],
    "Neg": [Case(((3, 4),), lambda L, x: -x)],
    "Permute": [Case(((2, 3, 4),), lambda L, x: x.permute(2, 0, 1))],
    "Pow": [Case(((3, 4), (3, 4)), lambda L, a, b: a ** b, positive=(0,))],
    "RPow": [Case(((3, 4),), lambda L, b: 2.0 ** b), Case(((3, 4),), lambda L, b: L.pow(1.5, b)),
             Case(((3, 4),), lambda L, b: L.pow(3.0, b))],
    "PowScalar": [Case(((3, 4),), lambda L, x: x ** 3),
                  Case(((3, 4),), lambda L, x: x.pow(0.5), positive=(0,))],
    "RSub": [Case(((3, 4),), lambda L, x: 1.0 - x),
             Case(((3, 4),), lambda L, x: L.rsub(x, 2.0, alpha=3))],
    "RSubTensor": [Case(((3, 4), (4,)), lambda L, a, b: L.rsub(a, b, alpha=2)),
                   Case(((3, 1), (3, 4)), lambda L, a, b: a.__rsub__(b))],
    "Relu": [Case(((3, 4),), lambda L, x: x.relu())],
    "Repeat": [Case(((2, 3),), lambda L, x: x.repeat(2, 1, 2))],
    "Scatter": [Case(((4, 4), (3, 2)), lambda L, x, src: x.scatter(1, _rows(L), src))],
    "ScatterValue": [Case(((4, 4),), lambda L, x: x.scatter(1, _rows(L), 1.5))],
    "ScatterAdd": [Case(((4, 4), (3, 2)), lambda L, x, src: x.scatter_add(
        1, L.tensor([[0, 0], [1, 3], [3, 3]]), src))],
    "ScatterInto": [Case(((3, 2),), lambda L, src: indexing.ScatterInto.apply(
        src, shape=(3, 4), dim=1, index=np.array([[0, 0], [1, 3], [3, 2]]), accumulate=True),
        in_torch=False)],
    "ScatterPlaced": [Case(((3, 2),), lambda L, src: indexing.ScatterPlaced.apply(
        src, shape=(3, 4), dim=1, index=np.array([[0, 1], [1, 3], [3, 2]]), accumulate=False),
        in_torch=False)],
    "Select": [Case(((3, 4),), lambda L, x: x[1]),
               Case(((2, 3, 4),), lambda L, x: x[:, 2, 1:])],
    "Sigmoid": [Case(((3, 4),), lambda L, x: x.sigmoid())],
    "Silu": [Case(((3, 4),), lambda L, x: L.nn.functional.silu(x * 4))],
    "Sin": [Case(((3, 4),), lambda L, x: L.sin(x))],
    "Split": [Case(((5, 3),), lambda L, x: L.split(x, 2)),
              Case(((5, 3),), lambda L, x: L.chunk(x, 3))],
    "SplitWithSizes": [Case(((5, 3),), lambda L, x: x.split([1, 2], dim=1)),
                       Case(((5, 3),), lambda L, x: x.split_with_sizes([2, 3])),
                       Case(((5, 3),), lambda L, x: L.split_with_sizes(x, [1, 2], 1))],
    "Slice": [Case(((4, 5),), lambda L, x: x[1:, ::2]),
              Case(((4, 5),), lambda L, x: x[None, ..., 1:3])],
    # scaled_dot_product_attention: torch's math path (3-d: SafeSoftmaxBackward0) and its
    # fused CPU kernel (4-d), which has no second derivative in torch
    "SafeSoftmax": [Case(((2, 5, 4), (2, 5, 4), (2, 5, 4)), lambda L, q, k, v:
                         L.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True))],
    "ScaledDotProductFlashAttentionForCpu": [
        Case(((2, 2, 5, 4), (2, 2, 3, 4), (2, 2, 3, 4)), lambda L, q, k, v:
             L.nn.functional.scaled_dot_product_attention(q, k, v), no_second_derivative=True),
        Case(((1, 2, 4, 3), (1, 2, 4, 3), (1, 2, 4, 3)), lambda L, q, k, v:
             L.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.7),
             no_second_derivative=True)],
    # the fused kernel's backward under create_graph: torch defines no derivative of it
    "FlashAttentionBackward": [Case(((1, 2, 4, 3), (1, 2, 4, 3), (1, 2, 4, 3)), lambda L, q, k, v:
                                    L.autograd.grad(L.nn.functional.scaled_dot_product_attention(
                                        q, k, v).pow(2).sum(), q, create_graph=True)[0],
                                    in_torch=False, no_derivative=True)],
    "Softmax": [Case(((3, 4),), lambda L, x: x.softmax(dim=-1)),
                Case(((3, 4),), lambda L, x: L.softmax(x, 0))],
    "Sqrt": [Case(((3, 4),), lambda L, x: x.sqrt(), positive=(0,))],
    "Squeeze": [Case(((3, 1, 4),), lambda L, x: x.squeeze(1))],
    "SqueezeAll": [Case(((3, 1, 4, 1),), lambda L, x: L.squeeze(x))],
    "SqueezeDims": [Case(((3, 1, 4, 1),), lambda L, x: x.squeeze((1, 3)))],
    "StridedRead": [Case(((3, 4),), lambda L, x: shape_ops.StridedRead.apply(
        x, ((3, 4), (1, 3), 0), ((2, 2), (3, 1), 1)), in_torch=False)],
    "StridedScatter": [Case(((3, 4), (2, 2)), lambda L, x, s: shape_ops.StridedScatter.apply(
        x, s, ((3, 4), (4, 1), 0), ((2, 2), (4, 2), 1), False), in_torch=False),
        Case(((2, 4),), lambda L, s: shape_ops.StridedScatter.apply(
            None, s, ((3, 4), (4, 1), 0), ((2, 4), (0, 1), 4), True), in_torch=False)],
    "Stack": [Case(((2, 3), (2, 3)), lambda L, a, b: L.stack([a, b], 1))],
    "Sub": [Case(((3, 4), (4,)), lambda L, a, b: a - b)],
    "Sum": [Case(((2, 3, 4),), lambda L, x: x.sum(1)),
            Case(((2, 3, 4),), lambda L, x: x.sum((0, 2), keepdim=True))],
    "SumAll": [Case(((3, 4),), lambda L, x: x.sum())],
    "T": [Case(((3, 4),), lambda L, x: x.t())],
    "Tanh": [Case(((3, 4),), lambda L, x: x.tanh())],
    "ToDevice": [Case(((3, 4),), lambda L, x: ToDevice.apply(x, device=tg.device("cpu")),
                      in_torch=False)],
    # float32 in the middle: a wider eps keeps the float32 rounding out of the difference.
    "ToDtype": [Case(((3, 4),), lambda L, x: x.float().double(), gradcheck={"eps": 1e-3})],
    "Trace": [Case(((3, 3),), lambda L, x: L.trace(x)), Case(((2, 4),), lambda L, x: L.trace(x))],
    "Transpose": [Case(((2, 3, 4),), lambda L, x: x.transpose(0, 2))],
    "Unbind": [Case(((3, 2),), lambda L, x: x.unbind(1))],
    "UnsafeSplit": [Case(((5, 3),), lambda L, x: x.unsafe_split(2)),
                    Case(((5, 3),), lambda L, x: L.unsafe_chunk(x, 2, 1))],
    "UnsafeSplitWithSizes": [Case(((5, 3),), lambda L, x: x.unsafe_split_with_sizes([4, 1]))],
    "UnsafeView": [Case(((3, 4),), lambda L, x: x.t().reshape(-1)),
                   # matmul folds a batch into one mm (or bmm) and views the result back
                   Case(((2, 3, 4), (4, 5)), lambda L, a, b: a @ b),
                   Case(((4,), (2, 4, 3)), lambda L, a, b: L.matmul(a, b)),
                   Case(((2, 1, 3, 4), (3, 4, 2)), lambda L, a, b: a.matmul(b)),
                   Case(((2, 3, 4), (4,)), lambda L, a, b: a @ b),
                   Case(((3, 4), (2, 4, 5)), lambda L, a, b: (a @ b) * 1)],
    "Unsqueeze": [Case(((3, 4),), lambda L, x: x.unsqueeze(1))],
    # reshape of a tensor that is not contiguous but can be viewed: torch's _reshape_alias
    "ReshapeAlias": [Case(((4, 3),), lambda L, x: x.t().reshape(3, 2, 2)),
                     Case(((3, 1),), lambda L, x: x.expand(3, 4).reshape(3, 2, 2))],
    "View": [Case(((3, 4),), lambda L, x: x.view(12)),
             Case(((3, 4),), lambda L, x: x.view(-1, 2)),
             Case(((3, 4),), lambda L, x: x.reshape(2, 6))],
    "Where": [Case(((3, 4), (3, 4)), lambda L, a, b: L.where(a > 0, a, b)),
              Case(((3, 4),), lambda L, a: L.where(a > 0, a, 0.0))],
    "Zero": [Case(((3, 4),), _zero)],
}

def _unit(x):
    """Values inside (-0.8, 0.8), for functions defined on (-1, 1)."""
    return x.tanh() * 0.8


def _probability(x):
    return x.sigmoid() * 0.9 + 0.05


def _apart(x):
    """Values at least 0.1 away from the integers, where rounding's steps are."""
    return x.floor() + 0.1 + 0.8 * x.frac().abs()


def _inplace(method: str, *args, **kwargs):
    def call(lib, x, *others):
        y = x * 1
        getattr(y, method)(*args, *others, **kwargs)
        return y
    return call


CASES.update({
    "Log2": [Case(((3, 4),), lambda L, x: x.log2(), positive=(0,)),
             Case(((3, 4),), _inplace("log2_"), positive=(0,))],
    "Log10": [Case(((3, 4),), lambda L, x: L.log10(x), positive=(0,))],
    "Log1p": [Case(((3, 4),), lambda L, x: x.log1p(), positive=(0,))],
    "Expm1": [Case(((3, 4),), lambda L, x: L.expm1(x))],
    "Exp2": [Case(((3, 4),), lambda L, x: x.exp2())],
    "Erf": [Case(((3, 4),), lambda L, x: x.erf()), Case(((3, 4),), _inplace("erf_"))],
    "Erfc": [Case(((3, 4),), lambda L, x: L.erfc(x))],
    "Erfinv": [Case(((3, 4),), lambda L, x: _unit(x).erfinv())],
    "Rsqrt": [Case(((3, 4),), lambda L, x: x.rsqrt(), positive=(0,))],
    "Reciprocal": [Case(((3, 4),), lambda L, x: x.reciprocal(), positive=(0,)),
                   Case(((3, 4),), _inplace("reciprocal_"), positive=(0,))],
    "Tan": [Case(((3, 4),), lambda L, x: _unit(x).tan())],
    "Sinh": [Case(((3, 4),), lambda L, x: x.sinh())],
    "Cosh": [Case(((3, 4),), lambda L, x: L.cosh(x)), Case(((3, 4),), _inplace("cosh_"))],
    "Asin": [Case(((3, 4),), lambda L, x: _unit(x).asin())],
    "Acos": [Case(((3, 4),), lambda L, x: L.arccos(_unit(x)))],
    "Atan": [Case(((3, 4),), lambda L, x: x.atan())],
    "Asinh": [Case(((3, 4),), lambda L, x: x.asinh())],
    "Acosh": [Case(((3, 4),), lambda L, x: (x + 1.5).acosh(), positive=(0,))],
    "Atanh": [Case(((3, 4),), lambda L, x: L.atanh(_unit(x)))],
    "Sinc": [Case(((3, 4),), lambda L, x: x.sinc())],
    "Deg2Rad": [Case(((3, 4),), lambda L, x: x.deg2rad())],
    "Rad2Deg": [Case(((3, 4),), lambda L, x: L.rad2deg(x))],
    "Sign": [Case(((3, 4),), lambda L, x: x.sign() * x)],
    "Sgn": [Case(((3, 4),), lambda L, x: L.sgn(x) * x)],
    "Round": [Case(((3, 4),), lambda L, x: _apart(x * 3).round() * x)],
    "RoundDecimals": [Case(((3, 4),), lambda L, x: L.round(_apart(x * 300) / 100, decimals=1))],
    "Floor": [Case(((3, 4),), lambda L, x: _apart(x * 3).floor() + x)],
    "Ceil": [Case(((3, 4),), lambda L, x: _apart(x * 3).ceil() * x)],
    "Trunc": [Case(((3, 4),), lambda L, x: L.trunc(_apart(x * 3)) + x)],
    "Frac": [Case(((3, 4),), lambda L, x: (x * 3).frac())],
    "Logit": [Case(((3, 4),), lambda L, x: _probability(x).logit()),
              Case(((3, 4),), lambda L, x: L.logit(_probability(x), eps=0.2))],
    "NanToNum": [Case(((3, 4),), lambda L, x: (x.log() * 1).nan_to_num(nan=0.5)),
                 Case(((3, 4),), lambda L, x: L.nan_to_num(x, posinf=1.0))],
    "Atan2": [Case(((3, 4), (4,)), lambda L, a, b: L.atan2(a, b)),
              Case(((3, 4), (3, 4)), lambda L, a, b: a.arctan2(b))],
    "Fmod": [Case(((3, 4), (3, 4)), lambda L, a, b: L.fmod(a, b), positive=(1,)),
             Case(((3, 1), (4,)), lambda L, a, b: L.fmod(a, b), positive=(1,))],
    "FmodScalar": [Case(((3, 4),), lambda L, a: a.fmod(0.7))],
    "Remainder": [Case(((3, 4), (3, 4)), lambda L, a, b: a % b, positive=(1,)),
                  Case(((4,), (3, 1)), lambda L, a, b: a % b, positive=(1,))],
    "RemainderScalarSelf": [Case(((3, 4),), lambda L, b: 3.0 % b, positive=(0,),
                                 no_derivative=True)],
    "RemainderScalar": [Case(((3, 4),), lambda L, a: L.remainder(a, 0.7))],
    "FloorDivide": [Case(((3, 4), (3, 4)), lambda L, a, b: a // b, no_derivative=True)],
    "Heaviside": [Case(((3, 4), (4,)), lambda L, a, b: L.heaviside(a, b),
                       no_derivative=True)],
    "DivRounding": [Case(((3, 4), (3, 4)), lambda L, a, b: a.div(b, rounding_mode="floor") * a),
                    Case(((3, 4),), lambda L, a: L.div(a, 0.3, rounding_mode="trunc") + a)],
    "Hypot": [Case(((3, 4), (3, 4)), lambda L, a, b: L.hypot(a, b))],
    "Lerp": [Case(((3, 4), (4,)), lambda L, a, b: L.lerp(a, b, 0.3)),
             Case(((3, 4), (3, 4)), _inplace("lerp_", weight=0.7))],
    "LerpTensor": [Case(((3, 4), (3, 4), (4,)), lambda L, a, b, w: a.lerp(b, w))],
    "Addcmul": [Case(((3, 4), (3, 4), (4,)), lambda L, a, b, c: L.addcmul(a, b, c, value=0.5)),
                Case(((4,), (3, 4), (3, 4)), lambda L, a, b, c: a.addcmul(b, c))],
    "Addcdiv": [Case(((3, 4), (3, 4), (3, 4)), lambda L, a, b, c: a.addcdiv(b, c, value=2),
                     positive=(2,))],
    "Xlogy": [Case(((3, 4), (3, 4)), lambda L, a, b: L.xlogy(a, b), positive=(1,))],
    "XlogyScalarSelf": [Case(((3, 4),), lambda L, b: L.xlogy(2.0, b), positive=(0,))],
    "XlogyScalarOther": [Case(((3, 4),), lambda L, a: a.xlogy(3.0))],
    "Logaddexp": [Case(((3, 4), (4,)), lambda L, a, b: L.logaddexp(a, b))],
    "Logaddexp2": [Case(((3, 4), (3, 4)), lambda L, a, b: a.logaddexp2(b))],
    "Copysign": [Case(((3, 4), (3, 4)), lambda L, a, b: L.copysign(a, b))],
    "CopysignScalar": [Case(((3, 4),), lambda L, a: a.copysign(-1.0))],
    "Fmax": [Case(((3, 4), (3, 4)), lambda L, a, b: L.fmax(a, b))],
    "Fmin": [Case(((3, 4), (4,)), lambda L, a, b: a.fmin(b))],
})
CASES["Cos"].append(Case(((3, 4),), _inplace("cos_")))
CASES["Sin"].append(Case(((3, 4),), _inplace("sin_")))
CASES["Log"].append(Case(((3, 4),), _inplace("log_"), positive=(0,)))
CASES["Abs"].append(Case(((3, 4),), _inplace("abs_")))
CASES["Sqrt"].append(Case(((3, 4),), _inplace("sqrt_"), positive=(0,)))

def _scatter_reduce_case(kind: str, include_self: bool = True) -> Case:
    def call(L, x, s):
        index = L.tensor([[0, 1, 0, 2], [0, 0, 1, 2]])
        return x.scatter_reduce(0, index, s, reduce=kind, include_self=include_self)
    return Case(((3, 4), (2, 4)), call)


def _sym(L, x):
    """A symmetric positive-definite matrix built from x (so gradients stay symmetric)."""
    return x @ x.mT + L.eye(x.shape[-1], dtype=L.float64) * 3


def _rows_index(lib):
    return lib.tensor([0, 2, 0])


CASES.update({
    # reductions
    "Prod": [Case(((3, 4),), lambda L, x: x.prod(1)),
             Case(((3, 4),), lambda L, x: L.prod(x, 0, keepdim=True))],
    "ProdAll": [Case(((3, 4),), lambda L, x: x.prod()),
                Case(((3, 4),), lambda L, x: (x * (x > 0.3)).prod())],
    "Amax": [Case(((3, 4),), lambda L, x: x.amax(1)),
             Case(((2, 3, 4),), lambda L, x: L.amax(x, (0, 2), keepdim=True))],
    "Amin": [Case(((3, 4),), lambda L, x: x.amin())],
    "Aminmax": [Case(((3, 4),), lambda L, x: L.aminmax(x)),
                Case(((3, 4),), lambda L, x: x.aminmax(dim=1, keepdim=True))],
    "Nansum": [Case(((3, 4),), lambda L, x: x.nansum(1)),
               Case(((3, 4),), lambda L, x: L.nansum(x.sqrt()), positive=(0,))],
    "Var": [Case(((3, 4),), lambda L, x: x.var(1)),
            Case(((3, 4),), lambda L, x: L.var(x, unbiased=False)),
            Case(((2, 3, 4),), lambda L, x: x.var((0, 2), keepdim=True, correction=2))],
    "Std": [Case(((3, 4),), lambda L, x: x.std(0, keepdim=True)),
            Case(((3, 4),), lambda L, x: L.std(x))],
    "VarMean": [Case(((3, 4),), lambda L, x: L.var_mean(x, 1))],
    "StdMean": [Case(((3, 4),), lambda L, x: L.std_mean(x, (0, 1), keepdim=True))],
    "Logsumexp": [Case(((3, 4),), lambda L, x: x.logsumexp(1)),
                  Case(((3, 4),), lambda L, x: L.logsumexp(x, (0, 1), keepdim=True))],
    "MedianAll": [Case(((3, 4),), lambda L, x: x.median())],
    "MedianDim": [Case(((3, 5),), lambda L, x: L.median(x, 1))],
    "NanmedianAll": [Case(((3, 4),), lambda L, x: x.nanmedian())],
    "NanmedianDim": [Case(((3, 4),), lambda L, x: x.nanmedian(0, keepdim=True))],
    "Mode": [Case(((3, 4),), lambda L, x: L.mode(x.round(), 1))],
    "VectorNorm": [Case(((3, 4),), lambda L, x: x.norm()),
                   Case(((3, 4),), lambda L, x: L.linalg.vector_norm(x, 1, dim=1)),
                   Case(((3, 4),), lambda L, x: L.linalg.vector_norm(x, float("inf"))),
                   Case(((3, 4),), lambda L, x: L.norm(x, p=3, dim=0, keepdim=True)),
                   Case(((3, 4),), lambda L, x: L.linalg.norm(x, dim=1))],
    # scans
    "Cumsum": [Case(((3, 4),), lambda L, x: x.cumsum(1)),
               Case(((3, 4),), lambda L, x: L.cumsum(x, dim=0))],
    "Cumprod": [Case(((3, 4),), lambda L, x: x.cumprod(1)),
                Case(((4,),), lambda L, x: (x * L.tensor([1.0, 0.0, 1.0, 1.0],
                                                         dtype=L.float64)).cumprod(0))],
    "Cummax": [Case(((3, 4),), lambda L, x: x.cummax(1))],
    "Cummin": [Case(((3, 4),), lambda L, x: L.cummin(x, 0))],
    "Logcumsumexp": [Case(((3, 4),), lambda L, x: x.logcumsumexp(1))],
    # sorting
    "Sort": [Case(((3, 4),), lambda L, x: x.sort(1)),
             Case(((3, 4),), lambda L, x: L.sort(x, 0, descending=True)),
             Case(((3, 4),), lambda L, x: x.msort())],
    "SortStable": [Case(((3, 4),), lambda L, x: x.sort(stable=True, dim=1))],
    "Topk": [Case(((3, 5),), lambda L, x: x.topk(2)),
             Case(((3, 5),), lambda L, x: L.topk(x, 2, dim=0, largest=False))],
    "Kthvalue": [Case(((3, 5),), lambda L, x: x.kthvalue(2, 1)),
                 Case(((3, 5),), lambda L, x: L.kthvalue(x, 3, 0, keepdim=True))],
    "Unique": [Case(((3, 4),), lambda L, x: L.unique(x.round()), no_derivative=True)],
    # selection
    "IndexSelect": [Case(((4, 3),), lambda L, x: x.index_select(0, _rows_index(L))),
                    Case(((4, 3),), lambda L, x: L.index_select(x, 1, L.tensor([2, 2])))],
    "IndexAdd": [Case(((4, 2), (3, 2)), lambda L, x, s: x.index_add(0, _rows_index(L), s,
                                                                      alpha=2))],
    "IndexCopy": [Case(((4, 2), (2, 2)), lambda L, x, s: L.index_copy(x, 0, L.tensor([3, 1]),
                                                                       s))],
    "IndexFill": [Case(((4, 3),), lambda L, x: x.index_fill(1, L.tensor([0, 2]), -1.0))],
    "IndexFillTensor": [Case(((4, 3), ()), lambda L, x, v: x.index_fill(0, L.tensor([1]), v))],
    "IndexPutAccumulate": [Case(((4, 3), (3,)), lambda L, x, v: x.index_put(
        (L.tensor([0, 0, 2]), L.tensor([1, 1, 2])), v, accumulate=True))],
    "MaskedSelect": [Case(((3, 4),), lambda L, x: x.masked_select(x > 0)),
                     Case(((3, 4),), lambda L, x: L.masked_select(
                         x, L.tensor([True, False, True, True])))],
    "MaskedScatter": [Case(((3, 4), (2, 5)), lambda L, x, s: x.masked_scatter(x > 0, s))],
    "Take": [Case(((3, 4),), lambda L, x: x.take(L.tensor([[0, 11], [5, 5]])))],
    "ScatterReduce": [_scatter_reduce_case(kind) for kind in ("sum", "prod", "mean", "amax",
                                                              "amin")]
                     + [_scatter_reduce_case(kind, False) for kind in ("sum", "mean", "amax")],
    # rearranging
    "Flip": [Case(((3, 4),), lambda L, x: x.flip(0)), Case(((2, 3, 4),), lambda L, x: L.flip(
        x, (0, 2))), Case(((3, 4),), lambda L, x: x.fliplr())],
    "Roll": [Case(((3, 4),), lambda L, x: x.roll(1, 0)),
             Case(((3, 4),), lambda L, x: L.roll(x, (1, -1), (0, 1))),
             Case(((3, 4),), lambda L, x: x.roll(5))],
    "Rot90": [Case(((3, 4),), lambda L, x: x.rot90()), Case(((3, 4),), lambda L, x: L.rot90(
        x, 3, (1, 0)))],
    "Tril": [Case(((3, 4),), lambda L, x: x.tril()), Case(((3, 4),), lambda L, x: L.tril(x, -1))],
    "Triu": [Case(((3, 4),), lambda L, x: x.triu(1)), Case(((3, 4),), _inplace("triu_"))],
    "DiagonalCopy": [Case(((3, 3),), lambda L, x: L.diag(x)),
                     Case(((3, 4),), lambda L, x: x.diag(-1))],
    "DiagonalScatter": [Case(((3, 3), (3,)), lambda L, x, s: L.diagonal_scatter(x, s))],
    "DiagEmbed": [Case(((2, 3),), lambda L, x: x.diag_embed()),
                  Case(((3,),), lambda L, x: L.diag(x, 1))],
    # products and linear algebra
    "Addmm": [Case(((3, 2), (3, 4), (4, 2)), lambda L, a, b, c: L.addmm(a, b, c)),
              Case(((2,), (3, 4), (4, 2)), lambda L, a, b, c: a.addmm(b, c, beta=0.5,
                                                                        alpha=2))],
    "Addmv": [Case(((3,), (3, 4), (4,)), lambda L, a, b, c: L.addmv(a, b, c, alpha=3))],
    "Baddbmm": [Case(((2, 3, 2), (2, 3, 4), (2, 4, 2)), lambda L, a, b, c: L.baddbmm(a, b, c))],
    "Addbmm": [Case(((3, 2), (2, 3, 4), (2, 4, 2)), lambda L, a, b, c: a.addbmm(b, c))],
    "Vdot": [Case(((4,), (4,)), lambda L, a, b: L.vdot(a, b))],
    "Outer": [Case(((3,), (4,)), lambda L, a, b: linalg.Outer.apply(a, b), in_torch=False)],
    "Cross": [Case(((4, 3), (4, 3)), lambda L, a, b: L.linalg.cross(a, b)),
              Case(((3, 2), (3, 2)), lambda L, a, b: L.cross(a, b, dim=0))],
    "Cdist": [Case(((3, 4), (2, 4)), lambda L, a, b: L.cdist(a, b)),
              Case(((2, 3, 4), (2, 5, 4)), lambda L, a, b: L.cdist(a, b, p=1)),
              Case(((3, 4), (2, 4)), lambda L, a, b: L.cdist(a, b, p=3))],
    "Inv": [Case(((3, 3),), lambda L, x: L.linalg.inv(_sym(L, x))),
            Case(((2, 3, 3),), lambda L, x: L.inverse(x + 3 * L.eye(3, dtype=L.float64)))],
    "Det": [Case(((3, 3),), lambda L, x: L.linalg.det(x)),
            Case(((2, 3, 3),), lambda L, x: x.det())],
    "Slogdet": [Case(((3, 3),), lambda L, x: L.linalg.slogdet(x)),
                Case(((3, 3),), lambda L, x: L.logdet(_sym(L, x)))],
    "Solve": [Case(((3, 3), (3,)), lambda L, a, b: L.linalg.solve(_sym(L, a), b)),
              Case(((3, 3), (2, 3, 2)), lambda L, a, b: L.linalg.solve(_sym(L, a), b))],
    "Cholesky": [Case(((3, 3),), lambda L, x: L.linalg.cholesky(_sym(L, x))),
                 Case(((3, 3),), lambda L, x: L.linalg.cholesky(_sym(L, x), upper=True))],
    "Qr": [Case(((4, 3),), lambda L, x: L.linalg.qr(x)),
           Case(((3, 3),), lambda L, x: L.linalg.qr(x, mode="complete")),
           Case(((2, 4),), lambda L, x: L.linalg.qr(x))],
    "Svd": [Case(((4, 3),), lambda L, x: L.linalg.svdvals(x)),
            Case(((3, 4),), lambda L, x: _svd_invariant(L, x)),
            Case(((4, 3),), lambda L, x: L.linalg.matrix_norm(x, "nuc"))],
    "Eigh": [Case(((3, 3),), lambda L, x: L.linalg.eigvalsh(_sym(L, x))),
             Case(((3, 3),), lambda L, x: _eigh_invariant(L, x))],
    "Pinv": [Case(((4, 3),), lambda L, x: L.linalg.pinv(x)),
             Case(((3, 4),), lambda L, x: x.pinverse())],
    "Lstsq": [Case(((4, 3), (4, 2)), lambda L, a, b: L.linalg.lstsq(a, b).solution)],
    "Addr": [Case(((3, 2), (3,), (2,)), lambda L, a, u, v: L.addr(a, u, v, beta=0.5, alpha=2))],
    "BlockDiag": [Case(((2, 2), (3,), ()), lambda L, a, b, c: L.block_diag(a, b, c))],
    "CholeskySolve": [Case(((3, 2), (3, 3)), lambda L, b, x: L.cholesky_solve(
        b, L.linalg.cholesky(_sym(L, x)))),
        Case(((3, 2), (3, 3)), lambda L, b, x: L.cholesky_solve(
            b, L.linalg.cholesky(_sym(L, x)).mT, upper=True))],
    "CholeskyInverse": [Case(((3, 3),), lambda L, x: L.cholesky_inverse(
        L.linalg.cholesky(_sym(L, x))))],
    "Renorm": [Case(((3, 4),), lambda L, x: x.renorm(2, 0, 1.0)),
               Case(((3, 4),), lambda L, x: L.renorm(x, 3, 1, 0.8))],
    # (torch 2.13's ldexp backward computes 2**other in integers: 0 for negative exponents)
    "Dist": [Case(((3, 4), (4,)), lambda L, a, b: L.dist(a, b)),
             Case(((3, 4), (3, 4)), lambda L, a, b: a.dist(b, 3))],
    "Ldexp": [Case(((3, 4),), lambda L, x: L.ldexp(x, L.tensor([1, 0, 3, 2])))],
    # random draws: torch's gradient through a sample is zero
    "Normal": [Case(((3, 4), (4,)), lambda L, m, s: L.normal(m, s.abs()), random_draw=True)],
    "NormalTensorFloat": [Case(((3, 4),), lambda L, m: L.normal(m, 0.5), random_draw=True)],
    "NormalFloatTensor": [Case(((3, 4),), lambda L, s: L.normal(1.0, s.abs()),
                               random_draw=True)],
    "Bernoulli": [Case(((3, 4),), lambda L, p: L.bernoulli(p.sigmoid()), random_draw=True)],
    "Poisson": [Case(((3, 4),), lambda L, r: L.poisson(r.exp()), random_draw=True)],
})


def _svd_invariant(L, x):
    """U and Vh are defined up to sign: compare U diag(S) and the projector U U^T."""
    u, s, vh = L.linalg.svd(x, full_matrices=False)
    return u @ u.mT, s, vh.mT @ vh


def _eigh_invariant(L, x):
    values, vectors = L.linalg.eigh(_sym(L, x))
    return values, vectors @ (vectors * values.unsqueeze(-2)).mT


CASES.update(NN_CASES)  # nn's ops (convolution, pooling, losses, ...): tests/op_cases_nn.py

# Composite functions, built from the ops above: they get the same checks.
# quantile with a q tensor ends in torch's unsqueeze_(0), transpose_(0, -1), squeeze_(-1)
CASES.update({
    "UnsqueezeInPlace": [Case(((3, 5),), lambda L, x: x.quantile(
        L.tensor([0.2, 0.9], dtype=L.float64), dim=1))],
    "TransposeInPlace": [Case(((3, 4),), lambda L, x: x.nanquantile(
        L.tensor([0.5, 0.7], dtype=L.float64), dim=0, keepdim=True))],
})

COMPOSITES: dict[str, list[Case]] = {
    "narrow": [Case(((5, 3),), lambda L, x: x.narrow(0, 1, 3))],
    "setitem_view": [Case(((4, 3), (2,)), _setitem_view),
                     Case(((4, 3), (3,)), _setitem_iadd)],
    "inplace_on_view": [Case(((3, 4), (4,)), _inplace_on_view),
                        Case(((3, 4), (2, 3)), _inplace_view_of_view),
                        Case(((3, 4),), _inplace_transposed),
                        Case(((3, 4),), _inplace_saving_output_on_view)],
    "inplace_saving_old_self": [Case(((3, 4), (3, 4)), _inplace_saving_old_self)],
    "var": [Case(((3, 4),), lambda L, x: x.var(1)),
            Case(((3, 4),), lambda L, x: L.var(x, unbiased=False))],
    "std": [Case(((3, 4),), lambda L, x: x.std(0, keepdim=True))],
    "flatten": [Case(((2, 3, 4),), lambda L, x: x.flatten(1)),
                Case(((2, 3, 4),), lambda L, x: x.flatten(1, 1) * 2),
                Case(((3,),), lambda L, x: x.flatten() * 2)],
    "expand_as": [Case(((3, 1), (3, 4)), lambda L, a, b: a.expand_as(b) * b)],
    "contiguous": [Case(((3, 4),), lambda L, x: x.t().contiguous())],
    "nanmean": [Case(((3, 4),), lambda L, x: x.nanmean(1))],
    "repeat_interleave": [Case(((2, 3),), lambda L, x: x.repeat_interleave(2, dim=1)),
                          Case(((2, 3),), lambda L, x: L.repeat_interleave(x, 2)),
                          Case(((3,),), lambda L, x: x.repeat_interleave(L.tensor([1, 0, 2]))),
                          Case(((3,),), lambda L, x: x.repeat_interleave(2))],
    "hstack": [Case(((2, 3), (2, 2)), lambda L, a, b: L.hstack([a, b]))],
    "vstack": [Case(((3,), (2, 3)), lambda L, a, b: L.vstack([a, b]))],
    "dstack": [Case(((2, 3), (2, 3)), lambda L, a, b: L.dstack([a, b]))],
    "movedim": [Case(((2, 3, 4),), lambda L, x: x.movedim(0, 2)),
                Case(((2, 3, 4),), lambda L, x: L.moveaxis(x, (0, 1), (2, 0)))],
    "swapaxes": [Case(((2, 3, 4),), lambda L, x: L.swapaxes(x, 0, 2))],
    "unflatten": [Case(((3, 4),), lambda L, x: x.unflatten(1, (2, 2)))],
    "tile": [Case(((2, 3),), lambda L, x: L.tile(x, (2,)))],
    "broadcast": [Case(((3,), (2, 1)), lambda L, a, b: L.broadcast_tensors(a, b)),
                  Case(((3,),), lambda L, a: a.broadcast_to((2, 3)))],
    "meshgrid": [Case(((3,), (2,)), lambda L, a, b: L.meshgrid(a, b, indexing="ij")),
                 Case(((3,), (2,)), lambda L, a, b: L.meshgrid(a, b, indexing="xy"))],
    "cartesian_prod": [Case(((3,), (2,)), lambda L, a, b: L.cartesian_prod(a, b))],
    "combinations": [Case(((4,),), lambda L, a: L.combinations(a, 2)),
                     Case(((4,),), lambda L, a: L.combinations(a, 3)),
                     Case(((3,),), lambda L, a: L.combinations(a, 2, with_replacement=True)),
                     Case(((3,),), lambda L, a: L.combinations(a, 1)),
                     Case(((2,),), lambda L, a: L.combinations(a, 3) + 1)],
    "tensor_split": [Case(((5, 3),), lambda L, x: x.tensor_split(3)),
                     Case(((5, 3),), lambda L, x: L.tensor_split(x, [1, 4], dim=0))],
    "select": [Case(((3, 4),), lambda L, x: x.select(1, 2))],
    "take_along_dim": [Case(((3, 4),), lambda L, x: L.take_along_dim(
        x, L.tensor([[1], [0], [3]]), 1)), Case(((3, 4),), lambda L, x: x.take_along_dim(
            L.tensor([0, 11])))],
    "einsum": [Case(((2, 3), (3, 4)), lambda L, a, b: L.einsum("ij,jk->ik", a, b)),
               Case(((2, 3, 4), (2, 4, 5)), lambda L, a, b: L.einsum("bij,bjk->bki", a, b)),
               Case(((3, 3),), lambda L, a: L.einsum("ii->i", a)),
               Case(((3,), (4,)), lambda L, a, b: L.einsum("i,j", a, b)),
               Case(((2, 3, 4, 5), (2, 3, 6, 5)),
                    lambda L, a, b: L.einsum("bhqd,bhkd->bhqk", a, b)),
               Case(((3,), (3,)), lambda L, a, b: L.einsum("i,i->", a, b)),
               Case(((2, 3),), lambda L, a: L.einsum("ij->", a)),
               Case(((2, 3),), lambda L, a: L.einsum("ij->ji", a)),
               Case(((5, 2, 3), (3, 4)), lambda L, a, b: L.einsum("...ij,...jk", a, b)),
               Case(((2, 3), (3, 4), (4, 5)),
                    lambda L, a, b, c: L.einsum("ij,jk,kl->il", a, b, c)),
               Case(((1, 3, 4), (2, 4, 5)), lambda L, a, b: L.einsum("bij,bjk->bik", a, b)),
               Case(((3, 4, 3),), lambda L, a: L.einsum("iji->j", a))],
    "outer": [Case(((3,), (4,)), lambda L, a, b: L.outer(a, b))],
    "inner": [Case(((2, 3), (4, 3)), lambda L, a, b: L.inner(a, b))],
    "tensordot": [Case(((2, 3, 4), (3, 4, 2)), lambda L, a, b: L.tensordot(a, b, 2)),
                  Case(((2, 3), (3, 4)), lambda L, a, b: L.tensordot(a, b, ([1], [0])))],
    "kron": [Case(((2, 3), (2, 2)), lambda L, a, b: L.kron(a, b))],
    "multi_dot": [Case(((2, 3), (3, 4), (4,)), lambda L, a, b, c: L.linalg.multi_dot([a, b, c]))],
    "matrix_power": [Case(((3, 3),), lambda L, x: L.linalg.matrix_power(x, 3)),
                     Case(((3, 3),), lambda L, x: L.matrix_power(_sym(L, x), -1)),
                     Case(((2, 3, 3),), lambda L, x: L.linalg.matrix_power(x, 0) * x),
                     Case(((3, 3),), lambda L, x: x.matrix_power(1)),
                     Case(((3, 3),), lambda L, x: L.linalg.matrix_power(_sym(L, x), -3)),
                     Case(((3, 3),), lambda L, x: L.linalg.matrix_power(x / 3, 7))],
    "matrix_norm": [Case(((3, 4),), lambda L, x: L.linalg.matrix_norm(x)),
                    Case(((3, 4),), lambda L, x: L.linalg.matrix_norm(x, 1)),
                    Case(((2, 3, 4),), lambda L, x: L.linalg.matrix_norm(x, "nuc", keepdim=True)),
                    Case(((2, 3, 4),), lambda L, x: L.linalg.matrix_norm(x, 2, (2, 0), True)),
                    Case(((2, 3, 4),), lambda L, x: L.linalg.matrix_norm(x, -2, (1, 0))),
                    Case(((3, 4),), lambda L, x: L.linalg.norm(x, float("inf")))],
    "norm": [Case(((3, 4),), lambda L, x: x.norm())],
    "quantile": [Case(((3, 5),), lambda L, x: L.quantile(x, 0.3)),
                 Case(((3, 5),), lambda L, x: x.quantile(L.tensor([0.2, 0.9], dtype=L.float64),
                                                          dim=1, keepdim=True))],
    "cov": [Case(((3, 5),), lambda L, x: L.cov(x)), Case(((3, 5),), lambda L, x: x.corrcoef())],
    "diff": [Case(((3, 5),), lambda L, x: L.diff(x, n=2, dim=1))],
    "trapezoid": [Case(((3, 5),), lambda L, x: L.trapezoid(x)),
                  Case(((3, 5),), lambda L, x: L.cumulative_trapezoid(x, dx=0.5, dim=0)),
                  Case(((3, 5),), lambda L, y: L.trapezoid(y, L.tensor(
                      [0.0, 0.5, 1.5, 2.0, 3.5], dtype=L.float64))),
                  Case(((3, 5),), lambda L, y: L.cumulative_trapezoid(y, L.tensor(
                      [0.0, 0.5, 1.5, 2.0, 3.5], dtype=L.float64), dim=1))],
    # torch 2.13's own vander backward fails ("modified by an inplace operation")
    "vander": [Case(((4,),), lambda L, x: L.vander(x, 3), in_torch=False)],
    "float_power": [Case(((3, 4),), lambda L, x: L.float_power(x, 2)),
                    Case(((3, 4), (3, 4)), lambda L, a, b: a.float_power(b), positive=(0,))],
}
# Cases whose graph (every node's name, walked breadth first from the outputs) differs from
# torch's, and why; a test below keeps the list true.
KNOWN_NAME_DIFFERENCES: dict = {}  # (name, index) -> why torch's graph differs; none now
NO_DERIVATIVE = {(name, index) for name, cases in CASES.items()
                 for index, case in enumerate(cases) if case.no_derivative}


def _ids(table: dict) -> list:
    return [(name, index) for name, cases in table.items() for index in range(len(cases))]


ALL = {**CASES, **COMPOSITES}


def _case(name: str, index: int) -> Case:
    return ALL[name][index]


def _arrays(name: str, index: int, case: Case) -> list[np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(f"{name}/{index}".encode()))
    arrays = []
    for position, input_shape in enumerate(case.shapes):
        if position in case.positive:
            arrays.append(rng.uniform(0.5, 2.0, size=input_shape))
        else:
            arrays.append(rng.standard_normal(input_shape))
    return arrays


def _inputs(lib, arrays):
    return [lib.tensor(array, dtype=lib.float64, requires_grad=True) for array in arrays]


def _as_tuple(result) -> tuple:
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def graph_nodes(outputs) -> list:
    """The nodes of the outputs' graph, breadth first (each once, in next_functions
    order)."""
    order, seen = [], set()
    queue = [output.grad_fn for output in outputs if output.grad_fn is not None]
    while queue:
        node = queue.pop(0)
        if id(node) not in seen:
            seen.add(id(node))
            order.append(node)
            queue.extend(next_node for next_node, _ in node.next_functions
                         if next_node is not None)
    return order


def graph_names(outputs) -> list:
    """Every node's name, as ``graph_nodes`` walks them: equal lists mean torch's graph
    and ours have the same shape."""
    return [node.name() for node in graph_nodes(outputs)]


def _assert_backward_refused(lib, case, inputs):
    outputs = _as_tuple(case.call(lib, *inputs))
    with pytest.raises(RuntimeError, match="derivative for "):
        sum(output.sum() for output in outputs).backward()


def _node_classes(outputs) -> set:
    """The classes of every node of the outputs' graph (each node visited once: skipping a
    node because another of its class was seen would leave the graph below it unread)."""
    found, seen = set(), set()
    stack = [o.grad_fn for o in outputs if o.grad_fn is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        found.add(type(node))
        stack.extend(next_node for next_node, _ in node.next_functions if next_node is not None)
    return found


def test_every_registered_op_has_a_case():
    registered = set(ops.registry())
    missing = sorted(registered - set(CASES))
    assert not missing, f"ops without a gradient case in tests/test_ops_gradients.py: {missing}"
    stale = sorted(set(CASES) - registered)
    assert not stale, f"cases for ops that are not in ops.registry(): {stale}"


@pytest.mark.parametrize("name,index", _ids(CASES), ids=lambda value: str(value))
def test_case_runs_the_op_it_names(name, index):
    case = _case(name, index)
    outputs = _as_tuple(case.call(tg, *_inputs(tg, _arrays(name, index, case))))
    node_class = ops.registry()[name]._node_class
    assert node_class in _node_classes(outputs), (
        f"the case for {name} never made a {node_class.__name__} node")


@pytest.mark.parametrize("name,index", _ids(ALL), ids=lambda value: str(value))
def test_gradient_matches_finite_differences(name, index):
    case = _case(name, index)
    if case.random_draw:
        inputs = _inputs(tg, _arrays(name, index, case))
        outputs = _as_tuple(case.call(tg, *inputs))
        grads = tg.autograd.grad(sum(o.sum() for o in outputs), inputs, allow_unused=True)
        assert all(g is None or not g.numpy().any() for g in grads)
        return
    if case.no_derivative:
        _assert_backward_refused(tg, case, _inputs(tg, _arrays(name, index, case)))
        return
    inputs = _inputs(tg, _arrays(name, index, case))
    assert tg.autograd.gradcheck(lambda *xs: case.call(tg, *xs), inputs,
                                 **{"eps": 1e-6, "atol": 1e-5, "rtol": 1e-3, **case.gradcheck})


# Ops whose backward is not itself differentiable in a way finite differences can check:
# kinks (relu, abs, clamp, max) have a zero second derivative almost everywhere, which
# gradgradcheck does verify; nothing is excluded today -- keep it that way. (A case marked
# no_second_derivative is one torch refuses to differentiate twice: it must raise here too.)
@pytest.mark.parametrize("name,index", _ids(ALL), ids=lambda value: str(value))
def test_second_derivative_matches_finite_differences(name, index):
    case = _case(name, index)
    if case.no_derivative or case.random_draw:
        pytest.skip("torch defines no derivative (or a zero one) for it: the first-derivative "
                    "test checks so")
    if case.gradcheck.get("eps", 1e-6) != 1e-6:
        pytest.skip("float32 inside: second differences are too coarse")
    inputs = _inputs(tg, _arrays(name, index, case))
    if case.no_second_derivative:
        outputs = _as_tuple(case.call(tg, *inputs))
        grads = tg.autograd.grad(sum(o.sum() for o in outputs), inputs, create_graph=True)
        with pytest.raises(RuntimeError, match="derivative for "):
            tg.autograd.grad(sum(g.sum() for g in grads), inputs)
        return
    assert tg.autograd.gradgradcheck(lambda *xs: case.call(tg, *xs), inputs,
                                     eps=1e-6, atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize("name,index", _ids(ALL), ids=lambda value: str(value))
def test_forward_and_gradients_match_torch(name, index):
    torch = pytest.importorskip("torch")
    case = _case(name, index)
    if not case.in_torch:
        pytest.skip(f"{name} is internal: torch has no public form of it")
    arrays = _arrays(name, index, case)
    ours_in, theirs_in = _inputs(tg, arrays), _inputs(torch, arrays)
    ours = _as_tuple(case.call(tg, *ours_in))
    theirs = _as_tuple(case.call(torch, *theirs_in))
    assert len(ours) == len(theirs)
    if (name, index) not in KNOWN_NAME_DIFFERENCES:
        assert graph_names(ours) == graph_names(theirs)
    # the layout too: stride() and is_contiguous() answer as torch's (tracegrad/_layout.py)
    assert [mine.stride() for mine in ours if isinstance(mine, tg.Tensor) and mine.numel()] == \
        [other.stride() for other in theirs if isinstance(other, torch.Tensor) and other.numel()]
    if case.random_draw:
        assert [tuple(o.shape) for o in ours] == [tuple(t.shape) for t in theirs]
        return
    if case.no_derivative:
        for mine, reference in zip(ours, theirs):
            np.testing.assert_allclose(mine.detach().numpy(), reference.detach().numpy())
        _assert_backward_refused(torch, case, theirs_in)
        return
    rng = np.random.default_rng(7)
    our_loss, their_loss = 0, 0
    for mine, reference in zip(ours, theirs):
        assert tuple(mine.shape) == tuple(reference.shape)
        np.testing.assert_allclose(mine.detach().numpy(), reference.detach().numpy(),
                                   rtol=1e-7, atol=1e-10)
        if reference.requires_grad:
            weight = rng.standard_normal(tuple(reference.shape))
            our_loss = our_loss + (mine * tg.tensor(weight)).sum()
            their_loss = their_loss + (reference * torch.tensor(weight)).sum()
    our_loss.backward()
    their_loss.backward()
    for position, (mine, reference) in enumerate(zip(ours_in, theirs_in)):
        if reference.grad is None:
            assert mine.grad is None or not mine.grad.data.any(), f"input {position}"
            continue
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-7,
                                   atol=1e-10, err_msg=f"gradient of input {position}")


def test_every_known_name_difference_still_differs():
    torch = pytest.importorskip("torch")
    fixed = []
    for name, index in KNOWN_NAME_DIFFERENCES:
        case = _case(name, index)
        arrays = _arrays(name, index, case)
        graphs = [graph_names(_as_tuple(case.call(lib, *_inputs(lib, arrays))))
                  for lib in (tg, torch)]
        if graphs[0] == graphs[1]:
            fixed.append((name, index))
    assert not fixed, f"these graphs now match torch's: remove them from the list: {fixed}"


# -- one formula, two ways: arrays without create_graph, Tensors with it -----------------
# An op with ``array_backward`` runs its formula on backend arrays when no graph is built of
# the backward pass (the tests above, through backward() and gradcheck) and on Tensors with
# create_graph (gradgradcheck). This asserts each op's formula really ran each way and that
# the two gave the same numbers.
ARRAY_OPS = sorted(name for name, op in ops.registry().items()
                   if op._node_class._takes_arrays)


@pytest.mark.parametrize("name", ARRAY_OPS)
def test_array_backward_runs_on_arrays_and_on_tensors(name, monkeypatch):
    op = ops.registry()[name]
    node_class = op._node_class
    ran = {"arrays": [], "tensors": []}
    formula = node_class._formula  # what the engine calls on arrays, and on Tensors

    def recording(node, *grads):
        on_tensors = any(isinstance(grad, tg.Tensor) for grad in grads)
        ran["tensors" if on_tensors else "arrays"].append(type(node))
        return formula(node, *grads)

    monkeypatch.setattr(node_class, "_formula", staticmethod(recording))
    monkeypatch.setattr(op, "_backward_impl", staticmethod(recording))
    checked = 0
    for index, case in enumerate(CASES[name]):
        if case.no_derivative:  # the formula raises torch's error, each way
            for way, create_graph in (("arrays", False), ("tensors", True)):
                inputs = _inputs(tg, _arrays(name, index, case))
                loss = sum(o.sum() for o in _as_tuple(case.call(tg, *inputs)))
                ran[way].clear()
                with pytest.raises(RuntimeError, match="derivative for"):
                    tg.autograd.grad(loss, inputs, create_graph=create_graph)
                assert node_class in ran[way], f"case {index}: {name} never ran on {way}"
            checked += 1
            continue
        ways = {}  # (a random draw's gradient is zero: the same each way)
        for way, create_graph in (("arrays", False), ("tensors", True)):
            inputs = _inputs(tg, _arrays(name, index, case))
            outputs = [o for o in _as_tuple(case.call(tg, *inputs)) if o.requires_grad]
            rng = np.random.default_rng(7)
            loss = sum((o * tg.tensor(rng.standard_normal(tuple(o.shape)))).sum()
                       for o in outputs)
            ran[way].clear()
            ways[way] = tg.autograd.grad(loss, inputs, create_graph=create_graph,
                                         allow_unused=True)
            assert node_class in ran[way], f"case {index}: {name} never ran on {way}"
        for position, (mine, reference) in enumerate(zip(ways["arrays"], ways["tensors"])):
            assert (mine is None) == (reference is None), f"case {index}, input {position}"
            if mine is not None:
                np.testing.assert_allclose(mine.numpy(), reference.detach().numpy(),
                                           rtol=1e-12, atol=1e-14,
                                           err_msg=f"case {index}, input {position}")
        checked += 1
    assert checked, f"no case of {name} has a gradient to check"


# -- every op on CUDA, against the same op on the CPU -----------------------------------
# The CPU is the reference, so only the CUDA case runs: on machines without CuPy and a GPU
# (CI) it skips with the reason (tests/conftest.py).
DEVICES = [pytest.param("cuda", marks=pytest.mark.gpu)]


class _On:
    """``tracegrad`` whose ``tensor()`` makes tensors on one device, so a case's index
    tensors live with its inputs (as the same code written for a GPU would make them)."""

    def __init__(self, device: str) -> None:
        self.device = device

    def __getattr__(self, name: str):
        return getattr(tg, name)

    def tensor(self, data, **options):
        return tg.tensor(data, device=self.device, **options)


def _run_on(device: str, name: str, index: int, second_order: bool):
    """Outputs, first gradients and (with ``second_order``) gradients of the gradients'
    squared norm, all copied to the host."""
    case = _case(name, index)
    if case.random_draw:
        pytest.skip("a random draw: the two devices' calls draw different numbers")
    lib = _On(device)
    inputs = [tg.tensor(a, dtype=tg.float64, device=device, requires_grad=True)
              for a in _arrays(name, index, case)]
    outputs = _as_tuple(case.call(lib, *inputs))
    rng = np.random.default_rng(7)
    loss = 0
    for output in outputs:
        if output.requires_grad:
            weight = tg.tensor(rng.standard_normal(tuple(output.shape)), device=output.device)
            loss = loss + (output * weight).sum()
    grads = tg.autograd.grad(loss, inputs, create_graph=second_order, allow_unused=True)
    second = []
    if second_order:
        differentiable = [g for g in grads if g is not None and g.requires_grad]
        if differentiable:
            norm = sum((g * g).sum() for g in differentiable)
            second = tg.autograd.grad(norm, inputs, allow_unused=True)
    host = [o.detach().cpu().numpy() for o in outputs]
    host += [None if g is None else g.detach().cpu().numpy() for g in (*grads, *second)]
    return host


def _assert_same_values(mine: list, reference: list) -> None:
    assert len(mine) == len(reference)
    for position, (a, b) in enumerate(zip(mine, reference)):
        if a is None or b is None:
            assert a is None and b is None, f"value {position}: one side has no gradient"
            continue
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12, err_msg=f"value {position}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,index", _ids(ALL), ids=lambda value: str(value))
def test_forward_and_gradients_on_cuda_match_the_cpu(name, index, device):
    _assert_same_values(_run_on(device, name, index, False), _run_on("cpu", name, index, False))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,index", _ids(ALL), ids=lambda value: str(value))
def test_second_derivatives_on_cuda_match_the_cpu(name, index, device):
    _assert_same_values(_run_on(device, name, index, True), _run_on("cpu", name, index, True))
