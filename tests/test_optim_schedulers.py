"""Every learning-rate schedule against torch.optim.lr_scheduler: the learning rates (and
momenta, for OneCycleLR) after each step, state dict round trips, warnings and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracegrad as tg

SCHEDULES = [
    ("StepLR", lambda S, o: S.StepLR(o, step_size=3, gamma=0.5)),
    ("MultiStepLR", lambda S, o: S.MultiStepLR(o, milestones=[2, 5, 5, 8], gamma=0.3)),
    ("ExponentialLR", lambda S, o: S.ExponentialLR(o, gamma=0.9)),
    ("CosineAnnealingLR", lambda S, o: S.CosineAnnealingLR(o, T_max=4, eta_min=0.01)),
    ("CosineAnnealingWarmRestarts",
     lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.001)),
    ("OneCycleLR", lambda S, o: S.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=12)),
    ("OneCycleLR-linear", lambda S, o: S.OneCycleLR(
        o, max_lr=0.8, epochs=3, steps_per_epoch=4, anneal_strategy="linear",
        three_phase=True, pct_start=0.25)),
    ("LambdaLR", lambda S, o: S.LambdaLR(o, lambda epoch: 0.95 ** epoch)),
    ("LambdaLR-per-group", lambda S, o: S.LambdaLR(
        o, [lambda epoch: 1 / (epoch + 1), lambda epoch: 0.5])),
    ("MultiplicativeLR", lambda S, o: S.MultiplicativeLR(o, lambda epoch: 0.9)),
    ("LinearLR", lambda S, o: S.LinearLR(o, start_factor=0.25, end_factor=0.9,
                                         total_iters=4)),
    ("ConstantLR", lambda S, o: S.ConstantLR(o, factor=0.5, total_iters=3)),
    ("PolynomialLR", lambda S, o: S.PolynomialLR(o, total_iters=6, power=2.0)),
    ("SequentialLR", lambda S, o: S.SequentialLR(
        o, [S.LinearLR(o, start_factor=0.1, total_iters=3), S.ExponentialLR(o, gamma=0.8)],
        milestones=[3])),
    ("ChainedScheduler", lambda S, o: S.ChainedScheduler(
        [S.ConstantLR(o, factor=0.5, total_iters=2), S.ExponentialLR(o, gamma=0.9)])),
]


def _optimizer(lib, momentum: bool = True):
    params = [lib.zeros(2, requires_grad=True), lib.zeros(3, requires_grad=True)]
    return lib.optim.SGD([{"params": params[:1]}, {"params": params[1:], "lr": 0.2}], lr=0.1,
                         momentum=0.9 if momentum else 0)


def _history(lib, build, steps: int = 11):
    optimizer = _optimizer(lib)
    schedule = build(lib.optim.lr_scheduler, optimizer)
    rates = [list(schedule.get_last_lr())]
    momenta = [[group["momentum"] for group in optimizer.param_groups]]
    for _ in range(steps):
        optimizer.step()
        schedule.step()
        rates.append(list(schedule.get_last_lr()))
        momenta.append([group["momentum"] for group in optimizer.param_groups])
    return rates, momenta


@pytest.mark.torch
@pytest.mark.parametrize("name, build", SCHEDULES, ids=[name for name, _ in SCHEDULES])
def test_schedule_matches_torch_step_for_step(name, build):
    torch = pytest.importorskip("torch")
    ours = _history(tg, build)
    theirs = _history(torch, build)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12, err_msg="learning rates")
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12, err_msg="momenta")


@pytest.mark.torch
def test_one_cycle_cycles_adam_beta1_as_torch_does():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (tg, torch):
        optimizer = lib.optim.Adam([lib.zeros(2, requires_grad=True)], lr=0.01)
        schedule = lib.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=6)
        betas = []
        for _ in range(5):
            optimizer.step()
            schedule.step()
            betas.append(optimizer.param_groups[0]["betas"])
        results.append(betas)
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)


@pytest.mark.torch
@pytest.mark.parametrize("mode, threshold_mode, options", [
    ("min", "rel", {"patience": 1}),
    ("max", "abs", {"patience": 0, "cooldown": 2, "factor": 0.5}),
    ("min", "abs", {"patience": 1, "min_lr": [0.05, 0.01], "threshold": 0.1}),
])
def test_reduce_on_plateau_matches_torch(mode, threshold_mode, options):
    torch = pytest.importorskip("torch")
    metrics = [1.0, 0.9, 0.95, 0.97, 0.8, 0.85, 0.86, 0.87, 0.7, 0.71, 0.72, 0.73]
    results = []
    for lib in (tg, torch):
        optimizer = _optimizer(lib)
        schedule = lib.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer, mode=mode, threshold_mode=threshold_mode, **options)
        rates = []
        for metric in metrics:
            optimizer.step()
            schedule.step(metric)
            rates.append(list(schedule.get_last_lr()))
        results.append((rates, schedule.num_bad_epochs, schedule.best))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    assert results[0][1:] == results[1][1:]


@pytest.mark.torch
@pytest.mark.parametrize("name, build", [SCHEDULES[0], SCHEDULES[3], SCHEDULES[5],
                                         SCHEDULES[13]], ids=lambda value: str(value)[:20])
def test_state_dict_round_trip_resumes_the_schedule(name, build):
    torch = pytest.importorskip("torch")
    reference, _ = _history(torch, build, 8)
    optimizer = _optimizer(tg)
    schedule = build(tg.optim.lr_scheduler, optimizer)
    for _ in range(4):
        optimizer.step()
        schedule.step()
    saved_schedule, saved_optimizer = schedule.state_dict(), optimizer.state_dict()
    assert "optimizer" not in saved_schedule
    fresh_optimizer = _optimizer(tg)
    fresh = build(tg.optim.lr_scheduler, fresh_optimizer)
    fresh_optimizer.load_state_dict(saved_optimizer)
    fresh.load_state_dict(saved_schedule)
    rates = []
    for _ in range(4):
        fresh_optimizer.step()
        fresh.step()
        rates.append(list(fresh.get_last_lr()))
    np.testing.assert_allclose(rates, reference[5:], rtol=1e-12)


@pytest.mark.torch
def test_closed_form_with_an_epoch_argument_matches_torch():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (tg, torch):
        optimizer = _optimizer(lib)
        schedule = lib.optim.lr_scheduler.MultiStepLR(optimizer, [2, 4], gamma=0.5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            optimizer.step()
            schedule.step(5)
        restarts = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(
            _optimizer(lib), T_0=2, T_mult=2)
        restarts.step(4.5)
        results.append(list(schedule.get_last_lr()) + list(restarts.get_last_lr())
                       + [restarts.T_i])
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)


def test_scheduler_warns_when_it_steps_before_the_optimizer():
    optimizer = _optimizer(tg)
    schedule = tg.optim.lr_scheduler.StepLR(optimizer, 1)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        schedule.step()


def test_scheduler_errors():
    S = tg.optim.lr_scheduler
    optimizer = _optimizer(tg)
    with pytest.raises(TypeError, match="int is not an Optimizer"):
        S.StepLR(3, 1)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        S.LambdaLR(optimizer, [lambda e: 1.0])
    with pytest.raises(ValueError, match="total_steps OR"):
        S.OneCycleLR(optimizer, max_lr=1.0)
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        S.ReduceLROnPlateau(optimizer, factor=2.0)
    with pytest.raises(KeyError, match="initial_lr"):
        S.StepLR(_optimizer(tg), 2, last_epoch=3)
    with pytest.raises(AttributeError, match="does not implement "
                                             "torch.optim.lr_scheduler.CyclicLR"):
        S.CyclicLR  # noqa: B018
