"""Where tracegrad once differed from PyTorch in silence: what a node saves, its edges, its
name, the version-counter message. Each test runs the same program on both engines and
compares what PyTorch shows (issues 10 and 11)."""

from __future__ import annotations

import itertools
import warnings

import pytest
from tutorial_programs import mul2_function

import tracegrad

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")


def _saved(grad_fn, names):
    """``grad_fn._saved_<name>`` for each name: a shape, None, or the plain value."""
    shown = []
    for name in names:
        value = getattr(grad_fn, f"_saved_{name}")
        shown.append(tuple(value.shape) if hasattr(value, "shape") else value)
    return shown


# op -> (call, argument shapes, saved names)
PRODUCTS = {
    "mm": (lambda lib, a, b: a.mm(b), [(2, 3), (3, 4)], ["self", "mat2"]),
    "mv": (lambda lib, a, b: a.mv(b), [(2, 3), (3,)], ["self", "vec"]),
    "dot": (lambda lib, a, b: a.dot(b), [(3,), (3,)], ["self", "tensor"]),
    "bmm": (lambda lib, a, b: a.bmm(b), [(2, 2, 3), (2, 3, 4)], ["self", "mat2"]),
    "mul": (lambda lib, a, b: a * b, [(3,), (3,)], ["self", "other"]),
    "div": (lambda lib, a, b: a / b, [(3,), (3,)], ["self", "other"]),
    "addmm": (lambda lib, a, b, c: lib.addmm(a, b, c), [(4,), (2, 3), (3, 4)],
              ["mat1", "mat2", "alpha", "beta"]),
    "addmv": (lambda lib, a, b, c: lib.addmv(a, b, c), [(2,), (2, 3), (3,)],
              ["mat", "vec", "alpha", "beta"]),
    "baddbmm": (lambda lib, a, b, c: lib.baddbmm(a, b, c), [(4,), (2, 2, 3), (2, 3, 4)],
                ["batch1", "batch2", "alpha", "beta"]),
    "addbmm": (lambda lib, a, b, c: lib.addbmm(a, b, c), [(4,), (2, 2, 3), (2, 3, 4)],
               ["batch1", "batch2", "alpha", "beta"]),
    "linear": (lambda lib, a, b, c: lib.nn.functional.linear(b, c, a), [(4,), (2, 3), (4, 3)],
               ["mat1", "mat2", "alpha", "beta"]),
}
PRODUCT_CASES = [(name, needs) for name, (_, shapes, _) in PRODUCTS.items()
                 for needs in itertools.product((False, True), repeat=len(shapes)) if any(needs)]


@pytest.mark.parametrize(("name", "needs"), PRODUCT_CASES,
                         ids=[f"{n}-{''.join('g' if x else '_' for x in r)}"
                              for n, r in PRODUCT_CASES])
def test_products_save_only_what_a_needed_gradient_uses(name, needs):
    call, shapes, names = PRODUCTS[name]

    def saved(lib):
        args = [lib.ones(*shape, requires_grad=need) for shape, need in zip(shapes, needs)]
        return _saved(call(lib, *args).grad_fn, names)

    assert saved(tracegrad) == saved(torch)


@pytest.mark.parametrize("needs", [(True, False), (False, True), (True, True)])
def test_products_saving_less_still_give_torchs_gradients(needs):
    def grads(lib):
        lib.manual_seed(0)
        a = lib.tensor([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]], requires_grad=needs[0])
        b = lib.tensor([[2.0, 1.0], [-1.0, 0.5], [4.0, -3.0]], requires_grad=needs[1])
        c = lib.tensor([1.5, -0.5, 2.0], requires_grad=needs[1])
        outputs = (a.mm(b).sum() + (a / c).sum() + lib.addmm(lib.zeros(2), a, c.view(3, 1)
                                                                .expand(3, 2)).sum())
        outputs.backward()
        return [value for t in (a, b, c) if t.requires_grad
                for value in t.grad.flatten().tolist()]

    assert grads(tracegrad) == pytest.approx(grads(torch))


def _version_error(lib, program) -> str:
    with pytest.raises(RuntimeError) as info:
        program(lib)
    return str(info.value)


def _saved_output_changed(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp()  # ExpBackward0 saves its output
    y.add_(1)
    y.sum().backward()


def _saved_input_changed(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x.add(1)
    product = h * h  # saves h, then h's grad_fn becomes MulBackward0
    h.mul_(2)
    product.sum().backward()


def _saved_leaf_changed(lib):
    x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64, requires_grad=True)
    y = x.sin()
    with lib.no_grad():
        x.add_(1)
    y.sum().backward()


def _saved_base_changed_through_a_view(lib):
    x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    h = x.clone()
    product = h * h
    h[1:3] = 0.0  # h's grad_fn becomes CopySlices
    product.sum().backward()


def _custom_function_output_changed(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = mul2_function(lib)(x)
    product = y * y
    y.add_(1)
    product.sum().backward()


@pytest.mark.parametrize("program", [
    _saved_output_changed, _saved_input_changed, _saved_leaf_changed,
    _saved_base_changed_through_a_view, _custom_function_output_changed],
    ids=lambda program: program.__name__.strip("_"))
@pytest.mark.parametrize("anomaly", [False, True], ids=["plain", "anomaly"])
def test_the_version_error_begins_with_torchs_message_word_for_word(program, anomaly):
    def message(lib):
        with lib.autograd.set_detect_anomaly(anomaly), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's anomaly mode warns with the traceback
            return _version_error(lib, program)

    theirs = message(torch)
    ours = message(tracegrad)
    assert ours.startswith(theirs)  # what tracegrad adds comes after


def test_forward_op_name_strips_only_a_numbered_backward_suffix():
    from tracegrad.autograd.node import Node, forward_op_name

    def named(name):
        return type("Named", (Node,), {"_name": name})()

    assert [forward_op_name(named(name)) for name in (
        "AddBackward0", "AddBackward1", "MyFunctionBackward", "CopySlices",
        "torch::autograd::CopySlices", "BackwardHookFunctionBackward", "XBackwardY")] == [
        "Add", "Add1", "MyFunction", "CopySlices", "torch::autograd::CopySlices",
        "BackwardHookFunction", "XBackwardY"]


def _named_nodes(lib):
    x = lib.ones(3, requires_grad=True)
    base = x.clone()
    base[0] = 2.0
    copied = lib.empty(3)
    copied.copy_(x)
    accumulate = (x * 2).grad_fn.next_functions[0][0]
    return [(node.name(), type(node).__name__, repr(node).split(" object")[0])
            for node in (accumulate, base.grad_fn, copied.grad_fn)] + [repr(base), repr(copied)]


def test_node_names_class_names_and_reprs_match_torch():
    assert _named_nodes(tracegrad) == _named_nodes(torch)


# Programs whose grad_fn edges torch lays out other than "one per tensor argument": a
# number operand's (None, 0) edge, and no edge for an index, mask or condition.
EDGE_PROGRAMS = {
    "mul number": lambda L, u, v, m, i, r: u * 2,
    "number mul": lambda L, u, v, m, i, r: 2 * u,
    "add number": lambda L, u, v, m, i, r: u + 2,
    "number add": lambda L, u, v, m, i, r: 2 + u,
    "sub number": lambda L, u, v, m, i, r: u - 2.5,
    "rsub": lambda L, u, v, m, i, r: 2 - u,
    "div number": lambda L, u, v, m, i, r: u / 2,
    "number div": lambda L, u, v, m, i, r: 2 / u,
    "floor div number": lambda L, u, v, m, i, r: u.div(2, rounding_mode="floor"),
    "add alpha": lambda L, u, v, m, i, r: u.add(2, alpha=3),
    "pow number": lambda L, u, v, m, i, r: u ** 2,
    "number pow": lambda L, u, v, m, i, r: 2 ** u,
    "where": lambda L, u, v, m, i, r: L.where(m, u, v),
    "where number": lambda L, u, v, m, i, r: L.where(m, u, 0.0),
    "masked_fill number": lambda L, u, v, m, i, r: u.masked_fill(m, 0.0),
    "masked_fill tensor": lambda L, u, v, m, i, r: u.masked_fill(m, L.tensor(1.0)),
    "index_select": lambda L, u, v, m, i, r: u.index_select(1, r),
    "gather": lambda L, u, v, m, i, r: u.gather(1, i),
    "scatter": lambda L, u, v, m, i, r: u.scatter(1, i, v),
    "scatter number": lambda L, u, v, m, i, r: u.scatter(1, i, 1.0),
    "scatter_add": lambda L, u, v, m, i, r: u.scatter_add(1, i, v),
    "scatter_reduce": lambda L, u, v, m, i, r: u.scatter_reduce(1, i, v, "sum"),
    "take": lambda L, u, v, m, i, r: u.take(r),
    "index_add": lambda L, u, v, m, i, r: u.index_add(0, r, v),
    "index_copy": lambda L, u, v, m, i, r: u.index_copy(0, r, v),
    "index_fill": lambda L, u, v, m, i, r: u.index_fill(0, r, 1.0),
    "masked_select": lambda L, u, v, m, i, r: u.masked_select(m),
    "masked_scatter": lambda L, u, v, m, i, r: u.masked_scatter(m, v),
    "nll_loss": lambda L, u, v, m, i, r: L.nn.functional.nll_loss(u, r),
    "soft_margin_loss": lambda L, u, v, m, i, r: L.nn.functional.soft_margin_loss(u, v),
    "clamp tensor": lambda L, u, v, m, i, r: u.clamp(min=v),
    "layer_norm": lambda L, u, v, m, i, r: L.nn.functional.layer_norm(u, (3,)),
    "batch_norm": lambda L, u, v, m, i, r: L.nn.functional.batch_norm(
        u, L.zeros(3), L.ones(3), training=True),
}


def _edges(lib, program):
    u = lib.tensor([[0.5, -1.0, 2.0], [1.0, 3.0, -2.0]], requires_grad=True)
    v = lib.tensor([[1.5, 2.0, -0.5], [0.1, 0.2, 0.3]])
    m = lib.tensor([[True, False, True], [False, False, True]])
    i = lib.tensor([[0, 2, 1], [1, 0, 0]])
    r = lib.tensor([1, 0])
    node = program(lib, u, v, m, i, r).grad_fn
    return node.name(), [(None if next_node is None else type(next_node).__name__, number)
                         for next_node, number in node.next_functions]


@pytest.mark.parametrize("name", sorted(EDGE_PROGRAMS))
def test_next_functions_are_torchs(name):
    assert _edges(tracegrad, EDGE_PROGRAMS[name]) == _edges(torch, EDGE_PROGRAMS[name])


@pytest.mark.parametrize("value_grad", [False, True])
def test_masked_fill_with_a_tensor_value_gives_it_the_masked_gradient(value_grad):
    def grads(lib):
        x = lib.tensor([[1.0, -2.0], [3.0, 4.0]], requires_grad=True)
        value = lib.tensor(0.5, requires_grad=value_grad)
        mask = lib.tensor([[True, False], [True, True]])
        (x.masked_fill(mask, value) * lib.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        return x.grad.tolist(), (value.grad.item() if value_grad else None)

    assert grads(tracegrad) == grads(torch)


def _shown(value):
    if hasattr(value, "shape"):
        return (tuple(value.shape), str(value.dtype).rpartition(".")[2],
                [round(number, 4) for number in value.flatten().tolist()]
                if value.numel() <= 4 else None)
    return value


def _saved_by_losses_and_layers(lib):
    lib.manual_seed(0)
    logits = lib.tensor([[0.5, -1.0, 2.0], [1.0, 3.0, -2.0]], requires_grad=True)
    target = lib.tensor([2, 0])
    nll = lib.nn.functional.nll_loss(logits.log_softmax(1), target).grad_fn
    images = lib.arange(32.0).reshape(1, 2, 4, 4).requires_grad_()
    pool = lib.nn.functional.max_pool2d(images, 2, stride=2).grad_fn
    norm = lib.nn.BatchNorm2d(2)
    train = norm(images).grad_fn
    norm.eval()
    evaluate = norm(images).grad_fn
    return ([_shown(getattr(nll, f"_saved_{name}"))
             for name in ("self", "target", "weight", "total_weight")]
            + [_shown(getattr(pool, f"_saved_{name}")) for name in (
                "self", "result1", "kernel_size", "stride", "padding", "dilation", "ceil_mode")]
            + [_shown(getattr(node, f"_saved_{name}")) for node in (train, evaluate)
               for name in ("input", "weight", "running_mean", "running_var", "result1",
                            "result2", "eps", "training")])


def test_nll_loss_max_pool_and_batch_norm_save_what_torch_saves():
    assert _saved_by_losses_and_layers(tracegrad) == _saved_by_losses_and_layers(torch)


def test_batch_norm_steps_leave_the_running_statistics_version_alone():
    def versions(lib):
        norm = lib.nn.BatchNorm1d(3)
        x = lib.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]], requires_grad=True)
        before = norm.running_mean._version
        first, second = norm(x), norm(x)  # the second forward moves the statistics again
        (first.sum() + second.sum()).backward()  # and the first's saved buffers still unpack
        return norm.running_mean._version - before, x.grad.flatten().tolist()

    ours, theirs = versions(tracegrad), versions(torch)
    assert ours[0] == theirs[0] == 0
    assert ours[1] == pytest.approx(theirs[1], abs=1e-6)


CLAMPS = {
    "clamp_ min": lambda L, u, low, high: (u * 1).clamp_(min=0),
    "clamp_ max": lambda L, u, low, high: (u * 1).clamp_(max=0),
    "clamp_ both": lambda L, u, low, high: (u * 1).clamp_(0, 1),
    "clamp_ tensor": lambda L, u, low, high: (u * 1).clamp_(min=low),
    "clip_": lambda L, u, low, high: (u * 1).clip_(0, 1),
    "clamp_min_": lambda L, u, low, high: (u * 1).clamp_min_(0),
    "clamp_min": lambda L, u, low, high: u.clamp_min(0),
    "clamp_max": lambda L, u, low, high: u.clamp_max(0),
    "clamp_min tensor": lambda L, u, low, high: u.clamp_min(low),
    "clamp_max tensor": lambda L, u, low, high: u.clamp_max(high),
    "clamp_max_ tensor": lambda L, u, low, high: (u * 1).clamp_max_(high),
    "clamp tensors": lambda L, u, low, high: u.clamp(low, high),
}


@pytest.mark.parametrize("name", sorted(CLAMPS))
def test_clamp_family_records_torchs_nodes_and_gradients(name):
    def run(lib):
        u = lib.tensor([0.5, -1.0, 2.0, 0.25], requires_grad=True)
        low = lib.tensor([0.0, 0.0, 2.5, 0.25], requires_grad=True)
        high = lib.tensor([1.0, -2.0, 1.0, 0.5], requires_grad=True)
        out = CLAMPS[name](lib, u, low, high)
        node = out.grad_fn
        (out * lib.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
        return (node.name(), len(node.next_functions),
                [None if t.grad is None else t.grad.tolist() for t in (u, low, high)])

    assert run(tracegrad) == run(torch)


def _raised(program):
    try:
        program()
    except Exception as error:  # noqa: BLE001 - the test compares what each raises
        return error
    return None


@pytest.mark.parametrize("case", ["setter", "method", "tensor", "zeros"])
def test_an_integer_tensor_refuses_requires_grad_in_torchs_words(case):
    def program(lib):
        if case == "setter":
            lib.tensor([1, 2]).requires_grad = True
        elif case == "method":
            lib.tensor([1, 2]).requires_grad_()
        elif case == "tensor":
            lib.tensor([1, 2], requires_grad=True)
        else:
            lib.zeros(2, dtype=lib.int64, requires_grad=True)

    ours, theirs = _raised(lambda: program(tracegrad)), _raised(lambda: program(torch))
    assert isinstance(ours, type(theirs)) and str(ours).startswith(str(theirs))


def test_a_number_written_through_a_byte_mask_is_refused_as_torch_does():
    def program(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            target = lib.zeros(4)
            target[lib.tensor([1, 0, 1, 0], dtype=lib.uint8)] = 1.0

    ours, theirs = _raised(lambda: program(tracegrad)), _raised(lambda: program(torch))
    assert isinstance(ours, type(theirs)) and str(ours).startswith(str(theirs))


@pytest.mark.parametrize("data", ["one-element 1-d", "one-element 0-d", "two 1-d"])
def test_tensors_inside_a_list_are_read_as_numbers(data):
    def program(lib):
        items = {"one-element 1-d": [lib.tensor([3.0]), lib.tensor([4.0])],
                 "one-element 0-d": [[lib.tensor(3.0)]],
                 "two 1-d": [lib.tensor([3.0, 1.0])]}[data]
        return lib.tensor(items)

    ours, theirs = _raised(lambda: program(tracegrad)), _raised(lambda: program(torch))
    if theirs is not None:
        assert isinstance(ours, type(theirs)) and str(ours).startswith(str(theirs))
    else:
        assert tuple(program(tracegrad).shape) == tuple(program(torch).shape)


def _node_tree(node, depth=0, lines=None):
    lines = [] if lines is None else lines
    if node is not None:
        lines.append("  " * depth + node.name().rpartition("::")[2])
        for next_node, _ in node.next_functions:
            _node_tree(next_node, depth + 1, lines)
    return lines


@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 4), (2, 2, 3, 4)], ids=str)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
def test_linear_records_torchs_nodes_for_every_input_rank(shape, bias, strided):
    def tree(lib):
        layer = lib.nn.Linear(4, 3, bias=bias)
        x = lib.ones(*shape[:-2], shape[-1], shape[-2]).transpose(-1, -2) if strided \
            else lib.ones(*shape)
        return _node_tree(layer(x.requires_grad_() if not strided else x).grad_fn)

    assert tree(tracegrad) == tree(torch)


def test_embedding_saves_its_indices_as_torch_does():
    def saved(lib):
        weight = lib.ones(5, 3, requires_grad=True)
        node = lib.nn.functional.embedding(lib.tensor([[1, 2], [0, 4]]), weight).grad_fn
        return (node._saved_indices.tolist(), node._saved_weight_sym_argsize_0,
                node._saved_scale_grad_by_freq, len(node.next_functions))

    assert saved(tracegrad) == saved(torch)


ALPHA_AND_NUMBER_FIRST = {
    "add alpha": lambda L, u, v: u.add(v, alpha=2),
    "sub alpha": lambda L, u, v: u.sub(v, alpha=0.5),
    "add_ alpha": lambda L, u, v: (u * 1).add_(v, alpha=3),
    "torch.add number first": lambda L, u, v: L.add(2, u),
    "torch.add number first alpha": lambda L, u, v: L.add(2, u, alpha=2),
    "torch.sub number first": lambda L, u, v: L.sub(2, u),
    "torch.mul number first": lambda L, u, v: L.mul(2, u),
    "torch.div number first": lambda L, u, v: L.div(2, u),
}


@pytest.mark.parametrize("name", sorted(ALPHA_AND_NUMBER_FIRST))
def test_alpha_and_a_leading_number_record_one_torch_node(name):
    def run(lib):
        u = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        v = lib.tensor([1.5, 2.0, -0.5], requires_grad=True)
        out = ALPHA_AND_NUMBER_FIRST[name](lib, u, v)
        edges = [None if node is None else type(node).__name__
                 for node, _ in out.grad_fn.next_functions]
        out.sum().backward()
        return (out.grad_fn.name(), edges, out.tolist(),
                [None if t.grad is None else t.grad.tolist() for t in (u, v)])

    assert run(tracegrad) == run(torch)


@pytest.mark.parametrize("owner", ["optimizer", "module"])
def test_zero_grad_in_place_moves_the_grad_version_on_as_torch(owner):
    bumps = []
    for lib in (tracegrad, torch):
        model = lib.nn.Linear(2, 2)
        optimizer = lib.optim.SGD(model.parameters(), lr=0.1)
        model(lib.ones(1, 2)).sum().backward()
        grad = model.weight.grad
        before = grad._version
        (optimizer if owner == "optimizer" else model).zero_grad(set_to_none=False)
        assert model.weight.grad is grad and not grad.any()
        bumps.append(grad._version - before)
    assert bumps[0] == bumps[1] == 1


SUM_MEAN_FORMS = {
    "sum()": lambda lib, x: x.sum(),
    "sum(None)": lambda lib, x: x.sum(None),
    "sum(dim=None, keepdim=True)": lambda lib, x: x.sum(dim=None, keepdim=True),
    "torch.sum(x)": lambda lib, x: lib.sum(x),
    "torch.sum(x, None, True)": lambda lib, x: lib.sum(x, None, True),
    "sum(dim=[])": lambda lib, x: x.sum(dim=[]),
    "sum(dim=[], keepdim=True)": lambda lib, x: x.sum(dim=[], keepdim=True),
    "sum(1, keepdim=True)": lambda lib, x: x.sum(1, keepdim=True),
    "mean()": lambda lib, x: x.mean(),
    "mean(dim=None, keepdim=True)": lambda lib, x: x.mean(dim=None, keepdim=True),
    "torch.mean(x)": lambda lib, x: lib.mean(x),
    "mean(dim=())": lambda lib, x: x.mean(dim=()),
}


@pytest.mark.parametrize("form", sorted(SUM_MEAN_FORMS))
def test_sum_and_mean_forms_give_torchs_node_shape_and_gradient(form):
    seen = []
    for lib in (tracegrad, torch):
        x = lib.arange(6.0).reshape(2, 3).requires_grad_()
        y = SUM_MEAN_FORMS[form](lib, x)
        y.sum().backward()
        seen.append((y.grad_fn.name(), tuple(y.shape), y.detach().numpy().tolist(),
                     x.grad.numpy().tolist()))
    assert seen[0] == seen[1]


@pytest.mark.parametrize("name", ["sum", "mean"])
def test_keepdim_without_dim_is_refused_as_torch_refuses_it(name):
    for lib in (tracegrad, torch):
        with pytest.raises(TypeError, match="invalid combination of arguments"):
            getattr(lib.ones(2, 3), name)(keepdim=True)
