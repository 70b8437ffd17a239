"""torch.autograd.graph as PyTorch has it: Node, GradientEdge, saved-tensor hooks,
grad_fn._saved_<name> / _raw_saved_<name>, register_multi_grad_hook, increment_version.

Ported from PyTorch's test/test_autograd.py (test_saved_tensors_hook*, test_saved_variable_*,
test_grad_to_node*, test_gradient_edge*, test_multi_grad*, test_increment_version,
test_will_engine_execute_node, ...) in our own words; each runs on tracegrad and on torch.
"""

from __future__ import annotations

import gc
import warnings
import weakref

import numpy as np
import pytest
from tutorial_programs import mul2_function

import tracegrad
from tracegrad.autograd import graph as tracegrad_graph
from tracegrad.autograd import node as tracegrad_node


def close(a, b) -> bool:
    """Equal up to float32 rounding (relative to the size of the values)."""
    return bool((a - b).abs().max() <= 1e-5 * (1 + b.abs().max()))


def hooks_enabled(lib) -> bool:
    if lib is tracegrad:
        return tracegrad_graph._saved_tensors_hooks_is_enabled()
    return lib._C._autograd._saved_tensors_hooks_is_enabled()


def will_execute(lib, node) -> bool:
    if lib is tracegrad:
        return tracegrad_graph._will_engine_execute_node(node)
    return lib._C._will_engine_execute_node(node)


def graph_task_id(lib) -> int:
    if lib is tracegrad:
        return tracegrad_graph._current_graph_task_id()
    return lib._C._current_graph_task_id()


def saved_tensor_type(lib):
    return tracegrad_node.SavedTensor if lib is tracegrad else lib._C._autograd.SavedTensor


# -- Node --------------------------------------------------------------------------------
def test_every_grad_fn_is_a_graph_node(lib):
    class Identity(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            return grad

    x = lib.ones(2, requires_grad=True)
    y = x * 2
    accumulate = y.grad_fn.next_functions[0][0]
    for node in (y.grad_fn, accumulate, Identity.apply(x).grad_fn):
        assert isinstance(node, lib.autograd.graph.Node)
    assert y.grad_fn.name() == "MulBackward0"
    assert Identity.apply(x).grad_fn.name() == "IdentityBackward"
    assert y.grad_fn.metadata == {}
    y.grad_fn.metadata["note"] = 1
    assert y.grad_fn.metadata == {"note": 1}
    with pytest.raises(TypeError, match="Can't instantiate abstract class Node"):
        lib.autograd.graph.Node()


def test_calling_a_grad_fn_checks_the_argument_count(lib):
    x = lib.ones(1, requires_grad=True)
    y = x ** 2
    with pytest.raises(TypeError, match="expected 1 arguments, got 2 instead"):
        y.grad_fn(x.detach(), x.detach())
    with pytest.raises(TypeError, match="expected 1 arguments, got 0 instead"):
        y.grad_fn()
    assert close(y.grad_fn(x.detach()), lib.tensor([2.0]))


# -- grad_fn._saved_<name> -------------------------------------------------------------------
def test_saved_attributes_have_pytorchs_names(lib):
    a = lib.ones(1, requires_grad=True)
    b = lib.zeros(1, requires_grad=True)
    out = (a * 2) * b
    assert close(out.grad_fn._saved_self, a * 2)
    assert isinstance(out.grad_fn._saved_self, lib.Tensor)
    assert isinstance(out.grad_fn._raw_saved_self, saved_tensor_type(lib))
    out.grad_fn._raw_saved_self.register_hooks(lambda x: x, lambda x: x)
    out.sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        _ = out.grad_fn._saved_self

    power = a.pow(2)
    assert power.grad_fn._saved_exponent == 2
    assert power.grad_fn._saved_self is a
    with pytest.raises(AttributeError, match="'PowBackward0' object has no attribute "
                                             "'_saved_foo'"):
        _ = power.grad_fn._saved_foo


@pytest.mark.parametrize("make, expected", [
    (lambda lib, x, m: x * x, {"self", "other"}),
    (lambda lib, x, m: x / (x + 1), {"self", "other"}),
    (lambda lib, x, m: x.exp(), {"result"}),
    (lambda lib, x, m: x ** 2.5, {"self", "exponent"}),
    (lambda lib, x, m: x ** (x + 1), {"self", "exponent", "result"}),
    (lambda lib, x, m: x.mm(m), {"self", "mat2"}),
    (lambda lib, x, m: x.sigmoid(), {"result"}),
    (lambda lib, x, m: x.tanh(), {"result"}),
    (lambda lib, x, m: x.relu(), {"result"}),
    (lambda lib, x, m: x.sqrt(), {"result"}),
    (lambda lib, x, m: x.log(), {"self"}),
    (lambda lib, x, m: x.sin(), {"self"}),
    (lambda lib, x, m: x.abs(), {"self"}),
    (lambda lib, x, m: x.clamp(0.2, 0.8), {"self", "min", "max"}),
    (lambda lib, x, m: x.max(), {"self", "result"}),
    (lambda lib, x, m: lib.maximum(x, x * 2), {"self", "other"}),
    (lambda lib, x, m: x.softmax(-1), {"result"}),
    (lambda lib, x, m: x.sum(1), {"keepdim", "self_sym_sizes"}),
    (lambda lib, x, m: x.sum(), {"self_sym_sizes"}),
    (lambda lib, x, m: x.mean(0, keepdim=True), {"keepdim", "self_sym_sizes"}),
    (lambda lib, x, m: x.view(6), {"self_sym_sizes"}),
    (lambda lib, x, m: x.repeat(2, 1), {"repeats", "self_sym_sizes"}),
    (lambda lib, x, m: lib.nn.functional.linear(x, m.t(), lib.ones(4, dtype=lib.float64)),
     {"mat1", "mat2"}),
    (lambda lib, x, m: lib.nn.functional.mse_loss(x, lib.ones(2, 3, dtype=lib.float64)),
     {"self", "target"}),
])
def test_saved_values_match_pytorch(make, expected):
    torch = pytest.importorskip("torch")
    values = {}
    x_data, m_data = np.random.default_rng(0).random((2, 3)) + 0.1, np.random.default_rng(1).random((3, 4))
    for lib in (tracegrad, torch):
        x = lib.tensor(x_data, requires_grad=True)
        m = lib.tensor(m_data, requires_grad=True)
        node = make(lib, x, m).grad_fn
        values[lib.__name__] = {name: getattr(node, f"_saved_{name}") for name in expected}
    for name in expected:
        ours, theirs = values["tracegrad"][name], values["torch"][name]
        if isinstance(theirs, torch.Tensor):
            assert ours.shape == tuple(theirs.shape), name
            assert close(torch.tensor(ours.detach().numpy()), theirs.detach()), name
        else:
            assert ours == theirs, name


def test_saved_inputs_are_the_tensors_themselves_outputs_a_copy(lib):
    a = lib.randn(5, requires_grad=True)
    a_orig = a.detach().clone()
    b = a * a
    c = a * b
    d = lib.exp(a)
    assert b.grad_fn._saved_self is a and b.grad_fn._saved_other is a
    assert c.grad_fn._saved_self is a
    assert c.grad_fn._saved_other is b
    assert close(d.grad_fn._saved_result, d)
    assert d.grad_fn._saved_result is not d
    assert d.grad_fn._saved_result.grad_fn is d.grad_fn
    c.sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        _ = c.grad_fn._saved_self
    assert close(a, a_orig)


def test_a_saved_output_shares_the_version_counter(lib):
    a = lib.rand(2, requires_grad=True)
    b = lib.exp(a)
    unpacked = b.grad_fn._saved_result
    assert close(b, unpacked) and b._version == unpacked._version
    with lib.no_grad():
        b += 1
    assert close(b, unpacked) and b._version == unpacked._version


def test_a_python_number_operand_is_shown_as_a_tensor(lib):
    x = lib.ones(2, requires_grad=True)
    y = x * 2
    assert y.grad_fn._saved_self is None  # not needed: the other side needs no gradient
    assert isinstance(y.grad_fn._saved_other, lib.Tensor)
    assert y.grad_fn._saved_other.item() == 2
    with pytest.raises(RuntimeError, match="with value None is forbidden"):
        y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)


def test_using_a_saved_tensor_detached_in_place_raises(lib):
    a = lib.tensor(1.0, requires_grad=True).clone()
    b = a.sin()
    a.detach_()
    with pytest.raises(RuntimeError, match="Trying to use a saved tensor that has been "
                                           "detached"):
        b.backward()
    a = lib.tensor(1.0, requires_grad=True).clone()
    b = a.exp()
    a.detach_()
    b.backward()  # a saved output is fine


# -- hooks on one saved tensor (_raw_saved_<name>.register_hooks) -------------------------
@pytest.mark.parametrize("is_leaf", [True, False], ids=["leaf", "non_leaf"])
def test_register_hooks_on_a_saved_input(lib, is_leaf):
    def make():
        base = lib.randn(5, requires_grad=True)
        return base if is_leaf else 1 + base

    a = make()
    grad_fn = a.grad_fn
    y = a * a
    y.grad_fn._raw_saved_self.register_hooks(lambda x: 2 * x, lambda x: x / 2)
    assert close(a, y.grad_fn._saved_self)
    if not is_leaf:
        assert y.grad_fn._saved_self.grad_fn is grad_fn
    y.sum().backward()
    if is_leaf:
        assert close(2 * a, a.grad)

    a = make()
    y = a * a
    y.grad_fn._raw_saved_self.register_hooks(lambda x: 2 * x, lambda x: x)
    assert close(2 * a, y.grad_fn._saved_self)
    y.sum().backward()
    if is_leaf:
        assert close(3 * a, a.grad)

    # double backward through a hooked saved tensor
    a = make()
    y = a ** 3
    y.grad_fn._raw_saved_self.register_hooks(lambda x: x, lambda x: x)
    (g,) = lib.autograd.grad(y.sum(), (a,), create_graph=True)
    g.sum().backward()
    if is_leaf:
        assert close(6 * a, a.grad)

    a = make()
    y = a * a
    y.grad_fn._raw_saved_self.register_hooks(lambda x: x, lambda x: 1)
    with pytest.raises(TypeError, match="Output of saved tensor unpack_hook expected to be a "
                                        "Tensor"):
        _ = y.grad_fn._saved_self

    a = make()
    y = a * a
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        y.grad_fn._raw_saved_self.register_hooks(lambda x, b: x, lambda x: x)

    def inplace_double(x):
        x *= 2
        return x

    a = make()
    t = a * a
    with pytest.raises(RuntimeError, match="A saved tensor pack hook is modifying its input "
                                           "in place."):
        t.grad_fn._raw_saved_self.register_hooks(inplace_double, lambda x: x / 2)


def test_register_hooks_on_a_saved_output(lib):
    a = lib.randn(5, requires_grad=True)
    y = lib.exp(a)
    y.grad_fn._raw_saved_result.register_hooks(lambda x: x, lambda x: x)
    assert close(y, y.grad_fn._saved_result)
    assert y.grad_fn._saved_result.grad_fn is y.grad_fn
    y.sum().backward()
    assert close(a.grad, y)


def test_register_hooks_twice_or_after_free_raises(lib):
    x = lib.ones(2, requires_grad=True)
    y = x ** 2
    raw = y.grad_fn._raw_saved_self
    raw.register_hooks(lambda t: t, lambda t: t)
    with pytest.raises(RuntimeError, match="whose hooks have already been set"):
        raw.register_hooks(lambda t: t, lambda t: t)
    y = x ** 2
    raw = y.grad_fn._raw_saved_self
    y.sum().backward()
    with pytest.raises(RuntimeError, match="after it has been freed"):
        raw.register_hooks(lambda t: t, lambda t: t)


# -- saved_tensors_hooks ------------------------------------------------------------------
def test_default_hooks_on_saved_inputs(lib):
    def pack(x):
        warnings.warn("pack", stacklevel=2)
        return x

    with lib.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
        a = lib.ones(5, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            a * a
        assert len(caught) == 2  # a saved twice

    for pack_hook, unpack_hook, factor in ((lambda x: x, lambda x: x, 1),
                                           (lambda x: 2 * x, lambda x: x / 2, 1),
                                           (lambda x: 2 * x, lambda x: x, 2)):
        with lib.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
            a = lib.randn(5, requires_grad=True)
            y = a * a
            assert close(factor * a, y.grad_fn._saved_self)
            assert close(factor * a, y.grad_fn._saved_other)
            y.sum().backward()
            assert close(2 * factor * a, a.grad)

    a = lib.randn(5, requires_grad=True)  # the hooks are gone
    y = a * a
    assert y.grad_fn._saved_self is a


def test_default_hooks_on_a_saved_output(lib):
    with lib.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        a = lib.randn(5, requires_grad=True)
        y = lib.exp(a)
        assert close(y, y.grad_fn._saved_result)
        y.sum().backward()
        assert close(a.grad, y)


def test_nested_default_hooks_use_the_innermost(lib):
    with lib.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x), \
            lib.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        pass
    with lib.autograd.graph.saved_tensors_hooks(lambda x: 3 * x, lambda x: 3 * x):
        b = lib.randn(5, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda x: 5 * x, lambda x: 5 * x):
            a = lib.randn(5, requires_grad=True)
            y = a * a
        z = b * b
    y.sum().backward()
    z.sum().backward()
    assert close(2 * 5 * 5 * a, a.grad)
    assert close(2 * 3 * 3 * b, b.grad)


def test_disabling_saved_tensor_hooks(lib):
    graph = lib.autograd.graph
    with graph.disable_saved_tensors_hooks("error message"), \
            pytest.raises(RuntimeError, match="error message"), \
            graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        pass
    assert hooks_enabled(lib)
    with graph.saved_tensors_hooks(lambda x: x, lambda x: x), \
            pytest.raises(RuntimeError, match="error message"), \
            graph.disable_saved_tensors_hooks("error message"):
        pass
    assert hooks_enabled(lib)
    with graph.disable_saved_tensors_hooks("outer"):
        with graph.disable_saved_tensors_hooks("inner"), \
                pytest.raises(RuntimeError, match="inner"), \
                graph.saved_tensors_hooks(lambda x: x, lambda x: x):
            pass
        assert not hooks_enabled(lib)
    assert hooks_enabled(lib)


def test_errors_in_pack_and_unpack_hooks_propagate(lib):
    class CustomError(Exception):
        pass

    def fail(message):
        def hook(x):
            raise CustomError(message)

        return hook

    a = lib.tensor(1.0, requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(fail("pack"), lambda x: x), \
            pytest.raises(CustomError, match="pack"):
        lib.sin(a)
    with lib.autograd.graph.saved_tensors_hooks(lambda x: x, fail("unpack")):
        out = lib.sin(a)
        with pytest.raises(CustomError, match="unpack"):
            out.backward()


def test_default_hooks_apply_to_custom_functions(lib):
    class Func(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            intermediate = x.exp()
            ctx.save_for_backward(intermediate.clone().detach_().requires_grad_(True))
            return x.exp()

        @staticmethod
        def backward(ctx, grad_out):
            (intermediate,) = ctx.saved_tensors
            return grad_out * intermediate

    a = lib.tensor(1.0, requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        out = Func.apply(a)
    out.backward()
    assert close(a.grad, a.exp())


def test_pack_and_unpack_run_once_each(lib):
    counts = {"pack": 0, "unpack": 0}

    def pack(x):
        counts["pack"] += 1
        return x

    def unpack(x):
        counts["unpack"] += 1
        return x

    x = lib.ones(4, requires_grad=True)
    y = lib.ones(4)
    with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
        out = x * y
        assert counts == {"pack": 1, "unpack": 0}
        out.sum().backward()
        assert counts == {"pack": 1, "unpack": 1}


def test_the_unpacked_tensor_does_not_share_the_original_version_counter(lib):
    class Test(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            before = a._version
            x.add_(1)
            assert a._version == before
            return grad_output

    a = lib.tensor(1.0, requires_grad=True)
    replacement = a.clone()
    with lib.autograd.graph.saved_tensors_hooks(lambda x: replacement, lambda x: x):
        b = Test.apply(a)
    b.backward()


def test_a_pack_hook_changing_its_input_in_place_raises(lib):
    a = lib.randn(5, requires_grad=True)

    def increment(x):
        x += 1
        return x

    with lib.autograd.graph.saved_tensors_hooks(increment, lambda x: x), \
            pytest.raises(RuntimeError, match="A saved tensor pack hook is modifying its "
                                              "input in place."):
        lib.exp(a)
    y = lib.exp(a)
    with pytest.raises(RuntimeError, match="A saved tensor pack hook is modifying its input "
                                           "in place."):
        y.grad_fn._raw_saved_result.register_hooks(increment, lambda x: x)


def test_hooks_can_store_saved_tensors_anywhere(lib):
    store = {}

    def pack(x):
        key = len(store)
        store[key] = x.detach().clone()
        return key

    with lib.autograd.graph.saved_tensors_hooks(pack, store.__getitem__):
        a = lib.ones(5, requires_grad=True)
        y = a * a
        assert close(a, y.grad_fn._saved_self)
        y.sum().backward()
    assert close(2 * a, a.grad)


def test_default_hooks_with_double_backward(lib):
    with lib.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        a = lib.randn(5, requires_grad=True)
        (g,) = lib.autograd.grad((a ** 3).sum(), (a,), create_graph=True)
        g.sum().backward()
        assert close(6 * a, a.grad)

    with lib.autograd.graph.saved_tensors_hooks(lambda x: 2 * x, lambda x: x):
        a = lib.randn(5, requires_grad=True)
        s = (a ** 3).sum()
    (g,) = lib.autograd.grad(s, (a,), create_graph=True)
    g.sum().backward()
    assert close(6 * 2 * a, a.grad)  # a was saved once, under the hooks

    a = lib.randn(5, requires_grad=True)
    s = (a ** 3).sum()
    with lib.autograd.graph.saved_tensors_hooks(lambda x: 2 * x, lambda x: x):
        (g,) = lib.autograd.grad(s, (a,), create_graph=True)
        g.sum().backward()
        # pow's backward saves two tensors that lead back to a (the incoming gradient
        # and a itself): each doubled
        assert close(6 * 4 * a, a.grad)

    with lib.autograd.graph.saved_tensors_hooks(lambda x: 2 * x, lambda x: x):
        a = lib.randn(5, requires_grad=True)
        s = (a ** 3).sum()
        (g,) = lib.autograd.grad(s, (a,), create_graph=True)
        g.sum().backward()
        assert close(6 * 8 * a, a.grad)  # both of the above: 2 * 4


def test_python_number_operands_never_reach_the_hooks(lib):
    def fail(x):
        raise RuntimeError("this hook should not be called")

    with lib.autograd.graph.saved_tensors_hooks(fail, fail):
        a = lib.randn(5, requires_grad=True)
        lib.autograd.grad((a * 3).sum(), (a,))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("pin_memory", [True, False])
def test_save_on_cpu(lib, dtype, pin_memory):
    with lib.autograd.graph.save_on_cpu(pin_memory):
        a = lib.randn(5, requires_grad=True, dtype=getattr(lib, dtype))
        y = a * a
        assert close(a, y.grad_fn._saved_self)
        assert close(a, y.grad_fn._saved_other)
        assert a.dtype == y.grad_fn._saved_self.dtype
        y.sum().backward()
        assert close(2 * a, a.grad)


def test_an_extra_exit_of_saved_tensor_hooks_does_not_crash():
    # Not run on torch: there, this sequence leaves the hooks stack broken and the process
    # later dies in a garbage collection.
    lib = tracegrad

    def unpack(x):
        inner.__exit__()
        return x

    inner = lib.autograd.graph.saved_tensors_hooks(lambda x: x, unpack)
    outer = lib.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x)
    for _ in range(3):
        with outer:
            inner.__enter__()
            x = lib.randn(3, 3, requires_grad=True)
            x.sin().sum().backward()
    for _ in range(3):
        inner.__exit__()
    a = lib.tensor(1.0, requires_grad=True)  # no hooks are left on the stack
    a.exp().grad_fn._raw_saved_result.register_hooks(lambda x: x, lambda x: x)


def test_an_extra_enter_of_saved_tensor_hooks_does_not_leak(lib):
    def scope():
        def unpack(x):
            weak_hooks().__enter__()
            return x

        hooks = lib.autograd.graph.saved_tensors_hooks(lambda x: x, unpack)
        weak_hooks = weakref.ref(hooks)
        x = lib.randn(3, 3, requires_grad=True)
        with hooks:
            x.sin().sum().backward()
        return weakref.ref(unpack)

    enabled = gc.isenabled()
    gc.disable()
    try:
        assert scope()() is None
    finally:
        if enabled:
            gc.enable()
    # backward put the hooks back as it found them: nothing is left on the stack
    if lib is tracegrad:
        assert tracegrad_node.saved_hooks.stack == []


# -- GradientEdge ----------------------------------------------------------------------------
def test_grad_to_a_gradient_edge_equals_grad_to_the_tensor(lib):
    def check(out, inp):
        expected = lib.autograd.grad(out.sum(), inp)
        edge = lib.autograd.graph.get_gradient_edge(inp)
        got = lib.autograd.grad(out.sum(), edge)
        assert close(expected[0], got[0])

    x = lib.rand(2, requires_grad=True)
    check(x.clone(), x)
    x = x.clone()
    check(x.clone(), x)
    with pytest.raises(RuntimeError, match="It is not possible to get the gradient edge for "
                                           "a Tensor that does not require gradients"):
        lib.autograd.graph.get_gradient_edge(lib.ones(2))


def test_a_gradient_edge_survives_an_in_place_op(lib):
    x = lib.rand(2, requires_grad=True).clone()
    edge = lib.autograd.graph.get_gradient_edge(x)
    x *= 2
    old, new = lib.autograd.grad(x.sum(), (edge, x))
    assert close(old, 2 * lib.ones_like(x)) and close(new, lib.ones_like(x))


def test_gradient_edges_made_by_hand(lib):
    x = lib.rand(2, requires_grad=True).clone()
    y = lib.rand(2, requires_grad=True).clone()
    out = x + y
    expected = lib.autograd.grad(out.sum(), (x, y))
    edges = (lib.autograd.graph.GradientEdge(x.grad_fn, x.output_nr),
             lib.autograd.graph.GradientEdge(y.grad_fn, y.output_nr))
    got = lib.autograd.grad(out.sum(), edges)
    assert close(expected[0], got[0]) and close(expected[1], got[1])


def test_materialize_grads_refuses_an_unused_gradient_edge(lib):
    x = lib.rand(2, requires_grad=True).clone()
    y = lib.rand(2, requires_grad=True).clone()
    edge_x = lib.autograd.graph.GradientEdge(x.grad_fn, x.output_nr)
    edge_y = lib.autograd.graph.GradientEdge(y.grad_fn, y.output_nr)
    out = x.clone()
    lib.autograd.grad(out.sum(), (edge_x, y), allow_unused=True, materialize_grads=True)
    _, unused = lib.autograd.grad(out.sum(), (x, y), allow_unused=True, materialize_grads=True)
    assert close(unused, lib.zeros(2)) and not unused.requires_grad
    lib.autograd.grad(out.sum(), (x, edge_y), allow_unused=True)
    with pytest.raises(RuntimeError, match="materialize_grads cannot be used when the given "
                                           "input is a GradientEdge"):
        lib.autograd.grad(out.sum(), (x, edge_y), allow_unused=True, materialize_grads=True)


def test_backward_to_gradient_edges(lib):
    x = lib.rand(2, requires_grad=True).clone()
    y = lib.rand(2, requires_grad=True).clone()
    edge_x = lib.autograd.graph.GradientEdge(x.grad_fn, x.output_nr)
    edge_y = lib.autograd.graph.GradientEdge(y.grad_fn, y.output_nr)
    out = x.clone()
    for inputs in ((edge_x, y), (x, y), (x, edge_y), (edge_x, edge_y)):
        lib.autograd.backward(out.sum(), inputs=inputs, retain_graph=True)


def test_gradient_edge_as_an_output(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)

    def fn(reduce=True):
        tmp = x.sin().cos()
        if reduce:
            tmp = tmp.sum()
        out = tmp.exp().clone().sin().sum()
        return out, lib.autograd.graph.get_gradient_edge(tmp)

    out, tmp_edge = fn()
    (tmp_grad,) = lib.autograd.grad(out, (tmp_edge,))
    (x_grad,) = lib.autograd.grad(tmp_edge, (x,), grad_outputs=(tmp_grad,))
    out, _ = fn()
    (x_grad_ref,) = lib.autograd.grad(out, (x,))
    assert close(x_grad, x_grad_ref)

    out, tmp_edge = fn(reduce=False)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar "
                                           "output"):
        lib.autograd.grad(tmp_edge, (x,))
    out, tmp_edge = fn()
    lib.autograd.grad(tmp_edge, (x,))
    out, tmp_edge = fn()
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        lib.autograd.grad(tmp_edge, (x,), grad_outputs=lib.tensor([1.0, 2.0, 3.0, 4.0]))

    out, tmp_edge = fn()
    lib.autograd.backward(tmp_edge, retain_graph=True)
    (x_grad_ref,) = lib.autograd.grad(tmp_edge, (x,), retain_graph=True)
    assert close(x.grad, x_grad_ref)
    x.grad = None
    lib.autograd.backward((tmp_edge,), retain_graph=True)
    assert close(x.grad, x_grad_ref)

    _, tmp_edge1 = fn()
    out2, _ = fn()
    (x_grad_ref,) = lib.autograd.grad((tmp_edge1, out2), (x,), retain_graph=True)
    x.grad = None
    lib.autograd.backward((tmp_edge1, out2), retain_graph=True)
    assert close(x.grad, x_grad_ref)


def test_a_gradient_edge_keeps_its_graph(lib):
    class Clone(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            return grad.clone()

    inp = lib.rand(1, requires_grad=True).clone()
    for make in (lambda: inp.clone(), lambda: Clone.apply(inp)):
        out = make()
        edge = lib.autograd.graph.get_gradient_edge(out)
        lib.autograd.backward(edge)
        del out
        gc.collect()
        lib.autograd.backward(edge)


def test_grad_accepts_a_dict_of_inputs(lib):
    x = lib.ones(2, requires_grad=True)
    y = lib.ones(2, requires_grad=True)
    grads = lib.autograd.grad((x * 2 + y * 3).sum(), {"x": x, "y": y})
    assert list(grads) == ["x", "y"]
    assert close(grads["x"], lib.full((2,), 2.0)) and close(grads["y"], lib.full((2,), 3.0))


# -- hooks over several tensors ---------------------------------------------------------
def test_multi_grad_hook_all_mode(lib):
    t1, t2, t3, t4 = (lib.rand(2, requires_grad=True) for _ in range(4))
    t1 = t1.mul(2)

    class Foo(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a.clone()

        @staticmethod
        def backward(ctx, grad):
            return grad

    t2 = Foo.apply(t2)
    t3 = t3.clone()
    t4 = t4 * 1
    result = [None]
    count = [0]

    def hook(grads):
        count[0] += 1
        result[0] = [grad is not None for grad in grads]

    handle = lib.autograd.graph.register_multi_grad_hook((t1, t2, t3, t4), hook)
    out = t2 * t3
    out.sum().backward(inputs=(t2, t3), retain_graph=True)
    assert count[0] == 1 and result[0] == [False, True, True, False]
    out.sum().backward(inputs=(t1, t4), retain_graph=True)
    assert count[0] == 1
    out.sum().backward(inputs=(t1, t3), retain_graph=True)
    assert count[0] == 2 and result[0] == [False, False, True, False]

    class Fail(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            raise RuntimeError("error message")

    out = Fail.apply(t2) * t3
    with pytest.raises(RuntimeError, match="error message"):
        out.sum().backward(inputs=(t2, t3), retain_graph=True)
    assert count[0] == 2
    handle.remove()
    out.sum().backward(inputs=(t1, t3), retain_graph=True)
    assert count[0] == 2


def test_multi_grad_hook_any_mode_runs_once_before_later_hooks(lib):
    order = []
    handles = []

    class TwoOutputs(lib.nn.Module):
        def __init__(self, first_id) -> None:
            super().__init__()
            self.lin = lib.nn.Linear(3, 3)
            self.first_id = first_id

        def forward(self, x):
            z = self.lin(x)
            out = lib.sin(z), lib.cos(z)
            z.register_hook(lambda grad: order.append(self.first_id))
            handles.append(lib.autograd.graph.register_multi_grad_hook(
                out, lambda grad: order.append(self.first_id + 1), mode="any"))
            return out

    first, second = TwoOutputs(0), TwoOutputs(2)

    def model(x):
        y = first(x)
        return second(y[0] + y[1])

    inp = lib.randn(2, 3)
    out = model(inp)
    (out[0] + out[1]).sum().backward()
    assert order == [3, 2, 1, 0]

    order.clear()
    handles.clear()
    out = model(inp)
    for handle in handles:
        handle.remove()
    (out[0] + out[1]).sum().backward()
    assert order == [2, 0]


def test_multi_grad_hook_rejects_an_unknown_mode(lib):
    t1, t2 = lib.rand(2, requires_grad=True), lib.rand(2, requires_grad=True)
    with pytest.raises(ValueError, match=r"Expects mode to be one of \('all', 'any'\) but "
                                         r"got foo"):
        lib.autograd.graph.register_multi_grad_hook((t1, t2), lambda _: None, mode="foo")


def test_which_nodes_the_running_backward_will_execute(lib):
    calls = [0]

    def node_of(t):
        if t.requires_grad and t.grad_fn is None:
            return t.clone().grad_fn.next_functions[0][0]
        return t.grad_fn

    a = lib.randn(2, 3, 4, requires_grad=True)
    a2 = lib.randn(2, 3, 4, requires_grad=True)
    b = a * a2
    b2 = b.cos()
    c = mul2_function(lib)(b)
    expectations = {"run": [node_of(t) for t in (a, b, c)],
                    "skip": [node_of(t) for t in (a2, b2)]}

    def check(grad):
        calls[0] += 1
        for node in expectations["run"]:
            assert will_execute(lib, node)
        for node in expectations["skip"]:
            assert not will_execute(lib, node)

    h1, h2 = b.register_hook(check), c.register_hook(check)
    out = c.sum()
    lib.autograd.backward(out, inputs=(a, b), retain_graph=True)
    assert calls[0] == 2
    expectations["run"] = [node_of(t) for t in (a, a2, b, c)]
    expectations["skip"] = [node_of(b2)]
    lib.autograd.backward(out, retain_graph=True)
    with pytest.raises(RuntimeError, match="are currently running autograd.grad()"):
        lib.autograd.grad(out, (a,))

    a = lib.randn(1, 2, 3, requires_grad=True) * 2
    b = a * 2
    calls[0] = 0

    def check_non_leaf(grad):
        calls[0] += 1
        assert will_execute(lib, b.grad_fn)

    h3 = b.register_hook(check_non_leaf)
    lib.autograd.grad(b.sum(), (a,))
    assert calls[0] == 1
    with pytest.raises(RuntimeError, match="during the backward pass"):
        will_execute(lib, out.grad_fn)
    for handle in (h1, h2, h3):
        handle.remove()


def test_graph_task_id_exists_only_during_backward(lib):
    seen = []
    x = lib.ones(2, requires_grad=True)
    y = x * 2
    y.register_hook(lambda grad: seen.append(graph_task_id(lib)))
    assert graph_task_id(lib) == -1
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert len(seen) == 2 and all(task >= 0 for task in seen) and seen[0] != seen[1]
    assert graph_task_id(lib) == -1


# -- increment_version ---------------------------------------------------------------------
def test_increment_version(lib):
    a = lib.rand(5, requires_grad=True)
    version = a._version
    lib.autograd.graph.increment_version(a)
    assert a._version == version + 1
    a = lib.zeros(5, dtype=lib.int32)
    version = a._version
    lib.autograd.graph.increment_version([a, a])
    assert a._version == version + 2


def test_increment_version_fails_a_later_backward(lib):
    a = lib.rand(3, requires_grad=True)
    b = a.clone()
    out = (b * b).sum()
    lib.autograd.graph.increment_version(b)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_unknown_graph_names_say_they_are_not_implemented():
    with pytest.raises(AttributeError, match="tracegrad does not implement "
                                             "torch.autograd.graph.allow_mutation_on_saved"):
        tracegrad.autograd.graph.allow_mutation_on_saved_tensors  # noqa: B018


def test_node_hooks_do_not_keep_a_dead_graph_alive(lib):
    class Marker:
        pass

    def scope():
        a = lib.tensor(1.0, requires_grad=True)
        b = a.clone()
        marker = Marker()
        def hook(*args):
            assert marker is not None  # the hook holds the marker

        b.grad_fn.register_hook(hook)
        return b.clone(), weakref.ref(marker)

    out, reference = scope()
    out.backward()
    assert reference() is not None
    del out
    gc.collect()
    assert reference() is None
