"""Trace <-> JSON-able data, with arrays set aside, and a strict type-checked decoder.

Decoding follows the type hints of the model's dataclasses, so a field added to
``model.py`` (with a default) is saved and loaded without touching this file, and a file
whose data does not have the declared types is rejected instead of producing a broken
Trace.

>>> from tracegrad.trace.model import Trace, TensorRecord
>>> trace = Trace(tensors={0: TensorRecord(id=0, shape=(2,), dtype="float32")})
>>> arrays = []
>>> decode_trace(encode_trace(trace, arrays), arrays.__getitem__) == trace
True
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable
from typing import Any

import numpy as np

from . import model


class DecodeError(ValueError):
    """The data does not match the model; the message says where (a JSON path)."""


# -- encoding ----------------------------------------------------------------------------
def encode_trace(trace: model.Trace, arrays: list, timings: bool = True) -> dict:
    """``trace`` as JSON-able data; whole arrays are appended to ``arrays`` and referred to
    by their index. ``timings=False`` writes every step's duration as 0 (byte-identical
    files from identical programs)."""
    data = _encode(trace, arrays)
    if not timings:
        for backward_pass in data["passes"]:
            for step in backward_pass["steps"]:
                step["duration_ns"] = 0
    return data


def _encode(value, arrays: list, records: bool = False):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        hints = _hints(type(value))
        return {field.name: _encode(getattr(value, field.name), arrays,
                                    _is_record_dict(hints[field.name]))
                for field in dataclasses.fields(value)}
    if isinstance(value, np.ndarray):
        arrays.append(value)
        return {"npy": len(arrays) - 1}
    if isinstance(value, dict):
        if records:  # dict[int, SomeRecord]: a list in id order
            return [_encode(value[key], arrays) for key in sorted(value)]
        return {str(key): _encode(item, arrays) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(item, arrays) for item in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    return value


def _is_record_dict(hint) -> bool:
    if typing.get_origin(hint) is not dict:
        return False
    return dataclasses.is_dataclass(typing.get_args(hint)[1])


# -- decoding ----------------------------------------------------------------------------
def decode_trace(data, load_array: Callable[[int], np.ndarray]) -> model.Trace:
    """The Trace ``data`` describes; ``load_array(index)`` gives the arrays back."""
    return _decode(data, model.Trace, "trace", load_array)


@functools.cache
def _hints(cls) -> dict:
    return typing.get_type_hints(cls, vars(model))


def _decode(value, hint, path: str, load_array):
    origin = typing.get_origin(hint)
    if hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None:
            if type(None) in options:
                return None
            raise DecodeError(f"{path}: null where a value is required")
        for option in options:
            if option is type(None):
                continue
            return _decode(value, option, path, load_array)
    if value is None:
        raise DecodeError(f"{path}: null where {_hint_name(hint)} is required")
    if dataclasses.is_dataclass(hint):
        return _decode_dataclass(value, hint, path, load_array)
    if hint is np.ndarray:
        return _decode_array(value, path, load_array)
    if origin is list:
        (item_hint,) = typing.get_args(hint)
        _expect(value, list, path)
        return [_decode(item, item_hint, f"{path}[{index}]", load_array)
                for index, item in enumerate(value)]
    if origin is tuple:
        return _decode_tuple(value, typing.get_args(hint), path, load_array)
    if origin is dict:
        _key_hint, item_hint = typing.get_args(hint)
        if dataclasses.is_dataclass(item_hint):
            return _decode_records(value, item_hint, path, load_array)
        _expect(value, dict, path)
        return {key: _decode(item, item_hint, f"{path}.{key}", load_array)
                for key, item in value.items()}
    if hint is bool:
        _expect(value, bool, path)
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise DecodeError(f"{path}: expected an integer, got {type(value).__name__}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DecodeError(f"{path}: expected a number, got {type(value).__name__}")
        return float(value)
    if hint is str:
        _expect(value, str, path)
        return value
    raise DecodeError(f"{path}: cannot decode type {_hint_name(hint)}")


def _decode_dataclass(value, cls, path: str, load_array):
    _expect(value, dict, path)
    hints = _hints(cls)
    arguments = {}
    for field in dataclasses.fields(cls):
        if field.name in value:
            arguments[field.name] = _decode(value[field.name], hints[field.name],
                                            f"{path}.{field.name}", load_array)
        elif (field.default is dataclasses.MISSING
              and field.default_factory is dataclasses.MISSING):
            raise DecodeError(f"{path}: missing field '{field.name}'")
    record = cls(**arguments)
    if cls is model.Value and record.array is not None:
        _check_array(record, path)
    return record


def _check_array(value: model.Value, path: str) -> None:
    array = value.array
    if tuple(array.shape) != tuple(value.shape) or array.dtype.name != value.dtype:
        raise DecodeError(
            f"{path}.array: the stored array is {array.dtype.name} {list(array.shape)} but "
            f"the value says {value.dtype} {list(value.shape)}")


def _decode_records(value, cls, path: str, load_array) -> dict:
    """A dict of records keyed by their id, stored as a list."""
    _expect(value, list, path)
    records = {}
    for index, item in enumerate(value):
        record = _decode_dataclass(item, cls, f"{path}[{index}]", load_array)
        if record.id in records:
            raise DecodeError(f"{path}[{index}]: duplicate id {record.id}")
        records[record.id] = record
    return records


def _decode_tuple(value, arguments: tuple, path: str, load_array) -> tuple:
    _expect(value, list, path)
    if len(arguments) == 2 and arguments[1] is Ellipsis:
        return tuple(_decode(item, arguments[0], f"{path}[{index}]", load_array)
                     for index, item in enumerate(value))
    if len(value) != len(arguments):
        raise DecodeError(f"{path}: expected {len(arguments)} items, got {len(value)}")
    return tuple(_decode(item, item_hint, f"{path}[{index}]", load_array)
                 for index, (item, item_hint) in enumerate(zip(value, arguments)))


def _decode_array(value, path: str, load_array) -> np.ndarray:
    _expect(value, dict, path)
    index = value.get("npy")
    if isinstance(index, bool) or not isinstance(index, int):
        raise DecodeError(f"{path}: an array reference needs an integer 'npy' index")
    return load_array(index)


def _expect(value, expected: type, path: str) -> None:
    if not isinstance(value, expected):
        raise DecodeError(
            f"{path}: expected {expected.__name__}, got {type(value).__name__}")


def _hint_name(hint) -> str:
    return getattr(hint, "__name__", str(hint))
