"""Recording where values leave the graph: the events that build no node.

``detach()``, ``.data``, an op under ``no_grad``, ``.item()``/``.numpy()``/``.tolist()`` and a
tensor made again from that data, ``.grad = None``: none of them adds a node, so the graph
alone cannot say why a gradient stopped. The recorder mixes ``FlowEvents`` in and keeps a
``Flow`` for each, but only where a value that gradients could follow is involved (a tensor
that requires grad, or one that came out of an earlier flow): a program's data pipeline and
its optimizer steps add nothing.

>>> import tracegrad
>>> w = tracegrad.ones(2, requires_grad=True)
>>> with tracegrad.record() as tr:
...     h = w.detach()
...     loss = (h * 3).sum()
>>> [(flow.kind, flow.op) for flow in tr.flows]
[('detach', ''), ('untracked', 'MulBackward0')]

A flow is recorded once its result is used (the sum above is not): a loop that updates
weights under no_grad every step records nothing for results no one reads.
"""

from __future__ import annotations

import sys
import threading
import weakref

import numpy as np

from ..autograd.function import Function
from ..autograd.site import user_site
from ..tensor import Tensor
from .model import Flow

# At most this many flows per trace: a loop that detaches every step stays bounded (the
# trace's metadata counts what was left out).
MAX_FLOWS = 50_000
# Values given out as data are remembered (to recognise them coming back) up to this size.
_MAX_EXPORT_ELEMENTS = 4096
_MAX_EXPORTS = 256
_get_ident = threading.get_ident
_APPLY_CODE = Function.apply.__func__.__code__
# Deferred results, before the first sweep of those that are gone. Most die at once (an
# optimizer's ``w1 -= lr * g`` defers a result every step): swept while few, their entries
# (a tuple, a weak reference and two lists each) never pile up for the garbage collector
# to scan again and again, and an op's inputs are rarely looked up in the table. The
# threshold then doubles with what stays alive, so a sweep costs O(1) per deferral.
_SWEEP_AT = 64
_MAX_FRAMES = 64  # a forward nested deeper than this is taken for the user's no_grad


def value_key(value) -> bytes | None:
    """The values of a number, list or array as bytes, to recognise the same data when a
    tensor is made from it again (None: too large, or not numbers).

    >>> value_key(1.5) == value_key(np.array([1.5], dtype=np.float32))
    True
    """
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if array.size == 0 or array.size > _MAX_EXPORT_ELEMENTS:
        return None
    return array.tobytes()


def remember_torch_tensors(trace, builder) -> None:
    """Before the bridge lets its adapters go: torch tensor -> trace id, held weakly, so
    that ``trace.why_no_grad(w1)`` finds a torch tensor after the recording."""
    found = []
    for tensor_id, reference in builder._tensor_ids.values():
        subject = getattr(reference(), "subject", None)
        if subject is not None:
            try:
                found.append((weakref.ref(subject), tensor_id))
            except TypeError:
                continue
    trace._torch_tensors = found


def _in_custom_forward() -> bool:
    """Whether a custom Function's forward is running (it turns grad mode off for its ops).
    Only asked for an op under no_grad that involves a tracked tensor, so walking the stack
    costs nothing elsewhere."""
    frame = sys._getframe(2)
    depth = 0
    while frame is not None and depth < _MAX_FRAMES:
        if frame.f_code is _APPLY_CODE:
            return True
        frame = frame.f_back
        depth += 1
    return False


class FlowEvents:
    """The listener methods for value flow outside the graph (mixed into Recorder, which
    provides ``trace``, ``builder``, ``_pass``, ``_thread`` and ``_note_names``)."""

    def _init_flows(self) -> None:
        self._tainted: set[int] = set()  # tensor ids that came out of a flow
        self._exports: dict[bytes, tuple[int, str, object]] = {}  # data -> (id, kind, site)
        self._resets: dict[int, Flow] = {}  # tensor id -> its last grad_reset flow
        self._flows_dropped = 0
        # id(result) -> (weakref to it, [kind, sources, op, site, Flow or None]): see _defer
        self._pending: dict[int, tuple] = {}
        self._sweep_at = _SWEEP_AT

    def _tracked(self, tensor) -> int | None:
        """The id of a tensor gradients could follow from: one that requires grad (recorded
        now if new), or the result of an earlier flow; None for anything else."""
        if self._pending:
            tensor_id = self.materialize(tensor)
            if tensor_id is not None:
                return tensor_id
        if tensor.requires_grad:
            before = self.builder._next_tensor_id
            tensor_id = self.builder.tensor_id(tensor)
            if tensor_id >= before and self.values:
                # Its value, as an op's new input gets one: a NaN's cause reads it (x.sqrt()
                # after x > 0 saw x first).
                self.trace.tensors[tensor_id].value = self._capture(tensor._array)
            return tensor_id
        tensor_id = self.builder.known_tensor(tensor)
        return tensor_id if tensor_id in self._tainted else None

    def _may_track(self, tensor) -> bool:
        """Whether ``_tracked(tensor)`` may give an id, asked without its side effects
        (recording the tensor, a pending flow's result): False only when it would give
        None."""
        if tensor.requires_grad or id(tensor) in self._pending:
            return True
        tainted = self._tainted
        return bool(tainted) and self.builder.known_tensor(tensor) in tainted

    def _name_source(self, tensor, tensor_id: int) -> None:
        """Queue a search of the user's variables for a flow's source, leaving it open to
        the later ops that use it: a parameter's name (``fc.weight``) is known only once
        its module runs, after ``w.data.uniform_()`` in its ``__init__``."""
        self._note_names([tensor], [tensor_id])
        self._looked_up.discard(tensor_id)

    def _defer(self, kind: str, sources: list[int], results: list, op: str = "") -> None:
        """A flow whose results are recorded only once something uses them: ``w1 -= lr *
        g`` under no_grad, every step, makes a result nobody reads (no record for it)."""
        if len(self.trace.flows) >= MAX_FLOWS:
            self._flows_dropped += 1
            self.trace.metadata["flows_dropped"] = self._flows_dropped
            return
        pending = [kind, sources, op, user_site(3), None]  # the Flow, once made
        table = self._pending
        for result in results:
            table[id(result)] = (weakref.ref(result), pending)
        if len(table) > self._sweep_at:  # drop the results that are gone
            for key in [key for key, (reference, _) in table.items() if reference() is None]:
                del table[key]
            self._sweep_at = max(_SWEEP_AT, 2 * len(table))

    def materialize(self, tensor) -> int | None:
        """Record ``tensor`` if it is a deferred flow's result (and the flow with it): its
        id, or None when it is not one. The recorder calls it for each op's inputs."""
        entry = self._pending.pop(id(tensor), None)
        if entry is None:
            return None
        reference, pending = entry
        if reference() is not tensor:
            return None
        kind, sources, op, site, flow = pending
        tensor_id = self.builder.tensor_id(tensor)
        record = self.trace.tensors[tensor_id]
        if record.site is None:
            record.site = site
        if not tensor.requires_grad:
            self._tainted.add(tensor_id)
        if flow is None:
            flow = pending[4] = Flow(kind=kind, sources=sources, results=[], op=op, site=site)
            self.trace.flows.append(flow)
        flow.results.append(tensor_id)
        return tensor_id

    def _add_flow(self, kind: str, sources: list[int], results: list, op: str = "",
                  other_site=None) -> Flow | None:
        if len(self.trace.flows) >= MAX_FLOWS:
            self._flows_dropped += 1
            self.trace.metadata["flows_dropped"] = self._flows_dropped
            return None
        builder = self.builder
        site = user_site(3)
        result_ids = []
        for result in results:
            result_id = builder.tensor_id(result)
            record = self.trace.tensors[result_id]
            if record.site is None:
                record.site = site
            result_ids.append(result_id)
            if not result.requires_grad:
                self._tainted.add(result_id)
        if kind not in ("no_grad", "untracked", "integer"):
            # An op's results are named where a later op uses them: one run inside a custom
            # Function's forward would be named after the forward's variables.
            self._note_names(results, result_ids)
        flow = Flow(kind=kind, sources=sources, results=result_ids, op=op, site=site,
                    other_site=other_site)
        self.trace.flows.append(flow)
        return flow

    def on_detach(self, source, result, kind: str) -> None:
        if _get_ident() != self._thread or self._pass is not None:
            return  # another thread, or a backward formula at work
        source_id = self._tracked(source)
        if source_id is None:
            return
        self._name_source(source, source_id)
        if kind == "detach_":  # the tensor itself leaves the graph: it is the result
            self._add_flow(kind, [source_id], [result])
            self._tainted.add(source_id)
        else:
            self._defer(kind, [source_id], [result])

    def on_untracked_op(self, name: str, args, outputs, grad_enabled: bool) -> None:
        if _get_ident() != self._thread or self._pass is not None:
            return
        for arg in args:  # most untracked ops (an optimizer's update) touch nothing tracked
            if (arg.__class__ is Tensor or isinstance(arg, Tensor)) and self._may_track(arg):
                break
        else:
            return  # what the loop below finds too, without walking the stack first
        if not grad_enabled and _in_custom_forward():
            return  # the Function's node links its inputs and outputs: nothing is cut
        sources = []
        for arg in args:
            if arg.__class__ is Tensor or isinstance(arg, Tensor):
                source_id = self._tracked(arg)
                if source_id is not None:
                    sources.append(source_id)
        if not sources:
            return
        # The sources are not named from here: inside a custom Function's forward (grad
        # mode off) the frame's names are the forward's parameters, not the program's.
        results = [output for output in outputs if output is not None]
        if not grad_enabled:
            kind = "no_grad"
        elif results and all(result._array.dtype.kind in "biu" for result in results):
            kind = "integer"  # a mask or indices: no gradient flows through them
        else:
            kind = "untracked"
        self._defer(kind, sources, results, name)

    def on_value_out(self, tensor, kind: str, value) -> None:
        if _get_ident() != self._thread or self._pass is not None:
            return
        source_id = self._tracked(tensor)
        if source_id is None:
            return
        key = value_key(value)
        if key is None:
            return
        self._name_source(tensor, source_id)
        exports = self._exports
        if len(exports) >= _MAX_EXPORTS:
            del exports[next(iter(exports))]  # the oldest goes
        exports[key] = (source_id, kind, user_site(2))

    def _made_from_data(self, tensor) -> None:
        """A tensor made from Python data or an array: a round trip when that data is what
        a tracked tensor gave out with ``.item()``/``.tolist()``/``.numpy()``."""
        if not self._exports:
            return
        data = tensor._array
        if data.size > _MAX_EXPORT_ELEMENTS:
            return
        key = value_key(data if data.__class__ is np.ndarray else data.get())
        found = self._exports.get(key) if key is not None else None
        if found is not None:
            source_id, kind, site = found
            self._add_flow(kind, [source_id], [tensor], other_site=site)

    def on_grad_reset(self, tensor) -> None:
        if _get_ident() != self._thread or self._pass is not None:
            return
        tensor_id = self.builder.known_tensor(tensor)
        if tensor_id is None or not self.trace.passes:
            return
        last_pass = len(self.trace.passes) - 1
        flow = self._resets.get(tensor_id)
        if flow is None:
            flow = self._resets[tensor_id] = Flow(kind="grad_reset", sources=[tensor_id])
            self.trace.flows.append(flow)
        # One flow per tensor, kept up to date: zero_grad() every step adds nothing more.
        flow.site, flow.pass_index = user_site(2), last_pass
