"""The whole ``autograd.Function`` API, as PyTorch has it.

Most tests port PyTorch's ``test/test_autograd.py`` (named after the test they port, in our
own words); each runs with ``lib = tracegrad`` and, where torch is installed, ``lib = torch``,
so the expectation itself is proven on real PyTorch.
"""

from __future__ import annotations

import gc
import warnings
import weakref

import pytest


def values(tensor) -> list:
    return tensor.detach().tolist()


def flat(nested) -> list:
    if isinstance(nested, (list, tuple)):
        return [item for part in nested for item in flat(part)]
    return [nested]


def close(tensor, expected_tensor) -> bool:
    return flat(values(tensor)) == pytest.approx(flat(values(expected_tensor)), rel=1e-5)


def reachable_names(node) -> set:
    found, stack = set(), [node]
    while stack:
        current = stack.pop()
        if current is None:
            continue
        found.add(type(current).__name__)
        stack.extend(next_node for next_node, _ in current.next_functions)
    return found


def pyscalar_function(lib, decorate=None):
    decorate = decorate or (lambda backward: backward)

    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, tensor1, pyscalar, tensor2):
            ctx.pyscalar = pyscalar
            ctx.save_for_backward(tensor1, tensor2)
            return tensor1 + pyscalar * tensor2 + tensor1 * tensor2

        @staticmethod
        @decorate
        def backward(ctx, grad_output):
            var1, var2 = ctx.saved_tensors
            return (grad_output + grad_output * var2, None,
                    grad_output * ctx.pyscalar + grad_output * var1)

    return MyFunction


def _function_test(lib, cls):
    x = lib.randn(5, 5, requires_grad=True)
    y = lib.randn(5, 5, requires_grad=True)
    result = cls.apply(x, 2, y)
    go = lib.ones((), requires_grad=True)
    with warnings.catch_warnings():  # torch warns about the .grad reference cycle
        warnings.simplefilter("ignore", UserWarning)
        result.sum().backward(go, create_graph=True)
    assert close(x.grad, y + 1) and close(y.grad, x + 2)
    assert x.grad.grad_fn is not None and y.grad.grad_fn is not None
    return x, y


def test_function(lib):
    _function_test(lib, pyscalar_function(lib))


def test_once_differentiable(lib):
    seen_grad_mode = []

    def no_grad_check(backward):
        def wrapped(ctx, grad_output):
            seen_grad_mode.append(lib.is_grad_enabled())
            return backward(ctx, grad_output)

        return lib.autograd.function.once_differentiable(wrapped)

    x, _ = _function_test(lib, pyscalar_function(lib, no_grad_check))
    assert seen_grad_mode == [False]
    assert "Error" in reachable_names(x.grad.grad_fn)
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was "
                                           "marked with @once_differentiable"):
        x.grad.sum().backward()


def test_once_differentiable_without_create_graph_is_plain(lib):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * grad

    x = lib.tensor([2.0], requires_grad=True)
    (g,) = lib.autograd.grad(Cube.apply(x), x)
    assert values(g) == [12.0] and g.grad_fn is None
    assert Cube.backward.__name__ == "backward"  # functools.wraps


def test_function_returns_input(lib):
    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    for shape in [(1,), ()]:
        v = lib.ones(shape, requires_grad=True)
        MyFunction.apply(v).backward()
        assert values(v.grad) == values(lib.full(shape, 2.0))
        with lib.no_grad():
            v.grad.zero_()
        MyFunction.apply(v.clone()).backward()
        assert values(v.grad) == values(lib.full(shape, 2.0))


def test_function_returns_undefined_tensor(lib):
    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return None

    x = lib.ones(1, requires_grad=True)
    MyFunction.apply(x).backward()
    assert x.grad is None
    MyFunction.apply(x ** 2).backward()
    assert x.grad is None
    MyFunction.apply(x).sum().backward()
    assert x.grad is None
    assert lib.autograd.grad(MyFunction.apply(x), x, allow_unused=True)[0] is None


def _two_outputs(lib, materialize: bool, seen: list):
    class Pair(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            if not materialize:
                ctx.set_materialize_grads(False)
            return x.clone(), x.clone()

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append(g2 if g2 is None else values(g2))
            return g1

    return Pair


def test_materialize_grads(lib):
    seen = []
    x = lib.ones(2, requires_grad=True)
    _two_outputs(lib, True, seen).apply(x)[0].sum().backward()
    assert seen == [[0.0, 0.0]]  # the unused output's gradient: zeros


def test_dont_materialize_grads(lib):
    seen = []
    x = lib.ones(2, requires_grad=True)
    _two_outputs(lib, False, seen).apply(x)[0].sum().backward()
    assert seen == [None]


def test_legacy_function_deprecation_exception(lib):
    class MyFunction(lib.autograd.Function):
        def forward(self, x):
            return x

        def backward(self, grad_output):
            return grad_output

    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        instance = MyFunction()
    with pytest.raises(RuntimeError, match="^Legacy autograd function with non-static forward "
                                           "method is deprecated"):
        instance(lib.randn(3, 4))


def test_naughty_autograd_function_attribute_access(lib):
    class Id(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad_x):
            return grad_x

    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        f = Id()
    assert isinstance(f, Id)
    x = lib.zeros(1, requires_grad=True)
    with pytest.raises(RuntimeError, match="non-static forward method is deprecated"):
        f(x)
    assert Id.apply(x).grad_fn.name() == "IdBackward"


def test_naughty_anomaly_access(lib):
    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    y = MyFunction.apply(lib.zeros(1, requires_grad=True))
    y.backward()
    g = y.grad_fn
    del y
    assert g.metadata is not None


def test_naughty_autograd_function_stashing_ctx(lib):
    saved_ctx = []

    class Id(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, grad_x):
            saved_ctx.append(ctx)
            return ctx.saved_tensors

    p = lib.zeros(1, requires_grad=True)
    loss = Id.apply(p)
    loss.backward(retain_graph=True)
    del loss
    (saved,) = saved_ctx[0].saved_tensors
    assert saved is p


def test_custom_function_exception(lib):
    class Failing(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, grad):
            raise Exception("Simulate error on backward pass")  # noqa: TRY002

    t1 = lib.rand(3, 3, requires_grad=True)
    t3 = Failing.apply((t1 + t1) * (t1 + t1))
    with pytest.raises(Exception, match="Simulate error on backward pass"):
        t3.sum().backward()


def test_custom_function_non_tensor_inputs_outputs(lib):
    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, t1, t2, scale, t3):
            t4 = t1 + t2 * t3
            t5 = t1 * t2 + t3
            t4 *= scale
            t5 *= scale
            ctx.scale = scale
            ctx.save_for_backward(t1, t2, t3)
            return scale, t4, None, True, t5, "bar", t1

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, *grads):
            assert len(grads) == 7
            assert grads[0] is None and grads[2] is None and grads[3] is None
            assert grads[5] is None
            scale = ctx.scale
            var1, var2, var3 = ctx.saved_tensors
            return (grads[1] * scale + grads[4] * var2 * scale + grads[6],
                    grads[1] * var3 * scale + grads[4] * var1 * scale, None,
                    grads[1] * var2 * scale + grads[4] * scale)

    t1 = lib.rand(10, dtype=lib.float64, requires_grad=True)
    t2 = lib.rand(10, dtype=lib.float64, requires_grad=True)
    t3 = lib.rand(10, dtype=lib.float64)
    scale = 4
    res = MyFunction.apply(t1, t2, scale, t3)
    assert res[0] == scale and res[2] is None and res[3] is True and res[5] == "bar"
    assert values(res[1]) == pytest.approx(values((t1 + t2 * t3) * scale))
    assert values(res[4]) == pytest.approx(values((t1 * t2 + t3) * scale))
    assert values(res[6]) == values(t1)
    lib.autograd.backward([res[1].sum(), res[4].sum(), res[6].sum()])
    assert t1.grad is not None and t2.grad is not None and t3.grad is None

    def foo(t1, t2, t3):
        res = MyFunction.apply(t1, t2, scale, t3)
        return res[1], res[4], res[6]

    assert lib.autograd.gradcheck(foo, (t1, t2, t3))


def test_custom_function_no_tensors(lib):
    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, t1, t2, scale, t3):
            t4 = (t1 + t2 * t3) * scale
            t5 = (t1 * t2 + t3) * scale
            return scale, t4, None, True, t5, "bar", t1

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, *args):
            return (args[0], args[1], None, args[2])

    res = MyFunction.apply(0.5, 0.25, 3, 2.0)
    assert res == (3, (0.5 + 0.25 * 2.0) * 3, None, True, (0.5 * 0.25 + 2.0) * 3, "bar", 0.5)


def test_custom_function_apply_kwargs(lib):
    class MySin(lib.autograd.Function):
        @staticmethod
        def forward(ctx, input, factor=1):
            ctx.save_for_backward(input)
            ctx.factor = factor
            return factor * lib.sin(input)

        @staticmethod
        def backward(ctx, grad_output):
            (input,) = ctx.saved_tensors
            return grad_output * ctx.factor * lib.cos(input), None

    x = lib.tensor([0.812], requires_grad=True)
    MySin.apply(x, 6).backward()
    grad_positional = values(x.grad)
    x.grad = None
    out = MySin.apply(x, factor=6)
    assert values(out) == values(MySin.apply(x, 6))
    out.backward()
    assert values(x.grad) == grad_positional
    assert values(MySin.apply(x)) == values(MySin.apply(x, 1))


def test_custom_function_apply_kwargs_required(lib):
    class Add(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, grad_output

    x = lib.tensor([2.0], requires_grad=True)
    y = lib.tensor([3.0], requires_grad=True)
    for out in (Add.apply(x=x, y=y), Add.apply(y=y, x=x)):
        assert values(out) == [5.0]
        x.grad = y.grad = None
        out.backward()
        assert values(x.grad) == [1.0] and values(y.grad) == [1.0]


def test_custom_function_apply_kwargs_tensor(lib):
    class ScaledMul(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, scale=1.0):
            ctx.save_for_backward(x, y)
            ctx.scale = scale
            return scale * x * y

        @staticmethod
        def backward(ctx, grad_output):
            x, y = ctx.saved_tensors
            return grad_output * ctx.scale * y, grad_output * ctx.scale * x, None

    x = lib.tensor([2.0], requires_grad=True)
    y = lib.tensor([3.0], requires_grad=True)
    out = ScaledMul.apply(x, y=y, scale=5.0)
    assert values(out) == [30.0]
    out.backward()
    assert values(x.grad) == [15.0] and values(y.grad) == [10.0]


def test_custom_function_apply_kwargs_setup_context(lib):
    class MyScale(lib.autograd.Function):
        @staticmethod
        def forward(x, factor=1):
            return factor * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            _, factor = inputs
            ctx.factor = factor

        @staticmethod
        def backward(ctx, gO):
            return gO * ctx.factor, None

    x = lib.randn([], requires_grad=True)
    (gx,) = lib.autograd.grad(MyScale.apply(x, factor=3), x)
    assert gx.item() == 3.0


def test_custom_function_apply_kwargs_errors(lib):
    class MyFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, grad_output

    x, y = lib.tensor([1.0]), lib.tensor([2.0])
    with pytest.raises(TypeError, match="got an unexpected keyword argument"):
        MyFn.apply(x, bad_kwarg=y)
    with pytest.raises(TypeError, match="got multiple values for argument"):
        MyFn.apply(x, y, y=y)


def test_invalid_gradients(lib):
    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            return lib.randn(10, dtype=lib.float32)

    with pytest.raises(RuntimeError, match="expected shape"):
        MyFunction.apply(lib.randn(5, 5, requires_grad=True)).sum().backward()


def test_custom_function_setup_context_simple(lib):
    class MySquare(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x ** 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, gO):
            (x,) = ctx.saved_tensors
            return gO * 2 * x

    x = lib.randn([], requires_grad=True)
    (gx,) = lib.autograd.grad(MySquare.apply(x), x)
    assert gx.item() == pytest.approx(2 * x.item())


def test_custom_function_setup_context_multi_output(lib):
    class MySquare(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x ** 2, x.item() * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            _, two_x = output
            ctx.two_x = two_x

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, gO, _):
            return gO * ctx.two_x

    x = lib.randn([], requires_grad=True)
    y, _ = MySquare.apply(x)
    (gx,) = lib.autograd.grad(y, x)
    assert gx.item() == pytest.approx(2 * x.item())


def test_custom_function_setup_context_multi_input(lib):
    class MyReshape(lib.autograd.Function):
        @staticmethod
        def forward(x, shape, scale_forward, scale_backward):
            return x.reshape(shape) * scale_forward

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, _, _, scale_backward = inputs
            ctx.scale_backward = scale_backward
            ctx.x_shape = x.shape

        @staticmethod
        def backward(ctx, gO):
            return gO.reshape(ctx.x_shape) * ctx.scale_backward, None, None, None

    for x, shape, forward, backward in ((lib.randn(24, requires_grad=True), (3, 8), 7, 11),
                                        (lib.randn(2, 3, 4, requires_grad=True), (6, 4), -1,
                                         2)):
        y = MyReshape.apply(x, shape, forward, backward).sum()
        (gx,) = lib.autograd.grad(y, x)
        assert y.item() == pytest.approx(x.sum().item() * forward, rel=1e-4, abs=1e-4)
        assert values(gx) == values(lib.full(tuple(x.shape), float(backward)))


def test_setup_context_when_forward_has_default_args(lib):
    class PowFunction(lib.autograd.Function):
        @staticmethod
        def forward(x, y=3):
            return lib.pow(x, y)

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, y = inputs
            ctx.save_for_backward(x)
            ctx.y = y

        @staticmethod
        def backward(ctx, gO):
            (x,) = ctx.saved_tensors
            return gO * ctx.y * lib.pow(x, ctx.y - 1), None

    class PowFunctionWithClassmethod(lib.autograd.Function):
        @classmethod
        def forward(cls, x, y=3):
            return lib.pow(x, y)

        @classmethod
        def setup_context(cls, ctx, inputs, output):
            x, y = inputs
            ctx.save_for_backward(x)
            ctx.y = y

        @classmethod
        def backward(cls, ctx, gO):
            (x,) = ctx.saved_tensors
            return gO * ctx.y * lib.pow(x, ctx.y - 1), None

    x = lib.tensor(2.0, requires_grad=True)
    for function in (PowFunction, PowFunctionWithClassmethod):
        y = function.apply(x)
        assert y.item() == 8.0 and lib.autograd.grad(y, x)[0].item() == 12.0


def test_hook_none(lib):
    class NoneGradientFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            assert ctx.needs_input_grad[0] and not ctx.needs_input_grad[1]
            return x, y

        @staticmethod
        def backward(ctx, grad_x, grad_y):
            return grad_x, None

    was_called = []
    x = lib.randn(5, 5, requires_grad=True)
    rx, ry = NoneGradientFunction.apply(x, lib.randn(5, 5))
    rx.register_hook(lambda grad: was_called.append(grad is not None))
    ry.register_hook(lambda grad: was_called.append(grad is not None))
    (rx + ry).sum().backward()
    assert was_called and all(was_called)


@pytest.mark.parametrize("num_inputs", [2, 25])
def test_needs_input_grad_setter_roundtrip(lib, num_inputs):
    sentinel = ([False, True],)

    class NeedsInputGradSetter(lib.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            return inputs[0] + inputs[1]

        @staticmethod
        def backward(ctx, grad):
            original = ctx.needs_input_grad
            assert original == (True,) + (False,) * (num_inputs - 1)
            ctx.needs_input_grad = sentinel
            assert ctx.needs_input_grad is sentinel
            ctx.needs_input_grad = original
            return (grad,) + (None,) * (num_inputs - 1)

    x = lib.randn((), requires_grad=True)
    NeedsInputGradSetter.apply(x, *(lib.randn(()) for _ in range(num_inputs - 1))).backward()
    assert x.grad.item() == 1.0


def test_mark_non_differentiable(lib):
    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            output = input > 0
            ctx.mark_non_differentiable(output)
            return output

        @staticmethod
        def backward(ctx, grad_output):
            return (grad_output * 0).to(lib.float64)

    x = lib.randn(5, 5, requires_grad=True)
    mask = MyFunction.apply(x)
    assert not mask.requires_grad
    x.masked_fill(mask, 0).sum().backward()


def test_mark_non_differentiable_mixed(lib):
    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            a, b = input + 1, input + 2
            ctx.mark_non_differentiable(a)
            return a, b

        @staticmethod
        def backward(ctx, grad_a, grad_b):
            assert not grad_a.any() and (grad_b == 1).all()
            return grad_b

    x = lib.randn(5, 5, requires_grad=True)
    a, b = MyFunction.apply(x)
    assert not a.requires_grad and b.requires_grad and a.is_leaf
    b.sum().backward()
    assert values(x.grad) == [[1.0] * 5] * 5


def test_mark_non_differentiable_none(lib):
    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            output = input.clone()
            ctx.mark_non_differentiable(output)
            return output

        @staticmethod
        def backward(ctx, grad_output):
            return None

    x = lib.randn(5, 5, requires_grad=True)
    (MyFunction.apply(x * x) * x).sum().backward()


def test_return_duplicate(lib):
    class DoubleDuplicate(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            output = x * 2
            return output, output

        @staticmethod
        def backward(ctx, grad1, grad2):
            return grad1 * 2 + grad2 * 2

    def fn(x):
        a, b = DoubleDuplicate.apply(x)
        assert a is b
        return a + b

    x = lib.randn(5, 5, dtype=lib.float64, requires_grad=True)
    assert lib.autograd.gradcheck(fn, (x,))
    assert lib.autograd.gradgradcheck(fn, (x,))


def test_return_duplicate_inplace(lib):
    class DoubleInplace(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x, x

        @staticmethod
        def backward(ctx, grad1, grad2):
            return grad1 * 2 + grad2 * 2

    def inplace_fn(x):
        a, b = DoubleInplace.apply(x.clone())
        assert a is b
        return a + b

    x = lib.randn(5, 5, dtype=lib.float64, requires_grad=True)
    assert lib.autograd.gradcheck(inplace_fn, (x,))
    assert lib.autograd.gradgradcheck(inplace_fn, (x,))
    with pytest.raises(RuntimeError):
        lib.autograd.function.InplaceFunction.apply(x)
    with pytest.raises(RuntimeError):
        lib.autograd.function.InplaceFunction.apply(x.clone()[0])


def test_no_grad_input(lib):
    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output

    x = lib.randn(5, requires_grad=True)
    with lib.no_grad():
        y = MyFunction.apply(x)
    assert x.requires_grad and y.grad_fn is None


def test_no_grad_python_function(lib):
    class MyOp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x + 1

        @staticmethod
        def backward(ctx, dy):
            return dy

    with lib.no_grad():
        y = MyOp.apply(lib.ones(5, 5, requires_grad=True))
    assert not y.requires_grad


def test_save_none_for_backward(lib):
    class MyFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(None, input, None)
            return input * input

        @staticmethod
        def backward(ctx, grad_output):
            n1, input, n2 = ctx.saved_tensors
            assert n1 is None and n2 is None
            return 2 * input * grad_output

    x = lib.randn(5, 5, requires_grad=True)
    MyFn.apply(x).sum().backward()
    assert close(x.grad, 2 * x)


def test_too_many_grads(lib):
    class MyFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            return input

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, None, None

    x = lib.randn(5, 5, requires_grad=True)
    MyFn.apply(x).sum().backward()
    assert values(x.grad) == [[1.0] * 5] * 5


def test_dep_nograd(lib):
    class F1(lib.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            out = lib.randn(tuple(input.shape))
            ctx.mark_non_differentiable(out)
            return input, out

        @staticmethod
        def backward(ctx, grad_output, ignored):
            return grad_output

    class F2(lib.autograd.Function):
        @staticmethod
        def forward(ctx, input, ignored):
            return input

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, None

    x = lib.randn(5, requires_grad=True)
    a, b = F1.apply(x)
    b = b + 1
    assert a.requires_grad and not b.requires_grad
    c = F2.apply(a, b)
    c.backward(lib.ones(tuple(c.shape)))
    assert values(x.grad) == [1.0] * 5


def test_return_leaf(lib):
    class Identity(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a, a + b

        @staticmethod
        def backward(ctx, grad_a, grad_b):
            return grad_a + grad_b, grad_b

    hook_grads = []
    x = lib.randn(5, 5, requires_grad=True)
    y = lib.randn(5, 5, requires_grad=True)
    q, p = Identity.apply(x, y)
    q.register_hook(lambda grad: hook_grads.append(values(grad)))  # only q's own gradient
    (q + p + x).sum().backward()
    assert values(x.grad) == [[3.0] * 5] * 5 and values(y.grad) == [[1.0] * 5] * 5
    assert hook_grads == [[[1.0] * 5] * 5]


def test_return_leaf_inplace(lib):
    class Inplace(lib.autograd.function.InplaceFunction):
        @staticmethod
        def forward(ctx, a, b):
            ctx.mark_dirty(a)
            return a.add_(b), b + 2

        @staticmethod
        def backward(ctx, grad_a, grad_b):
            return grad_a, grad_a + grad_b

    x = lib.randn(5, 5)
    y = lib.randn(5, 5, requires_grad=True)
    q, _ = Inplace.apply(x, y)
    assert q is x and q.grad_fn.__class__ is Inplace._backward_cls and q.requires_grad
    q.sum().backward()
    assert values(y.grad) == [[1.0] * 5] * 5


def test_custom_function_local_inplace(lib):
    class MyFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, inp, inplace):
            view = inp.clone()[:3]
            if inplace:
                view += 2
            return view

        @staticmethod
        def backward(ctx, grad):
            return grad, None

    base = lib.rand(10, requires_grad=True)
    for inplace in (False, True):
        assert type(MyFn.apply(base, inplace).grad_fn).__name__ == "MyFnBackward"


def test_custom_function_error(lib):
    class BadFw(lib.autograd.Function):
        @staticmethod
        def backward(ctx, foo):
            return foo

    class BadBw(lib.autograd.Function):
        @staticmethod
        def forward(ctx, foo):
            return foo.clone()

    class BadBw2(lib.autograd.Function):
        @staticmethod
        def forward(ctx, foo):
            return foo.clone()

        @staticmethod
        def backward(ctx, foo):
            return foo

        @staticmethod
        def vjp(ctx, foo):
            return foo

    inp = lib.rand(1, requires_grad=True)
    with pytest.raises(NotImplementedError, match="must implement the forward"):
        BadFw.apply(inp)
    with pytest.raises(RuntimeError, match="must implement either the backward"):
        BadBw.apply(inp).sum().backward()
    with pytest.raises(RuntimeError, match="Implementing both 'backward' and 'vjp'"):
        BadBw2.apply(inp).sum().backward()


def test_vjp_alone_is_the_backward(lib):
    class Double(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def vjp(ctx, grad):
            return grad * 2

    x = lib.ones(2, requires_grad=True)
    Double.apply(x).sum().backward()
    assert values(x.grad) == [2.0, 2.0]


def test_custom_function_save_for_forward(lib):
    class Func(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, z):
            ctx.save_for_backward(x, y)
            ctx.save_for_forward(x, y)
            ctx.z = z
            return z * x * y

        @staticmethod
        def vjp(ctx, grad_out):
            x, y = ctx.saved_tensors
            return ctx.z * grad_out * y, ctx.z * grad_out * x, None

    a = lib.tensor(1.0, requires_grad=True, dtype=lib.float64)
    b = lib.tensor(2.0, requires_grad=True, dtype=lib.float64)
    out = Func.apply(a, b, 4)
    out.backward()
    assert (a.grad.item(), b.grad.item()) == (8.0, 4.0)
    assert lib.autograd.gradcheck(Func.apply, (a, b, 4))
    with pytest.raises(NotImplementedError, match="must implement the jvp function"):
        lib.autograd.Function.jvp(None, a)


def test_save_for_forward_takes_tensors_only(lib):
    class Func(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x, 3)
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(AssertionError, match="save_for_forward expects all arguments to be "
                                             "tensors"):
        Func.apply(lib.ones(1, requires_grad=True))


def test_custom_function_saved_tensors(lib):
    class MyFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, None)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    a = lib.randn(5, requires_grad=True)
    y = MyFn.apply(a)
    saved = y.grad_fn.saved_tensors
    assert saved[0] is a and saved[1] is None
    assert y.grad_fn.saved_tensors[0] is a  # read twice: the same
    y.sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        y.grad_fn.saved_tensors  # noqa: B018 - reading it raises


def test_save_for_backward_takes_tensors_or_none(lib):
    class Bad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with pytest.raises(TypeError, match="^save_for_backward can only save variables, but "
                                        "argument 1 is of type int"):
        Bad.apply(lib.ones(2, requires_grad=True))


def test_gradient_for_a_non_tensor_input_is_refused(lib):
    class GradForInt(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, n):
            return x * n

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match="^function GradForIntBackward returned a gradient "
                                           "different than None at position 2, but the "
                                           "corresponding forward input was not a Variable"):
        GradForInt.apply(lib.ones(2, requires_grad=True), 2).sum().backward()


def test_saved_variables_is_a_deprecated_alias(lib):
    seen = []

    class SV(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                (_,) = ctx.saved_variables
            seen.extend((w.category, str(w.message)) for w in caught)
            return g * 2

    SV.apply(lib.ones(2, requires_grad=True)).sum().backward()
    assert seen == [(DeprecationWarning, "'saved_variables' is deprecated; use 'saved_tensors'")]


def test_numpy_inside_forward(lib):
    class NumpyFwd(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            assert not lib.is_grad_enabled()
            return lib.from_numpy(x.numpy() * 2)

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = lib.ones(2, requires_grad=True)
    y = NumpyFwd.apply(x)
    assert type(y.grad_fn).__name__ == "NumpyFwdBackward"
    y.sum().backward()
    assert values(x.grad) == [2.0, 2.0]


def test_ctx_is_a_function_ctx_and_the_node(lib):
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            assert isinstance(ctx, lib.autograd.function.FunctionCtx)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = lib.ones(2, requires_grad=True)
    node = F.apply(x).grad_fn
    assert isinstance(node, lib.autograd.function.BackwardCFunction)
    assert node._forward_cls is F and type(node) is F._backward_cls
    assert node.needs_input_grad == (True,)
    assert values(node.apply(lib.ones(2))) == [2.0, 2.0]  # grad_fn.apply runs backward


def test_custom_function_boxed_grads(lib):
    calls = []

    class MultiOut(lib.autograd.Function):
        boxed_grads_call = True

        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, grads):
            calls.append(type(grads).__name__)
            g1, g2 = grads
            grads.clear()
            return g1 * 2 + g2 * 3

    x = lib.randn(4, requires_grad=True)
    a, b = MultiOut.apply(x)
    (a.sum() + b.sum()).backward()
    assert calls == ["list"] and values(x.grad) == [5.0] * 4
    a2, _ = MultiOut.apply(lib.randn(4, requires_grad=True))
    assert values(a2.grad_fn.apply(lib.ones(4), lib.ones(4) * 2)) == [8.0] * 4


def test_clear_saved_tensors_on_access_double_access_error(lib):
    class MyFn(lib.autograd.Function):
        clear_saved_tensors_on_access = True

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clone()

        @staticmethod
        def backward(ctx, grad_output):
            _ = ctx.saved_tensors
            _ = ctx.saved_tensors
            return grad_output

    with pytest.raises(RuntimeError, match="can only be accessed once"):
        MyFn.apply(lib.randn(3, requires_grad=True)).sum().backward()


def test_custom_function_vmap_defaults(lib):
    assert lib.autograd.Function.generate_vmap_rule is False
    with pytest.raises(NotImplementedError, match="To use autograd.Function with vmap"):
        lib.autograd.Function.vmap(None, (0,), lib.ones(1))


def test_save_output_nr(lib):
    x = lib.randn(10, requires_grad=True)

    class MultiOutputFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x[:5], x[5:]

        @staticmethod
        def backward(ctx, *grad):
            return lib.cat(grad)

    _, b = MultiOutputFn.apply(x)
    assert b.output_nr == 1
    seen = []

    class TestFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, b):
            ctx.save_for_backward(b)
            return b * 2

        @staticmethod
        def backward(ctx, grad_b):
            (b,) = ctx.saved_tensors
            seen.append(b.output_nr)

    TestFn.apply(b).sum().backward()
    assert seen == [1]


def test_custom_autograd_no_early_free(lib):
    class Double(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x ** 2
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, grad_output):
            x, _ = ctx.saved_tensors
            return grad_output * 2 * x

    class Double2(Double):
        @staticmethod
        def backward(ctx, grad_output):
            x, y = ctx.saved_tensors
            return grad_output * 2 * y / x

    x = lib.tensor(2.0, dtype=lib.float64, requires_grad=True)
    for function in (Double, Double2):
        assert lib.autograd.gradcheck(function.apply, (x,))
        assert lib.autograd.gradgradcheck(function.apply, (x,))
        y = function.apply(x)
        lib.autograd.grad(y, x, create_graph=True)
        lib.autograd.grad(y, x)


# -- mark_dirty -------------------------------------------------------------------------------
def test_mark_dirty_bumps_the_version(lib):
    class Dirty(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    y = lib.ones(3, requires_grad=True) * 1
    z = y * y  # saves y at version 0
    out = Dirty.apply(y)
    assert out is y and y._version == 2  # mul_ in forward, then mark_dirty
    assert type(y.grad_fn).__name__ == "DirtyBackward"
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    plain = lib.ones(3)
    Dirty.apply(plain)  # nothing recorded, still bumped twice
    assert plain._version == 2


def test_mark_dirty_of_leaves_and_views_of_leaves(lib):
    class Dirty(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    a = lib.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad has been used "
                                           "in an in-place operation"):
        Dirty.apply(a)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        Dirty.apply(a.view_as(a))
    b, _ = a.clone().split_with_sizes([1, 1], dim=0)
    with pytest.raises(RuntimeError, match="output of a function that returns multiple view"):
        Dirty.apply(b)


def test_mark_dirty_on_a_view_rebases_the_base(lib):
    class Dirty(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    w = lib.ones(3, requires_grad=True)
    b = w * 1
    v = b[:2]
    assert Dirty.apply(v) is v
    assert type(b.grad_fn).__name__ == "CopySlices"
    assert type(v.grad_fn).__name__ == "AsStridedBackward0" and v._version == 2
    b.sum().backward()
    assert values(w.grad) == [2.0, 2.0, 1.0]


def test_mark_dirty_errors(lib):
    class NotReturned(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with pytest.raises(RuntimeError, match="^Some elements marked as dirty during the forward "
                                           "method were not returned as output"):
        NotReturned.apply(lib.ones(2))

    class ViewOfIntermediate(lib.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            out = inp.clone().view_as(inp)
            ctx.mark_dirty(out)
            return out

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="received a tensor that was not an input."):
        ViewOfIntermediate.apply(lib.tensor([1.0], requires_grad=True).clone())

    class NotAnInput(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            c = 3 * a
            c.add_(b)
            ctx.mark_dirty(c)
            return c

        @staticmethod
        def backward(ctx, grad):
            return 3 * grad, 3 * grad

    a = lib.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="received a tensor that was not an input"):
        NotAnInput.apply(a.clone(), a)

    class TwoOutputs(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            a.add_(b)
            ctx.mark_dirty(a)
            return a, a + b

        @staticmethod
        def backward(ctx, ga, gab):
            return ga + gab, ga + gab

    with pytest.raises(RuntimeError, match="your Function modifies inplace an input that is a "
                                           "view of another Tensor"):
        TwoOutputs.apply(a.clone().view_as(a), a)


def test_autograd_python_custom_function_inplace(lib):
    calls = [0]

    class MyAdder(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            a.add_(b)
            ctx.mark_dirty(a)
            return a

        @staticmethod
        def backward(ctx, grad):
            calls[0] += 1
            return grad, grad

    a = lib.ones(2, requires_grad=True)
    b = lib.ones(2, requires_grad=True)
    for make in (lambda: MyAdder.apply(a.clone(), b),
                 lambda: MyAdder.apply(a.clone(), b) + 2,
                 lambda: MyAdder.apply(a.clone().view_as(a), b)):
        calls[0] = 0
        make().sum().backward()
        assert calls[0] == 1


def test_custom_function_saving_mutated_view_no_leak(lib):
    class Test(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            pass

    def scope():
        x = lib.tensor(1.0, requires_grad=True).clone()
        x = x.view_as(x)
        Test.apply(x)
        return weakref.ref(x)

    ref = scope()
    gc.collect()
    assert ref() is None


# -- views returned by custom Functions ------------------------------------------------------
CUSTOM_VIEW = ("This view was created inside a custom Function (or because an input was "
               "returned as-is)")


def test_custom_function_outputs_that_are_views(lib):
    class ViewFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view(-1)

        @staticmethod
        def backward(ctx, g):
            return g.view(2, 3)

    class Ident(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    b = lib.ones(2, 3, requires_grad=True).clone()
    out = ViewFn.apply(b)
    assert out._base is b and type(out.grad_fn).__name__ == "ViewFnBackward"
    with pytest.raises(RuntimeError, match=r"^Output 0 of ViewFn is a view and is being "
                                           r"modified inplace. " + CUSTOM_VIEW[:40]):
        out.mul_(2)
    same = Ident.apply(b)
    assert same is not b and same._base is b
    with pytest.raises(RuntimeError, match="^Output 0 of Ident is a view"):
        same.mul_(2)


def test_inplace_not_requires_grad(lib):
    class MyFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.view_as(inp)

        @staticmethod
        def backward(ctx, grad):
            return grad

    b = lib.rand(1, requires_grad=True)
    view_a = MyFn.apply(lib.rand(1, 2))
    with pytest.raises(RuntimeError, match=CUSTOM_VIEW[:30]):
        view_a += b
    view_a = MyFn.apply(lib.rand(1, 2))
    with pytest.raises(RuntimeError, match=CUSTOM_VIEW[:30]):
        view_a.copy_(b)
    view_a = lib.rand(1, 2).unbind()[0]
    with pytest.raises(RuntimeError, match="This view is the output of a function that returns "
                                           "multiple views."):
        view_a.copy_(b)
    lib.rand(1, 2).select(1, 0).copy_(b)  # an ordinary view: fine


def test_custom_function_return_view_in_nograd(lib):
    class Alias(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x[:]

        @staticmethod
        def backward(ctx, gx):
            return gx

    inp = lib.rand(2, requires_grad=True)
    with lib.no_grad():
        output = Alias.apply(inp)
        expected = inp[:]
    assert output.requires_grad == expected.requires_grad
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being "
                                           "modified inplace"):
        output.zero_()


@pytest.mark.parametrize("fn_id", ["one_output", "two_output", "view_of_temp"])
@pytest.mark.parametrize("inplace", [True, False])
@pytest.mark.parametrize("make_view", [True, False])
def test_autograd_simple_views_python(lib, fn_id, inplace, make_view):
    calls = [0]

    class IdOneOutput(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, make_view):
            return a.narrow(0, 0, 2) if make_view else a.clone()

        @staticmethod
        def backward(ctx, ga):
            calls[0] += 1
            return ga, None

    class IdTwoOutput(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, make_view):
            a = a.narrow(0, 0, 2) if make_view else a.clone()
            return a, a + b

        @staticmethod
        def backward(ctx, ga, gab):
            calls[0] += 1
            return ga + gab, gab, None

    class ViewOfTemp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, make_view):
            ctx.save_for_backward(a)
            a = a.narrow(0, 0, 2) if make_view else a.clone()
            return a.clone().select(0, 0)

        @staticmethod
        def backward(ctx, grad):
            calls[0] += 1
            (a,) = ctx.saved_tensors
            res = lib.zeros_like(a)
            res.select(0, 0).copy_(grad)
            return res, None

    messages = {
        "one_output": "Output 0 of IdOneOutput is a view and is being modified inplace. This "
                      "view was created inside a custom Function",
        "two_output": "Output 0 of IdTwoOutput is a view and is being modified inplace. This "
                      "view is the output of a function that returns multiple views.",
        "view_of_temp": "Output 0 of ViewOfTemp is a view and is being modified inplace. This "
                        "view was created inside a custom Function"}

    def fn(a, b):
        a, b = a.clone(), b.clone()
        if fn_id == "two_output":
            tmp1, tmp2 = IdTwoOutput.apply(a, b, make_view)
            if inplace:
                tmp1 += 3
                tmp2 += 3
            else:
                tmp1, tmp2 = tmp1 + 3, tmp2 + 3
            tmp = tmp1 * tmp2
        else:
            if fn_id == "one_output":
                tmp = IdOneOutput.apply(a, make_view)
            else:
                tmp = ViewOfTemp.apply(a + b, make_view)
            if inplace:
                tmp += 3
            else:
                tmp = tmp + 3
        return tmp.sum()

    a = lib.ones(2, dtype=lib.float64, requires_grad=True)
    b = lib.ones(2, dtype=lib.float64, requires_grad=True)
    output_is_a_view = make_view or fn_id == "view_of_temp"
    if inplace and output_is_a_view:
        with pytest.raises(RuntimeError, match=messages[fn_id]):
            fn(a, b)
        return
    assert lib.autograd.gradcheck(fn, (a, b))
    calls[0] = 0
    fn(a, b).abs().backward()
    assert calls[0] == 1


def test_complex_view_function(lib):
    calls = [0]

    class ComplexView(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, idx):
            res = a.select(0, idx)
            ctx.save_for_backward(a)
            ctx.idx = idx
            return res

        @staticmethod
        def backward(ctx, grad):
            calls[0] += 1
            (a,) = ctx.saved_tensors
            res = lib.zeros_like(a)
            res.select(0, ctx.idx).copy_(grad)
            return res, None

    a = lib.ones(2, requires_grad=True)
    ComplexView.apply(a.clone(), 1).sum().backward()
    assert calls[0] == 1
    out = ComplexView.apply(a.clone(), 1)
    with pytest.raises(RuntimeError, match="Output 0 of ComplexView is a view and is being "
                                           "modified inplace"):
        out += 1
