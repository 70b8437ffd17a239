"""nn: Module registration and naming, module scopes for traces, state dicts, layers and
losses -- checked against torch where it is installed."""

from __future__ import annotations

import warnings
from collections import OrderedDict

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn as nn
import tracegrad.nn.functional as F
from tracegrad.autograd import events, module_scope


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = nn.Linear(4, 3)
        self.act = nn.Tanh()
        self.layer2 = nn.Linear(3, 2, bias=False)
        self.register_buffer("running", tg.zeros(2))
        self.register_buffer("scratch", tg.ones(1), persistent=False)

    def forward(self, x):
        return self.layer2(self.act(self.layer1(x))) + self.running


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(5, 4), nn.ReLU())
        self.block = Block()

    def forward(self, x):
        return self.block(self.encoder(x)).sum()


# -- registration and names -------------------------------------------------------------
def test_named_parameters_order_and_parameter_names():
    model = Outer()
    names = [name for name, _ in model.named_parameters()]
    assert names == ["encoder.0.weight", "encoder.0.bias", "block.layer1.weight",
                     "block.layer1.bias", "block.layer2.weight"]
    # Each parameter's display name is its qualified name, for traces and graphs.
    assert [param.name for _, param in model.named_parameters()] == names
    assert [name for name, _ in model.named_modules()] == [
        "", "encoder", "encoder.0", "encoder.1", "block", "block.layer1", "block.act",
        "block.layer2"]
    assert [name for name, _ in model.named_children()] == ["encoder", "block"]
    assert len(list(model.modules())) == 8


def test_names_follow_a_module_registered_into_a_new_parent():
    inner = nn.Sequential(nn.Linear(2, 2))
    assert inner[0].weight.name == "0.weight"
    outer = nn.Sequential(OrderedDict([("encoder", inner)]))
    assert inner[0].weight.name == "encoder.0.weight"
    assert [name for name, _ in outer.named_parameters()] == ["encoder.0.weight",
                                                               "encoder.0.bias"]


def test_shared_parameter_is_listed_once():
    model = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3))
    model[1].weight = model[0].weight
    assert len(list(model.parameters())) == 3


def test_parameter_is_a_leaf_that_requires_grad_and_shares_storage():
    data = tg.zeros(3)
    param = nn.Parameter(data)
    assert param.requires_grad and param.is_leaf
    assert param._array is data._array
    assert not nn.Parameter(tg.zeros(2), requires_grad=False).requires_grad
    assert repr(param).startswith("Parameter containing:\ntensor(")
    assert isinstance(param * 2, tg.Tensor) and not isinstance(param * 2, nn.Parameter)


def test_assigning_a_plain_tensor_to_a_parameter_slot_is_refused():
    layer = nn.Linear(2, 2)
    with pytest.raises(TypeError, match=r"cannot assign 'Tensor' as parameter 'weight'.*"
                                        r"Hint: wrap it"):
        layer.weight = tg.zeros(2, 2)
    layer.bias = None
    assert [name for name, _ in layer.named_parameters()] == ["weight"]


def test_parameter_before_super_init_names_the_fix():
    class Broken(nn.Module):
        def __init__(self):
            self.weight = nn.Parameter(tg.zeros(1))

    with pytest.raises(AttributeError, match=r"before Module.__init__\(\).*super\(\)"):
        Broken()


def test_missing_forward_says_so():
    with pytest.raises(NotImplementedError, match=r'\[Module\] is missing the required '
                                                  r'"forward"'):
        nn.Module()(tg.zeros(1))


# -- module scopes for traces ------------------------------------------------------------
class _ScopeRecorder(events.Listener):
    def __init__(self):
        self.scopes = []

    def on_op(self, node, inputs, outputs):
        self.scopes.append((node.name(), node._module))


def test_nodes_record_the_module_scope_that_made_them():
    model = Outer()
    recorder = _ScopeRecorder()
    with events.subscribe(recorder):
        model(tg.randn(2, 5))
    assert recorder.scopes == [
        ("TBackward0", "encoder.0"), ("AddmmBackward0", "encoder.0"),
        ("ReluBackward0", "encoder.1"),
        ("TBackward0", "block.layer1"), ("AddmmBackward0", "block.layer1"),
        ("TanhBackward0", "block.act"),
        ("TBackward0", "block.layer2"), ("MmBackward0", "block.layer2"),
        ("AddBackward0", "block"), ("SumBackward0", "Outer")]
    assert module_scope.current_scope() is None


def test_no_scope_is_pushed_when_nobody_listens():
    seen = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append(module_scope.current_scope())
            return x

    nn.Sequential(Probe())(tg.zeros(1))
    assert seen == [None]


def test_scope_is_popped_when_forward_raises():
    recorder = _ScopeRecorder()
    with events.subscribe(recorder), pytest.raises(RuntimeError):
        nn.Linear(3, 2)(tg.randn(4, 5))
    assert module_scope.current_scope() is None


# -- training state, grads, state dicts, conversion ------------------------------------
def test_train_eval_and_zero_grad():
    model = Outer()
    assert model.eval() is model and not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())
    model(tg.randn(2, 5)).backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad(set_to_none=False)
    assert all(float(p.grad.abs().sum()) == 0.0 for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_state_dict_round_trip_and_buffers():
    tg.manual_seed(1)
    source = Block()
    source.running.fill_(0.5)
    state = source.state_dict()
    # torch's order: a module's own parameters and buffers, then its children's
    assert list(state) == ["running", "layer1.weight", "layer1.bias", "layer2.weight"]
    assert not any(value.requires_grad for value in state.values())
    tg.manual_seed(2)
    target = Block()
    result = target.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    x = tg.randn(3, 4)
    np.testing.assert_array_equal(target(x).data, source(x).data)
    assert target.layer1.weight._version >= 1  # loaded in place (copy_), as torch does


def test_load_state_dict_reports_missing_unexpected_and_shape_mismatch():
    layer = nn.Linear(3, 2)
    state = {"weight": tg.zeros(2, 4), "extra": tg.zeros(1)}
    with pytest.raises(RuntimeError) as info:
        layer.load_state_dict(state)
    message = str(info.value)
    assert 'Missing key(s) in state_dict: "bias".' in message
    assert 'Unexpected key(s) in state_dict: "extra".' in message
    assert "size mismatch for weight: copying a param with shape tracegrad.Size([2, 4]) from " \
           "checkpoint, the shape in current model is tracegrad.Size([2, 3])." in message
    assert "strict=False" in message
    result = layer.load_state_dict({"bias": tg.ones(2), "extra": tg.zeros(1)}, strict=False)
    assert result.missing_keys == ["weight"] and result.unexpected_keys == ["extra"]
    np.testing.assert_array_equal(layer.bias.data, [1.0, 1.0])


def test_to_double_converts_parameters_and_float_buffers_in_place():
    model = Block()
    model.register_buffer("steps", tg.tensor([3]))
    weight = model.layer1.weight
    model.double()
    assert model.layer1.weight is weight and weight.dtype == tg.float64
    assert model.running.dtype == tg.float64 and model.steps.dtype == tg.int64
    assert model(tg.randn(2, 4, dtype=tg.float64)).dtype == tg.float64
    model.float()
    assert weight.dtype == tg.float32


def test_linear_initialisation_is_kaiming_uniform_and_seeded():
    tg.manual_seed(0)
    first = nn.Linear(400, 50)
    tg.manual_seed(0)
    second = nn.Linear(400, 50)
    np.testing.assert_array_equal(first.weight.data, second.weight.data)
    bound = 1 / 400 ** 0.5
    assert float(first.weight.abs().max()) <= bound
    assert float(first.weight.abs().max()) > 0.9 * bound  # spread over the whole range
    assert float(first.bias.abs().max()) <= bound
    assert first.weight.shape == (50, 400)


def test_sequential_indexing_len_and_repr():
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(model) == 3 and isinstance(model[-1], nn.Linear)
    assert [type(m).__name__ for m in model[:2]] == ["Linear", "ReLU"]
    assert "(0): Linear(in_features=2, out_features=3, bias=True)" in repr(model)
    with pytest.raises(IndexError, match="out of range"):
        model[3]


# -- graphs and errors -------------------------------------------------------------------
def test_linear_and_losses_record_torch_node_names():
    layer = nn.Linear(3, 2)
    out = layer(tg.randn(4, 3))
    assert out.grad_fn.name() == "AddmmBackward0"
    assert [edge[0].name() for edge in out.grad_fn.next_functions if edge[0]] == [
        "torch::autograd::AccumulateGrad", "TBackward0"]  # name(), as torch's says
    loss = nn.CrossEntropyLoss()(out, tg.tensor([0, 1, 1, 0]))
    assert loss.grad_fn.name() == "NllLossBackward0"
    assert loss.grad_fn.next_functions[0][0].name() == "LogSoftmaxBackward0"
    assert nn.MSELoss()(out, tg.zeros(4, 2)).grad_fn.name() == "MseLossBackward0"


def test_linear_shape_error_names_layer_sizes():
    with pytest.raises(tg.ShapeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                            r"\(4x5 and 3x2\)(.|\n)*in_features \(3\)"):
        nn.Linear(3, 2)(tg.randn(4, 5))


def test_nll_loss_errors():
    logits = tg.randn(3, 4)
    with pytest.raises(IndexError, match=r"Target 4 is out of bounds.*0 to 3"):
        F.cross_entropy(logits, tg.tensor([0, 4, 1]))
    with pytest.raises(tg.ShapeError, match=r"expected target of shape \[3\]"):
        F.nll_loss(logits, tg.tensor([[0], [1], [2]]))
    with pytest.raises(ValueError, match="'avg' is not a valid value for reduction"):
        nn.MSELoss(reduction="avg")


def test_mse_loss_warns_on_broadcasting_target():
    with pytest.warns(UserWarning, match="different to the input size"):
        F.mse_loss(tg.zeros(3, 1), tg.zeros(3))


@pytest.mark.parametrize("build", [
    lambda x, t: F.mse_loss(x, t),
    lambda x, t: F.mse_loss(x, t, reduction="none").sum(),
    lambda x, t: F.cross_entropy(x, t.argmax(dim=1)),
    lambda x, t: F.cross_entropy(x, t.argmax(dim=1), reduction="sum"),
    lambda x, t: F.linear(x, t, t[:, 0]).sum(),
], ids=["mse", "mse-none", "cross-entropy", "cross-entropy-sum", "linear"])
def test_losses_have_correct_first_and_second_derivatives(build):
    tg.manual_seed(3)
    x = tg.randn(4, 3, dtype=tg.float64, requires_grad=True)
    t = tg.randn(4, 3, dtype=tg.float64, requires_grad=False)
    assert tg.autograd.gradcheck(lambda a: build(a, t), (x,), eps=1e-6, atol=1e-5)
    assert tg.autograd.gradgradcheck(lambda a: build(a, t), (x,), eps=1e-6, atol=1e-4)


def test_mse_gradient_flows_to_a_target_that_requires_grad():
    x = tg.randn(3, 2, dtype=tg.float64, requires_grad=True)
    t = tg.randn(3, 2, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(F.mse_loss, (x, t), eps=1e-6, atol=1e-5)


# -- against torch --------------------------------------------------------------------
def _pair(array, requires_grad=False):
    torch = pytest.importorskip("torch")
    ours = tg.tensor(array, requires_grad=requires_grad)
    theirs = torch.tensor(array, requires_grad=requires_grad)
    return ours, theirs


def _copy_parameters(ours: nn.Module, theirs) -> None:
    torch = pytest.importorskip("torch")
    with torch.no_grad():
        for (name, mine), (their_name, param) in zip(ours.named_parameters(),
                                                    theirs.named_parameters()):
            assert name == their_name
            param.copy_(torch.from_numpy(mine.detach().numpy().copy()))


@pytest.mark.torch
def test_mlp_outputs_loss_and_gradients_match_torch():
    torch = pytest.importorskip("torch")
    tg.manual_seed(0)
    ours = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 8), nn.Sigmoid(),
                         nn.Linear(8, 5), nn.Tanh(), nn.Linear(5, 3))
    theirs = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(),
                                 torch.nn.Linear(16, 8), torch.nn.Sigmoid(),
                                 torch.nn.Linear(8, 5), torch.nn.Tanh(),
                                 torch.nn.Linear(5, 3))
    _copy_parameters(ours, theirs)
    rng = np.random.default_rng(0)
    x, tx = _pair(rng.standard_normal((10, 6)).astype(np.float32))
    labels = rng.integers(0, 3, 10)
    loss = nn.CrossEntropyLoss()(ours(x), tg.tensor(labels))
    their_loss = torch.nn.CrossEntropyLoss()(theirs(tx), torch.tensor(labels))
    np.testing.assert_allclose(loss.item(), their_loss.item(), rtol=1e-5)
    loss.backward()
    their_loss.backward()
    for (name, mine), (_, param) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(mine.grad.data, param.grad.numpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=name)


@pytest.mark.torch
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_matches_torch(reduction):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x, tx = _pair(rng.standard_normal((5, 3)), requires_grad=True)
    t, tt = _pair(rng.standard_normal((5, 3)), requires_grad=True)
    loss = nn.MSELoss(reduction=reduction)(x, t)
    their = torch.nn.MSELoss(reduction=reduction)(tx, tt)
    np.testing.assert_allclose(loss.data, their.detach().numpy(), rtol=1e-12)
    weights = rng.standard_normal(loss.shape)
    loss.backward(tg.tensor(weights))
    their.backward(torch.tensor(weights))
    np.testing.assert_allclose(x.grad.data, tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(t.grad.data, tt.grad.numpy(), rtol=1e-12)


CROSS_ENTROPY_CASES = {
    "plain": dict(),
    "sum": dict(reduction="sum"),
    "none": dict(reduction="none"),
    "weight": dict(weight=[0.2, 1.0, 3.0, 0.5]),
    "ignore": dict(ignore_index=2),
    "weight-ignore": dict(weight=[0.2, 1.0, 3.0, 0.5], ignore_index=1),
    "smoothing": dict(label_smoothing=0.1),
    "smoothing-weight": dict(label_smoothing=0.2, weight=[0.2, 1.0, 3.0, 0.5]),
}


@pytest.mark.torch
@pytest.mark.parametrize("case", sorted(CROSS_ENTROPY_CASES))
@pytest.mark.parametrize("shape", [(6, 4), (3, 4, 2)], ids=["NC", "NCd"])
def test_cross_entropy_matches_torch(case, shape):
    torch = pytest.importorskip("torch")
    options = dict(CROSS_ENTROPY_CASES[case])
    rng = np.random.default_rng(2)
    x, tx = _pair(rng.standard_normal(shape), requires_grad=True)
    target_shape = (shape[0],) + shape[2:]
    labels = rng.integers(0, shape[1], target_shape)
    weight = options.pop("weight", None)
    ours = F.cross_entropy(x, tg.tensor(labels),
                           weight=None if weight is None else tg.tensor(weight,
                                                                        dtype=tg.float64),
                           **options)
    theirs = torch.nn.functional.cross_entropy(
        tx, torch.tensor(labels),
        weight=None if weight is None else torch.tensor(weight, dtype=torch.float64),
        **options)
    np.testing.assert_allclose(ours.data, theirs.detach().numpy(), rtol=1e-8)
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(x.grad.data, tx.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.torch
def test_cross_entropy_with_probability_targets_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x, tx = _pair(rng.standard_normal((5, 4)), requires_grad=True)
    probabilities = rng.dirichlet(np.ones(4), 5)
    ours = F.cross_entropy(x, tg.tensor(probabilities), label_smoothing=0.1)
    theirs = torch.nn.functional.cross_entropy(tx, torch.tensor(probabilities),
                                               label_smoothing=0.1)
    np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-10)
    ours.backward()
    theirs.backward()
    np.testing.assert_allclose(x.grad.data, tx.grad.numpy(), rtol=1e-9)


@pytest.mark.torch
def test_functional_activations_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x, tx = _pair(rng.standard_normal((3, 5)))
    pairs = [(F.relu, torch.nn.functional.relu), (F.sigmoid, torch.sigmoid),
             (F.tanh, torch.tanh),
             (lambda t: F.softmax(t, dim=1), lambda t: torch.softmax(t, dim=1)),
             (lambda t: F.log_softmax(t, dim=0), lambda t: torch.log_softmax(t, dim=0))]
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours(x).data, theirs(tx).numpy(), rtol=1e-12)


def test_no_warnings_in_a_plain_training_step():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
        nn.MSELoss()(model(tg.randn(5, 3)), tg.randn(5, 2)).backward()


# -- docstring examples --------------------------------------------------------------------
@pytest.mark.parametrize("module_name", [
    "tracegrad.nn", "tracegrad.nn.module", "tracegrad.nn.parameter", "tracegrad.nn.layers",
    "tracegrad.nn.container", "tracegrad.nn.loss", "tracegrad.nn.functional",
    "tracegrad.nn.init", "tracegrad.optim", "tracegrad.optim.sgd", "tracegrad.optim.adam"])
def test_docstring_examples_run(module_name):
    import doctest
    import importlib

    module = importlib.import_module(module_name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{module_name} has no docstring example"
    assert result.failed == 0


@pytest.mark.gpu
@pytest.mark.parametrize("activation", ["ReLU", "Sigmoid", "Tanh", "SiLU"])
def test_mlp_on_cuda_matches_the_cpu(activation):
    """Forward, loss and every parameter's gradient of the same model on both devices
    (on CUDA the activations' backward runs as fused kernels)."""
    def run(device: str):
        tg.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 32), getattr(nn, activation)(), nn.Linear(32, 4))
        model.to(device)
        rng = np.random.default_rng(0)
        x = tg.tensor(rng.standard_normal((16, 6)).astype(np.float32), device=device)
        labels = tg.tensor(rng.integers(0, 4, 16), device=device)
        loss = F.cross_entropy(model(x), labels) + F.mse_loss(model(x), model(x).detach() * 0)
        loss.backward()
        assert all(p.grad.device == tg.device(device) for p in model.parameters())
        return loss.item(), [p.grad.cpu().numpy() for p in model.parameters()]

    loss, grads = run("cuda")
    cpu_loss, cpu_grads = run("cpu")
    np.testing.assert_allclose(loss, cpu_loss, rtol=1e-5)
    for mine, expected in zip(grads, cpu_grads):
        np.testing.assert_allclose(mine, expected, rtol=1e-4, atol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["relu", "sigmoid", "tanh", "silu"])
def test_fused_activation_backward_matches_the_unfused_formula_on_cuda(name, monkeypatch):
    from tracegrad.backends import kernels

    def gradient() -> np.ndarray:
        x = tg.tensor(np.linspace(-30, 30, 601), device="cuda", requires_grad=True)
        out = getattr(F, name)(x)
        (out * tg.arange(601, device="cuda")).sum().backward()
        return x.grad.cpu().numpy()

    fused = gradient()
    monkeypatch.setattr(kernels, "enabled", False)
    # float64: the kernel and the formula round differently only where 1 - y*y cancels
    np.testing.assert_allclose(fused, gradient(), rtol=1e-9, atol=1e-12)
