"""The numbers of one captured value (a gradient, a saved tensor, a leaf's .grad).

A ``DataTable`` of at most ``MAX_ROWS`` x ``MAX_COLUMNS`` cells: arrays are shown as rows of
their last dimension, so a [64, 100] gradient reads like the matrix it is. A value captured
as statistics only says so instead.
"""

from __future__ import annotations

import numpy as np
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Label

from tracegrad.tracing.model import Step, Trace, Value

from ..formatting import describe_value, statistics_note

MAX_ROWS = 200
MAX_COLUMNS = 16


def labelled_values(trace: Trace, step: Step) -> list[tuple[str, Value]]:
    """Every value the step can show, labelled, in a fixed order (at most MAX_ROWS of each
    kind: a node with 100,000 inputs lists the first ones)."""
    node = trace.nodes[step.node]
    values: list[tuple[str, Value]] = []
    for position, value in enumerate(step.grads_in[:MAX_ROWS]):
        if value is not None:
            values.append((f"grad in {position}", value))
    for position, value in enumerate(step.grads_out[:MAX_ROWS]):
        if value is not None:
            values.append((f"grad out {position}", value))
    for saved in node.saved[:MAX_ROWS]:
        tensor = trace.tensors.get(saved.tensor)
        if tensor is not None and tensor.value is not None:
            values.append((f"saved {saved.slot or tensor.label}", tensor.value))
    leaf = trace.tensors.get(node.leaf) if node.leaf is not None else None
    if leaf is not None:
        # .grad right after this step (per pass); traces without it have the last one.
        if step.grad_after is not None:
            values.append((f"{leaf.label}.grad", step.grad_after))
        elif leaf.grad is not None:
            values.append((f"{leaf.label}.grad (after the last pass)", leaf.grad))
    return values


class ValuesTable(Vertical):
    """Label saying which value, then its numbers."""

    def compose(self) -> ComposeResult:
        yield Label("values: none captured", id="values-label")
        yield DataTable(id="values-grid", zebra_stripes=True, show_cursor=False)

    def show(self, label: str | None, value: Value | None, choice: str = "") -> None:
        title = self.query_one("#values-label", Label)
        grid = self.query_one("#values-grid", DataTable)
        grid.clear(columns=True)
        if value is None:
            title.update("values: none at this step")
            return
        title.update(f"values: {label} {choice} — {describe_value(value)}")
        if value.summarized:
            grid.add_column(statistics_note(value))
            return
        array = np.asarray(value.array)
        matrix = array.reshape(1, 1) if array.ndim == 0 else array.reshape(-1, array.shape[-1])
        columns = min(matrix.shape[1], MAX_COLUMNS)
        grid.add_column("row")
        for column in range(columns):
            grid.add_column(str(column))
        for row_index in range(min(matrix.shape[0], MAX_ROWS)):
            cells = [f"{float(x):.4g}" if array.dtype.kind in "fc" else str(x)
                     for x in matrix[row_index, :columns]]
            grid.add_row(str(row_index), *cells)
        if matrix.shape[0] > MAX_ROWS or matrix.shape[1] > MAX_COLUMNS:
            title.update(f"values: {label} {choice} — {describe_value(value)} "
                         f"(first {MAX_ROWS} rows x {MAX_COLUMNS} columns shown)")
