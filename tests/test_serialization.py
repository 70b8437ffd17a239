"""tracegrad.save / tracegrad.load: what goes in comes out (values, dtypes, types, shared
storage, Parameters and requires_grad), without pickle; what cannot be stored is refused
with an error naming where it was; foreign or damaged files get a clear error."""

from __future__ import annotations

import collections
import io
import json
import math
import zipfile

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.serialization import SerializationError


def _round_trip(obj, **options):
    buffer = io.BytesIO()
    tg.save(obj, buffer)
    buffer.seek(0)
    return tg.load(buffer, **options)


@pytest.mark.parametrize("tensor", [
    tg.tensor([[1.5, -2.0], [3.0, 4.25]]),
    tg.tensor([1.0, 2.0], dtype=tg.float64),
    tg.tensor([3, -4, 5]),
    tg.tensor([True, False]),
    tg.tensor([1, 2], dtype=tg.uint8),
    tg.tensor(7.5),
    tg.zeros(0, 3),
    tg.arange(12.0).view(3, 4).t(),
    tg.arange(10.0)[::3],
], ids=["float32", "float64", "int64", "bool", "uint8", "0-d", "empty", "transposed",
        "strided"])
def test_tensors_round_trip_with_dtype_shape_and_values(tensor):
    loaded = _round_trip(tensor)
    assert loaded.dtype == tensor.dtype and loaded.shape == tensor.shape
    np.testing.assert_array_equal(loaded.numpy(), tensor.numpy())
    assert not loaded.requires_grad


def test_parameters_and_requires_grad_survive(tmp_path):
    layer = tg.nn.Linear(3, 2)
    leaf = tg.ones(2, requires_grad=True)
    path = tmp_path / "checkpoint.pt"
    tg.save({"weight": layer.weight, "leaf": leaf, "plain": tg.ones(1)}, path)
    loaded = tg.load(str(path))
    assert isinstance(loaded["weight"], tg.nn.Parameter) and loaded["weight"].requires_grad
    assert loaded["leaf"].requires_grad and loaded["leaf"].is_leaf
    assert not loaded["plain"].requires_grad


def test_the_same_tensor_twice_and_views_share_storage_after_loading():
    base = tg.arange(6.0)
    loaded = _round_trip({"a": base, "b": base, "view": base[2:4], "grid": base.view(2, 3)})
    assert loaded["a"] is loaded["b"]
    loaded["view"][0] = 100.0
    assert loaded["a"][2].item() == 100.0 and loaded["grid"][0, 2].item() == 100.0
    buffer = io.BytesIO()
    tg.save([base, base[1:]], buffer)
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as archive:
        storages = [name for name in archive.namelist() if name.startswith("storages/")]
    assert storages == ["storages/0"]  # one storage for the base and its view


def test_nested_plain_values_keep_their_types():
    obj = {"epoch": 3, "loss": 0.25, "best": float("inf"), "nan": float("nan"), "ok": True,
           "name": "run-1", "none": None, "steps": [1, 2, (3, 4.0)], 5: "int key",
           (1, 2): "tuple key", "bytes": b"\x00\x01", "nested": {"deep": [{"x": 1.0}]},
           "counter": collections.Counter([2, 2, 5]), "dtype": tg.float64,
           "device": tg.device("cpu"), "shape": tg.zeros(2, 3).shape}
    loaded = _round_trip(obj)
    assert math.isnan(loaded.pop("nan")) and math.isnan(obj.pop("nan"))
    assert loaded == obj
    assert type(loaded["steps"][2]) is tuple and type(loaded["counter"]) is collections.Counter
    assert type(loaded["shape"]) is tg.Size


def test_state_dict_round_trip_keeps_key_order_and_loads_into_a_new_model():
    model = tg.nn.Sequential(tg.nn.Conv2d(1, 2, 3), tg.nn.BatchNorm2d(2), tg.nn.Flatten(),
                             tg.nn.Linear(8, 3))
    model(tg.randn(2, 1, 4, 4))  # moves the batch norm's running statistics
    state = _round_trip(model.state_dict())
    assert isinstance(state, collections.OrderedDict)
    assert list(state) == list(model.state_dict())
    fresh = tg.nn.Sequential(tg.nn.Conv2d(1, 2, 3), tg.nn.BatchNorm2d(2), tg.nn.Flatten(),
                             tg.nn.Linear(8, 3))
    fresh.load_state_dict(state)
    x = tg.randn(2, 1, 4, 4)
    model.eval()
    fresh.eval()
    np.testing.assert_array_equal(fresh(x).detach().numpy(), model(x).detach().numpy())
    assert state["1.num_batches_tracked"].dtype == tg.int64


def test_optimizer_and_scheduler_state_round_trip_resumes_training():
    def build():
        tg.manual_seed(0)
        model = tg.nn.Linear(3, 1)
        optimizer = tg.optim.Adam(model.parameters(), lr=0.1)
        schedule = tg.optim.lr_scheduler.MultiStepLR(optimizer, [2, 3], gamma=0.5)
        return model, optimizer, schedule

    def train(model, optimizer, schedule, steps, start=0):
        for step in range(start, start + steps):
            optimizer.zero_grad()
            model(tg.full((4, 3), float(step + 1))).pow(2).mean().backward()
            optimizer.step()
            schedule.step()

    reference = build()
    train(*reference, 5)
    model, optimizer, schedule = build()
    train(model, optimizer, schedule, 2)
    saved = _round_trip({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                         "schedule": schedule.state_dict()})
    resumed = build()
    resumed[0].load_state_dict(saved["model"])
    resumed[1].load_state_dict(saved["optimizer"])
    resumed[2].load_state_dict(saved["schedule"])
    train(*resumed, 3, start=2)
    np.testing.assert_allclose(resumed[0].weight.detach().numpy(),
                               reference[0].weight.detach().numpy(), rtol=1e-6)
    assert resumed[2].get_last_lr() == reference[2].get_last_lr()


def test_map_location_and_weights_only_are_accepted():
    tensor = tg.ones(2)
    assert _round_trip(tensor, map_location="cpu").device == tg.device("cpu")
    assert _round_trip(tensor, map_location=tg.device("cpu")).tolist() == [1.0, 1.0]
    assert _round_trip(tensor, map_location={"cuda:0": "cpu"}).tolist() == [1.0, 1.0]
    seen = []
    _round_trip(tensor, map_location=lambda t, location: seen.append(location))
    assert seen == ["cpu"]
    assert _round_trip(tensor, weights_only=False).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("obj, where, what", [
    ({"model": tg.nn.Linear(2, 2)}, "obj['model']", "a Linear module object"),
    ([1, lambda x: x], "obj[1]", "a function"),
    ({"log": open}, "obj['log']", "a function"),
    ((1, object()), "obj[1]", "an object of type builtins.object"),
])
def test_objects_that_cannot_be_stored_are_named(obj, where, what):
    with pytest.raises(TypeError) as info:
        tg.save(obj, io.BytesIO())
    assert f"cannot store {where}: {what}" in str(info.value)


def test_foreign_and_damaged_files_get_clear_errors(tmp_path):
    not_zip = tmp_path / "plain.txt"
    not_zip.write_text("hello")
    with pytest.raises(SerializationError, match="not a tracegrad.save file"):
        tg.load(not_zip)
    torch_like = tmp_path / "torch.pt"
    with zipfile.ZipFile(torch_like, "w") as archive:
        archive.writestr("archive/data.pkl", b"\x80\x02")
    with pytest.raises(SerializationError, match="written by torch.save"):
        tg.load(torch_like)
    buffer = io.BytesIO()
    tg.save(tg.ones(3), buffer)
    damaged = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as source, \
            zipfile.ZipFile(damaged, "w") as target:
        target.writestr("data.json", source.read("data.json"))
        target.writestr("storages/0", source.read("storages/0")[:-2])
    damaged.seek(0)
    with pytest.raises(SerializationError, match="storage 0 has 10 bytes, expected 12"):
        tg.load(damaged)


def test_the_file_is_json_and_raw_bytes_not_pickle():
    buffer = io.BytesIO()
    tg.save({"w": tg.ones(2)}, buffer)
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as archive:
        manifest = json.loads(archive.read("data.json"))
        assert manifest["format"] == "tracegrad.save" and manifest["version"] == 1
        assert archive.read("storages/0") == np.ones(2, dtype="<f4").tobytes()


@pytest.mark.torch
def test_a_state_dict_saved_here_loads_into_the_same_torch_model_by_values():
    torch = pytest.importorskip("torch")
    ours = tg.nn.Linear(4, 2)
    state = _round_trip(ours.state_dict())
    theirs = torch.nn.Linear(4, 2)
    theirs.load_state_dict({key: torch.from_numpy(value.numpy().copy())
                            for key, value in state.items()})
    x = np.linspace(-1, 1, 8).reshape(2, 4).astype(np.float32)
    np.testing.assert_allclose(theirs(torch.from_numpy(x)).detach().numpy(),
                               ours(tg.tensor(x)).detach().numpy(), rtol=1e-6)
