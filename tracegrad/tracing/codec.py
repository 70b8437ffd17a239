"""Trace <-> JSON-able data one object per record (schemas 1 to 3), and a strict decoder.

Files are written in columns since schema 4 (columns.py, which shares this module's field
plans and errors); this layout is still read, and written by
``save_trace(..., schema_version=3)`` for tracegrad versions that predate columns.

The encoder and decoder of each dataclass are built once from the type hints of
``model.py`` (a plan per class: field names, what each field needs, its default), so a field
added to the model (with a default) is saved and loaded without touching this file, and no
value pays for reflection. A file whose data does not have the declared types is rejected
with the JSON path of the first bad value instead of producing a broken Trace.

Three things keep files small and fast to read (a 50,000-node trace is a few MB of JSON):

* a field equal to its default is left out (so a default in model.py is part of the
  format: change one and old files read the new default);
* every Site is stored once in a ``sites`` table and referred to by index (a training loop
  records the same few lines thousands of times);
* every Value object is stored once in a ``values`` table (a gradient leaving one step is
  the same Value entering the next).

Files of schema version 1 (everything inline) still decode: an inline object is accepted
wherever a table index is.

>>> import json
>>> from tracegrad.tracing.model import Trace, TensorRecord
>>> trace = Trace(tensors={0: TensorRecord(id=0, shape=(2,), dtype="float32")})
>>> arrays = []
>>> body = json.loads(json.dumps(encode_trace(trace, arrays)))
>>> body["trace"]["tensors"]
[{'id': 0, 'shape': [2], 'dtype': 'float32'}]
>>> decode_trace(body, arrays.__getitem__) == trace
True
>>> decode_trace({"trace": {"tensors": [{"id": 0, "shape": [2]}]}}, arrays.__getitem__)
Traceback (most recent call last):
...
tracegrad.tracing.codec.DecodeError: trace.tensors[0]: missing field 'dtype'
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from . import model

_REQUIRED = object()  # a field without a default
_MISSING = object()  # a field absent from the data
_PRIMITIVES = (int, float, bool, str)


class DecodeError(ValueError):
    """The data does not match the model; the message says where (``where``, a JSON path)."""

    def __init__(self, message: str, where: str | None = None) -> None:
        super().__init__(message)
        self.where = where


class _Problem(Exception):
    """Raised by the decoders; each container on the way out adds its part of the path,
    so a successful decode never builds a path string."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.path: list[str] = []  # innermost part first

    def at(self, part: str) -> _Problem:
        self.path.append(part)
        return self


class _Field(NamedTuple):
    name: str
    hint: Any
    default: Any  # _REQUIRED when the field has neither a default nor a factory
    factory: Callable[[], Any] | None


@functools.cache
def _fields(cls) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(cls, vars(model))
    fields = []
    for field in dataclasses.fields(cls):
        factory = None if field.default_factory is dataclasses.MISSING \
            else field.default_factory
        default = _REQUIRED if field.default is dataclasses.MISSING and factory is None \
            else field.default
        fields.append(_Field(field.name, hints[field.name], default, factory))
    return tuple(fields)


def _split_optional(hint) -> tuple[Any, bool]:
    """(the hint without None, whether None is allowed)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        options = [option for option in typing.get_args(hint) if option is not type(None)]
        nullable = len(options) < len(typing.get_args(hint))
        if len(options) == 1:
            return options[0], nullable
        raise TypeError(f"codec: unions other than X | None are not supported: {hint}")
    return hint, False


def _is_record_dict(hint) -> bool:
    return typing.get_origin(hint) is dict and dataclasses.is_dataclass(typing.get_args(hint)[1])


# -- encoding ----------------------------------------------------------------------------
def encode_trace(trace: model.Trace, arrays: list, timings: bool = True) -> dict:
    """``trace`` as JSON-able data: ``{"sites": [...], "values": [...], "trace": {...}}``.

    Whole arrays are appended to ``arrays`` and referred to by index. ``timings=False``
    leaves out every step's duration (byte-identical files from identical programs)."""
    encoder = _Encoder(arrays, timings)
    data = encoder.compile(model.Trace)(trace)
    return {"sites": encoder.sites, "values": encoder.values, "trace": data}


class _Encoder:
    """Encoders compiled per type for one save (they share its tables)."""

    def __init__(self, arrays: list, timings: bool) -> None:
        self.arrays = arrays
        self.timings = timings
        self.sites: list[dict] = []
        self.values: list[dict] = []
        self._site_index: dict[model.Site, int] = {}  # by value: equal sites share a row
        self._value_index: dict[int, int] = {}  # id(Value) -> row: the trace keeps them alive
        self._compiled: dict[Any, Callable | None] = {}

    def compile(self, hint) -> Callable | None:
        """The encoder for ``hint``; None when values of that type are JSON-able as they
        are (numbers, strings, tuples and lists of them)."""
        if hint not in self._compiled:
            self._compiled[hint] = None  # a recursive type would see "as is" meanwhile
            self._compiled[hint] = self._build(hint)
        return self._compiled[hint]

    def _build(self, hint) -> Callable | None:
        inner, nullable = _split_optional(hint)
        if inner is model.Site:
            return self._site_reference
        if inner is model.Value:
            return self._value_reference
        encode = self._build_required(inner)
        if encode is None or not nullable:
            return encode
        return lambda item: None if item is None else encode(item)

    def _build_required(self, hint) -> Callable | None:
        if hint in _PRIMITIVES:
            return None
        if hint is Any:
            return self._encode_any
        if hint is np.ndarray:
            return self._array_reference
        if hint in (_SiteRow, _ValueRow) or dataclasses.is_dataclass(hint):
            return self._dataclass_encoder(_row_class(hint))
        origin, arguments = typing.get_origin(hint), typing.get_args(hint)
        if origin is dict:
            encode_item = self.compile(arguments[1])
            if _is_record_dict(hint):  # dict[int, SomeRecord]: a list in id order
                return lambda records: [encode_item(records[key]) for key in sorted(records)]
            if encode_item is None:
                return lambda mapping: {str(key): item for key, item in mapping.items()}
            return lambda mapping: {str(key): encode_item(item)
                                    for key, item in mapping.items()}
        if origin in (list, tuple):
            item_encoders = [self.compile(argument) for argument in arguments
                             if argument is not Ellipsis]
            if all(encode is None for encode in item_encoders):
                return None
            if origin is list or arguments[-1] is Ellipsis:
                (encode_item,) = item_encoders
                return lambda items: [encode_item(item) for item in items]
        raise TypeError(f"codec: cannot encode type {hint}")

    def _dataclass_encoder(self, cls) -> Callable:
        plan = []
        for field in _fields(cls):
            if cls is model.Step and field.name == "duration_ns" and not self.timings:
                continue
            compare = field.default is not _REQUIRED and field.default is not None
            plan.append((field.name, self.compile(field.hint), field.default,
                         type(field.default) if compare else None, field.factory is not None))

        def encode(record) -> dict:
            data = {}
            attributes = record.__dict__
            for name, encode_field, default, default_type, has_factory in plan:
                item = attributes[name]
                # Defaults are left out: ``type(...) is`` first, so an array never meets ==.
                if item is default or (has_factory and not item) or (
                        type(item) is default_type and item == default):
                    continue
                data[name] = item if encode_field is None else encode_field(item)
            return data

        return encode

    def _site_reference(self, site: model.Site | None) -> int | None:
        if site is None:
            return None
        index = self._site_index.get(site)
        if index is None:
            index = self._site_index[site] = len(self.sites)
            self.sites.append(self.compile(_SiteRow)(site))
        return index

    def _value_reference(self, value: model.Value | None) -> int | None:
        if value is None:
            return None
        index = self._value_index.get(id(value))
        if index is None:
            index = self._value_index[id(value)] = len(self.values)
            self.values.append(self.compile(_ValueRow)(value))
        return index

    def _array_reference(self, array: np.ndarray) -> dict:
        self.arrays.append(array)
        return {"npy": len(self.arrays) - 1}

    def _encode_any(self, value):
        """Free-form data (node attrs, metadata): JSON-able already, but be lenient."""
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self.compile(type(value))(value)
        if isinstance(value, np.ndarray):
            return self._array_reference(value)
        if isinstance(value, dict):
            return {str(key): self._encode_any(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._encode_any(item) for item in value]
        if isinstance(value, np.integer):
            return int(value)
        if isinstance(value, np.floating):
            return float(value)
        return value


class _SiteRow:
    """Marks 'a Site written in full' (a table row), as opposed to a reference to one."""


class _ValueRow:
    """Marks 'a Value written in full' (a table row)."""


def _row_class(hint):
    return {_SiteRow: model.Site, _ValueRow: model.Value}.get(hint, hint)


# -- decoding ----------------------------------------------------------------------------
def decode_trace(body, load_array: Callable[[int], np.ndarray]) -> model.Trace:
    """The Trace ``body`` describes (``encode_trace``'s output, or a schema-1 document,
    which has no tables); ``load_array(index)`` gives the arrays back."""
    if not isinstance(body, dict):
        raise DecodeError(f"expected an object, got {_kind(body)}")
    decoder = _Decoder(load_array)
    try:
        for table, row in (("sites", _SiteRow), ("values", _ValueRow)):
            try:  # the tables first: the trace refers to their rows
                decoder.tables[row] = decoder.compile(list[row])(body.get(table, []))
            except _Problem as problem:
                raise problem.at(table) from None
        if "trace" not in body:
            raise _Problem("missing entry 'trace'")
        try:
            trace = decoder.compile(model.Trace)(body["trace"])
        except _Problem as problem:
            raise problem.at("trace") from None
        trace.read_legacy_roots()
        return trace
    except _Problem as problem:
        where = "".join(reversed(problem.path))
        raise DecodeError(f"{where}: {problem.message}" if where else problem.message,
                          where or None) from None


class _Decoder:
    """Decoders compiled per type for one load (they share its tables and arrays)."""

    def __init__(self, load_array: Callable[[int], np.ndarray]) -> None:
        self.load_array = load_array
        self.tables: dict[type, list] = {_SiteRow: [], _ValueRow: []}
        self._compiled: dict[Any, Callable] = {}

    def compile(self, hint) -> Callable:
        decode = self._compiled.get(hint)
        if decode is None:
            decode = self._compiled[hint] = self._build(hint)
        return decode

    def _build(self, hint) -> Callable:
        inner, nullable = _split_optional(hint)
        decode = self._build_required(inner)
        if not nullable:
            return decode
        return lambda value: None if value is None else decode(value)

    def _build_required(self, hint) -> Callable:
        if hint is Any:
            return lambda value: value
        if hint in _PRIMITIVES:
            return _primitive_decoder(hint)
        if hint is np.ndarray:
            return self._array
        if hint in (model.Site, model.Value):
            return self._reference_decoder(hint)
        if hint in (_SiteRow, _ValueRow) or dataclasses.is_dataclass(hint):
            return self._dataclass_decoder(_row_class(hint))
        origin, arguments = typing.get_origin(hint), typing.get_args(hint)
        if origin is list or (origin is tuple and arguments[-1] is Ellipsis):
            return self._sequence_decoder(arguments[0], tuple if origin is tuple else None)
        if origin is tuple:
            return self._pair_decoder(arguments)
        if origin is dict:
            if _is_record_dict(hint):
                return self._records_decoder(arguments[1])
            decode_item = self.compile(arguments[1])

            def decode_mapping(value):
                _expect(value, dict, "an object")
                if arguments[1] is Any:
                    return value
                return {key: _located(decode_item, item, f".{key}")
                        for key, item in value.items()}

            return decode_mapping
        raise TypeError(f"codec: cannot decode type {hint}")

    def _dataclass_decoder(self, cls) -> Callable:
        # Defaults are left out of files, so a record is its defaults (a template, in field
        # order) updated with the few keys present; each key checks its type with one
        # ``type(item) is exact`` when it is a plain value, and calls its decoder otherwise.
        template: dict[str, Any] = {}
        plan: dict[str, tuple] = {}
        factories = []
        required = []
        for field in _fields(cls):
            inner, nullable = _split_optional(field.hint)
            exact = inner if inner in _PRIMITIVES else _NoType
            plan[field.name] = (exact, nullable, self.compile(field.hint))
            template[field.name] = _MISSING if field.default is _REQUIRED \
                or field.factory is not None else field.default
            if field.factory is not None:
                factories.append((field.name, field.factory))
            elif field.default is _REQUIRED:
                required.append(field.name)
        entry_of = plan.get
        check = _check_value_array if cls is model.Value else None
        new = object.__new__

        def decode(value):
            if type(value) is not dict:
                raise _Problem(f"expected an object ({cls.__name__}), got {_kind(value)}")
            arguments = template.copy()
            for name, item in value.items():
                entry = entry_of(name)
                if entry is None:
                    continue  # a field from a newer tracegrad: ignored
                exact, nullable, decode_field = entry
                if type(item) is not exact and not (item is None and nullable):
                    try:
                        item = decode_field(item)
                    except _Problem as problem:
                        raise problem.at(f".{name}") from None
                arguments[name] = item
            for name, factory in factories:
                if arguments[name] is _MISSING:
                    arguments[name] = factory()
            for name in required:
                if arguments[name] is _MISSING:
                    raise _Problem(f"missing field '{name}'")
            record = new(cls)  # no __init__: every field is set here, in field order
            record.__dict__.update(arguments)
            if check is not None:
                check(record)
            return record

        return decode

    def _sequence_decoder(self, item_hint, make: type | None) -> Callable:
        inner, nullable = _split_optional(item_hint)
        if inner in (int, str, bool):
            def decode_primitives(value):
                _expect(value, list, "a list")
                for index, item in enumerate(value):
                    if type(item) is not inner and not (item is None and nullable):
                        raise _Problem(_type_message(inner, item)).at(f"[{index}]")
                return value if make is None else make(value)

            return decode_primitives
        decode_item = self.compile(item_hint)

        def decode_items(value):
            _expect(value, list, "a list")
            try:
                items = [decode_item(item) for item in value]
            except _Problem:
                _locate_failure(decode_item, value)
                raise
            return items if make is None else make(items)

        return decode_items

    def _pair_decoder(self, item_hints: tuple) -> Callable:
        decoders = [self.compile(item_hint) for item_hint in item_hints]
        count = len(decoders)

        def decode_fixed(value):
            _expect(value, list, "a list")
            if len(value) != count:
                raise _Problem(f"expected {count} items, got {len(value)}")
            try:
                return tuple([decode(item) for decode, item in zip(decoders, value)])
            except _Problem:
                for index, (decode, item) in enumerate(zip(decoders, value)):
                    _located(decode, item, f"[{index}]")
                raise

        return decode_fixed

    def _records_decoder(self, cls) -> Callable:
        """A dict of records keyed by their id, stored as a list."""
        decode_record = self.compile(cls)

        def decode_records(value):
            _expect(value, list, "a list")
            records = {}
            for index, item in enumerate(value):
                try:
                    record = decode_record(item)
                except _Problem as problem:
                    raise problem.at(f"[{index}]") from None
                if record.id in records:
                    raise _Problem(f"duplicate id {record.id}").at(f"[{index}]")
                records[record.id] = record
            return records

        return decode_records

    def _reference_decoder(self, cls) -> Callable:
        row = _SiteRow if cls is model.Site else _ValueRow
        table = self.tables  # filled before the trace is decoded
        decode_inline = self.compile(row)

        def decode_reference(value):
            if type(value) is int:
                rows = table[row]
                if 0 <= value < len(rows):
                    return rows[value]
                raise _Problem(f"{cls.__name__} number {value} is not in the table "
                               f"({len(rows)} rows)")
            return decode_inline(value)  # schema 1: written inline

        return decode_reference

    def _array(self, value) -> np.ndarray:
        _expect(value, dict, "an array reference")
        index = value.get("npy")
        if type(index) is not int:
            raise _Problem("an array reference needs an integer 'npy' index")
        return self.load_array(index)


class _NoType:
    """Never the type of a JSON value: fields that always go through their decoder."""


def _primitive_decoder(hint: type) -> Callable:
    def decode(value):
        if type(value) is hint:
            return value
        if hint is float and type(value) is int:
            return float(value)
        if value is None:
            raise _Problem(f"null where {hint.__name__} is required")
        raise _Problem(_type_message(hint, value))

    return decode


def _type_message(hint: type, value) -> str:
    wanted = {int: "an integer", float: "a number", bool: "a boolean", str: "a string"}
    if value is None:
        return f"null where {hint.__name__} is required"
    return f"expected {wanted.get(hint, hint.__name__)}, got {_kind(value)}"


def _check_value_array(value: model.Value) -> None:
    array = value.array
    if array is None:
        return
    dtype_name = model.array_dtype_name(array.dtype)
    if array.shape != value.shape or dtype_name != value.dtype:
        raise _Problem(
            f"the stored array is {array.dtype.name} {list(array.shape)} but the value "
            f"says {value.dtype} {list(value.shape)}").at(".array")


def _located(decode: Callable, value, part: str):
    try:
        return decode(value)
    except _Problem as problem:
        raise problem.at(part) from None


def _locate_failure(decode: Callable, items: list) -> None:
    """Decode again one by one to find which item failed, and raise with its index (a
    failure is rare; success never pays for enumerate)."""
    for index, item in enumerate(items):
        _located(decode, item, f"[{index}]")


def _expect(value, expected: type, what: str) -> None:
    if type(value) is not expected:
        raise _Problem(f"expected {what}, got {_kind(value)}")


def _kind(value) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(
        type(value), type(value).__name__)
