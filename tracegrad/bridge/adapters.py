"""Torch tensors and grad_fn nodes presented the way the recorder reads tracegrad's own.

The recorder, the graph builder and the violation finder read a handful of attributes of
live objects (``tensor._array``, ``node.next_functions``, ``node._saved``, ...). An adapter
gives a torch object exactly those, so one recorder serves both engines and nothing above
the Trace learns which engine ran.

One ``Registry`` holds the adapters of a recording (or of one ``from_tensor`` walk), one per
torch tensor and one per torch node, so identity in the trace follows identity in torch:

* a tensor adapter holds its torch tensor weakly and leaves the registry with it;
* a node cannot be weakly referenced in torch, and its Python object comes and goes, so a
  node is keyed by its ``metadata`` dict (one per C++ node, alive exactly as long as it).
  While recording, the adapter holds nothing of the node; the backward hooks the session
  registers on the node tell when it dies (they die with it). A ``from_tensor`` walk holds
  the nodes for the duration of the walk.

Importing this module imports torch: only the bridge does, and only when the program did.
"""

from __future__ import annotations

import functools
import re
import weakref

import numpy as np
import torch

from ..autograd.node import SavedTensor, VersionHistory
from ..tensor import Tensor

_ACCUMULATE_PREFIX = "torch::autograd::"
# Attributes of a node that torch keeps for backward but that are machinery, not parameters.
_SHAPE_SUFFIXES = ("_sym_sizes", "_sym_strides", "_sym_storage_offset", "_sym_argsize")
# dtypes NumPy cannot hold: their values are captured widened (the record keeps the name).
_WIDENED = {torch.bfloat16: torch.float32, torch.complex32: torch.complex64}
for _name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"):
    if hasattr(torch, _name):
        _WIDENED[getattr(torch, _name)] = torch.float32
_STRIDED = torch.strided
_EXPECTED_VERSION = re.compile(r"expected version (\d+)")


class ForeignDType:
    """A dtype NumPy has no name for (bfloat16): what graph records need of it."""

    __slots__ = ("kind", "name")

    def __init__(self, name: str, kind: str) -> None:
        self.name, self.kind = name, kind


_dtype_names: dict = {}
_numpy_dtypes: dict = {}


def dtype_name(dtype) -> str:
    """``torch.float32`` -> ``"float32"``: tracegrad's (and NumPy's) names."""
    name = _dtype_names.get(dtype)
    if name is None:
        name = _dtype_names[dtype] = str(dtype).rsplit(".", 1)[-1]
    return name


def numpy_dtype(dtype):
    """The NumPy dtype of a torch dtype, or a ForeignDType where NumPy has none."""
    found = _numpy_dtypes.get(dtype)
    if found is None:
        try:
            found = torch.empty(0, dtype=dtype).numpy().dtype
        except (TypeError, RuntimeError):
            found = ForeignDType(dtype_name(dtype), "f" if dtype.is_floating_point else "c"
                                 if dtype.is_complex else "i")
        _numpy_dtypes[dtype] = found
    return found


def host_array(tensor) -> np.ndarray:
    """A NumPy array of a torch tensor's values: a view of its memory on the CPU (no copy),
    a host copy elsewhere; widened where NumPy has no such dtype."""
    # Per gradient of every step (bench/bench_bridge.py): most are plain CPU tensors that
    # numpy() takes as they are, and it refuses every other kind (another device or
    # layout, a dtype NumPy lacks, a conjugate or negative bit), each then handled below
    # with the cheapest check torch offers (``device.type`` alone costs a microsecond).
    data = tensor.detach() if tensor.requires_grad else tensor
    try:
        return data.numpy()
    except (RuntimeError, TypeError):
        pass
    if not data.is_cpu:
        data = data.cpu()
    layout = data.layout
    if layout is not _STRIDED and layout != _STRIDED:
        data = data.to_dense()
    widened = _WIDENED.get(data.dtype)
    if widened is not None:
        data = data.to(widened)
    if data.is_conj():
        data = data.resolve_conj()
    if data.is_neg():
        data = data.resolve_neg()
    return data.numpy()


def node_name(fn) -> str:
    """PyTorch's grad_fn name as traces show it: ``AccumulateGrad`` (torch's own ``name()``
    says ``torch::autograd::AccumulateGrad``; torchviz and tracegrad show the class name)."""
    name = fn.name()
    name = name.removeprefix(_ACCUMULATE_PREFIX)
    return name


_class_names: dict = {}  # node type -> its name, for types named after their one node kind


def class_node_name(fn) -> str:
    """``node_name(fn)``, known per type after the first node of it (one per node made
    while recording). Kept only where the type's own name says it (``MulBackward0``,
    ``MyReLUBackward``): a type shared by several C++ node kinds is asked every time."""
    kind = type(fn)
    name = _class_names.get(kind)
    if name is None:
        name = node_name(fn)
        if name == kind.__name__:
            _class_names[kind] = name
    return name


def storage_key(tensor) -> int | None:
    """What in-place changes of ``tensor`` are grouped by: its storage's address."""
    try:
        # The storage's address is the tensor's less its offset: three getters, where
        # untyped_storage() makes a Python storage object (over a microsecond for a tensor
        # just made, and every saved tensor and in-place change asks). An empty tensor's
        # address is 0 whatever its storage: asked the slow way.
        address = tensor.data_ptr()
        if address:
            return address - tensor.storage_offset() * tensor.element_size()
        return tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError, TypeError):
        return None  # no storage (sparse, nested, functional wrappers)


# -- tensors ---------------------------------------------------------------------------------
class TorchTensor(Tensor):
    """A torch tensor as the recorder reads a tracegrad Tensor.

    The torch tensor is held weakly: a trace never keeps a program's tensors alive. Its
    ``_array`` is a NumPy view of the tensor's memory (on the CPU), made on first use.
    ``_trace_fields`` (shape, dtype name, device, is a Parameter) is what a TensorRecord
    needs, read once; the rest follows the live tensor (``grad_fn`` after an in-place op).
    """

    def __init__(self, tensor, registry: Registry) -> None:
        self.__dict__ = _adapter_fields(tensor, registry)

    @staticmethod
    def made(tensor, registry: Registry) -> TorchTensor:
        """The fast constructor (one per tensor the program makes while recorded): no
        ``Tensor.__new__``/``__init__`` chain, the fields set in one assignment."""
        adapter = _new_object(TorchTensor)
        adapter.__dict__ = _adapter_fields(tensor, registry)
        return adapter

    @property
    def subject(self):
        """The torch tensor (None once the program dropped it)."""
        return self._ref()

    @property
    def _array(self):
        cached = self._cached
        if cached is not None:
            return cached
        tensor = self._ref()
        if tensor is None:
            return np.zeros((0,), np.float32)  # gone: no values to show
        array = host_array(tensor)
        if self._on_cpu:  # a view of the tensor's memory stays current (not a GPU copy)
            state = self.__dict__
            state["_cached"] = array
            registry = self._registry
            if registry.session is not None:
                # The view holds the tensor's memory: without this, memory the program let
                # go stayed taken until the registry's next sweep (thousands of tensors,
                # every gradient and temporary: hundreds of MB, and each new allocation
                # page-faulted fresh memory). The view goes with the tensor, as the memory
                # does untraced. (A walk holds its tensors while it reads them anyway.)
                state["_ref"] = _DroppingRef(tensor, registry._tensor_gone)
        return array

    def refresh(self) -> None:
        """After an in-place op that may have moved the tensor's memory (``set_``,
        ``resize_``, ``.data =``) or changed its shape."""
        tensor = self._ref()
        self.__dict__["_cached"] = None
        if tensor is not None:
            fields = self._trace_fields
            self.__dict__["_trace_fields"] = (tuple(tensor.shape), dtype_name(tensor.dtype),
                                              fields[2], fields[3])

    @property
    def requires_grad(self) -> bool:
        tensor = self._ref()
        return bool(tensor.requires_grad) if tensor is not None else False

    @property
    def grad_fn(self):
        tensor = self._ref()
        if tensor is None:
            return None
        fn = tensor.grad_fn
        return self._registry.node(fn) if fn is not None else None

    @property
    def is_leaf(self) -> bool:
        tensor = self._ref()
        return tensor is None or tensor.grad_fn is None

    @property
    def _output_nr(self) -> int:
        tensor = self._ref()
        return int(tensor.output_nr) if tensor is not None else 0

    @property
    def _base(self):
        tensor = self._ref()
        base = tensor._base if tensor is not None else None
        return self._registry.tensor(base) if base is not None else None

    @property
    def name(self) -> str | None:
        tensor = self._ref()
        if tensor is None:
            return None
        own = tensor.__dict__.get("name")  # set with tracegrad.name(t, "w1")
        if isinstance(own, str) and own:
            return own
        entry = self._registry.names.get(id(tensor))  # a parameter's or buffer's name
        if entry is not None and entry[0]() is tensor:
            return entry[1]
        # The variable it was passed as to a custom Function's apply(), where tracegrad's
        # engine names it too (see custom.py).
        return self.__dict__.get("_apply_name")

    @property
    def grad(self):
        tensor = self._ref()
        grad = tensor.grad if tensor is not None else None
        return self._registry.tensor(grad) if grad is not None else None

    @property
    def _version(self) -> int:
        tensor = self._ref()
        return int(tensor._version) if tensor is not None else 0

    @property
    def _version_counter(self):
        """The group of in-place changes this tensor's memory belongs to (the violation
        finder watches saved tensors by it)."""
        tensor = self._ref()
        return self._registry.group(tensor) if tensor is not None else None

    @property
    def _variable_key(self) -> int | None:
        """What the user's variables holding this tensor are found by: the torch tensor."""
        tensor = self._ref()
        return id(tensor) if tensor is not None else None

    def __repr__(self) -> str:
        shape, dtype, device, _ = self._trace_fields
        return f"<torch tensor {dtype} {list(shape)} on {device}>"


_new_object = object.__new__


class _DroppingRef(weakref.ref):
    """A weak reference to a tensor whose values an adapter caches (see TorchTensor._array):
    its callback drops the cache, and the registry's entry, when the program drops the tensor.
    It carries the entry's key: one object per cached tensor, no closure."""

    __slots__ = ("key",)

    def __init__(self, tensor, callback) -> None:
        super().__init__(tensor, callback)
        self.key = id(tensor)

    def __copy__(self):
        return self  # as copy treats a plain weak reference: atomic

    def __deepcopy__(self, memo):
        return self


def _adapter_fields(tensor, registry: Registry) -> dict:
    dtype = tensor.dtype
    name = _dtype_names.get(dtype)
    if name is None:
        name = dtype_name(dtype)
    on_cpu = tensor.is_cpu
    kind = type(tensor)
    is_parameter = _parameter_types.get(kind)
    if is_parameter is None:
        is_parameter = _is_parameter(kind)
    return {"_registry": registry,
            "_trace_fields": (tuple(tensor.shape), name, "cpu" if on_cpu else str(tensor.device),
                              is_parameter),
            "_on_cpu": on_cpu, "_cached": None,
            "_held": None,  # a strong reference, for tensors only a walk knows of
            "_ref": weakref.ref(tensor)}


_CPU = torch.device("cpu")


def _device_text(device) -> str:
    # Per output of every node made: comparing with the CPU device is ~50 ns, where
    # ``device.type`` or ``str(device)`` costs a microsecond.
    return "cpu" if device == _CPU else str(device)
_parameter_types: dict = {}


def _is_parameter(kind: type) -> bool:
    # Per type: isinstance(t, Parameter) goes through a Python __instancecheck__ each time.
    found = _parameter_types.get(kind)
    if found is None:
        found = _parameter_types[kind] = issubclass(kind, torch.nn.Parameter)
    return found


class VersionGroup:
    """In-place changes of one storage (a tensor and its views): the ops, versions, lines."""

    __slots__ = ("__weakref__", "history", "last_op")

    def __init__(self) -> None:
        # (version, op name, Site): the latest changes, bounded as the engine's counters
        # keep them (an optimizer's update of a parameter adds one every step)
        self.history = VersionHistory()
        self.last_op = None

    def note(self, version: int, op_name: str, site) -> None:
        self.history.add(version, op_name, site)
        self.last_op = op_name


# -- saved tensors ---------------------------------------------------------------------------
class _Held:
    """What a live saved tensor's ``_array`` stands for: its size (its values stay torch's)."""

    __slots__ = ("nbytes",)

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes


class _SavedCounter:
    """A torch saved tensor's version counter, as the violation finder reads one."""

    __slots__ = ("saved",)

    def __init__(self, saved: TorchSaved) -> None:
        self.saved = saved

    @property
    def value(self) -> int:
        data = self.saved._live_data()
        return int(data._version) if data is not None else self.saved.version

    @property
    def group(self):
        return self.saved._group

    @property
    def history(self):
        group = self.saved._group
        return group.history if group is not None else None

    @property
    def last_op(self):
        group = self.saved._group
        return group.last_op if group is not None else None


class TorchSaved(SavedTensor):
    """A tensor a torch node saved for backward (``grad_fn._saved_self``,
    ``ctx.save_for_backward``), read through torch's own handle to it: whether backward freed
    it, and the version it is at now (without the version check that unpacking does).

    torch's handle points into the node (or, for a custom Function, into its ctx) without
    keeping it alive, so it is touched only while that is known to be alive and the handle
    valid: see _live_data.
    """

    __slots__ = ("_ctx", "_group", "_held", "_index", "_is_output", "_node", "_raw",
                 "_source", "nbytes", "slot")

    def __init__(self, node: TorchNode, slot: str, raw, version: int, nbytes: int,
                 source, producer, output_nr: int, is_output: bool, group, held=None) -> None:
        self._node, self.slot, self._raw = node, slot, raw
        self.version, self.nbytes = int(version), int(nbytes)
        self._source, self.producer, self.output_nr = source, producer, int(output_nr)
        self._is_output, self._group, self._held = is_output, group, held
        self._ctx, self._index = None, 0
        self.requires_grad = False
        self.tensor = self.node_ref = self.original = None

    def _live_data(self):
        """The saved tensor's data as torch holds it now, or None once freed or gone."""
        node = self._node
        if not node._alive:
            return None  # the node is gone: torch's handle would point at freed memory
        if self._ctx is not None:
            # A custom Function's ctx empties its list of saved tensors when backward frees
            # them (every handle into it would dangle): ask the ctx afresh.
            ctx = self._ctx()
            if ctx is None:
                return None
            try:
                raws = ctx._raw_saved_tensors
            except RuntimeError:
                return None  # freed by backward
            raw = raws[self._index] if self._index < len(raws) else None
            return raw.data if raw is not None else None
        if "." in self.slot and (node._freed_by is not None or node._unsure):
            return None  # a saved list (x[indices]) is emptied by backward: handles dangle
        return self._raw.data

    @property
    def _array(self):
        node = self._node
        if self._ctx is None and node._alive and node._freed_by is None \
                and not node._unsure:
            # Held by a live node no backward freed: no need to ask torch (every recorded
            # node's saved tensors are asked, twice, as the op is recorded).
            return _Held(self.nbytes)
        return _Held(self.nbytes) if self._live_data() is not None else None

    def host_values(self) -> np.ndarray | None:
        """The saved values as a NumPy array while torch still holds them (a NaN's cause
        is read from them), else None."""
        data = self._live_data()
        return host_array(data) if data is not None else None

    @property
    def counter(self):
        return _SavedCounter(self)

    @property
    def is_output(self) -> bool:
        return self._is_output

    def source_tensor(self):
        return self._source


# -- nodes -----------------------------------------------------------------------------------
class _CustomFunction:
    """What marks a node as a user ``autograd.Function`` for the graph builder."""

    _node_kind = "function"


_custom_types: dict = {}


def _is_custom(kind: type) -> bool:
    """Whether a node type is a user autograd.Function's (``MyReLUBackward``)."""
    found = _custom_types.get(kind)
    if found is None:
        found = _custom_types[kind] = issubclass(kind, torch.autograd.function.BackwardCFunction)
    return found


class TorchNode:
    """A torch grad_fn node as the recorder reads a tracegrad Node.

    Public instance attributes are the op's parameters (``dim``, ``keepdim``, ``exponent``,
    from torch's ``_saved_*`` values); everything else is underscored machinery.
    """

    _function = None
    _is_accumulate = False
    _freed_by = None
    _unsure = False  # ran in a backward the session did not see: maybe freed

    def name(self) -> str:
        return self._name

    @functools.cached_property
    def _output_meta(self) -> tuple:
        """(shape, NumPy dtype, device) per output, as tracegrad's nodes keep them: asked
        for only where no tensor stands for an output (a graph the recorder adopts);
        ``_outputs`` is their count."""
        return _output_meta(self.__dict__.pop("_metas"))

    def __repr__(self) -> str:
        return f"<{self._name} (torch)>"


def _saved_layout(fn) -> tuple[tuple[tuple[str, str, str], ...], tuple[tuple[str, str], ...]]:
    """What a node type saves, read once per type (``vars()`` of the type per node would
    cost more than the rest of reading it): ((slot, raw attribute, attribute) per saved
    tensor, in the order a reader expects (see _SLOT_ORDER), (name, attribute) per saved
    parameter), from its ``_saved_*`` / ``_raw_saved_*`` properties in torch's order."""
    names = [key for key in vars(type(fn)) if key.startswith("_saved_")]
    raw = {key[len("_raw_saved_"):] for key in vars(type(fn)) if key.startswith("_raw_saved_")}
    tensors = [key[len("_saved_"):] for key in names if key[len("_saved_"):] in raw]
    # A stable sort by slot gives the order sorting each node's entries would (the items of
    # a saved list share their slot's rank).
    tensors.sort(key=lambda slot: _SLOT_ORDER.get(slot, len(_SLOT_ORDER)))
    params = tuple(key[len("_saved_"):] for key in names if key[len("_saved_"):] not in raw
                   and not key.endswith(_SHAPE_SUFFIXES))
    return (tuple((slot, "_raw_saved_" + slot, "_saved_" + slot) for slot in tensors),
            tuple((param, "_saved_" + param) for param in params
                  if param not in ("next_functions", "variable", "metadata")))


_layouts: dict = {}
# Slots in the order a reader expects (the op's operands first, the result last); a name
# not listed keeps torch's order after these.
_SLOT_ORDER = {name: rank for rank, name in enumerate(
    ("self", "input", "other", "mat1", "mat2", "vec", "weight", "bias", "exponent",
     "indices", "index", "mask", "src", "result"))}


_PLAIN_TYPES = frozenset({int, float, bool, str, type(None)})


def _attr_value(value):
    if type(value) in _PLAIN_TYPES:  # most parameters: no isinstance chain (a microsecond)
        return value
    if isinstance(value, torch.dtype):
        return dtype_name(value)
    if isinstance(value, torch.device):
        return str(value)
    if isinstance(value, torch.Size):
        return tuple(value)
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return None
    return value


def _output_meta(metas) -> tuple:
    """(shape, NumPy dtype, device) per output of a node, as tracegrad's nodes keep them,
    from torch's input metadata of the node (``fn._input_metadata``)."""
    found = []
    for meta in metas:
        dtype = meta.dtype
        numpy = _numpy_dtypes.get(dtype)
        found.append((tuple(meta.shape), numpy if numpy is not None else numpy_dtype(dtype),
                      _device_text(meta.device)))
    return tuple(found)


# -- the registry ----------------------------------------------------------------------------
class Registry:
    """The adapters of one recording session (``session`` given) or of one walk."""

    def __init__(self, session=None) -> None:
        self.session = session
        self._tensors: dict[int, TorchTensor] = {}
        self._sweep_at = 4096
        self._nodes: dict[int, TorchNode] = {}
        # storage address -> weak reference to its VersionGroup: a group lives as long as
        # a saved tensor (or a reader) holds it, so a long run does not keep one per
        # storage it ever saved (dead entries are dropped in sweeps, as tensors' are).
        self._groups: dict[int, weakref.ref] = {}
        self._group_sweep_at = 4096
        # id(tensor) -> (weakref, parameter or buffer name); see modules.py
        self.names: dict[int, tuple] = {}
        self.holding = False  # saved tensors keep their torch tensor (see _saved_record)

    # -- tensors -----------------------------------------------------------------------
    def tensor(self, tensor) -> TorchTensor:
        key = id(tensor)
        tensors = self._tensors
        adapter = tensors.get(key)
        if adapter is not None and adapter._ref() is tensor:
            return adapter
        # A plain weak reference (a callback per tensor costs more than it saves): entries
        # of tensors gone are dropped in sweeps, and a lookup checks the reference (a
        # tensor whose values were read gets a callback then: see TorchTensor._array).
        adapter = _new_object(TorchTensor)
        adapter.__dict__ = _adapter_fields(tensor, self)
        tensors[key] = adapter
        if len(tensors) > self._sweep_at:
            # A copy of the items: a dropping reference's callback (another thread's
            # tensor dying) may remove an entry meanwhile.
            for stale in [key for key, known in list(tensors.items()) if known._ref() is None]:
                tensors.pop(stale, None)
            self._sweep_at = max(4096, 2 * len(tensors))
        return adapter

    def _tensor_gone(self, reference: _DroppingRef) -> None:
        # Per cached tensor that dies (every gradient and temporary of a step): the adapter
        # stays valid for whoever holds it (it reads as a tensor gone); its view is dropped.
        tensors = self._tensors
        adapter = tensors.get(reference.key)
        if adapter is not None:
            state = adapter.__dict__
            if state["_ref"] is reference:
                state["_cached"] = None
                tensors.pop(reference.key, None)

    def known_tensor(self, tensor) -> TorchTensor | None:
        adapter = self._tensors.get(id(tensor))
        return adapter if adapter is not None and adapter._ref() is tensor else None

    def existing_group(self, tensor) -> VersionGroup | None:
        """The group of ``tensor``'s memory if a saved tensor ever made one, else None."""
        key = storage_key(tensor)
        if key is None:
            return None
        reference = self._groups.get(key)
        return reference() if reference is not None else None

    def group(self, tensor) -> VersionGroup | None:
        key = storage_key(tensor)
        if key is None:
            return None
        groups = self._groups
        reference = groups.get(key)
        group = reference() if reference is not None else None
        if group is None:
            group = VersionGroup()
            groups[key] = weakref.ref(group)
            if len(groups) > self._group_sweep_at:
                for stale in [key for key, known in groups.items() if known() is None]:
                    del groups[stale]
                self._group_sweep_at = max(4096, 2 * len(groups))
        return group

    # -- nodes -------------------------------------------------------------------------
    def knows(self, fn) -> bool:
        return id(fn.metadata) in self._nodes

    def known_node(self, fn) -> TorchNode | None:
        return self._nodes.get(id(fn.metadata))

    def node(self, fn, made: list | None = None) -> TorchNode:
        """The adapter of ``fn``, making adapters for it and for every node behind it not
        seen yet (iteratively: a graph 100,000 nodes deep has no recursion limit here);
        the adapters made are appended to ``made``."""
        adapter = self._nodes.get(id(fn.metadata))
        if adapter is not None:
            return adapter
        first = self._new_node(fn)
        created = [(first, fn)]
        pending = [(first, fn)]
        while pending:
            adapter, current = pending.pop()
            edges = []
            for next_fn, input_nr in current.next_functions:
                if next_fn is None:
                    edges.append((None, int(input_nr)))
                    continue
                child = self._nodes.get(id(next_fn.metadata))
                if child is None:
                    child = self._new_node(next_fn)
                    pending.append((child, next_fn))
                    created.append((child, next_fn))
                edges.append((child, int(input_nr)))
            adapter.next_functions = tuple(edges)
        # Saved tensors last: the nodes that produced them are known by now, so reading
        # them never recurses into the graph.
        for adapter, current in created:
            self._read_saved(current, adapter)
        if made is not None:
            made.extend(adapter for adapter, _ in created)
        return first

    def _new_node(self, fn) -> TorchNode:
        # Per node the program makes while recorded: the fields in one dict, the call's
        # site read from the session inline (Session.site_for is the general case).
        kind = type(fn)
        name = _class_names.get(kind)
        if name is None:
            name = class_node_name(fn)
        key = id(fn.metadata)
        sequence = fn._sequence_nr()
        session = self.session
        adapter = _new_object(TorchNode)
        if name == "AccumulateGrad":
            # Made where the leaf is first used, as tracegrad's: the leaf has the site. Its
            # one output is the leaf's, as torch's input metadata of it says (read from the
            # leaf: a node in six is an AccumulateGrad, and _input_metadata makes objects).
            variable = fn.variable
            dtype = variable.dtype
            numpy = _numpy_dtypes.get(dtype)
            adapter.__dict__ = state = {
                "_key": key, "_name": name, "_seq": sequence, "_alive": True,
                "_output_meta": ((tuple(variable.shape),
                                  numpy if numpy is not None else numpy_dtype(dtype),
                                  "cpu" if variable.is_cpu else str(variable.device)),),
                "_outputs": 1, "next_functions": (), "_site": None, "_module": None,
                "_is_accumulate": True, "variable": self.tensor(variable)}
        else:
            site = module = None
            if session is not None:
                current = session._op_site
                if current is not None and current[2] <= sequence < current[3]:
                    site, module = current[0], current[1]
                else:
                    site, module = session.site_for(fn)
            # The outputs' (shape, dtype, device) are read from these only when asked for
            # (TorchNode._output_meta): a reported op's outputs are its tensors, and
            # reading them costs ~4 us per output of every node (bench/bench_bridge.py).
            metas = fn._input_metadata
            adapter.__dict__ = state = {
                "_key": key, "_name": name, "_seq": sequence, "_alive": True,
                "_metas": metas, "_outputs": len(metas), "next_functions": (), "_site": site,
                "_module": module}
            if _is_custom(type(fn)):
                state["_function"] = _CustomFunction
        self._nodes[key] = adapter
        if session is not None:
            session.passes.watch_node(fn, adapter)  # hooks for backward; they tell its death
        else:
            state["_fn"] = fn  # a walk holds the graph while it reads it
        state["_saved"] = ()
        return adapter

    def forget_node(self, key: int, adapter: TorchNode) -> None:
        """The node died (its hooks were released): its metadata's id may be reused.
        (passes.Passes._node_gone does the same inline.)"""
        adapter.__dict__["_alive"] = False
        if self._nodes.get(key) is adapter:
            del self._nodes[key]

    # -- what a node saved -------------------------------------------------------------
    def _read_saved(self, fn, adapter: TorchNode) -> None:
        if adapter._function is _CustomFunction:
            saved = self._custom_saved(fn)
        elif adapter._is_accumulate:
            return
        else:
            layout = _layouts.get(type(fn))
            if layout is None:
                layout = _layouts[type(fn)] = _saved_layout(fn)
            tensor_slots, param_slots = layout
            state = adapter.__dict__
            for param, attribute in param_slots:
                try:
                    value = _attr_value(getattr(fn, attribute))
                except RuntimeError:
                    continue
                if value is not None:
                    state[param] = value
            saved = []
            for slot, raw_attribute, attribute in tensor_slots:
                try:
                    raw = getattr(fn, raw_attribute)
                except RuntimeError:
                    continue  # a saved list that backward already freed
                if isinstance(raw, (list, tuple)):
                    saved.extend((f"{slot}.{index}", item, None)
                                 for index, item in enumerate(raw))
                else:
                    saved.append((slot, raw, attribute))
        records = []
        custom = adapter._function is _CustomFunction
        for slot, raw, attribute in saved:
            record = self._saved_record(fn, adapter, slot, raw, attribute)
            if isinstance(record, TorchSaved):
                if custom:  # read through the ctx (see TorchSaved._live_data)
                    record._ctx, record._index, record._raw = weakref.ref(fn), int(slot), None
                records.append(record)
            elif record is not None and "." not in slot:  # a Python number torch wrapped
                adapter.__dict__[slot] = record.value
        adapter.__dict__["_saved"] = tuple(records)

    def _custom_saved(self, fn) -> list:
        try:
            raws = fn._raw_saved_tensors
        except RuntimeError:
            return []  # freed by a backward that ran before we looked
        return [(str(index), raw, None) for index, raw in enumerate(raws)]

    def _saved_record(self, fn, adapter: TorchNode, slot: str, raw, attribute):
        """A TorchSaved for one saved tensor, or None when nothing is saved there."""
        tensor, version, data = None, None, None
        try:
            tensor = raw.unpack() if attribute is None else getattr(fn, attribute)
        except RuntimeError as error:  # modified in place since it was saved, or freed
            data = raw.data
            if data is None:
                return None
            match = _EXPECTED_VERSION.search(str(error))
            version = int(match.group(1)) if match else int(data._version)
        if tensor is None:
            # Not saved (torch saves an operand only when a gradient needs it), or saved
            # in a way unpacking does not give back: the data, if any, says.
            if data is None:
                data = raw.data
                if data is None:
                    return None
            tensor = data
        elif data is None:
            data = tensor  # the unpacked tensor: the saved data's memory, shape and dtype
        if version is None:
            version = int(tensor._version)
        source, producer, output_nr, is_output = None, None, int(tensor.output_nr), False
        grad_fn = tensor.grad_fn
        if grad_fn is not None and id(grad_fn.metadata) == adapter._key:
            is_output = True
        else:
            known = self.known_tensor(tensor)
            if known is None and grad_fn is None and tensor.dim() == 0 \
                    and not tensor.requires_grad and slot not in _NEVER_NUMBERS:
                # ``y * 3`` saves the 3 as a 0-dim "wrapped number" tensor: the program's
                # number, kept (like tracegrad's engine does) as the node's parameter.
                return _Number(tensor.item())
            source = known if known is not None else self.tensor(tensor)
            if grad_fn is not None:
                producer = self.node(grad_fn)
        # A walk keeps what it describes; a recording only while it reports the op (then
        # the program's memory is the program's again).
        held = tensor if self.session is None or self.holding else None
        return TorchSaved(adapter, slot, raw, version, data.nbytes, source, producer,
                          output_nr, is_output, self.group(data), held)


# Saved slots that hold a 0-d tensor torch computed, never a number of the program's
# (nll_loss's total_weight: tracegrad's engine lists it as a saved tensor too).
_NEVER_NUMBERS = frozenset({"total_weight"})


class _Number:
    """A saved Python number (see _saved_record)."""

    __slots__ = ("value",)

    def __init__(self, value) -> None:
        self.value = value
