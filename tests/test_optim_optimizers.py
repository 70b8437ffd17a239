"""Every optimizer against torch.optim, step for step: the same float64 starting weights,
the same loss, several steps; parameters (and state) must agree to float rounding. Also
param groups, state dicts (layout and round trip), zero_grad, hooks and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracegrad as tg

SHAPES = ((3, 2), (4,))


def _start(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for shape in SHAPES]


def _loss(lib, params):
    """A loss whose gradient changes from step to step (not a plain quadratic)."""
    total = 0
    for index, param in enumerate(params):
        total = total + ((param - 0.3 * index) ** 2).sum() + (param ** 3).sum() * 0.1
    return total


def _run(lib, name: str, options: dict, steps: int, arrays, closure: bool = False):
    params = [lib.tensor(a.copy(), dtype=lib.float64, requires_grad=True) for a in arrays]
    optimizer = getattr(lib.optim, name)(params, **options)
    history = []
    for _ in range(steps):
        if closure:
            def evaluate():
                optimizer.zero_grad()
                loss = _loss(lib, params)
                loss.backward()
                return loss
            optimizer.step(evaluate)
        else:
            optimizer.zero_grad()
            _loss(lib, params).backward()
            optimizer.step()
        history.append([p.detach().numpy().copy() for p in params])
    return history, optimizer, params


CONFIGS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True}),
    ("SGD", {"lr": 0.05, "maximize": True}),
    ("Adam", {"lr": 0.05}),
    ("Adam", {"lr": 0.05, "amsgrad": True, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.05, "betas": (0.8, 0.9), "maximize": True}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("AdamW", {"lr": 0.05}),
    ("AdamW", {"lr": 0.05, "amsgrad": True, "weight_decay": 0.3}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.9, "momentum": 0.9, "maximize": True}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1, "weight_decay": 0.1,
                 "initial_accumulator_value": 0.5}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1}),
    ("Adamax", {"lr": 0.05}),
    ("Adamax", {"lr": 0.05, "weight_decay": 0.1, "maximize": True}),
    ("NAdam", {"lr": 0.05}),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "momentum_decay": 0.01}),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {"lr": 0.05}),
    ("RAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("Rprop", {"lr": 0.05}),
    ("Rprop", {"lr": 0.1, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2), "maximize": True}),
    ("ASGD", {"lr": 0.05}),
    ("ASGD", {"lr": 0.05, "lambd": 0.1, "alpha": 0.5, "t0": 3, "weight_decay": 0.1}),
]


@pytest.mark.torch
@pytest.mark.parametrize("name, options", CONFIGS,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)])
def test_optimizer_matches_torch_step_for_step(name, options):
    torch = pytest.importorskip("torch")
    arrays = _start()
    ours, our_optimizer, _ = _run(tg, name, options, 8, arrays)
    theirs, their_optimizer, _ = _run(torch, name, options, 8, arrays)
    for step, (mine, reference) in enumerate(zip(ours, theirs)):
        for a, b in zip(mine, reference):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=f"step {step}")
    _assert_same_state_dict(our_optimizer.state_dict(), their_optimizer.state_dict())


def _plain(value):
    if hasattr(value, "detach"):
        return np.asarray(value.detach().numpy())
    return value


def _assert_same_state_dict(ours: dict, theirs: dict) -> None:
    assert ours["param_groups"] == theirs["param_groups"]
    assert sorted(ours["state"]) == sorted(theirs["state"])
    for index, state in ours["state"].items():
        reference = theirs["state"][index]
        assert sorted(state) == sorted(reference)
        for key, value in state.items():
            np.testing.assert_allclose(_plain(value), _plain(reference[key]), rtol=1e-10,
                                       err_msg=f"state[{index}][{key!r}]")
            if key == "step":
                assert value.dtype.name == str(reference[key].dtype).split(".")[-1]


@pytest.mark.torch
@pytest.mark.parametrize("options", [{}, {"line_search_fn": "strong_wolfe"},
                                     {"history_size": 3, "max_iter": 5, "lr": 0.5},
                                     {"line_search_fn": "strong_wolfe", "max_iter": 4}])
def test_lbfgs_matches_torch(options):
    torch = pytest.importorskip("torch")
    arrays = _start(1)
    ours, _, _ = _run(tg, "LBFGS", options, 3, arrays, closure=True)
    theirs, _, _ = _run(torch, "LBFGS", options, 3, arrays, closure=True)
    for mine, reference in zip(ours, theirs):
        for a, b in zip(mine, reference):
            np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


def test_lbfgs_minimizes_a_quadratic_and_needs_a_closure():
    x = tg.tensor([2.0, -1.0], dtype=tg.float64, requires_grad=True)
    optimizer = tg.optim.LBFGS([x], line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = ((x - tg.tensor([1.0, 3.0], dtype=tg.float64)) ** 2).sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    np.testing.assert_allclose(x.detach().numpy(), [1.0, 3.0], atol=1e-6)
    with pytest.raises(RuntimeError, match="closure"):
        optimizer.step(None)
    with pytest.raises(ValueError, match="per-parameter options"):
        tg.optim.LBFGS([{"params": [x]}, {"params": [tg.zeros(1, requires_grad=True)]}])


@pytest.mark.torch
def test_param_groups_with_their_own_hyperparameters_match_torch():
    torch = pytest.importorskip("torch")
    arrays = _start(2)
    results = []
    for lib in (tg, torch):
        params = [lib.tensor(a.copy(), requires_grad=True) for a in arrays]
        optimizer = lib.optim.Adam([{"params": [params[0]], "lr": 0.1},
                                    {"params": [params[1]]}], lr=0.01, betas=(0.8, 0.99))
        extra = lib.tensor([0.5, -0.5], requires_grad=True)
        optimizer.add_param_group({"params": extra, "lr": 0.2, "weight_decay": 0.1})
        for _ in range(4):
            optimizer.zero_grad()
            (_loss(lib, params) + (extra ** 2).sum()).backward()
            optimizer.step()
        results.append([p.detach().numpy().copy() for p in [*params, extra]])
        assert [group["lr"] for group in optimizer.param_groups] == [0.1, 0.01, 0.2]
    for mine, reference in zip(*results):
        np.testing.assert_allclose(mine, reference, rtol=1e-6)


@pytest.mark.torch
@pytest.mark.parametrize("name, options", [("SGD", {"lr": 0.05, "momentum": 0.9}),
                                           ("Adam", {"lr": 0.05, "amsgrad": True}),
                                           ("RMSprop", {"centered": True, "momentum": 0.5}),
                                           ("Adagrad", {"lr": 0.1}), ("NAdam", {}),
                                           ("Adadelta", {}), ("RAdam", {}), ("Adamax", {})])
def test_state_dict_round_trip_continues_the_same_run(name, options):
    torch = pytest.importorskip("torch")
    arrays = _start(3)
    reference, _, _ = _run(torch, name, options, 6, arrays)
    first, optimizer, params = _run(tg, name, options, 3, arrays)
    saved = optimizer.state_dict()
    fresh = getattr(tg.optim, name)(params, **options)
    fresh.load_state_dict(saved)
    for _ in range(3):
        fresh.zero_grad()
        _loss(tg, params).backward()
        fresh.step()
    for mine, theirs in zip([p.detach().numpy() for p in params], reference[-1]):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10)
    # loading copies: the saved state is not changed by the new optimizer's steps
    assert first[-1] is not None and saved["state"][0] is not fresh.state_dict()["state"][0]


def test_load_state_dict_checks_groups():
    params = [tg.zeros(2, requires_grad=True), tg.zeros(3, requires_grad=True)]
    optimizer = tg.optim.SGD(params, lr=0.1)
    other = tg.optim.SGD([{"params": params[:1]}, {"params": params[1:]}], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optimizer.load_state_dict(other.state_dict())
    smaller = tg.optim.SGD(params[:1], lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size"):
        optimizer.load_state_dict(smaller.state_dict())


def test_zero_grad_sets_to_none_or_zeroes_in_place():
    w = tg.ones(3, requires_grad=True)
    optimizer = tg.optim.SGD([w], lr=0.1)
    (w * 2).sum().backward()
    grad = w.grad
    optimizer.zero_grad(set_to_none=False)
    assert w.grad is grad and w.grad.tolist() == [0.0, 0.0, 0.0]
    optimizer.zero_grad()
    assert w.grad is None


def test_step_runs_the_closure_and_its_hooks():
    w = tg.ones(2, requires_grad=True)
    optimizer = tg.optim.SGD([w], lr=0.5)
    calls = []
    pre = optimizer.register_step_pre_hook(lambda opt, args, kwargs: calls.append("pre"))
    optimizer.register_step_post_hook(lambda opt, args, kwargs: calls.append("post"))

    def closure():
        optimizer.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    loss = optimizer.step(closure)
    assert loss.item() == 2.0 and w.tolist() == [0.0, 0.0]
    assert calls == ["pre", "post"]
    pre.remove()
    optimizer.step(closure)
    assert calls == ["pre", "post", "post"]


@pytest.mark.parametrize("build, error, message", [
    (lambda p: tg.optim.Adam(p, lr=-1), ValueError, "Invalid learning rate: -1"),
    (lambda p: tg.optim.Adam(p, betas=(1.0, 0.9)), ValueError, "beta parameter at index 0"),
    (lambda p: tg.optim.RMSprop(p, alpha=-1), ValueError, "Invalid alpha value: -1"),
    (lambda p: tg.optim.SGD(p, nesterov=True), ValueError, "Nesterov momentum requires"),
    (lambda p: tg.optim.Adadelta(p, rho=2), ValueError, "Invalid rho value: 2"),
    (lambda p: tg.optim.SGD([], lr=0.1), ValueError, "empty parameter list"),
    (lambda p: tg.optim.SGD(p[0], lr=0.1), TypeError, "iterable of Tensors or dicts"),
    (lambda p: tg.optim.SGD([p[0] * 2], lr=0.1), ValueError, "can't optimize a non-leaf"),
    (lambda p: tg.optim.SGD([{"params": set(p)}], lr=0.1), TypeError, "ordered collections"),
    (lambda p: tg.optim.SGD([{"params": p}, {"params": p}], lr=0.1), ValueError,
     "more than one parameter group"),
    (lambda p: tg.optim.Adam(p, differentiable=True), NotImplementedError,
     "differentiable=True"),
])
def test_optimizer_argument_errors(build, error, message):
    params = [tg.zeros(2, requires_grad=True)]
    with pytest.raises(error, match=message):
        build(params)


def test_duplicate_parameters_warn_as_torch_does():
    w = tg.zeros(2, requires_grad=True)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        tg.optim.SGD([w, w], lr=0.1)


def test_adagrad_has_state_from_construction_and_repr_lists_groups():
    w = tg.zeros(2, requires_grad=True)
    optimizer = tg.optim.Adagrad([w], initial_accumulator_value=0.25)
    state = optimizer.state_dict()["state"][0]
    assert float(state["step"]) == 0.0 and state["sum"].tolist() == [0.25, 0.25]
    text = repr(optimizer)
    assert text.startswith("Adagrad (\nParameter Group 0\n") and "    lr: 0.01" in text


def test_unknown_optimizer_names_say_tracegrad_does_not_implement_them():
    with pytest.raises(AttributeError, match="does not implement torch.optim.SparseAdam"):
        tg.optim.SparseAdam  # noqa: B018
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert hasattr(tg.optim, "Adam") and not hasattr(tg.optim, "Adafactor2")
