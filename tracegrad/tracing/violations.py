"""Finding what the user should fix, each finding with the sites that explain it.

In-place modification of a saved tensor is caught the moment it happens: every tensor a
recorded node saves is watched through its version counter (shared with views), and an
in-place op that moves a watched counter past the saved version is reported right there,
naming the saving node and the in-place op, each with its line.

>>> import tracegrad
>>> x = tracegrad.ones(2, requires_grad=True)
>>> with tracegrad.record() as tr:
...     y = x * 1
...     z = y * y
...     _ = y.add_(1)
>>> [(v.kind, v.saved_version, v.current_version) for v in tr.violations]
[('inplace_saved', 0, 1)]
"""

from __future__ import annotations

from ..autograd.node import SavedTensor, VersionCounter, changes_since
from ..tensor import Tensor
from .graph import GraphBuilder, _reference, saved_values
from .model import BackwardPass, NodeRecord, Site, Step, TensorRecord, Trace, Violation
from .nonfinite import explain
from .text import violation_message


class ViolationFinder:
    """Appends Violations to ``trace.violations``; keeps the watch on saved tensors."""

    def __init__(self, trace: Trace, builder: GraphBuilder) -> None:
        self.trace = trace
        self.builder = builder
        # id(counter) -> (counter, [(entry of node, slot, node id)]). The counter itself is
        # held, so its id cannot be reused while it is watched.
        self._watched: dict[int, tuple[object, list]] = {}
        # The builder's entries (weak references that know the node's id: see
        # graph._Seen) of recorded nodes that saved tensors, not yet in _watched:
        # registering a node's slots waits for the first question about the watches (an
        # in-place change, the end of a pass). Every saving op is recorded, few programs
        # change anything in place: the op pays one append, and no object of its own (a
        # reference and a tuple per op were two more for the garbage collector to track).
        self._unwatched: list = []
        self._reported: set = set()

    def _add(self, key, violation: Violation) -> Violation | None:
        """Append ``violation`` unless one with the same key was reported already (a loop
        repeats the same mistake on every iteration; one finding says it). Its message is
        written from its fields (and again once tensors are named: ``describe_violations``).
        """
        if key in self._reported:
            return None
        self._reported.add(key)
        self.trace.violations.append(violation)
        violation.message = violation_message(self.trace, violation)
        return violation

    # -- in-place on a saved tensor ----------------------------------------------------
    def watch_saved(self, node, node_id: int) -> None:
        """Watch the tensors ``node`` (recorded as ``node_id``) saved (registered when
        first needed: see _unwatched; a node that dies before then has nothing left to
        watch)."""
        if saved_values(node):  # (not node._saved: see saved_values)
            entry = self.builder._node_ids.get(id(node))
            if entry is None or entry() is not node or entry.id != node_id:
                entry = _reference(node, node_id)
            self._unwatched.append(entry)

    def _register_unwatched(self, live_only: bool = False) -> None:
        """Watch the saved slots of the nodes waiting in _unwatched (``live_only``: only
        the slots backward has not freed, as prune keeps them)."""
        pending = self._unwatched
        self._unwatched = []
        watched = self._watched
        for reference in pending:
            node = reference()
            if node is None:
                continue
            node_id = reference.id
            # The slots as the engine keeps them (saved_values): reading ``node._saved``
            # builds a tuple per read and makes a kept input's SavedTensor, for nodes
            # whose slots backward freed already (every node of a pass, at prune).
            slots = saved_values(node)
            if Tensor in map(type, slots):
                slots = node._saved  # a kept input: watched through its SavedTensor
            for slot, saved in enumerate(slots):
                if not isinstance(saved, SavedTensor) or live_only and saved._array is None:
                    continue
                counter = _watch_group(saved)
                if counter is None:
                    continue
                entry = watched.get(id(counter))
                if entry is None:
                    entry = watched[id(counter)] = (counter, [])
                entry[1].append((reference, slot, node_id))

    def is_watched(self, tensor) -> bool:
        if self._unwatched:
            self._register_unwatched()
        counter = tensor._version_counter
        return counter is not None and id(counter) in self._watched

    def inplace_on_saved(self, tensor, tensor_id: int, op_name: str, site) -> None:
        if self._unwatched:
            self._register_unwatched()
        counter = tensor._version_counter
        entry = self._watched.get(id(counter))
        if entry is None:
            return
        for reference, slot, node_id in entry[1]:
            node = reference()
            if node is None:
                continue
            saved = node._saved[slot]
            if saved._array is None or saved.version == saved.counter.value:
                continue  # freed by an earlier backward, or saved after this change
            self._report_inplace(node, node_id, slot, saved, tensor_id, op_name, site,
                                 phase="forward")

    def _report_inplace(self, node, node_id, slot, saved, tensor_id, op_name, site,
                        phase: str) -> Violation | None:
        node_record: NodeRecord = self.trace.nodes[node_id]
        # One finding per (node, tensor): ``y * y`` saves y twice but it is one mistake.
        return self._add(("inplace_saved", node_id, tensor_id), Violation(
            kind="inplace_saved", message="", tensor=tensor_id, node=node_id,
            site=site, other_site=node_record.site, saved_version=int(saved.version),
            current_version=int(saved.counter.value), phase=phase, op=op_name))

    def prune(self) -> None:
        """Forget watches whose node is gone or whose saved tensors were freed."""
        if self._unwatched:
            self._register_unwatched(live_only=True)
        for key in list(self._watched):
            counter, entries = self._watched[key]
            alive = [entry for entry in entries
                     if (node := entry[0]()) is not None and node._saved[entry[1]]._array
                     is not None]
            if alive:
                self._watched[key] = (counter, alive)
            else:
                del self._watched[key]

    # -- in-place on a leaf --------------------------------------------------------------
    def inplace_leaf(self, tensor, tensor_id: int, op_name: str, site) -> None:
        record = self.trace.tensors[tensor_id]
        self._add(("inplace_leaf", tensor_id, _site_key(site)), Violation(
            kind="inplace_leaf", message="", tensor=tensor_id, site=site,
            other_site=record.site, current_version=int(tensor._version), op=op_name))

    # -- NaN / Inf -----------------------------------------------------------------------
    def nonfinite_forward(self, node_record: NodeRecord, tensor, record: TensorRecord,
                          inputs=(), from_nonfinite: bool = False) -> None:
        """The first NaN/Inf of ``node_record``'s output (``from_nonfinite``: the first NaN,
        its inputs already holding Inf); ``inputs`` are the live input tensors, in the
        order of ``node_record.inputs``, whose values explain it."""
        kind = "nan" if from_nonfinite else _nonfinite_kind(tensor._array)
        site = node_record.site
        violation = self._add((kind, "forward", _site_key(site), node_record.name), Violation(
            kind=kind, message="", tensor=record.id, node=node_record.id, site=site,
            phase="forward", from_nonfinite=from_nonfinite))
        if violation is None:
            return
        # (an in-place op passes None for the changed tensor: its old value is gone)
        live = {tensor_id: arg._array for arg, tensor_id in zip(inputs, node_record.inputs)
                if arg is not None and tensor_id is not None}
        explain(self.trace, violation, live)
        violation.message = violation_message(self.trace, violation)

    def nonfinite_backward(self, backward_pass: BackwardPass, step: Step, node,
                           edge_index: int, grad, grads_in=(),
                           from_nonfinite: bool = False) -> None:
        kind = "nan" if from_nonfinite else _nonfinite_kind(grad._array)
        node_record = self.trace.nodes[step.node]
        site = node_record.site
        violation = self._add((kind, "backward", _site_key(site), node_record.name), Violation(
            kind=kind, message="", node=node_record.id, site=site, phase="backward",
            pass_index=backward_pass.index, step_index=step.index, input_nr=edge_index,
            from_nonfinite=from_nonfinite))
        if violation is None:
            return
        explain(self.trace, violation, self._live_saved(node, node_record.id),
                tuple(getattr(grad_in, "_array", None) for grad_in in grads_in))
        violation.message = violation_message(self.trace, violation)

    def _live_saved(self, node, node_id: int) -> dict:
        """tensor id -> the array a node saved, while backward still holds it."""
        live = {}
        for saved in node._saved:
            if not isinstance(saved, SavedTensor) or saved._array is None:
                continue
            if saved.is_output:
                tensor_id = self.builder.output_tensor(node_id, saved.output_nr)
            else:
                source = saved.source_tensor()
                tensor_id = self.builder.known_tensor(source) if source is not None else None
            if tensor_id is None:
                continue
            # A torch saved tensor (the bridge) holds a stand-in: ask for its values.
            array = saved._array if type(saved) is SavedTensor else saved.host_values()
            if array is not None:
                live[tensor_id] = array
        return live

    # -- failures in backward ------------------------------------------------------------
    def backward_failed(self, error, node, backward_pass: BackwardPass | None,
                        engine_passes: dict) -> None:
        node_id = self.builder.node_id(node)
        node_record = self.trace.nodes[node_id]
        pass_index = backward_pass.index if backward_pass is not None else None
        step_index = backward_pass.steps[-1].index if backward_pass and backward_pass.steps \
            else None
        freed_by = node._freed_by
        if freed_by is not None and any(isinstance(saved, SavedTensor) and saved._array is None
                                        for saved in node._saved):
            earlier = engine_passes.get(freed_by)
            self._add(("freed_graph", node_id, pass_index), Violation(
                kind="freed_graph", message="", node=node_id,
                site=backward_pass.site if backward_pass else None,
                other_site=node_record.site, phase="backward", pass_index=earlier,
                step_index=step_index))
            return
        for slot, saved in enumerate(node._saved):
            if not isinstance(saved, SavedTensor) or saved._array is None:
                continue
            if saved.counter.value != saved.version:
                source = saved.source_tensor()
                tensor_id = self.builder.tensor_id(source) if source is not None else None
                changes, complete = changes_since(saved.counter.history, saved.version)
                # the first change after the save, when it is still known: else no line
                op_name, site = changes[0][1:] if changes and complete \
                    else (saved.counter.last_op or "?", None)
                violation = self._report_inplace(node, node_id, slot, saved, tensor_id,
                                                 op_name, site, phase="backward")
                if violation is not None:
                    violation.pass_index = pass_index
                    violation.step_index = step_index


def _watch_group(saved):
    """What in-place changes of a saved tensor come through: its version counter, shared
    with its views; a torch saved tensor (the bridge) names the group of its storage."""
    counter = saved.counter
    return counter if type(counter) is VersionCounter else counter.group


def first_nan(output, inputs) -> bool:
    """Whether ``output`` holds a NaN that none of ``inputs`` (tensors or None) held: the
    first NaN, made from values that were only Inf (rare path: after a finite check)."""
    from .. import backends

    xp = backends.array_module(output)
    if not bool(xp.isnan(output).any()):
        return False
    for tensor in inputs:
        data = getattr(tensor, "_array", None)
        if data is not None and data.dtype.kind in "fc" and bool(
                backends.array_module(data).isnan(data).any()):
            return False
    return True


def _nonfinite_kind(data) -> str:
    from .. import backends

    xp = backends.array_module(data)
    return "nan" if bool(xp.isnan(data).any()) else "inf"


def _site_key(site: Site | None):
    return (site.file, site.line) if site is not None else None
