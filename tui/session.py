"""What the debugger knows about a trace, without any widget: steps, marks, navigation.

The app keeps its state (pass, step, breakpoints) in reactive attributes and asks a
``DebugSession`` the questions that need the trace: what is the next violation after step
12, which step runs ``MmBackward0``, what does this step show in the table. Keeping that
here means it is plain Python, tested without a terminal, and fast on 50,000 steps: the
per-step work is done once, lazily, and cached.

Example:
    >>> from tracegrad.tracing.model import Trace, NodeRecord, BackwardPass, Step
    >>> trace = Trace(nodes={0: NodeRecord(0, "MulBackward0")},
    ...               passes=[BackwardPass(0, steps=[Step(0, 0)])])
    >>> DebugSession(trace).node_at(0, 0).name
    'MulBackward0'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tracegrad.tracing.model import BackwardPass, NodeRecord, Step, Trace, Value, Violation

# One-character marks, ASCII so every terminal (and the --dump text) shows them the same.
MARK_VIOLATION = "!"
MARK_NONFINITE = "N"
MARK_HOOK = "h"
MARK_ERROR = "E"
MARK_BREAKPOINT = "*"


@dataclass(frozen=True)
class StepRow:
    """One line of the steps table."""

    index: int
    node_name: str
    shape: str
    marks: str  # subset of "!NhE" in that order


class DebugSession:
    """Read-only questions about a trace, indexed once for speed."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self._violations_by_step = self._index_violations(trace)
        self._rows: dict[tuple[int, int], StepRow] = {}
        self._reverse: dict[int, list[int]] | None = None
        self._steps_by_node: dict[int, dict[int, int]] = {}

    # -- passes and steps -------------------------------------------------------------------
    @property
    def pass_count(self) -> int:
        return len(self.trace.passes)

    def backward_pass(self, pass_index: int) -> BackwardPass:
        return self.trace.passes[pass_index]

    def step_count(self, pass_index: int) -> int:
        if not self.trace.passes:
            return 0
        return len(self.trace.passes[pass_index].steps)

    def step(self, pass_index: int, step_index: int) -> Step:
        return self.trace.passes[pass_index].steps[step_index]

    def node_at(self, pass_index: int, step_index: int) -> NodeRecord:
        return self.trace.nodes[self.step(pass_index, step_index).node]

    def pass_label(self, pass_index: int, short: bool = False) -> str:
        backward_pass = self.trace.passes[pass_index]
        if short:
            return (f"pass {pass_index}: {len(backward_pass.steps)} steps"
                    f"{' (failed)' if backward_pass.error else ''}")
        roots = ", ".join(self.trace.tensors[root].label for root in backward_pass.roots
                          if root in self.trace.tensors)
        where = f" at {backward_pass.site}" if backward_pass.site else ""
        failed = " (failed)" if backward_pass.error else ""
        return (f"pass {pass_index}: {backward_pass.kind}({roots}){where}, "
                f"{len(backward_pass.steps)} steps{failed}")

    def row(self, pass_index: int, step_index: int) -> StepRow:
        """The steps-table line for a step; computed on first use, then cached."""
        key = (pass_index, step_index)
        row = self._rows.get(key)
        if row is None:
            step = self.step(pass_index, step_index)
            node = self.trace.nodes[step.node]
            row = StepRow(step_index, node.name, self.output_shape(node, step),
                          self._marks(pass_index, step))
            self._rows[key] = row
        return row

    def output_shape(self, node: NodeRecord, step: Step | None = None) -> str:
        """The shape of what the node produced in forward (its gradient has the same)."""
        tensor_id = node.leaf if node.leaf is not None else (
            node.outputs[0] if node.outputs else None)
        if tensor_id is not None and tensor_id in self.trace.tensors:
            return format_shape(self.trace.tensors[tensor_id].shape)
        if step is not None and step.grads_in and step.grads_in[0] is not None:
            return format_shape(step.grads_in[0].shape)
        return "?"

    def _marks(self, pass_index: int, step: Step) -> str:
        marks = ""
        if (pass_index, step.index) in self._violations_by_step:
            marks += MARK_VIOLATION
        if any(value is not None and value.stats.has_nonfinite for value in step_values(step)):
            marks += MARK_NONFINITE
        if step.hooks:
            marks += MARK_HOOK
        if step.error:
            marks += MARK_ERROR
        return marks

    # -- violations -------------------------------------------------------------------------
    def _index_violations(self, trace: Trace) -> dict[tuple[int, int], list[Violation]]:
        by_step: dict[tuple[int, int], list[Violation]] = {}
        for violation in trace.violations:
            location = self._locate(trace, violation)
            if location is not None:
                by_step.setdefault(location, []).append(violation)
        return by_step

    @staticmethod
    def _locate(trace: Trace, violation: Violation) -> tuple[int, int] | None:
        """The (pass, step) a violation belongs to: recorded, or the first run of its node."""
        if violation.pass_index is not None and violation.step_index is not None:
            return violation.pass_index, violation.step_index
        if violation.node is None:
            return None
        pass_indexes = ([violation.pass_index] if violation.pass_index is not None
                        else range(len(trace.passes)))
        for pass_index in pass_indexes:
            if not 0 <= pass_index < len(trace.passes):
                continue
            for step in trace.passes[pass_index].steps:
                if step.node == violation.node:
                    return pass_index, step.index
        return None

    def violation_location(self, violation: Violation) -> tuple[int, int] | None:
        return self._locate(self.trace, violation)

    def violations_at(self, pass_index: int, step_index: int) -> list[Violation]:
        return self._violations_by_step.get((pass_index, step_index), [])

    # -- navigation -------------------------------------------------------------------------
    def find_step(self, pass_index: int, start: int, predicate: Callable[[int], bool],
                  wrap: bool = False) -> int | None:
        """The first step index >= start in the pass for which predicate(index) holds."""
        count = self.step_count(pass_index)
        order: Iterable[int] = range(start, count)
        if wrap:
            order = list(order) + list(range(min(start, count)))
        for index in order:
            if predicate(index):
                return index
        return None

    def next_stop(self, pass_index: int, after: int, breakpoints: frozenset[str]) -> int | None:
        """The next step after ``after`` that hits a breakpoint or has a violation/NaN/error."""
        def stops(index: int) -> bool:
            row = self.row(pass_index, index)
            return row.node_name in breakpoints or any(
                mark in row.marks for mark in (MARK_VIOLATION, MARK_NONFINITE, MARK_ERROR))
        return self.find_step(pass_index, after + 1, stops)

    def search(self, pass_index: int, after: int, query: str) -> tuple[int, int] | None:
        """The next step whose node name, module, or tensor names contain ``query``.

        Searches the current pass from the step after ``after`` (wrapping), then the others.
        """
        needle = query.strip().lower()
        if not needle:
            return None

        def matches_in(pass_number: int) -> Callable[[int], bool]:
            return lambda index: needle in self.search_text(pass_number, index)

        found = self.find_step(pass_index, after + 1, matches_in(pass_index), wrap=True)
        if found is not None:
            return pass_index, found
        for other in range(self.pass_count):
            if other != pass_index:
                found = self.find_step(other, 0, matches_in(other))
                if found is not None:
                    return other, found
        return None

    def search_text(self, pass_index: int, step_index: int) -> str:
        node = self.node_at(pass_index, step_index)
        names = [node.name, node.module or "", node.kind]
        for tensor_id in [*node.outputs, node.leaf]:
            tensor = self.trace.tensors.get(tensor_id) if tensor_id is not None else None
            if tensor is not None and tensor.name:
                names.append(tensor.name)
        return " ".join(names).lower()

    # -- the graph around a node ------------------------------------------------------------
    def neighbours(self, node_id: int) -> list[int]:
        """Nodes one edge away, either direction, in a deterministic order."""
        if self._reverse is None:
            reverse: dict[int, list[int]] = {}
            for source, target, _ in self.trace.edges():
                reverse.setdefault(target, []).append(source)
            self._reverse = reverse
        node = self.trace.nodes[node_id]
        forward = [next_id for next_id, _ in node.next if next_id is not None]
        return forward + self._reverse.get(node_id, [])

    def neighbourhood(self, node_id: int, radius: int, limit: int) -> list[int]:
        """Node ids within ``radius`` edges of ``node_id`` (breadth first, at most ``limit``)."""
        seen = {node_id: 0}
        order = [node_id]
        frontier = [node_id]
        for distance in range(1, radius + 1):
            next_frontier = []
            for current in frontier:
                for neighbour in self.neighbours(current):
                    if neighbour in seen or neighbour not in self.trace.nodes:
                        continue
                    if len(order) >= limit:
                        return order
                    seen[neighbour] = distance
                    order.append(neighbour)
                    next_frontier.append(neighbour)
            frontier = next_frontier
        return order

    def steps_by_node(self, pass_index: int) -> dict[int, int]:
        """node id -> the step that ran it in this pass (built once per pass)."""
        index = self._steps_by_node.get(pass_index)
        if index is None:
            index = {}
            for step in self.backward_pass(pass_index).steps:
                index.setdefault(step.node, step.index)
            self._steps_by_node[pass_index] = index
        return index


def step_values(step: Step) -> list[Value | None]:
    return [*step.grads_in, *step.grads_out]


def format_shape(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(size) for size in shape) + "]"
