"""In-place changes, views, indexing and ``.data``, as PyTorch's autograd does them.

Most tests are ports of PyTorch's ``test/test_autograd.py`` (named after the test they port,
written in our own words); each runs with ``lib = tracegrad`` and, where torch is installed,
``lib = torch``, so the expectation itself is proven on real PyTorch. Tests of what only
tracegrad adds (the tensor named in a message, a hint) run on tracegrad alone.
"""

from __future__ import annotations

import math

import pytest
from tutorial_programs import double_mul_function

import tracegrad


def values(tensor) -> list:
    return tensor.detach().tolist()


def flat(nested) -> list:
    if isinstance(nested, (list, tuple)):
        return [item for part in nested for item in flat(part)]
    return [nested]


def close(tensor, expected) -> bool:
    return flat(values(tensor)) == pytest.approx(flat(expected), rel=1e-5, abs=1e-6)


def chain(tensor) -> list[str]:
    """grad_fn names along the first edges, down to (not including) the leaf's node."""
    names, node = [], tensor.grad_fn
    while node is not None and node.next_functions:
        names.append(node.name())
        node = node.next_functions[0][0]
    return names


def node_name(node) -> str:
    return type(node).__name__  # torch's node.name() of a C++ node can be mangled


# -- in-place through views (TestAutogradDeviceType) ----------------------------------------
def test_inplace_on_view_backprop_base(lib):
    root = lib.randn(2, 2, requires_grad=True)
    x = root.clone()
    x.narrow(0, 0, 1).mul_(2)
    x.sum().backward()
    assert values(root.grad) == [[2, 2], [1, 1]]


def test_inplace_on_view_backprop_view_of_view(lib):
    root = lib.randn(2, 2, requires_grad=True)
    x = root.clone()
    v1 = x.narrow(0, 0, 1)
    v2 = x.narrow(0, 0, 1)
    v1.mul_(2)
    v2.sum().backward()  # v2 sees the change made through v1: its grad_fn was regenerated
    assert values(root.grad) == [[2, 2], [0, 0]]


def test_inplace_on_view_of_view(lib):
    root = lib.randn(2, 2, requires_grad=True)
    x = root.clone()
    x.narrow(0, 0, 1).narrow(1, 1, 1).mul_(2)
    x.sum().backward()
    assert values(root.grad) == [[1, 2], [1, 1]]


def test_inplace_on_view_then_no_grad(lib):
    a = lib.ones(3, 1, dtype=lib.float64, requires_grad=True)
    c = (a * 2).view_as(a * 2)
    c[0][0] = 3
    with lib.no_grad():
        c.grad_fn  # noqa: B018 - reading the grad_fn under no_grad changes nothing
    c.sum().backward()
    assert values(a.grad) == [[0.0], [2.0], [2.0]]


def test_inplace_on_view_gradcheck(lib):
    a = lib.randn(4, 4, dtype=lib.float64, requires_grad=True)
    b = lib.randn(2, 2, dtype=lib.float64, requires_grad=True)

    def func(root, b):
        x = root.clone()
        x.narrow(1, 2, 2).narrow(0, 1, 2).mul_(b)
        x.narrow(1, 0, 2).narrow(0, 1, 2).mul_(b)
        return x

    assert lib.autograd.gradcheck(func, (a, b))
    go = lib.randn(4, 4, dtype=lib.float64, requires_grad=True)
    assert lib.autograd.gradgradcheck(func, (a, b), (go,))


def test_inplace_on_view_multiple_outputs(lib):
    x = lib.arange(9.0, dtype=lib.float64).reshape(3, 3).requires_grad_().clone()
    with pytest.raises(RuntimeError, match="returns multiple views"):
        x.unbind()[0].mul_(2)


def test_inplace_on_view_of_multiple_output_view(lib):
    a = lib.rand(10, dtype=lib.float64, requires_grad=True).clone()
    b = a.unbind(0)
    with pytest.raises(RuntimeError, match=r"Output 0 of View is a view .*returns multiple"):
        b[0].view_as(b[0]).mul_(2)


def test_inplace_multiple_output_view_of_view(lib):
    a = lib.rand(10, dtype=lib.float64, requires_grad=True).clone()
    c = a.view_as(a).unbind(0)
    with pytest.raises(RuntimeError, match="Output 0 of Unbind is a view"):
        c[0].mul_(2)


def test_inplace_on_view_makes_base_require_grad(lib):
    a = lib.randn(4, 4, dtype=lib.float64)
    b = lib.randn(4, 2, dtype=lib.float64, requires_grad=True)

    def func(root, b):
        x = root.clone()
        assert not x.requires_grad
        x.narrow(1, 2, 2).mul_(b)
        assert x.requires_grad
        return x

    assert lib.autograd.gradcheck(func, (a, b))
    go = lib.randn(4, 4, dtype=lib.float64, requires_grad=True)
    assert lib.autograd.gradgradcheck(func, (a, b), (go,))


def test_inplace_on_view_backprop_view(lib):
    a = lib.tensor([2.0, 5.0])
    b = lib.tensor([3.0], requires_grad=True)
    res = a.narrow(0, 1, 1).mul_(b)
    res.sum().backward()
    assert values(b.grad) == [5] and not a.is_leaf  # a now has a CopySlices history


def test_inplace_on_view_modify_base(lib):
    r = lib.ones(1, dtype=lib.float64, requires_grad=True)

    def fn(r):
        x = lib.ones(5, dtype=lib.float64)
        v = x.select(0, 1)
        assert not v.requires_grad and v.grad_fn is None
        x.add_(r)  # v now depends on r through x
        assert v.requires_grad
        return v

    assert lib.autograd.gradcheck(fn, (r,))
    assert lib.autograd.gradgradcheck(fn, (r,))


def test_inplace_on_view_python(lib):
    class PyAdd(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.mark_dirty(x)
            x.add_(y)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    def func(root, b):
        x = root.clone()
        PyAdd.apply(x.narrow(1, 2, 2).narrow(0, 1, 2), b)
        PyAdd.apply(x.narrow(1, 0, 2).narrow(0, 1, 2), b)
        return x

    a = lib.randn(4, 4, dtype=lib.float64, requires_grad=True)
    b = lib.randn(2, 2, dtype=lib.float64, requires_grad=True)
    assert lib.autograd.gradcheck(func, (a, b))
    go = lib.randn(4, 4, dtype=lib.float64, requires_grad=True)
    assert lib.autograd.gradgradcheck(func, (a, b), (go,))


def test_inplace_on_view_non_contig(lib):
    root = lib.ones(2, 3, 2).select(2, 1).t().requires_grad_(True)
    x = root.clone()
    x.narrow(0, 0, 1).narrow(1, 1, 1).mul_(2)
    x.sum().backward()
    assert values(root.grad) == [[1, 2], [1, 1], [1, 1]]


@pytest.mark.parametrize("split", ["unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk"])
def test_inplace_on_view_multi_output_unsafe(lib, split):
    args = {"unsafe_split": (1,), "unsafe_split_with_sizes": ((1, 1, 1),),
            "unsafe_chunk": (3,)}[split]
    a = lib.randn(3, 3, requires_grad=True)
    s1, s2, _ = getattr(a + a, split)(*args)
    s1.mul_(s2)
    s1.sum().backward()
    assert a.grad is not None


@pytest.mark.parametrize("split", ["split", "split_with_sizes", "chunk"])
def test_inplace_on_view_multi_output_safe(lib, split):
    args = {"split": (1,), "split_with_sizes": ((1, 1, 1),), "chunk": (3,)}[split]
    a = lib.randn(3, 3, requires_grad=True)
    s1, s2, _ = getattr(a + a, split)(*args)
    with pytest.raises(RuntimeError,
                       match="This view is the output of a function that returns multiple"):
        s1.mul_(s2)


def test_inplace_on_view_undefined_grad_output(lib):
    class InplaceFunc(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, other):
            ctx.mark_dirty(x)
            return x.mul_(2)

        @staticmethod
        def backward(ctx, grad):
            return grad * 2, None

    a = lib.tensor([1.0], requires_grad=True)
    b = lib.tensor(1.0, requires_grad=True)
    out = InplaceFunc.apply(a.clone()[:], b)
    out.backward()
    assert b.grad is None and a.grad.item() == 2


def test_unused_output(lib):
    x = lib.randn(10, 10, requires_grad=True)
    (x.chunk(5)[2] * 4 + 2).sum().backward()
    expected = [[0.0] * 10] * 4 + [[4.0] * 10] * 2 + [[0.0] * 10] * 4
    assert values(x.grad) == expected


def test_select_sum(lib):
    x = lib.randn(10, dtype=lib.float64, requires_grad=True)
    assert lib.autograd.gradcheck(lambda t: t.select(0, 1).sum(), (x,))
    assert lib.autograd.gradgradcheck(lambda t: t.select(0, 1).sum(), (x,))


def test_diagonal_expanded_v(lib):
    value = 0.5
    a = lib.rand(10, 10, dtype=lib.float64, requires_grad=True)
    (result,) = lib.autograd.grad(a.diagonal(), a, lib.tensor(value).expand(10))
    assert values(result) == values(lib.eye(10, dtype=lib.float64) * value)


def test_select_expanded_v(lib):
    v = lib.rand(10).expand(10, 10)
    a = lib.rand(10, 10, 10, requires_grad=True)
    (result,) = lib.autograd.grad(a[0], a, v)
    assert values(result[0]) == values(v) and not result[1:].any()


def test_slice_expanded_v(lib):
    v = lib.rand(10, 1).expand(2, 10, 10)
    a = lib.rand(10, 10, 10, requires_grad=True)
    (result,) = lib.autograd.grad(a[3:5], a, v)
    assert values(result[3:5]) == values(v) and not result[:3].any() and not result[5:].any()


# -- in-place ops and version counters (TestAutograd) ---------------------------------------
def test_inplace(lib):
    x = lib.ones(5, 5, requires_grad=True)
    y = (lib.ones(5, 5) * 4).requires_grad_()
    z = x * y
    q = z + y
    w = z * y
    z.add_(2)
    q.backward(lib.ones(5, 5), retain_graph=True)  # AddBackward0 saves nothing
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.backward(lib.ones(5, 5))  # MulBackward0 saved z

    z = x * y
    q = z * y
    r = z + y
    w = z.add_(y)
    w.backward(lib.ones(5, 5), retain_graph=True)
    r.backward(lib.ones(5, 5), retain_graph=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        q.backward(lib.ones(5, 5))

    with lib.no_grad():
        x.grad.zero_()
    z = x / 2 + y / 8
    q = z * y
    r = z + y
    version = z._version
    w = z.exp_()
    assert z._version != version
    r.backward(lib.ones(5, 5), retain_graph=True)
    assert close(x.grad, [[0.5] * 5] * 5)
    w.backward(lib.ones(5, 5), retain_graph=True)
    assert close(x.grad, [[(1 + math.e) / 2] * 5] * 5)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        q.backward(lib.ones(5, 5))

    leaf = lib.ones(5, 5, requires_grad=True)
    x = leaf.clone()
    x.add_(10)
    assert values(x) == [[11.0] * 5] * 5
    (x + 2).backward(lib.ones(5, 5))
    assert values(leaf.grad) == [[1.0] * 5] * 5
    z = x * (x + 2)
    x.add_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward(lib.ones(5, 5))


def test_no_grad_modifies_version(lib):
    x = lib.randn(5, requires_grad=True)
    z = (x * lib.randn(5, requires_grad=True)).sum()
    with lib.no_grad():
        x *= 2
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_detach_then_inplace_raises_in_autograd(lib):
    x = lib.randn([], requires_grad=True)
    y = x ** 2  # saves x
    x.detach().zero_()  # detach shares the version counter
    with pytest.raises(RuntimeError, match="has been modified by an inplace"):
        y.backward()


def test_no_unnecessary_save(lib):
    mu = lib.ones(1, requires_grad=True)
    x = lib.empty(1)
    loss = 0
    for i in range(3):
        x.detach_()
        x.copy_(mu + i)
        loss = loss + (x * lib.tensor([float(i)])).sum()  # x * constant does not save x
    loss.backward()
    assert values(mu.grad) == [3.0]


def test_requires_grad_inplace(lib):
    a, b = lib.randn(5, 5), lib.randn(5, 5, requires_grad=True)
    a += b
    assert a.requires_grad
    a = lib.randn(5, 5) + 0
    a += b
    assert a.requires_grad


def test_no_requires_grad_inplace(lib):
    a = lib.randn(2, 3)
    a.add_(5)
    a.requires_grad = True
    a.sum().backward()
    assert values(a.grad) == [[1.0] * 3] * 2

    a = lib.randn(2, 3)
    a[:].add_(5)
    a.requires_grad = True
    a.sum().backward()
    assert values(a.grad) == [[1.0] * 3] * 2

    a = lib.randn(2, 3)
    b = a[:]
    a.requires_grad = True  # b now requires grad through its base
    assert b.requires_grad
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        a.add_(5)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        b.add_(5)


def test_leaf_assignment(lib):
    x = lib.randn(5, 5)
    y = lib.randn(5, requires_grad=True)
    z = lib.randn(5, requires_grad=True)
    x[0] = y
    x[1] = 2 * z
    assert x.requires_grad and x.grad_fn is not None
    x.sum().backward()
    assert values(y.grad) == [1.0] * 5 and values(z.grad) == [2.0] * 5


def test_no_grad_assignment(lib):
    x = lib.randn(5, 5, requires_grad=True)
    with lib.no_grad():
        x[0] = lib.randn(5)
    assert x.requires_grad and x.grad_fn is None


def test_backward_twice_with_saved_values(lib):
    b = lib.randn(3, requires_grad=True, dtype=lib.float64)
    c = lib.zeros(3, dtype=lib.float64)
    c[[1, 2]] = b[[1, 1]]
    c.backward(lib.tensor([1, 1, 1], dtype=lib.float64))
    with pytest.raises(RuntimeError, match="Specify retain_graph=True"):
        c.backward(lib.tensor([1, 1, 1], dtype=lib.float64))


def test_backward_twice_retained_graph_with_saved_values(lib):
    b = lib.randn(3, requires_grad=True, dtype=lib.float64)
    c = lib.zeros(3, dtype=lib.float64)
    c[[1, 2]] = b[[1, 1]]
    c.backward(lib.tensor([1, 1, 1], dtype=lib.float64), retain_graph=True)
    c.backward(lib.tensor([1, 1, 1], dtype=lib.float64))
    assert values(b.grad) == [0.0, 4.0, 0.0]


def test_variable_traverse(lib):
    def make():
        tmp = lib.randn(10, requires_grad=True).view(10, 1)
        cycle = [tmp]
        cycle.append(cycle)
        return tmp.view(10)

    out = make()
    out.backward(lib.randn(10))


def test_copy_makes_the_target_require_grad(lib):
    x = lib.randn(10, requires_grad=True)
    for dtype in (lib.float16, lib.float32, lib.float64):
        y = lib.empty(10, dtype=dtype)
        y.copy_(x)
        assert y.requires_grad and node_name(y.grad_fn) == "CopyBackwards"


# -- retain_grad and tensor hooks after in-place changes -----------------------------------
def test_retain_grad_inplace(lib):
    a = lib.tensor([1.0], requires_grad=True).clone()
    a.retain_grad()
    a.mul_(2)
    a.sum().backward()
    assert values(a.grad) == [1.0]  # the gradient of the new value

    a = lib.tensor([1.0], requires_grad=True).clone()
    a.retain_grad()
    a.mul_(2)
    a.mul_(2)
    a.sum().backward()
    assert values(a.grad) == [1.0]

    x = lib.tensor([1.0], requires_grad=True).clone()
    x.retain_grad()
    x[:] *= 2  # the retaining moves to the CopySlices of the base
    x *= 2
    x.sum().backward()
    assert values(x.grad) == [1.0]

    base = lib.zeros(4)
    base.view(2, 2).add_(lib.randn(2, 2, requires_grad=True))  # nothing to move


def test_retain_grad_inplace_over_view(lib):
    base = lib.tensor([1.0], requires_grad=True).clone()
    view, view2 = base[:], base[:]
    view.retain_grad()
    view2.retain_grad()
    view.mul_(2)
    (view + view2).sum().backward()
    assert values(view.grad) == values(view2.grad) == [1.0]


def test_retains_grad_inplace_multiple_outputs(lib):
    b = lib.rand(3, 3, requires_grad=True)
    var, mean = double_mul_function(lib)(b)
    var.retain_grad()
    mean.retain_grad()
    var.mul_(2)
    (var + mean).sum().backward()
    a = b.detach().requires_grad_(True)
    var2, mean2 = double_mul_function(lib)(a)
    var2.mul_(2)
    expected = lib.autograd.grad((var2 + mean2).sum(), inputs=(var2, mean2))
    assert values(var.grad) == values(expected[0])
    assert values(mean.grad) == values(expected[1])


def test_tensor_hooks_inplace(lib):
    seen = []

    def before(grad):  # registered before mul_: sees the gradient of the old value
        seen.append(("before", values(grad)))
        return grad * 2

    def after(grad):
        seen.append(("after", values(grad)))
        return grad * 2

    a = lib.tensor([1.0], requires_grad=True)
    b = a.clone()
    b.register_hook(before)
    b.mul_(2)
    b.register_hook(after)
    b.sum().backward()
    assert seen == [("after", [1.0]), ("before", [4.0])]
    assert values(a.grad) == [8.0]


def test_tensor_hooks_inplace_multiple_outputs(lib):
    counts = [0, 0, 0]
    b = lib.rand(3, 3, requires_grad=True)
    out1, out2 = double_mul_function(lib)(b)
    out1.register_hook(lambda g: counts.__setitem__(0, counts[0] + 1))
    out2.register_hook(lambda g: counts.__setitem__(1, counts[1] + 1))
    out1.mul_(2)
    out1.register_hook(lambda g: counts.__setitem__(2, counts[2] + 1))
    (out1 + out2 * 3).sum().backward()
    assert counts == [1, 1, 1]


def test_tensor_hooks_inplace_over_view(lib):
    fired = []
    base = lib.tensor([1.0], requires_grad=True).clone()
    view, view2 = base[:], base[:]
    view.register_hook(lambda g: fired.append("view"))
    view2.register_hook(lambda g: fired.append("view2, old grad_fn"))
    view.mul_(2)
    view2.grad_fn  # noqa: B018 - torch regenerates the view's grad_fn when it is read
    view2.register_hook(lambda g: fired.append("view2"))
    (view + view2).sum().backward()
    assert fired == ["view2"]


# -- grad_fn names and versions, compared with torch -----------------------------------------
def test_inplace_on_a_view_gives_the_base_copyslices_and_the_view_asstrided(lib):
    a = lib.ones(2, 3, requires_grad=True)
    b = a.clone()
    v = b.view(6)
    v.mul_(2)
    assert node_name(b.grad_fn) == "CopySlices"
    assert node_name(v.grad_fn) == "AsStridedBackward0"
    assert v.grad_fn.next_functions[0][0] is b.grad_fn
    # (torch also lists the scalar 2 as a second edge, (None, 0); tracegrad's Mul with a
    # Python number has one)
    assert node_name(b.grad_fn.next_functions[0][0]) == "CloneBackward0"
    assert (b._version, v._version) == (1, 1)


def test_other_views_of_a_changed_base_regenerate_their_grad_fn(lib):
    a = lib.ones(2, 3, requires_grad=True)
    b = a.clone()
    row = b[0]
    b.mul_(2)
    assert node_name(row.grad_fn) == "AsStridedBackward0"
    assert node_name(row.grad_fn.next_functions[0][0]) == "MulBackward0"
    b = a.clone()
    row = b[0]
    with lib.no_grad():
        b.mul_(2)
    assert node_name(row.grad_fn) == "AsStridedBackward0"
    b = a.clone()
    row = b[0]
    b.data.mul_(2)  # .data has a version counter of its own: the view keeps its grad_fn
    assert node_name(row.grad_fn) == "SelectBackward0"


def test_asstrided_node_keeps_the_views_geometry(lib):
    b = lib.ones(2, 3, requires_grad=True).clone()
    v = b[1, 1:]
    v.mul_(2)
    if lib is tracegrad:
        node = v.grad_fn
        saved = (node.size, node.stride, node.storage_offset)
    else:
        node = v.grad_fn
        saved = (node._saved_size, node._saved_stride, node._saved_storage_offset)
    assert saved == ((2,), (1,), 4)


def test_augmented_assignment_through_an_index_records_two_copyslices(lib):
    b = lib.ones(2, 3, requires_grad=True).clone()
    b[0] += 1
    assert b._version == 2
    assert node_name(b.grad_fn) == "CopySlices"
    assert [node_name(n) for n, _ in b.grad_fn.next_functions] == [
        "CopySlices", "AsStridedBackward0"]


def test_a_view_of_a_base_that_did_not_require_grad(lib):
    c = lib.zeros(2, 3)
    v0, v1 = c[0], c[1]
    w = lib.ones(3, requires_grad=True)
    v1.add_(w)
    assert c.requires_grad and node_name(c.grad_fn) == "CopySlices"
    assert c.grad_fn.next_functions[0][0] is None
    assert v0.requires_grad and node_name(v0.grad_fn) == "AsStridedBackward0"
    (v0.sum() + 2 * v1.sum()).backward()
    assert values(w.grad) == [2.0, 2.0, 2.0]


def test_inplace_on_view_saving_its_output(lib):
    x = lib.ones(3, requires_grad=True)
    y = x * 1
    v = y[:2]
    v.exp_()
    assert node_name(y.grad_fn) == "CopySlices" and y._version == 1
    y.sum().backward()
    assert close(x.grad, [math.e, math.e, 1.0])
    z = lib.ones(3, requires_grad=True) * 1
    z.exp_()
    z.add_(1)  # ExpBackward0 saved z at version 1
    with pytest.raises(RuntimeError, match="is at version 2; expected version 1"):
        z.sum().backward()


def test_inplace_saving_the_old_value_of_self(lib):
    x = lib.ones(3, requires_grad=True)
    w = lib.full((3,), 2.0, requires_grad=True)
    y = x * 3
    y.mul_(w)  # w's gradient needs y's old value: a clone, not y itself
    (g,) = lib.autograd.grad(y.sum(), w, create_graph=True)
    assert values(g) == [3.0, 3.0, 3.0]
    assert values(lib.autograd.grad(g.sum(), x)[0]) == [3.0, 3.0, 3.0]
    y = x * 1
    y.mul_(y)  # the second save is y itself, now changed: backward fails
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_expand_views(lib):
    b = lib.ones(2, 3, requires_grad=True).clone()
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor "
                                           "refers to a single memory location"):
        b.expand(2, 2, 3).mul_(2)
    v = b.expand(1, 2, 3)  # nothing repeats: a view that can be written
    v.mul_(2)
    assert node_name(b.grad_fn) == "CopySlices" and node_name(v.grad_fn) == \
        "AsStridedBackward0"


def test_in_place_random_fills_record_their_nodes(lib):
    a = lib.ones(2, 3, requires_grad=True)
    for method, name in (("uniform_", "UniformBackward0"), ("normal_", "NormalBackward0"),
                         ("zero_", "ZeroBackward0")):
        y = a * 1
        getattr(y, method)()
        assert node_name(y.grad_fn) == name
    y = a * 1
    y.fill_(2)
    assert node_name(y.grad_fn) == "FillBackward2"
    value = lib.tensor(2.0, requires_grad=True)
    y = a * 1
    y.fill_(value)
    assert node_name(y.grad_fn) == "FillBackward3"
    y.sum().backward()
    assert value.grad.item() == 6.0 and not a.grad.any()


# -- PyTorch's refusals ----------------------------------------------------------------------
def test_inplace_on_leaves_and_their_views(lib):
    a = lib.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used"):
        a.mul_(2)
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad is "
                                           "being used in an in-place operation"):
        a[0].mul_(2)
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad"):
        a.view(6).mul_(2)
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad"):
        a[0] = 1
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad"):
        a[[0]] = 1.0


NO_GRAD_VIEW = (r"^A view was created in no_grad mode and is being modified inplace with grad "
                r"mode enabled. Given that this use case is ambiguous and error-prone, it is "
                r"forbidden.")
NO_GRAD_BASE = (r"^A view was created in no_grad mode and its base or another view of its base "
                r"has been modified inplace with grad mode enabled.")


def test_views_made_under_no_grad(lib):
    a = lib.ones(2, 3, requires_grad=True)
    b = a.clone()
    with lib.no_grad():
        v = b[0]
    with pytest.raises(RuntimeError, match=NO_GRAD_VIEW):
        v.mul_(2)
    with lib.no_grad():
        v = b[0]
    b.mul_(2)
    with pytest.raises(RuntimeError, match=NO_GRAD_BASE):
        v.grad_fn  # noqa: B018
    with pytest.raises(RuntimeError, match=NO_GRAD_BASE):
        v * 2
    with lib.no_grad():
        assert values(v * 2) == [4.0, 4.0, 4.0]  # no graph, no error
    with lib.no_grad():
        w = b[:1]
    with pytest.raises(RuntimeError, match=r"^Output 0 of Slice is a view of a view which was "
                                           r"created in no_grad mode and is being modified"):
        w[0:1].mul_(2)


def test_no_grad_view_of_a_leaf_requires_grad_but_leads_nowhere(lib):
    w = lib.ones(3, requires_grad=True)
    with lib.no_grad():
        v = w.view(-1)
    assert v.requires_grad and v.grad_fn is None and v.is_leaf
    y = (v * 2).sum()
    assert y.requires_grad
    y.backward()
    assert v.grad is None and w.grad is None


def test_no_grad_view_modified_under_no_grad_prints_invalid(lib):
    a = lib.ones(1, requires_grad=True)
    with lib.no_grad():
        b = a[:]
        b *= 2
    assert repr(b).replace("torch", "tracegrad") == "tensor([2.], grad_fn=<Invalid>)"


def test_multi_output_views_after_their_base_changed(lib):
    a = lib.ones(4, requires_grad=True).clone()
    pieces = a.split(2)
    a.mul_(2)
    with pytest.raises(RuntimeError, match="^Output 0 of Split is a view and its base or "
                                           "another view of its base has been modified"):
        pieces[0] * 2
    with pytest.raises(RuntimeError, match="^Output 1 of SplitWithSizes is a view and is being "
                                           "modified inplace"):
        lib.ones(4, requires_grad=True).clone().split([1, 3])[1].mul_(2)


def test_autograd_views_codegen(lib):
    def check(grad_mode, requires_grad, errors):
        inp = lib.rand(2, requires_grad=requires_grad).clone()
        with lib.set_grad_enabled(grad_mode):
            out = inp.view_as(inp)
        assert out._is_view()
        with pytest.raises(RuntimeError, match=errors[0]) if errors[0] else _no_error():
            out.add_(1)
        inp = lib.rand(2, requires_grad=requires_grad).clone()
        with lib.set_grad_enabled(grad_mode):
            out = inp.unbind()
        assert out[0]._is_view() and out[1]._is_view()
        for index in (0, 1):
            error = errors[index + 1]
            with pytest.raises(RuntimeError, match=error) if error else _no_error():
                out[index].add_(1)

    check(True, False, (None, None, None))
    unbind = "Output {} of Unbind is a view and is being modified inplace."
    check(True, True, (None, unbind.format(0), unbind.format(1)))
    no_grad = "A view was created in no_grad mode and is being modified inplace"
    check(False, True, (no_grad, no_grad, no_grad))
    check(False, False, (None, None, None))


class _no_error:
    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False


def test_autograd_inplace_view_of_view(lib):
    x = lib.zeros(2)
    with lib.no_grad():
        y = x.view(2)
    y.requires_grad_(True)
    z = y.view(2)
    with pytest.raises(RuntimeError, match="a view of a view .* is being .* inside the no_grad "
                                           "block"):
        z /= 2


def test_autograd_print_tensor(lib):
    a = lib.ones(1, requires_grad=True)
    assert repr(a) == "tensor([1.], requires_grad=True)"
    assert repr(a.clone()) == "tensor([1.], grad_fn=<CloneBackward0>)"


def test_detach(lib):
    x = lib.randn(10, 10, requires_grad=True)
    y = (x + 2).detach()
    assert not y.requires_grad and not (y * 4 + 2).requires_grad
    y = (x * 2).detach()
    assert y.grad_fn is None
    (x + y).sum().backward()
    assert values(x.grad) == [[1.0] * 10] * 10

    x = lib.randn(10, 10, requires_grad=True)
    y = lib.randn(10, 10, requires_grad=True)
    a = x * 2
    (y + a).sum().backward(retain_graph=True)
    a.detach_()
    assert not a.requires_grad
    (y + a).sum().backward()
    assert values(x.grad) == [[2.0] * 10] * 10 and values(y.grad) == [[2.0] * 10] * 10
    with pytest.raises(RuntimeError, match=r"^Can't detach views in-place. Use detach\(\) "
                                           r"instead"):
        x.narrow(0, 1, 4).detach_()


def test_detach_base(lib):
    x = lib.randn(10, 10, requires_grad=True)
    view = x.narrow(0, 1, 4)
    x.detach_()
    assert not x.requires_grad
    assert view.requires_grad and view.grad_fn is not None and view._base is x


# -- indexing -------------------------------------------------------------------------------
INDICES = [1, (1, 1), slice(1, None), slice(None, 2), (slice(None, 2), 2), (slice(1, 2), 2),
           (1, slice(2, None)), (slice(None), slice(2, None)), [0, 2],
           (Ellipsis, slice(2, None)), ([0], [0]), ([1, 2, 3], [0]), ([1, 2], [2, 1]),
           ([[1, 2], [3, 0]], [[0, 1], [2, 3]]), (slice(None), [2, 3]), ([2, 3], slice(None)),
           [0], ([0],)]


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_indexing(lib, index):
    x = lib.arange(1.0, 17).view(4, 4)
    y = x.clone().requires_grad_()
    indexed = y[index]
    assert values(indexed) == values(x[index])
    indexed.sum().backward()
    expected = lib.zeros(4, 4)
    expected[index] = 1
    assert values(y.grad) == values(expected)


INDICES_3D = [(slice(None), [0], [0]), ([0], [0], slice(None)), (slice(None), [0, 1, 2], [0]),
              ([0, 1, 2], [0], slice(None)), (slice(None), [1, 2], [2, 1]),
              ([1, 2], [2, 1], slice(None)), (slice(None), [[1, 2], [2, 0]], [[0, 1], [2, 3]]),
              ([[1, 2], [3, 0]], [[0, 1], [2, 2]], slice(None)),
              (slice(None), slice(None), [2, 1]), (slice(None), [2, 1], slice(None)),
              ([2, 1], slice(None), slice(None)), ([0],), ([0], slice(None)),
              ([0], Ellipsis), ([1, 2], [0, 1]), ([1, 2], [0, 1], Ellipsis),
              (Ellipsis, [1, 2], [0, 1]), (0, slice(None), [0, 1])]


@pytest.mark.parametrize("index", INDICES_3D, ids=repr)
def test_indexing_3d(lib, index):
    x = lib.arange(1.0, 49).view(4, 3, 4)
    y = x.clone().requires_grad_()
    indexed = y[index]
    assert values(indexed) == values(x[index])
    indexed.sum().backward()
    expected = lib.zeros(4, 3, 4)
    expected[index] = 1
    assert values(y.grad) == values(expected)


def test_indexing_with_a_mask_and_a_long_tensor(lib):
    x = lib.arange(1.0, 17).view(4, 4)
    for index in (lib.tensor([0, 2]), x > 8, (lib.tensor([0, 1]), Ellipsis)):
        y = x.clone().requires_grad_()
        y[index].sum().backward()
        expected = lib.zeros(4, 4)
        expected[index] = 1
        assert values(y.grad) == values(expected)


def test_indexing_duplicates(lib):
    y = lib.arange(1.0, 17).view(4, 4).requires_grad_()
    y[lib.tensor([1, 1, 3, 2, 1, 2])].sum().backward()
    assert values(y.grad.sum(1)) == [0.0, 12.0, 8.0, 4.0]

    y = lib.arange(1.0, 17).view(4, 4).requires_grad_()
    y[[[1, 2], [0, 0]], [[0, 1], [1, 1]]].sum().backward()
    assert values(y.grad) == [[0, 2, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]]

    y = lib.arange(1.0, 65).view(4, 4, 4).requires_grad_()
    y[[1, 1, 1], :, :].sum().backward()
    assert values(y.grad[1]) == [[3.0] * 4] * 4 and not y.grad[0].any()


def test_index_backward_does_not_save_tensor(lib):
    a = lib.tensor([1.0, 0, 0])
    b = lib.zeros(3, requires_grad=True)
    tensor = b + 0
    tensor[a != 0] = tensor[a != 0]
    tensor.backward(lib.zeros_like(tensor))


GETITEM_CHAINS = [
    ((slice(None), 0), ["SelectBackward0"]), ((slice(None), slice(None)), ["AliasBackward0"]),
    ((0, slice(None)), ["SelectBackward0"]), ((Ellipsis, 0), ["SelectBackward0"]),
    ((slice(None), None), ["UnsqueezeBackward0"]), (slice(0, 2), ["SliceBackward0"]),
    (slice(None), ["SliceBackward0"]), ((slice(None),), ["AliasBackward0"]),
    ((slice(0, 2), 1), ["SelectBackward0"]), (0, ["SelectBackward0"]),
    ((), ["AliasBackward0"]), (Ellipsis, ["AliasBackward0"]), (None, ["UnsqueezeBackward0"]),
    ((None, 0), ["SelectBackward0", "UnsqueezeBackward0"]), ([0, 1], ["IndexBackward0"]),
    ((0, [1, 2]), ["IndexBackward0", "SelectBackward0"]),
    ((slice(1, None), [0, 2]), ["IndexBackward0", "SliceBackward0"]),
    (True, ["IndexBackward0", "UnsqueezeBackward0"]),
    ((1, slice(1, None)), ["SliceBackward0", "SelectBackward0"]),
]


def test_iterating_gives_unbind_views(lib):
    rows = list(lib.ones(2, 2, requires_grad=True).clone())
    assert [node_name(row.grad_fn) for row in rows] == ["UnbindBackward0"] * 2
    assert rows[0].grad_fn is rows[1].grad_fn
    with pytest.raises(RuntimeError, match="returns multiple views"):
        rows[0].mul_(2)
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        list(lib.tensor(1.0))


@pytest.mark.parametrize("index,names", GETITEM_CHAINS, ids=lambda value: repr(value)[:30])
def test_getitem_nodes_match_torch(lib, index, names):
    a = lib.ones(2, 3, requires_grad=True)
    assert chain(a[index]) == names


@pytest.mark.parametrize("index,name", [
    (0, "CopySlices"), ((slice(None), 0), "CopySlices"), (slice(1, None), "CopySlices"),
    (None, "CopySlices"), (slice(None), "FillBackward3"), (Ellipsis, "FillBackward3"),
    ([0], "IndexPutBackward0"), ((slice(None), [0, 1]), "IndexPutBackward0"),
    ((0, [0, 1]), "CopySlices")], ids=repr)
def test_setitem_nodes_match_torch(lib, index, name):
    b = lib.ones(2, 3, requires_grad=True).clone()
    b[index] = 5.0
    assert node_name(b.grad_fn) == name and b._version == 1


def test_setitem_of_a_tensor_on_the_whole_tensor_records_copy(lib):
    b = lib.ones(2, 3, requires_grad=True).clone()
    b[...] = lib.zeros(3)
    assert node_name(b.grad_fn) == "CopyBackwards"
    b[:] = lib.zeros(1, 3)  # leading size-1 dims are dropped before expanding
    assert node_name(b.grad_fn) == "CopyBackwards" and b._version == 2


def test_setitem_with_a_mask_records_index_put(lib):
    b = lib.ones(2, 3, requires_grad=True).clone()
    b[lib.tensor([True, False])] = 1.0
    assert node_name(b.grad_fn) == "IndexPutBackward0"


def _check_setitem(lib, size, index):
    x = lib.ones(*size, requires_grad=True)
    y = x + 2
    version = y._version
    y[index] = 2
    assert y._version != version
    y.backward(lib.ones(*size))
    expected = lib.ones(*size)
    expected[index] = 0
    assert values(x.grad) == values(expected)


def _check_setitem_tensor(lib, size, index):
    x = lib.ones(*size, requires_grad=True)
    y = x + 2
    version = y._version
    value = lib.full(tuple(x[index].shape), 7.0, requires_grad=True)
    y[index] = value
    assert y._version != version
    y.backward(lib.ones(*size))
    expected = lib.ones(*size)
    expected[index] = 0
    assert values(x.grad) == values(expected)
    assert values(value.grad) == values(lib.ones_like(value))


SETITEM = [((5, 5), 1), ((5,), 1), ((1,), 0), ((10,), [0, 4, 2]), ((5, 5), ([0, 4], [2, 2])),
           ((5, 5, 5), (slice(None), slice(None), [1, 3])),
           ((5, 5, 5), (slice(None), [1, 3], slice(None))),
           ((5, 5, 5), ([1, 3], slice(None), slice(None))),
           ((5, 5, 5), (slice(None), [2, 4], [1, 3])), ((5, 5, 5), ([1, 3], [2, 4], slice(None)))]
SETITEM_TENSOR = [((5, 5), 3), ((5, 5), ([0, 1], [1, 0])), ((5,), 3), ((5,), ([0, 1, 2, 3],)),
                  ((5, 5, 5), (slice(None), slice(None), [1, 3])),
                  ((5, 5, 5), (slice(None), [1, 3], slice(None))),
                  ((5, 5, 5), ([1, 3], slice(None), slice(None))),
                  ((5, 5, 5), (slice(None), [2, 4], [1, 3])),
                  ((5, 5, 5), ([1, 3], [2, 4], slice(None)))]


@pytest.mark.parametrize("size,index", SETITEM, ids=repr)
def test_setitem(lib, size, index):
    _check_setitem(lib, size, index)


@pytest.mark.parametrize("size,index", SETITEM_TENSOR, ids=repr)
def test_setitem_tensor(lib, size, index):
    _check_setitem_tensor(lib, size, index)


def test_setitem_with_tensor_indices(lib):
    _check_setitem_tensor(lib, (5,), lib.tensor([3]).sum())
    _check_setitem_tensor(lib, (5, 5, 5), (lib.tensor([1, 3]), [2, 4], slice(None)))
    x = lib.randn(4, requires_grad=True)
    y = lib.zeros(2, 3, 4)
    y[1] = x  # x broadcasts to y[1]
    y.backward(lib.randn(2, 3, 4))
    assert tuple(x.grad.shape) == (4,)


def test_setitem_mask(lib):
    mask = lib.tensor([[True, False, True, False, False]] * 5)
    _check_setitem(lib, (5, 5), mask)
    _check_setitem(lib, (5,), mask[0])
    _check_setitem(lib, (1,), mask[0, 0:1])
    _check_setitem_tensor(lib, (5, 5), mask)
    _check_setitem_tensor(lib, (5,), mask[0])


def test_pyscalar_conversions(lib):
    longs = lib.zeros(1, 1, 1, dtype=lib.int64)
    longs[0] = -12345
    assert int(longs) == -12345
    floats = lib.randn(1, 1, dtype=lib.float64)
    floats[0] = -12345.1
    assert float(floats) == -12345.1
    floats[0] = math.nan
    assert math.isnan(float(floats))
    floats[0] = math.inf
    assert float(floats) == math.inf
    longs[0] = 1234567890123456789
    assert float(longs) == float(1234567890123456789)
    floats[0] = math.nan
    with pytest.raises(ValueError):
        int(floats[0])
    floats[0] = math.inf
    with pytest.raises(OverflowError):
        int(floats[0])
    for value, expected in ((0, False), (-2, True)):
        longs[0] = value
        assert bool(longs) is expected
    floats[0] = 0.0
    assert not bool(floats)


# -- misuse, with PyTorch's class and words --------------------------------------------------
def test_inplace_result_that_would_broadcast_to_a_bigger_shape(lib):
    c = lib.zeros(3)
    with pytest.raises(RuntimeError, match=r"^output with shape \[3\] doesn't match the "
                                           r"broadcast shape \[2, 3\]"):
        c.add_(lib.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"^output with shape \[3\] doesn't match the "
                                           r"broadcast shape \[2, 3\]"):
        c.copy_(lib.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(3\) must match the size of "
                                           r"tensor b \(2\) at non-singleton dimension 0"):
        c.copy_(lib.ones(2))


def test_setitem_of_a_wrong_shape(lib):
    c = lib.zeros(3)
    with pytest.raises(RuntimeError, match=r"^The expanded size of the tensor \(2\) must match "
                                           r"the existing size \(3\) at non-singleton dimension "
                                           r"0.  Target sizes: \[2\].  Tensor sizes: \[3\]"):
        c[0:2] = lib.ones(3)
    with pytest.raises(RuntimeError, match=r"^expand\(.*\{\[2, 2\]\}, size=\[2\]\): the number "
                                           r"of sizes provided \(1\) must be greater or equal"):
        c[0:2] = lib.ones(2, 2)
    with pytest.raises(RuntimeError, match=r"^shape mismatch: value tensor of shape \[3\] cannot "
                                           r"be broadcast to indexing result of shape \[2\]"):
        c[[0, 1]] = lib.ones(3)
    with pytest.raises(RuntimeError, match=r"^shape mismatch: value tensor of shape \[3\]"):
        c[lib.tensor([True, False, True])] = lib.ones(3)


def test_indexing_errors(lib):
    c = lib.zeros(3)
    with pytest.raises(IndexError, match=r"^The shape of the mask \[2\] at index 0 does not "
                                         r"match the shape of the indexed tensor \[3\] at index 0"):
        c[lib.tensor([True, False])]
    with pytest.raises(IndexError, match="^tensors used as indices must be long, int, byte or "
                                         "bool tensors"):
        c[lib.tensor([1.0])]
    with pytest.raises(IndexError, match="^tensors used as indices must be long"):
        c[lib.tensor([1.0])] = 1.0
    with pytest.raises(IndexError, match="^index 5 is out of bounds for dimension 0 with "
                                         "size 3"):
        c[5]
    with pytest.raises(IndexError, match="^index 5 is out of bounds for dimension 0 with "
                                         "size 3"):
        c[lib.tensor([5])]
    with pytest.raises(IndexError, match="^too many indices for tensor of dimension 1"):
        c[0, 0]
    with pytest.raises(IndexError, match=r"^invalid index of a 0-dim tensor. Use "
                                         r"`tensor.item\(\)`"):
        lib.tensor(1.0)[0]
    with pytest.raises(IndexError, match=r"^only integers, slices \(`:`\), ellipsis \(`...`\), "
                                         r"None and long or byte Variables are valid indices "
                                         r"\(got float\)"):
        c[1.5]
    with pytest.raises(ValueError, match="^step must be greater than zero"):
        c[::-1]


def test_requires_grad_setter(lib):
    y = lib.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match=r"^you can only change requires_grad flags of leaf "
                                           r"variables. If you want to use a computed variable"):
        y.requires_grad = False
    with pytest.raises(RuntimeError, match=r"^you can only change requires_grad flags of leaf "
                                           r"variables."):
        y.requires_grad = True
    with pytest.raises(RuntimeError, match="^you can only change requires_grad flags"):
        y.requires_grad_(False)
    assert y.requires_grad_() is y
    with pytest.raises(RuntimeError, match="^only Tensors of floating point and complex dtype "
                                           "can require gradients"):
        lib.zeros(2, dtype=lib.int64).requires_grad = True


def test_requires_grad_(lib):
    x = lib.randn(5, 5)
    y = lib.randn(5, 5, requires_grad=True)
    assert x.requires_grad_() is x and x.requires_grad
    assert y.requires_grad_(True) is y and y.requires_grad
    z = x * y
    with pytest.raises(RuntimeError):
        z.requires_grad_(False)
    assert z.requires_grad_() is z and z.requires_grad
    assert x.requires_grad_(False) is x and not x.requires_grad


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "int16", "int32", "int64"])
def test_set_requires_grad_only_for_floats(lib, dtype):
    if not hasattr(lib, dtype):
        pytest.skip(f"{dtype} is not a dtype of {lib.__name__}")
    dt = getattr(lib, dtype)
    a = lib.ones(1, dtype=dt)
    a.requires_grad = False
    a.requires_grad_(False)
    for make in (lambda: lib.ones(1, dtype=dt).requires_grad_(),
                 lambda: setattr(lib.ones(1, dtype=dt), "requires_grad", True)):
        if dtype.startswith("float"):
            make()
        else:
            with pytest.raises(RuntimeError, match="floating point"):
                make()


def test_attribute_deletion(lib):
    x = lib.randn(5, 5, requires_grad=True)
    with pytest.raises(RuntimeError, match="^Deleting tensor data is not allowed"):
        del x.data
    with pytest.raises(TypeError, match="^Variable data has to be a tensor, but got NoneType"):
        x.data = None
    with pytest.raises(RuntimeError, match="^requires_grad must be a bool"):
        del x.requires_grad


def test_misuse_messages_name_the_tensor():
    c = tracegrad.zeros(3)
    with pytest.raises(RuntimeError, match=r"add_ on float32 \[3\]\)\. Hint: an in-place op "
                                           r"keeps the tensor's shape"):
        c.add_(tracegrad.ones(2, 3))
    with pytest.raises(IndexError, match=r"indexing float32 \[3\], leaf"):
        c[tracegrad.tensor([1.0])]
    w = tracegrad.ones(3, requires_grad=True)
    w.name = "w"
    with pytest.raises(RuntimeError, match=r"Tensor: 'w' float32 \[3\], operation: mul_. Hint:"):
        w.mul_(2)
    with pytest.raises(RuntimeError, match=r"of a base 'w' float32 \[3\]"):
        with tracegrad.no_grad():
            v = w[:2]
        v.mul_(2)
    y = w * 2
    with pytest.raises(RuntimeError, match=r"the tensor: float32 \[3\], output 0 of MulBackward0"):
        y.requires_grad = False


# -- reshape, as_strided, diagonal, squeeze --------------------------------------------------
def test_reshape_copies_when_it_cannot_view(lib):
    a = lib.ones(2, 3, requires_grad=True)
    assert chain(a.reshape(6)) == ["ViewBackward0"] and a.reshape(6)._base is a
    copied = a.t().reshape(6)
    assert chain(copied) == ["UnsafeViewBackward0", "CloneBackward0", "TBackward0"]
    assert copied._base is None


def test_squeeze_nodes(lib):
    a = lib.ones(1, 3, 1, requires_grad=True)
    assert [chain(t)[0] for t in (a.squeeze(), a.squeeze(0), a.squeeze((0, 2)))] == [
        "SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2"]


def test_as_strided(lib):
    a = lib.arange(12.0).view(3, 4).requires_grad_()
    v = a.as_strided((2, 2), (1, 4), 1)
    assert values(v) == [[1.0, 5.0], [2.0, 6.0]]
    assert v.stride() == (1, 4) and v.storage_offset() == 1
    (v * lib.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert values(a.grad) == [[0, 1, 3, 0], [0, 2, 4, 0], [0, 0, 0, 0]]
    with pytest.raises(RuntimeError, match=r"^setStorage: sizes \[5\], strides \[1\], storage "
                                           r"offset 10, and itemsize 4 requiring a storage size "
                                           r"of 60 are out of bounds for storage of size 48"):
        a.as_strided((5,), (1,), 10)


def test_diagonal_is_a_view_that_writes_through(lib):
    a = lib.zeros(3, 3, requires_grad=True)
    b = a.clone()
    b.diagonal().add_(lib.ones(3))
    assert values(b) == values(lib.eye(3))
    assert node_name(b.grad_fn) == "CopySlices"
    (b * lib.arange(9.0).view(3, 3)).sum().backward()
    assert values(a.grad) == values(lib.arange(9.0).view(3, 3))


# -- pow at 0 --------------------------------------------------------------------------------
def test_pow_zero_tensor_gradient(lib):
    for shape, exponent in (((10,), lib.zeros(10)), ((10, 10), lib.zeros(10, 10)),
                            ((10,), 0)):
        x = lib.zeros(*shape, requires_grad=True)
        x.pow(exponent).sum().backward()
        assert x.grad.abs().sum().item() == 0


def test_power_function(lib):
    b = lib.tensor([-1.0, 0.0, 1.0], requires_grad=True)
    (lib.tensor([0.0, 0.0, 0.0]) ** b).sum().backward()
    assert values(b.grad) == [-math.inf, 0.0, 0.0]
    b = lib.tensor([-1.0, 0.0, 1.0], requires_grad=True)
    (0 ** b).sum().backward()
    assert values(b.grad) == [-math.inf, 0.0, 0.0]


@pytest.mark.parametrize("exponent,expected", [
    (2, [0.0, 2.0, -4.0]), (0, [0.0, 0.0, 0.0]), (1, [1.0, 1.0, 1.0]), (3, [0.0, 3.0, 12.0]),
    (1.5, [0.0, 1.5, math.nan])])
def test_pow_gradient_at_zero(lib, exponent, expected):
    t = lib.tensor([0.0, 1.0, -2.0], requires_grad=True)
    (t ** exponent).sum().backward()
    got = values(t.grad)
    assert [g if not math.isnan(g) else "nan" for g in got] == [
        e if not math.isnan(e) else "nan" for e in expected]


def test_pow_of_tensors_at_zero(lib):
    for base, exponent, grad_base, grad_exponent in ((0.0, 0.0, 0.0, 0.0), (0.0, 1.0, 1.0, 0.0),
                                                     (0.0, 2.0, 0.0, 0.0)):
        b = lib.tensor(base, requires_grad=True)
        e = lib.tensor(exponent, requires_grad=True)
        (b ** e).backward()
        assert (b.grad.item(), e.grad.item()) == (grad_base, grad_exponent)


# -- .data -----------------------------------------------------------------------------------
def test_data_is_a_detached_tensor_sharing_storage(lib):
    w = lib.ones(2, 3, requires_grad=True)
    assert w.data.norm().item() == pytest.approx(math.sqrt(6))
    assert w.data.size(0) == 2
    assert not w.data.requires_grad and w.data.grad_fn is None
    p = lib.ones(3, requires_grad=True)
    p.data.add_(lib.full((3,), 2.0), alpha=-0.5)
    assert values(p) == [0.0, 0.0, 0.0] and p._version == 0
    p.data += lib.ones(3)
    assert values(p) == [1.0, 1.0, 1.0] and p._version == 0
    w.data.uniform_()
    assert 0.0 <= w.min().item() and w.max().item() < 1.0 and w._version == 0


def test_data_changes_are_invisible_to_autograd(lib):
    x = lib.ones(3, requires_grad=True)
    y = x * 1
    z = y * y  # saves y
    y.data.mul_(5)  # not a version bump: backward uses the changed value without error
    z.sum().backward()
    assert values(x.grad) == [10.0, 10.0, 10.0]


def test_data_of_a_view(lib):
    b = lib.ones(2, 3, requires_grad=True).clone()
    v = b[0]
    assert v._base is b and v.data._base is None
    v.data.fill_(4.0)
    assert values(b[0]) == [4.0] * 3 and b._version == 0


def test_data_setter(lib):
    y = lib.ones(2, requires_grad=True) * 2
    grad_fn = y.grad_fn
    y.data = lib.zeros(2, 2, dtype=lib.float64)
    assert tuple(y.shape) == (2, 2) and y.dtype == lib.float64
    assert y.grad_fn is grad_fn and y._version == 0
    with pytest.raises(TypeError, match="^Variable data has to be a tensor, but got list"):
        y.data = [1.0, 2.0]
    with pytest.raises(TypeError, match="^Variable data has to be a tensor, but got int"):
        y.data = 3
    w = lib.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="^data set to a tensor that requires gradients must "
                                           "be floating point or complex dtype"):
        w.data = lib.zeros(2, dtype=lib.int64)


# -- gradients of views, against finite differences ------------------------------------------
def test_views_of_views_and_the_base_used_after_the_change(lib):
    def func(root, w):
        x = root.clone()
        v = x.view(3, 4)[1:]  # a view of a view
        v.t()[0].mul_(w)
        return x * 2, v * 3

    root = lib.randn(12, dtype=lib.float64, requires_grad=True)
    w = lib.randn(2, dtype=lib.float64, requires_grad=True)
    assert lib.autograd.gradcheck(func, (root, w))
    assert lib.autograd.gradgradcheck(func, (root, w))


def test_setitem_gradients(lib):
    def func(root, value):
        x = root.clone()
        x[1:, 0] = value
        x[0] += value[0]
        x[:, [2]] = x[:, [1]] * 2
        return x

    root = lib.randn(3, 3, dtype=lib.float64, requires_grad=True)
    value = lib.randn(2, dtype=lib.float64, requires_grad=True)
    assert lib.autograd.gradcheck(func, (root, value))
    assert lib.autograd.gradgradcheck(func, (root, value))
