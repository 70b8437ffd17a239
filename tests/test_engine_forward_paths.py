"""The recorded forward's fast paths (issue 14) mean exactly what the general path means.

``a * b`` and friends go through ``apply_binary``: two tensors are wired by
``_connect_pair``, a tensor and a number by ``_connect_one``, nothing to record by
``_untracked``; ``Op.apply`` goes through ``connect`` and ``_finish``. Add, Sub, Mul and Div
take two alike tensors' arrays without ``operands()``, and Add/Sub read their operand
shapes from the node's input metadata. Each test here holds a fast path to the general
path (``Op.apply`` with the same arguments) and, where torch is installed, to torch:
grad_fn names, next_functions, needs_input_grad, saved tensors and their versions, dtype
promotion, requires_grad, no_grad and inference_mode, and the errors.
"""

from __future__ import annotations

import numpy as np
import pytest
from tutorial_programs import GoodSquare

import tracegrad as tg
from tracegrad.autograd.function import _input_meta_cache, _output_meta_cache
from tracegrad.ops.arith import Add, Div, Mul, Pow, Sub

OPERATORS = {
    "add": (lambda a, b: a + b, Add),
    "sub": (lambda a, b: a - b, Sub),
    "mul": (lambda a, b: a * b, Mul),
    "div": (lambda a, b: a / b, Div),
}


def _edges(tensor) -> list:
    """next_functions as (node name or None, input_nr), comparable across libraries."""
    return [(None if node is None else type(node).__name__, number)
            for node, number in tensor.grad_fn.next_functions]


def _structure(tensor) -> tuple:
    node = tensor.grad_fn
    if node is None:
        return (tensor.requires_grad, None)
    return (tensor.requires_grad, type(node).__name__, _edges(tensor),
            tuple(node.next_functions[i][0] for i in range(len(node.next_functions))))


def _make(library, requires, dtype_a="float32", dtype_b="float32", shape_b=(3,)):
    a = library.tensor(np.array([1.5, -2.0, 3.0], dtype=dtype_a))
    b = library.tensor(np.full(shape_b, 0.5, dtype=dtype_b))
    if requires[0]:
        a = (a * 1).requires_grad_() if a.is_floating_point() else a
    if requires[1]:
        b = (b * 1).requires_grad_() if b.is_floating_point() else b
    return a, b


@pytest.mark.parametrize("name", sorted(OPERATORS))
@pytest.mark.parametrize("requires", [(True, False), (False, True), (True, True),
                                      (False, False)])
def test_two_tensors_wire_as_the_general_path_does(name, requires):
    operator, op = OPERATORS[name]
    a, b = _make(tg, requires)
    fast, general = operator(a, b), op.apply(a, b)
    assert _structure(fast) == _structure(general)
    np.testing.assert_array_equal(fast.detach().numpy(), general.detach().numpy())
    if fast.grad_fn is not None:
        node, other = fast.grad_fn, general.grad_fn
        assert node.needs_input_grad == other.needs_input_grad
        assert node._input_meta == other._input_meta
        assert node._output_meta == other._output_meta
        assert [type(saved) for saved in node._saved] == [type(s) for s in other._saved]
        assert node._seq < other._seq  # numbered in the order they were made


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(OPERATORS))
@pytest.mark.parametrize("requires", [(True, False), (False, True), (True, True)])
def test_two_tensors_match_torch_grad_fn_edges_and_gradients(name, requires):
    torch = pytest.importorskip("torch")
    operator, _ = OPERATORS[name]
    ours_a, ours_b = _make(tg, requires)
    theirs_a, theirs_b = _make(torch, requires)
    ours, theirs = operator(ours_a, ours_b), operator(theirs_a, theirs_b)
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__
    assert _edges(ours) == _edges(theirs)
    for leaf in (ours_a, ours_b, theirs_a, theirs_b):
        if leaf.requires_grad:
            leaf.retain_grad()
    ours.sum().backward()
    theirs.sum().backward()
    for mine, reference in ((ours_a, theirs_a), (ours_b, theirs_b)):
        if reference.requires_grad:
            np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-6)


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(OPERATORS))
@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("int64", "float32"),
                                    ("float64", "int32"), ("int64", "int64"),
                                    ("float16", "float32")])
def test_mixed_dtypes_promote_as_torch_does(name, dtypes):
    torch = pytest.importorskip("torch")
    operator, op = OPERATORS[name]
    requires = (dtypes[0].startswith("float"), dtypes[1].startswith("float"))
    ours = operator(*_make(tg, requires, *dtypes))
    theirs = operator(*_make(torch, requires, *dtypes))
    general = op.apply(*_make(tg, requires, *dtypes))
    assert str(ours.dtype) == str(general.dtype)
    assert str(ours.dtype).rsplit(".", 1)[1] == str(theirs.dtype).rsplit(".", 1)[1]
    assert ours.requires_grad == theirs.requires_grad == general.requires_grad
    assert (ours.grad_fn is None) == (theirs.grad_fn is None)
    if theirs.grad_fn is not None:
        assert _edges(ours) == _edges(theirs)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-3)


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(OPERATORS))
@pytest.mark.parametrize("number_first", [False, True])
def test_a_tensor_and_a_number_get_torchs_two_edges(name, number_first):
    torch = pytest.importorskip("torch")
    operator, _ = OPERATORS[name]

    def run(library):
        x = library.tensor([1.0, 2.0, 4.0], requires_grad=True)
        y = operator(3, x) if number_first else operator(x, 3)
        y.sum().backward()
        return x, y

    (ours_x, ours), (theirs_x, theirs) = run(tg), run(torch)
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__
    assert _edges(ours) == _edges(theirs)
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-6)


@pytest.mark.torch
def test_an_edge_from_a_later_output_keeps_its_input_nr():
    torch = pytest.importorskip("torch")

    def run(library):
        x = library.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        first, second = x.unbind(0)
        return second * first, first + second

    for ours, theirs, numbers in zip(run(tg), run(torch), ([1, 0], [0, 1])):
        assert _edges(ours) == _edges(theirs)
        assert [number for _, number in _edges(ours)] == numbers


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode", "set_grad_enabled"])
@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_nothing_is_recorded_with_grad_mode_off(mode, name):
    operator, _ = OPERATORS[name]
    a = tg.ones(3, requires_grad=True)
    contexts = {"no_grad": tg.no_grad, "inference_mode": tg.inference_mode,
                "set_grad_enabled": lambda: tg.set_grad_enabled(False)}
    with contexts[mode]():
        for result in (operator(a, a), operator(a, 2.0), operator(2.0, a)):
            assert result.grad_fn is None and not result.requires_grad and result.is_leaf
    assert operator(a, a).grad_fn is not None  # the mode is back on after the block


def test_parameters_take_the_pair_path_and_stay_parameters():
    weight = tg.nn.Parameter(tg.ones(3))
    data = tg.full((3,), 2.0)
    product = weight * data
    assert type(product) is tg.Tensor
    assert _edges(product) == [("AccumulateGrad", 0), (None, 0)]
    assert product.grad_fn.next_functions[0][0].variable is weight
    product.sum().backward()
    assert weight.grad.tolist() == [2.0, 2.0, 2.0]


def test_add_and_sub_store_no_operand_shapes():
    """torch's AddBackward0/SubBackward0 keep only alpha; the engine sums a broadcast
    gradient to each input's shape from the node's input metadata."""
    a = tg.ones(2, 3, requires_grad=True)
    b = tg.ones(3, requires_grad=True)
    total = a + b
    assert "shapes" not in vars(total.grad_fn)
    (total - b).sum().backward()
    assert a.grad.tolist() == [[1.0] * 3] * 2 and b.grad.tolist() == [0.0] * 3


@pytest.mark.torch
@pytest.mark.parametrize("expression", [
    lambda a, b, c: (a + b).sum(), lambda a, b, c: (c - a).sum(),
    lambda a, b, c: a.sub(b, alpha=2).sum(), lambda a, b, c: a.add(c, alpha=-0.5).sum(),
    lambda a, b, c: (2 - b).sum() + (a - 1).sum(), lambda a, b, c: (b + 1.5 + a).sum(),
    lambda a, b, c: (a * c / b).sum(),
])
def test_broadcast_gradients_match_torch(expression):
    torch = pytest.importorskip("torch")

    def run(library):
        a = library.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        b = library.tensor([1.0, 2.0, 4.0], requires_grad=True)
        c = library.tensor([[0.5], [-1.0]], requires_grad=True)
        expression(a, b, c).backward()
        return [t.grad.numpy() for t in (a, b, c) if t.grad is not None]

    for ours, theirs in zip(run(tg), run(torch), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


@pytest.mark.torch
def test_a_saved_operand_changed_in_place_fails_backward_as_in_torch():
    torch = pytest.importorskip("torch")
    for library in (tg, torch):
        x = library.ones(3, requires_grad=True)
        w = library.full((3,), 2.0)
        y = x * w
        assert y.grad_fn._saved_other is not None
        with library.no_grad():
            w.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_the_saved_operands_are_the_inputs_at_their_versions():
    x = tg.ones(3, requires_grad=True)
    w = tg.full((3,), 2.0)
    with tg.no_grad():
        w.mul_(1.5)  # version 1
    node = (x * w).grad_fn
    assert node._saved[0] is None  # x's gradient does not need x
    saved = node._saved[1]
    assert saved.tensor is w and saved.version == 1 and saved.producer is None
    assert node._saved_other is w
    assert node._to_save == ()  # let go once saved
    quotient = (x / w).grad_fn
    assert quotient._saved_self is None and quotient._saved_other is w


def test_saved_tensor_hooks_see_the_fast_paths_saves():
    packed = []
    x = tg.ones(3, requires_grad=True)
    w = tg.full((3,), 2.0)
    with tg.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t,
                                               lambda t: t):
        y = x * w
    assert len(packed) == 1 and packed[0] is w
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.torch
def test_ops_saving_their_outputs_and_multi_output_ops_match_torch():
    torch = pytest.importorskip("torch")

    def run(library):
        x = library.tensor([[3.0, 1.0], [2.0, 5.0]], requires_grad=True)
        exp = x.exp()
        values, indices = x.max(dim=1)
        assert exp.grad_fn._saved_result.tolist() == exp.tolist()
        loss = exp.sum() + (values * 2).sum()
        loss.backward()
        return x, exp, values, indices

    ours, theirs = run(tg), run(torch)
    assert type(ours[2].grad_fn).__name__ == type(theirs[2].grad_fn).__name__
    assert ours[3].grad_fn is None and not ours[3].requires_grad
    assert ours[2].grad_fn.num_outputs == 2
    np.testing.assert_allclose(ours[0].grad.numpy(), theirs[0].grad.numpy(), rtol=1e-6)


def test_an_output_changed_in_place_fails_backward_of_the_op_that_saved_it():
    x = tg.ones(2, requires_grad=True)
    y = x.exp()
    with tg.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="output 0 of Exp, is at version 1"):
        y.sum().backward()


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_shape_errors_are_the_general_paths(name):
    operator, op = OPERATORS[name]
    a = tg.ones(3, requires_grad=True)
    b = tg.ones(4)
    with pytest.raises(RuntimeError) as fast:
        operator(a, b)
    with pytest.raises(RuntimeError) as general:
        op.apply(a, b)
    assert str(fast.value) == str(general.value)
    assert "The size of tensor a (3) must match the size of tensor b (4)" in str(fast.value)


@pytest.mark.torch
def test_bool_subtraction_is_refused_on_the_fast_path_as_in_torch():
    torch = pytest.importorskip("torch")
    for library in (tg, torch):
        mask = library.tensor([True, False])
        with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool"):
            mask - mask


def test_integer_results_get_no_grad_fn():
    x = tg.tensor([1, 2, 3])
    y = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert (x * x).grad_fn is None
    assert (x + y).grad_fn is not None and (x + y).dtype == tg.float32
    assert (x // 2).grad_fn is None


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("shape", [(), (1,), (3,), (2, 3)])
@pytest.mark.parametrize("name", [*sorted(OPERATORS), "pow"])
def test_alike_operands_record_the_general_paths_metadata(name, shape, dtype):
    """Two tensors of one shape and dtype take _connect_pair's alike look-up, and an
    elementwise op's output takes the entry it returns without asking the array: the same
    metadata the general path finds, 0-d results (numpy scalars) included."""
    operator, op = OPERATORS.get(name) or (lambda a, b: a ** b, Pow)
    a = tg.tensor(np.full(shape, 1.5, dtype=dtype), requires_grad=True)
    b = tg.tensor(np.full(shape, 0.5, dtype=dtype))
    fast, general = operator(a, b), op.apply(a, b)
    assert fast.shape == general.shape and fast.dtype == general.dtype
    assert fast.grad_fn._input_meta == general.grad_fn._input_meta
    assert fast.grad_fn._output_meta == general.grad_fn._output_meta
    assert fast.grad_fn._output_meta == ((tuple(shape), np.dtype(dtype), tg.device("cpu")),)


def test_metadata_tuples_are_shared_between_nodes():
    x = tg.ones(5, requires_grad=True)
    w = tg.full((5,), 3.0)
    first, second = (x * w).grad_fn, (x * w).grad_fn
    assert first._input_meta is second._input_meta
    assert first._output_meta is second._output_meta
    assert first.needs_input_grad is second.needs_input_grad
    assert first._next_nrs is second._next_nrs
    assert (x.shape, x._array.dtype) in _output_meta_cache
    assert any(key[:1] == ((5,),) for key in _input_meta_cache)


def test_a_listener_sees_the_fast_paths_ops():
    from tracegrad.tracing import record

    x = tg.ones(2, requires_grad=True)
    w = tg.full((2,), 3.0)
    with record() as trace:
        y = (x * w + 1) - w
    nodes = list(trace.nodes.values())
    assert [node.name for node in nodes] == ["MulBackward0", "AccumulateGrad", "AddBackward0",
                                             "SubBackward0"]
    assert [node.next for node in nodes] == [[(1, 0), (None, 0)], [], [(0, 0), (None, 0)],
                                             [(2, 0), (None, 0)]]
    assert [saved.slot for saved in nodes[0].saved] == ["other"]
    # torch's AddBackward0/SubBackward0 keep alpha only: no operand shapes among the attrs
    assert nodes[2].attrs == {} and nodes[3].attrs == {}
    with record() as trace:
        x.sub(w, alpha=2)
    assert [(node.name, node.attrs) for node in trace.nodes.values()][0] == (
        "SubBackward0", {"alpha": 2})
    assert all(nodes[index].site.file.endswith("test_engine_forward_paths.py")
               for index in (0, 2, 3))
    assert y.grad_fn._site is not None


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
def test_a_function_returning_one_new_tensor_is_wired_as_the_general_path_wires_it():
    x = tg.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = GoodSquare.apply(x)
    node = y.grad_fn
    assert type(node).__name__ == "GoodSquareBackward" and y.requires_grad and not y.is_leaf
    assert y.output_nr == 0 and node._output_meta == ((x._array.shape, x._array.dtype, x.device),)
    assert _edges(y) == [("AccumulateGrad", 0)] and node.needs_input_grad == (True,)
    assert node.saved_tensors[0] is x and node._to_save == ()
    y.sum().backward()
    assert x.grad.tolist() == [2.0, -4.0, 6.0]
    with tg.autograd.detect_anomaly():
        z = GoodSquare.apply(x)
    assert z.grad_fn._site.file.endswith("test_engine_forward_paths.py")


def test_a_function_output_made_by_a_multi_output_op_gets_output_nr_zero():
    class Second(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            with tg.enable_grad():
                mean = tg.var_mean(x, dim=0)[1]
            assert mean.output_nr == 1 and mean._base is None
            return mean

        @staticmethod
        def backward(ctx, grad):
            return grad.expand(2, 3) / 2

    x = tg.ones(2, 3, requires_grad=True)
    y = Second.apply(x)
    assert y.output_nr == 0 and type(y.grad_fn).__name__ == "SecondBackward"
    y.sum().backward()
    assert x.grad.tolist() == [[0.5] * 3, [0.5] * 3]


@pytest.mark.torch
@pytest.mark.parametrize("returned", ["input", "view", "integer", "non_differentiable"])
def test_functions_returning_anything_else_take_the_general_path_as_torch(returned):
    torch = pytest.importorskip("torch")

    def make(library):
        class Odd(library.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                if returned == "input":
                    return x
                if returned == "view":
                    return x[1:]
                if returned == "integer":
                    return (x > 0).long()
                result = x * 2
                ctx.mark_non_differentiable(result)
                return result

            @staticmethod
            def backward(ctx, grad):
                return grad

        x = library.tensor([1.0, -2.0, 3.0], requires_grad=True)
        return x, Odd.apply(x)

    (ours_x, ours), (theirs_x, theirs) = make(tg), make(torch)
    assert ours.requires_grad == theirs.requires_grad
    assert (ours.grad_fn is None) == (theirs.grad_fn is None)
    assert ours._base is not None if theirs._base is not None else ours._base is None
    assert ours is not ours_x and theirs is not theirs_x


@pytest.mark.torch
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("value", [0, -1.5, True])
def test_a_mask_fill_by_assignment_matches_torch(dtype, value):
    torch = pytest.importorskip("torch")

    def run(library):
        x = library.tensor(np.array([[1, -2, 3], [-4, 5, -6]], dtype=dtype))
        view = x[1]
        version = x._version
        x[x.double() < 0] = value
        return x, view, x._version - version

    (ours, ours_view, ours_bump), (theirs, theirs_view, theirs_bump) = run(tg), run(torch)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(ours_view.numpy(), theirs_view.numpy())
    assert ours_bump == theirs_bump == 1


def test_a_mask_fill_keeps_the_full_paths_errors_and_recording():
    expanded = tg.zeros(1, 3).expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        expanded[tg.ones(2, 3, dtype=tg.bool)] = 1.0
    with pytest.raises(IndexError):
        tg.zeros(2, 3)[tg.ones(3, dtype=tg.bool)] = 1.0  # a mask of another shape
    leaf = tg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf[leaf > 0] = 0.0
    x = leaf * 1
    x[x > 0] = 0.0  # recorded, as torch records it
    assert type(x.grad_fn).__name__ == "IndexPutBackward0"


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_an_untracked_tensor_and_a_number_match_the_general_path(name):
    operator, op = OPERATORS[name]
    x = tg.tensor([1.0, 2.0, 4.0])
    fast, general = operator(x, 3), op.apply(x, 3)
    assert fast.grad_fn is None and not fast.requires_grad
    assert fast.dtype == general.dtype
    np.testing.assert_array_equal(fast.numpy(), general.numpy())
    with pytest.raises(TypeError) as fast_error:
        operator(x, "3")
    with pytest.raises(TypeError) as general_error:
        op.apply(x, "3")
    assert str(fast_error.value) == str(general_error.value)
