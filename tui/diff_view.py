"""Two traces side by side at the node where they part: what each side shows, as text.

``DiffView`` holds a ``TraceDiff`` and the places the user can stand: every difference
``diff_traces`` reported (forward, backward) when there are several, else the steps of
the aligned backward pass (both sides step together). ``side(0)`` / ``side(1)`` give the
lines of each side at the current place; the app and ``dump_diff`` print them.
No textual import here: ``tracegrad tui --dump A B`` prints the same text without one.

Example:
    >>> import tracegrad
    >>> def run(scale):
    ...     w = tracegrad.ones(3, requires_grad=True)
    ...     with tracegrad.record() as tr:
    ...         (w * scale).sum().backward()
    ...     return tr
    >>> view = DiffView(run(2.0), run(2.5))
    >>> view.side(0)[1]
    'MulBackward0  [forward]'
"""

from __future__ import annotations

from dataclasses import dataclass

from tracegrad.tracing.diff import Difference, align_nodes, diff_traces, feeders
from tracegrad.tracing.model import Trace
from tracegrad.tracing.report import format_diff
from tracegrad.tracing.text import describe_node, site_line, tolerance_words


@dataclass(frozen=True)
class Place:
    """Where both sides stand: a reported difference, or a step of the aligned pass."""

    difference: Difference | None
    node_a: int | None
    node_b: int | None
    pass_index: int | None = None
    step_index: int | None = None
    step_b: int | None = None  # the partner's step in b's pass


class DiffView:
    """The places to stand in two traces and what each side shows there."""

    def __init__(self, a: Trace, b: Trace, names: tuple[str, str] = ("a", "b"),
                 rtol: float | None = None, atol: float | None = None) -> None:
        self.traces = (a, b)
        self.result = diff_traces(a, b, rtol=rtol, atol=atol, names=names)
        self.names = self.result.names
        self.tolerance = tolerance_words(rtol, atol)
        self.differences = [item for item in (self.result.forward, self.result.backward)
                            if item is not None]
        self.by_differences = len(self.differences) > 1
        self.places = self._places()
        self.position = self._start()

    # -- places ------------------------------------------------------------------------------
    def _places(self) -> list[Place]:
        if self.by_differences or not self.differences:
            return [Place(item, item.node_a, item.node_b, item.pass_index, item.step_index,
                          self._partner_steps(item.pass_index).get(item.node_b))
                    for item in self.differences]
        difference = self.differences[0]
        if difference.phase == "forward":
            return [Place(difference, difference.node_a, difference.node_b)]
        return self._steps_of(difference)

    def _partner_steps(self, pass_index: int | None) -> dict[int, int]:
        """node id in b -> its step index in b's pass paired with a's pass ``pass_index``
        (passes pair by their order among the program's own)."""
        if pass_index is None:
            return {}
        a, b = self.traces
        position = [item.index for item in a.user_passes()].index(pass_index)
        user_b = b.user_passes()
        if position >= len(user_b):
            return {}
        return {step.node: step.index for step in user_b[position].steps}

    def _steps_of(self, difference: Difference) -> list[Place]:
        """Every step of the pass where the runs part, each with its partner in b."""
        a, b = self.traces
        pass_a = next(item for item in a.passes if item.index == difference.pass_index)
        steps_b = self._partner_steps(pass_a.index)
        pairs = align_nodes(a, b)
        places = []
        for step in pass_a.steps:
            node_b = pairs.get(step.node)
            here = step.index == difference.step_index
            places.append(Place(difference if here else None, step.node,
                                node_b if node_b in steps_b else None, pass_a.index,
                                step.index, steps_b.get(node_b)))
        return places

    def _start(self) -> int:
        for position, place in enumerate(self.places):
            if place.difference is not None:
                return position
        return 0

    @property
    def place(self) -> Place | None:
        return self.places[self.position] if self.places else None

    def move(self, offset: int) -> bool:
        """Step ``offset`` places (both sides together); False at either end."""
        target = self.position + offset
        if not 0 <= target < len(self.places):
            return False
        self.position = target
        return True

    # -- words -------------------------------------------------------------------------------
    def headline(self) -> str:
        """One line: agree, or where the runs part and where the user stands."""
        if self.result.same:
            return format_diff(self.result)
        if not self.places:
            return (f"the graphs differ: {self.result.only_a} nodes only in {self.names[0]}, "
                    f"{self.result.only_b} only in {self.names[1]}; no value differs in "
                    f"the {self.result.matched} paired")
        where = f"difference {self.position + 1} of {len(self.places)}" \
            if self.by_differences else \
            f"step {self.position + 1} of {len(self.places)}, both sides together"
        return format_diff(self.result).splitlines()[0] + f"\nshowing {where}"

    def side(self, which: int) -> list[str]:
        """The lines of side ``which`` (0: a, 1: b) at the current place."""
        place = self.place
        trace = self.traces[which]
        lines = [self.names[which]]
        if place is None:
            return lines
        node_id = place.node_a if which == 0 else place.node_b
        if node_id is None or node_id not in trace.nodes:
            return lines + ["(no partner step in this trace)"]
        node = trace.nodes[node_id]
        difference = place.difference
        step = place.step_index if which == 0 else place.step_b
        when = "forward" if place.pass_index is None else f"backward step {step}"
        lines.append(f"{node.name}  [{when}]")
        lines.append(f"at {site_line(node.site)}")
        if difference is None:
            # Not "no difference": a gradient gone wrong flows on, but diff_traces
            # reports only the first step where it shows.
            lines.append(f"(the runs part at step {self.differences[0].step_index})")
        else:
            lines.extend(self._difference_lines(difference, which))
        above = self._above(trace, node_id, place.pass_index is None)
        if above:
            lines.append("ops above:")
            lines.extend(f"  {item}" for item in above[:6])
        return lines

    def _difference_lines(self, difference: Difference, which: int) -> list[str]:
        lines = [f"{difference.what} differs"]
        if difference.shape_a is not None:
            shapes = (difference.shape_a, difference.shape_b)
            return lines + [f"shape {list(shapes[which])} (other: {list(shapes[1 - which])})"]
        values = (difference.value_a, difference.value_b)
        element = f"[{', '.join(map(str, difference.index))}]" if difference.index else ""
        what = "statistic" if difference.statistics_only else f"worst {element}".rstrip()
        lines.append(f"{what}: {values[which]!r}")
        lines.append(f"other: {values[1 - which]!r} (|diff| {difference.abs_diff:.3g})")
        lines.append(f"tolerance: {self.tolerance}")
        return lines

    @staticmethod
    def _above(trace: Trace, node_id: int, forward: bool) -> list[str]:
        if forward:
            node = trace.nodes[node_id]
            found = [describe_node(trace, trace.tensors[tensor].grad_fn)
                     for tensor in node.inputs if tensor is not None and tensor in trace.tensors
                     and trace.tensors[tensor].grad_fn is not None]
        else:
            found = [describe_node(trace, feeder)
                     for feeder in feeders(trace).get(node_id, ())]
        return list(dict.fromkeys(found))  # one line per op, however many edges it feeds


def dump_diff(a: Trace, b: Trace, names: tuple[str, str] = ("a", "b"),
              rtol: float | None = None, atol: float | None = None) -> str:
    """The side-by-side view at the place where the runs part, as plain text."""
    return view_text(DiffView(a, b, names=names, rtol=rtol, atol=atol))


def view_text(view: DiffView) -> str:
    """``view`` at its current place as plain text: the headline, the two sides in two
    columns, the graphs' unified diff when they differ."""
    lines = [view.headline(), ""]
    if view.places:
        left, right = view.side(0), view.side(1)
        width = max(len(line) for line in left)
        for row in range(max(len(left), len(right))):
            first = left[row] if row < len(left) else ""
            second = right[row] if row < len(right) else ""
            lines.append(f"{first:<{width}} | {second}".rstrip())
        lines.append("")
    if view.result.structure:
        lines.append("graphs differ (unified diff):")
        lines.extend("  " + line for line in view.result.structure.splitlines())
    return "\n".join(lines).rstrip() + "\n"
