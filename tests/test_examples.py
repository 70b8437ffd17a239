"""Every program in examples/ runs, does what it says, and -- where torch is installed --
gives torch's numbers when the same source runs with ``import torch`` instead.

New examples are picked up by the glob below: each must exit with status 0 within the
timeout (list a deliberate failure in EXPECTED_FAILURES).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from example_programs import ALL_EXAMPLES, EXAMPLES, load_example

import tracegrad as tg

# Examples that fail on purpose (they demonstrate a bug for `tracegrad check`): the exit
# status and a line their stderr must contain, so they fail the way they say they do.
EXPECTED_FAILURES: dict[str, tuple[int, str]] = {
    "inplace_bug.py": (1, "modified by an inplace operation"),
}
TIMEOUT_S = 120


@pytest.mark.parametrize("name", ALL_EXAMPLES)
def test_example_runs_as_a_script(name):
    environment = dict(os.environ, OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
    result = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True,
                            text=True, timeout=TIMEOUT_S, check=False, env=environment, cwd=EXAMPLES.parent)
    expected, expected_error = EXPECTED_FAILURES.get(name, (0, ""))
    assert result.returncode == expected, (
        f"examples/{name} exited with {result.returncode} (expected {expected})\n"
        f"--- stdout\n{result.stdout[-2000:]}\n--- stderr\n{result.stderr[-4000:]}")
    assert expected_error in result.stderr
    assert result.stdout.strip(), f"examples/{name} printed nothing"


def _numpy(value):
    if hasattr(value, "detach"):
        value = value.detach()
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


# -- the two-layer nets ----------------------------------------------------------------
@pytest.fixture(scope="module")
def two_layer_history():
    return load_example("two_layer_net").train()


def test_two_layer_net_loss_falls_from_3e7_to_about_1e_5(two_layer_history):
    history = two_layer_history
    assert len(history) == 500
    assert 1e7 < history[0] < 1e8
    assert history[-1] < 1e-3
    assert history[-1] < history[0] * 1e-10
    assert history[100] < history[10] < history[1]


def test_two_layer_net_matches_hand_written_numpy_backprop(two_layer_history):
    # Same generator, same float32 math: the autograd version must agree with the manual one
    # (every op runs in every step: 100 steps check what 500 did, at a fifth of the time).
    reference = load_example("two_layer_net_numpy").train(steps=100)
    np.testing.assert_allclose(two_layer_history[:100], reference, rtol=1e-4)


def test_two_layer_net_with_clamp_matches_my_relu(two_layer_history):
    clamp_history = load_example("two_layer_net_clamp").train(steps=100)
    np.testing.assert_allclose(clamp_history, two_layer_history[:100], rtol=1e-5)


def test_my_relu_saves_its_input_and_names_its_node():
    module = load_example("two_layer_net")
    x = tg.randn(3, 4, requires_grad=True)
    y = module.MyReLU.apply(x)
    assert y.grad_fn.name() == "MyReLUBackward"
    assert y.grad_fn.saved_tensors[0] is x


@pytest.mark.torch
@pytest.mark.parametrize("name", ["two_layer_net", "two_layer_net_clamp"])
def test_two_layer_net_matches_torch_on_the_same_data(name):
    torch = pytest.importorskip("torch")
    arrays = load_example("two_layer_net_numpy").make_data(np.float64)
    ours = [tg.tensor(a.copy(), requires_grad=i >= 2) for i, a in enumerate(arrays)]
    theirs = [torch.tensor(a.copy(), requires_grad=i >= 2) for i, a in enumerate(arrays)]
    # float64 on both sides: 50 steps run every op as 300 did, and the weights have moved
    # far enough (the loss falls by orders of magnitude) for a wrong gradient to show.
    our_history = load_example(name).train(steps=50, data=ours)
    their_history = load_example(name, real_torch=True).train(steps=50, data=theirs)
    np.testing.assert_allclose(our_history, their_history, rtol=1e-7)
    np.testing.assert_allclose(ours[2].detach().numpy(), theirs[2].detach().numpy(),
                               rtol=1e-7, atol=1e-9)


# -- custom Functions ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["linear_function", "exp_function", "swish",
                                  "global_max_pool"])
def test_custom_function_examples_pass_gradcheck(name):
    assert load_example(name).main()["gradcheck"] is True


def test_linear_function_skips_gradients_nobody_needs():
    module = load_example("linear_function")
    calls = []
    x = tg.randn(3, 4)  # does not require grad
    w = tg.randn(2, 4, requires_grad=True)
    original = x.__class__.mm

    def counting_mm(self, other):
        calls.append((tuple(self.shape), tuple(other.shape)))
        return original(self, other)

    out = module.linear(x, w)
    x.__class__.mm = counting_mm
    try:
        out.sum().backward()
    finally:
        x.__class__.mm = original
    assert calls == [((2, 3), (3, 4))]  # grad_weight only: no grad_input for x
    assert out.grad_fn.name() == "LinearFunctionBackward"


def test_linear_function_module_registers_parameters():
    module = load_example("linear_function")
    layer = module.Linear(5, 3)
    assert [name for name, _ in layer.named_parameters()] == ["weight", "bias"]
    assert float(layer.weight.abs().max()) <= 0.1
    no_bias = module.Linear(5, 3, bias=False)
    assert [name for name, _ in no_bias.named_parameters()] == ["weight"]


def test_swish_variants_agree_and_the_efficient_one_saves_one_tensor():
    result = load_example("swish").main()
    assert result["same"] is True and result["saved"] == 1


def test_global_max_pool_routes_gradient_to_the_argmax_only():
    result = load_example("global_max_pool").main()
    assert result["indices"].dtype == tg.int64 and not result["indices"].requires_grad
    assert result["ones_per_channel"].tolist() == [[1.0] * 3] * 2
    x = result["input"]
    flat = x.detach().view(2, 3, 20)
    np.testing.assert_array_equal(result["max_val"].detach().data, flat.numpy().max(axis=2))


def test_exp_gradient_is_its_output():
    result = load_example("exp_function").main()
    assert result["grad_matches"] is True
    assert result["output"].grad_fn.name() == "ExpBackward"


@pytest.mark.torch
@pytest.mark.parametrize("name, call", [
    ("linear_function", lambda m, x, w, b: m.linear(x, w, b)),
    ("linear_function", lambda m, x, w, b: m.linear(x, w)),
    ("exp_function", lambda m, x, w, b: m.Exp.apply(x) * w[0, 0]),
    ("swish", lambda m, x, w, b: m.SwishImplementation.apply(x.mm(w.t()))),
    ("swish", lambda m, x, w, b: m.Swish()(x.mm(w.t()) + b)),
], ids=["linear", "linear-no-bias", "exp", "memory-efficient-swish", "swish"])
def test_custom_functions_match_torch(name, call):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal((4, 3)), rng.standard_normal((2, 3)),
              rng.standard_normal(2)]
    results = []
    for lib, real_torch in ((tg, False), (torch, True)):
        inputs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = call(load_example(name, real_torch), *inputs)
        weights = lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)))
        (out * weights).sum().backward()
        results.append([_numpy(out)] + [_numpy(t.grad) if t.grad is not None else None
                                        for t in inputs])
    for ours, theirs in zip(*results):
        if theirs is None:
            assert ours is None
        else:
            np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.torch
def test_global_max_pool_matches_torch():
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(6).standard_normal((2, 3, 4, 5))
    results = []
    for lib, real_torch in ((tg, False), (torch, True)):
        x = lib.tensor(data, requires_grad=True)
        values, indices = load_example("global_max_pool", real_torch).GlobalMaxPool.apply(x)
        (values * lib.tensor(np.arange(6.0).reshape(2, 3))).sum().backward()
        results.append((_numpy(values), _numpy(indices), _numpy(x.grad)))
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)


# -- autograd basics and the MLP -------------------------------------------------------
def test_autograd_basics_values():
    results = load_example("autograd_basics").main()
    basics = results["leaves_and_grad_fn"]
    assert (basics["x_is_leaf"], basics["y_is_leaf"]) == (True, False)
    assert (basics["y_grad_fn"], basics["out_grad_fn"], basics["sum_grad_fn"]) == (
        "AddBackward0", "MeanBackward0", "SumBackward0")
    assert basics["x_grad"].tolist() == [[4.5, 4.5], [4.5, 4.5]]
    np.testing.assert_allclose(results["vector_jacobian_product"]["x_grad"].data,
                               [0.2, 2.0, 0.0002], rtol=1e-6)
    accumulation = results["accumulation"]
    assert accumulation["first"].tolist() == [3.0, 3.0]
    assert accumulation["second"].tolist() == [6.0, 6.0]
    assert accumulation["after_zero"].tolist() == [0.0, 0.0]
    hooks = results["retain_grad_and_hooks"]
    assert hooks["h_grad"].tolist() == [4.0, -8.0, 12.0]
    assert hooks["hook_saw"].tolist() == [4.0, -8.0, 12.0]
    assert hooks["x_grad"].tolist() == [16.0, -32.0, 48.0]  # 8x, doubled by the hook
    modes = results["detach_and_grad_modes"]
    assert modes == {"detached_requires_grad": False, "detached_shares_data": True,
                     "no_grad": False, "enable_grad": True, "set_grad_enabled_false": False}
    switch = results["requires_grad_switch"]
    assert (switch["before"], switch["after"], switch["b_grad_fn"]) == (False, True,
                                                                         "SumBackward0")


@pytest.mark.torch
def test_autograd_basics_match_torch():
    ours = load_example("autograd_basics")
    theirs = load_example("autograd_basics", real_torch=True)
    for section in ours.SECTIONS:
        our_values = section()
        their_values = getattr(theirs, section.__name__)()
        assert list(our_values) == list(their_values)
        for key, value in our_values.items():
            reference = their_values[key]
            if isinstance(value, tg.Tensor):
                np.testing.assert_allclose(_numpy(value), _numpy(reference), rtol=1e-6,
                                           err_msg=f"{section.__name__}.{key}")
            else:
                assert value == reference, f"{section.__name__}.{key}"


def test_train_mlp_accuracy_improves():
    losses, before, after = load_example("train_mlp").train()
    assert before < 0.6 and after > 0.95
    assert losses[-1] < losses[0] * 0.1


@pytest.mark.torch
def test_train_mlp_matches_torch_with_the_same_weights():
    torch = pytest.importorskip("torch")
    ours_module = load_example("train_mlp")
    theirs_module = load_example("train_mlp", real_torch=True)
    points, labels = ours_module.make_data()
    model = ours_module.make_model()
    their_model = theirs_module.make_model()
    with torch.no_grad():
        for mine, param in zip(model.parameters(), their_model.parameters()):
            param.copy_(torch.from_numpy(mine.detach().numpy().copy()))
    steps = 30
    our_losses, _, _ = ours_module.train(steps=steps, data=(points, labels),
                                                 model=model)
    their_data = (torch.from_numpy(points.numpy().copy()), torch.from_numpy(labels.numpy().copy()))
    their_losses, _, _ = theirs_module.train(steps=steps, data=their_data,
                                                       model=their_model)
    np.testing.assert_allclose(our_losses, their_losses, rtol=1e-4)
    for mine, param in zip(model.parameters(), their_model.parameters()):
        np.testing.assert_allclose(mine.data, param.detach().numpy(), rtol=1e-3, atol=1e-5)


# -- the curriculum: CNN, character LSTM, PINN, WGAN-GP, polynomial fits ----------------
def _torch_one_thread():
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)  # the comparison, not a benchmark: no thread pool to wait on
    return torch


@pytest.mark.torch
def test_cnn_learns_and_matches_torch_without_dropout_and_shuffling():
    _torch_one_thread()
    module = load_example("cnn_mnist")
    options = {"epochs": 1, "dropout": 0.0, "shuffle": False, "data": module.make_data(384)}
    ours = module.train(**options)
    theirs = load_example("cnn_mnist", real_torch=True).train(**options)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4)
    assert ours[2] == pytest.approx(theirs[2], abs=0.01)
    assert ours[2] > ours[1] + 0.15 and ours[0][-1] < ours[0][0] * 0.95  # it learns


@pytest.mark.torch
def test_char_lstm_matches_torch_and_learns_the_text():
    _torch_one_thread()
    ours = load_example("char_lstm")
    losses, model, alphabet = ours.train(steps=25)
    their_losses, their_model, _ = load_example("char_lstm", real_torch=True).train(steps=25)
    np.testing.assert_allclose(losses, their_losses, rtol=1e-4)
    assert losses[-1] < losses[0] * 0.5
    assert ours.sample(model, alphabet, count=12) == load_example(
        "char_lstm", real_torch=True).sample(their_model, alphabet, count=12)


@pytest.mark.torch
def test_pinn_second_derivatives_match_torch():
    _torch_one_thread()
    ours, _ = load_example("pinn").train(adam_steps=30, lbfgs_steps=1)
    theirs, _ = load_example("pinn", real_torch=True).train(adam_steps=30, lbfgs_steps=1)
    np.testing.assert_allclose(ours, theirs, rtol=1e-8)
    assert ours[-1] < ours[0] * 0.05


def test_pinn_solves_the_equation():
    module = load_example("pinn")
    _, model = module.train()
    assert module.max_error(model) < 0.02


@pytest.mark.torch
def test_wgan_gp_matches_torch_step_for_step():
    _torch_one_thread()
    ours = load_example("wgan_gp").train(steps=6)
    theirs = load_example("wgan_gp", real_torch=True).train(steps=6)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-4, atol=1e-6)


@pytest.mark.torch
def test_polynomial_fits_with_every_optimizer_match_torch():
    _torch_one_thread()
    ours, theirs = load_example("polynomial_fit"), load_example("polynomial_fit", real_torch=True)
    for name in [*ours.OPTIMIZERS, "LBFGS"]:
        mine, reference = ours.fit(name, steps=120)[0], theirs.fit(name, steps=120)[0]
        # Adadelta's steps amplify float64 rounding (its normalised update oscillates
        # here), so the runs drift apart slowly; the others agree closely
        assert mine == pytest.approx(reference, rel=2e-2 if name == "Adadelta" else 1e-6), name


# -- the legacy-API programs (examples/legacy_*.py) -----------------------------------------
LEGACY_EXAMPLES = sorted(path.stem for path in EXAMPLES.glob("legacy_*.py"))
# Runs each given program with randn replaced, in both libraries, by draws from one NumPy
# generator (reset per program), so the same source sees the same data under tracegrad and
# under torch; a marker line on stdout and stderr ends each program's output.
_SHARED_RANDN = """
import importlib, runpy, sys
import numpy as np
library = importlib.import_module(sys.argv[1])

def randn(*size, dtype=None, requires_grad=False, **unused):
    if len(size) == 1 and not isinstance(size[0], int):
        size = tuple(size[0])
    return library.tensor(generator.standard_normal(size), dtype=dtype or library.float32,
                          requires_grad=requires_grad)

library.randn = randn
for path in sys.argv[2:]:
    generator = np.random.default_rng(0)
    runpy.run_path(path, run_name="__main__")
    print("=== end of program", flush=True)
    print("=== end of program", file=sys.stderr, flush=True)
"""
_NUMBER = re.compile(r"-?\d+\.\d*(?:e[-+]?\d+)?|\b(?:True|False)\b")


def _run_legacy(real_torch: bool, folder: Path) -> dict:
    """name -> (the numbers and booleans it printed, its warnings: (category, message)),
    for every legacy example, all run in one process (starting torch costs seconds)."""
    scripts = []
    for name in LEGACY_EXAMPLES:
        source = (EXAMPLES / f"{name}.py").read_text()
        if real_torch:
            for ours, theirs in (("import tracegrad.", "import torch."),
                                 ("import tracegrad as torch", "import torch"),
                                 ("from tracegrad.", "from torch.")):
                source = source.replace(ours, theirs)
        script = folder / f"{name}_{'torch' if real_torch else 'tracegrad'}.py"
        script.write_text(source)
        scripts.append(str(script))
    environment = dict(os.environ, OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
    result = subprocess.run(
        [sys.executable, "-W", "always", "-c", _SHARED_RANDN,
         "torch" if real_torch else "tracegrad", *scripts],
        capture_output=True, text=True, timeout=TIMEOUT_S, check=False, env=environment,
        cwd=folder)
    assert result.returncode == 0, result.stderr[-3000:]
    outputs = result.stdout.split("=== end of program")
    errors = result.stderr.split("=== end of program")
    return {name: (_NUMBER.findall(out), re.findall(r": (\w+Warning): (.*)$", err, re.MULTILINE))
            for name, out, err in zip(LEGACY_EXAMPLES, outputs, errors)}


@pytest.fixture(scope="module")
def legacy_runs(tmp_path_factory):
    pytest.importorskip("torch")
    folder = tmp_path_factory.mktemp("legacy_examples")
    return _run_legacy(False, folder), _run_legacy(True, folder)


@pytest.mark.torch
@pytest.mark.slow  # two processes running four programs: several seconds on a busy machine
@pytest.mark.parametrize("name", LEGACY_EXAMPLES)
def test_legacy_example_prints_and_warns_as_torch(name, legacy_runs):
    (ours, our_warnings), (theirs, their_warnings) = (run[name] for run in legacy_runs)
    # The same warnings; not always as many: gradcheck's undefined-grad check calls a custom
    # backward once more in torch, whose engine runs a node whose grads are all undefined.
    assert sorted(set(our_warnings)) == sorted(set(their_warnings))
    assert len(ours) == len(theirs) and ours
    for one, other in zip(ours, theirs):
        if one in ("True", "False") or other in ("True", "False"):
            assert one == other
        else:  # float32 sums in another order: close, not equal (500 steps of training)
            np.testing.assert_allclose(float(one), float(other), rtol=2e-3, atol=1e-3)
