"""The device seam: the same ops on every available device, and clear errors for CUDA
where it cannot be used. CUDA cases carry the `gpu` marker and skip with the reason on
machines without CuPy and a GPU (CI); on a GPU machine they run for real."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.backends import cuda as cuda_backend
from tracegrad.errors import DeviceError

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    return request.param


def _mlp_step(device: str):
    tg.manual_seed(0)
    x = tg.randn(8, 5, device=device)
    w1 = tg.randn(5, 16, device=device, requires_grad=True)
    w2 = tg.randn(16, 3, device=device, requires_grad=True)
    hidden = x.mm(w1).relu()
    logits = hidden.mm(w2)
    loss = (logits.log_softmax(dim=1)[:, 0]).mean() + hidden.sigmoid().sum() * 1e-3
    loss.backward()
    return loss, w1, w2


def test_ops_and_backward_match_the_cpu_on_every_device(device):
    loss, w1, w2 = _mlp_step(device)
    cpu_loss, cpu_w1, cpu_w2 = _mlp_step("cpu")
    assert loss.device == tg.device(device)
    assert w1.grad.device == tg.device(device)
    np.testing.assert_allclose(loss.cpu().item(), cpu_loss.item(), rtol=1e-5)
    np.testing.assert_allclose(w1.grad.cpu().numpy(), cpu_w1.grad.numpy(), rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(w2.grad.cpu().numpy(), cpu_w2.grad.numpy(), rtol=1e-4,
                               atol=1e-6)


def test_to_and_back_keeps_values_and_gradient_flows_across(device):
    x = tg.randn(4, 3, requires_grad=True)
    moved = x.to(device)
    assert moved.device == tg.device(device)
    (moved * 2).sum().backward()
    assert x.grad.device == tg.device("cpu")
    np.testing.assert_allclose(x.grad.numpy(), np.full((4, 3), 2.0, np.float32))


@pytest.mark.gpu
def test_numpy_of_a_cuda_tensor_is_an_error_as_in_torch():
    t = tg.ones(2, device="cuda")
    with pytest.raises(TypeError, match=r"can't convert cuda:0 device type tensor to numpy"):
        t.numpy()


@pytest.mark.gpu
def test_ops_on_two_devices_name_both_devices():
    a = tg.ones(3)
    b = tg.ones(3, device="cuda")
    with pytest.raises(DeviceError, match=r"cpu and cuda:0"):
        a + b


def test_cuda_is_not_available_without_cupy(monkeypatch):
    monkeypatch.setattr(cuda_backend, "_load", lambda: None)
    assert tg.cuda.is_available() is False
    assert tg.cuda.device_count() == 0


def test_cuda_device_without_cupy_says_how_to_install(monkeypatch):
    monkeypatch.setattr(cuda_backend, "_load", lambda: None)
    with pytest.raises(DeviceError) as raised:
        tg.randn(3, device="cuda")
    message = str(raised.value)
    assert "CuPy is not installed" in message
    assert "pip install 'tracegrad[cuda]'" in message
    with pytest.raises(DeviceError, match="CuPy is not installed"):
        tg.ones(2).to("cuda")
    with pytest.raises(DeviceError, match="CuPy is not installed"):
        tg.ones(2).cuda()


def test_cuda_device_with_cupy_but_no_gpu_says_which(monkeypatch):
    class FakeCupy:
        class cuda:  # noqa: N801 - mirrors cupy.cuda
            @staticmethod
            def is_available() -> bool:
                return False

    monkeypatch.setattr(cuda_backend, "_load", lambda: FakeCupy)
    with pytest.raises(DeviceError) as raised:
        tg.zeros(2, device="cuda:0")
    assert "no usable CUDA GPU" in str(raised.value)
    assert "cupy.cuda.is_available() is False" in str(raised.value)


def test_device_strings_parse_like_torch():
    assert tg.device("cuda:1") == tg.device("cuda", 1)
    assert str(tg.device("cuda")) == "cuda:0"
    assert repr(tg.device("cpu")) == "device(type='cpu')"
    assert tg.ones(1).device == "cpu"
    with pytest.raises(DeviceError, match="Expected one of cpu, cuda"):
        tg.device("tpu")


@pytest.mark.gpu
def test_cuda_tensors_move_both_ways_and_report_their_device():
    assert tg.cuda.is_available() is True
    assert tg.cuda.device_count() >= 1
    x = tg.randn(3, 4, device="cuda")
    assert x.device == tg.device("cuda", 0) and x.is_cuda
    assert str(x.device) == "cuda:0"
    on_host = x.cpu()
    assert on_host.device == tg.device("cpu") and not on_host.is_cuda
    np.testing.assert_array_equal(on_host.cuda().cpu().numpy(), on_host.numpy())
    assert tg.ones(2).to("cuda").device == tg.device("cuda")
    assert tg.ones(2).cuda().device == tg.device("cuda")
    assert x.to(tg.device("cuda")) is x  # already there: no copy, as in torch
    assert "device='cuda:0'" in repr(x)


@pytest.mark.gpu
def test_a_trace_recorded_on_cuda_holds_host_arrays_and_opens_anywhere(tmp_path):
    x = tg.randn(4, 5, device="cuda")
    w = tg.randn(5, 3, device="cuda", requires_grad=True)
    with tg.record() as trace:
        loss = x.mm(w).sigmoid().sum()
        loss.backward()
    arrays = [record.value.array for record in trace.tensors.values()
              if record.value is not None and record.value.array is not None]
    arrays += [grad.array for backward_pass in trace.passes for step in backward_pass.steps
               for grad in (*step.grads_in, *step.grads_out)
               if grad is not None and grad.array is not None]
    assert arrays and all(type(array) is np.ndarray for array in arrays)
    path = tmp_path / "cuda.trace"
    trace.save(path)
    loaded = tg.load_trace(path)
    by_name = {record.name: record for record in loaded.tensors.values()}
    np.testing.assert_allclose(by_name["w"].value.array, w.detach().cpu().numpy())
    assert by_name["w"].grad.stats.norm == pytest.approx(
        float(np.linalg.norm(w.grad.cpu().numpy())), rel=1e-5)


@pytest.mark.gpu
def test_out_of_range_targets_on_cuda_raise_at_the_next_host_read():
    import tracegrad.nn.functional as F

    logits = tg.randn(4, 3, device="cuda", requires_grad=True)
    loss = F.cross_entropy(logits, tg.tensor([0, 1, 5, 2], device="cuda"))
    with pytest.raises(IndexError, match=r"Target 5 is out of bounds: the input has 3 classes"):
        loss.item()
    good = F.cross_entropy(logits, tg.tensor([0, 1, 2, 2], device="cuda"))
    assert np.isfinite(good.item())  # the error was raised once, not again
    F.cross_entropy(logits, tg.tensor([-1, 0, 0, 0], device="cuda"))
    cuda_backend._load().cuda.Device().synchronize()  # the bounds have reached the host:
    with pytest.raises(IndexError, match=r"Target -1 is out of bounds"):  # the next loss
        F.cross_entropy(logits, tg.tensor([0, 0, 0, 0], device="cuda"))  # reports them
    F.cross_entropy(logits, tg.tensor([0, 3, 0, 0], device="cuda"))
    with pytest.raises(IndexError, match=r"Target 3 is out of bounds"):
        tg.cuda.synchronize()  # as torch.cuda.synchronize raises a device-side assert
