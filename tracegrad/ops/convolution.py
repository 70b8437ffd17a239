"""Convolution (1-d, 2-d, 3-d; transposed too) and unfold/fold, as one im2col each.

The input's windows are an ``as_strided`` view of the padded input; copying them into
columns (im2col) turns the convolution into one batched matrix product on the array
module's BLAS (NumPy or CuPy alike). The transposed convolution and the gradient of the
input scatter columns back (col2im): a loop over kernel offsets, each one strided add of a
whole array -- never a loop over pixels.

Backward without ``create_graph`` works on arrays and reuses the forward's columns for the
weight's gradient. With ``create_graph`` it is written with ``Convolution`` itself (the
gradient of a convolution is a transposed convolution, and its weight gradient a
convolution of the input with the output's gradient), so higher derivatives follow.
"""

from __future__ import annotations

import itertools

from .. import _dtype
from .._layout import row_major
from ..autograd.function import Op
from ..autograd.grad_mode import state
from ..autograd.quiet import silenced
from ..backends import array_module
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from . import _math
from ._saved import show_saved


def _as_strided(xp, array, shape, strides):
    return xp.lib.stride_tricks.as_strided(array, shape=shape, strides=strides)


def windows(xp, padded, kernel, stride, dilation, out_sizes):
    """A view ``(N, C, *kernel, *out_sizes)`` of every window of ``padded`` (N, C, *S)."""
    strides = padded.strides
    spatial = strides[2:]
    return _as_strided(
        xp, padded, padded.shape[:2] + tuple(kernel) + tuple(out_sizes),
        strides[:2] + tuple(s * d for s, d in zip(spatial, dilation))
        + tuple(s * t for s, t in zip(spatial, stride)))


def pad_array(xp, array, pads):
    """Zero-pad the spatial dims (2, 3, ...) by ``pads`` ((before, after) per dim)."""
    if not any(before or after for before, after in pads):
        return array
    return xp.pad(array, ((0, 0), (0, 0)) + tuple(pads))


def out_sizes(sizes, kernel, stride, pads, dilation):
    return tuple((size + before + after - d * (k - 1) - 1) // s + 1
                 for size, k, s, (before, after), d in zip(sizes, kernel, stride, pads, dilation))


def im2col(xp, array, kernel, stride, pads, dilation):
    """Columns ``(N, C * prod(kernel), L)`` of ``array`` (N, C, *S), and the output sizes."""
    sizes = out_sizes(array.shape[2:], kernel, stride, pads, dilation)
    view = windows(xp, pad_array(xp, array, pads), kernel, stride, dilation, sizes)
    count = 1
    for size in sizes:
        count *= size
    columns = view.reshape(array.shape[0], -1, count)  # the one copy: im2col
    return columns, sizes


def col2im(xp, columns, channels, canvas, kernel, stride, dilation, sizes):
    """Sum columns ``(N, C * prod(kernel), L)`` back onto a zero canvas ``(N, C, *canvas)``
    at their windows' places (the adjoint of im2col on the padded input)."""
    batch = columns.shape[0]
    blocks = columns.reshape((batch, channels) + tuple(kernel) + tuple(sizes))
    out = xp.zeros((batch, channels) + tuple(canvas), dtype=columns.dtype)
    for offset in itertools.product(*(range(k) for k in kernel)):
        where = tuple(slice(o * d, o * d + s * (n - 1) + 1, s)
                      for o, d, s, n in zip(offset, dilation, stride, sizes))
        out[(slice(None), slice(None)) + where] += blocks[(slice(None), slice(None)) + offset]
    return out


def crop(array, pads, sizes):
    """The inside of a canvas padded by ``pads``."""
    return array[(slice(None), slice(None)) + tuple(
        slice(before, before + size) for (before, _), size in zip(pads, sizes))]


def _product(values) -> int:
    count = 1
    for value in values:
        count *= value
    return count


# -- the arrays ---------------------------------------------------------------------------
# The convolution's own columns are laid out (channels * kernel, batch * positions): the
# whole batch is then one matrix product per group, with the batch and the positions as
# one long dimension -- where a (batch, channels * kernel, positions) layout would make a
# small product per sample, several times slower for LeNet-sized layers.
def _batch_last(array, groups: int):
    """(N, C, *S) -> (G, C/G, N * prod(S)): channels first, the batch inside the columns."""
    batch, channels = array.shape[:2]
    grouped = array.reshape(batch, groups, channels // groups, -1)
    return grouped.transpose(1, 2, 0, 3).reshape(groups, channels // groups, -1)


def _batch_first(array, batch: int, sizes):
    """(G, R, N * prod(sizes)) -> (N, G * R, *sizes), C-contiguous."""
    groups, rows = array.shape[:2]
    moved = array.reshape(groups * rows, batch, -1).transpose(1, 0, 2)
    return moved.reshape((batch, groups * rows) + tuple(sizes))


@silenced
def conv_arrays(xp, x, w, stride, pads, dilation, groups):
    """Convolution of ``x`` (N, C, *S) with ``w`` (O, C/groups, *k): (output (N, O, *o),
    columns (G, C/G * K, N * L))."""
    kernel = w.shape[2:]
    sizes = out_sizes(x.shape[2:], kernel, stride, pads, dilation)
    view = windows(xp, pad_array(xp, x, pads), kernel, stride, dilation, sizes)
    spatial = len(kernel)
    # (C, *kernel, N, *sizes): one copy, im2col
    order = (1,) + tuple(range(2, 2 + spatial)) + (0,) + tuple(range(2 + spatial, 2 + 2 * spatial))
    columns = view.transpose(order).reshape(groups, -1, x.shape[0] * _product(sizes))
    weight = w.reshape(groups, w.shape[0] // groups, -1)
    out = weight @ columns  # (G, O/G, N * L): one GEMM per group
    return _batch_first(out, x.shape[0], sizes), columns


@silenced
def conv_transpose_arrays(xp, x, w, stride, pads, dilation, groups, sizes):
    """Transposed convolution of ``x`` (N, C, *S) with ``w`` (C, O/groups, *k), cropped to
    the spatial ``sizes``."""
    kernel = w.shape[2:]
    batch, channels = x.shape[:2]
    weight = w.reshape(groups, channels // groups, -1).transpose(0, 2, 1)  # (G, O/G * K, C/G)
    columns = weight @ _batch_last(x, groups)  # (G, O/G * K, N * L): one GEMM per group
    out_channels = w.shape[1] * groups
    blocks = columns.reshape((out_channels,) + tuple(kernel) + (batch,) + tuple(x.shape[2:]))
    canvas = tuple(size + before + after for size, (before, after) in zip(sizes, pads))
    out = xp.zeros((batch, out_channels) + canvas, dtype=columns.dtype)
    spatial = len(kernel)
    swap = (1, 0) + tuple(range(2, 2 + spatial))  # (O, N, *S) -> (N, O, *S)
    for offset in itertools.product(*(range(k) for k in kernel)):
        where = tuple(slice(o * d, o * d + s * (n - 1) + 1, s)
                      for o, d, s, n in zip(offset, dilation, stride, x.shape[2:]))
        out[(slice(None), slice(None)) + where] += blocks[(slice(None),) + offset].transpose(swap)
    return crop(out, pads, sizes)


def weight_grad_arrays(columns, grad, groups, weight_shape):
    """A convolution's weight gradient from the input's columns (G, C/G * K, N * L) and
    the output's gradient (N, O, *o): one GEMM per group over the whole batch."""
    rows = _batch_last(grad, groups)  # (G, O/G, N * L)
    return (rows @ columns.transpose(0, 2, 1)).reshape(weight_shape)


class Convolution(Op):
    """``aten::convolution``: conv1d/2d/3d and conv_transpose, one ConvolutionBackward0.

    ``pads`` holds (before, after) per spatial dim (asymmetric for ``padding="same"`` with
    an even kernel); ``output_padding`` only applies to the transposed convolution.
    """

    node_name = "ConvolutionBackward0"
    array_backward = True
    saved_names = ("input", "weight")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @silenced
    def forward(ctx, input, weight, bias, stride, pads, dilation, transposed, output_padding,
                groups):
        x, w = input._array, weight._array
        _check(input, weight, bias, transposed, groups)
        xp = input._xp
        ctx.save_for_backward(input, weight)
        ctx.params = (stride, pads, dilation, transposed, output_padding, groups)
        ctx.has_bias = bias is not None
        # grad_fn._saved_bias_sym_sizes_opt: torch keeps (0,) for no bias
        ctx._bias_sizes = (0,) if bias is None else bias._array.shape
        needs = ctx.needs_input_grad
        if transposed:
            sizes = transposed_sizes(x.shape[2:], w.shape[2:], stride, pads, dilation,
                                     output_padding)
            out = conv_transpose_arrays(xp, x, w, stride, pads, dilation, groups, sizes)
        else:
            out, columns = conv_arrays(xp, x, w, stride, pads, dilation, groups)
            if needs and needs[1]:
                ctx.columns = columns  # the weight's gradient reuses them
        if bias is not None:
            out = out + bias._array.reshape((-1,) + (1,) * (x.ndim - 2))
        return row_major(out)  # (torch's output is contiguous; NumPy's sum kept the layout)

    @staticmethod
    def backward(ctx, grad):
        input, weight = ctx.saved_tensors
        if grad.__class__ is not Tensor:  # a pass without create_graph: arrays throughout
            grads = _backward_arrays(ctx, input, weight, grad)
        elif state.grad_enabled:
            grads = _backward_tensors(ctx, input, weight, grad)
        else:  # the node called directly, outside a pass: the array math, wrapped
            grads = tuple(None if array is None else Tensor._wrap(array, False)
                          for array in _backward_arrays(ctx, input._array, weight._array,
                                                        grad._array))
        return grads + (None,) * 6


def _saved_parameter(index: int):
    def read(node):
        return node.params[index]

    return read


def _saved_padding(node) -> tuple:
    """torch's padding: one int per spatial dim (the before side of our (before, after))."""
    return tuple(before for before, _ in node.params[1])


# grad_fn._saved_<name> as torch names ctx.params (stride, pads, dilation, transposed,
# output_padding, groups)
for _index, _name in enumerate(("stride", "padding", "dilation", "transposed",
                                "output_padding", "groups")):
    show_saved(Convolution, _name,
               _saved_padding if _name == "padding" else _saved_parameter(_index))
show_saved(Convolution, "bias_sym_sizes_opt", lambda node: tuple(node._bias_sizes))


def transposed_sizes(sizes, kernel, stride, pads, dilation, output_padding):
    return tuple((size - 1) * s - before - after + d * (k - 1) + 1 + extra
                 for size, k, s, (before, after), d, extra
                 in zip(sizes, kernel, stride, pads, dilation, output_padding))


def _backward_arrays(ctx, x, w, g) -> tuple:
    """The gradients as arrays, from the input's, the weight's and the gradient's."""
    stride, pads, dilation, transposed, _, groups = ctx.params
    needs = ctx.needs_input_grad
    xp = array_module(g)
    grad_input = grad_weight = grad_bias = None
    if transposed:
        if needs[0] or needs[1]:
            out, columns = conv_arrays(xp, g, w, stride, pads, dilation, groups)
            if needs[0]:
                grad_input = out[(Ellipsis,) + tuple(slice(size) for size in x.shape[2:])]
            if needs[1]:
                grad_weight = weight_grad_arrays(columns, x, groups, w.shape)
    else:
        if needs[0]:
            grad_input = conv_transpose_arrays(xp, g, w, stride, pads, dilation, groups,
                                               x.shape[2:])
        if needs[1]:
            columns = getattr(ctx, "columns", None)
            if columns is None:
                _, columns = conv_arrays(xp, x, w, stride, pads, dilation, groups)
            grad_weight = weight_grad_arrays(columns, g, groups, w.shape)
            ctx.columns = None
    if ctx.has_bias and needs[2]:
        grad_bias = g.sum(axis=(0,) + tuple(range(2, g.ndim)))
    return tuple(None if array is None else xp.ascontiguousarray(array)
                 for array in (grad_input, grad_weight, grad_bias))


def _backward_tensors(ctx, input, weight, grad) -> tuple:
    """The same gradients as convolutions of tensors: differentiable again."""
    stride, pads, dilation, transposed, _, groups = ctx.params
    needs = ctx.needs_input_grad
    spatial = input.ndim - 2
    grad_input = grad_weight = grad_bias = None
    if needs[0]:
        if transposed:
            grad_input = Convolution.apply(grad, weight, None, stride, pads, dilation, False,
                                           (0,) * spatial, groups)
            grad_input = _narrow_spatial(grad_input, input.shape[2:])
        else:
            produced = transposed_sizes(grad.shape[2:], weight.shape[2:], stride, pads,
                                        dilation, (0,) * spatial)
            extra = tuple(size - made for size, made in zip(input.shape[2:], produced))
            grad_input = Convolution.apply(grad, weight, None, stride, pads, dilation, True,
                                           extra, groups)
    if needs[1]:
        if transposed:
            grad_weight = weight_grad_tensor(grad, input, weight.shape, stride, pads, dilation,
                                             groups)
        else:
            grad_weight = weight_grad_tensor(input, grad, weight.shape, stride, pads, dilation,
                                             groups)
    if ctx.has_bias and needs[2]:
        grad_bias = grad.sum(dim=(0,) + tuple(range(2, grad.ndim)))
    return grad_input, grad_weight, grad_bias


def weight_grad_tensor(input, grad, weight_shape, stride, pads, dilation, groups):
    """A convolution's weight gradient as a convolution: the input's channels become the
    batch, the output gradient's become the filters, and stride and dilation trade places.
    """
    batch = input.shape[0]
    spatial = tuple(range(3, input.ndim + 1))
    per_group = input.shape[1] // groups
    rows = grad.shape[1] // groups
    images = input.reshape((batch, groups, per_group) + tuple(input.shape[2:]))
    images = images.permute(2, 1, 0, *spatial).reshape(
        (per_group, groups * batch) + tuple(input.shape[2:]))
    filters = grad.reshape((batch, groups, rows) + tuple(grad.shape[2:]))
    filters = filters.permute(1, 2, 0, *spatial).reshape(
        (groups * rows, batch) + tuple(grad.shape[2:]))
    result = Convolution.apply(images, filters, None, dilation, pads, stride, False,
                               (0,) * len(spatial), groups)
    result = _narrow_spatial(result, weight_shape[2:])
    return result.transpose(0, 1)


def _narrow_spatial(tensor, sizes):
    if tuple(tensor.shape[2:]) == tuple(sizes):
        return tensor
    return tensor[(slice(None), slice(None)) + tuple(slice(size) for size in sizes)]


def _check(input, weight, bias, transposed: bool, groups: int) -> None:
    x, w = input._array, weight._array
    if x.dtype != w.dtype:
        raise DTypeError(
            f"expected scalar type {_type_name(x.dtype)} but found {_type_name(w.dtype)} "
            f"(input {input._describe()}, weight {weight._describe()}). Hint: convert the "
            f"input with .to({weight.dtype!r}) or the module with .double()/.float().")
    if x.dtype.kind != "f":
        raise NotImplementedError(
            f'"slow_conv2d_cpu" not implemented for \'{_type_name(x.dtype)}\' '
            f"({input._describe()}). Hint: convert the input with .float().")
    if bias is not None:
        if bias._array.dtype != x.dtype:
            raise DTypeError(
                f"Input type ({_type_name(x.dtype).lower()}) and bias type "
                f"({_type_name(bias._array.dtype).lower()}) should be the same")
        expected = w.shape[1] * groups if transposed else w.shape[0]
        if bias._array.shape != (expected,):
            raise ShapeError(
                f"Given weight of size {list(w.shape)}, expected bias to be 1-dimensional "
                f"with {expected} elements, but got bias of size {list(bias._array.shape)} "
                "instead")
    if w.shape[0] % groups:
        raise ShapeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at "
            f"dimension 0, but got weight of size [{list(w.shape)}] instead")
    channels = w.shape[0] if transposed else w.shape[1] * groups
    if x.shape[1] != channels:
        raise ShapeError(
            f"Given {'transposed=1, ' if transposed else f'groups={groups}, '}weight of size "
            f"{list(w.shape)}, expected input{list(x.shape)} to have {channels} channels, but "
            f"got {x.shape[1]} channels instead ({input._describe()}). Hint: the input's dim 1 "
            f"holds its channels; check in_channels of the layer.")


def _type_name(numpy_dtype) -> str:
    return _dtype.scalar_type_name(numpy_dtype)


# -- unfold / fold ------------------------------------------------------------------------
class Im2Col(Op):
    """``F.unfold``: the sliding blocks of a batched 4-d input as columns (N, C*K, L)."""

    node_name = "Im2ColBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a, kernel, dilation, pads, stride):
        x = a._array
        ctx.params = (kernel, dilation, pads, stride)
        ctx.input_sizes = x.shape[2:]
        columns, _ = im2col(a._xp, x, kernel, stride, pads, dilation)
        return a._xp.ascontiguousarray(columns)

    @staticmethod
    def backward(ctx, grad):
        kernel, dilation, pads, stride = ctx.params
        return (_math.apply(Col2Im, grad, ctx.input_sizes, kernel, dilation, pads, stride),
                None, None, None, None)


class Col2Im(Op):
    """``F.fold``: columns (N, C*K, L) summed back into an image (N, C, *output_size)."""

    node_name = "Col2ImBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a, output_size, kernel, dilation, pads, stride):
        x = a._array
        blocks = _product(kernel)
        sizes = out_sizes(output_size, kernel, stride, pads, dilation)
        if x.shape[1] % blocks:
            raise ShapeError(
                f"Expected size of input's dimension 1 to be divisible by the product of "
                f"kernel_size, but got input.size(1)={x.shape[1]} and "
                f"kernel_size={tuple(kernel)} ({a._describe()})")
        if x.shape[2] != _product(sizes):
            raise ShapeError(
                f"Given output_size={tuple(output_size)}, kernel_size={tuple(kernel)}, "
                f"dilation={tuple(dilation)}, padding={tuple(p for p, _ in pads)}, "
                f"stride={tuple(stride)}, expected size of input's dimension 2 to match the "
                f"calculated number of sliding blocks {' * '.join(map(str, sizes))} = "
                f"{_product(sizes)}, but got input.size(2)={x.shape[2]}.")
        ctx.params = (kernel, dilation, pads, stride)
        canvas = tuple(size + before + after for size, (before, after)
                       in zip(output_size, pads))
        summed = col2im(a._xp, x, x.shape[1] // blocks, canvas, kernel, stride, dilation,
                        sizes)
        return a._xp.ascontiguousarray(crop(summed, pads, output_size))

    @staticmethod
    def backward(ctx, grad):
        kernel, dilation, pads, stride = ctx.params
        return (_math.apply(Im2Col, grad, kernel, dilation, pads, stride),
                None, None, None, None, None)


def _show_window_parameters(op) -> None:
    """im2col's and col2im's ``kernel_size``, ``dilation``, ``padding``, ``stride`` as
    torch's nodes keep them (padding one number per side pair)."""
    for index, name in enumerate(("kernel_size", "dilation", "padding", "stride")):
        show_saved(op, name, lambda node, index=index: _window_parameter(node, index))


def _window_parameter(node, index: int) -> tuple:
    value = node.params[index]
    return tuple(pair[0] for pair in value) if index == 2 else tuple(value)


_show_window_parameters(Im2Col)
_show_window_parameters(Col2Im)
show_saved(Im2Col, "self_sym_argsize_minus_1", lambda node: node.input_sizes[-1])
show_saved(Im2Col, "self_sym_argsize_minus_2", lambda node: node.input_sizes[-2])
