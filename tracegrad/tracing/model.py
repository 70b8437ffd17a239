"""The Trace: a plain-data record of what autograd did.

Everything that shows a graph (the DOT exporter, the TUI, the graph assertions) reads these
classes and never the live engine, so a trace saved in CI opens anywhere. Ids are small
integers handed out by counters in recording order, so the same program gives the same ids
on every run.

Vocabulary:
    tensor  -- a Tensor the program made or used (leaf, op output, saved snapshot).
    node    -- a grad_fn (``MulBackward0``, ``MyReLUBackward``, ``AccumulateGrad``).
    edge    -- node -> next node, as ``grad_fn.next_functions`` gives it.
    pass    -- one ``backward()`` or ``autograd.grad()`` call.
    step    -- one node executed within a pass, in execution order.
    violation -- something the user should fix, with the sites that explain it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..autograd import site as _engine_site

# 2: sites and values tables, arrays in one member. 3: per-pass .grad (Step.grad_after),
# pass origin and label, why a value has no array (Value.dropped), summarized passes.
# Every field added since has a default, so files of schema 1 and 2 still load (Trace.roots,
# Violation.op and Violation.input_nr came later still, with defaults: older files load, and
# their roots kept in metadata are read into Trace.roots).
# 4: the same records in columns, one list per field (tracing/columns.py): a third of the
# size, several times faster to save and load; 1 to 3 still load.
# 5: the statistics of a value whose array is stored are computed from it when first read,
# not stored (see tracing/columns.py and values.stats_from_array); 1 to 4 still load.
SCHEMA_VERSION = 5
FORMAT_NAME = "tracegrad-trace"


# Site belongs to the engine (nodes carry one from the moment they are made); it stays
# importable from here, where saved traces and their readers have always found it.
Site = _engine_site.Site


@dataclass
class Stats:
    """Summary of an array, kept for every captured value (whole array or not)."""

    min: float | None = None
    max: float | None = None
    mean: float | None = None
    norm: float | None = None
    nan_count: int = 0
    inf_count: int = 0

    @property
    def has_nonfinite(self) -> bool:
        return self.nan_count > 0 or self.inf_count > 0


def array_dtype_name(dtype: np.dtype) -> str:
    """``"float32"``: a NumPy dtype's name as a Value records it, cached (NumPy works the
    name out anew on every access, and values and files name one dtype many times).

    >>> array_dtype_name(np.dtype(np.float32))
    'float32'
    """
    name = _array_dtype_names.get(dtype)
    if name is None:
        name = _array_dtype_names[dtype] = dtype.name
    return name


_array_dtype_names: dict[np.dtype, str] = {}


# Why a Value has no array (``Value.dropped``).
DROPPED_PASS = "pass"  # the capture policy kept no arrays for this pass (keep_passes)
DROPPED_BUDGET = "budget"  # the values memory budget was used up
DROPPED_REASONS = {DROPPED_PASS: "not kept for this pass",
                   DROPPED_BUDGET: "over the memory budget"}


@dataclass
class Value:
    """A captured forward value or gradient.

    ``array`` holds the whole array (always on the host, numpy) while the trace is under its
    memory budget; beyond it ``array`` is None and only ``stats`` remain (``summarized``).
    ``dropped`` says why: ``"pass"`` (the capture policy kept no arrays for the pass) or
    ``"budget"`` (the memory budget was used up); None in traces that predate it.
    """

    shape: tuple[int, ...]
    dtype: str  # "float32", "int64", ...
    stats: Stats
    array: np.ndarray | None = None
    dropped: str | None = None  # why array is None: DROPPED_PASS or DROPPED_BUDGET

    @property
    def summarized(self) -> bool:
        return self.array is None

    def __eq__(self, other) -> bool:
        # The generated __eq__ would compare arrays elementwise (and fail on bool()).
        if not isinstance(other, Value):
            return NotImplemented
        if (self.shape, self.dtype, self.stats, self.dropped) != (
                other.shape, other.dtype, other.stats, other.dropped):
            return False
        if self.array is None or other.array is None:
            return self.array is None and other.array is None
        return bool(np.array_equal(self.array, other.array,
                                   equal_nan=self.array.dtype.kind in "fc"))

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize

    @property
    def dropped_reason(self) -> str:
        """Why only statistics are kept, in words ("" when the array is here)."""
        if self.array is not None:
            return ""
        return DROPPED_REASONS.get(self.dropped or "", "statistics only")


class SharedEmptyList(list):
    """An empty list that recorded records share where they have nothing (most tensors
    have no in-place history, most steps no hooks, many nodes save nothing): one object
    per process instead of one per record, a tenth of a recorded graph's memory
    (bench/bench_trace.py (c)). It equals ``[]`` and reads as one; adding to it raises --
    give the record a list of its own instead (``record.versions = [change]``).

    >>> record = TensorRecord(0, (2,), "float32", versions=NO_ITEMS)
    >>> record.versions == [], len(record.versions)
    (True, 0)
    """

    __slots__ = ()

    def _refuse(self, *args, **kwargs):
        raise TypeError(
            "this empty list is shared by trace records that have nothing here; assign a "
            "list of the record's own instead (e.g. record.versions = [change])")

    append = extend = insert = __setitem__ = __iadd__ = __imul__ = _refuse

    def __reduce__(self):
        return "NO_ITEMS"  # the one instance: copies and pickles refer to it


NO_ITEMS = SharedEmptyList()


class SharedNones(list):
    """A read-only list of ``None``s that structure-only steps share (``Step.grads_in``,
    ``grads_out``: one slot per gradient, no values captured): one list per length per
    process instead of two per step, as SharedEmptyList does for empty lists. It equals
    ``[None] * n`` and reads as one; changing it raises -- assign a list of the record's
    own instead.

    >>> nones(2) == [None, None], nones(2) is nones(2)
    (True, True)
    """

    __slots__ = ()

    _refuse = SharedEmptyList._refuse
    append = extend = insert = __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    pop = remove = clear = sort = reverse = _refuse

    def __reduce__(self):
        return nones, (len(self),)  # the shared instance: copies and pickles refer to it


_nones: dict[int, SharedNones] = {}


def nones(count: int) -> list:
    """The shared read-only list of ``count`` Nones (an empty count: NO_ITEMS)."""
    shared = _nones.get(count)
    if shared is None:
        if count == 0:
            return NO_ITEMS
        shared = SharedNones([None] * count)
        if len(_nones) < 256:  # a node with thousands of edges: a list of its own
            _nones[count] = shared
    return shared


class SharedEmptyDict(dict):
    """The empty dict that recorded nodes without op parameters share (``attrs``), as
    SharedEmptyList: it equals ``{}``; adding to it raises."""

    __slots__ = ()

    def _refuse(self, *args, **kwargs):
        raise TypeError(
            "this empty dict is shared by trace records that have nothing here; assign a "
            "dict of the record's own instead (e.g. record.attrs = {'dim': 0})")

    __setitem__ = __delitem__ = update = setdefault = pop = popitem = __ior__ = _refuse

    def __reduce__(self):
        return "NO_ATTRS"  # the one instance: copies and pickles refer to it


NO_ATTRS = SharedEmptyDict()


class SharedAttrs(dict):
    """Op parameters that recorded nodes of one op class with the same values share
    (``attrs``: ``{'shapes': [[8], [8]]}`` on every AddBackward0 of a chain): it equals
    the dict it holds; changing it raises; copies and pickles are plain dicts."""

    __slots__ = ()

    def _refuse(self, *args, **kwargs):
        raise TypeError(
            "this dict of op parameters is shared by trace records that have the same ones; "
            "assign a dict of the record's own instead (e.g. record.attrs = {'dim': 0})")

    __setitem__ = __delitem__ = update = setdefault = pop = popitem = clear = __ior__ = \
        _refuse

    def __reduce__(self):
        return dict, (dict(self),)


@dataclass
class VersionChange:
    """One in-place mutation of a tensor: the op, the version it made, and where."""

    version: int
    op: str  # "add_", "mul_", "__setitem__", "zero_", ...
    site: Site | None = None


@dataclass
class TensorRecord:
    id: int
    shape: tuple[int, ...]
    dtype: str
    device: str = "cpu"
    name: str | None = None  # w1, x, loss, layer1.weight, or None when unknown
    requires_grad: bool = False
    is_leaf: bool = True
    grad_fn: int | None = None  # id of the node that produced it (None for leaves)
    output_nr: int = 0
    base: int | None = None  # tensor id of the view's base, when it is a view
    is_parameter: bool = False
    versions: list[VersionChange] = field(default_factory=list)  # in-place history
    value: Value | None = None  # forward value, when captured
    grad: Value | None = None  # .grad after the last pass that reached it (per pass:
    # Step.grad_after on the step that accumulated into it)
    site: Site | None = None  # where it was created

    @property
    def version(self) -> int:
        return self.versions[-1].version if self.versions else 0

    @property
    def label(self) -> str:
        return self.name if self.name else f"t{self.id}"


@dataclass
class SavedRecord:
    """A tensor a node saved for backward, with its version at save time."""

    tensor: int  # tensor id
    version: int  # version when saved
    nbytes: int
    slot: str = ""  # "self", "other", "result", or "0", "1" for ctx.save_for_backward
    is_output: bool = False  # the node saved its own output (e.g. ExpBackward0's result)


@dataclass
class NodeRecord:
    id: int
    name: str  # grad_fn.name(): "MulBackward0", "MyReLUBackward", "AccumulateGrad"
    kind: str = "op"  # "op" (built-in), "function" (user autograd.Function), "accumulate"
    inputs: list[int | None] = field(default_factory=list)  # tensor ids of forward inputs
    outputs: list[int] = field(default_factory=list)  # tensor ids of forward outputs
    next: list[tuple[int | None, int]] = field(default_factory=list)  # next_functions
    saved: list[SavedRecord] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)  # dim, keepdim, ... (JSON-able)
    site: Site | None = None
    module: str | None = None  # nn.Module scope, "layer1.linear"
    leaf: int | None = None  # for AccumulateGrad: the tensor id it accumulates into

    @property
    def saved_bytes(self) -> int:
        return sum(saved.nbytes for saved in self.saved)


@dataclass
class HookRecord:
    """A hook that fired during a step."""

    kind: str  # "tensor", "pre", "post", "retain_grad"
    name: str  # the hook function's qualified name
    changed: bool = False  # the hook returned a replacement gradient


@dataclass
class Step:
    index: int  # position in the pass, from 0
    node: int  # node id
    grads_in: list[Value | None] = field(default_factory=list)  # one per node output
    grads_out: list[Value | None] = field(default_factory=list)  # one per next_functions edge
    hooks: list[HookRecord] = field(default_factory=list)
    accumulated: int | None = None  # tensor id whose .grad this step accumulated into
    duration_ns: int = 0
    error: str | None = None  # the exception raised by this step, when it failed
    grad_after: Value | None = None  # .grad of ``accumulated`` right after this step


ORIGIN_USER = "user"  # the program called backward() or autograd.grad()
ORIGIN_GRADCHECK = "gradcheck"  # a probe of gradcheck / gradgradcheck


@dataclass
class BackwardPass:
    """One ``backward()`` or ``autograd.grad()`` call and the steps it ran.

    ``label`` says what started it (``backward(loss)``, ``grad(y, x)``, ``gradcheck(f)``) and
    ``site`` where. A pass whose structure was summarized to stay within the trace's
    structure budget keeps no steps: ``summarized_steps`` counts them and ``op_counts`` says
    how many ran each op.
    """

    index: int
    kind: str = "backward"  # "backward" or "grad"
    roots: list[int] = field(default_factory=list)  # tensor ids backward started from
    site: Site | None = None
    retain_graph: bool = False
    create_graph: bool = False
    values_captured: bool = True  # False when this pass kept structure only
    steps: list[Step] = field(default_factory=list)
    error: str | None = None
    origin: str = ORIGIN_USER  # ORIGIN_USER or ORIGIN_GRADCHECK
    label: str = ""  # what started the pass, e.g. "backward(loss)"
    summarized: bool = False  # steps dropped to stay within the structure budget
    summarized_steps: int = 0  # how many steps ran, when summarized
    op_counts: dict[str, int] = field(default_factory=dict)  # node name -> steps, summarized

    @property
    def step_count(self) -> int:
        """Steps the pass ran (recorded or summarized)."""
        return self.summarized_steps if self.summarized else len(self.steps)

    @property
    def is_user(self) -> bool:
        return self.origin == ORIGIN_USER

    def describe(self) -> str:
        """``backward(loss) at train.py:31``: what started the pass, and where."""
        label = self.label or f"{self.kind}()"
        return f"{label} at {self.site}" if self.site is not None else label

    def steps_by_node(self) -> dict[int, Step]:
        """node id -> the first step that ran it in this pass.

        >>> backward = BackwardPass(0, steps=[Step(0, node=4), Step(1, node=2)])
        >>> {node: step.index for node, step in backward.steps_by_node().items()}
        {4: 0, 2: 1}
        """
        found: dict[int, Step] = {}
        for step in self.steps:
            found.setdefault(step.node, step)
        return found

    def grads_after(self) -> dict[int, Value]:
        """tensor id -> its ``.grad`` after this pass, for every leaf the pass accumulated
        into (empty for traces recorded before per-pass gradients)."""
        found: dict[int, Value] = {}
        for step in self.steps:
            if step.accumulated is not None and step.grad_after is not None:
                found[step.accumulated] = step.grad_after
        return found


@dataclass
class Violation:
    """Something wrong, with the sites that explain it.

    kind is one of:
        "inplace_saved"  a tensor saved for backward was modified in place
                         (node = the saving node, site = the in-place op's line,
                          other_site = the saving node's forward line)
        "inplace_leaf"   an in-place op on a leaf that requires grad
        "nan" / "inf"    a NaN or Inf first appeared (node = producer, site = its forward line;
                         phase says "forward" or "backward"; cause and detail say why,
                         other_site is the masking op's line for the where trap)
        "freed_graph"    backward through a graph an earlier pass freed (pass_index = the
                         pass that freed it)

    ``message`` is written from the other fields by ``tracing.text.violation_message``
    (again once tensors are named); every view describes a violation through that module.
    """

    kind: str
    message: str
    tensor: int | None = None
    node: int | None = None
    site: Site | None = None
    other_site: Site | None = None
    saved_version: int | None = None
    current_version: int | None = None
    phase: str = "forward"  # "forward" or "backward"
    pass_index: int | None = None
    step_index: int | None = None
    # NaN/Inf only (causes.py): what made the value, as a key of text.CAUSE_TEXT, and
    # its evidence (input, element indices and values, counts, upstream node; JSON-able).
    cause: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    # A NaN whose inputs already held Inf (no NaN): the first NaN, a consequence of an Inf
    # found earlier; reported when Inf does not count (report.findings(inf=False)).
    from_nonfinite: bool = False
    op: str | None = None  # the in-place op ("add_"), for the in-place kinds
    input_nr: int | None = None  # backward NaN/Inf: the input whose gradient went bad


# Flow kinds: how values moved without a node, so that no gradient follows them back.
FLOW_KINDS = ("detach", "data", "detach_", "no_grad", "untracked", "integer", "item",
              "tolist", "numpy", "grad_reset")


@dataclass
class Flow:
    """Values that moved from ``sources`` to ``results`` without a node in the graph: the
    gradient stops here. Recorded only when a source is in the graph (requires grad) or
    came out of an earlier flow.

    kind is one of:
        "detach" / "data" / "detach_"  ``x.detach()``, ``x.data``, ``x.detach_()``
        "no_grad"      an op run while grad mode was off (``op``: its grad_fn name)
        "untracked"    an op none of whose inputs required grad (a detached value, used on)
        "integer"      an op whose results are integer or bool (argmax, a comparison)
        "item" / "tolist" / "numpy"  a round trip: ``results`` were made from data equal
                       to what ``sources`` gave out (``other_site``: where it left)
        "grad_reset"   ``.grad`` of ``sources[0]`` set to None (``zero_grad()``) after
                       pass ``pass_index``
    """

    kind: str
    sources: list[int] = field(default_factory=list)  # tensor ids
    results: list[int] = field(default_factory=list)  # tensor ids
    op: str = ""  # the op's grad_fn name, for "no_grad" and "untracked"
    site: Site | None = None
    other_site: Site | None = None  # round trips: where the value left the graph
    pass_index: int | None = None  # "grad_reset": the last pass before the reset


@dataclass
class ExceptionRecord:
    """The exception that ended a traced program, if any."""

    type: str
    message: str
    site: Site | None = None
    traceback: str = ""


@dataclass(repr=False)
class Trace:
    tensors: dict[int, TensorRecord] = field(default_factory=dict)
    nodes: dict[int, NodeRecord] = field(default_factory=dict)
    passes: list[BackwardPass] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    exception: ExceptionRecord | None = None
    flows: list[Flow] = field(default_factory=list)  # value flow outside the graph
    # program, argv, tracegrad version, budget, capture policy, summarized-value count...
    metadata: dict[str, Any] = field(default_factory=dict)
    # The tensor ids the trace was made from (``from_tensor``, ``render(t)``), in the order
    # given; empty for a recording, whose passes name their own roots.
    roots: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.read_legacy_roots()

    def read_legacy_roots(self) -> None:
        """Move roots kept in metadata (files written before ``roots`` was a field: "root"
        from from_tensor, "roots" from render) into the field. The decoder calls it too,
        as it fills records without running ``__init__``."""
        metadata = self.metadata
        if not self.roots and isinstance(metadata, dict):
            if metadata.get("roots") is not None:
                self.roots = metadata.pop("roots")
            elif metadata.get("root") is not None:
                self.roots = [metadata.pop("root")]

    # -- navigation ---------------------------------------------------------------------
    def node(self, node_id: int) -> NodeRecord:
        return self.nodes[node_id]

    def tensor(self, tensor_id: int) -> TensorRecord:
        return self.tensors[tensor_id]

    def iter_nodes(self) -> Iterator[NodeRecord]:
        """Nodes in id (= recording) order."""
        return iter(sorted(self.nodes.values(), key=lambda node: node.id))

    def user_passes(self) -> list[BackwardPass]:
        """The passes the program itself started (not gradcheck's probes), in order.

        >>> trace = Trace(passes=[BackwardPass(0), BackwardPass(1, origin="gradcheck")])
        >>> [backward_pass.index for backward_pass in trace.user_passes()]
        [0]
        """
        return [backward_pass for backward_pass in self.passes if backward_pass.is_user]

    def grad_after(self, tensor_id: int, pass_index: int) -> Value | None:
        """``.grad`` of a tensor as it was after pass ``pass_index``: the last accumulation
        into it in that pass or before; None when no pass up to it reached the tensor or
        the trace predates per-pass gradients."""
        for backward_pass in reversed(self.passes[:pass_index + 1]):
            for step in reversed(backward_pass.steps):
                if step.accumulated == tensor_id and step.grad_after is not None:
                    return step.grad_after
        return None

    def edges(self) -> Iterator[tuple[int, int, int]]:
        """(node id, next node id, input_nr) for every edge, in a deterministic order."""
        for node in self.iter_nodes():
            for next_id, input_nr in node.next:
                if next_id is not None:
                    yield node.id, next_id, input_nr

    # -- reading the graph ----------------------------------------------------------------
    def tensor_nodes(self, tensor_ids: Iterable[int]) -> list[int]:
        """The node behind each tensor: its grad_fn, or for a leaf its AccumulateGrad (when
        recorded); tensors with neither are skipped.

        >>> trace = Trace(tensors={0: TensorRecord(0, (), "float32", grad_fn=5)})
        >>> trace.tensor_nodes([0, 9])
        [5]
        """
        found: list[int] = []
        accumulators = None
        for tensor_id in tensor_ids:
            record = self.tensors.get(tensor_id)
            if record is None:
                continue
            if record.grad_fn is not None:
                found.append(record.grad_fn)
                continue
            if accumulators is None:
                accumulators = {node.leaf: node.id for node in self.iter_nodes()
                                if node.leaf is not None}
            if tensor_id in accumulators:
                found.append(accumulators[tensor_id])
        return found

    def root_nodes(self) -> list[int]:
        """The nodes a reading of the graph starts from: those of ``roots`` when the trace
        has roots, else the nodes nothing points to (the graph's outputs), in recording
        order, AccumulateGrad only when nothing else is there (a lone leaf).

        >>> Trace(nodes={1: NodeRecord(1, "SumBackward0", next=[(0, 0)]),
        ...              0: NodeRecord(0, "AccumulateGrad", kind="accumulate")}).root_nodes()
        [1]
        """
        from_roots = self.tensor_nodes(self.roots)
        if from_roots:
            return list(dict.fromkeys(from_roots))
        pointed_to = {next_id for _, next_id, _ in self.edges()}
        candidates = [node for node in self.iter_nodes() if node.id not in pointed_to]
        inner = [node.id for node in candidates if node.kind != "accumulate"
                 and node.name != "AccumulateGrad"]
        return inner if inner else [node.id for node in candidates]

    def output_tensors(self) -> list[int]:
        """The tensors a picture marks as outputs: ``roots``, else every pass's roots,
        else the first output of each node nothing consumes (AccumulateGrad aside)."""
        if self.roots:
            return [root for root in self.roots if root in self.tensors]
        from_passes = [root for backward in self.passes for root in backward.roots]
        if from_passes:
            return from_passes
        consumed = {next_id for node in self.nodes.values() for next_id, _ in node.next}
        return [node.outputs[0] for node in self.iter_nodes()
                if node.kind != "accumulate" and node.id not in consumed and node.outputs]

    def reachable(self, node_ids: Iterable[int]) -> list[int]:
        """Node ids reachable from ``node_ids`` along ``next`` (those included), depth
        first in edge order: the same order on every run. Iterative, so a graph 100,000
        nodes deep works.

        >>> trace = Trace(nodes={0: NodeRecord(0, "A", next=[(1, 0), (2, 0)]),
        ...                      1: NodeRecord(1, "B", next=[(2, 0)]), 2: NodeRecord(2, "C"),
        ...                      3: NodeRecord(3, "D")})
        >>> trace.reachable([0])
        [0, 1, 2]
        """
        order: list[int] = []
        seen: set[int] = set()
        nodes = self.nodes
        stack = [node_id for node_id in reversed(list(node_ids)) if node_id is not None]
        while stack:
            node_id = stack.pop()
            if node_id in seen or node_id not in nodes:
                continue
            seen.add(node_id)
            order.append(node_id)
            stack.extend(next_id for next_id, _ in reversed(nodes[node_id].next)
                         if next_id is not None)
        return order

    def locate(self, node_id: int, pass_index: int | None = None
               ) -> tuple[int, int] | None:
        """(pass, step) of the first step that ran ``node_id`` -- in ``pass_index`` when
        given, else in any pass -- or None when no recorded step ran it.

        >>> Trace(passes=[BackwardPass(0), BackwardPass(1, steps=[Step(0, node=7)])]).locate(7)
        (1, 0)
        """
        passes = self.passes
        indexes = range(len(passes)) if pass_index is None else (
            [pass_index] if 0 <= pass_index < len(passes) else [])
        for index in indexes:
            for step in passes[index].steps:
                if step.node == node_id:
                    return index, step.index
        return None

    # -- notebooks and the REPL -------------------------------------------------------
    def __repr__(self) -> str:
        """One short line, however large the trace (the generated repr printed every record).

        >>> Trace()
        <Trace: 0 nodes, 0 backward passes, 0 violations>
        """
        from .notebook import trace_repr

        return trace_repr(self)

    def _repr_svg_(self) -> str | None:
        """The picture, for Jupyter; None (text is shown instead) without Graphviz."""
        from .notebook import trace_svg

        return trace_svg(self)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, str]:
        """SVG and text for Jupyter: a cell ending in ``tr`` draws the graph; without
        Graphviz, the summary and how to install it."""
        from .notebook import trace_mimebundle

        return trace_mimebundle(self, include, exclude)

    # -- answers (implemented in why.py) -----------------------------------------------
    def why_no_grad(self, tensor, pass_index: int | None = None):
        """Why ``tensor`` (a live tensor, a name such as ``"w1"``, or a tensor id) has no
        gradient, or a zero one, after the last backward pass (or pass ``pass_index``):
        a ``WhyNoGrad`` that prints as the explanation.

        >>> import tracegrad
        >>> w = tracegrad.ones(2, requires_grad=True)
        >>> with tracegrad.record() as tr:
        ...     loss = (w.detach() * 3).sum()
        >>> tr.why_no_grad(w).cause
        'never_called'
        """
        from .why import why_no_grad

        return why_no_grad(self, tensor, pass_index)

    # -- file and text (implemented in store.py and summary.py) -------------------------
    def save(self, path, timings: bool = True) -> None:
        """Write this trace to a .tgtrace file (``timings=False``: byte-identical files)."""
        from .store import save_trace

        save_trace(self, path, timings=timings)

    def summary(self) -> str:
        """Nodes by op, saved-tensor bytes, backward passes and steps, violations."""
        from .summary import summarize

        return summarize(self)
