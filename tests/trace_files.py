"""Editing saved trace files in tests: a schema-4 document (columns) seen as one JSON object
per record, so a test damages ``body["nodes"][2]["next"]`` as a reader would name it, and
the edit is written back as columns.

>>> document = {"sites": {"count": 0, "columns": {}}, "values": {"count": 0, "columns": {}},
...             "trace": {"count": 1, "columns": {"roots": [[3]]}}}
>>> rows = as_rows(document)
>>> rows["trace"]["roots"].append(4)
>>> as_columns(rows)["trace"]["columns"]["roots"]
[[3, 4]]
"""

from __future__ import annotations

import json
from itertools import islice

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
    return rows


def as_columns(rows: dict) -> dict:
    """``as_rows``'s shape written back as columns (a value a test removed from one record
    is that field's default there; one removed that has none is null)."""
    document = dict(rows)
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
    return [values["strings"][code] for code in values["codes"]]


def _table(cls: type, records: list[dict]) -> dict:
    columns = {}
    known = [column.name for column in _columns(cls)]
    extra = [name for record in records for name in record if name not in known]
    for column in _columns(cls):
        if not any(column.name in record for record in records):
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
