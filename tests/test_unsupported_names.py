"""A torch name tracegrad lacks raises AttributeError that says so, in every namespace."""

from __future__ import annotations

import pytest

import tracegrad as tg
from tracegrad._unsupported import missing_attribute


def test_the_message_names_the_torch_name_and_the_way_out():
    error = missing_attribute("torch.nn", "Transformer", "module 'tracegrad.nn'")
    assert isinstance(error, AttributeError)
    message = str(error)
    assert message.startswith("tracegrad does not implement torch.nn.Transformer (module "
                              "'tracegrad.nn' has no attribute 'Transformer').")
    assert "`tracegrad run`" in message


def test_private_and_dunder_names_get_pythons_plain_message():
    assert str(missing_attribute("torch", "_C", "module 'tracegrad'")) == (
        "module 'tracegrad' has no attribute '_C'")
    assert str(missing_attribute("torch", "__wrapped__", "module 'tracegrad'")) == (
        "module 'tracegrad' has no attribute '__wrapped__'")


def test_top_level_miss():
    with pytest.raises(AttributeError, match=r"tracegrad does not implement torch\.fft "):
        tg.fft  # noqa: B018
    assert not hasattr(tg, "__wrapped__")
    assert getattr(tg, "compile_everything", None) is None


def test_tensor_miss_names_torch_tensor_and_costs_nothing_on_hits():
    x = tg.ones(2)
    with pytest.raises(AttributeError, match=r"tracegrad does not implement "
                                             r"torch\.Tensor\.to_sparse \('Tensor' object"):
        x.to_sparse  # noqa: B018
    assert not hasattr(x, "_private_probe")
    assert getattr(x, "sparse_dim", None) is None
    # no __getattr__ anywhere on Tensor: CPython would charge every attribute hit for it
    assert not any("__getattr__" in cls.__dict__ for cls in type(x).__mro__)
    assert str(_miss(x, "frobnicate")) == "'Tensor' object has no attribute 'frobnicate'"


def _miss(obj, name):
    try:
        getattr(obj, name)
    except AttributeError as error:
        return error
    raise AssertionError(f"{name} exists")


def test_linalg_testing_backends_and_cuda_misses():
    for namespace, module, name in (("torch.linalg", tg.linalg, "matrix_exp"),
                                    ("torch.testing", tg.testing, "assert_allclose"),
                                    ("torch.backends", tg.backends, "xnnpack"),
                                    ("torch.cuda", tg.cuda, "amp")):
        with pytest.raises(AttributeError, match=f"tracegrad does not implement "
                                                 f"{namespace.replace('.', '[.]')}[.]{name} "):
            getattr(module, name)


def test_ops_is_not_torch_ops():
    with pytest.raises(AttributeError, match=r"tracegrad does not implement torch\.ops "
                                             r"\(torch\.ops\.aten is PyTorch's operator"):
        tg.ops.aten  # noqa: B018
    with pytest.raises(AttributeError, match="torch.ops.my_namespace"):
        tg.ops.my_namespace  # noqa: B018
    assert "Mul" in tg.ops.registry()
    assert tg.ops.sorting.Sort.node_name == "SortBackward0"  # op modules still load


def test_backend_switches_are_kept_and_change_nothing():
    backends = tg.backends
    before = (backends.cudnn.benchmark, backends.cudnn.deterministic)
    backends.cudnn.benchmark = True
    backends.cudnn.deterministic = True
    try:
        assert backends.cudnn.benchmark and backends.cudnn.deterministic
        with backends.cudnn.flags(enabled=False):
            assert backends.cudnn.enabled is False
        assert backends.cudnn.enabled is True
    finally:
        backends.cudnn.benchmark, backends.cudnn.deterministic = before
    assert backends.cudnn.is_available() is False and backends.cudnn.allow_tf32 is True
    assert backends.mps.is_available() is False and backends.mps.is_built() is False
    backends.cuda.matmul.allow_tf32 = True
    backends.cuda.matmul.allow_tf32 = False
    assert backends.mkldnn.is_available() is False and backends.openmp.is_available()
    assert backends.cpu.get_cpu_capability() == "DEFAULT"


@pytest.mark.skipif(tg.cuda.is_available(), reason="checks the answers without a GPU")
def test_cuda_queries_without_a_gpu():
    cuda = tg.cuda
    assert cuda.is_available() is False and cuda.device_count() == 0
    assert cuda.memory_allocated() == 0 and cuda.max_memory_allocated() == 0
    assert cuda.memory_reserved() == 0 and cuda.is_initialized() is False
    cuda.empty_cache()
    cuda.manual_seed(3)
    cuda.manual_seed_all(3)
    assert tg.initial_seed() == 3
    for query in (cuda.current_device, cuda.get_device_name, cuda.synchronize,
                  cuda.get_device_capability, cuda.init):
        with pytest.raises(AssertionError) as raised:
            query()
        assert isinstance(raised.value, RuntimeError)
        assert "CUDA" in str(raised.value)
