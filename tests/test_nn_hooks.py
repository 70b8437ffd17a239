"""Module hooks and the rest of the Module API, against torch: forward pre-hooks and hooks
(with_kwargs, prepend, replacing inputs and outputs), full backward hooks and pre-hooks
(seeing and replacing gradients), global module hooks, state dicts (strict, missing and
unexpected keys, non-persistent buffers, assign), apply, named_*, zero_grad, to/double."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg


def _pair(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2))


def _copy_weights(ours, theirs):
    ours.load_state_dict({key: tg.tensor(value.detach().numpy().copy())
                          for key, value in theirs.state_dict().items()})


def _numpy(value):
    return None if value is None else value.detach().numpy()


def test_forward_pre_hook_and_hook_can_replace_inputs_and_outputs():
    layer = tg.nn.Linear(2, 2)
    calls = []

    def pre(module, args):
        calls.append(("pre", module is layer, len(args)))
        return (args[0] * 0,)

    def post(module, args, output):
        calls.append(("post", tuple(output.shape)))
        return output + 1

    first = layer.register_forward_pre_hook(pre)
    second = layer.register_forward_hook(post)
    out = layer(tg.ones(3, 2))
    np.testing.assert_allclose(out.detach().numpy(), (layer.bias + 1).detach().numpy()[None]
                               .repeat(3, 0), rtol=1e-6)
    assert calls == [("pre", True, 1), ("post", (3, 2))]
    first.remove()
    second.remove()
    np.testing.assert_allclose(layer(tg.ones(1, 2)).detach().numpy(),
                               tg.nn.functional.linear(tg.ones(1, 2), layer.weight,
                                                       layer.bias).detach().numpy())


def _hook_order(lib) -> tuple:
    order = []

    class Scale(lib.nn.Module):
        def forward(self, x, factor=1.0):
            return x * factor

    module = Scale()
    module.register_forward_hook(lambda m, a, o: order.append("second"))
    module.register_forward_hook(lambda m, a, o: order.append("first"), prepend=True)
    module.register_forward_pre_hook(
        lambda m, args, kwargs: (args, {"factor": kwargs["factor"] * 2}), with_kwargs=True)
    module.register_forward_hook(
        lambda m, args, kwargs, out: order.append(("kwargs", kwargs["factor"])),
        with_kwargs=True)
    result = module(lib.ones(2), factor=3.0)
    return order, result.tolist()


@pytest.mark.torch
def test_hooks_with_kwargs_and_prepend_run_in_torchs_order():
    torch = pytest.importorskip("torch")
    assert _hook_order(tg) == _hook_order(torch) == (["first", "second", ("kwargs", 6.0)],
                                                     [6.0, 6.0])


def _backward_hook_record(lib, model):
    seen = []
    model[0].register_full_backward_pre_hook(
        lambda m, grad_output: seen.append(("pre", _numpy(grad_output[0]))))
    model[0].register_full_backward_hook(
        lambda m, grad_input, grad_output: seen.append(
            ("hook", _numpy(grad_input[0]), _numpy(grad_output[0]))))
    model[2].register_full_backward_hook(lambda m, grad_input, grad_output: (grad_input[0] * 10,))
    x = lib.tensor(np.linspace(-1, 1, 6).reshape(2, 3).astype(np.float32), requires_grad=True)
    model(x).sum().backward()
    return seen, _numpy(x.grad), _numpy(model[0].weight.grad)


@pytest.mark.torch
def test_full_backward_hooks_see_the_same_gradients_as_torchs():
    torch = pytest.importorskip("torch")
    reference_model = _pair(torch)
    model = _pair(tg)
    _copy_weights(model, reference_model)
    theirs = _backward_hook_record(torch, reference_model)
    ours = _backward_hook_record(tg, model)
    assert [entry[0] for entry in ours[0]] == [entry[0] for entry in theirs[0]]
    for mine, reference in zip(ours[0], theirs[0]):
        for a, b in zip(mine[1:], reference[1:]):
            np.testing.assert_allclose(a, b, rtol=1e-5)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-5)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-5)


def test_backward_hook_on_a_module_whose_input_needs_no_gradient():
    layer = tg.nn.Linear(3, 1)
    seen = []
    layer.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go[0].shape)))
    layer(tg.ones(2, 3)).sum().backward()
    assert seen == [((None,), tg.Size([2, 1]))]
    assert layer.weight.grad is not None


def test_backward_hook_returning_the_wrong_count_fails_clearly():
    layer = tg.nn.Linear(3, 1)
    layer.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="invalid number of grad_input, got 2, but expected 1"):
        layer(tg.ones(2, 3, requires_grad=True)).sum().backward()


def test_global_module_hooks_run_before_the_modules_own():
    from tracegrad.nn.modules import module as module_api

    order = []
    model = tg.nn.Sequential(tg.nn.ReLU())
    model[0].register_forward_hook(lambda m, a, o: order.append("own"))
    handle = module_api.register_module_forward_hook(
        lambda m, a, o: order.append(("global", type(m).__name__)))
    pre = module_api.register_module_forward_pre_hook(lambda m, a: order.append("pre"))
    with handle:
        model(tg.ones(1))
    pre.remove()
    assert order == ["pre", "pre", ("global", "ReLU"), "own", ("global", "Sequential")]
    model(tg.ones(1))
    assert order[-1] == "own"  # both global hooks are gone


def _state_dict_behaviour(lib) -> tuple:
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = lib.nn.Conv2d(1, 2, 3)
            self.norm = lib.nn.BatchNorm2d(2)
            self.register_buffer("scale", lib.ones(1))
            self.register_buffer("scratch", lib.zeros(1), persistent=False)

    net = Net()
    keys = list(net.state_dict())
    buffers = [name for name, _ in net.named_buffers()]
    state = net.state_dict()
    del state["scale"]
    state["extra"] = lib.zeros(1)
    result = net.load_state_dict(state, strict=False)
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict(state)
    return (keys, buffers, result.missing_keys, result.unexpected_keys,
            [line.strip() for line in str(info.value).split("\n")[:3]],
            repr(net.load_state_dict(net.state_dict())))


@pytest.mark.torch
def test_state_dict_keys_buffers_and_strict_loading_match_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = _state_dict_behaviour(tg), _state_dict_behaviour(torch)
    assert ours == theirs
    assert ours[5] == "<All keys matched successfully>"


def test_load_state_dict_with_assign_takes_the_loaded_tensors():
    layer = tg.nn.Linear(2, 2)
    new_weight = tg.ones(2, 2)
    layer.load_state_dict({"weight": new_weight, "bias": tg.zeros(2)}, assign=True)
    assert isinstance(layer.weight, tg.nn.Parameter)
    assert layer.weight.tolist() == [[1.0, 1.0], [1.0, 1.0]] and layer.weight.requires_grad
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        layer.load_state_dict([1, 2])


def test_apply_named_modules_children_and_submodule_lookup():
    model = tg.nn.Sequential(tg.nn.Linear(2, 3), tg.nn.Sequential(tg.nn.ReLU(),
                                                                    tg.nn.Linear(3, 1)))
    visited = []
    model.apply(lambda m: visited.append(type(m).__name__))
    assert visited == ["Linear", "ReLU", "Linear", "Sequential", "Sequential"]
    assert [name for name, _ in model.named_modules()] == ["", "0", "1", "1.0", "1.1"]
    assert model.get_submodule("1.1") is model[1][1]
    assert model.get_parameter("1.1.bias") is model[1][1].bias
    with pytest.raises(AttributeError, match="has no attribute `missing`"):
        model.get_submodule("1.missing")


def test_zero_grad_train_eval_requires_grad_and_dtype_moves():
    model = tg.nn.Sequential(tg.nn.Linear(2, 2), tg.nn.Dropout(0.5), tg.nn.BatchNorm1d(2))
    model(tg.ones(3, 2)).sum().backward()
    model.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    model.eval()
    assert not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())
    model.requires_grad_(False)
    assert not any(p.requires_grad for p in model.parameters())
    model.double()
    assert model[0].weight.dtype == tg.float64 and model[2].num_batches_tracked.dtype == tg.int64
    model.half()
    assert model[2].running_mean.dtype == tg.float16


def test_backward_hook_through_a_whole_training_step_changes_the_update():
    layer = tg.nn.Linear(2, 1, bias=False)
    layer.weight.data.fill_(1.0)
    layer.register_full_backward_hook(lambda m, gi, go: None)
    layer.register_full_backward_pre_hook(lambda m, go: (go[0] * 0.5,))
    optimizer = tg.optim.SGD(layer.parameters(), lr=1.0)
    layer(tg.ones(1, 2, requires_grad=True)).sum().backward()
    optimizer.step()
    assert layer.weight.tolist() == [[0.5, 0.5]]
