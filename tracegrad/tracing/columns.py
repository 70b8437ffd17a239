"""Trace <-> JSON-able data in columns (schemas 4 and 5): one list per field, not one object
per record.

A 50,000-node trace is 150,000 records (tensors, nodes, steps, saved tensors). Written one
JSON object per record (schema 3) it was 300 bytes a node, and every record cost a dict
built, encoded, parsed and walked key by key in Python. In columns, a table of records is

    {"count": N, "columns": {"id": [0, 1, ...], "shape": [[4], [4], ...], ...}}

and a column is encoded, parsed and type-checked whole (``set(map(type, column))`` runs
in C), then the records are made with one ``map(cls, *columns)``. What that layout
changes, and what it keeps:

* a column whose every value is the field's default is left out (a default in model.py is
  part of the format, as in schema 3);
* a list of records inside a record (a node's saved tensors, a pass's steps, the trace's
  nodes) is one table for all of them plus how many each parent has:
  ``{"lengths": [1, 0, 2, ...], "records": {table}}``; a record that may be absent
  (``Trace.exception``) is such a list of length 0 or 1, and one that is always there
  (``Value.stats``) is a table as long as its parents';
* Sites and Values are stored once each, in the ``sites`` and ``values`` tables, and
  referred to by row number; an array by its number in the file's arrays table;
* the trace itself is a table of one record.

Schema 5 changes one thing here: the statistics of a value whose array is stored and
whose statistics are still pending on it (``values.stats_from_array``) are not stored --
``Value.stats`` is ``{"rows": [...], "records": {table}}``, the statistics of the values at
those rows, and every other value's are computed from its array when first read, as they
would have been had the trace not been saved (same bytes, same C order: the same numbers,
to the bit). Statistics someone read before the save are left out too when the array gives
them back to the bit, so the file does not depend on whether anyone looked. Saving then
computes no statistics (four passes over every value, most of a save with values), and
loading makes a ``PendingStats`` instead of a ``Stats``. (store.py
keeps the other schema-5 change: the arrays table in columns, offsets implied.) Loaded
records with nothing in a list or dict field share the model's read-only empties
(``NO_ITEMS``, ``NO_ATTRS``, ``nones``), as recorded ones do.

A value of the wrong type is reported with the path of the record it belongs to, as a
schema-3 file would name it (``trace.nodes[3].saved[0].version``): the logical place,
which says more than the column's position in the file.

>>> import json
>>> from tracegrad.tracing.model import Trace, TensorRecord
>>> trace = Trace(tensors={0: TensorRecord(id=0, shape=(2,), dtype="float32")})
>>> arrays = []
>>> body = json.loads(json.dumps(encode_columns(trace, arrays)))
>>> body["trace"]["columns"]["tensors"]["records"]["columns"]
{'id': [0], 'shape': [[2]], 'dtype': ['float32']}
>>> decode_columns(body, arrays.__getitem__) == trace
True
"""

from __future__ import annotations

import dataclasses
import functools
import math
import typing
import warnings
from collections.abc import Callable
from functools import partial
from itertools import accumulate, chain, compress, filterfalse, islice, repeat
from operator import attrgetter, eq, is_, is_not, itemgetter, lt, not_
from typing import Any

import numpy as np

from . import model
from .codec import _REQUIRED, DecodeError, _fields, _kind, _Problem, _split_optional
from .values import PendingStats, compute_stats, stats_from_arrays

_PRIMITIVES = (int, float, bool, str)
_NONE = type(None)
_is_not_none = partial(is_not, None)
_is_false = partial(is_, False)


# -- what each field is -----------------------------------------------------------------
# A field's kind decides how its column is written and read. Worked out once per class from
# model.py's type hints (so a field added there with a default needs nothing here).
PLAIN = "plain"  # JSON-able as it is: primitives, lists and tuples of them, dict[str, int]
ANY = "any"  # free-form data (attrs, metadata): JSON-able, numpy scalars made plain
SITE = "site"  # a Site, by row of the sites table
VALUE = "value"  # a Value, by row of the values table
VALUES = "values"  # a list of Values (or None), by row
ARRAY = "array"  # an array, by its number in the arrays table
RECORDS = "records"  # a list, dict (by id) or optional one of nested records
RECORD = "record"  # one nested record, always there
_FLAT_KINDS = frozenset({PLAIN, ANY, SITE, VALUE, VALUES, ARRAY})  # columns of values


class _Column(typing.NamedTuple):
    name: str
    kind: str
    hint: Any  # the field's hint without "| None"
    nullable: bool
    child: type | None  # the nested record class (RECORDS, RECORD)
    container: str  # RECORDS: "list", "dict" or "optional"
    default: Any  # _REQUIRED, or the default value
    factory: Callable | None
    # What records that have nothing here share on loading, as the recorder's do (model.
    # NO_ITEMS, NO_ATTRS): a list or dict of their own was most of a load's objects, and
    # of the collector's work after it. None: each its own (the Trace's, which are few).
    empty: Any = None
    is_tuple: bool = False  # a tuple of plain values (a shape): schema 5 may table them


@functools.cache
def _columns(cls: type) -> tuple[_Column, ...]:
    columns = []
    for field in _fields(cls):
        inner, nullable = _split_optional(field.hint)
        kind, child, container = _kind_of(inner, nullable)
        empty = None
        if cls is not model.Trace and not nullable:
            origin = typing.get_origin(inner)
            empty = model.NO_ITEMS if origin is list else \
                model.NO_ATTRS if origin is dict and field.factory is not None else None
        columns.append(_Column(field.name, kind, inner, nullable, child, container,
                               field.default, field.factory, empty,
                               typing.get_origin(inner) is tuple and not nullable))
    return tuple(columns)


def _kind_of(hint, nullable: bool) -> tuple[str, type | None, str]:
    if hint is model.Site:
        return SITE, None, ""
    if hint is model.Value:
        return VALUE, None, ""
    if hint is np.ndarray:
        return ARRAY, None, ""
    if dataclasses.is_dataclass(hint):
        return (RECORDS, hint, "optional") if nullable else (RECORD, hint, "")
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or (origin is dict and arguments[1] is Any):
        return ANY, None, ""
    if origin is dict and dataclasses.is_dataclass(arguments[1]):
        return RECORDS, arguments[1], "dict"
    if origin is list and dataclasses.is_dataclass(arguments[0]):
        return RECORDS, arguments[0], "list"
    if origin is list and _split_optional(arguments[0])[0] is model.Value:
        return VALUES, None, ""
    if _is_plain(hint):
        return PLAIN, None, ""
    raise TypeError(f"columns: cannot store a field of type {hint}")


def _is_plain(hint) -> bool:
    hint = _split_optional(hint)[0]
    if hint in _PRIMITIVES:
        return True
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin is dict:
        return arguments[0] is str and _is_plain(arguments[1])
    if origin in (list, tuple):
        return all(_is_plain(argument) for argument in arguments if argument is not Ellipsis)
    return False


# -- encoding ----------------------------------------------------------------------------
def encode_columns(trace: model.Trace, arrays: list, timings: bool = True,
                   stats_from_arrays: bool = False) -> dict:
    """``trace`` as JSON-able columns: ``{"sites": table, "values": table, "trace": table}``.

    Whole arrays are appended to ``arrays`` and referred to by number. ``timings=False``
    leaves out every step's duration (byte-identical files from identical programs).
    ``stats_from_arrays`` (schema 5): the statistics of a value whose array is stored and
    whose statistics are still to be computed from it are left out (see ``_value_stats``)."""
    encoder = _ColumnEncoder(arrays, timings, stats_from_arrays)
    body = encoder.table(model.Trace, [trace])
    # Values are encoded after everything that refers to them (their arrays are numbered
    # in that order), sites last (values have none, but keep one order for both).
    values = encoder.table(model.Value, encoder.values)
    sites = encoder.table(model.Site, encoder.sites)
    return {"sites": sites, "values": values, "trace": body}


class _ColumnEncoder:
    def __init__(self, arrays: list, timings: bool, stats_from_arrays: bool = False) -> None:
        self.arrays = arrays
        self.timings = timings
        self.stats_from_arrays = stats_from_arrays
        self.sites: list[model.Site] = []
        self.values: list[model.Value] = []
        self._site_rows: dict[model.Site, int] = {}  # by value: equal sites share a row
        # id(Value) -> row: the trace keeps them alive; None is no row.
        self._value_rows: dict[int, int | None] = {id(None): None}
        self._site_ids: dict[int, int | None] = {id(None): None}  # id(Site) -> row, likewise

    def table(self, cls: type, records: list) -> dict:
        columns = {}
        count = len(records)
        fields = _columns(cls)
        if cls is model.Step and not self.timings:
            fields = tuple(column for column in fields if column.name != "duration_ns")
        values_of = dict(zip(map(_get_name, fields), _field_values(fields, records)))
        for column in fields:
            values = values_of[column.name]
            if _all_default(column, values, count):
                continue
            if cls is model.Value and column.name == "stats" and self.stats_from_arrays:
                columns[column.name] = self._value_stats(records, values, values_of["array"])
                continue
            if column.kind in _FLAT_KINDS:
                columns[column.name] = self._flat_column(column, values, count)
            else:
                columns[column.name] = self._encode(column, values)
        return {"count": count, "columns": columns}

    def _value_stats(self, records: list, stats: list, arrays: list) -> dict:
        """Schema 5's statistics of values: ``{"rows": [...], "records": table}``, the rows
        whose statistics are stored; every other value has its array stored, and its
        statistics are computed from it when first read, after loading as before saving
        (values.stats_from_array says when that gives the same numbers). Nothing is
        computed here for those, and the file is smaller. When every row is stored, the
        table alone (schema 4's form).

        Statistics already computed (someone read them before saving) are left out too when
        the stored array gives them back to the bit: what the file holds depends on the
        numbers and the arrays, not on whether anyone looked at them first."""
        from_arrays = stats_from_arrays(records, stats, arrays)
        for row in compress(range(len(records)), map(_is_false, from_arrays)):
            from_arrays[row] = _array_gives_stats(records[row])
        stored = list(compress(range(len(records)), map(_is_false, from_arrays)))
        if len(stored) == len(records):
            return self.table(model.Stats, stats)
        return {"rows": stored, "records": self.table(model.Stats,
                                                      list(map(stats.__getitem__, stored)))}

    def _flat_column(self, column: _Column, values: list, count: int):
        """A column of values (not of records): dense, or one of two shorter forms that
        read back faster as well as being smaller --

        * sparse, ``{"rows": [...], "values": [...]}``, when at most a quarter of the
          records differ from the default (a tensor's name, a node's leaf);
        * a string table, ``{"strings": [...], "codes": [...]}``, for strings that repeat
          (op names, dtypes): a small int a record instead of a string.
        """
        default = column.default
        if column.factory is not None:
            rows = list(compress(range(count), values))  # non-empty lists and dicts
        elif default is None:  # ``is not``: an array column never meets ==
            rows = list(compress(range(count), map(_is_not_none, values)))
        elif default is not _REQUIRED:
            rows = [row for row, item in enumerate(values)
                    if item is not default and (item != default or type(item) is not
                                                type(default))] \
                if values.count(default) * 4 >= count * 3 else None
        else:
            rows = None
        if rows is not None and len(rows) * 4 <= count:
            kept = list(map(values.__getitem__, rows))
            return {"rows": rows, "values": self._dense(column, kept, len(kept))}
        return self._dense(column, values, count)

    def _dense(self, column: _Column, values: list, count: int):
        if column.hint is str and count > 1:
            strings = dict.fromkeys(values)  # in order of first sight: deterministic
            if len(strings) * 2 <= count:
                codes = {text: code for code, text in enumerate(strings)}
                return {"strings": list(strings), "codes": list(map(codes.__getitem__, values))}
        elif column.kind is PLAIN and column.is_tuple and self.stats_from_arrays and count > 1:
            # Schema 5: shapes repeat as strings do (a table of them, a code a record): a
            # list less per record to write, parse and make a tuple of.
            tuples = dict.fromkeys(values)
            if len(tuples) * 2 <= count:
                codes = {item: code for code, item in enumerate(tuples)}
                return {"tuples": list(tuples), "codes": list(map(codes.__getitem__, values))}
        return self._encode(column, values)

    def _encode(self, column: _Column, values: list):
        kind = column.kind
        if kind is PLAIN:
            if column.hint is float:
                _check_finite(column, values)
            return values
        if kind is ANY:
            return [_plain(item) if item else item for item in values]
        if kind is SITE:
            return self._site_rows_of(values)
        if kind is VALUE:
            return self._value_rows_of(values)
        if kind is VALUES:
            if not any(map(any, values)):  # structure only: [None] lists, JSON-able as is
                return values
            rows = iter(self._value_rows_of(list(chain.from_iterable(values))))
            lengths = set(map(len, values))
            if len(lengths) == 1 and 0 < min(lengths) <= 4:  # a chain's: one list in C
                return list(map(list, zip(*[rows] * min(lengths))))
            return [list(islice(rows, length)) for length in map(len, values)]
        if kind is ARRAY:
            return self._array_numbers(values)
        if kind is RECORD:
            return self.table(column.child, values)
        # RECORDS: one table for all, and how many each parent has.
        if column.container == "dict":  # records filed by id: in id order
            values = [[mapping[key] for key in sorted(mapping)] for mapping in values]
        elif column.container == "optional":
            values = [[] if item is None else [item] for item in values]
        return {"lengths": list(map(len, values)),
                "records": self.table(column.child, list(chain.from_iterable(values)))}

    def _site_rows_of(self, sites: list) -> list:
        """The row of each Site (None for None); new ones are added to the table."""
        ids = list(map(id, sites))
        known = self._site_ids
        new = list(filterfalse(known.__contains__, dict.fromkeys(ids)))
        if new:
            objects = dict(zip(ids, sites))
            for site_id in new:
                self._site_row(objects[site_id])
        return list(map(known.__getitem__, ids))

    def _value_rows_of(self, values: list) -> list:
        """The row of each Value (None for None), new ones added to the table in order of
        first sight; in C but for the new ones (100,000 values a save: bench_trace (d))."""
        ids = list(map(id, values))
        known = self._value_rows
        objects = dict(zip(ids, values))  # its keys: each id once, in order of first sight
        new = list(filterfalse(known.__contains__, objects))
        if new:
            start = len(self.values)
            known.update(zip(new, range(start, start + len(new))))
            self.values.extend(map(objects.__getitem__, new))
        return list(map(known.__getitem__, ids))

    def _array_numbers(self, arrays: list) -> list:
        """Each array's number in the file (None for None), in order."""
        start = len(self.arrays)
        self.arrays.extend(filter(_is_not_none, arrays))
        if len(self.arrays) - start == len(arrays):
            return list(range(start, len(self.arrays)))
        numbers = iter(range(start, len(self.arrays)))
        return [None if array is None else next(numbers) for array in arrays]

    def _site_row(self, site: model.Site | None) -> int | None:
        if site is None:
            return None
        # By id() first: a Site's own hash and == are Python code, and the recorder shares
        # one Site object per line; equal Sites that are different objects share a row too.
        row = self._site_ids.get(id(site))
        if row is None:
            row = self._site_rows.get(site)
            if row is None:
                row = self._site_rows[site] = len(self.sites)
                self.sites.append(site)
            self._site_ids[id(site)] = row
        return row



def _field_values(columns: tuple[_Column, ...], records: list) -> list[list]:
    """The values of each field over ``records``: all fields of a record read at once, in
    one pass over the records, then turned into columns. A pass per field read every
    record again from memory as many times as it has fields (14 for a tensor): three
    times slower on 50,000 records (bench/bench_trace.py (d))."""
    if not records:
        return [[] for _ in columns]
    getter = _getter(tuple(column.name for column in columns))
    if len(columns) == 1:
        return [list(map(getter, records))]
    return list(map(list, zip(*map(getter, records))))


_getter = functools.cache(lambda names: attrgetter(*names))


def _array_gives_stats(value: model.Value) -> bool:
    """Whether loading would compute ``value``'s statistics, to the bit, from its array as
    stored (C order: an F-ordered array is compared through a C-ordered copy, as it loads).
    Only values whose statistics were settled before the save get here (a few, unless a
    reader went through them all): the others are pending on their own arrays."""
    array = value.array
    if array is None:
        return False
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    if array.dtype.kind == "c":  # compute_stats reads them as real, which NumPy warns about
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            return _exact(compute_stats(array)) == _exact(value.stats)
    return _exact(compute_stats(array)) == _exact(value.stats)


def _exact(stats: model.Stats) -> tuple:
    """The statistics' numbers as text, so that == tells -0.0 from 0.0 (repr is exact)."""
    return tuple(map(repr, (stats.min, stats.max, stats.mean, stats.norm, stats.nan_count,
                            stats.inf_count)))


def _all_default(column: _Column, values: list, count: int) -> bool:
    """Whether a column can be left out: every value is the field's default."""
    if column.factory is not None:
        return not any(values)  # empty lists and dicts
    default = column.default
    if default is _REQUIRED or column.kind is ARRAY:
        return False
    if default is None:  # not list.count: a Value's __eq__ is Python code
        return not any(map(_is_not_none, values))
    # ``type(...) is`` as well as ==: 0 == False, but a bool column of zeros is not False's.
    return values.count(default) == count and set(map(type, values)) <= {type(default)}


def _check_finite(column: _Column, values: list) -> None:
    """JSON has no nan or inf, and the writer (orjson) would turn them into null: a
    statistic is finite by construction (values.py), so one that is not is a bug to report,
    not data to lose."""
    if not all(map(math.isfinite, filter(_is_not_none, values))):
        bad = next(item for item in values if item is not None and not math.isfinite(item))
        raise ValueError(f"save_trace: the field {column.name!r} holds {bad!r}, which a "
                         f"trace file cannot store; this is a tracegrad bug, please report it")


def _plain(value):
    """Free-form data (node attrs, metadata) as JSON: numpy scalars and arrays made plain."""
    if value.__class__ is float and not math.isfinite(value):
        raise ValueError(f"save_trace: {value!r} in a node's attributes or the trace's "
                         f"metadata cannot be stored (JSON has no nan or inf). Hint: store "
                         f"it as text, e.g. str(value)")
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(dataclasses.asdict(value))
    return value


# -- decoding ----------------------------------------------------------------------------
class _RowProblem(Exception):
    """A problem in record number ``row`` of the table being read (its path so far in
    ``problem``); the table's parent turns the row into its own place."""

    def __init__(self, row: int, problem: _Problem) -> None:
        super().__init__(problem.message)
        self.row, self.problem = row, problem


def decode_columns(body, load_array: Callable[[int], np.ndarray],
                   tables: dict[type, list] | None = None) -> model.Trace:
    """The Trace that ``encode_columns``'s output describes; ``load_array(number)`` gives
    the arrays back. Raises DecodeError naming the place of the first bad value.

    ``tables``, when given, receives the sites and values tables' records
    (``{Site: [...], Value: [...]}``): every Site and Value the trace refers to is one of
    them, which spares validation a search for them (validate_trace's ``tables``)."""
    if not isinstance(body, dict):
        raise DecodeError(f"expected an object, got {_kind(body)}")
    decoder = _ColumnDecoder(load_array)
    try:
        for name, cls in (("sites", model.Site), ("values", model.Value)):
            rows = _located_table(decoder, cls, body.get(name, _EMPTY), name)
            decoder.rows[cls] = rows
        if "trace" not in body:
            raise _Problem("missing entry 'trace'")
        (trace,) = _located_table(decoder, model.Trace, body["trace"], "trace", one=True)
        trace.read_legacy_roots()
        if tables is not None:
            tables.update(decoder.rows)
        return trace
    except _Problem as problem:
        where = "".join(reversed(problem.path))
        raise DecodeError(f"{where}: {problem.message}" if where else problem.message,
                          where or None) from None


_EMPTY = {"count": 0, "columns": {}}


def _located_table(decoder, cls: type, data, name: str, one: bool = False) -> list:
    try:
        return decoder.table(cls, data, expected=1 if one else None)
    except _RowProblem as failure:
        raise failure.problem.at(name if one else f"{name}[{failure.row}]") from None
    except _Problem as problem:
        raise problem.at(name) from None


class _ColumnDecoder:
    def __init__(self, load_array: Callable[[int], np.ndarray]) -> None:
        self.load_array = load_array
        self.rows: dict[type, list] = {}  # Site / Value: the table's records, by row
        # id(a dense column of arrays) -> (the column, their numbers in the file), whose
        # dtype and shape the arrays table gives (Value checks them against its own fields).
        self.array_numbers: dict[int, tuple[list, list]] = {}

    def table(self, cls: type, data, expected: int | None = None) -> list:
        """The records of a table; ``expected``: how many there must be (checked before any
        is made: a class whose every field has a default, such as Stats, could otherwise be
        asked for a billion records by a count alone)."""
        if type(data) is not dict:
            raise _Problem(f"expected a table ({cls.__name__}), got {_kind(data)}")
        count, columns = data.get("count"), data.get("columns")
        if type(count) is not int or count < 0:
            raise _Problem(f"a table's count must be an integer >= 0, got {count!r}")
        if expected is not None and count != expected:
            raise _Problem(f"expected {expected} records, got {count}")
        if type(columns) is not dict:
            raise _Problem(f"expected an object of columns, got {_kind(columns)}").at(
                ".columns")
        arguments = []
        stats_at = None  # where the Value table's statistics are, when some are not stored
        for column in _columns(cls):
            values = columns.get(column.name, _ABSENT)
            if values is _ABSENT:
                if column.empty is not None:
                    values = [column.empty] * count
                elif column.factory is not None:
                    factory = column.factory
                    values = [factory() for _ in range(count)]
                elif column.default is _REQUIRED:
                    if count:
                        raise _RowProblem(0, _Problem(f"missing field '{column.name}'"))
                    values = []
                else:
                    values = repeat(column.default, count)
            else:
                try:
                    if cls is model.Value and column.kind is RECORD and \
                            type(values) is dict and "rows" in values:
                        values = self._sparse_stats(values, count)
                        stats_at = len(arguments)
                    else:
                        values = self._column(column, values, count)
                except _RowProblem as failure:
                    failure.problem.at(f".{column.name}")
                    raise
                except _Problem as problem:
                    raise problem.at(f".{column.name}") from None
            arguments.append(values)
        if stats_at is not None:
            at = next(at for at, column in enumerate(_columns(cls)) if column.name == "array")
            arrays = arguments[at]
            if type(arrays) is not list:  # repeat(None) when left out
                arrays = arguments[at] = list(arrays)
            _stats_from_arrays(arguments[stats_at], arrays)
        records = list(map(cls, *arguments))  # the dataclass's own __init__: fastest here
        if cls is model.Value:
            fields = dict(zip(map(attrgetter("name"), _columns(cls)), arguments))
            shapes, dtypes, arrays = fields["shape"], fields["dtype"], fields["array"]
            column, numbers = self.array_numbers.pop(id(arrays), (None, None))
            kinds = getattr(self.load_array, "kinds", None)
            if column is not arrays or kinds is None or \
                    not _same_kinds(kinds, numbers, shapes, dtypes):
                _check_arrays(records)  # one array at a time; names the first that differs
        return records

    def _sparse_stats(self, values: dict, count: int) -> list:
        """Schema 5's statistics of values: the stored ones at their rows, None at the
        others (their arrays give them: ``_stats_from_arrays``)."""
        rows = values.get("rows")
        _check_rows(rows, count)
        try:
            stored = self.table(model.Stats, values.get("records"), expected=len(rows))
        except _RowProblem as failure:  # its number among the stored: the value's is its row
            raise _RowProblem(rows[failure.row], failure.problem) from None
        except _Problem as problem:
            raise problem.at(".records") from None
        dense = [None] * count
        for row, stats in zip(rows, stored):
            dense[row] = stats
        return dense

    def _column(self, column: _Column, values, count: int):
        kind = column.kind
        if kind in _FLAT_KINDS and type(values) is dict:
            if "rows" in values:
                return self._sparse(column, values, count)
            return self._dense(column, values, count)
        if kind is RECORD:
            return self.table(column.child, values, expected=count)
        if kind is RECORDS:
            return self._nested(column, values, count)
        _expect_list(values, count)
        if kind is PLAIN:
            values = _plain_column(column.hint, column.nullable, values)
            if column.empty is not None:  # the empties found in C, replaced in place
                empty = column.empty
                for row in compress(range(count), map(not_, values)):
                    values[row] = empty
            return values
        if kind is ANY:
            if typing.get_origin(column.hint) is dict:
                _check_types(values, (dict,), "an object")
            return values
        if kind is SITE:
            return _references(self.rows[model.Site], values, "Site", column.nullable)
        if kind is VALUE:
            return _references(self.rows[model.Value], values, "Value", column.nullable)
        if kind is VALUES:
            _check_types(values, (list,), "a list")
            flat = list(chain.from_iterable(values))
            if set(map(type, flat)) <= {_NONE}:  # structure only: shared lists of Nones
                # A dict lookup per step in C, not a call of model.nones: a chain has
                # one length, and 100,000 calls were a tenth of decoding it (bench_trace (d)).
                lengths = list(map(len, values))
                shared = {length: model.nones(length) for length in set(lengths)}
                return list(map(shared.__getitem__, lengths))
            flat = _references(self.rows[model.Value], flat, "Value", True,
                               lambda position: _inner(values, position))
            return _regroup(flat, list(map(len, values)), model.NO_ITEMS)
        # ARRAY
        _check_types(values, (int, _NONE) if column.nullable else (int,), "an array number")
        load_arrays = getattr(self.load_array, "many", None)
        if load_arrays is not None:  # schema 5: all at once
            rows = list(compress(range(count), map(_is_not_none, values)))
            if len(rows) == count:
                arrays = load_arrays(values)
                self.array_numbers[id(arrays)] = (arrays, values)
                return arrays
            arrays = [None] * count
            for row, array in zip(rows, load_arrays(list(map(values.__getitem__, rows)))):
                arrays[row] = array
            return arrays
        load_array = self.load_array
        return [None if number is None else load_array(number) for number in values]

    def _sparse(self, column: _Column, values: dict, count: int) -> list:
        """A sparse column: the default everywhere but at ``rows``."""
        rows, kept = values.get("rows"), values.get("values")
        _check_rows(rows, count)
        try:
            kept = self._dense(column, kept, len(rows))
        except _RowProblem as failure:  # its number in ``values``: the record's is its row
            raise _RowProblem(rows[failure.row], failure.problem) from None
        except _Problem as problem:
            raise problem.at(".values") from None
        if column.empty is not None:
            dense = [column.empty] * count
        elif column.factory is not None:
            factory = column.factory
            dense = [factory() for _ in range(count)]
        else:
            dense = [column.default] * count
        for row, item in zip(rows, kept):
            dense[row] = item
        return dense

    def _dense(self, column: _Column, values, count: int) -> list:
        """A dense column: a list, or a string table (codes into ``strings``)."""
        if type(values) is dict and "tuples" in values and column.is_tuple:
            tuples, codes = values.get("tuples"), values.get("codes")
            _expect_list(codes, count, ".codes")
            if type(tuples) is not list:
                raise _Problem(f"expected a list, got {_kind(tuples)}").at(".tuples")
            try:
                table = _plain_column(column.hint, False, tuples)
            except _RowProblem as failure:  # a shape many records share: name the table's
                raise failure.problem.at(f".tuples[{failure.row}]") from None
            return _references(table, codes, "tuple", False)
        if type(values) is dict:
            strings, codes = values.get("strings"), values.get("codes")
            if column.hint is not str or type(strings) is not list:
                raise _Problem(f"expected a column (a list), got {_kind(values)}")
            _expect_list(codes, count, ".codes")
            try:
                table = _plain_column(str, column.nullable, strings)
            except _RowProblem as failure:  # a string many records share: name the table's
                raise failure.problem.at(f".strings[{failure.row}]") from None
            return _references(table, codes, "string", False)
        return self._column(column, values, count)

    def _nested(self, column: _Column, values, count: int) -> list:
        if type(values) is not dict:
            raise _Problem(f"expected {{'lengths': ..., 'records': ...}}, got {_kind(values)}")
        lengths = values.get("lengths")
        _expect_list(lengths, count, ".lengths")
        if not (set(map(type, lengths)) <= {int} and (not lengths or min(lengths) >= 0)):
            raise _Problem("lengths must be integers >= 0").at(".lengths")
        try:
            records = self.table(column.child, values.get("records"))
        except _RowProblem as failure:  # a flat row number: the parent's row and its own
            ends = list(accumulate(lengths))
            row = next(row for row, end in enumerate(ends) if end > failure.row)
            inner = failure.row - (ends[row] - lengths[row])
            if column.container == "list" or column.container == "dict":
                failure.problem.at(f"[{inner}]")
            raise _RowProblem(row, failure.problem) from None
        except _Problem as problem:
            raise problem.at(".records") from None
        if sum(lengths) != len(records):
            raise _Problem(f"the lengths add up to {sum(lengths)} but there are "
                           f"{len(records)} records").at(".lengths")
        if column.container == "optional":
            flat = iter(records)
            return [next(flat) if length else None for length in lengths]
        groups = _regroup(records, lengths, column.empty)
        if column.container == "list":
            return groups
        return [_by_id(group, row) for row, group in enumerate(groups)]


_ABSENT = object()
_new_object, _object_setattr = object.__new__, object.__setattr__
_get_array, _get_shape, _get_dtype = attrgetter("array"), attrgetter("shape"), attrgetter("dtype")
_get_id, _get_name = attrgetter("id"), attrgetter("name")


def _check_rows(rows, count: int) -> None:
    """The rows of a sparse column: integers rising from 0 to at most ``count - 1``."""
    if type(rows) is not list or not set(map(type, rows)) <= {int}:
        raise _Problem("rows must be a list of integers").at(".rows")
    if rows and not (0 <= rows[0] and rows[-1] < count and all(map(lt, rows, rows[1:]))):
        raise _Problem(f"rows must rise from 0 to at most {count - 1}").at(".rows")


def _stats_from_arrays(stats: list, arrays: list) -> None:
    """Fill in the statistics a schema-5 file leaves to the arrays: pending, computed from
    the array when first read (values.PendingStats), as they were when it was saved."""
    rows = list(compress(range(len(stats)), map(is_, stats, repeat(None))))
    chosen = list(map(arrays.__getitem__, rows))
    if not all(map(_is_not_none, chosen)):
        row = rows[next(position for position, array in enumerate(chosen) if array is None)]
        raise _RowProblem(row, _Problem("the value has neither statistics nor an array")
                          .at(".stats"))
    # PendingStats.of for each, in C: a bare object, then its array (no __init__ to skip).
    made = list(map(_new_object, repeat(PendingStats, len(chosen))))
    any(map(_object_setattr, made, repeat("_source"), chosen))  # None each: runs them all
    if len(made) == len(stats):
        stats[:] = made
        return
    for row, pending in zip(rows, made):
        stats[row] = pending


def _by_id(records: list, row: int) -> dict:
    found = dict(zip(map(_get_id, records), records))
    if len(found) != len(records):
        seen: set = set()
        for position, record in enumerate(records):
            if record.id in seen:
                raise _RowProblem(row, _Problem(f"duplicate id {record.id}").at(
                    f"[{position}]"))
            seen.add(record.id)
    return found


def _expect_list(values, count: int, part: str = "") -> None:
    if type(values) is not list:
        problem = _Problem(f"expected a column (a list), got {_kind(values)}")
        raise problem.at(part) if part else problem
    if len(values) != count:
        problem = _Problem(f"expected {count} values, got {len(values)}")
        raise problem.at(part) if part else problem


def _check_types(values: list, allowed: tuple, what: str) -> None:
    """Every value's type is one of ``allowed`` (decided in C); else the first that is not."""
    if set(map(type, values)).issubset(allowed):
        return
    for row, item in enumerate(values):
        if type(item) not in allowed:
            raise _RowProblem(row, _Problem(_wrong(item, what)))


_WANTED = {int: "an integer", float: "a number", bool: "a boolean", str: "a string"}


def _wrong(item, what: str) -> str:
    if item is None:
        return f"null where {what} is required"
    return f"expected {what}, got {_kind(item)}"


def _plain_column(hint, nullable: bool, values: list) -> list:
    """A column of plain values, type-checked whole; tuples made from lists."""
    allowed = (hint, _NONE) if nullable else (hint,)
    if hint in _PRIMITIVES:
        if hint is float:
            allowed = (*allowed, int)
        _check_types(values, allowed, _WANTED[hint])
        if hint is float and int in set(map(type, values)):
            return [float(item) if type(item) is int else item for item in values]
        return values
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    outer = (list, _NONE) if nullable else (list,)
    if origin is dict:  # dict[str, int]: op counts
        _check_types(values, (dict,), "an object")
        item_hint = arguments[1]
        items = list(chain.from_iterable(map(dict.values, values)))
        if not set(map(type, items)).issubset((item_hint,)):
            for row, mapping in enumerate(values):
                for key, item in mapping.items():
                    if type(item) is not item_hint:
                        raise _RowProblem(row, _Problem(_wrong(item, _WANTED[item_hint]))
                                          .at(f".{key}"))
        return values
    _check_types(values, outer, "a list")
    present = [item for item in values if item is not None] if nullable else values
    if origin is list or arguments[-1] is Ellipsis:  # list[X], tuple[X, ...]
        item_hint, item_nullable = _split_optional(arguments[0])
        flat = list(chain.from_iterable(present))
        if item_hint in _PRIMITIVES:
            _check_flat(values, flat, (item_hint, _NONE) if item_nullable else (item_hint,),
                        _WANTED[item_hint])
        else:  # list[tuple[int | None, int]]: a node's edges
            _check_pairs(values, flat, typing.get_args(item_hint))
            if nullable:
                return [None if items is None else list(map(tuple, items))
                        for items in values]
            return _regroup(list(map(tuple, flat)), list(map(len, values)))  # in C
        if origin is tuple:
            if nullable:
                return [item if item is None else tuple(item) for item in values]
            # One tuple per distinct shape, as the recorder keeps them: fewer objects
            # for the collector and for the checks that follow.
            tuples = list(map(tuple, values))
            shared: dict = {}
            return list(map(shared.setdefault, tuples, tuples))
        return values
    raise TypeError(f"columns: cannot read a column of {hint}")


def _check_flat(values: list, flat: list, allowed: tuple, what: str) -> None:
    if set(map(type, flat)).issubset(allowed):
        return
    for row, items in enumerate(values):
        for position, item in enumerate(items or ()):
            if type(item) not in allowed:
                raise _RowProblem(row, _Problem(_wrong(item, what)).at(f"[{position}]"))


def _check_pairs(values: list, pairs: list, item_hints: tuple) -> None:
    """Fixed-length lists (edges: [node id or None, input number]), checked column-wise."""
    allowed = [(_split_optional(hint)[0], _NONE) if _split_optional(hint)[1]
               else (hint,) for hint in item_hints]
    size = len(item_hints)
    good = set(map(type, pairs)).issubset((list,)) and set(map(len, pairs)) <= {size} \
        and all(set(map(type, map(itemgetter(index), pairs))).issubset(allowed[index])
                for index in range(size))
    if good:
        return
    for row, items in enumerate(values):
        for position, pair in enumerate(items):
            if type(pair) is not list:
                problem = _Problem(f"expected a list, got {_kind(pair)}")
            elif len(pair) != size:
                problem = _Problem(f"expected {size} items, got {len(pair)}")
            else:
                bad = [index for index in range(size) if type(pair[index]) not in
                       allowed[index]]
                if not bad:
                    continue
                wanted = _WANTED.get(allowed[bad[0]][0], "a value")
                problem = _Problem(_wrong(pair[bad[0]], wanted)).at(f"[{bad[0]}]")
            raise _RowProblem(row, problem.at(f"[{position}]"))


def _references(table: list, values: list, what: str, nullable: bool,
                place: Callable | None = None) -> list:
    """The records of ``table`` at the row numbers ``values`` (None where allowed), checked
    whole: numbers of the right type, all within the table (their least and greatest), then
    looked up in C -- by list index, None through a row of None appended for it."""
    kinds = set(map(type, values))
    if kinds <= {int}:
        if not values or (0 <= min(values) and max(values) < len(table)):
            return list(map(table.__getitem__, values))
    elif nullable and kinds <= {int, _NONE}:
        numbers = list(filter(_is_not_none, values))
        if not numbers or (0 <= min(numbers) and max(numbers) < len(table)):
            lookup = [*table, None].__getitem__  # row -1: None
            return list(map(lookup, map(_NONE_TO_MINUS_ONE.get, values, values)))
    for position, number in enumerate(values):
        if type(number) is int and 0 <= number < len(table) or (number is None and nullable):
            continue
        if type(number) is int:
            problem = _Problem(f"{what} number {number} is not in the table "
                               f"({len(table)} rows)")
        else:
            problem = _Problem(_wrong(number, f"a {what} number"))
        if place is None:
            raise _RowProblem(position, problem)
        row, inner = place(position)
        raise _RowProblem(row, problem.at(f"[{inner}]"))
    raise AssertionError("a reference out of the table was not found again")


_NONE_TO_MINUS_ONE = {None: -1}  # .get(number, number): -1 for None, the number otherwise


def _regroup(items: list, lengths: list, empty: list | None = None) -> list:
    """``items`` cut into consecutive lists of ``lengths`` (the checks before made sure
    they add up), in C: groups all of one small size (a chain's gradients) by zip, others
    by slices; an empty group is ``empty`` when given (the model's shared read-only empty
    list, as recorded records have)."""
    sizes = set(lengths)
    if len(sizes) == 1 and 0 < min(sizes) <= 4:
        return list(map(list, zip(*[iter(items)] * min(sizes))))
    ends = list(accumulate(lengths))
    groups = list(map(items.__getitem__, map(slice, [0, *ends], ends)))
    if empty is not None and 0 in sizes:
        for row in compress(range(len(lengths)), map(_is_zero, lengths)):
            groups[row] = empty
    return groups


_is_zero = partial(eq, 0)


def _inner(groups: list, position: int) -> tuple[int, int]:
    """(group, position in it) of item ``position`` of the groups laid end to end."""
    for row, group in enumerate(groups):
        if position < len(group):
            return row, position
        position -= len(group)
    raise IndexError(position)


def _same_kinds(kinds: Callable, numbers: list, shapes: list, dtypes: list) -> bool:
    """Whether every value's array (all of them stored, at ``numbers``) has the value's
    shape and dtype, from the arrays table (``kinds``): each distinct (array kind, shape,
    dtype) once -- a handful, where asking 100,000 arrays for theirs was a tenth of a load
    with values (bench/bench_trace.py (d))."""
    keys, kind_of = kinds(numbers)
    for key, shape, dtype in set(zip(keys, shapes, dtypes)):
        array_dtype, array_shape = kind_of(key)
        if shape != array_shape or dtype != model.array_dtype_name(array_dtype):
            return False
    return True


def _check_arrays(values: list) -> None:
    """Every stored array has its value's shape and dtype (decided in C when they all do)."""
    arrays = list(map(_get_array, values))
    rows = list(compress(range(len(values)), map(_is_not_none, arrays)))
    if not rows:
        return
    kept = list(map(arrays.__getitem__, rows))
    chosen = list(map(values.__getitem__, rows))
    dtypes = list(map(_get_dtype, kept))
    names = {dtype: model.array_dtype_name(dtype) for dtype in set(dtypes)}
    if list(map(_get_shape, kept)) == list(map(_get_shape, chosen)) and \
            list(map(names.__getitem__, dtypes)) == list(map(_get_dtype, chosen)):
        return
    for row, value in enumerate(values):
        array = value.array
        if array is None:
            continue
        if array.shape != value.shape or model.array_dtype_name(array.dtype) != value.dtype:
            raise _RowProblem(row, _Problem(
                f"the stored array is {array.dtype.name} {list(array.shape)} but the value "
                f"says {value.dtype} {list(value.shape)}").at(".array"))


__all__ = ["decode_columns", "encode_columns"]
