"""Matrix products: mm, mv, dot, bmm, the add-and-multiply family (addmm, addmv, addbmm,
baddbmm), and matmul, which decomposes exactly as torch's does so the graph has torch's
nodes: a batch of matrices times a matrix is folded into one ``mm`` and viewed back
(UnsafeViewBackward0); two batches broadcast, fold into ``bmm`` and view back.
"""

from __future__ import annotations

import operator

from .._dtype import scalar_type_name
from ..autograd.function import Op
from ..autograd.quiet import FLOAT_ERRORS, retry, silenced
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from . import _math
from ._operands import broadcast_error, check_same_device
from ._saved import show_input_sizes, show_saved


def _torch_dtype_name(tensor) -> str:
    return {"float32": "float", "float64": "double", "float16": "c10::Half",
            "int64": "long int", "int32": "int"}.get(tensor.dtype.name, tensor.dtype.name)


def _check_dtypes(op_name: str, a, b) -> None:
    if a._array.dtype != b._array.dtype:
        raise DTypeError(
            f"expected m1 and m2 to have the same dtype, but got: {_torch_dtype_name(a)} != "
            f"{_torch_dtype_name(b)} ({op_name}: {a._describe()} and {b._describe()}). Hint: "
            f"convert one with .to({a.dtype!r}) or .double().")


def save_operands(ctx, a, b, first: int = 0) -> None:
    """Save the two factors of a product, each only when the other's gradient needs it
    (``a`` is needed only for ``b``'s gradient and the other way round), as torch does:
    ``x.mm(w)`` with only ``w`` requiring grad keeps ``x`` and not ``w``. ``first`` is the
    position of ``a`` among the op's arguments (addmm's input comes before it). With
    nothing recorded (``needs_input_grad`` is empty) nothing is saved."""
    needs = ctx.needs_input_grad
    if needs:
        ctx.save_for_backward(a if needs[first + 1] else None, b if needs[first] else None)


def _described(a, b) -> str:
    return f"\n  input 0: {a._describe()}\n  input 1: {b._describe()}"


def _mm_mismatch(a, b, rows: int, inner: int, other_rows: int, columns: int) -> ShapeError:
    return ShapeError(
        f"mat1 and mat2 shapes cannot be multiplied ({rows}x{inner} and {other_rows}x"
        f"{columns}): inner dimensions {inner} and {other_rows} differ{_described(a, b)}"
        f"\nHint: the last dimension of input 0 must equal the first of input 1; transpose "
        f"with .t() or check which weight you meant.")


def _require_dim(op_name: str, tensor, ndim: int, label: str) -> None:
    if tensor._array.ndim != ndim:
        raise ShapeError(f"{label} must be a {'matrix' if ndim == 2 else f'{ndim}D tensor'} "
                         f"({op_name}: got {tensor._describe()}). Hint: use matmul (or @) "
                         "for other ranks.")


def _check_pair(op_name: str, a, b) -> None:
    if a._array.dtype is not b._array.dtype:
        _check_dtypes(op_name, a, b)
    if type(a._array) is not type(b._array):
        check_same_device(op_name, (a, b))


class Mm(Op):
    node_name = "MmBackward0"
    array_backward = True
    saved_names = ("self", "mat2")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a, b):
        save_operands(ctx, a, b)
        # For grad_fn._saved_*_sym_sizes/strides: the inner size and the strides in bytes,
        # the least to read per call (mm is hot); the outer sizes and the item size come
        # from the node's output meta when the attribute is read.
        result = Mm.product(a, b)  # first: it checks that both are matrices
        x, y = a._array, b._array
        ctx._layouts = (x.shape[1], x.strides, y.strides)
        return result

    @staticmethod
    def product(a, b):
        """``a @ b`` for two matrices, checked (addmm's forward shares it)."""
        x, y = a._array, b._array
        if x.ndim != 2:
            _require_dim("mm", a, 2, "self")
        if y.ndim != 2:
            _require_dim("mm", b, 2, "mat2")
        if x.shape[1] != y.shape[0]:
            raise _mm_mismatch(a, b, x.shape[0], x.shape[1], y.shape[0], y.shape[1])
        _check_pair("mm", a, b)
        try:
            return x @ y
        except FLOAT_ERRORS:  # inf or nan with warnings as errors: torch is silent
            return retry(operator.matmul, x, y)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        needs = ctx.needs_input_grad
        columns_a, columns_b = _column_major_operands(ctx, grad, ctx._input_meta[0][0])
        return (_mat1_grad(grad, b, columns_a) if needs[0] else None,
                _mat2_grad(grad, a, columns_b) if needs[1] else None)


def _column_major_operands(ctx, grad, mat1_shape) -> tuple[bool, bool]:
    """Whether mm's operands were column-major (strides (1, rows)): torch's
    mm_mat1_backward and mm_mat2_backward then compute the gradient transposed (a graph
    of their own under create_graph). Only asked of Tensors: the arrays' values are the
    same either way."""
    if grad.__class__ is not Tensor:
        return False, False
    inner, strides_a, strides_b = ctx._layouts
    rows = mat1_shape[0]
    itemsize = grad._array.itemsize
    return (strides_a == (itemsize, rows * itemsize),
            strides_b == (itemsize, inner * itemsize))


def _mat1_grad(grad, mat2, column_major: bool):
    """torch's mm_mat1_backward (alpha aside)."""
    if column_major:
        return _math.t(_math.mm(mat2, _math.t(grad)))
    return _math.mm(grad, _math.t(mat2))


def _mat2_grad(grad, mat1, column_major: bool):
    """torch's mm_mat2_backward (alpha aside)."""
    if column_major:
        return _math.t(_math.mm(_math.t(grad), mat1))
    return _math.mm(_math.t(mat1), grad)


def _saved_sizes(position: int):
    def read(node) -> tuple:
        rows, columns = node._output_meta[0][0]
        inner = node._layouts[0]
        return (rows, inner) if position == 0 else (inner, columns)

    return read


def _saved_strides(position: int):
    """torch keeps an operand's strides (in elements) only when its gradient is needed,
    and shows () otherwise."""
    def read(node) -> tuple:
        needs = node.needs_input_grad
        if not (needs and needs[position]):
            return ()
        itemsize = node._output_meta[0][1].itemsize  # mm's operands share the result's dtype
        return tuple(stride // itemsize for stride in node._layouts[1 + position])

    return read


for _position, _operand in enumerate(("self", "mat2")):
    show_saved(Mm, f"{_operand}_sym_sizes", _saved_sizes(_position))
    show_saved(Mm, f"{_operand}_sym_strides", _saved_strides(_position))


class Mv(Op):
    node_name = "MvBackward0"
    array_backward = True
    saved_names = ("self", "vec")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a, v):
        save_operands(ctx, a, v)
        return Mv.product(a, v)

    @staticmethod
    def product(a, v):
        """``a @ v`` for a matrix and a vector, checked (addmv's forward shares it)."""
        x, y = a._array, v._array
        if x.ndim != 2 or y.ndim != 1:
            raise ShapeError(
                f"vector + matrix @ vector expected, got {x.ndim}, {x.ndim}, {y.ndim} (mv: "
                f"{a._describe()} and {v._describe()}). Hint: mv takes a matrix and a vector; "
                "use matmul for other ranks.")
        if x.shape[1] != y.shape[0]:
            raise ShapeError(
                f"size mismatch, got input ({x.shape[0]}), mat ({x.shape[0]}x{x.shape[1]}), "
                f"vec ({y.shape[0]}){_described(a, v)}\nHint: the matrix's last dimension "
                "must equal the vector's length.")
        _check_pair("mv", a, v)
        try:
            return x @ y
        except FLOAT_ERRORS:  # inf or nan with warnings as errors: torch is silent
            return retry(operator.matmul, x, y)

    @staticmethod
    def backward(ctx, grad):
        a, v = ctx.saved_tensors
        needs = ctx.needs_input_grad
        return (_math.outer(grad, v) if needs[0] else None,
                _math.mv(_math.t(a), grad) if needs[1] else None)


class Outer(Op):
    """The outer product of two vectors, the backward of mv (torch records outer itself as
    a broadcast MulBackward0)."""

    node_name = "MulBackward0"
    array_backward = True
    saved_names = ("self", "other")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    @silenced
    def forward(ctx, a, b):
        save_operands(ctx, a, b)
        return a._array[:, None] * b._array[None, :]

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        needs = ctx.needs_input_grad
        return (_math.mv(grad, b) if needs[0] else None,
                _math.mv(_math.t(grad), a) if needs[1] else None)


class Dot(Op):
    node_name = "DotBackward0"
    array_backward = True
    saved_names = ("self", "tensor")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a, b):
        x, y = a._array, b._array
        if x.ndim != 1 or y.ndim != 1:
            raise ShapeError(
                f"1D tensors expected, but got {x.ndim}D and {y.ndim}D tensors (dot: "
                f"{a._describe()} and {b._describe()}). Hint: dot is the vector inner product; "
                "use matmul (or @) for matrices, or flatten them first.")
        if x.shape[0] != y.shape[0]:
            raise ShapeError(
                f"inconsistent tensor size, expected tensor [{x.shape[0]}] and src "
                f"[{y.shape[0]}] to have the same number of elements, but got {x.shape[0]} "
                f"and {y.shape[0]} elements respectively{_described(a, b)}\nHint: dot "
                "multiplies two vectors of equal length elementwise and sums.")
        if x.dtype is not y.dtype:
            raise DTypeError(
                f"dot : expected both vectors to have same dtype, but found "
                f"{scalar_type_name(a._array.dtype)} and {scalar_type_name(b._array.dtype)} "
                f"({a._describe()} and "
                f"{b._describe()}). Hint: convert one with .to().")
        save_operands(ctx, a, b)
        try:
            return a._xp.asarray(x @ y)
        except FLOAT_ERRORS:  # inf or nan with warnings as errors: torch is silent
            return a._xp.asarray(retry(operator.matmul, x, y))

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        needs = ctx.needs_input_grad
        return (grad * b if needs[0] else None, grad * a if needs[1] else None)


class Vdot(Dot):
    node_name = "VdotBackward0"
    saved_names = ("self", "other")  # (dot's second is "tensor")


class Bmm(Op):
    node_name = "BmmBackward0"
    array_backward = True
    saved_names = ("self", "mat2")  # grad_fn._saved_<name>, as PyTorch names them

    @staticmethod
    def forward(ctx, a, b):
        save_operands(ctx, a, b)
        return Bmm.product(a, b)

    @staticmethod
    def product(a, b):
        """``a @ b`` for two batches of matrices, checked (baddbmm's forward shares it)."""
        x, y = a._array, b._array
        if x.ndim != 3:
            _require_dim("bmm", a, 3, "batch1")
        if y.ndim != 3:
            _require_dim("bmm", b, 3, "batch2")
        if y.shape[0] != x.shape[0] or y.shape[1] != x.shape[2]:
            raise ShapeError(
                f"Expected size for first two dimensions of batch2 tensor to be: "
                f"[{x.shape[0]}, {x.shape[2]}] but got: [{y.shape[0]}, {y.shape[1]}]."
                f"{_described(a, b)}\nHint: bmm multiplies batch1[i] ({x.shape[1]}x"
                f"{x.shape[2]}) by batch2[i]; both need the same batch size.")
        _check_pair("bmm", a, b)
        try:
            return x @ y
        except FLOAT_ERRORS:  # inf or nan with warnings as errors: torch is silent
            return retry(operator.matmul, x, y)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        needs = ctx.needs_input_grad
        return (_math.bmm(grad, _math.transpose(b, 1, 2)) if needs[0] else None,
                _math.bmm(_math.transpose(a, 1, 2), grad) if needs[1] else None)


def matmul(a, b):
    """``a @ b`` for every rank pair, as torch decomposes it."""
    from .shape import Expand, Reshape, SqueezeInPlace, Transpose, Unsqueeze, in_place

    dim_a, dim_b = a._array.ndim, b._array.ndim
    if dim_a == 0 or dim_b == 0:
        raise ShapeError(
            f"both arguments to matmul need to be at least 1D, but they are {dim_a}D and "
            f"{dim_b}D ({a._describe()} and {b._describe()}). Hint: use * for a product with "
            "a scalar.")
    if dim_a == 1 and dim_b == 1:
        return Dot.apply(a, b)
    if dim_a == 2 and dim_b == 1:
        return Mv.apply(a, b)
    if dim_a == 1 and dim_b == 2:
        return in_place(SqueezeInPlace, Mm.apply(Unsqueeze.apply(a, dim=0), b), 0)
    if dim_a == 2 and dim_b == 2:
        return Mm.apply(a, b)
    if dim_a >= 3 and dim_b <= 2:
        return _folded(a, b)
    if dim_b >= 3 and dim_a <= 2:
        # a @ b == (b.mT @ a.mT).mT: fold the larger one, then transpose back
        b_t = Transpose.apply(b, -2, -1)  # (b.mT, as torch writes it: dims -2, -1)
        if dim_a == 1:
            return _folded(b_t, a)
        result = _folded(b_t, a.t())  # (torch's a.t(): TBackward0)
        from .._memory_format import contiguous_format
        from .shape import Clone

        # (torch's ``.mT.contiguous()``: a row-major clone)
        return Clone.apply(Transpose.apply(result, -2, -1), contiguous_format)
    return _batched(a, b, Expand, Reshape, Unsqueeze)


def _folded(big, small):
    """``big`` (3+ dims) times a matrix or vector: one mm (or mv) on big viewed as rows."""
    from .shape import Reshape, UnsafeView

    inner = big._array.shape[-1]
    rows = Reshape.apply(big, shape=(-1 if big._array.size else 0, inner)) \
        if big._array.size else Reshape.apply(big, shape=(0, inner))
    if small._array.ndim == 1:  # (one mv, as torch folds it: MvBackward0)
        if small._array.shape[0] != inner:
            raise ShapeError(
                f"size mismatch, got input ({rows._array.shape[0]}), mat "
                f"({rows._array.shape[0]}x{inner}), vec ({small._array.shape[0]})"
                f"{_described(big, small)}\nHint: the last dimension of the batch must equal "
                "the vector's length.")
        return UnsafeView.apply(Mv.apply(rows, small), shape=big._array.shape[:-1])
    if small._array.shape[0] != inner:
        raise _mm_mismatch(big, small, rows._array.shape[0], inner, small._array.shape[0],
                           small._array.shape[1])
    product = Mm.apply(rows, small)
    return UnsafeView.apply(product, shape=big._array.shape[:-1] + (small._array.shape[-1],))


def _batched(a, b, Expand, Reshape, Unsqueeze):
    """Two batches: broadcast the batch dims, fold them into one, bmm, view back."""
    from .shape import UnsafeView

    xa, xb = a._array, b._array
    n = xa.shape[-2] if xa.ndim > 1 else 1
    m1 = xa.shape[-1]
    m2 = xb.shape[-2] if xb.ndim > 1 else xb.shape[0]
    p = xb.shape[-1] if xb.ndim > 1 else 1
    try:
        batch = tuple(a._xp.broadcast_shapes(xa.shape[:-2], xb.shape[:-2]))
    except ValueError:
        raise broadcast_error("matmul", _BatchView(a, xa.shape[:-2]),
                              _BatchView(b, xb.shape[:-2])) from None
    if m1 != m2:
        raise ShapeError(
            f"Expected size for first two dimensions of batch2 tensor to be: "
            f"[{_product(batch)}, {m1}] but got: [{_product(batch)}, {m2}].{_described(a, b)}"
            f"\nHint: in a batched matmul the last dimension of input 0 ({m1}) must equal the "
            f"second-to-last of input 1 ({m2}).")
    count = _product(batch)
    left = Reshape.apply(Expand.apply(a, shape=batch + (n, m1)), shape=(count, n, m1))
    if xb.ndim == 1:
        right = Unsqueeze.apply(Reshape.apply(Expand.apply(b, shape=batch + (m2,)),
                                              shape=(count, m2)), dim=2)
    else:
        right = Reshape.apply(Expand.apply(b, shape=batch + (m2, p)), shape=(count, m2, p))
    shape = batch + ((n,) if xa.ndim > 1 else ()) + ((p,) if xb.ndim > 1 else ())
    return UnsafeView.apply(Bmm.apply(left, right), shape=shape)


class _BatchView:
    """A tensor's batch dims, for broadcast_error's message."""

    def __init__(self, tensor, shape) -> None:
        self.shape = tuple(shape)
        self._tensor = tensor

    def _describe(self) -> str:
        return self._tensor._describe()


def _product(values) -> int:
    result = 1
    for value in values:
        result *= value
    return result


# -- add-and-multiply ------------------------------------------------------------------
def _scaled(tensor, factor):
    """torch's maybe_multiply: a mul.Scalar (MulBackward1) unless the factor is 1."""
    return tensor if factor == 1 else _math.scaled(tensor, factor)


def _input_grad(grad, beta, shape):
    if beta == 0:
        return grad * 0 if shape == tuple(grad.shape) else _math.sum_to(grad * 0, shape)
    return _math.sum_to(_scaled(grad, beta), shape)


def _combine(xp, base, product, beta, alpha, op_name, input_tensor):
    try:
        return _combined(xp, base, product, beta, alpha, op_name, input_tensor)
    except FLOAT_ERRORS:  # inf - inf, with warnings as errors: torch is silent
        return retry(_combined, xp, base, product, beta, alpha, op_name, input_tensor)


def _combined(xp, base, product, beta, alpha, op_name, input_tensor):
    scaled_product = product if alpha == 1 else product * alpha
    try:
        if beta == 0:  # torch ignores the input entirely (NaN in it does not propagate)
            return xp.broadcast_to(scaled_product, xp.broadcast_shapes(
                base.shape, scaled_product.shape)).copy()
        return (base if beta == 1 else base * beta) + scaled_product
    except ValueError:
        raise ShapeError(
            f"The expanded size of the tensor ({list(scaled_product.shape)}) must match the "
            f"existing size ({list(base.shape)}) of the input ({op_name}: "
            f"{input_tensor._describe()}). Hint: the added tensor must broadcast to the "
            f"product's shape {list(scaled_product.shape)}.") from None


class Addmm(Op):
    """``beta * input + alpha * (mat1 @ mat2)``."""

    node_name = "AddmmBackward0"
    array_backward = True
    saved_names = ("mat1", "mat2", "alpha=alpha", "beta=beta")  # as PyTorch names them

    @staticmethod
    def forward(ctx, a, m1, m2, beta=1, alpha=1):
        product = Mm.product(m1, m2)
        save_operands(ctx, m1, m2, first=1)
        ctx.beta, ctx.alpha = beta, alpha
        ctx._layouts = (m1._array.shape[1], m1._array.strides, m2._array.strides)
        return _combine(a._xp, a._array, product, beta, alpha, "addmm", a)

    @staticmethod
    def backward(ctx, grad):
        m1, m2 = ctx.saved_tensors
        needs = ctx.needs_input_grad
        alpha = ctx.alpha
        columns_1, columns_2 = _column_major_operands(ctx, grad, ctx._input_meta[1][0])
        return (_input_grad(grad, ctx.beta, ctx._input_meta[0][0]) if needs[0] else None,
                _scaled(_mat1_grad(grad, m2, columns_1), alpha) if needs[1] else None,
                _scaled(_mat2_grad(grad, m1, columns_2), alpha) if needs[2] else None, None,
                None)


class Addmv(Op):
    node_name = "AddmvBackward0"
    array_backward = True
    saved_names = ("mat", "vec", "alpha=alpha", "beta=beta")  # as PyTorch names them

    @staticmethod
    def forward(ctx, a, mat, vec, beta=1, alpha=1):
        product = Mv.product(mat, vec)
        save_operands(ctx, mat, vec, first=1)
        ctx.beta, ctx.alpha = beta, alpha
        return _combine(a._xp, a._array, product, beta, alpha, "addmv", a)

    @staticmethod
    def backward(ctx, grad):
        mat, vec = ctx.saved_tensors
        needs = ctx.needs_input_grad
        alpha = ctx.alpha
        return (_input_grad(grad, ctx.beta, ctx._input_meta[0][0]) if needs[0] else None,
                _scaled(_math.outer(grad, vec), alpha) if needs[1] else None,
                _scaled(_math.mv(_math.t(mat), grad), alpha) if needs[2] else None, None, None)


class Baddbmm(Op):
    node_name = "BaddbmmBackward0"
    array_backward = True
    saved_names = ("batch1", "batch2", "alpha=alpha", "beta=beta")  # as PyTorch names them

    @staticmethod
    def forward(ctx, a, b1, b2, beta=1, alpha=1):
        product = Bmm.product(b1, b2)
        save_operands(ctx, b1, b2, first=1)
        ctx.beta, ctx.alpha = beta, alpha
        return _combine(a._xp, a._array, product, beta, alpha, "baddbmm", a)

    @staticmethod
    def backward(ctx, grad):
        b1, b2 = ctx.saved_tensors
        needs = ctx.needs_input_grad
        alpha = ctx.alpha
        return (_input_grad(grad, ctx.beta, ctx._input_meta[0][0]) if needs[0] else None,
                _scaled(_math.bmm(grad, _math.transpose(b2, 1, 2)), alpha)
                if needs[1] else None,
                _scaled(_math.bmm(_math.transpose(b1, 1, 2), grad), alpha)
                if needs[2] else None,
                None, None)


class Addbmm(Op):
    """``beta * input + alpha * sum_i batch1[i] @ batch2[i]``."""

    node_name = "AddbmmBackward0"
    array_backward = True
    saved_names = ("batch1", "batch2", "alpha=alpha", "beta=beta")  # as PyTorch names them

    @staticmethod
    def forward(ctx, a, b1, b2, beta=1, alpha=1):
        product = Bmm.product(b1, b2).sum(axis=0)
        save_operands(ctx, b1, b2, first=1)
        ctx.beta, ctx.alpha = beta, alpha
        return _combine(a._xp, a._array, product, beta, alpha, "addbmm", a)

    @staticmethod
    def backward(ctx, grad):
        b1, b2 = ctx.saved_tensors
        needs = ctx.needs_input_grad
        alpha = ctx.alpha
        batches = b1.shape[0]
        spread = _math.expand(_math.unsqueeze(grad, 0), (batches, *grad.shape))
        return (_input_grad(grad, ctx.beta, ctx._input_meta[0][0]) if needs[0] else None,
                _scaled(_math.apply(Bmm, spread, _math.transpose(b2, 1, 2)), alpha)
                if needs[1] else None,
                _scaled(_math.apply(Bmm, _math.transpose(b1, 1, 2), spread), alpha)
                if needs[2] else None,
                None, None)


class Trace(Op):
    """``torch.trace(x)``: the sum of a matrix's main diagonal."""

    node_name = "TraceBackward0"
    array_backward = True

    @staticmethod
    def forward(ctx, a):
        x = a._array
        if x.ndim != 2:
            raise ShapeError(
                f"trace: expected a matrix, but got tensor with dim {x.ndim} "
                f"({a._describe()}). Hint: torch.trace is the matrix trace; tracegrad's "
                "recorder is tracegrad.record().")
        return a._xp.asarray(x.trace())

    @staticmethod
    def backward(ctx, grad):
        (shape, numpy_dtype), = ctx._input_meta
        return (_math.constant(grad, _math.xp(grad).eye(*shape, dtype=numpy_dtype)) * grad,)


show_input_sizes(Trace)
show_saved(Addbmm, "batch1_sym_argsize_0", lambda node: node._input_meta[1][0][0])
show_saved(Addbmm, "batch1_sym_argsize_1", lambda node: node._input_meta[1][0][1])
show_saved(Addbmm, "batch2_sym_argsize_2", lambda node: node._input_meta[2][0][2])
