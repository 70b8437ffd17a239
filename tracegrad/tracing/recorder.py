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
"""

from __future__ import annotations

import traceback as traceback_module
import weakref

from .. import __version__
from ..autograd import events, module_scope
from ..autograd.site import user_site
from ..tensor import Tensor
from .graph import GraphBuilder, name_unnamed
from .model import BackwardPass, ExceptionRecord, HookRecord, Step, Trace, Value, VersionChange
from .names import names_in_frame, user_frame
from .values import DEFAULT_BUDGET_BYTES, ValueBudget, is_finite
from .violations import ViolationFinder, refresh_names

_MAX_PENDING_FRAMES = 8


def record(values: bool = True, budget_bytes: int | None = None,
           keep_passes: tuple[int, int] | None = (2, 2)) -> Recorder:
    """Start recording: ``with tracegrad.record() as tr:`` gives the Trace being built.

    values       capture forward values and gradients (False: structure only)
    budget_bytes memory for whole arrays (default 256 MiB); beyond it, statistics only
    keep_passes  (first, last): keep values for the first and last N backward passes (and
                 the forward before each); the passes between keep statistics only.
                 None keeps values for every pass (still within the budget).
    """
    return Recorder(values=values, budget_bytes=budget_bytes, keep_passes=keep_passes)


class Recorder(events.Listener):
    """An events listener that fills ``self.trace``; a context manager around that."""

    wants_sites = True  # nodes get the source line of their forward call

    def __init__(self, values: bool = True, budget_bytes: int | None = None,
                 keep_passes: tuple[int, int] | None = (2, 2)) -> None:
        if budget_bytes is None:
            budget_bytes = DEFAULT_BUDGET_BYTES
        if keep_passes is not None:
            keep_passes = (int(keep_passes[0]), int(keep_passes[1]))
            if min(keep_passes) < 0:
                raise ValueError(
                    f"tracegrad.trace: keep_passes must be two counts >= 0 (first, last), "
                    f"got {keep_passes}. Hint: keep_passes=(2, 2).")
        self.values = bool(values)
        self.keep_passes = keep_passes
        self.trace = Trace(metadata={
            "tracegrad_version": __version__, "values": self.values,
            "budget_bytes": int(budget_bytes),
            "keep_passes": list(keep_passes) if keep_passes is not None else None,
            "summarized_values": 0, "timings": True})
        self.builder = GraphBuilder(self.trace)
        self.budget = ValueBudget(budget_bytes)
        self.violations = ViolationFinder(self.trace, self.builder)
        self._group = 0  # forward values belong to the backward pass that follows them
        self._group_values: dict[int, list[Value]] = {}
        self._engine_passes: dict[int, int] = {}  # engine pass index -> trace pass index
        self._pass: BackwardPass | None = None
        self._step: Step | None = None
        self._step_node = None
        self._step_grads_in: tuple = ()  # the live gradients of the running step
        self._pending_hooks: dict[int, list[HookRecord]] = {}
        self._pass_gradients: dict[int, tuple] = {}  # id(array) -> (array, Value), one pass
        self._looked_up: set[int] = set()  # tensor ids whose variable name was searched
        # user frame -> [(weakref to tensor, record)] waiting for a search of its variables
        self._unnamed: dict = {}
        self._last_op = None  # (node, node id, tensor ids first seen in that op)
        self._subscription = None

    # -- the context manager -----------------------------------------------------------
    def __enter__(self) -> Trace:
        self.start()
        return self.trace

    def __exit__(self, exc_type, exc, tb) -> None:
        self.stop(user_frame(1), exc)

    def start(self) -> None:
        if self._subscription is None:
            self._subscription = events.subscribe(self)

    def stop(self, frame=None, exc: BaseException | None = None, scopes=()) -> Trace:
        """Unsubscribe, name what can be named (after the variables of ``frame`` or of
        ``scopes``), and record ``exc``, the exception that ended the program, if any."""
        if self._subscription is not None:
            self._subscription.remove()
            self._subscription = None
        if exc is not None and self.trace.exception is None:
            self.trace.exception = exception_record(exc)
        self._flush_names()
        name_unnamed(self.trace, self.builder, frame, scopes)
        refresh_names(self.trace)
        self.trace.metadata["summarized_values"] = self.budget.summarized
        self._note_module_classes()
        return self.trace

    def name_pending(self) -> None:
        """Name the tensors recorded so far after the user's variables now, as ``stop()``
        does at the end: an assertion made while the recording goes on (the pytest fixture)
        then says 'h', as ``tracegrad check`` does, not a placeholder."""
        self._flush_names()
        refresh_names(self.trace)

    def _note_module_classes(self) -> None:
        """``{"0": "Linear", ...}`` for the module scopes of recorded nodes (pictures label
        a scope "0: Linear")."""
        scopes = sorted({node.module for node in self.trace.nodes.values() if node.module})
        classes = {scope: module_scope.class_of(scope) for scope in scopes}
        classes = {scope: name for scope, name in classes.items() if name is not None}
        if classes:
            self.trace.metadata["module_classes"] = classes

    # -- capture policy ----------------------------------------------------------------
    def _keeps_arrays(self, group: int) -> bool:
        """Whether values of this group (pass index) get whole arrays, as far as known now:
        groups past ``first`` are kept tentatively and dropped when they leave the last-N
        window."""
        if self.keep_passes is None:
            return True
        first, last = self.keep_passes
        return group < first or last > 0

    def _capture(self, data, group: int | None = None) -> Value | None:
        if not self.values:
            return None
        if group is None:
            group = self._group
        value = self.budget.capture(data, self._keeps_arrays(group))
        if value.array is not None and self.keep_passes is not None \
                and group >= self.keep_passes[0]:
            self._group_values.setdefault(group, []).append(value)
        return value

    def _drop_old_group(self, finished_pass: int) -> None:
        """The pass ``finished_pass`` ended: the group that just left the last-N window keeps
        statistics only."""
        if self.keep_passes is None:
            return
        first, last = self.keep_passes
        group = finished_pass - last
        if group < first:
            return
        for value in self._group_values.pop(group, ()):
            self.budget.release(value)
        if group < len(self.trace.passes):
            self.trace.passes[group].values_captured = False

    # -- forward events ----------------------------------------------------------------
    def on_op(self, node, args, outputs) -> None:
        builder = self.builder
        inputs = [arg for arg in args if isinstance(arg, Tensor)]
        before = builder._next_tensor_id
        record = builder.record_op(node, inputs, outputs)
        self._last_op = (node, record.id, range(before, builder._next_tensor_id))
        tensors = self.trace.tensors
        if self.values:
            for tensor, tensor_id in zip(inputs, record.inputs):
                if tensor_id >= before and tensors[tensor_id].value is None:
                    tensors[tensor_id].value = self._capture(tensor._array)  # a leaf
        for tensor, tensor_id in zip([out for out in outputs if out is not None],
                                     record.outputs):
            tensor_record = tensors[tensor_id]
            if tensor_record.site is None:
                tensor_record.site = node._site
            value = tensor_record.value = self._capture(tensor._array)
            finite = not value.stats.has_nonfinite if value is not None \
                else is_finite(tensor._array)
            # Inputs are checked only now, in the rare case: report where non-finite values
            # first appear, not every op they flow through.
            if not finite and all(is_finite(arg._array) for arg in inputs):
                self.violations.nonfinite_forward(record, tensor, tensor_record)
        if node._saved:
            self.violations.watch_saved(node, record.id)
        self._note_names(inputs, record.inputs)

    # -- names -------------------------------------------------------------------------
    def _note_names(self, tensors, tensor_ids) -> None:
        """Queue unnamed tensors for a search of the user's variables.

        The search runs once per batch -- when backward starts, and at the end -- instead of
        once per op: a loop body's variables (h, y_pred, loss) are still bound when its
        backward starts, and scanning a frame costs more than recording an op. Tensors are
        queued per user frame (a custom Function's forward is a frame of its own, and ops
        alternate between it and the loop); at most _MAX_PENDING_FRAMES frames wait, so a
        long forward-only program does not keep every finished frame alive.
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
            if tensor.name:
                record.name = tensor.name
            elif record.name is None:
                if new is None:
                    new = []
                new.append((weakref.ref(tensor), record))
        if new:
            frame = user_frame(1)
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
        for reference, record in pending:
            tensor = reference()
            if tensor is not None and record.name is None:
                wanted[id(tensor)] = record
        if wanted:
            for key, variable in names_in_frame(frame, wanted).items():
                wanted[key].name = variable

    def _name_now(self, tensors) -> None:
        self._note_names(tensors, [self.builder.known_tensor(tensor) for tensor in tensors])
        self._flush_names()

    def on_tensor(self, tensor, kind: str) -> None:
        if tensor.requires_grad and self.builder.known_tensor(tensor) is None:
            record = self.trace.tensors[self.builder.tensor_id(tensor)]
            record.site = user_site(3)
            record.value = self._capture(tensor._array)

    def on_inplace(self, tensor, op_name: str, site) -> None:
        builder = self.builder
        tensor_id = builder.known_tensor(tensor)
        watched = self.violations.is_watched(tensor)
        if tensor_id is None and not watched and tensor.grad_fn is None:
            return  # a tensor the graph never saw: nothing to record
        if tensor_id is None:
            tensor_id = builder.tensor_id(tensor)
        record = self.trace.tensors[tensor_id]
        record.versions.append(VersionChange(tensor._version, op_name, site))
        if tensor.grad_fn is not None and self._last_op is not None \
                and self._last_op[0] is tensor.grad_fn:
            self._rebase_record(tensor, tensor_id)
        if watched:
            self.violations.inplace_on_saved(tensor, tensor_id, op_name, site)

    def _rebase_record(self, tensor, tensor_id: int) -> None:
        """An in-place op recorded its node on a snapshot of ``tensor`` and a temporary
        output; show it as the tensor itself going in (old version) and coming out."""
        _, node_id, fresh = self._last_op
        node_record = self.trace.nodes[node_id]
        builder = self.builder
        snapshot_id = node_record.inputs[0] if node_record.inputs else None
        if snapshot_id in fresh and snapshot_id != tensor_id:
            node_record.inputs[0] = tensor_id
            for saved in node_record.saved:
                if saved.tensor == snapshot_id:
                    saved.tensor, saved.version = tensor_id, tensor._version - 1
            builder.forget_tensor(snapshot_id)
        output_nr = tensor._output_nr
        output_id = builder.output_tensor(node_id, output_nr)
        if output_id in fresh and output_id != tensor_id:
            node_record.outputs = [tensor_id if item == output_id else item
                                   for item in node_record.outputs]
            for saved in node_record.saved:
                if saved.tensor == output_id:
                    saved.tensor = tensor_id
            value = self.trace.tensors[output_id].value
            builder.forget_tensor(output_id)
            self.trace.tensors[tensor_id].value = value
        builder.set_output(node_id, output_nr, tensor_id)
        record = self.trace.tensors[tensor_id]
        record.requires_grad = bool(tensor.requires_grad)
        builder.rewind_tensor_ids()
        self._last_op = None

    def on_inplace_refused(self, tensor, op_name: str) -> None:
        self.builder.tensor_id(tensor)
        self._name_now([tensor])
        self.violations.inplace_leaf(tensor, self.builder.tensor_id(tensor), op_name,
                                     user_site(3))

    # -- backward events ---------------------------------------------------------------
    def on_backward_start(self, info) -> None:
        index = len(self.trace.passes)
        self._engine_passes[info.index] = index
        roots = []
        for tensor in info.roots:
            if self.builder.known_tensor(tensor) is None and tensor.grad_fn is not None:
                self.builder.adopt([tensor.grad_fn],
                                   {(tensor.grad_fn, tensor._output_nr): tensor})
            roots.append(self.builder.tensor_id(tensor))
        self._name_now(info.roots)
        self._pass = BackwardPass(
            index=index, kind=info.kind, roots=roots, site=user_site(3),
            retain_graph=bool(info.retain_graph), create_graph=bool(info.create_graph),
            values_captured=self.values)
        self.trace.passes.append(self._pass)

    def on_node_start(self, node, grads_in) -> None:
        current = self._pass
        if current is None:
            return
        node_id = self.builder.node_id(node)
        group = current.index
        step = Step(index=len(current.steps), node=node_id,
                    grads_in=[self._gradient(grad, group) for grad in grads_in],
                    hooks=self._pending_hooks.pop(id(node), []))
        current.steps.append(step)
        self._step, self._step_node = step, node
        self._step_grads_in = grads_in

    def _gradient(self, grad, group: int) -> Value | None:
        """A gradient's Value; the same array going out of one step and into the next is
        captured once (the pass holds the arrays, so their ids are not reused meanwhile)."""
        if grad is None or not self.values:
            return None
        data = grad._array
        seen = self._pass_gradients.get(id(data))
        if seen is not None and seen[0] is data:
            return seen[1]
        value = self._capture(data, group)
        self._pass_gradients[id(data)] = (data, value)
        return value

    def on_hook(self, node, kind: str, hook, changed: bool) -> None:
        hook_name = getattr(hook, "__qualname__", type(hook).__name__)
        if kind == "retain_grad":
            hook_name = "retain_grad"
        hook_record = HookRecord(kind=kind, name=hook_name, changed=bool(changed))
        if self._step is not None and self._step_node is node:
            self._step.hooks.append(hook_record)
        else:  # tensor and pre hooks fire before the step starts
            self._pending_hooks.setdefault(id(node), []).append(hook_record)

    def on_node_end(self, node, grads_out, duration_ns: int) -> None:
        step = self._step
        if step is None or self._step_node is not node:
            return
        group = self._pass.index
        step.grads_out = [self._gradient(grad, group) for grad in grads_out]
        step.duration_ns = int(duration_ns)
        for edge_index, grad in enumerate(grads_out):
            if grad is None:
                continue
            value = step.grads_out[edge_index]
            finite = not value.stats.has_nonfinite if value is not None \
                else is_finite(grad._array)
            if not finite:
                if all(grad_in is None or is_finite(grad_in._array)
                       for grad_in in self._step_grads_in):
                    self.violations.nonfinite_backward(self._pass, step, node, edge_index,
                                                       grad)
                break
        self._step, self._step_node, self._step_grads_in = None, None, ()

    def on_accumulate(self, tensor, grad) -> None:
        tensor_id = self.builder.tensor_id(tensor)
        current = self._pass
        if current is not None and current.steps:
            current.steps[-1].accumulated = tensor_id
        record = self.trace.tensors[tensor_id]
        if tensor.grad is not None:
            self.budget.release(record.grad)
            record.grad = self._capture(tensor.grad._array,
                                        current.index if current else self._group)

    def on_error(self, error, node) -> None:
        if self._step is not None and self._step_node is node:
            self._step.error = f"{type(error).__name__}: {error}"
        self.violations.backward_failed(error, node, self._pass, self._engine_passes)

    def on_backward_end(self, info, error) -> None:
        current = self._pass
        if current is None:
            return
        if error is not None:
            current.error = f"{type(error).__name__}: {error}"
        self._pass, self._step, self._step_node = None, None, None
        self._pending_hooks.clear()
        self._pass_gradients.clear()
        self._group = current.index + 1
        self._drop_old_group(current.index)
        self.violations.prune()


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
