"""Turning live tensors and grad_fn nodes into TensorRecords and NodeRecords.

The recorder (which sees ops as they happen) and ``from_tensor`` (which walks a finished
graph backwards from a tensor) share this builder, so both give the same records. Ids come
from counters in order of first sight; live objects are looked up by identity through
weak references, so an identity reused after garbage collection never aliases an old id.

>>> import tracegrad
>>> x = tracegrad.ones(2, requires_grad=True)
>>> trace = from_tensor((x * 2).sum())
>>> [node.name for node in trace.iter_nodes()]
['MulBackward0', 'AccumulateGrad', 'SumBackward0']
"""

from __future__ import annotations

import gc
import math
import weakref
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..autograd.node import (
    _NOT_SAVED,
    Node,
    SavedTensor,
    _kept_input_saved,
)
from ..tensor import Tensor
from .model import (
    NO_ATTRS,
    NO_ITEMS,
    NodeRecord,
    SavedRecord,
    SharedAttrs,
    TensorRecord,
    Trace,
)

# Instance attributes of a node that are machinery, not the op's parameters.
_NODE_MACHINERY = frozenset({"needs_input_grad", "next_functions", "metadata", "variable"})
_MAX_ATTR_ITEMS = 16


@contextmanager
def gc_paused():
    """Walking a graph makes several objects per node, none in a reference cycle: a
    collector scanning the growing heap meanwhile costs more than the walk itself on a
    deep graph (twice as much, 100,000 nodes deep)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


class _Seen(weakref.ref):
    """An entry of the builder's lookups: a weak reference to a recorded object that
    carries the object's id in the trace. One object per entry (a tuple and a reference
    were two, each one more for the garbage collector to track on every op). Unpacks as
    ``(id, reference)``, the pair the entries used to be.
    """

    __slots__ = ("id",)

    def __iter__(self):
        return iter((self.id, self))

    def __copy__(self):
        return self  # as copy treats weak references: atomic (a trace copies with them)

    def __deepcopy__(self, memo):
        return self


class _Held:
    """A lookup entry for an object that allows no weak reference: held strongly."""

    __slots__ = ("id", "held")

    def __init__(self, held) -> None:
        self.held = held

    def __call__(self):
        return self.held

    def __iter__(self):
        return iter((self.id, self))

    __copy__ = _Seen.__copy__
    __deepcopy__ = _Seen.__deepcopy__


def _reference(obj, record_id: int):
    """The lookup entry of ``obj``, recorded as ``record_id``: a weak reference when the
    object allows one, else a strong one."""
    try:
        entry = _Seen(obj)
    except TypeError:
        entry = _Held(obj)
    entry.id = record_id
    return entry


class _NotJsonable(Exception):
    pass


def _jsonable(value, depth: int = 0):
    """``value`` as JSON-able data (tuples become lists), or raise _NotJsonable."""
    kind = type(value)
    if kind in _PLAIN or kind is float and math.isfinite(value):
        return value
    if kind is tuple or kind is list:
        if depth < 3 and len(value) <= _MAX_ATTR_ITEMS:
            return [_jsonable(item, depth + 1) for item in value]
        raise _NotJsonable
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        number = float(value)
        if not math.isfinite(number):  # JSON has no NaN/Inf: keep them readable
            return repr(number)
        return number
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, (tuple, list)) and depth < 3 and len(value) <= _MAX_ATTR_ITEMS:
        return [_jsonable(item, depth + 1) for item in value]
    type_name = kind.__name__
    if type_name in ("dtype", "device"):  # tracegrad's own dtype and device
        return str(getattr(value, "name", value))
    raise _NotJsonable


_PLAIN = frozenset({int, bool, str, type(None)})
_SHAREABLE = _PLAIN | {tuple}  # the types of parameters node_attrs may share
_public_names: dict[tuple, tuple[str, ...]] = {}  # (node class, attribute names) -> params
# Shapes and other tuples of ints (Add's ``shapes``, a reduction's ``dim``), as attrs keep
# them: one shared list per distinct tuple. Thousands of nodes name the same few shapes,
# and a list of lists per node was a tenth of a recorded chain's memory
# (bench/bench_trace.py (c)). Only tuples of exact ints are shared: (1, 2) == (1.0, 2.0),
# and those must stay two different JSON values.
_int_tuples: dict[tuple, list] = {}


def _int_tuple_json(value: tuple):
    """The shared JSON form of a tuple of ints or of tuples of ints, or None."""
    if len(value) > _MAX_ATTR_ITEMS or not _exact_ints(value):
        return None  # (checked first: a tuple may hold arrays, which cannot be hashed)
    shared = _int_tuples.get(value)
    if shared is not None:
        return shared
    if len(_int_tuples) >= 4096:  # a program with ever-new shapes: start over
        _int_tuples.clear()
    shared = _int_tuples[value] = [item if type(item) is int else list(item)
                                   for item in value]
    return shared


def _exact_ints(value: tuple) -> bool:
    for item in value:
        kind = type(item)
        if kind is tuple:
            if len(item) > _MAX_ATTR_ITEMS:
                return False
            for inner in item:
                if type(inner) is not int:
                    return False
        elif kind is not int:
            return False
    return True


def node_attrs(node: Node) -> dict[str, Any]:
    """The op parameters a node keeps (dim, keepdim, shapes, ...), JSON-able and sorted."""
    fields = vars(node)
    # Which of the node's attributes are parameters, worked out once per op class and set
    # of attribute names (most nodes of an op have the same ones): every recorded op asks.
    names = tuple(fields)
    key = (node.__class__, names)
    public = _public_names.get(key)
    if public is None:
        public = tuple(name for name in names
                       if name[0] != "_" and name not in _NODE_MACHINERY)
        if len(_public_names) >= 4096:  # classes or attributes without end: start over
            _public_names.clear()
        _public_names[key] = public
    if not public:
        return NO_ATTRS
    # Parameters of exact ints, bools, strings, None and tuples of ints (shapes, dims) are
    # looked up by their values: nodes with the same ones share one read-only dict (one
    # object less per node for the garbage collector and the trace's memory). The key
    # holds the values' types, since 1 == 1.0 == True (three different JSON values); the
    # attrs depend on names and values only, so op classes share too.
    values = tuple(map(fields.__getitem__, public))
    kinds = tuple(map(type, values))
    share_key = None
    if _SHAREABLE.issuperset(kinds):
        share_key = (public, values, kinds)
        if tuple in kinds:
            for value in values:
                if value.__class__ is tuple and (len(value) > _MAX_ATTR_ITEMS
                                                 or not _exact_ints(value)):
                    share_key = None
                    break
        if share_key is not None:
            shared = _shared_attrs.get(share_key)
            if shared is not None:
                return shared
    attrs = {}
    for key in public:
        value = fields[key]
        kind = type(value)
        if kind in _PLAIN:  # the common cases first: this runs for every recorded op
            attrs[key] = value
            continue
        if kind is tuple:
            shared = _int_tuple_json(value)
            if shared is not None:
                attrs[key] = shared
                continue
        try:
            attrs[key] = _jsonable(value)
        except _NotJsonable:
            continue  # arrays, tensors, index objects: too big or not data
    if len(attrs) > 1:
        attrs = dict(sorted(attrs.items()))
    if not attrs:
        return NO_ATTRS
    if share_key is not None:
        if len(_shared_attrs) >= 4096:  # parameters without end: start over
            _shared_attrs.clear()
        attrs = _shared_attrs[share_key] = SharedAttrs(attrs)
    return attrs


# (parameter names, their values, their types) -> the SharedAttrs of them
_shared_attrs: dict[tuple, SharedAttrs] = {}


_dtype_names: dict = {}


def _dtype_name(numpy_dtype) -> str:
    name = _dtype_names.get(numpy_dtype)
    if name is None:
        if isinstance(numpy_dtype, np.dtype):
            from .._dtype import from_numpy_dtype

            name = from_numpy_dtype(numpy_dtype).name
        else:  # one NumPy has no name for (torch's bfloat16), named by the bridge
            name = numpy_dtype.name
        _dtype_names[numpy_dtype] = name
    return name


def _device_name(tensor) -> str:
    return "cpu" if type(tensor._array) is np.ndarray else str(tensor.device)


# Shapes as records keep them, one tuple per distinct shape: a recorded chain names the
# same shape on every tensor (bench/bench_trace.py (c) counts the bytes).
_shapes: dict[tuple, tuple[int, ...]] = {}


def _shape(shape) -> tuple[int, ...]:
    shared = _shapes.get(shape)
    if shared is None:
        if len(_shapes) >= 4096:  # a program with ever-new shapes: start over
            _shapes.clear()
        shared = tuple(map(int, shape))
        shared = _shapes.setdefault(shared, shared)
    return shared


def shown_name(node: Node) -> str:
    """A node's name as traces, graph text and DOT show it: the class name, as torchviz
    shows it -- ``AccumulateGrad`` and ``CopySlices``, where ``name()`` says
    ``torch::autograd::AccumulateGrad`` as PyTorch's does."""
    name = node.name()
    shown = _shown_names.get(name)
    if shown is None:
        shown = _shown_names[name] = name.rpartition("::")[2]
    return shown


_shown_names: dict[str, str] = {}


def _slot_names(node: Node) -> tuple:
    """The saved slots' names as torch gives them (``self``, ``mat2``, ``result``), from
    the op's ``saved_names``; empty for a custom Function (its slots are numbered)."""
    function = getattr(node, "_function", None)
    names = _slot_names_of.get(function)
    if names is None:  # once per op class: this runs for every recorded node
        names = tuple(entry for entry in getattr(function, "saved_names", ())
                      if "=" not in entry)
        if len(_slot_names_of) >= 4096:  # classes made in a loop: start over
            _slot_names_of.clear()
        _slot_names_of[function] = names
    return names


_slot_names_of: dict = {}


def _class_facts(node) -> tuple:
    """``(shown name, kind, ours)`` of a node: for tracegrad's own node classes, which
    keep their name and function on the class, worked out once per class (every recorded
    op asks); a node of the PyTorch bridge keeps them per instance, and is asked anew."""
    ours = isinstance(node, Node)
    facts = (shown_name(node), node_kind(node), ours)
    if ours and "_name" not in node.__dict__ and "_function" not in node.__dict__:
        if len(_node_facts) >= 4096:  # classes made in a loop: start over
            _node_facts.clear()
        _node_facts[node.__class__] = facts
    return facts


_node_facts: dict[type, tuple[str, str, bool]] = {}
# A next_functions edge to nothing, shared by every record that has one.
_NO_NEXT = (None, 0)


def node_kind(node: Node) -> str:
    if node._is_accumulate:
        return "accumulate"
    function = getattr(node, "_function", None)
    return getattr(function, "_node_kind", "op")


class GraphBuilder:
    """Records tensors and nodes into ``trace``, each once, with ids by first sight."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        # id(object) -> its entry (see _Seen): entry.id its id in the trace, entry() the
        # object while it lives (an id reused after it died never matches)
        self._tensor_ids: dict[int, _Seen | _Held] = {}
        self._node_ids: dict[int, _Seen | _Held] = {}
        # (node id, nr) -> tensor id; output 0 (most nodes' only one) is keyed by the node
        # id alone, an int: no key tuple per node (see _output_key)
        self._output_tensors: dict = {}
        self._next_tensor_id = 0
        self._next_node_id = 0

    # -- tensors -----------------------------------------------------------------------
    def known_tensor(self, tensor) -> int | None:
        entry = self._tensor_ids.get(id(tensor))
        if entry is not None and entry() is tensor:
            return entry.id
        return None

    def tensor_id(self, tensor) -> int:
        """The id of a live tensor, recording it on first sight."""
        entry = self._tensor_ids.get(id(tensor))  # known_tensor, inline: every op asks
        if entry is not None and entry() is tensor:
            return entry.id
        return self._add_tensor(tensor).id

    def live_tensors(self):
        """(tensor id, tensor) for every recorded tensor still alive, in id order."""
        alive = []
        for tensor_id, reference in self._tensor_ids.values():
            tensor = reference()
            if tensor is not None:
                alive.append((tensor_id, tensor))
        return sorted(alive, key=lambda pair: pair[0])

    def _add_tensor(self, tensor) -> TensorRecord:
        tensor_id = self._next_tensor_id
        self._next_tensor_id = tensor_id + 1
        self._tensor_ids[id(tensor)] = _reference(tensor, tensor_id)
        # A torch tensor seen through the bridge says what it is without making an array.
        # (a plain Tensor has none: its __dict__ is not even made, which reading it would do)
        fields = None if tensor.__class__ is Tensor else tensor.__dict__.get("_trace_fields")
        if fields is None:
            data = tensor._array
            dtype = _dtype_names.get(data.dtype)
            record = TensorRecord(  # positional: the fields in order (one per new tensor)
                tensor_id, _shape(data.shape),
                dtype if dtype is not None else _dtype_name(data.dtype),
                "cpu" if data.__class__ is np.ndarray else str(tensor.device), tensor.name,
                bool(tensor.requires_grad), tensor.grad_fn is None, None,
                int(tensor._output_nr), None, type(tensor).__name__ == "Parameter", NO_ITEMS)
        else:
            shape, dtype, device, is_parameter = fields
            record = TensorRecord(
                tensor_id, _shape(shape), dtype, device, tensor.name,
                bool(tensor.requires_grad), tensor.grad_fn is None, None,
                int(tensor._output_nr), None, is_parameter, NO_ITEMS)
        self.trace.tensors[tensor_id] = record
        base = tensor._base
        if base is not None:
            record.base = self.tensor_id(base)
        return record

    def _add_virtual_tensor(self, node_id: int, output_nr: int, meta) -> int:
        """A record for a node output whose Tensor object is gone (known from metadata)."""
        tensor_id = self._next_tensor_id
        self._next_tensor_id += 1
        shape, numpy_dtype, device = meta
        self.trace.tensors[tensor_id] = TensorRecord(
            id=tensor_id, shape=tuple(map(int, shape)), dtype=_dtype_name(numpy_dtype),
            device=str(device),
            requires_grad=numpy_dtype.kind == "f", is_leaf=False, grad_fn=node_id,
            output_nr=output_nr, versions=NO_ITEMS)
        self._output_tensors[_output_key(node_id, output_nr)] = tensor_id
        return tensor_id

    def output_tensor(self, node_id: int, output_nr: int) -> int | None:
        return self._output_tensors.get(node_id if output_nr == 0 else (node_id, output_nr))

    def set_output(self, node_id: int, output_nr: int, tensor_id: int) -> None:
        self._output_tensors[node_id if output_nr == 0 else (node_id, output_nr)] = tensor_id
        record = self.trace.tensors[tensor_id]
        record.grad_fn, record.output_nr, record.is_leaf = node_id, output_nr, False

    def live_ids(self) -> tuple[set[int], set[int]]:
        """(node ids, tensor ids) of the recorded objects still alive; entries of objects
        that died are dropped on the way (they can never match again)."""
        live: list[set[int]] = []
        for table in (self._node_ids, self._tensor_ids):
            dead = [key for key, (_, reference) in table.items() if reference() is None]
            for key in dead:
                del table[key]
            live.append({record_id for record_id, _ in table.values()})
        return live[0], live[1]

    def forget_outputs(self, output_keys) -> None:
        """Forget the ``(node id, output_nr)`` entries of nodes dropped from the trace (a
        pass summarized to stay within the structure budget; their objects are dead)."""
        for node_id, output_nr in output_keys:
            self._output_tensors.pop(_output_key(node_id, output_nr), None)

    def compact(self) -> None:
        """Forget the lookups of objects that died, and the outputs of dead nodes: they can
        never match again (ids are checked against the live object), and a finished
        recording kept them for nothing -- two fifths of a recorded chain's memory after
        backward (bench/bench_trace.py (c)). New dicts, as a dict never shrinks."""
        self._tensor_ids = {key: entry for key, entry in self._tensor_ids.items()
                            if entry() is not None}
        self._node_ids = {key: entry for key, entry in self._node_ids.items()
                          if entry() is not None}
        live = {entry.id for entry in self._node_ids.values()}
        self._output_tensors = {
            key: tensor_id for key, tensor_id in self._output_tensors.items()
            if (key if key.__class__ is int else key[0]) in live}

    # -- nodes -------------------------------------------------------------------------
    def known_node(self, node) -> int | None:
        entry = self._node_ids.get(id(node))
        if entry is not None and entry() is node:
            return entry.id
        return None

    def _reserve_node(self, node) -> int:
        node_id = self._next_node_id
        self._next_node_id = node_id + 1
        try:  # _reference, inline: every recorded op reserves its node
            entry = _Seen(node)
        except TypeError:
            entry = _Held(node)
        entry.id = node_id
        self._node_ids[id(node)] = entry
        return node_id

    def record_op(self, node, inputs, outputs) -> NodeRecord:
        """Record a node seen in forward, with its actual input and output tensors.

        The recorder's per-op path (bench/bench_trace.py (b) keeps it honest): the lookups
        of known_node and tensor_id are inline."""
        node_ids = self._node_ids
        entry = node_ids.get(id(node))
        if entry is not None and entry() is node:
            node_id = entry.id
        else:  # _reserve_node, inline
            node_id = self._next_node_id
            self._next_node_id = node_id + 1
            try:
                entry = _Seen(node)
            except TypeError:
                entry = _Held(node)
            entry.id = node_id
            node_ids[id(node)] = entry
        tensor_ids = self._tensor_ids
        input_ids = []
        for tensor in inputs:
            if tensor is None:
                input_ids.append(None)
                continue
            entry = tensor_ids.get(id(tensor))
            input_ids.append(entry.id if entry is not None and entry() is tensor
                             else self._add_tensor(tensor).id)
        if len(outputs) == 1 and outputs[0] is not None:  # the usual one output
            tensor = outputs[0]
            entry = tensor_ids.get(id(tensor))
            if entry is not None and entry() is tensor:
                record = self.trace.tensors[entry.id]
            else:
                record = self._add_tensor(tensor)
            tensor_id = record.id
            self._output_tensors[node_id] = tensor_id  # set_output, inline
            record.grad_fn, record.output_nr, record.is_leaf = node_id, 0, False
            return self._finish_node(node, node_id, input_ids, [tensor_id])
        output_ids = []
        for output_nr, tensor in enumerate(outputs):
            if tensor is None:
                continue
            tensor_id = self.tensor_id(tensor)
            self.set_output(node_id, output_nr, tensor_id)
            output_ids.append(tensor_id)
        return self._finish_node(node, node_id, input_ids, output_ids)

    def record_inplace(self, info) -> NodeRecord | None:
        """Record what an in-place change added to the graph (``info``: an
        autograd.views.InplaceInfo), each record once and right the first time:

        * its node, with the changed tensor going in at its old version and coming out
          (for a view, the base: its CopySlices node), the other tensor arguments after it;
          a clone saved as the tensor's old value shows as that tensor at that version;
        * the grad_fn each live view got anew, the view as its output.

        Returns the node's record (None when the graph did not record the change).
        """
        node = info.node
        record = None
        if node is not None:
            record = self._inplace_node(info)
        for view in info.views:
            view_id = self.known_tensor(view)
            if view_id is not None and self.known_node(view.grad_fn) is None:
                base_id = self.tensor_id(view._base)
                view_node_id = self._reserve_node(view.grad_fn)
                self.set_output(view_node_id, 0, view_id)
                self._finish_node(view.grad_fn, view_node_id, [base_id], [view_id])
        return record

    def _inplace_node(self, info) -> NodeRecord:
        node, base = info.node, info.base
        node_id = self.known_node(node)
        if node_id is not None:  # recorded already (a custom Function's mark_dirty)
            return self.trace.nodes[node_id]
        previous, previous_nr = info.previous_edge
        if previous is not None and not previous._is_accumulate \
                and self.known_node(previous) is None:
            # The old history, recorded now for the first time: its output is the tensor
            # itself, at its old version (not a stand-in made from metadata).
            self.adopt([previous], {(previous, previous_nr): base})
        node_id = self._reserve_node(node)
        base_id = self.tensor_id(base)
        others = [self.tensor_id(arg) for arg in info.inputs[1:] if isinstance(arg, Tensor)]
        self.set_output(node_id, 0, base_id)
        stand_ins = None
        if info.original is not None:  # the old value the node saved: the tensor, before
            stand_ins = {id(info.original): (self.tensor_id(info.tensor), int(info.version) - 1)}
        record = self._finish_node(node, node_id, [base_id] + others, [base_id], stand_ins)
        self.trace.tensors[base_id].requires_grad = True
        return record

    def node_id(self, node) -> int:
        """The id of any node an edge points to, recording it (and any unseen part of the
        graph behind it) on first sight."""
        known = self.known_node(node)
        if known is not None:
            return known
        if node._is_accumulate:
            return self._record_accumulate(node)
        self.adopt([node])
        return self.known_node(node)

    def _record_accumulate(self, node) -> int:
        node_id = self._reserve_node(node)
        leaf = self.tensor_id(node.variable)
        self.trace.nodes[node_id] = NodeRecord(
            id=node_id, name=shown_name(node), kind="accumulate", inputs=[leaf],
            outputs=NO_ITEMS, next=NO_ITEMS, saved=NO_ITEMS, leaf=leaf, site=node._site,
            module=node._module)
        return node_id

    def adopt(self, roots, known_outputs: dict | None = None) -> None:
        """Record every not-yet-seen node reachable from ``roots`` (a graph built before
        recording began, or the whole graph for ``from_tensor``), in creation order.

        ``known_outputs`` maps ``(node, output_nr)`` to a live tensor, so that tensors the
        caller holds (the loss) are recorded as themselves rather than from metadata.
        """
        with gc_paused():
            self._adopt(roots, known_outputs)

    def _adopt(self, roots, known_outputs: dict | None) -> None:
        known_outputs = dict(known_outputs or {})
        unseen = self._collect_unseen(roots)
        unseen.sort(key=lambda node: node._seq)
        _saved_outputs(unseen, known_outputs)
        for node in unseen:
            if self.known_node(node) is not None:
                continue  # an AccumulateGrad recorded as the edge target of an earlier node
            if node._is_accumulate:
                self._record_accumulate(node)
                continue
            node_id = self._reserve_node(node)
            input_ids = [self._edge_tensor(next_node, input_nr) if next_node is not None
                         else None for next_node, input_nr in node.next_functions]
            output_ids = []
            for output_nr, meta in enumerate(node._output_meta):
                if meta is None:
                    continue
                tensor = known_outputs.get((node, output_nr))
                if tensor is not None:
                    tensor_id = self.tensor_id(tensor)
                    self.set_output(node_id, output_nr, tensor_id)
                else:
                    tensor_id = self._add_virtual_tensor(node_id, output_nr, meta)
                output_ids.append(tensor_id)
            self._finish_node(node, node_id, input_ids, output_ids)

    def _collect_unseen(self, roots) -> list:
        unseen, stack, visited = [], [], set()
        for root in roots:
            if root is not None and self.known_node(root) is None and id(root) not in visited:
                visited.add(id(root))
                stack.append(root)
        while stack:
            node = stack.pop()
            unseen.append(node)
            for next_node, _ in node.next_functions:
                if (next_node is not None and id(next_node) not in visited
                        and self.known_node(next_node) is None):
                    visited.add(id(next_node))
                    stack.append(next_node)
        return unseen

    def _edge_tensor(self, next_node, input_nr: int) -> int | None:
        """The tensor an edge carries: a leaf for AccumulateGrad, else the producer's output."""
        if next_node._is_accumulate:
            return self.tensor_id(next_node.variable)
        producer = self.known_node(next_node)
        if producer is None:
            return None
        return self.output_tensor(producer, input_nr)

    def _finish_node(self, node, node_id: int, input_ids: list, output_ids: list,
                     stand_ins: dict | None = None) -> NodeRecord:
        """The node's record, made from ``input_ids`` and ``output_ids`` (lists the record
        takes over)."""
        facts = _node_facts.get(node.__class__)
        if facts is None:
            facts = _class_facts(node)
        name, kind, ours = facts
        record = NodeRecord(  # positional, in field order; next and saved follow
            node_id, name, kind, input_ids, output_ids, None, None,
            node_attrs(node), node._site, node._module)
        self.trace.nodes[node_id] = record
        node_ids = self._node_ids
        edges = []
        if ours:  # (a tracegrad node keeps its edges flat: next_functions builds pairs)
            pairs = zip(node._next_nodes, node._next_nrs)
        else:
            pairs = node.next_functions
        for next_node, input_nr in pairs:
            if next_node is None:
                edges.append(_NO_NEXT if input_nr == 0 else (None, int(input_nr)))
                continue
            entry = node_ids.get(id(next_node))
            next_id = entry.id if entry is not None and entry() is next_node \
                else self.node_id(next_node)
            edges.append((next_id, input_nr if input_nr.__class__ is int else int(input_nr)))
        # Lists of their own length (one built by appending keeps spare slots), and the
        # shared empty one for nothing: these are most of a node's bytes.
        record.next = edges if len(edges) > 2 else [*edges] if edges else NO_ITEMS
        saved = saved_values(node)
        record.saved = self.saved_records(node, node_id, stand_ins, saved) if saved \
            else NO_ITEMS
        return record

    def saved_records(self, node, node_id: int, stand_ins: dict | None = None,
                      saved_list: tuple | None = None) -> list[SavedRecord]:
        """The records of what ``node`` saved (``saved_list``: ``saved_values(node)`` when
        the caller has it). Every recorded op that saves asks: records are made
        positionally, in field order tensor, version, nbytes, slot, is_output."""
        records = []
        names = _slot_names(node)
        named = len(names)
        if saved_list is None:
            saved_list = saved_values(node)
        for slot, saved in enumerate(saved_list):
            kind = saved.__class__
            if kind is Tensor and not (stand_ins and id(saved) in stand_ins):
                # an input kept as itself (see saved_values): saved at version 0
                entry = self._tensor_ids.get(id(saved))  # tensor_id(), inline
                tensor_id = entry.id if entry is not None and entry() is saved \
                    else self._add_tensor(saved).id
                records.append(SavedRecord(tensor_id, 0, int(saved._array.nbytes),
                                           names[slot] if slot < named else str(slot)))
                continue
            if kind is not SavedTensor and not isinstance(saved, SavedTensor):
                continue
            if kind is Tensor:  # (a stand-in's kept input: its SavedTensor, as before)
                saved = _kept_input_saved(saved)
                kind = SavedTensor
            source = saved.tensor  # source_tensor(), inline: a saved input by reference
            if source is None:
                source = saved.source_tensor()
            if stand_ins and id(source) in stand_ins:
                tensor_id, version = stand_ins[id(source)]
                records.append(SavedRecord(
                    tensor_id, version, int(saved._array.nbytes),
                    names[slot] if slot < named else str(slot)))
                continue
            is_output = saved.node_ref is not None if kind is SavedTensor \
                else saved.is_output  # (inline for ours: every saving op asks)
            if source is not None:
                entry = self._tensor_ids.get(id(source))  # tensor_id(), inline
                tensor_id = entry.id if entry is not None and entry() is source \
                    else self._add_tensor(source).id
            elif is_output:
                tensor_id = self.output_tensor(node_id, saved.output_nr)
                if tensor_id is None:
                    continue
            else:
                continue  # freed by backward before we saw it: nothing left to describe
            array = saved._array
            nbytes = int(array.nbytes) if array is not None else 0
            if kind is not SavedTensor:  # torch's own slot names: self, mat2, result
                slot_name = saved.slot
            elif slot < named:
                slot_name = names[slot]
            else:
                slot_name = "result" if is_output else str(slot)
            records.append(SavedRecord(tensor_id, int(saved.version), nbytes, slot_name,
                                       is_output))
        return records


def saved_values(node) -> tuple:
    """``node._saved``, read as the engine reads it: a node whose op saved two values keeps
    them in ``_saved0``/``_saved1`` (node.SavedPair), and its ``_saved`` descriptor builds
    a tuple per read -- the recorder reads this for every recorded op. A node of the
    PyTorch bridge has a plain ``_saved``.

    A slot may hold a Tensor: an input the node kept as itself (node.saved_pair_value, a
    leaf without grad saved at version 0), given as it is. Reading ``node._saved`` would
    make its SavedTensor and keep it in the slot: an object per product, for every
    recorded op, that the untraced program never makes (bench/bench_trace.py (b));
    ``saved_records`` describes the tensor itself instead."""
    first = getattr(node, "_saved0", _NOT_SAVED)
    if first is _NOT_SAVED:
        return node._saved
    return (first, node._saved1)


def _output_key(node_id: int, output_nr: int):
    """The builder's key for output ``output_nr`` of node ``node_id``."""
    return node_id if output_nr == 0 else (node_id, output_nr)


def _saved_outputs(nodes, known_outputs: dict) -> None:
    """Add to ``known_outputs`` the live tensors that ``nodes`` saved, keyed by the node
    that produced each (itself, for a saved output), so that a graph walked after the fact
    records them as those tensors -- with their names -- rather than from metadata."""
    for node in nodes:
        for saved in node._saved:
            if not isinstance(saved, SavedTensor):
                continue
            source = saved.source_tensor()
            if source is None:
                continue
            producer = node if saved.is_output else saved.producer
            # Only while the tensor is still that output (an in-place op moves it on).
            if producer is not None and (saved.is_output or source.grad_fn is producer):
                known_outputs.setdefault((producer, saved.output_nr), source)


def from_tensor(tensor, name_from_caller: bool = True) -> Trace:
    """A structure-only Trace of the graph behind ``tensor`` (walking its grad_fn).

    Leaves and the tensor itself are named after the caller's variables where possible.

    >>> import tracegrad
    >>> w = tracegrad.ones(3, requires_grad=True)
    >>> loss = (w * w).sum()
    >>> trace = from_tensor(loss)
    >>> sorted(t.name for t in trace.tensors.values() if t.name)
    ['loss', 'w']
    """
    from ..bridge import as_tracegrad_tensor
    from .names import user_frame

    frame = user_frame(2) if name_from_caller else None
    with gc_paused():
        tensor = as_tracegrad_tensor(tensor)  # a torch tensor: read through the bridge
        trace = Trace(metadata={"source": "from_tensor", "values": False})
        builder = GraphBuilder(trace)
        if tensor.grad_fn is not None:
            builder.adopt([tensor.grad_fn], {(tensor.grad_fn, tensor._output_nr): tensor})
        trace.roots = [builder.tensor_id(tensor)]
        if frame is not None:
            name_unnamed(trace, builder, frame)
    return trace


def variable_key(tensor) -> int | None:
    """What a variable holding ``tensor`` is found by in the user's frames: the tensor
    itself, or the torch tensor a bridge adapter stands for (None once it is gone)."""
    if tensor.__class__ is not Tensor and "_trace_fields" in tensor.__dict__:
        return tensor._variable_key
    return id(tensor)


def name_unnamed(trace: Trace, builder: GraphBuilder, frame=None, scopes=()) -> None:
    """Name recorded tensors that have no name yet after the variables in ``frame`` (or in
    ``scopes``, mappings of variables such as a finished script's globals). A name set on
    the tensor itself (``tracegrad.name``, a Parameter's) wins over a found one."""
    from .names import names_in_frame, names_in_scopes

    pending = {}
    for tensor_id, tensor in builder.live_tensors():
        record = trace.tensors.get(tensor_id)
        if record is None:
            continue
        if tensor.name:
            record.name = tensor.name
        if record.name is None:
            key = variable_key(tensor)
            if key is not None:
                pending[key] = record
    if not pending:
        return
    found = names_in_frame(frame, pending) if frame is not None else {}
    if scopes and len(found) < len(pending):
        missing = {key: record for key, record in pending.items() if key not in found}
        found.update(names_in_scopes(scopes, missing))
    for key, variable in found.items():
        pending[key].name = variable
