"""``tracegrad.save`` / ``tracegrad.load``: tensors, Parameters, state dicts, optimizer and
scheduler state, and nested dicts/lists/tuples of them and of plain values -- in a file
format of our own that loads without pickle.

A file is a zip of ``data.json`` (the object as a tree of tagged JSON values, a table of
tensors, a table of storages) and ``storages/<n>`` (each storage's raw bytes). Tensors that
share memory (the same tensor saved twice, views of one base) share one storage, so they
share it again after loading. Anything else -- a module object, a function -- is refused
with an error naming where it was in the object.

>>> import io
>>> import tracegrad as torch
>>> weights = torch.arange(4.0)
>>> buffer = io.BytesIO()
>>> torch.save({"w": weights, "view": weights[1:], "step": 3}, buffer)
>>> _ = buffer.seek(0)
>>> loaded = torch.load(buffer)
>>> loaded["view"][0] = 10.0
>>> loaded["w"], loaded["step"]
(tensor([ 0., 10.,  2.,  3.]), 3)
"""

from __future__ import annotations

import base64
import collections
import json
import math
import os
import types
import zipfile
from typing import Any

import numpy as np

from . import _dtype, backends
from .errors import TracegradError
from .tensor import Size, Tensor

FORMAT = "tracegrad.save"
VERSION = 1
_MANIFEST = "data.json"


class SerializationError(TracegradError, RuntimeError):
    """A file ``tracegrad.load`` cannot read (not ours, damaged, or from a newer version)."""


# -- saving -------------------------------------------------------------------------------
def save(obj: Any, f, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False
         ) -> None:
    """Write ``obj`` to ``f`` (a path or a writable binary file).

    ``pickle_module`` and ``pickle_protocol`` are accepted for compatibility: nothing is
    pickled.
    """
    writer = _Writer()
    tree = writer.encode(obj, "obj")
    manifest = {"format": FORMAT, "version": VERSION, "object": tree,
                "tensors": writer.tensors, "storages": writer.storage_records}
    target = os.fspath(f) if isinstance(f, (str, os.PathLike)) else f
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr(_MANIFEST, json.dumps(manifest, separators=(",", ":")))
        for index, data in enumerate(writer.storage_bytes):
            archive.writestr(f"storages/{index}", data)


class _Writer:
    def __init__(self) -> None:
        self.tensors: list[dict] = []
        self.storage_records: list[dict] = []
        self.storage_bytes: list[bytes] = []
        self._tensor_ids: dict[int, int] = {}
        self._storage_ids: dict[int, int] = {}
        self._alive: list = []  # keeps ids stable while saving

    def encode(self, value: Any, path: str):
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else {"t": "float", "v": repr(value)}
        if isinstance(value, Tensor):
            return {"t": "tensor", "id": self._tensor(value)}
        if isinstance(value, np.ndarray):
            return {"t": "ndarray", "id": self._tensor(Tensor._wrap(value, False))}
        if isinstance(value, np.generic):
            return {"t": "numpy_scalar", "dtype": str(value.dtype), "v": self.encode(
                value.item(), path)}
        if isinstance(value, complex):
            return {"t": "complex", "v": [value.real, value.imag]}
        if isinstance(value, bytes):
            return {"t": "bytes", "v": base64.b64encode(value).decode("ascii")}
        if isinstance(value, _dtype.dtype):
            return {"t": "dtype", "v": value.name}
        if isinstance(value, backends.device):
            return {"t": "device", "v": str(value)}
        if isinstance(value, slice):
            return {"t": "slice", "v": [self.encode(part, path) for part in
                                        (value.start, value.stop, value.step)]}
        if isinstance(value, Size):
            return {"t": "size", "v": list(value)}
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            return self._refuse(value, path, "a named tuple")
        if isinstance(value, (dict, collections.Counter)):
            return self._mapping(value, path)
        if isinstance(value, tuple):
            return {"t": "tuple", "v": [self.encode(item, f"{path}[{index}]")
                                        for index, item in enumerate(value)]}
        if isinstance(value, list):
            return {"t": "list", "v": [self.encode(item, f"{path}[{index}]")
                                       for index, item in enumerate(value)]}
        if isinstance(value, (set, frozenset)):
            items = sorted(value, key=repr)  # a set has no order: save a stable one
            return {"t": type(value).__name__, "v": [self.encode(item, path) for item in items]}
        return self._refuse(value, path, None)

    def _mapping(self, value: dict, path: str) -> dict:
        if isinstance(value, collections.Counter):
            kind = "counter"
        elif isinstance(value, collections.OrderedDict):
            kind = "odict"
        elif isinstance(value, collections.defaultdict):
            kind = "dict"  # the default factory (a function) cannot be stored
        elif type(value) is dict:
            kind = "dict"
        else:
            return self._refuse(value, path, f"a {type(value).__name__} mapping")
        keys, values = [], []
        for key, item in value.items():
            keys.append(self.encode(key, f"{path} key {key!r}"))
            values.append(self.encode(item, f"{path}[{key!r}]"))
        return {"t": kind, "k": keys, "v": values}

    def _tensor(self, tensor: Tensor) -> int:
        found = self._tensor_ids.get(id(tensor))
        if found is not None:
            return found
        self._alive.append(tensor)
        array = tensor._array
        device = str(tensor.device)
        host = backends.to_host(array)
        storage, offset, strides = self._storage(host, array is host)
        from .nn.parameter import Parameter

        record = {"storage": storage, "offset": offset, "shape": list(host.shape),
                  "strides": strides, "dtype": str(host.dtype), "device": device,
                  "requires_grad": bool(tensor.requires_grad),
                  "parameter": isinstance(tensor, Parameter)}
        index = len(self.tensors)
        self.tensors.append(record)
        self._tensor_ids[id(tensor)] = index
        return index

    def _storage(self, array: np.ndarray, shares_memory: bool) -> tuple[int, int, list]:
        """(storage index, element offset, element strides) of ``array``: its base
        array's storage when it is a view whose layout can be expressed in elements."""
        root = array
        while isinstance(root.base, np.ndarray):
            root = root.base
        itemsize = array.itemsize
        start = array.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        shareable = (shares_memory and root.dtype == array.dtype and root.flags.c_contiguous
                     and start % itemsize == 0 and all(s % itemsize == 0 for s in array.strides))
        if not shareable:
            root, start = np.ascontiguousarray(array), 0
        key = id(root)
        index = self._storage_ids.get(key) if shareable else None
        if index is None:
            index = len(self.storage_records)
            self._alive.append(root)
            self.storage_records.append({"dtype": str(root.dtype), "numel": int(root.size),
                                         "byteorder": "little"})
            self.storage_bytes.append(root.astype(root.dtype.newbyteorder("<"),
                                                  copy=False).tobytes())
            if shareable:
                self._storage_ids[key] = index
        if not shareable:
            return index, 0, [s // itemsize for s in root.strides]
        return index, start // itemsize, [s // itemsize for s in array.strides]

    @staticmethod
    def _refuse(value: Any, path: str, what: str | None):
        from .nn.module import Module
        from .optim.optimizer import Optimizer

        if isinstance(value, Module):
            what = f"a {type(value).__name__} module object"
            hint = ("save its state_dict() instead, and load it into a newly built model with "
                    "model.load_state_dict(tracegrad.load(path))")
        elif isinstance(value, Optimizer):
            what = f"a {type(value).__name__} optimizer object"
            hint = "save optimizer.state_dict() instead, and load it with load_state_dict"
        elif isinstance(value, (types.FunctionType, types.LambdaType, types.MethodType,
                                types.BuiltinFunctionType)):
            what = f"a function ({getattr(value, '__qualname__', value)!r})"
            hint = "functions cannot be stored; save the values they compute, or their names"
        else:
            what = what or f"an object of type {type(value).__module__}.{type(value).__name__}"
            hint = ("tracegrad.save stores tensors, numbers, strings, None and "
                    "dicts/lists/tuples of them; convert the object to those first")
        raise TypeError(f"tracegrad.save cannot store {path}: {what}. Hint: {hint}. (torch.save "
                        "would pickle it; tracegrad's files load without pickle.)")


# -- loading ------------------------------------------------------------------------------
def load(f, map_location: Any = None, pickle_module: Any = None, *,
         weights_only: bool | None = None, mmap: bool | None = None, **pickle_load_args):
    """Read an object written by ``tracegrad.save`` from ``f`` (a path or a readable binary
    file). ``map_location`` puts tensors on a device ("cpu", a device, a dict from saved
    device to device, or a function of (tensor, saved device)). ``weights_only`` is
    accepted either way: loading never runs code from the file.
    """
    source = os.fspath(f) if isinstance(f, (str, os.PathLike)) else f
    name = source if isinstance(source, str) else getattr(source, "name", "the file")
    try:
        archive = zipfile.ZipFile(source)
    except zipfile.BadZipFile:
        raise SerializationError(
            f"{name} is not a tracegrad.save file (not a zip archive). Hint: tracegrad.load "
            "reads files written by tracegrad.save; a checkpoint written by torch.save needs "
            "real PyTorch.") from None
    with archive:
        manifest = _read_manifest(archive, name)
        storages = [_read_storage(archive, index, record, name)
                    for index, record in enumerate(manifest["storages"])]
        reader = _Reader(manifest["tensors"], storages, map_location, name)
        return reader.decode(manifest["object"])


def _read_manifest(archive: zipfile.ZipFile, name: str) -> dict:
    try:
        manifest = json.loads(archive.read(_MANIFEST))
    except KeyError:
        hint = ("it looks like a checkpoint written by torch.save, which needs real PyTorch"
                if any(n.endswith("data.pkl") for n in archive.namelist())
                else "tracegrad.load reads files written by tracegrad.save")
        raise SerializationError(f"{name} is not a tracegrad.save file (no {_MANIFEST}). "
                                 f"Hint: {hint}.") from None
    except ValueError as error:
        raise SerializationError(f"{name}: {_MANIFEST} is damaged ({error})") from None
    if manifest.get("format") != FORMAT:
        raise SerializationError(f"{name} is not a tracegrad.save file (format "
                                 f"{manifest.get('format')!r})")
    if manifest.get("version", 0) > VERSION:
        raise SerializationError(f"{name} was written by a newer tracegrad (format version "
                                 f"{manifest['version']}; this one reads {VERSION}). Hint: "
                                 "upgrade tracegrad.")
    return manifest


def _read_storage(archive: zipfile.ZipFile, index: int, record: dict, name: str):
    try:
        data = archive.read(f"storages/{index}")
    except KeyError:
        raise SerializationError(f"{name}: storage {index} is missing") from None
    dtype = np.dtype(record["dtype"]).newbyteorder("<")
    if len(data) != record["numel"] * dtype.itemsize:
        raise SerializationError(f"{name}: storage {index} has {len(data)} bytes, expected "
                                 f"{record['numel'] * dtype.itemsize}")
    return np.frombuffer(data, dtype=dtype).astype(dtype.newbyteorder("="))  # a copy


class _Reader:
    def __init__(self, records: list, storages: list, map_location, name: str) -> None:
        self.records, self.storages = records, storages
        self.map_location, self.name = map_location, name
        self._made: dict[int, Any] = {}
        self._on_device: dict[tuple, Any] = {}

    def decode(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            raise SerializationError(f"{self.name}: unexpected list in the object tree")
        kind = node.get("t")
        if kind == "tensor":
            return self._tensor(node["id"])
        if kind == "ndarray":
            return self._array(node["id"])
        if kind == "list":
            return [self.decode(item) for item in node["v"]]
        if kind == "tuple":
            return tuple(self.decode(item) for item in node["v"])
        if kind == "size":
            return Size(node["v"])
        if kind in ("dict", "odict", "counter"):
            pairs = [(self._key(key), self.decode(value))
                     for key, value in zip(node["k"], node["v"])]
            if kind == "counter":
                return collections.Counter(dict(pairs))
            return (collections.OrderedDict if kind == "odict" else dict)(pairs)
        if kind in ("set", "frozenset"):
            items = (self.decode(item) for item in node["v"])
            return set(items) if kind == "set" else frozenset(items)
        if kind == "float":
            return float(node["v"])
        if kind == "numpy_scalar":
            return np.dtype(node["dtype"]).type(self.decode(node["v"]))
        if kind == "complex":
            return complex(*node["v"])
        if kind == "bytes":
            return base64.b64decode(node["v"])
        if kind == "dtype":
            return _dtype.from_numpy_dtype(np.dtype(node["v"]))
        if kind == "device":
            return backends.device(node["v"])
        if kind == "slice":
            return slice(*(self.decode(part) for part in node["v"]))
        raise SerializationError(f"{self.name}: unknown value tag {kind!r}")

    def _key(self, node):
        key = self.decode(node)
        return tuple(key) if isinstance(key, list) else key

    def _array(self, index: int) -> np.ndarray:
        record = self.records[index]
        storage = self.storages[record["storage"]]
        itemsize = storage.itemsize
        if record["offset"] + _extent(record["shape"], record["strides"]) > storage.size:
            raise SerializationError(f"{self.name}: tensor {index} reaches past the end of "
                                     f"storage {record['storage']}")
        return np.lib.stride_tricks.as_strided(
            storage[record["offset"]:], shape=tuple(record["shape"]),
            strides=tuple(s * itemsize for s in record["strides"]))

    def _tensor(self, index: int) -> Tensor:
        made = self._made.get(index)
        if made is not None:
            return made
        record = self.records[index]
        array = self._array(index)
        device = self._device(record["device"])
        if device.type != "cpu":
            array = self._moved(record["storage"], record, device)
        tensor = Tensor._wrap(array, False)
        if callable(self.map_location) and not isinstance(self.map_location,
                                                          (str, backends.device)):
            result = self.map_location(tensor, record["device"])
            if isinstance(result, Tensor):
                tensor = result
        if record["parameter"]:
            from .nn.parameter import Parameter

            tensor = Parameter(tensor, record["requires_grad"])
        elif record["requires_grad"]:
            tensor.requires_grad_(True)
        self._made[index] = tensor
        return tensor

    def _moved(self, storage_index: int, record: dict, device):
        """The tensor on ``device``, as a view of its storage moved there once."""
        key = (storage_index, str(device))
        moved = self._on_device.get(key)
        if moved is None:
            moved = self._on_device[key] = backends.to_device(self.storages[storage_index],
                                                               device)
        xp = backends.array_module(moved)
        return xp.lib.stride_tricks.as_strided(
            moved[record["offset"]:], shape=tuple(record["shape"]),
            strides=tuple(s * moved.itemsize for s in record["strides"]))

    def _device(self, saved: str):
        location = self.map_location
        if location is None or callable(location) and not isinstance(location, (
                str, backends.device)):
            target = saved
        elif isinstance(location, dict):
            target = location.get(saved, saved)
        else:
            target = location
        device = backends.as_device(target) if not isinstance(target, backends.device) else \
            target
        if device.type == "cuda":
            from . import cuda

            if not cuda.is_available():
                raise SerializationError(
                    f"Attempting to deserialize object on a CUDA device but "
                    f"tracegrad.cuda.is_available() is False (a tensor saved on {saved} in "
                    f"{self.name}). If you are running on a CPU-only machine, please use "
                    "tracegrad.load with map_location='cpu' to map your storages to the CPU.")
        return device


def _extent(shape, strides) -> int:
    if any(size == 0 for size in shape):
        return 0
    return 1 + sum((size - 1) * stride for size, stride in zip(shape, strides))


__all__ = ["SerializationError", "load", "save"]
