"""What the recorder keeps: whole arrays for the passes that matter, and structure within
a budget.

A *group* is what one backward pass brings to a trace: the forward ops recorded since the
previous pass ended, then the pass itself. Ids come from counters, so a group's nodes and
tensors are two contiguous id ranges.

Values. Arrays are captured for every group tentatively and released (statistics stay,
``Value.dropped == "pass"``) once it is certain the group is not kept. Kept are the first
and the last N user passes (``keep_passes``), every group with a finding (a violation, a
NaN/Inf, an error) and the group just before one -- within the values budget.

Structure. Records are counted at an estimated size (``*_BYTES``, measured with
tracemalloc on typical records). Past the structure budget, groups whose values were not
kept are summarized, gradcheck's probes first, then the oldest: the pass keeps its step
count and its steps per op, and the group's nodes and tensors are dropped, except those a
kept record, a violation or the live program still refers to. When nothing is left to
summarize the ledger *overflows*: the recorder only counts what runs until summarizing
makes room again, and the trace says so (``metadata``, ``summary()``).

>>> ledger = Ledger(keep_passes=(1, 1), structure_budget_bytes=1 << 20)
>>> ledger.start_pass("user", pass_index=0).user_ordinal
0
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field

from .model import ORIGIN_USER, BackwardPass, Trace, Value

DEFAULT_STRUCTURE_BUDGET_BYTES = 512 * 1024 * 1024

# Estimated bytes per record, with its lists, dicts and the builder's lookup entries
# (tracemalloc on a recorded chain and a training loop; tests/test_tracing_keep.py checks
# the estimate against tracemalloc).
NODE_BYTES = 800
TENSOR_BYTES = 550
STEP_BYTES = 300
VALUE_BYTES = 400  # a Value and its Stats; the arrays are the values budget's
PASS_BYTES = 600

# Forward ops may fill this share of the structure budget; the rest is room for the steps
# of the graph they built (a backward step costs about half what its forward op did).
FORWARD_SHARE = 0.6
# Leave overflow only once summarizing got the estimate this far under the budget, so a
# trace at the edge does not flip in and out of it every pass.
RESUME_SHARE = 0.8
CHECK_EVERY = 256  # records between two looks at the estimate (one look costs ~1 µs)

_PROTECT, _KEEP_UNDER_PRESSURE, _DROP = "protect", "keep under pressure", "drop"


@dataclass
class Group:
    """Bookkeeping for one group (see the module docstring)."""

    index: int
    node_start: int
    tensor_start: int
    node_end: int | None = None  # set when the group's pass ends
    tensor_end: int | None = None
    pass_index: int | None = None  # its pass in trace.passes, once the pass started
    origin: str | None = None  # of its pass
    user_ordinal: int | None = None  # 0 for the program's first own pass, ...
    violation: bool = False  # a new violation or an error happened in it
    nonfinite: bool = False  # a NaN/Inf was seen in it
    values: list[Value] = field(default_factory=list)  # arrays kept tentatively
    value_count: int = 0  # Values made in this group (kept or not), for the estimate
    step_count: int = 0
    summarized: bool = False

    @property
    def ended(self) -> bool:
        return self.node_end is not None


class Ledger:
    """Groups, the keep decisions, and the structure estimate of one recording."""

    def __init__(self, keep_passes: tuple[int, int] | None = (2, 2),
                 structure_budget_bytes: int = DEFAULT_STRUCTURE_BUDGET_BYTES) -> None:
        self.keep_passes = keep_passes
        self.limit_bytes = int(structure_budget_bytes)
        self.groups: list[Group] = [Group(0, 0, 0)]
        self.pending: list[int] = []  # ended groups whose arrays wait for a decision
        self.not_kept_user: deque[int] = deque()  # structure may be summarized, oldest first
        self.not_kept_probes: deque[int] = deque()  # gradcheck's: summarized before any other
        # Kept for a NaN/Inf that is not new (a loop gone NaN stays NaN): their values stay,
        # but under pressure their structure goes, after every group above.
        self.kept_nonfinite: deque[int] = deque()
        self.user_passes = 0
        self.steps_alive = 0
        self.values_alive = 0
        self.overflow = False  # recording counts only, the structure budget is used up
        self.overflowed = False  # overflow happened at least once
        self.unrecorded_ops: Counter[str] = Counter()
        self.summarized_passes = 0
        self.pinned_nodes: set[int] = set()
        self.pinned_tensors: set[int] = set()
        self.scanned_nodes = 0  # node ids below this were scanned for references
        self.scanned_tensors = 0
        self.scanned_passes = 0
        self.scanned_violations = 0
        self.pass_groups: dict[int, Group] = {}  # pass index -> its group

    @property
    def current(self) -> Group:
        return self.groups[-1]

    # -- passes and findings -------------------------------------------------------------
    def start_pass(self, origin: str, pass_index: int) -> Group:
        group = self.current
        group.pass_index, group.origin = pass_index, origin
        self.pass_groups[pass_index] = group
        if origin == ORIGIN_USER:
            group.user_ordinal = self.user_passes
            self.user_passes += 1
        return group

    def mark_finding(self, violation: bool) -> None:
        """A finding in the current group: a violation or an error (``violation``), or a
        NaN/Inf."""
        if violation:
            self.current.violation = True
        else:
            self.current.nonfinite = True

    def end_group(self, node_end: int, tensor_end: int) -> Group:
        """The current group's pass ended: close it and open the next one."""
        group = self.current
        group.node_end, group.tensor_end = node_end, tensor_end
        self.pending.append(group.index)
        self.groups.append(Group(group.index + 1, node_end, tensor_end))
        return group

    # -- values ------------------------------------------------------------------------
    def settle(self) -> list[Group]:
        """Decide every pending group that can be decided now; returns those not kept
        (their arrays are to be released). Kept groups forget their tentative list."""
        released = []
        still_pending = []
        for index in self.pending:
            group = self.groups[index]
            decision = self._decide(group)
            if decision is None:
                still_pending.append(index)
                continue
            if decision == _DROP:
                released.append(group)
                queue = self.not_kept_user if group.origin == ORIGIN_USER \
                    else self.not_kept_probes
                queue.append(index)
                continue
            group.values = []  # kept: nothing left to release
            if decision == _KEEP_UNDER_PRESSURE:
                self.kept_nonfinite.append(index)
        self.pending = still_pending
        return released

    def _decide(self, group: Group) -> str | None:
        """_PROTECT (keep its arrays and its structure), _KEEP_UNDER_PRESSURE (keep its
        arrays; its structure may go when nothing else can), _DROP (release its arrays),
        or None: not known yet."""
        following = self.groups[group.index + 1] if group.index + 1 < len(self.groups) \
            else None
        if group.violation or (following is not None and following.violation):
            return _PROTECT
        if following is None or not following.ended:
            return None  # the next pass may still bring a finding
        if self.keep_passes is not None and group.origin == ORIGIN_USER:
            first, last = self.keep_passes
            ordinal = group.user_ordinal if group.user_ordinal is not None else 0
            if ordinal < first:
                return _PROTECT
            if self.user_passes - 1 - ordinal < last:
                return None  # still among the last N user passes
        if group.nonfinite or following.nonfinite or self.keep_passes is None:
            return _KEEP_UNDER_PRESSURE
        return _DROP

    # -- structure -----------------------------------------------------------------------
    def estimate(self, trace: Trace) -> int:
        """Estimated bytes of the trace's structure (arrays excluded)."""
        return (NODE_BYTES * len(trace.nodes) + TENSOR_BYTES * len(trace.tensors)
                + STEP_BYTES * self.steps_alive + VALUE_BYTES * self.values_alive
                + PASS_BYTES * len(trace.passes))

    def over(self, trace: Trace, share: float = 1.0) -> bool:
        return self.estimate(trace) > share * self.limit_bytes

    def candidates(self) -> deque[int]:
        """The next group to summarize comes from the left of this queue."""
        for queue in (self.not_kept_probes, self.not_kept_user, self.kept_nonfinite):
            if queue:
                return queue
        return self.kept_nonfinite

    # -- references between groups --------------------------------------------------------
    def scan(self, trace: Trace, node_end: int, tensor_end: int) -> None:
        """Pin every record that a record made since the last scan refers to across a
        group boundary (a parameter used by every iteration, a node a later pass ran),
        so summarizing the older group keeps it. Each record is scanned once."""
        nodes, tensors = trace.nodes, trace.tensors
        pin_node, pin_tensor = self.pinned_nodes.add, self.pinned_tensors.add
        for node_id in range(self.scanned_nodes, node_end):
            node = nodes.get(node_id)
            if node is None:
                continue
            group = self._group_of(node_id, "node_start")
            node_floor, tensor_floor = group.node_start, group.tensor_start
            for next_id, _ in node.next:
                if next_id is not None and next_id < node_floor:
                    pin_node(next_id)
            for tensor_id in node.inputs:
                if tensor_id is not None and tensor_id < tensor_floor:
                    pin_tensor(tensor_id)
            for tensor_id in node.outputs:
                if tensor_id < tensor_floor:  # an in-place op made an older tensor its output
                    pin_tensor(tensor_id)
                    pin_node(node_id)
            for saved in node.saved:
                if saved.tensor < tensor_floor:
                    pin_tensor(saved.tensor)
            if node.leaf is not None and node.leaf < tensor_floor:
                pin_tensor(node.leaf)
        self.scanned_nodes = max(self.scanned_nodes, node_end)
        for tensor_id in range(self.scanned_tensors, tensor_end):
            record = tensors.get(tensor_id)
            if record is None or (record.base is None and record.grad_fn is None):
                continue
            group = self._group_of(tensor_id, "tensor_start")
            if record.base is not None and record.base < group.tensor_start:
                pin_tensor(record.base)
            if record.grad_fn is not None and record.grad_fn < group.node_start:
                pin_node(record.grad_fn)
        self.scanned_tensors = max(self.scanned_tensors, tensor_end)
        for backward_pass in trace.passes[self.scanned_passes:]:
            self._scan_pass(backward_pass)
        self.scanned_passes = len(trace.passes)
        for violation in trace.violations[self.scanned_violations:]:
            if violation.node is not None:
                pin_node(violation.node)
            if violation.tensor is not None:
                pin_tensor(violation.tensor)
        self.scanned_violations = len(trace.violations)

    def scan_current_pass(self, backward_pass: BackwardPass) -> None:
        """Pin what the running pass has touched so far (it is scanned again at its end)."""
        self._scan_pass(backward_pass)

    def _scan_pass(self, backward_pass: BackwardPass) -> None:
        group = self.pass_groups.get(backward_pass.index, self.current)
        for step in backward_pass.steps:
            if step.node < group.node_start:
                self.pinned_nodes.add(step.node)
            if step.accumulated is not None and step.accumulated < group.tensor_start:
                self.pinned_tensors.add(step.accumulated)
        for root in backward_pass.roots:
            if root < group.tensor_start:
                self.pinned_tensors.add(root)

    def _group_of(self, record_id: int, start: str) -> Group:
        """The group whose range (``start``: "node_start" or "tensor_start") holds the id:
        the last group starting at or before it (binary search; groups are in order)."""
        groups = self.groups
        low, high = 0, len(groups) - 1
        while low < high:
            middle = (low + high + 1) // 2
            if getattr(groups[middle], start) <= record_id:
                low = middle
            else:
                high = middle - 1
        return groups[low]

    def kept_in(self, trace: Trace, group: Group, live_nodes: set[int],
                live_tensors: set[int]) -> tuple[set[int], set[int]]:
        """The node and tensor ids of ``group`` that must stay when it is summarized:
        those pinned, alive in the program, or named by a violation, and everything
        they refer to inside the group."""
        nodes, tensors = trace.nodes, trace.tensors
        node_range = range(group.node_start, group.node_end)
        tensor_range = range(group.tensor_start, group.tensor_end)
        keep_nodes = {node_id for node_id in (self.pinned_nodes | live_nodes)
                      if node_id in node_range}
        keep_tensors = {tensor_id for tensor_id in (self.pinned_tensors | live_tensors)
                        if tensor_id in tensor_range}
        node_work, tensor_work = list(keep_nodes), list(keep_tensors)
        while node_work or tensor_work:
            while node_work:
                node = nodes.get(node_work.pop())
                if node is None:
                    continue
                for next_id, _ in node.next:
                    if next_id in node_range and next_id not in keep_nodes:
                        keep_nodes.add(next_id)
                        node_work.append(next_id)
                referenced = [*node.inputs, *node.outputs, node.leaf,
                              *(saved.tensor for saved in node.saved)]
                for tensor_id in referenced:
                    if tensor_id in tensor_range and tensor_id not in keep_tensors:
                        keep_tensors.add(tensor_id)
                        tensor_work.append(tensor_id)
            while tensor_work:
                record = tensors.get(tensor_work.pop())
                if record is None:
                    continue
                if record.grad_fn in node_range and record.grad_fn not in keep_nodes:
                    keep_nodes.add(record.grad_fn)
                    node_work.append(record.grad_fn)
                if record.base in tensor_range and record.base not in keep_tensors:
                    keep_tensors.add(record.base)
                    tensor_work.append(record.base)
        return keep_nodes, keep_tensors

    def metadata(self) -> dict:
        """What the trace's metadata says about the structure budget."""
        return {"structure_budget_bytes": self.limit_bytes,
                "summarized_passes": self.summarized_passes,
                "structure_over_budget": self.overflowed,
                "unrecorded_ops": dict(sorted(self.unrecorded_ops.items()))}


def summarize_pass(trace: Trace, backward_pass: BackwardPass) -> None:
    """Replace a pass's steps by their count and their count per op."""
    if backward_pass.summarized:
        return
    counts = Counter(trace.nodes[step.node].name if step.node in trace.nodes else "?"
                     for step in backward_pass.steps)
    backward_pass.summarized = True
    backward_pass.values_captured = False
    backward_pass.summarized_steps = len(backward_pass.steps)
    backward_pass.op_counts = dict(sorted(counts.items()))
    backward_pass.steps = []
    backward_pass.roots = []
