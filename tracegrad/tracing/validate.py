"""Checking a decoded Trace before anyone sees it, and the limits a trace file must keep to.

The codec makes sure every value has its declared type; this module makes sure the values
fit together: every reference points at a record that exists (steps and edges to nodes,
saved tensors, roots and bases to tensors, violations to tensors, nodes, passes and steps),
counts, versions and line numbers are in range, shapes are sane and within ``TraceLimits``,
dtype names are ones torch has, passes and steps are numbered by their position, and the
graph has no cycle. The loader calls ``validate_trace`` right after decoding, so no
consumer (the TUI, the renderer, the graph assertions) ever sees an inconsistent Trace; a
problem raises ``InvalidTrace`` with the JSON path of the value in the file.

Every field of every model class has an entry in ``RULES`` (``FREE`` when any value of its
type will do), and a test fails when one is missing: adding a field to model.py means adding
its rule next to its class here. A rule runs once over all records of its class, mostly as
``set(map(getter, records))`` and set differences, so the per-value work happens in C and
checking costs a small part of a load.

>>> from tracegrad.tracing.model import BackwardPass, Step, Trace
>>> validate_trace(Trace(passes=[BackwardPass(index=0, steps=[Step(index=0, node=991)])]))
Traceback (most recent call last):
...
tracegrad.tracing.validate.InvalidTrace: trace.passes[0].steps[0].node: 991 is not a node id
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections import Counter
from collections.abc import Callable, Iterable
from functools import partial
from itertools import chain, compress, repeat
from operator import attrgetter, is_not, itemgetter

import numpy as np

from . import model
from .limits import DEFAULT_LIMITS, OverLimit, TraceLimits
from .values import PendingStats

_INT64_MAX = (1 << 63) - 1  # every count must fit the int64 a consumer may put it in
_not_none = partial(is_not, None)

# dtype names a TensorRecord or Value may carry: torch's (2.13), which include tracegrad's;
# the PyTorch bridge records torch dtypes by these names.
DTYPE_NAMES = frozenset({
    "bfloat16", "bits16", "bits1x8", "bits2x4", "bits4x2", "bits8", "bool", "complex128",
    "complex32", "complex64", "float16", "float32", "float4_e2m1fn_x2", "float64",
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
    "int1", "int16", "int2", "int3", "int32", "int4", "int5", "int6", "int64", "int7", "int8",
    "qint32", "qint8", "quint2x4", "quint4x2", "quint8", "uint1", "uint16", "uint2", "uint3",
    "uint32", "uint4", "uint5", "uint6", "uint64", "uint7", "uint8"})


# -- errors ------------------------------------------------------------------------------
class InvalidTrace(ValueError):
    """A Trace whose parts do not fit together; ``where`` is the JSON path of the value,
    ``limit`` the TraceLimits field it went over (if that is the problem)."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem
        self.limit: str | None = getattr(problem, "limit", None)


# -- rules -------------------------------------------------------------------------------
class _Context:
    """What rules look things up in: the ids that exist, the passes, the limits."""

    def __init__(self, trace: model.Trace, limits: TraceLimits) -> None:
        self.trace = trace
        self.limits = limits
        self.ids = {"node": trace.nodes.keys(), "tensor": trace.tensors.keys()}
        # Records many places refer to (Values, Sites), gathered from every field that holds
        # them and checked once each at the end: a chain's 100,000 values are met in four
        # fields, and checking them field by field cost two fifths of validation
        # (bench/bench_trace.py (d)).
        self.shared: dict[type, list] = {}
        self.given: frozenset = frozenset()  # classes whose every record the caller gave
        self._dense: dict[str, int | None] = {}

    def all_exist(self, table: str, values: set) -> bool:
        """Whether every id in ``values`` is one of ``table``'s. When the ids are 0 to n - 1
        (a recorded trace's, as the counters hand them out), the least and greatest of
        ``values`` tell, which is several times faster than looking each up."""
        size = self._dense.get(table, _UNKNOWN)
        if size is _UNKNOWN:
            size = self._dense[table] = _dense_size(self.ids[table])
        if size is not None and set(map(type, values)) <= {int}:
            return not values or (min(values) >= 0 and max(values) < size)
        return self.ids[table] >= values


_UNKNOWN = object()


def _dense_size(ids) -> int | None:
    """n when ``ids`` are exactly the ints 0 to n - 1 (they are unique: dict keys)."""
    if not ids or not set(map(type, ids)) <= {int}:
        return None
    size = len(ids)
    return size if min(ids) == 0 and max(ids) == size - 1 else None


# A rule's check gets (records, getter, context) and returns None, or the first offending
# record with where in the field it went wrong ("" or "[3]") and the problem.
Failure = tuple[object, str, str]


class Rule:
    """What every value of one field must be."""

    def check(self, records: list, get: Callable, context: _Context) -> Failure | None:
        raise NotImplementedError


class Reference(Rule):
    """A node or tensor id (or a list of them) that exists in the trace; None allowed
    where the model allows it."""

    def __init__(self, table: str, many: bool = False) -> None:
        self.table, self.many = table, many

    def check(self, records, get, context):
        values = set(chain.from_iterable(map(get, records))) if self.many \
            else set(map(get, records))
        values.discard(None)
        if context.all_exist(self.table, values):
            return None
        bad = values - context.ids[self.table]
        return _first(records, get, self.many, bad.__contains__,
                      lambda item: f"{item} is not a {self.table} id")


class Edges(Rule):
    """``next_functions``: (node id or None, input number >= 0) pairs."""

    def check(self, records, get, context):
        edges = list(chain.from_iterable(map(get, records)))
        targets = set(map(itemgetter(0), edges))
        targets.discard(None)
        bad_targets = set() if context.all_exist("node", targets) \
            else targets - context.ids["node"]
        numbers = set(map(itemgetter(1), edges))
        if not bad_targets and (not numbers or _in_range(numbers)):
            return None

        def broken(edge) -> bool:
            return edge[0] in bad_targets or not 0 <= edge[1] <= _INT64_MAX

        def problem(edge) -> str:
            if edge[0] in bad_targets:
                return f"{edge[0]} is not a node id"
            return f"input number {edge[1]} is out of range"

        return _first(records, get, True, broken, problem)


class Count(Rule):
    """An int >= 0 that fits int64 (None allowed where the model allows it), or a list of
    them (``many``)."""

    def __init__(self, many: bool = False) -> None:
        self.many = many

    def check(self, records, get, context):
        values = set(chain.from_iterable(map(get, records))) if self.many \
            else set(map(get, records))
        values.discard(None)
        if not values or _in_range(values):
            return None
        return _first(records, get, self.many,
                      lambda item: item is not None and not 0 <= item <= _INT64_MAX,
                      lambda item: f"{item} is out of range (0 to 2**63 - 1)")


class CountMap(Rule):
    """A dict whose values are counts (ops by name -> how many)."""

    def check(self, records, get, context):
        values = set(chain.from_iterable(map(dict.values, map(get, records))))
        if not values or _in_range(values):
            return None
        for record in records:
            for key, item in get(record).items():
                if not 0 <= item <= _INT64_MAX:
                    return record, f".{key}", f"{item} is out of range (0 to 2**63 - 1)"
        return None


class Shape(Rule):
    """A shape: at most ``max_dims`` sizes, each >= 0, at most ``max_elements`` in all."""

    def check(self, records, get, context):
        limits = context.limits
        bad = {shape for shape in set(map(get, records))
               if shape_problem(shape, limits) is not None}
        if not bad:
            return None
        return _first(records, get, False, bad.__contains__,
                      lambda shape: shape_problem(shape, limits))


class OneOf(Rule):
    """One of a fixed set of values."""

    def __init__(self, choices: Iterable, what: str) -> None:
        self.choices, self.what = frozenset(choices), what

    def check(self, records, get, context):
        bad = set(map(get, records)) - self.choices
        if not bad:
            return None
        return _first(records, get, False, bad.__contains__,
                      lambda item: f"{item!r} is not {self.what}")


class Records(Rule):
    """Nested records, checked by the rules of their own class. ``shared``: the same
    object is referred to from many places (Values, Sites), so those of every field are
    gathered and checked together, once the rest is (``_check_shared``)."""

    def __init__(self, cls: type, shared: bool = False) -> None:
        self.cls, self.shared = cls, shared

    def check(self, records, get, context):
        return None  # the children's rules do the checking (see _children)


class Keys(Rule):
    """A free-form dict (metadata, a violation's detail) whose keys that consumers read have
    their types and ranges; other keys are free."""

    def __init__(self, checks: dict[str, Callable]) -> None:
        self.checks = checks

    def check(self, records, get, context):
        checks = self.checks
        for record in records:
            mapping = get(record)
            if not mapping or checks.keys().isdisjoint(mapping):
                continue  # the common case: nothing a consumer reads
            for key, check in checks.items():
                if key in mapping:
                    problem = check(mapping[key], context)
                    if problem is not None:
                        return record, f".{key}", problem
            if "min" in checks and ("min" in mapping) != ("max" in mapping):
                return record, "", "has one of 'min' and 'max' without the other"
        return None


FREE = None  # any value of the field's type will do


def _is_count(value) -> bool:
    return type(value) is int and 0 <= value <= _INT64_MAX


def _count_problem(value, context: _Context) -> str | None:
    return None if _is_count(value) else f"{value!r} is not a count"


def _keep_passes_problem(value, context: _Context) -> str | None:
    if value is None or (type(value) is list and len(value) == 2
                         and all(map(_is_count, value))):
        return None
    return f"{value!r} is not null or two counts"


def _count_list_problem(value, context: _Context) -> str | None:
    if type(value) is list and all(map(_is_count, value)):
        return None
    return f"{value!r} is not a list of counts"


def _count_map_problem(value, context: _Context) -> str | None:
    if type(value) is dict and all(map(_is_count, value.values())):
        return None
    return f"{value!r} is not an object of counts"


def _id_problem(value, context: _Context) -> str | None:
    """A record id consumers look up (``trace.nodes.get(...)``): an int or None."""
    return None if value is None or type(value) is int else f"{value!r} is not an id"


def _optional_text_problem(value, context: _Context) -> str | None:
    return None if value is None or type(value) is str else f"{value!r} is not a string"


def _any_problem(value, context: _Context) -> str | None:
    return None  # any value; checked only with its partner (min needs max)


def _type_problem(expected: type) -> Callable:
    def problem(value, context: _Context) -> str | None:
        if type(value) is expected:
            return None
        return f"expected {expected.__name__}, got {type(value).__name__}"

    return problem


# Metadata the recorder writes and consumers read back (others are kept as they are).
_METADATA_KEYS: dict[str, Callable] = {
    "summarized_values": _count_problem,
    "budget_bytes": _count_problem,
    "structure_budget_bytes": _count_problem,
    "summarized_passes": _count_problem,
    "unrecorded_ops": _count_map_problem,
    "structure_over_budget": _type_problem(bool),
    "keep_passes": _keep_passes_problem,
    "pass_node_marks": _count_list_problem,  # memory.py indexes it by pass
    "values": _type_problem(bool),
    "timings": _type_problem(bool),
    "program": _type_problem(str),
    "source": _type_problem(str),
    "tracegrad_version": _type_problem(str),
}

# A NaN/Inf violation's evidence (causes.py writes it, text.py reads it).
_DETAIL_KEYS: dict[str, Callable] = {
    "indices": _type_problem(list),
    "values": _type_problem(list),
    "count": _count_problem,
    "tensor": _id_problem,
    "upstream": _id_problem,
    "mask_node": _id_problem,
    "inner_cause": _optional_text_problem,
    "min": _any_problem,
}

NODE, TENSOR = Reference("node"), Reference("tensor")
COUNT = Count()
SITE = Records(model.Site, shared=True)
VALUE = Records(model.Value, shared=True)

# Every field of every model class, and what its values must be.
RULES: dict[type, dict[str, Rule | None]] = {
    model.Trace: {
        "tensors": Records(model.TensorRecord),
        "nodes": Records(model.NodeRecord),
        "passes": Records(model.BackwardPass),
        "violations": Records(model.Violation),
        "exception": Records(model.ExceptionRecord),
        "flows": Records(model.Flow),
        "metadata": Keys(_METADATA_KEYS),
        "roots": Reference("tensor", many=True),
    },
    model.Flow: {
        "kind": OneOf(model.FLOW_KINDS, "a flow kind"),
        "sources": Reference("tensor", many=True),
        "results": Reference("tensor", many=True),
        "op": FREE,
        "site": SITE,
        "other_site": SITE,
        "pass_index": FREE,
    },
    model.TensorRecord: {
        "id": COUNT,  # the key it is filed under; the decoder refuses duplicates
        "shape": Shape(),
        "dtype": OneOf(DTYPE_NAMES, "a dtype name torch has"),
        "device": FREE,
        "name": FREE,
        "requires_grad": FREE,
        "is_leaf": FREE,
        "grad_fn": NODE,
        "output_nr": COUNT,
        "base": TENSOR,  # and no cycle of bases: _tensor_bases
        "is_parameter": FREE,
        "versions": Records(model.VersionChange),
        "value": VALUE,
        "grad": VALUE,
        "site": SITE,
    },
    model.VersionChange: {
        "version": COUNT,
        "op": FREE,
        "site": SITE,
    },
    model.NodeRecord: {
        "id": COUNT,  # the key it is filed under; the decoder refuses duplicates
        "name": FREE,
        "kind": FREE,  # consumers compare with "accumulate", "function"; others read "op"
        "inputs": Reference("tensor", many=True),
        "outputs": Reference("tensor", many=True),
        "next": Edges(),  # and no cycle: _node_graph
        "saved": Records(model.SavedRecord),
        "attrs": FREE,
        "site": SITE,
        "module": FREE,
        "leaf": TENSOR,
    },
    model.SavedRecord: {
        "tensor": TENSOR,
        "version": COUNT,
        "nbytes": COUNT,
        "slot": FREE,
        "is_output": FREE,
    },
    model.BackwardPass: {
        "index": FREE,  # its position in trace.passes: _numbered
        "kind": FREE,
        "roots": Reference("tensor", many=True),
        "site": SITE,
        "retain_graph": FREE,
        "create_graph": FREE,
        "values_captured": FREE,
        "steps": Records(model.Step),
        "error": FREE,
        "origin": FREE,  # consumers compare with "user"
        "label": FREE,
        "summarized": FREE,
        "summarized_steps": COUNT,
        "op_counts": CountMap(),
    },
    model.Step: {
        "index": FREE,  # its position in its pass: _numbered
        "node": NODE,
        "grads_in": VALUE,
        "grads_out": VALUE,
        "hooks": Records(model.HookRecord),
        "accumulated": TENSOR,
        "duration_ns": COUNT,
        "error": FREE,
        "grad_after": VALUE,
    },
    model.HookRecord: {
        "kind": FREE,
        "name": FREE,
        "changed": FREE,
    },
    model.Violation: {
        "kind": FREE,
        "message": FREE,
        "tensor": TENSOR,
        "node": NODE,
        "site": SITE,
        "other_site": SITE,
        "saved_version": COUNT,
        "current_version": COUNT,
        "phase": FREE,
        "pass_index": COUNT,  # and a pass that exists: _violation_places
        "step_index": COUNT,  # and a step of that pass
        "cause": FREE,
        "detail": Keys(_DETAIL_KEYS),
        "from_nonfinite": FREE,
        "op": FREE,
        "input_nr": COUNT,
    },
    model.ExceptionRecord: {
        "type": FREE,
        "message": FREE,
        "site": SITE,
        "traceback": FREE,
    },
    model.Site: {
        "file": FREE,
        "line": COUNT,
        "function": FREE,
        "code": FREE,
    },
    model.Value: {
        "shape": Shape(),  # and NaN/Inf counts within it: _value_counts
        "dtype": OneOf(DTYPE_NAMES, "a dtype name torch has"),
        "stats": Records(model.Stats),
        "array": FREE,  # the codec checks it has the value's shape and dtype
        "dropped": FREE,  # consumers look reasons up with a default
    },
    model.Stats: {
        "min": FREE,
        "max": FREE,
        "mean": FREE,
        "norm": FREE,
        "nan_count": COUNT,
        "inf_count": COUNT,
    },
}


# -- checks across records ---------------------------------------------------------------
def _numbered(context: _Context) -> tuple[object, str, str] | None:
    """Passes and steps carry their position: consumers use one for the other."""
    passes = context.trace.passes
    if list(map(attrgetter("index"), passes)) != list(range(len(passes))):
        for position, backward_pass in enumerate(passes):
            if backward_pass.index != position:
                return backward_pass, ".index", (
                    f"{backward_pass.index} differs from the pass's position {position}")
    get_index = attrgetter("index")
    for backward_pass in passes:
        steps = backward_pass.steps
        if list(map(get_index, steps)) != list(range(len(steps))):
            for position, step in enumerate(steps):
                if step.index != position:
                    return step, ".index", (
                        f"{step.index} differs from the step's position {position}")
    return None


def _violation_places(context: _Context) -> tuple[object, str, str] | None:
    """A violation's pass and step exist."""
    passes = context.trace.passes
    for violation in context.trace.violations:
        pass_index = violation.pass_index
        if pass_index is None:
            continue
        if pass_index >= len(passes):
            return violation, ".pass_index", (
                f"{pass_index} is not a pass (the trace has {len(passes)})")
        step_index = violation.step_index
        if step_index is not None and step_index >= len(passes[pass_index].steps):
            return violation, ".step_index", (
                f"{step_index} is not a step of pass {pass_index} (it has "
                f"{len(passes[pass_index].steps)})")
    return None


def _value_counts(context: _Context, values: list) -> tuple[object, str, str] | None:
    """A value has no more NaNs and Infs than elements (statistics still to be computed
    from the value's array have as many as it has, by construction)."""
    values = list(compress(values, map(is_not, map(type, map(_get_stats, values)),
                                       repeat(PendingStats))))
    if not any(map(_nan_count, values)) and not any(map(_inf_count, values)):
        return None  # the common case, decided in C
    for value in values:
        stats = value.stats
        if (stats.nan_count or stats.inf_count) and \
                stats.nan_count + stats.inf_count > math.prod(value.shape):
            return stats, ".nan_count", (
                f"{stats.nan_count} NaN and {stats.inf_count} Inf in "
                f"{math.prod(value.shape)} elements")
    return None


_nan_count, _inf_count = attrgetter("stats.nan_count"), attrgetter("stats.inf_count")
_get_stats = attrgetter("stats")


def _node_graph(context: _Context) -> tuple[object, str, str] | None:
    """The graph of next_functions has no cycle (autograd graphs never do; a consumer
    walking one would go round forever)."""
    nodes = context.trace.nodes
    if _ordered(nodes):
        return None
    # Kahn's algorithm: take nodes whose every predecessor has been taken; nodes left over
    # lie on or behind a cycle.
    edges = chain.from_iterable(map(attrgetter("next"), nodes.values()))
    waiting = Counter(map(itemgetter(0), edges))  # node id -> edges into it not yet taken
    del waiting[None]
    ready = [node_id for node_id in nodes if node_id not in waiting]
    taken = 0
    while ready:
        taken += 1
        for next_id, _ in nodes[ready.pop()].next:
            if next_id is not None:
                count = waiting[next_id] - 1
                waiting[next_id] = count
                if not count:
                    ready.append(next_id)
    if taken == len(nodes):
        return None
    cycle = _find_cycle({node_id for node_id, count in waiting.items() if count > 0}, nodes)
    names = " -> ".join(f"{node_id} ({nodes[node_id].name})" for node_id in cycle)
    return nodes[cycle[0]], ".next", f"the graph has a cycle: {names}; autograd graphs have none"


_get_next = attrgetter("next")


def _ordered(nodes: dict) -> bool:
    """Whether every edge goes to a smaller node id or to a node with no edges of its own:
    then there is no cycle (along one, every node has an edge, so ids would have to fall all
    the way round). The recorder numbers nodes so that this holds (an op's inputs come
    before it; AccumulateGrad nodes, numbered when first seen, have no edges), and it is
    decided in NumPy instead of walking the graph in Python."""
    if not nodes:
        return True
    lengths = np.fromiter(map(len, map(_get_next, nodes.values())), np.int64, len(nodes))
    ids = np.fromiter(nodes, np.int64, len(nodes))
    sources = np.repeat(ids, lengths)
    targets = list(map(itemgetter(0), chain.from_iterable(map(_get_next, nodes.values()))))
    # None -> -1 in C: dict.get(target, target) is -1 for None and the target otherwise.
    targets = np.fromiter(map(_NONE_TO_MINUS_ONE.get, targets, targets), np.int64,
                          len(targets))
    upward = targets >= sources
    if not upward.any():
        return True
    return bool(np.isin(targets[upward], ids[lengths == 0]).all())


_NONE_TO_MINUS_ONE = {None: -1}


def _find_cycle(left: set, nodes: dict) -> list:
    """One cycle among the nodes Kahn's algorithm left, as [a, b, ..., a] along the edges.

    Each node left has a predecessor that was left too, so walking predecessors from any
    of them must come back to a node already seen."""
    predecessors: dict = {}
    for node_id in sorted(left):
        for target, _ in nodes[node_id].next:
            if target in left:
                predecessors.setdefault(target, []).append(node_id)
    seen: dict = {}
    walk: list = []
    node_id = min(left)
    while node_id not in seen:
        seen[node_id] = len(walk)
        walk.append(node_id)
        node_id = predecessors[node_id][0]
    cycle = walk[seen[node_id]:]
    cycle.reverse()  # predecessors were walked: turn it to follow the edges
    start = cycle.index(min(cycle))  # the same cycle reads the same whatever found it
    cycle = cycle[start:] + cycle[:start]
    return [*cycle, cycle[0]]


def _tensor_bases(context: _Context) -> tuple[object, str, str] | None:
    """A view's base is another tensor, and following bases ends."""
    tensors = context.trace.tensors
    ends: set = set()  # tensors known to reach a tensor without a base
    for record in tensors.values():
        if record.base is None:
            continue
        chain_ids = []
        tensor_id = record.id
        while tensor_id is not None and tensor_id not in ends:
            if tensor_id in chain_ids:
                cycle = " -> ".join(map(str, chain_ids[chain_ids.index(tensor_id):]
                                        + [tensor_id]))
                return tensors[tensor_id], ".base", (
                    f"the view bases form a cycle: {cycle}")
            chain_ids.append(tensor_id)
            tensor_id = tensors[tensor_id].base
        ends.update(chain_ids)
    return None


# Checks that look at more than one field or record, run after the field rules.
TRACE_CHECKS: tuple[Callable, ...] = (_numbered, _violation_places, _node_graph,
                                      _tensor_bases)
# Checks on all records of a class at once (the records are deduplicated when shared).
CLASS_CHECKS: dict[type, Callable] = {model.Value: _value_counts}


# -- running the rules -------------------------------------------------------------------
def validate_trace(trace: model.Trace, limits: TraceLimits | None = None, *,
                   tables: dict[type, list] | None = None) -> None:
    """Raise ``InvalidTrace`` (with the JSON path) at the first value that does not fit.

    ``tables``: every Site and Value the trace refers to, when the caller knows them (a
    file's sites and values tables: the decoder resolves references to their rows only).
    They are checked as they are, instead of gathered from each field that refers to them
    -- a pass over every tensor and step (bench/bench_trace.py (d))."""
    context = _Context(trace, limits or DEFAULT_LIMITS)
    if tables:
        context.given = frozenset(tables)
    failure = _check_class(model.Trace, [trace], context)
    if failure is None and tables:
        for cls, rows in tables.items():
            if rows:
                context.shared.setdefault(cls, []).append(rows)
    if failure is None:
        failure = _check_shared(context)
    if failure is None:
        for check in TRACE_CHECKS:
            failure = check(context)
            if failure is not None:
                break
    if failure is not None:
        record, suffix, problem = failure
        where = path_to(trace, record)
        if where == "trace" and record is not trace and tables:
            where = _table_place(tables, record) or where  # a row nothing refers to
        raise InvalidTrace(where + suffix, problem)


_TABLE_NAMES = {model.Site: "sites", model.Value: "values"}


def _table_place(tables: dict[type, list], record: object) -> str | None:
    """``values[7]`` (or ``values[7].stats``): where in the file's tables ``record`` is,
    for one that no other record refers to. Only errors pay for this search."""
    for cls, rows in tables.items():
        for row, item in enumerate(rows):
            if item is record:
                return f"{_TABLE_NAMES.get(cls, cls.__name__)}[{row}]"
            if getattr(item, "stats", None) is record:
                return f"{_TABLE_NAMES.get(cls, cls.__name__)}[{row}].stats"
    return None


def _check_class(cls: type, records: list, context: _Context) -> Failure | None:
    for name, rule, get in _plan(cls):
        if isinstance(rule, Records):
            if rule.shared:  # checked once each, with those of the other fields
                if rule.cls in context.given:
                    continue  # the caller handed them all over (validate_trace's tables)
                context.shared.setdefault(rule.cls, []).append(
                    _children(rule, records, get, _shape_of_field(cls, name)))
                continue
            children = _children(rule, records, get, _shape_of_field(cls, name))
            if children:
                failure = _check_class(rule.cls, children, context)
                if failure is not None:
                    return failure
        else:
            failure = rule.check(records, get, context)
            if failure is not None:
                record, where, problem = failure
                return record, f".{name}{where}", problem
    check = CLASS_CHECKS.get(cls)
    return check(context, records) if check is not None else None


def _check_shared(context: _Context) -> Failure | None:
    """Check the shared records gathered from every field, all at once (their own shared
    records, if they had any, are gathered meanwhile). A record met twice is checked twice:
    the rules' sets do not mind, and that costs less than finding the repeats."""
    while context.shared:
        cls, groups = next(iter(context.shared.items()))
        del context.shared[cls]
        failure = _check_class(cls, list(chain.from_iterable(groups)), context)
        if failure is not None:
            return failure
    return None


def _children(rule: Records, records: list, get: Callable, container: str) -> list:
    if container == "list":  # lists may hold None (no gradient on that edge)
        children = list(filter(_not_none, chain.from_iterable(map(get, records))))
    elif container == "dict":
        children = list(chain.from_iterable(map(dict.values, map(get, records))))
    else:
        children = list(filter(_not_none, map(get, records)))
    if rule.cls is model.Stats:
        # Statistics still to be computed from a value's array (a schema-5 file leaves them
        # to it) are right by construction; reading them here would compute them all.
        children = list(compress(children, map(is_not, map(type, children),
                                               repeat(PendingStats))))
    return children


_plans: dict[type, list] = {}


def _plan(cls: type) -> list:
    """(field name, rule, getter) for the fields of ``cls`` that have a rule (nested records
    with nothing to check are left out: collecting them would cost a pass for nothing)."""
    plan = _plans.get(cls)
    if plan is None:
        plan = _plans[cls] = [
            (name, rule, attrgetter(name)) for name, rule in RULES[cls].items()
            if rule is not None and (not isinstance(rule, Records) or _has_checks(rule.cls))]
    return plan


def _has_checks(cls: type) -> bool:
    return cls in CLASS_CHECKS or any(
        rule is not None and (not isinstance(rule, Records) or _has_checks(rule.cls))
        for rule in RULES[cls].values())


_containers: dict[tuple[type, str], str] = {}


def _shape_of_field(cls: type, name: str) -> str:
    """"list", "dict" or "one": how a field holds its nested records (from model.py)."""
    key = (cls, name)
    container = _containers.get(key)
    if container is None:
        hint = typing.get_type_hints(cls, vars(model))[name]
        origin = typing.get_origin(hint)
        container = _containers[key] = {list: "list", dict: "dict"}.get(origin, "one")
    return container


def _first(records: list, get: Callable, many: bool, broken: Callable,
           problem: Callable) -> Failure | None:
    """The first record (in order) whose value, or one of whose values, is ``broken``."""
    for record in records:
        value = get(record)
        if many:
            for position, item in enumerate(value):
                if broken(item):
                    return record, f"[{position}]", problem(item)
        elif broken(value):
            return record, "", problem(value)
    return None


def _in_range(values: set) -> bool:
    return 0 <= min(values) and max(values) <= _INT64_MAX


def shape_problem(shape: tuple, limits: TraceLimits) -> str | None:
    """What is wrong with ``shape`` under ``limits``, or None."""
    if len(shape) > limits.max_dims:
        return OverLimit(f"{len(shape)} dimensions, over the limit of {limits.max_dims} "
                         f"(TraceLimits.max_dims); {limits.hint('max_dims', len(shape))}",
                         "max_dims")
    if not all(0 <= size <= _INT64_MAX for size in shape):
        return f"the shape {list(shape)} has a negative or huge size"
    elements = math.prod(shape)
    if elements > limits.max_elements:
        return OverLimit(f"the shape {list(shape)} has {elements} elements, over the limit "
                         f"of {limits.max_elements} (TraceLimits.max_elements); "
                         f"{limits.hint('max_elements', elements)}", "max_elements")
    return None


# -- where a record is -------------------------------------------------------------------
def path_to(trace: model.Trace, target: object) -> str:
    """The JSON path of ``target`` in the file ``trace`` was read from (the first place it
    appears; records filed by id are at their position in the file). Only errors pay for
    this walk."""
    pending: list[tuple[object, str]] = [(trace, "trace")]
    while pending:
        item, path = pending.pop()
        if item is target:
            return path
        if dataclasses.is_dataclass(item):
            children = [(getattr(item, field.name), f"{path}.{field.name}")
                        for field in dataclasses.fields(item)]
        elif isinstance(item, dict):
            records = any(dataclasses.is_dataclass(value) for value in item.values())
            children = [(value, f"{path}[{position}]" if records else f"{path}.{key}")
                        for position, (key, value) in enumerate(item.items())]
        elif isinstance(item, (list, tuple)):
            children = [(value, f"{path}[{position}]") for position, value in enumerate(item)]
        else:
            continue
        pending.extend(reversed(children))
    return "trace"


__all__ = ["DTYPE_NAMES", "FREE", "RULES", "InvalidTrace", "path_to", "shape_problem",
           "validate_trace"]
