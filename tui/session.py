"""What the debugger knows about a trace, without any widget: steps, marks, navigation.

The app keeps its state (pass, step, breakpoints) in reactive attributes and asks a
``DebugSession`` the questions that need the trace: what is the next violation after pass
3 step 12 (in this pass or any later one), which step runs ``MmBackward0``, what does this
step show in the table. Keeping that here means it is plain Python, tested without a
terminal, and fast on 50,000 steps and thousands of passes: per-step work is done once,
lazily, and cached.

Passes that gradcheck ran (one per probe) are hidden unless ``show_probes`` is set: the
*visible* passes are the ones navigation moves through.

Example:
    >>> from tracegrad.tracing.model import Trace, NodeRecord, BackwardPass, Step
    >>> trace = Trace(nodes={0: NodeRecord(0, "MulBackward0")},
    ...               passes=[BackwardPass(0, steps=[Step(0, 0)])])
    >>> DebugSession(trace).node_at(0, 0).name
    'MulBackward0'
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from tracegrad.tracing.model import BackwardPass, NodeRecord, Step, Trace, Value, Violation
from tracegrad.tracing.text import shape_text

# One-character marks, ASCII so every terminal (and the --dump text) shows them the same.
MARK_VIOLATION = "!"
MARK_NONFINITE = "N"
MARK_HOOK = "h"
MARK_ERROR = "E"
MARK_BREAKPOINT = "*"
STOP_MARKS = (MARK_VIOLATION, MARK_NONFINITE, MARK_ERROR)

Location = tuple[int, int]  # (pass index, step index)


@dataclass(frozen=True)
class StepRow:
    """One line of the steps table."""

    index: int
    node_name: str  # the op, what breakpoints match
    label: str  # the op and, for AccumulateGrad, the tensor it fills: "AccumulateGrad w1"
    shape: str
    marks: str  # subset of "!NhE" in that order


class DebugSession:
    """Read-only questions about a trace, indexed once for speed."""

    def __init__(self, trace: Trace, show_probes: bool = False) -> None:
        self.trace = trace
        self._violations_by_step = self._index_violations(trace)
        self._rows: dict[Location, StepRow] = {}
        self._reverse: dict[int, list[int]] | None = None
        self._steps_by_node: dict[int, dict[int, int]] = {}
        self._probe_numbers: dict[int, tuple[int, int]] | None = None
        self._grads_after: dict[int, bool] = {}
        self.probe_count = sum(1 for backward_pass in trace.passes if not backward_pass.is_user)
        self.show_probes = False
        self.visible: list[int] = []
        self.set_show_probes(show_probes)

    # -- passes and steps -------------------------------------------------------------------
    @property
    def pass_count(self) -> int:
        return len(self.trace.passes)

    def set_show_probes(self, show: bool) -> None:
        """Show gradcheck's probe passes too (True) or only the program's own (False).
        When the program has no pass of its own, the probes are shown anyway."""
        passes = self.trace.passes
        user = [backward_pass.index for backward_pass in passes if backward_pass.is_user]
        self.show_probes = bool(show) or not user
        self.visible = [backward_pass.index for backward_pass in passes] \
            if self.show_probes else user

    def is_visible(self, pass_index: int) -> bool:
        position = bisect.bisect_left(self.visible, pass_index)
        return position < len(self.visible) and self.visible[position] == pass_index

    def visible_position(self, pass_index: int) -> int:
        """Where a pass is among the visible ones (the nearest one before it if hidden)."""
        return max(bisect.bisect_right(self.visible, pass_index) - 1, 0)

    def neighbour_pass(self, pass_index: int, direction: int,
                       with_steps: bool = False) -> int | None:
        """The next (``direction`` 1) or previous (-1) visible pass, or None; with
        ``with_steps``, skipping passes without recorded steps (summarized ones)."""
        visible = self.visible
        if direction > 0:
            position = bisect.bisect_right(visible, pass_index)
            candidates: Iterable[int] = (visible[i] for i in range(position, len(visible)))
        else:
            position = bisect.bisect_left(visible, pass_index)
            candidates = (visible[i] for i in range(position - 1, -1, -1))
        for candidate in candidates:
            if not with_steps or self.step_count(candidate):
                return candidate
        return None

    def backward_pass(self, pass_index: int) -> BackwardPass:
        return self.trace.passes[pass_index]

    def step_count(self, pass_index: int) -> int:
        """Steps recorded in the pass (0 for a summarized pass)."""
        if not self.trace.passes:
            return 0
        return len(self.trace.passes[pass_index].steps)

    def step(self, pass_index: int, step_index: int) -> Step:
        return self.trace.passes[pass_index].steps[step_index]

    def node_at(self, pass_index: int, step_index: int) -> NodeRecord:
        return self.trace.nodes[self.step(pass_index, step_index).node]

    def probe_number(self, pass_index: int) -> tuple[int, int] | None:
        """(k, n) for the k-th of n consecutive gradcheck probes from one call site."""
        if self._probe_numbers is None:
            numbers: dict[int, tuple[int, int]] = {}
            run: list[int] = []
            previous = None
            for backward_pass in [*self.trace.passes, None]:
                key = None if backward_pass is None or backward_pass.is_user else (
                    backward_pass.label, backward_pass.site)
                if run and key != previous:
                    for number, index in enumerate(run, 1):
                        numbers[index] = (number, len(run))
                    run = []
                if key is not None:
                    run.append(backward_pass.index)
                previous = key
            self._probe_numbers = numbers
        return self._probe_numbers.get(pass_index)

    def pass_label(self, pass_index: int, short: bool = False) -> str:
        """``pass 3: backward(loss) at train.py:31, 12 steps`` (``short``: without where)."""
        backward_pass = self.trace.passes[pass_index]
        what = backward_pass.label or self._roots_label(backward_pass)
        probe = self.probe_number(pass_index)
        if probe is not None:
            what += f" probe {probe[0]:,} of {probe[1]:,}"
        if not short and backward_pass.site is not None:
            what += f" at {backward_pass.site}"
        count = backward_pass.step_count
        steps = f"{count:,} step{'' if count == 1 else 's'}"
        if backward_pass.summarized:
            steps += " (summarized)"
        failed = " (failed)" if backward_pass.error else ""
        return f"pass {pass_index}: {what}, {steps}{failed}"

    def _roots_label(self, backward_pass: BackwardPass) -> str:
        """For traces recorded before pass labels: ``backward(loss)`` from the roots."""
        roots = ", ".join(self.trace.tensors[root].label for root in backward_pass.roots
                          if root in self.trace.tensors)
        return f"{backward_pass.kind}({roots})"

    def row(self, pass_index: int, step_index: int) -> StepRow:
        """The steps-table line for a step; computed on first use, then cached."""
        key = (pass_index, step_index)
        row = self._rows.get(key)
        if row is None:
            step = self.step(pass_index, step_index)
            node = self.trace.nodes[step.node]
            row = StepRow(step_index, node.name, self.node_label(node),
                          self.output_shape(node, step), self._marks(pass_index, step))
            self._rows[key] = row
        return row

    def has_grads_after(self, pass_index: int) -> bool:
        """Whether the pass recorded ``.grad`` per step (traces before schema 3 did not);
        looked up once per pass."""
        known = self._grads_after.get(pass_index)
        if known is None:
            known = self._grads_after[pass_index] = any(
                step.grad_after is not None for step in self.trace.passes[pass_index].steps)
        return known

    def node_label(self, node: NodeRecord) -> str:
        """The op, and for AccumulateGrad the tensor it fills (``AccumulateGrad 0.weight``)."""
        if node.leaf is not None:
            leaf = self.trace.tensors.get(node.leaf)
            if leaf is not None:
                return f"{node.name} {leaf.label}"
        return node.name

    def output_shape(self, node: NodeRecord, step: Step | None = None) -> str:
        """The shape of what the node produced in forward (its gradient has the same)."""
        tensor_id = node.leaf if node.leaf is not None else (
            node.outputs[0] if node.outputs else None)
        if tensor_id is not None and tensor_id in self.trace.tensors:
            return shape_text(self.trace.tensors[tensor_id].shape)
        if step is not None and step.grads_in and step.grads_in[0] is not None:
            return shape_text(step.grads_in[0].shape)
        return "?"

    def _marks(self, pass_index: int, step: Step) -> str:
        marks = ""
        if (pass_index, step.index) in self._violations_by_step:
            marks += MARK_VIOLATION
        if any(value is not None and value.stats.has_nonfinite for value in step_gradients(step)):
            marks += MARK_NONFINITE
        if step.hooks:
            marks += MARK_HOOK
        if step.error:
            marks += MARK_ERROR
        return marks

    # -- violations -------------------------------------------------------------------------
    def _index_violations(self, trace: Trace) -> dict[Location, list[Violation]]:
        by_step: dict[Location, list[Violation]] = {}
        for violation in trace.violations:
            location = self._locate(trace, violation)
            if location is not None:
                by_step.setdefault(location, []).append(violation)
        return by_step

    @staticmethod
    def _locate(trace: Trace, violation: Violation) -> Location | None:
        """The (pass, step) a violation belongs to: recorded, or the first run of its node."""
        if violation.pass_index is not None and violation.step_index is not None:
            if 0 <= violation.pass_index < len(trace.passes) and 0 <= violation.step_index \
                    < len(trace.passes[violation.pass_index].steps):
                return violation.pass_index, violation.step_index
            return None
        if violation.node is None:
            return None
        return trace.locate(violation.node, violation.pass_index)

    def violation_location(self, violation: Violation) -> Location | None:
        return self._locate(self.trace, violation)

    def violations_at(self, pass_index: int, step_index: int) -> list[Violation]:
        return self._violations_by_step.get((pass_index, step_index), [])

    def failed_step(self) -> Location | None:
        """The first step that raised, among the visible passes."""
        for pass_index in self.visible:
            for step in self.trace.passes[pass_index].steps:
                if step.error:
                    return pass_index, step.index
        return None

    def start_location(self) -> Location:
        """Where the debugger opens: the step that raised when the program crashed there,
        else the first violation (NaN/Inf findings included), else the first step of the
        first visible pass."""
        failed = self.failed_step()
        if failed is not None:
            return failed
        visible = [location for location in self._violations_by_step
                   if self.is_visible(location[0])]
        if visible:
            return min(visible)
        first = self.neighbour_pass(-1, 1, with_steps=True)
        if first is None:
            first = self.visible[0] if self.visible else 0
        return first, 0

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

    def locations_after(self, location: Location) -> Iterator[Location]:
        """Every (pass, step) after ``location``: the rest of its pass, then the visible
        passes after it, in order."""
        pass_index, step_index = location
        if 0 <= pass_index < self.pass_count:
            for index in range(step_index + 1, self.step_count(pass_index)):
                yield pass_index, index
        position = bisect.bisect_right(self.visible, pass_index)
        for following in self.visible[position:]:
            for index in range(self.step_count(following)):
                yield following, index

    def find_forward(self, location: Location, predicate: Callable[[Location], bool],
                     limit: int | None = None) -> Location | None:
        """The first location after ``location`` (across passes) where predicate holds;
        at most ``limit`` steps looked at."""
        for count, candidate in enumerate(self.locations_after(location)):
            if limit is not None and count >= limit:
                return None
            if predicate(candidate):
                return candidate
        return None

    def next_stop(self, location: Location, breakpoints: frozenset[str]) -> Location | None:
        """The next step after ``location``, in this pass or a later visible one, that hits
        a breakpoint or has a violation, a NaN/Inf or an error."""
        def stops(candidate: Location) -> bool:
            row = self.row(*candidate)
            return row.node_name in breakpoints or any(mark in row.marks
                                                       for mark in STOP_MARKS)
        return self.find_forward(location, stops)

    def search(self, pass_index: int, after: int, query: str) -> Location | None:
        """The next step whose node name, module, or tensor names contain ``query``.

        Searches the current pass from the step after ``after`` (wrapping), then the other
        visible passes.
        """
        needle = query.strip().lower()
        if not needle:
            return None

        def matches_in(pass_number: int) -> Callable[[int], bool]:
            return lambda index: needle in self.search_text(pass_number, index)

        found = self.find_step(pass_index, after + 1, matches_in(pass_index), wrap=True)
        if found is not None:
            return pass_index, found
        for other in self.visible:
            if other != pass_index:
                found = self.find_step(other, 0, matches_in(other))
                if found is not None:
                    return other, found
        return None

    def search_text(self, pass_index: int, step_index: int) -> str:
        node = self.node_at(pass_index, step_index)
        names = [node.name, node.module or "", node.kind]
        for tensor_id in [*node.outputs[:8], node.leaf]:
            tensor = self.trace.tensors.get(tensor_id) if tensor_id is not None else None
            if tensor is not None and tensor.name:
                names.append(tensor.name)
        return " ".join(names).lower()

    # -- the graph around a node ------------------------------------------------------------
    def neighbours(self, node_id: int) -> Iterator[int]:
        """Nodes one edge away, either direction, in a deterministic order."""
        if self._reverse is None:
            self._reverse = self._reverse_edges()
        node = self.trace.nodes[node_id]
        for next_id, _ in node.next:
            if next_id is not None:
                yield next_id
        yield from self._reverse.get(node_id, ())

    def _reverse_edges(self) -> dict[int, list[int]]:
        """node id -> the nodes whose edges lead to it, in id order (one sweep over every
        edge, written as a plain loop: it runs once, on 100,000s of edges)."""
        reverse: dict[int, list[int]] = {}
        nodes = self.trace.nodes
        for source in sorted(nodes):
            for target, _ in nodes[source].next:
                if target is not None:
                    sources = reverse.get(target)
                    if sources is None:
                        reverse[target] = [source]
                    else:
                        sources.append(source)
        return reverse

    def neighbourhood(self, node_id: int, radius: int, limit: int,
                      members: dict[int, int] | None = None) -> dict[int, int]:
        """Node id -> distance for the nodes within ``radius`` edges of ``node_id`` (breadth
        first, at most ``limit``), only through ``members`` when given (e.g. the nodes one
        pass ran). A node with 100,000 neighbours costs only the ones taken."""
        distances = {node_id: 0}
        frontier = [node_id]
        nodes = self.trace.nodes
        for distance in range(1, radius + 1):
            next_frontier = []
            for current in frontier:
                for neighbour in self.neighbours(current):
                    if neighbour in distances or neighbour not in nodes or (
                            members is not None and neighbour not in members):
                        continue
                    if len(distances) >= limit:
                        return distances
                    distances[neighbour] = distance
                    next_frontier.append(neighbour)
            frontier = next_frontier
            if not frontier:
                break
        return distances

    def steps_by_node(self, pass_index: int) -> dict[int, int]:
        """node id -> the step that ran it in this pass (built once per pass)."""
        index = self._steps_by_node.get(pass_index)
        if index is None:
            index = {node: step.index
                     for node, step in self.backward_pass(pass_index).steps_by_node().items()}
            self._steps_by_node[pass_index] = index
        return index


def step_gradients(step: Step) -> list[Value | None]:
    """Every gradient a step saw: those flowing in, then those flowing out."""
    return [*step.grads_in, *step.grads_out]


def parse_location(text: str, pass_index: int) -> Location:
    """``"12"`` (a step of the current pass), ``"250:3"`` (pass 250, step 3) or ``"250:"``
    (the start of pass 250); raises ValueError when it is neither.

    >>> parse_location("250:3", 0), parse_location(" 7 ", 4), parse_location("2:", 0)
    ((250, 3), (4, 7), (2, 0))
    """
    cleaned = text.strip()
    if ":" in cleaned:
        pass_text, _, step_text = cleaned.partition(":")
        return int(pass_text), int(step_text) if step_text.strip() else 0
    return pass_index, int(cleaned)
