"""Editing saved trace files in tests: a schema-4 or -5 document (columns) seen as one JSON
object per record, so a test damages ``body["nodes"][2]["next"]`` as a reader would name it,
and the edit is written back as columns. Schema 5's arrays table (columns, offsets implied)
is seen as schema 4's ``[dtype, shape, offset]`` entries (offsets are left out again when
it is written back), and a value whose statistics its array gives has no "stats".

>>> document = {"sites": {"count": 0, "columns": {}}, "values": {"count": 0, "columns": {}},
...             "trace": {"count": 1, "columns": {"roots": [[3]]}}}
>>> rows = as_rows(document)
>>> rows["trace"]["roots"].append(4)
>>> as_columns(rows)["trace"]["columns"]["roots"]
[[3, 4]]
"""

from __future__ import annotations

import json
import math
from itertools import islice

import numpy as np

from tracegrad.tracing import model
from tracegrad.tracing.codec import _REQUIRED
from tracegrad.tracing.columns import RECORD, RECORDS, _columns

_TABLES = (("sites", model.Site), ("values", model.Value))


def as_rows(document: dict) -> dict:
    """A copy of ``document`` whose sites, values and trace are objects per record (the
    schema-3 shape; columns left out of the file are left out of each record)."""
    rows = json.loads(json.dumps(document))
    for name, cls in _TABLES:
        rows[name] = _rows(cls, rows[name])
    rows["trace"] = _rows(model.Trace, rows["trace"])[0]
    if isinstance(rows.get("arrays"), dict):
        rows["arrays"] = _array_entries(rows["arrays"])
        rows[_ARRAY_COLUMNS] = True
    return rows


_ARRAY_COLUMNS = "(arrays in columns)"  # as_rows's mark: as_columns writes them back so


def _array_entries(table: dict) -> list[list]:
    entries, offset = [], 0
    for dtype_code, shape_code in zip(table["dtype"], table["shape"]):
        dtype, shape = table["dtypes"][dtype_code], table["shapes"][shape_code]
        entries.append([dtype, shape, offset])
        size = math.prod(shape) * np.dtype(dtype).itemsize
        offset += size + (-size % 16)
    return entries


def _array_columns(entries: list[list]) -> dict:
    dtypes = list(dict.fromkeys(entry[0] for entry in entries))
    shapes = list(map(json.loads, dict.fromkeys(json.dumps(entry[1]) for entry in entries)))
    return {"dtypes": dtypes, "shapes": shapes,
            "dtype": [dtypes.index(entry[0]) for entry in entries],
            "shape": [shapes.index(entry[1]) for entry in entries]}


def as_columns(rows: dict) -> dict:
    """``as_rows``'s shape written back as columns (a value a test removed from one record
    is that field's default there; one removed that has none is null)."""
    document = dict(rows)
    if document.pop(_ARRAY_COLUMNS, False):
        document["arrays"] = _array_columns(document["arrays"])
    for name, cls in _TABLES:
        document[name] = _table(cls, rows[name])
    document["trace"] = _table(model.Trace, [rows["trace"]])
    return document


def edit_rows(document: dict, edit) -> dict:
    """``edit(rows)`` applied to the record view of ``document``; the edited document."""
    rows = as_rows(document)
    edit(rows)
    return as_columns(rows)


def _rows(cls: type, table: dict) -> list[dict]:
    count, columns = table["count"], table["columns"]
    records: list[dict] = [{} for _ in range(count)]
    for column in _columns(cls):
        if column.name not in columns:
            continue
        values = _dense(column, columns[column.name], count)
        if column.kind is RECORD and "rows" in values:  # schema 5's statistics of values
            for row, stats in zip(values["rows"], _rows(column.child, values["records"])):
                records[row][column.name] = stats
            continue
        if column.kind is RECORD:
            values = _rows(column.child, values)
        elif column.kind is RECORDS:
            children = iter(_rows(column.child, values["records"]))
            groups = [list(islice(children, length)) for length in values["lengths"]]
            values = [(group[0] if group else None) for group in groups] \
                if column.container == "optional" else groups
        for record, value in zip(records, values):
            record[column.name] = value
    return records


def _dense(column, values, count: int):
    """A sparse column or a string table as the plain list it stands for."""
    if column.kind in (RECORD, RECORDS) or not isinstance(values, dict):
        return values
    if "rows" in values:
        dense = [_default(column) for _ in range(count)]
        for row, value in zip(values["rows"], _dense(column, values["values"],
                                                      len(values["rows"]))):
            dense[row] = value
        return dense
    table = values["strings"] if "strings" in values else values["tuples"]  # schema 5: shapes
    return [table[code] for code in values["codes"]]


def _table(cls: type, records: list[dict]) -> dict:
    columns = {}
    known = [column.name for column in _columns(cls)]
    extra = [name for record in records for name in record if name not in known]
    for column in _columns(cls):
        if not any(column.name in record for record in records):
            if column.kind is RECORD and records:  # schema 5: every value's from its array
                columns[column.name] = {"rows": [], "records": _table(column.child, [])}
            continue
        if column.kind is RECORD and not all(column.name in record for record in records):
            rows = [row for row, record in enumerate(records) if column.name in record]
            columns[column.name] = {"rows": rows, "records": _table(
                column.child, [records[row][column.name] for row in rows])}
            continue
        values = [record.get(column.name, _default(column)) for record in records]
        if column.kind is RECORD:
            values = _table(column.child, values)
        elif column.kind is RECORDS:
            groups = [([] if value is None else [value]) if column.container == "optional"
                      else value for value in values]
            values = {"lengths": [len(group) for group in groups],
                      "records": _table(column.child, [item for group in groups
                                                       for item in group])}
        columns[column.name] = values
    for name in dict.fromkeys(extra):  # unknown to the model: kept as they were
        columns[name] = [record.get(name) for record in records]
    return {"count": len(records), "columns": columns}


def _default(column):
    if column.factory is not None:
        return column.factory()
    return None if column.default is _REQUIRED else column.default
