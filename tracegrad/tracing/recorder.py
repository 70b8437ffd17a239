"""The recorder: listens to the engine's events and builds a Trace as the program runs.

>>> import tracegrad
>>> w = tracegrad.ones(2, requires_grad=True)
>>> with tracegrad.record() as tr:
...     loss = (w * 3).sum()
...     loss.backward()
>>> [tr.node(step.node).name for step in tr.passes[0].steps]
['SumBackward0', 'MulBackward0', 'AccumulateGrad']
>>> tr.tensor(tr.passes[0].roots[0]).name
'loss'

Threads: a recording records the thread that started it. What other threads do meanwhile
(their ops, backward passes, hooks) is ignored with one thread-id check at each event, so
the recorder never touches their tensors or disturbs them (they still pay for the source
line each op looks up while any recorder listens). Record in the thread whose work you want
to see; one recorder per thread works too.
"""

from __future__ import annotations

import sys
import threading
import traceback as traceback_module

from .. import __version__, bridge
from ..autograd import events, module_scope
from ..autograd.engine import _BUILT_IN_NODES
from ..autograd.events import _as_tensors
from ..autograd.site import _is_internal, event_frame, user_site, want_event_frames
from ..tensor import Tensor
from .flows import FlowEvents, remember_torch_tensors
from .graph import GraphBuilder, name_unnamed, saved_values, shown_name, variable_key
from .keep import (
    CHECK_EVERY,
    DEFAULT_STRUCTURE_BUDGET_BYTES,
    FORWARD_SHARE,
    RESUME_SHARE,
    Ledger,
    summarize_pass,
)
from .model import (
    DROPPED_PASS,
    NO_ITEMS,
    ORIGIN_GRADCHECK,
    ORIGIN_USER,
    BackwardPass,
    ExceptionRecord,
    HookRecord,
    Step,
    Trace,
    Value,
    VersionChange,
    Violation,
    _nones,
    nones,
)
from .names import names_in_frame, user_frame
from .nonfinite import name_cause_inputs, note_masks
from .text import describe_violations, site_inline
from .values import DEFAULT_BUDGET_BYTES, ValueBudget, is_finite, value_is_finite
from .violations import ViolationFinder, first_nan

_MAX_PENDING_FRAMES = 8
# The functions whose backward passes are gradcheck's probes (one pass per output element).
_GRADCHECK_MODULES = frozenset({"tracegrad.autograd.gradcheck", "tracegrad.testing.gradcheck"})
_GRADCHECK_FUNCTIONS = frozenset({"gradcheck", "gradgradcheck", "locate_wrong_nodes"})
_get_ident = threading.get_ident
_shared_nones = _nones.get  # (model.nones without its call: a step's gradients, no values)


def record(values: bool = True, budget_bytes: int | None = None,
           keep_passes: tuple[int, int] | None = (2, 2),
           structure_budget_bytes: int | None = None) -> Recorder:
    """Start recording: ``with tracegrad.record() as tr:`` gives the Trace being built.

    values       capture forward values and gradients (False: structure only)
    budget_bytes memory for whole arrays (default 256 MiB); beyond it, statistics only
    keep_passes  (first, last): keep values for the first and last N passes the program
                 started (and the forward before each), and for every pass with a
                 violation, NaN/Inf or error and the pass before it; the others keep
                 statistics only. None keeps values for every pass (within the budget).
    structure_budget_bytes  memory for nodes, tensors and steps (default 512 MiB); beyond
                 it, passes whose values were not kept are summarized (steps counted per
                 op), then ops are only counted; the trace says so.
    """
    return Recorder(values=values, budget_bytes=budget_bytes, keep_passes=keep_passes,
                    structure_budget_bytes=structure_budget_bytes)


class Recorder(FlowEvents, events.Listener):
    """An events listener that fills ``self.trace``; a context manager around that."""

    def __init__(self, values: bool = True, budget_bytes: int | None = None,
                 keep_passes: tuple[int, int] | None = (2, 2),
                 structure_budget_bytes: int | None = None) -> None:
        if budget_bytes is None:
            budget_bytes = DEFAULT_BUDGET_BYTES
        if structure_budget_bytes is None:
            structure_budget_bytes = DEFAULT_STRUCTURE_BUDGET_BYTES
        if int(budget_bytes) < 0 or int(structure_budget_bytes) < 0:
            raise ValueError(
                f"tracegrad.record: budgets must be byte counts >= 0, got budget_bytes="
                f"{budget_bytes}, structure_budget_bytes={structure_budget_bytes}. Hint: "
                "budget_bytes=256 * 2**20.")
        if keep_passes is not None:
            keep_passes = (int(keep_passes[0]), int(keep_passes[1]))
            if min(keep_passes) < 0:
                raise ValueError(
                    f"tracegrad.record: keep_passes must be two counts >= 0 (first, last), "
                    f"got {keep_passes}. Hint: keep_passes=(2, 2).")
        self.values = bool(values)
        self.keep_passes = keep_passes
        self.trace = Trace(metadata={
            "tracegrad_version": __version__, "values": self.values,
            "budget_bytes": int(budget_bytes),
            "keep_passes": list(keep_passes) if keep_passes is not None else None,
            "summarized_values": 0, "timings": True,
            "structure_budget_bytes": int(structure_budget_bytes)})
        self.builder = GraphBuilder(self.trace)
        self.budget = ValueBudget(budget_bytes)
        self.violations = ViolationFinder(self.trace, self.builder)
        # Forward values belong to the group of the backward pass that follows them.
        self.ledger = Ledger(keep_passes, structure_budget_bytes)
        self._next_check = CHECK_EVERY  # node id at which on_op looks at the estimate again
        self._next_step_check = CHECK_EVERY  # the same for steps
        self._engine_passes: dict[int, int] = {}  # engine pass index -> trace pass index
        self._pass: BackwardPass | None = None
        self._step: Step | None = None
        self._step_node = None
        self._step_grads_in: tuple = ()  # the live gradients of the running step
        self._step_tensors = True  # whether they are Tensors (else arrays: see
        # on_node_start_arrays)
        self._finite_out: list | tuple = ()  # arrays the last step handed on, found finite
        self._pending_hooks: dict[int, list[HookRecord]] = {}
        self._pass_gradients: dict[int, tuple] = {}  # id(array) -> (array, Value), one pass
        self._looked_up: set[int] = set()  # tensor ids whose variable name was searched
        # user frame -> [builder entries of tensors] waiting for a search of its variables
        self._unnamed: dict = {}
        self._subscription = None
        self._thread = threading.get_ident()  # the thread recorded (set again by start)
        self._torch = None  # the PyTorch bridge, armed while recording
        self._init_flows()
        self.trace._builder = self.builder  # why_no_grad(tensor) finds a live tensor's id

    # -- the context manager -----------------------------------------------------------
    def __enter__(self) -> Trace:
        self.start()
        return self.trace

    def __exit__(self, exc_type, exc, tb) -> None:
        self.stop(user_frame(1), exc)

    def start(self) -> None:
        if self._subscription is None:
            self.builder.trace = self.trace  # (let go by stop: see _compact)
            self._thread = threading.get_ident()
            self._subscription = events.subscribe(self)
            want_event_frames(True)
            # A program on real torch is observed too: now, or when it imports torch.
            self._torch = bridge.attach()

    def stop(self, frame=None, exc: BaseException | None = None, scopes=()) -> Trace:
        """Unsubscribe, name what can be named (after the variables of ``frame`` or of
        ``scopes``), and record ``exc``, the exception that ended the program, if any."""
        if self._torch is not None:
            if bridge._session is not None and bridge._session.emitted:
                # the adapters go with the bridge's session: keep torch tensor -> id
                remember_torch_tensors(self.trace, self.builder)
            self._torch.detach()
            if self._torch.used:
                self.trace.metadata["engine"] = "torch"
            self._torch = None
        if self._subscription is not None:
            self._subscription.remove()
            self._subscription = None
            want_event_frames(False)
        if "engine" not in self.trace.metadata and (self.trace.nodes or self.trace.passes):
            self.trace.metadata["engine"] = "tracegrad"
        if exc is not None and self.trace.exception is None:
            self.trace.exception = exception_record(exc)
        self._flush_names()
        name_unnamed(self.trace, self.builder, frame, scopes)
        name_cause_inputs(self.trace)
        note_masks(self.trace)
        describe_violations(self.trace)
        self.trace.metadata["summarized_values"] = self.budget.summarized
        self.trace.metadata.update(self.ledger.metadata())
        self._note_module_classes()
        self._compact()
        return self.trace

    def _compact(self) -> None:
        """Let go of what only the objects that died needed (lookups by identity, the
        tensors whose names were searched): a finished trace keeps its records and little
        else (bench/bench_trace.py (c) measures it)."""
        self.builder.compact()
        live = {entry.id for entry in self.builder._tensor_ids.values()}
        self._looked_up = {tensor_id for tensor_id in self._looked_up if tensor_id in live}
        # The trace keeps the builder (trace._builder: why_no_grad finds live tensors by
        # it); the builder letting go of the trace leaves no reference cycle, so a trace
        # nobody holds is freed at once, not by the next full garbage collection (which
        # costs time in proportion to everything alive, dead traces included).
        self.builder.trace = None

    def name_pending(self) -> None:
        """Name the tensors recorded so far after the user's variables now, as ``stop()``
        does at the end: an assertion made while the recording goes on (the pytest fixture)
        then says 'h', as ``tracegrad check`` does, not a placeholder."""
        self._flush_names()
        describe_violations(self.trace)

    def _note_module_classes(self) -> None:
        """``{"0": "Linear", ...}`` for the module scopes of recorded nodes (pictures label
        a scope "0: Linear")."""
        scopes = sorted({node.module for node in self.trace.nodes.values() if node.module})
        classes = {scope: module_scope.class_of(scope) for scope in scopes}
        classes = {scope: name for scope, name in classes.items() if name is not None}
        if classes:
            self.trace.metadata["module_classes"] = classes

    # -- capture policy ----------------------------------------------------------------
    def _capture(self, data, like: Value | None = None) -> Value | None:
        """A Value of ``data`` for the current group: arrays are kept tentatively and
        released when the group turns out not to be kept (see keep.py). ``like``: see
        ValueBudget.capture."""
        if not self.values:
            return None
        group = self.ledger.groups[-1]
        value = self.budget.capture(data, True, like)
        group.value_count += 1
        self.ledger.values_alive += 1
        if value.array is not None and self.keep_passes is not None:
            group.values.append(value)
        return value

    def _note_finding(self, violation: bool = True) -> None:
        """The current group holds a violation or an error (``violation``), or a NaN/Inf:
        keep its values and the previous group's (see keep.py)."""
        self.ledger.mark_finding(violation)

    def _end_group(self) -> None:
        """A pass ended: decide which groups keep their arrays, and summarize structure
        while over the structure budget."""
        builder, ledger = self.builder, self.ledger
        ledger.end_group(builder._next_node_id, builder._next_tensor_id)
        for group in ledger.settle():
            for value in group.values:
                self.budget.release(value, DROPPED_PASS)
            group.values = []
            if group.pass_index is not None:
                self.trace.passes[group.pass_index].values_captured = False
        self._make_room()
        if ledger.overflow and not ledger.over(self.trace, RESUME_SHARE):
            ledger.overflow = False

    def _make_room(self, share: float = 1.0) -> bool:
        """Summarize groups whose values were not kept while the structure estimate is over
        ``share`` of its budget; False when that was not enough (overflow)."""
        ledger, trace = self.ledger, self.trace
        if not ledger.over(trace, share):
            return True
        candidates = ledger.candidates()
        if not candidates:
            return False
        builder = self.builder
        ledger.scan(trace, builder._next_node_id, builder._next_tensor_id)
        if self._pass is not None:
            ledger.scan_current_pass(self._pass)
        live_nodes, live_tensors = builder.live_ids()
        while ledger.over(trace, share * RESUME_SHARE):
            candidates = ledger.candidates()
            if not candidates:
                break
            self._summarize_group(ledger.groups[candidates.popleft()], live_nodes,
                                  live_tensors)
        return not ledger.over(trace, share)

    def _summarize_group(self, group, live_nodes: set[int], live_tensors: set[int]) -> None:
        """Count a group's steps per op and drop its records (keeping what others refer
        to), giving their arrays back to the values budget."""
        trace, ledger, release = self.trace, self.ledger, self.budget.release
        if group.pass_index is not None:
            backward_pass = trace.passes[group.pass_index]
            for step in backward_pass.steps:
                for value in (*step.grads_in, *step.grads_out, step.grad_after):
                    release(value)
            summarize_pass(trace, backward_pass)
        keep_nodes, keep_tensors = ledger.kept_in(trace, group, live_nodes, live_tensors)
        output_keys = []
        for node_id in range(group.node_start, group.node_end):
            if node_id in keep_nodes:
                continue
            node = trace.nodes.pop(node_id, None)
            if node is not None:
                output_keys.extend((node_id, trace.tensors[tensor_id].output_nr)
                                   for tensor_id in node.outputs if tensor_id in trace.tensors)
        looked_up = self._looked_up
        for tensor_id in range(group.tensor_start, group.tensor_end):
            if tensor_id in keep_tensors:
                continue
            record = trace.tensors.pop(tensor_id, None)
            if record is not None:
                looked_up.discard(tensor_id)
                release(record.value)
                release(record.grad)
        self.builder.forget_outputs(output_keys)
        ledger.steps_alive -= group.step_count
        ledger.values_alive -= group.value_count
        group.step_count = group.value_count = 0
        group.summarized = True
        ledger.summarized_passes += 1

    def _check_structure(self, forward: bool) -> bool:
        """Whether there is room for more structure (summarizing first if needed); past it
        the recorder overflows: it counts what runs instead of recording it."""
        self._next_check = self.builder._next_node_id + CHECK_EVERY
        ledger = self.ledger
        if self._make_room(FORWARD_SHARE if forward else 1.0):
            return True
        ledger.overflow = ledger.overflowed = True
        return False

    # -- forward events ----------------------------------------------------------------
    def on_op(self, node, args, outputs) -> None:
        if _get_ident() != self._thread:
            return  # another thread's event: see the module docstring
        # The user's frame the engine found for the op's site (site.event_site), taken
        # first, whatever happens next: a later event must not find it.
        frame = event_frame.frame
        if frame is not None:
            event_frame.frame = None
        builder = self.builder
        ledger = self.ledger
        # Checked before recording, so the previous op's in-place rewrite is complete; the
        # first test is one comparison, what every op pays.
        if (ledger.overflowed or builder._next_node_id >= self._next_check) and (
                ledger.overflow or not self._room_for_op(args)):
            self._count_op(node, args, outputs)
            return
        if len(args) == 2 and args[0].__class__ is Tensor and args[1].__class__ is Tensor:
            inputs = args  # a binary op on two tensors, the usual case: no list to make
        else:
            inputs = [arg for arg in args if isinstance(arg, Tensor)]
        pending = self._pending
        if pending:  # an input that came out of a flow: recorded with it, first
            for tensor in inputs:
                if id(tensor) in pending:  # (materialize's own test, inline)
                    self.materialize(tensor)
        before = builder._next_tensor_id
        record = builder.record_op(node, inputs, outputs)
        tensors = self.trace.tensors
        values = self.values
        if values and builder._next_tensor_id != before:
            for tensor, tensor_id in zip(inputs, record.inputs):
                if tensor_id >= before and tensors[tensor_id].value is None:
                    tensors[tensor_id].value = self._capture(tensor._array)  # a leaf
        tainted = self._tainted
        site = node._site
        output_ids = record.outputs
        for index, tensor in enumerate(outputs if len(outputs) == len(output_ids) else
                                       [out for out in outputs if out is not None]):
            tensor_id = output_ids[index]
            tensor_record = tensors[tensor_id]
            if not (tensor._requires_grad or tensor.requires_grad):  # an integer output
                # (the property: a torch tensor's adapter): the gradient stops here
                tainted.add(tensor_id)
            elif tainted and tensor_id in tainted:  # first seen as a flow's result (an op
                # inside a custom Function's forward): it is the Function's output now
                tainted.discard(tensor_id)
                tensor_record.requires_grad = True
                tensor_record.site = None
            if tensor_record.site is None:
                tensor_record.site = site
            data = tensor._array
            if values:
                value = tensor_record.value = self._capture(data)
                finite = value_is_finite(value, data)
            else:
                if tensor_record.value is not None:  # (a new record has none)
                    tensor_record.value = None
                finite = is_finite(data)
            if not finite:
                # Inputs are checked only now, in the rare case: report where non-finite
                # values first appear, not every op they flow through.
                found = len(self.trace.violations)
                if all(is_finite(arg._array) for arg in inputs):
                    self.violations.nonfinite_forward(record, tensor, tensor_record, inputs)
                elif first_nan(tensor._array, inputs):  # the first NaN, made from Inf
                    self.violations.nonfinite_forward(record, tensor, tensor_record, inputs,
                                                      from_nonfinite=True)
                self._note_finding(len(self.trace.violations) != found)
        if record.saved:  # it saved tensors (the usual answer): watch_saved, inline --
            # the builder's entry of the node just recorded is what the watch keeps
            self.violations._unwatched.append(builder._node_ids[id(node)])
        elif saved_values(node):
            self.violations.watch_saved(node, record.id)
        self._note_names(inputs, record.inputs, frame)

    def _room_for_op(self, args) -> bool:
        """Whether this op is recorded: there is room in the structure budget, and (after
        an overflow) its inputs come from recorded nodes, not from the part of the graph
        that was only counted (recording it would walk that part, unbounded)."""
        if self.builder._next_node_id >= self._next_check and not self._check_structure(True):
            return False
        if self.ledger.overflowed:
            known_node = self.builder.known_node
            for arg in args:
                grad_fn = getattr(arg, "grad_fn", None)
                if grad_fn is not None and known_node(grad_fn) is None:
                    return False
        return True

    def _count_op(self, node, args, outputs) -> None:
        """Over the structure budget: count the op, and still find where NaN/Inf appear."""
        counts = self.ledger.unrecorded_ops
        name = shown_name(node)
        counts[name] = counts.get(name, 0) + 1
        for output in outputs:
            if output is not None and not is_finite(output._array):
                inputs = [arg for arg in args if isinstance(arg, Tensor)]
                new = all(is_finite(arg._array) for arg in inputs) and \
                    self._unrecorded_nonfinite(name, node._site, output._array, "forward")
                self._note_finding(bool(new))
                break

    def _unrecorded_nonfinite(self, node_name: str, site, data, phase: str) -> bool:
        """A NaN/Inf finding for an op or step counted but not recorded (no node record);
        whether it is new."""
        from .violations import _nonfinite_kind, _site_key

        kind = _nonfinite_kind(data)
        what = "NaN" if kind == "nan" else "Inf"
        made = "produced a non-finite value from finite inputs" if phase == "forward" \
            else "returned a non-finite gradient from finite incoming gradients"
        message = (
            f"{what} first appeared in {phase}: {node_name} at {site_inline(site)} {made} (the "
            "trace was over its structure budget here, so this op is counted, not "
            "recorded). Hint: record(structure_budget_bytes=...) keeps more structure.")
        return self.violations._add((kind, phase, _site_key(site), node_name), Violation(
            kind=kind, message=message, site=site, phase=phase,
            pass_index=self._pass.index if self._pass is not None else None)) is not None

    # -- names -------------------------------------------------------------------------
    def _note_names(self, tensors, tensor_ids, frame=None) -> None:
        """Queue unnamed tensors for a search of the user's variables.

        The search runs once per batch -- when backward starts, and at the end -- instead of
        once per op: a loop body's variables (h, y_pred, loss) are still bound when its
        backward starts, and scanning a frame costs more than recording an op. Tensors are
        queued per user frame (a custom Function's forward is a frame of its own, and ops
        alternate between it and the loop); at most _MAX_PENDING_FRAMES frames wait, so a
        long forward-only program does not keep every finished frame alive. ``frame``:
        the user's frame when the caller knows it (the engine found it for the op's site).
        """
        looked_up = self._looked_up
        new = None
        tensor_records = self.trace.tensors
        for tensor, tensor_id in zip(tensors, tensor_ids):
            if tensor_id is None or tensor_id in looked_up:
                continue
            looked_up.add(tensor_id)
            record = tensor_records.get(tensor_id)
            if record is None:
                continue
            name = tensor.name
            if name:
                record.name = name
            elif record.name is None:
                if new is None:
                    new = []
                # the builder's entry: a weak reference that knows the record's id
                new.append(self.builder._tensor_ids[id(tensor)])
        if new:
            if frame is None:
                # From the caller's caller: this frame and the event's are tracegrad's own.
                frame = user_frame(3)
            pending = self._unnamed.get(frame)
            if pending is None:
                if len(self._unnamed) >= _MAX_PENDING_FRAMES:
                    oldest = next(iter(self._unnamed))
                    self._flush_frame(oldest, self._unnamed.pop(oldest))
                pending = self._unnamed[frame] = []
            pending.extend(new)

    def _flush_names(self) -> None:
        """Name every queued tensor after the variables of the frame it was used in."""
        batches = list(self._unnamed.items())
        self._unnamed.clear()
        for frame, pending in batches:
            self._flush_frame(frame, pending)

    def _flush_frame(self, frame, pending: list) -> None:
        wanted = {}
        records = self.trace.tensors
        for entry in pending:
            tensor = entry()
            record = records.get(entry.id) if tensor is not None else None
            if record is not None and record.name is None:
                key = variable_key(tensor)
                if key is not None:
                    wanted[key] = record
        if wanted:
            for key, variable in names_in_frame(frame, wanted).items():
                wanted[key].name = variable

    def _name_now(self, tensors) -> None:
        self._note_names(tensors, [self.builder.known_tensor(tensor) for tensor in tensors])
        self._flush_names()

    def on_tensor(self, tensor, kind: str) -> None:
        if _get_ident() != self._thread:
            return  # another thread's event: see the module docstring
        if self.ledger.overflow:
            return
        if kind == "data":
            self._made_from_data(tensor)
        if tensor.requires_grad and self.builder.known_tensor(tensor) is None:
            record = self.trace.tensors[self.builder.tensor_id(tensor)]
            record.site = user_site(3)
            record.value = self._capture(tensor._array)

    def on_inplace(self, info) -> None:
        """One record per in-place change, right the first time: the node it added (the
        tensor in at its old version and out at the new one), the views' new grad_fns, and
        the version in the tensor's history (autograd.views.InplaceInfo has it all)."""
        if _get_ident() != self._thread:
            return  # another thread's event: see the module docstring
        event_frame.frame = None  # (left by the site of the node, if any: see on_op)
        builder = self.builder
        tensor = info.tensor
        if self._pending:
            self.materialize(tensor)
        tensor_id = builder.known_tensor(tensor)
        watched = self.violations.is_watched(tensor)
        if tensor_id is None and not watched and info.node is None and not info.views:
            return  # a tensor the graph never saw, changed outside it: nothing to record
        node_record = builder.record_inplace(info)
        if tensor_id is None:
            tensor_id = builder.tensor_id(tensor)
        change = VersionChange(info.version, info.op_name, info.site)
        _append(self.trace.tensors[tensor_id], "versions", change)
        if info.base is not tensor:
            base_id = builder.known_tensor(info.base)
            if base_id is not None:
                _append(self.trace.tensors[base_id], "versions", change)
        if node_record is not None:
            self._after_inplace_record(info, node_record)
        if watched:
            found = len(self.trace.violations)
            self.violations.inplace_on_saved(tensor, tensor_id, info.op_name, info.site)
            if len(self.trace.violations) != found:
                self._note_finding()

    def _after_inplace_record(self, info, node_record) -> None:
        """Values, non-finite checks, saved-tensor watches and names for a recorded change."""
        tensors = self.trace.tensors
        changed = info.base
        changed_id = node_record.outputs[0]
        record = tensors[changed_id]
        if record.site is None:
            record.site = info.node._site
        before = record.value  # the old value's statistics, when it was captured
        value = record.value = self._capture(changed._array)
        finite = not value.stats.has_nonfinite if value is not None \
            else is_finite(changed._array)
        inputs = [arg for arg in info.inputs if isinstance(arg, Tensor)]
        if not finite and (before is None or not before.stats.has_nonfinite) and all(
                is_finite(arg._array) for arg in inputs[1:]):
            self.violations.nonfinite_forward(node_record, changed, record,
                                              [None, *inputs[1:]])
        if info.node._saved:
            self.violations.watch_saved(info.node, node_record.id)
        self._note_names(inputs, [self.builder.known_tensor(arg) for arg in inputs])

    def on_inplace_refused(self, tensor, op_name: str) -> None:
        if _get_ident() != self._thread:
            return  # another thread's event: see the module docstring
        self._note_finding()
        self.builder.tensor_id(tensor)
        self._name_now([tensor])
        self.violations.inplace_leaf(tensor, self.builder.tensor_id(tensor), op_name,
                                     user_site(3))

    # -- backward events ---------------------------------------------------------------
    def on_backward_start(self, info) -> None:
        if _get_ident() != self._thread:
            return  # another thread's event: see the module docstring
        index = len(self.trace.passes)
        self._engine_passes[info.index] = index
        self._finite_out = ()  # (see on_node_end_arrays: a new pass checks afresh)
        # Which nodes existed when this pass started (the memory report's peak, memory.py).
        self.trace.metadata.setdefault("pass_node_marks", []).append(
            self.builder._next_node_id)
        ledger = self.ledger
        origin, checker = _pass_origin(sys._getframe(1))
        summarized = ledger.overflow or (ledger.overflowed and not self._graph_known(info))
        roots = []
        if not summarized:
            for tensor in info.roots:
                if self._pending:
                    self.materialize(tensor)
                if self.builder.known_tensor(tensor) is None and tensor.grad_fn is not None:
                    self.builder.adopt([tensor.grad_fn],
                                       {(tensor.grad_fn, tensor._output_nr): tensor})
                roots.append(self.builder.tensor_id(tensor))
            self._name_now(info.roots)
        label = checker if checker is not None else self._call_label(info)
        self._pass = BackwardPass(
            index=index, kind=info.kind, roots=roots, site=user_site(3),
            retain_graph=bool(info.retain_graph), create_graph=bool(info.create_graph),
            values_captured=self.values and not summarized, origin=origin, label=label,
            summarized=summarized)
        self.trace.passes.append(self._pass)
        ledger.start_pass(origin, index)
        self._next_step_check = ledger.steps_alive + CHECK_EVERY

    def _graph_known(self, info) -> bool:
        """After an overflow: whether the pass starts from recorded nodes (else its steps
        are counted, not recorded, so that the unrecorded graph is never walked)."""
        known_node = self.builder.known_node
        return all(tensor.grad_fn is None or known_node(tensor.grad_fn) is not None
                   for tensor in info.roots)

    def _call_label(self, info) -> str:
        """``backward(loss)``, ``backward(loss, inputs=w)``, ``grad(y, (x, w))``; an
        unnamed root is shown as the expression on the calling line
        (``backward((w * 3).sum())``)."""
        outputs = self._tensor_labels(info.roots)
        if info.kind == "backward" and outputs.startswith("t") and outputs[1:].isdigit():
            site = user_site(4)
            code = site.code.partition("#")[0].strip() if site is not None else ""
            if code.endswith(".backward()") and "=" not in code.partition("(")[0]:
                outputs = code[:-len(".backward()")]
        inputs = self._tensor_labels(info.inputs) if info.inputs else ""
        if info.kind == "grad":
            return f"grad({outputs}, {inputs})"
        return f"backward({outputs}, inputs={inputs})" if inputs else f"backward({outputs})"

    def _tensor_labels(self, tensors) -> str:
        """Names of tensors as the program calls them: one name, or a tuple of names."""
        labels = []
        unnamed = {}
        for tensor in tensors:
            tensor_id = self.builder.known_tensor(tensor)
            record = self.trace.tensors.get(tensor_id) if tensor_id is not None else None
            name = tensor.name or (record.name if record is not None else None)
            if name is None:
                unnamed[id(tensor)] = tensor_id
            labels.append(name or id(tensor))
        if unnamed:
            found = names_in_frame(user_frame(2), unnamed)
            labels = [found.get(label, f"t{unnamed[label]}" if unnamed[label] is not None
                                else "tensor") if isinstance(label, int) else label
                      for label in labels]
        return labels[0] if len(labels) == 1 else "(" + ", ".join(labels) + ")"

    def on_node_start(self, node, grads_in) -> None:
        self.on_node_start_arrays(node, grads_in, True)

    def on_node_start_arrays(self, node, grads_in, tensors: bool = False) -> None:
        """A step starts: ``grads_in`` are arrays (tracegrad's own passes on arrays: no
        Tensor per gradient) or, from ``on_node_start``, Tensors (``tensors``); or None.
        The arrays' event is the implementation, not a second call: bench_trace.py (b)
        pays this per step."""
        if _get_ident() != self._thread:
            return  # another thread's event: see the module docstring
        current = self._pass
        if current is None:
            return
        if tensors:
            self._finite_out = ()  # hooks may have run: see on_node_end_arrays
        if not current.summarized:
            ledger = self.ledger
            if ledger.steps_alive >= self._next_step_check:
                self._next_step_check = ledger.steps_alive + CHECK_EVERY
                if not self._check_structure(False):
                    self._summarize_running_pass()
            elif ledger.overflowed and not node._is_accumulate \
                    and self.builder.known_node(node) is None:
                self._summarize_running_pass()
        self._step_node = node
        self._step_grads_in = grads_in
        self._step_tensors = tensors
        if current.summarized:
            counts = current.op_counts
            name = shown_name(node)
            counts[name] = counts.get(name, 0) + 1
            current.summarized_steps += 1
            self._step = None
            return
        entry = self.builder._node_ids.get(id(node))  # builder.node_id, its usual case inline
        node_id = entry.id if entry is not None and entry() is node \
            else self.builder.node_id(node)
        if self.values:
            gradient = self._gradient
            if tensors:
                grads = [gradient(grad._array) if grad is not None else None
                         for grad in grads_in]
            else:
                grads = [gradient(grad) if grad is not None else None for grad in grads_in]
        else:  # structure only: one shared list per length (nones(), its usual case inline)
            grads = _shared_nones(len(grads_in)) or nones(len(grads_in))
        hooks = self._pending_hooks.pop(id(node), None) if self._pending_hooks else None
        steps = current.steps
        # positional, in field order: index, node, grads_in, grads_out, hooks
        step = Step(len(steps), node_id, grads, NO_ITEMS,
                    hooks if hooks is not None else NO_ITEMS)
        steps.append(step)
        ledger = self.ledger
        ledger.groups[-1].step_count += 1
        ledger.steps_alive += 1
        self._step = step

    def _summarize_running_pass(self) -> None:
        """The structure budget ran out in the middle of a pass: count its steps instead
        (those recorded so far included), giving back their arrays."""
        current, ledger = self._pass, self.ledger
        ledger.overflow = ledger.overflowed = True
        for step in current.steps:
            for value in (*step.grads_in, *step.grads_out, step.grad_after):
                self.budget.release(value, DROPPED_PASS)
        ledger.steps_alive -= len(current.steps)
        ledger.current.step_count -= len(current.steps)
        summarize_pass(self.trace, current)
        self._pending_hooks.clear()

    def _gradient(self, data) -> Value | None:
        """A gradient's Value (``data``: its array; values are captured); the same array
        going out of one step and into the next is captured once (the pass holds the
        arrays, so their ids are not reused meanwhile). Only while nothing but built-in
        formulas ran: a hook or a custom Function's backward may change an array in place,
        and then the reuse is forgotten (on_hook, on_node_end_arrays)."""
        seen = self._pass_gradients.get(id(data))
        if seen is not None and seen[0] is data:
            return seen[1]
        value = self._capture(data)
        self._pass_gradients[id(data)] = (data, value)
        return value

    def on_hook(self, node, kind: str, hook, changed: bool) -> None:
        if _get_ident() != self._thread:
            return  # another thread's event: see the module docstring
        self._finite_out = ()  # a hook may change a gradient in place,
        self._pass_gradients.clear()  # so its Value is captured anew (see _gradient)
        if self._pass is not None and self._pass.summarized:
            return
        hook_name = getattr(hook, "__qualname__", type(hook).__name__)
        if kind == "retain_grad":
            hook_name = "retain_grad"
        hook_record = HookRecord(kind=kind, name=hook_name, changed=bool(changed))
        if self._step is not None and self._step_node is node:
            _append(self._step, "hooks", hook_record)
        else:  # tensor and pre hooks fire before the step starts
            self._pending_hooks.setdefault(id(node), []).append(hook_record)

    def on_node_end(self, node, grads_out, duration_ns: int) -> None:
        self.on_node_end_arrays(node, grads_out, duration_ns, True)

    def on_node_end_arrays(self, node, grads_out, duration_ns: int,
                           tensors: bool = False) -> None:
        """A step ended: ``grads_out`` are arrays, or Tensors (``tensors``; see
        on_node_start_arrays), or None."""
        if _get_ident() != self._thread:
            return  # another thread's event: see the module docstring
        if self._step_node is not node:
            return
        step = self._step
        if step is None:  # a summarized pass: only look for where NaN/Inf appear
            self._check_counted_step(node, grads_out if tensors else _as_tensors(grads_out))
            self._step_node, self._step_grads_in = None, ()
            return
        values = self.values
        if values:
            if tensors and not isinstance(node, _BUILT_IN_NODES):
                # A custom Function's backward may have written into any gradient of the
                # pass in place (and return it): what it hands on is captured anew.
                self._pass_gradients.clear()
            gradient = self._gradient
            if tensors:
                captured = [gradient(grad._array) if grad is not None else None
                            for grad in grads_out]
            else:
                captured = [gradient(grad) if grad is not None else None for grad in grads_out]
            step.grads_out = captured
        else:
            step.grads_out = _shared_nones(len(grads_out)) or nones(len(grads_out))
        step.duration_ns = duration_ns if duration_ns.__class__ is int else int(duration_ns)
        # An array the step just before found finite, handed on as it came (AddBackward0,
        # half of bench_trace.py (b)'s chain), is not checked again. Only between two
        # built-in steps on arrays: nothing ran between them that could change it in place
        # (hooks, user code and AccumulateGrad run as Tensor steps, which start afresh).
        finite_before = () if tensors else self._finite_out
        finite = []  # what this step hands on, found finite (arrays only)
        checked = None
        for edge_index, grad in enumerate(grads_out):
            if grad is None:
                continue
            data = grad._array if tensors else grad
            if data is checked:
                continue  # the same array on two edges (AddBackward0): checked once
            checked = data
            if not (finite_before and (data is finite_before[0] or len(finite_before) > 1
                                       and any(data is before for before in finite_before))):
                ok = value_is_finite(captured[edge_index], data) if values \
                    else is_finite(data)
                if not ok:
                    self._nonfinite_step(step, node, edge_index, grad, tensors)
                    finite = ()
                    break
            if not tensors:
                finite.append(data)
        self._finite_out = finite
        self._step, self._step_node, self._step_grads_in = None, None, ()

    def _nonfinite_step(self, step: Step, node, edge_index: int, grad, tensors: bool) -> None:
        """The step's gradient on edge ``edge_index`` holds NaN/Inf: a violation when it
        appeared here (from finite gradients in, or the first NaN made from Inf)."""
        found = len(self.trace.violations)
        grads_in = self._step_grads_in
        if not self._step_tensors:  # (the rare path reads Tensors: wrapped now)
            grads_in = _as_tensors(grads_in)
        if not tensors:
            grad = _as_tensors((grad,))[0]
        if all(grad_in is None or is_finite(grad_in._array) for grad_in in grads_in):
            self.violations.nonfinite_backward(self._pass, step, node, edge_index,
                                               grad, grads_in)
        elif first_nan(grad._array, grads_in):  # the first NaN, made from Inf
            self.violations.nonfinite_backward(self._pass, step, node, edge_index,
                                               grad, grads_in, from_nonfinite=True)
        self._note_finding(len(self.trace.violations) != found)

    def _check_counted_step(self, node, grads_out) -> None:
        for grad in grads_out:
            if grad is not None and not is_finite(grad._array):
                grads_in = self._step_grads_in if self._step_tensors \
                    else _as_tensors(self._step_grads_in)
                new = all(grad_in is None or is_finite(grad_in._array)
                          for grad_in in grads_in) and \
                    self._unrecorded_nonfinite(shown_name(node), node._site, grad._array,
                                               "backward")
                self._note_finding(bool(new))
                return

    def on_accumulate(self, tensor, grad) -> None:
        if _get_ident() != self._thread:
            return  # another thread's event: see the module docstring
        current = self._pass
        if current is not None and current.summarized:
            tensor_id = self.builder.known_tensor(tensor)
            if tensor_id is not None and tensor.grad is not None and self.values:
                # Statistics only: the record keeps .grad after the last pass up to date.
                self.trace.tensors[tensor_id].grad = self.budget.capture(
                    tensor.grad._array, keep_array=False)
            return
        tensor_id = self.builder.tensor_id(tensor)
        record = self.trace.tensors[tensor_id]
        grad = tensor.grad
        value = None
        if grad is not None and self.values:
            # .grad is often the incoming gradient itself, or it added to zeros: the
            # step's Value of that gradient may hold the same bits (see _capture)
            step = current.steps[-1] if current is not None and current.steps else None
            like = step.grads_in[0] if step is not None and step.grads_in else None
            value = self._capture(grad._array, like)
        if value is not None:
            # The Value stays with this pass's step (.grad per pass); the record points
            # at the latest one (.grad after the last pass).
            record.grad = value
        if current is not None and current.steps:
            step = current.steps[-1]
            step.accumulated = tensor_id
            step.grad_after = value

    def on_error(self, error, node) -> None:
        if _get_ident() != self._thread:
            return  # another thread's event: see the module docstring
        self._note_finding()
        if self._step is not None and self._step_node is node:
            self._step.error = f"{type(error).__name__}: {error}"
        if self._pass is not None and self._pass.summarized \
                and self.builder.known_node(node) is None:
            return  # a counted step: the pass's error says what happened
        self.violations.backward_failed(error, node, self._pass, self._engine_passes)

    def on_backward_end(self, info, error) -> None:
        if _get_ident() != self._thread:
            return  # another thread's event: see the module docstring
        current = self._pass
        if current is None:
            return
        if error is not None:
            current.error = f"{type(error).__name__}: {error}"
            self._note_finding()
        self._pass, self._step, self._step_node = None, None, None
        self._finite_out = ()
        self._pending_hooks.clear()
        self._pass_gradients.clear()
        self._end_group()
        self.violations.prune()


def _append(record, field: str, item) -> None:
    """Append ``item`` to a record's list ``field``, giving the record a list of its own
    first when it shares the empty one (model.NO_ITEMS)."""
    items = getattr(record, field)
    if items is NO_ITEMS:
        setattr(record, field, [item])
    else:
        items.append(item)


def _pass_origin(frame) -> tuple[str, str | None]:
    """(origin, label) of a pass from the frames that started it: gradcheck's probes are
    labelled ``gradcheck(func)`` after the outermost checker on the way to user code."""
    checker = None
    while frame is not None and _is_internal(frame.f_code.co_filename):
        code = frame.f_code
        if code.co_name in _GRADCHECK_FUNCTIONS \
                and frame.f_globals.get("__name__") in _GRADCHECK_MODULES:
            function = frame.f_locals.get("func")
            name = getattr(function, "__qualname__", None) or type(function).__name__
            checker = f"{code.co_name}({name})"
        frame = frame.f_back
    if checker is None:
        return ORIGIN_USER, None
    return ORIGIN_GRADCHECK, checker


def exception_record(exc: BaseException) -> ExceptionRecord:
    """The exception that ended a traced program, with the innermost user site."""
    site = None
    from ..autograd.site import _is_internal, display_path

    for frame_summary in reversed(traceback_module.extract_tb(exc.__traceback__)):
        if not _is_internal(frame_summary.filename):
            from .model import Site

            site = Site(display_path(frame_summary.filename), frame_summary.lineno or 0,
                        frame_summary.name, (frame_summary.line or "").strip())
            break
    text = "".join(traceback_module.format_exception(type(exc), exc, exc.__traceback__))
    return ExceptionRecord(type=type(exc).__name__, message=str(exc), site=site,
                           traceback=text)
