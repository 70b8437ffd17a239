"""Every op in ``tracegrad.ops.registry()`` against finite differences, and against torch.

``CASES`` says how to call each op. An op in the registry without a case fails
``test_every_registered_op_has_a_case``, so a new op cannot go untested. Each case is
written once as ``call(lib, *inputs)`` and runs with ``lib = tracegrad`` and, where torch is
installed, ``lib = torch`` on the same float64 data.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import ops
from tracegrad.ops import indexing
from tracegrad.ops import shape as shape_ops
from tracegrad.ops.conversion import ToDevice


@dataclass(frozen=True)
class Case:
    shapes: tuple  # one shape per float64 input that requires grad
    call: Callable  # call(lib, *inputs) -> tensor or tuple of tensors
    positive: tuple = ()  # indices of inputs drawn from [0.5, 2) (log, sqrt, pow bases)
    in_torch: bool = True  # False for internal ops torch has no public form of
    gradcheck: dict = field(default_factory=dict)  # extra gradcheck keywords


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
    "Clamp": [Case(((3, 4),), lambda L, x: x.clamp(-0.5, 0.5))],
    "ClampMax": [Case(((3, 4),), lambda L, x: x.clamp(max=0.3))],
    "ClampMin": [Case(((3, 4),), lambda L, x: x.clamp(min=-0.2))],
    "Clone": [Case(((3, 4),), lambda L, x: x.clone())],
    "Copy": [Case(((3, 4), (4,)), _copy_into)],
    "Cos": [Case(((3, 4),), lambda L, x: x.cos())],
    "Div": [Case(((3, 4), (3, 1)), lambda L, a, b: a / b, positive=(1,)),
            Case(((3,),), lambda L, b: 2.0 / b, positive=(0,))],
    "Dot": [Case(((5,), (5,)), lambda L, a, b: L.dot(a, b))],
    "Exp": [Case(((3, 4),), lambda L, x: x.exp())],
    "Alias": [Case(((3, 4),), lambda L, x: x[...])],
    "AsStrided": [Case(((3, 4),), lambda L, x: x.as_strided((2, 2), (1, 2), 1)),
                  Case(((3, 4), (3, 4)), _view_read_after_base_changed),
                  Case(((3, 4),), _as_strided_backward_accumulates)],
    "Diagonal": [Case(((3, 4),), lambda L, x: x.diagonal()),
                 Case(((3, 4),), lambda L, x: x.diagonal(1)),
                 Case(((2, 3, 4),), lambda L, x: L.diagonal(x, -1, 0, 2))],
    "DiagonalBackward": [Case(((3,),), lambda L, g: shape_ops.DiagonalBackward.apply(
        g, (3, 4), 1, 0, 1), in_torch=False)],
    "Expand": [Case(((3, 1),), lambda L, x: x.expand(2, 3, 4))],
    "Fill": [Case(((3, 4),), _fill)],
    "FillTensor": [Case(((3, 4), ()), _fill_tensor)],
    "Gather": [Case(((3, 4),), lambda L, x: x.gather(1, L.tensor([[0, 0], [1, 3], [2, 1]])))],
    "Index": [Case(((4, 3),), lambda L, x: x[L.tensor([0, 2, 2])]),
              Case(((4, 3),), lambda L, x: x[x > 0]),
              Case(((4, 3),), lambda L, x: x[[0, 3, 3], [1, 2, 2]])],
    "IndexAccumulate": [Case(((3, 2),), lambda L, g: indexing.IndexAccumulate.apply(
        g, shape=(4, 2), index=np.array([0, 2, 2])), in_torch=False)],
    "IndexPut": [Case(((4, 3), (2, 3)), _index_put_rows),
                 Case(((4, 3), (4, 1)), _index_put_column),
                 Case(((4, 3),), _index_put_mask)],
    "Log": [Case(((3, 4),), lambda L, x: x.log(), positive=(0,))],
    "LogSoftmax": [Case(((3, 4),), lambda L, x: x.log_softmax(dim=1)),
                   Case(((3, 4),), lambda L, x: L.log_softmax(x, 0))],
    "MaskedFill": [Case(((3, 4),), lambda L, x: x.masked_fill(
        L.tensor([True, False, False, True]), 0.5))],
    "Matmul": [Case(((2, 3, 4), (4, 5)), lambda L, a, b: a @ b),
               Case(((4,), (2, 4, 3)), lambda L, a, b: L.matmul(a, b)),
               Case(((2, 1, 3, 4), (3, 4, 2)), lambda L, a, b: a.matmul(b))],
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
    "Neg": [Case(((3, 4),), lambda L, x: -x)],
    "Permute": [Case(((2, 3, 4),), lambda L, x: x.permute(2, 0, 1))],
    "Pow": [Case(((3, 4), (3, 4)), lambda L, a, b: a ** b, positive=(0,))],
    "RPow": [Case(((3, 4),), lambda L, b: 2.0 ** b), Case(((3, 4),), lambda L, b: L.pow(3.0, b))],
    "PowScalar": [Case(((3, 4),), lambda L, x: x ** 3),
                  Case(((3, 4),), lambda L, x: x.pow(0.5), positive=(0,))],
    "RSub": [Case(((3, 4),), lambda L, x: 1.0 - x)],
    "Relu": [Case(((3, 4),), lambda L, x: x.relu())],
    "Repeat": [Case(((2, 3),), lambda L, x: x.repeat(2, 1, 2))],
    "Scatter": [Case(((4, 4), (3, 2)), lambda L, x, src: x.scatter(1, _rows(L), src)),
                Case(((4, 4),), lambda L, x: x.scatter(1, _rows(L), 1.5))],
    "ScatterAdd": [Case(((4, 4), (3, 2)), lambda L, x, src: x.scatter_add(
        1, L.tensor([[0, 0], [1, 3], [3, 3]]), src))],
    "ScatterInto": [Case(((3, 2),), lambda L, src: indexing.ScatterInto.apply(
        src, shape=(3, 4), dim=1, index=np.array([[0, 0], [1, 3], [3, 2]]), accumulate=True),
        in_torch=False)],
    "Select": [Case(((3, 4),), lambda L, x: x[1]),
               Case(((2, 3, 4),), lambda L, x: x[:, 2, 1:])],
    "Sigmoid": [Case(((3, 4),), lambda L, x: x.sigmoid())],
    "Silu": [Case(((3, 4),), lambda L, x: L.nn.functional.silu(x * 4))],
    "Sin": [Case(((3, 4),), lambda L, x: L.sin(x))],
    "Split": [Case(((5, 3),), lambda L, x: L.split(x, 2)),
              Case(((5, 3),), lambda L, x: L.chunk(x, 3))],
    "SplitWithSizes": [Case(((5, 3),), lambda L, x: x.split([1, 2], dim=1))],
    "Slice": [Case(((4, 5),), lambda L, x: x[1:, ::2]),
              Case(((4, 5),), lambda L, x: x[None, ..., 1:3])],
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
    "UnsafeView": [Case(((3, 4),), lambda L, x: x.t().reshape(-1))],
    "Unsqueeze": [Case(((3, 4),), lambda L, x: x.unsqueeze(1))],
    "View": [Case(((3, 4),), lambda L, x: x.view(12)),
             Case(((3, 4),), lambda L, x: x.view(-1, 2)),
             Case(((3, 4),), lambda L, x: x.reshape(2, 6))],
    "Where": [Case(((3, 4), (3, 4)), lambda L, a, b: L.where(a > 0, a, b)),
              Case(((3, 4),), lambda L, a: L.where(a > 0, a, 0.0))],
    "Zero": [Case(((3, 4),), _zero)],
}

# Composite functions, built from the ops above: they get the same checks.
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
    "flatten": [Case(((2, 3, 4),), lambda L, x: x.flatten(1))],
    "expand_as": [Case(((3, 1), (3, 4)), lambda L, a, b: a.expand_as(b) * b)],
    "contiguous": [Case(((3, 4),), lambda L, x: x.t().contiguous())],
    "norm": [Case(((3, 4),), lambda L, x: x.norm())],
}


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


def _node_classes(outputs) -> set:
    found, stack = set(), [o.grad_fn for o in outputs if o.grad_fn is not None]
    while stack:
        node = stack.pop()
        if type(node) in found:
            continue
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
    inputs = _inputs(tg, _arrays(name, index, case))
    assert tg.autograd.gradcheck(lambda *xs: case.call(tg, *xs), inputs,
                                 **{"eps": 1e-6, "atol": 1e-5, "rtol": 1e-3, **case.gradcheck})


# Ops whose backward is not itself differentiable in a way finite differences can check:
# kinks (relu, abs, clamp, max) have a zero second derivative almost everywhere, which
# gradgradcheck does verify; nothing is excluded today -- keep it that way.
@pytest.mark.parametrize("name,index", _ids(ALL), ids=lambda value: str(value))
def test_second_derivative_matches_finite_differences(name, index):
    case = _case(name, index)
    if case.gradcheck.get("eps", 1e-6) != 1e-6:
        pytest.skip("float32 inside: second differences are too coarse")
    inputs = _inputs(tg, _arrays(name, index, case))
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
