"""optim: SGD and Adam step for step against torch.optim, plus the Optimizer contract."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn as nn


def _params(seed: int = 0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((4, 3)), rng.standard_normal(3)]


def _loss(lib, params, step: int):
    """A loss whose gradients change every step (and differ per element)."""
    weight, bias = params
    rng = np.random.default_rng(100 + step)
    x = lib.tensor(rng.standard_normal((5, 4)))
    target = lib.tensor(rng.standard_normal((5, 3)))
    out = (x.matmul(weight) + bias).tanh()
    return ((out - target) ** 2).sum() + (weight * weight).sum() * 0.1


def _run(lib, optimizer_class, options, steps: int = 6):
    params = [lib.tensor(array, requires_grad=True) for array in _params()]
    optimizer = optimizer_class(params, **options)
    for step in range(steps):
        optimizer.zero_grad()
        _loss(lib, params, step).backward()
        optimizer.step()
    return [param.detach().numpy().copy() for param in params]


SGD_CASES = {
    "plain": dict(lr=0.05),
    "momentum": dict(lr=0.05, momentum=0.9),
    "dampening": dict(lr=0.05, momentum=0.9, dampening=0.3),
    "nesterov": dict(lr=0.05, momentum=0.8, nesterov=True),
    "weight-decay": dict(lr=0.05, momentum=0.5, weight_decay=0.01),
    "maximize": dict(lr=0.01, momentum=0.5, maximize=True),
}
ADAM_CASES = {
    "default": dict(lr=0.01),
    "betas-eps": dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6),
    "weight-decay": dict(lr=0.01, weight_decay=0.1),
    "amsgrad": dict(lr=0.05, amsgrad=True),
    "maximize": dict(lr=0.01, maximize=True),
}


@pytest.mark.torch
@pytest.mark.parametrize("case", sorted(SGD_CASES))
def test_sgd_matches_torch(case):
    torch = pytest.importorskip("torch")
    ours = _run(tg, tg.optim.SGD, SGD_CASES[case])
    theirs = _run(torch, torch.optim.SGD, SGD_CASES[case])
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(mine, reference, rtol=1e-10, atol=1e-12)


@pytest.mark.torch
@pytest.mark.parametrize("case", sorted(ADAM_CASES))
def test_adam_matches_torch(case):
    torch = pytest.importorskip("torch")
    ours = _run(tg, tg.optim.Adam, ADAM_CASES[case])
    theirs = _run(torch, torch.optim.Adam, ADAM_CASES[case])
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(mine, reference, rtol=1e-10, atol=1e-12)


def test_sgd_update_rule_by_hand():
    w = tg.tensor([1.0, -2.0], requires_grad=True)
    optimizer = tg.optim.SGD([w], lr=0.1, momentum=0.5)
    for _ in range(2):
        optimizer.zero_grad()
        (w * tg.tensor([3.0, 1.0])).sum().backward()
        optimizer.step()
    # step 1: buf = g; step 2: buf = 0.5 * g + g = 1.5 g; total move 2.5 * lr * g
    np.testing.assert_allclose(w.data, [1.0 - 0.25 * 3.0, -2.0 - 0.25 * 1.0], rtol=1e-6)


def test_adam_first_step_moves_every_weight_by_lr():
    w = tg.tensor([5.0, -1.0, 0.001], requires_grad=True)
    optimizer = tg.optim.Adam([w], lr=0.1)
    (w * tg.tensor([2.0, -7.0, 0.5])).sum().backward()
    optimizer.step()
    np.testing.assert_allclose(w.data, [4.9, -0.9, -0.099], rtol=1e-5)


def test_step_updates_in_place_under_no_grad_and_bumps_versions():
    model = nn.Linear(3, 2)
    weight_before = model.weight
    version = model.weight._version
    optimizer = tg.optim.SGD(model.parameters(), lr=0.1)
    model(tg.randn(4, 3)).sum().backward()
    optimizer.step()
    assert model.weight is weight_before and model.weight.is_leaf
    assert model.weight.grad_fn is None and model.weight.requires_grad
    assert model.weight._version == version + 1


def test_zero_grad_sets_to_none_by_default_or_zeroes():
    w = tg.ones(2, requires_grad=True)
    optimizer = tg.optim.SGD([w], lr=0.1)
    (w * 2).sum().backward()
    grad = w.grad
    optimizer.zero_grad(set_to_none=False)
    assert w.grad is grad and w.grad.tolist() == [0.0, 0.0]
    optimizer.zero_grad()
    assert w.grad is None


def test_parameters_without_grad_are_skipped():
    used, unused = tg.ones(2, requires_grad=True), tg.ones(2, requires_grad=True)
    optimizer = tg.optim.Adam([used, unused], lr=0.1)
    (used * 2).sum().backward()
    optimizer.step()
    assert unused.tolist() == [1.0, 1.0] and unused not in optimizer.state
    assert optimizer.state[used]["step"] == 1


def test_param_groups_take_their_own_hyperparameters():
    first, second = tg.ones(1, requires_grad=True), tg.ones(1, requires_grad=True)
    optimizer = tg.optim.SGD([{"params": [first]}, {"params": second, "lr": 1.0}], lr=0.1)
    (first + second).sum().backward()
    optimizer.step()
    assert first.item() == pytest.approx(0.9) and second.item() == pytest.approx(0.0)
    assert [group["lr"] for group in optimizer.param_groups] == [0.1, 1.0]


def test_state_dict_round_trip_continues_identically():
    def make():
        return [tg.tensor([1.0, 2.0], requires_grad=True)]

    def step(optimizer, params):
        optimizer.zero_grad()
        (params[0] ** 2).sum().backward()
        optimizer.step()

    params = make()
    optimizer = tg.optim.Adam(params, lr=0.1)
    step(optimizer, params)
    saved_state = optimizer.state_dict()
    copy_params = [tg.tensor(params[0].tolist(), requires_grad=True)]
    copy = tg.optim.Adam(copy_params, lr=0.5)
    copy.load_state_dict(saved_state)
    assert copy.param_groups[0]["lr"] == 0.1
    step(optimizer, params)
    step(copy, copy_params)
    np.testing.assert_array_equal(params[0].data, copy_params[0].data)


def test_constructor_errors():
    w = tg.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match=r"iterable of Tensors.*Hint: pass model.parameters"):
        tg.optim.SGD(w, lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        tg.optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        tg.optim.Adam([w], lr=-1)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.5"):
        tg.optim.Adam([w], betas=(0.9, 1.5))
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum"):
        tg.optim.SGD([w], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match=r"can't optimize a non-leaf Tensor"):
        tg.optim.SGD([w * 2], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        tg.optim.SGD([{"params": [w]}, {"params": [w]}], lr=0.1)


def test_closure_is_called_with_grad_enabled():
    w = tg.ones(1, requires_grad=True)
    optimizer = tg.optim.SGD([w], lr=0.5)

    def closure():
        optimizer.zero_grad()
        loss = (w * 4).sum()
        loss.backward()
        return loss

    with tg.no_grad():
        loss = optimizer.step(closure)
    assert loss.item() == 4.0 and w.item() == pytest.approx(-1.0)


# -- on CUDA: the same steps as on the CPU (the fused Adam kernel included) -------------
CUDA = [pytest.param("cuda", marks=pytest.mark.gpu)]


def _run_on(device: str, optimizer_class, options, steps: int = 6):
    params = [tg.tensor(array, device=device, requires_grad=True) for array in _params()]
    optimizer = optimizer_class(params, **options)
    for step in range(steps):
        weight, bias = params
        rng = np.random.default_rng(100 + step)
        x = tg.tensor(rng.standard_normal((5, 4)), device=device)
        target = tg.tensor(rng.standard_normal((5, 3)), device=device)
        loss = (((x.matmul(weight) + bias).tanh() - target) ** 2).sum()
        optimizer.zero_grad()
        (loss + (weight * weight).sum() * 0.1).backward()
        optimizer.step()
    assert all(param.device == tg.device(device) for param in params)
    return [param.detach().cpu().numpy() for param in params]


@pytest.mark.parametrize("device", CUDA)
@pytest.mark.parametrize("optimizer,case", [("SGD", case) for case in sorted(SGD_CASES)]
                         + [("Adam", case) for case in sorted(ADAM_CASES)])
def test_steps_on_cuda_match_the_cpu(optimizer, case, device):
    options = (SGD_CASES if optimizer == "SGD" else ADAM_CASES)[case]
    optimizer_class = getattr(tg.optim, optimizer)
    ours = _run_on(device, optimizer_class, options)
    reference = _run_on("cpu", optimizer_class, options)
    for mine, expected in zip(ours, reference):
        np.testing.assert_allclose(mine, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.gpu
def test_fused_adam_kernel_matches_the_unfused_formulas_on_cuda(monkeypatch):
    from tracegrad.backends import kernels

    fused = _run_on("cuda", tg.optim.Adam, dict(lr=0.01, weight_decay=0.1, maximize=True))
    monkeypatch.setattr(kernels, "enabled", False)
    unfused = _run_on("cuda", tg.optim.Adam, dict(lr=0.01, weight_decay=0.1, maximize=True))
    for mine, expected in zip(fused, unfused):
        np.testing.assert_allclose(mine, expected, rtol=1e-9, atol=1e-12)
