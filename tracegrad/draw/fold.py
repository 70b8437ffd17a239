"""Graphs too large to lay out, made small enough to draw: repeated structure folded, or a
summary. Everything here is decided from node records alone -- no labels, no DOT -- so a
1,000,000-node trace is folded in seconds, before any layout is paid for.

Two kinds of repetition fold:

* a *run*: a chain of nodes, each the only consumer of the next (``x = x * w`` in a loop,
  an unrolled recurrence) -- one box "MulBackward0 ×999,998", which also takes in the leaf
  inputs only that chain uses;
* a *fan*: many input nodes of one node that have no inputs of their own, with one name
  (100,000 leaves stacked into one tensor) -- one box "AccumulateGrad ×100,000".

The folded graph is returned as a Trace (node records of the groups, edges, steps and
violations remapped onto them), so the planner draws it like any other.

>>> from tracegrad.tracing.model import NodeRecord, TensorRecord, Trace
>>> trace = Trace(tensors={0: TensorRecord(0, (3,), "float32", name="x")})
>>> trace.nodes[0] = NodeRecord(0, "AccumulateGrad", kind="accumulate", leaf=0)
>>> for i in range(1, 100):
...     trace.nodes[i] = NodeRecord(i, "MulBackward0", next=[(i - 1, 0)])
>>> folded = fold(trace, sorted(trace.nodes), None)
>>> [node.name for node in folded.trace.nodes.values()], folded.note
(['MulBackward0 ×99'], 'a chain of 100 nodes drawn as 1 box')
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass

from ..tracing.model import BackwardPass, NodeRecord, Step, TensorRecord, Trace

RUN_MIN = 4  # a chain this long or longer folds
FAN_MIN = 4  # this many same-named inputs without inputs of their own fold
FOLDED = "folded"  # NodeRecord.kind of a group box
FOLDED_LEAVES = "folded_leaves"  # a group of AccumulateGrad nodes (drawn as leaves)


@dataclass
class Folded:
    trace: Trace  # the graph with groups in place of their members
    note: str  # what was folded, for the picture's title and the command line
    boxes: int  # about how many boxes the planner will draw


def drawn_nodes(trace: Trace, pass_index: int | None) -> list[int]:
    """The node ids a picture of ``pass_index`` shows (every node when None)."""
    if pass_index is None or not trace.passes[pass_index].roots:
        return sorted(trace.nodes)
    roots = trace.passes[pass_index].roots
    pending = [trace.tensors[root].grad_fn for root in roots if root in trace.tensors]
    found: set[int] = set()
    nodes = trace.nodes
    while pending:
        node_id = pending.pop()
        if node_id is None or node_id in found or node_id not in nodes:
            continue
        found.add(node_id)
        for next_id, _ in nodes[node_id].next:
            pending.append(next_id)
    return sorted(found)


def estimate_boxes(trace: Trace, node_ids: list[int], show_saved: bool,
                   modules: bool = False) -> int:
    """About how many boxes a picture of ``node_ids`` has (one per nn.Module with
    ``modules``): node boxes, leaf boxes, saved tensors, outputs. Cheap: counts only."""
    nodes = trace.nodes
    module_names: set[str] = set()
    boxes = 0
    saved: set[int] = set()
    for node_id in node_ids:
        node = nodes[node_id]
        if modules and node.module and node.kind != "accumulate":
            module_names.add(node.module)
            continue
        boxes += 1
        if show_saved:
            for record in node.saved:
                saved.add(record.tensor)
    return boxes + len(module_names) + len(saved) + len(trace.violations) + 2


def fold(trace: Trace, node_ids: list[int], pass_index: int | None) -> Folded:
    """Fold runs and fans among ``node_ids``; the folded graph as a Trace."""
    return _Folder(trace, node_ids, pass_index).fold()


class _Folder:
    def __init__(self, trace: Trace, node_ids: list[int], pass_index: int | None) -> None:
        self.trace = trace
        self.pass_index = pass_index
        self.members = set(node_ids)
        nodes = trace.nodes
        # Distinct children inside the picture, in edge order (x * x has one child twice).
        self.children: dict[int, list[int]] = {}
        members = self.members
        children = self.children
        for node_id in node_ids:
            edges = nodes[node_id].next
            if len(edges) == 1:  # most nodes: no repeats to drop (speed: 1,000,000 nodes)
                child = edges[0][0]
                children[node_id] = [child] if child in members else []
            else:
                # dict.fromkeys keeps edge order and drops repeats in linear time (a node
                # can have 100,000 inputs)
                children[node_id] = list(dict.fromkeys(
                    next_id for next_id, _ in edges if next_id in members))
        self.parents: dict[int, list[int]] = {node_id: [] for node_id in node_ids}
        for node_id in node_ids:
            for child in self.children[node_id]:
                self.parents[child].append(node_id)
        self.group_of: dict[int, int] = {}  # member node id -> group id
        self.groups: dict[int, list[int]] = {}  # group id -> member node ids
        self.kinds: dict[int, str] = {}  # group id -> "run" or "fan"
        self._next_group = max(nodes, default=-1) + 1

    # -- finding groups ------------------------------------------------------------------
    def fold(self) -> Folded:
        childless = [node_id for node_id, children in self.children.items() if not children]
        self._find_runs(set(childless))
        self._absorb_or_fan(childless)
        folded = self._build()
        parts = []
        for kind, what in (("run", "chain"), ("fan", "fan of same-named inputs")):
            groups = [group for group, group_kind in self.kinds.items() if group_kind == kind]
            if groups:
                members = sum(len(self.groups[group]) for group in groups)
                many = len(groups) > 1
                parts.append(f"{len(groups) if many else 'a'} {what}{'s' if many else ''} of "
                             f"{members:,} nodes drawn as {len(groups)} box"
                             f"{'es' if many else ''}")
        note = "; ".join(parts) if parts else "no repeated structure to fold"
        return Folded(folded, note, estimate_boxes(folded, sorted(folded.nodes), True))

    def _new_group(self, kind: str, members: list[int]) -> int:
        group = self._next_group
        self._next_group += 1
        self.groups[group] = members
        self.kinds[group] = kind
        for member in members:
            self.group_of[member] = group
        return group

    def _find_runs(self, childless: set[int]) -> None:
        """Chains on the *spine* (nodes with inputs): a node continues the run of its only
        parent when it is that parent's only spine child. Each run is walked from its head;
        no sorting, one look at each node."""
        spine_child: dict[int, int] = {}  # spine node -> its only spine child, if only one
        for node_id, children in self.children.items():
            if node_id in childless:
                continue
            spine = [child for child in children if child not in childless]
            if len(spine) == 1:
                spine_child[node_id] = spine[0]
        parents = self.parents
        continuing = {child for child in spine_child.values() if len(parents[child]) == 1}
        for node_id in self.children:  # node id order: runs are found deterministically
            if node_id in childless or node_id in continuing:
                continue
            run = [node_id]
            child = spine_child.get(node_id)
            while child is not None and child in continuing:
                run.append(child)
                child = spine_child.get(child)
            if len(run) >= RUN_MIN:
                self._new_group("run", run)

    def _absorb_or_fan(self, childless: list[int]) -> None:
        """A node without inputs joins the run that alone uses it; otherwise same-named
        ones under one parent fold into a fan."""
        fans: dict[tuple[int, str], list[int]] = {}
        nodes = self.trace.nodes
        for node_id in childless:
            parents = self.parents[node_id]
            owners = {self.group_of.get(parent, -1 - parent) for parent in parents}
            if len(owners) == 1 and parents and parents[0] in self.group_of:
                group = self.group_of[parents[0]]
                self.groups[group].append(node_id)
                self.group_of[node_id] = group
            elif len(parents) == 1:
                fans.setdefault((parents[0], nodes[node_id].name), []).append(node_id)
        for members in fans.values():
            if len(members) >= FAN_MIN:
                self._new_group("fan", members)

    # -- the folded Trace ----------------------------------------------------------------
    def _build(self) -> Trace:
        trace = self.trace
        group_of = self.group_of
        nodes: dict[int, NodeRecord] = {}
        for node_id in sorted(self.members):
            if node_id in group_of:
                continue
            node = trace.nodes[node_id]
            if any(group_of.get(next_id) is not None for next_id, _ in node.next):
                node = dataclasses.replace(node, next=self._mapped_next(node))
            nodes[node_id] = node
        for group, members in self.groups.items():
            nodes[group] = self._group_record(group, members)
        tensors = dict(trace.tensors)
        passes = list(trace.passes)
        if self.pass_index is not None:
            backward = passes[self.pass_index]
            for root in backward.roots:
                record = tensors.get(root)
                if record is not None and record.grad_fn in group_of:
                    tensors[root] = dataclasses.replace(record, grad_fn=group_of[record.grad_fn])
            passes[self.pass_index] = self._folded_pass(backward, nodes)
        violations = [dataclasses.replace(violation, node=group_of[violation.node])
                      if violation.node in group_of else violation
                      for violation in trace.violations]
        metadata = dict(trace.metadata)
        metadata["folded"] = True
        return Trace(tensors=tensors, nodes=nodes, passes=passes, violations=violations,
                     exception=trace.exception, metadata=metadata)

    def _mapped_next(self, node: NodeRecord) -> list[tuple[int | None, int]]:
        """Edges with folded children replaced by their group, each group once."""
        result: list[tuple[int | None, int]] = []
        seen_groups: set[int] = set()
        for next_id, input_nr in node.next:
            group = self.group_of.get(next_id)
            if group is None:
                result.append((next_id, input_nr))
            elif group not in seen_groups:
                seen_groups.add(group)
                result.append((group, input_nr))
        return result

    def _group_record(self, group: int, members: list[int]) -> NodeRecord:
        trace = self.trace
        records = [trace.nodes[member] for member in members]
        # A chain is named by its ops; the leaves it took in are listed below the name.
        named = [record for record in records if record.kind != "accumulate"] or records
        names = Counter(record.name for record in named)
        if len(names) == 1:
            name = f"{named[0].name} ×{len(named):,}"
        else:
            top = ", ".join(f"{op} ×{count:,}" for op, count in names.most_common(3))
            name = f"{len(named):,} nodes: {top}" + (", ..." if len(names) > 3 else "")
        external: list[tuple[int | None, int]] = []
        seen: set[int] = set()
        for record in records:
            for next_id, input_nr in record.next:
                if next_id is None or next_id not in self.members:
                    continue
                target = self.group_of.get(next_id, next_id)
                if target != group and target not in seen:
                    seen.add(target)
                    external.append((target, input_nr))
        leaves = [trace.tensors[record.leaf] for record in records
                  if record.kind == "accumulate" and record.leaf in trace.tensors]
        attrs = {"folded": f"{len(records):,} nodes ({self.kinds[group]})"}
        if leaves:
            attrs["leaves"] = _leaf_names(leaves)
            shapes = {leaf.shape for leaf in leaves}
            if len(shapes) == 1:
                attrs["leaf shape"] = "(" + ", ".join(map(str, shapes.pop())) + ")"
        saved = saved_bytes = 0
        for record in records:  # one plain loop: a group can hold 1,000,000 nodes
            for saved_record in record.saved:
                saved += 1
                saved_bytes += saved_record.nbytes
        if saved:
            attrs["saved"] = f"{saved:,} tensors, {saved_bytes:,} B"
        modules = {record.module for record in records}
        kind = FOLDED_LEAVES if len(leaves) == len(records) else FOLDED
        head = records[0]
        return NodeRecord(group, name, kind=kind, outputs=list(head.outputs), next=external,
                          attrs=attrs, site=head.site,
                          module=modules.pop() if len(modules) == 1 else None)

    def _folded_pass(self, backward: BackwardPass, nodes: dict[int, NodeRecord]
                     ) -> BackwardPass:
        """The pass with the steps of folded nodes left out (their group's attrs say which
        steps ran) and gradients re-aligned with the kept nodes' remapped edges."""
        steps: list[Step] = []
        ranges: dict[int, list[int]] = {}
        for step in backward.steps:
            group = self.group_of.get(step.node)
            if group is not None:
                ranges.setdefault(group, []).append(step.index)
                continue
            node = self.trace.nodes.get(step.node)
            kept = nodes.get(step.node)
            if node is not None and kept is not None and kept is not node:
                step = dataclasses.replace(step, grads_out=self._mapped_grads(node, step))
            steps.append(step)
        for group, indices in ranges.items():
            nodes[group].attrs["steps"] = f"{min(indices)}-{max(indices)}"
        return dataclasses.replace(backward, steps=steps)

    def _mapped_grads(self, node: NodeRecord, step: Step) -> list:
        grads = []
        seen_groups: set[int] = set()
        for number, (next_id, _) in enumerate(node.next):
            grad = step.grads_out[number] if number < len(step.grads_out) else None
            group = self.group_of.get(next_id)
            if group is None:
                grads.append(grad)
            elif group not in seen_groups:
                seen_groups.add(group)
                grads.append(None)  # many gradients go into a group: none is "the" one
        return grads


def _leaf_names(leaves: list[TensorRecord]) -> str:
    names = [leaf.label for leaf in leaves]
    if len(names) <= 4:
        return ", ".join(names)
    return f"{names[0]}, {names[1]}, ..., {names[-1]}"


def summary_lines(trace: Trace, node_ids: list[int], pass_index: int | None) -> list[str]:
    """The text of a one-box summary, when even the folded graph is too large."""
    counts = Counter(trace.nodes[node_id].name for node_id in node_ids)
    which = f"backward pass {pass_index}" if pass_index is not None else "the trace"
    lines = [f"{len(node_ids):,} nodes in {which}, too many to draw", "nodes by op:"]
    lines += [f"  {name} ×{count:,}" for name, count in counts.most_common(12)]
    if len(counts) > 12:
        lines.append(f"  ... and {len(counts) - 12} more ops")
    return lines
