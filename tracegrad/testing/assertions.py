"""Assertions about an autograd graph, for tests.

Each takes a live tensor (its graph is traced structure-only) or a
:class:`~tracegrad.tracing.model.Trace`, reads only the Trace data model, and raises
``AssertionError`` with a message that says what was expected and what was found. The
pytest plugin registers this module for assertion rewriting, so any plain ``assert`` here
gets pytest's introspection too.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .graph_text import _Namer, normalize_text, render_text, trace_and_roots

if TYPE_CHECKING:
    from ..tracing.model import NodeRecord, Trace

__all__ = [
    "assert_contains_chain", "assert_graph", "assert_no_nan", "assert_no_path",
    "assert_no_violations", "assert_op_counts", "assert_saved", "graph_diff",
]


def graph_diff(expected: str, actual: str) -> str:
    """A unified diff of two graph texts (expected first), after normalizing both."""
    return "\n".join(difflib.unified_diff(
        normalize_text(expected).splitlines(), normalize_text(actual).splitlines(),
        fromfile="expected", tofile="actual", lineterm=""))


def assert_graph(tensor_or_trace: Any, expected_text: str, *, saved: bool = True) -> None:
    """Assert the graph's canonical text (see :func:`graph_text`) equals ``expected_text``.

    Indentation common to all lines and blank edge lines are ignored, so the expected
    text can sit indented in a triple-quoted string.

    >>> import tracegrad as torch
    >>> x = torch.ones(3, requires_grad=True); x.name = "x"
    >>> assert_graph((x * 2).sum(), '''
    ...     SumBackward0
    ...       MulBackward0
    ...         AccumulateGrad  x f32[3]
    ... ''')
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not ours
    trace, roots = _as_named_trace(tensor_or_trace)
    actual = render_text(trace, roots, saved=saved)
    if normalize_text(actual) == normalize_text(expected_text):
        return
    raise AssertionError(
        "the autograd graph differs from the expected text (- expected, + actual):\n"
        f"{graph_diff(expected_text, actual)}\n"
        f"actual graph:\n{_indent(actual)}\n"
        "Hint: if the new graph is right, paste the actual graph above into the test.")


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


# -- structure -------------------------------------------------------------------------------
def _as_named_trace(tensor_or_trace: Any) -> tuple[Trace, list[int]]:
    """``trace_and_roots``, with a trace still being recorded named first (see below)."""
    trace, roots = trace_and_roots(tensor_or_trace)
    _name_recorded_tensors(trace)
    return trace, roots


def _graph_nodes(tensor_or_trace: Any) -> tuple[Trace, list[NodeRecord]]:
    trace, roots = _as_named_trace(tensor_or_trace)
    return trace, [trace.nodes[node_id] for node_id in trace.reachable(roots)]


def assert_op_counts(tensor_or_trace: Any, expected: Mapping[str, int], *,
                     exact: bool = False) -> None:
    """Assert how many nodes of each name the graph has.

    With ``exact=True`` the graph may hold no node names besides those in ``expected``
    (``AccumulateGrad`` included).

    >>> import tracegrad as torch
    >>> w = torch.ones(2, 2, requires_grad=True)
    >>> assert_op_counts(w.mm(w).mm(w).sum(), {"MmBackward0": 2})
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not ours
    _, nodes = _graph_nodes(tensor_or_trace)
    counts = Counter(node.name for node in nodes)
    problems = [f"  {name}: expected {count}, found {counts.get(name, 0)}"
                for name, count in expected.items() if counts.get(name, 0) != count]
    if exact:
        problems += [f"  {name}: expected none, found {count}"
                     for name, count in sorted(counts.items()) if name not in expected]
    if problems:
        found = ", ".join(f"{name}: {count}" for name, count in sorted(counts.items()))
        raise AssertionError(
            "node counts differ from the expected ones:\n" + "\n".join(problems)
            + f"\nthe graph has: {{{found}}}")


def _name_paths(trace: Trace, nodes: list[NodeRecord], limit: int = 5) -> list[str]:
    """A few root-to-leaf paths as 'A -> B -> C', to show what the graph looks like."""
    paths: list[str] = []
    if not nodes:
        return paths
    stack: list[tuple[int, tuple[str, ...]]] = [(nodes[0].id, ())]
    while stack and len(paths) < limit:
        node_id, prefix = stack.pop()
        node = trace.nodes[node_id]
        path = prefix + (node.name,)
        children = [n for n, _ in node.next if n is not None and n in trace.nodes]
        if not children or len(path) > 50:
            paths.append(" -> ".join(path))
        for child in reversed(children):
            stack.append((child, path))
    return paths


def assert_contains_chain(tensor_or_trace: Any, names: Sequence[str]) -> None:
    """Assert some path down ``next_functions`` passes nodes named ``names`` in a row.

    >>> import tracegrad as torch
    >>> x = torch.ones(3, requires_grad=True)
    >>> assert_contains_chain(((x - 1) ** 2).sum(), ["SumBackward0", "PowBackward0",
    ...                                              "SubBackward0"])
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not ours
    names = list(names)
    if not names:
        raise ValueError("assert_contains_chain needs at least one node name, got [].")
    trace, nodes = _graph_nodes(tensor_or_trace)
    # matched[node] = the longest prefix of `names` that ends at node along some path.
    # Nodes come in an order where each node follows all its parents (a topological order),
    # so one pass suffices.
    ends: dict[int, set[int]] = {node.id: set() for node in nodes}
    for node in _topological(trace, nodes):
        here = ends[node.id]
        if node.name == names[0]:
            here.add(1)
        if len(names) in here:
            return
        for next_id, _ in node.next:
            if next_id is None or next_id not in ends:
                continue
            child = trace.nodes[next_id]
            for length in here:
                if length < len(names) and child.name == names[length]:
                    ends[next_id].add(length + 1)
    paths = _name_paths(trace, nodes)
    raise AssertionError(
        f"no path in the graph goes through {' -> '.join(names)} in a row.\n"
        "some paths the graph has:\n" + "\n".join(f"  {path}" for path in paths))


def _topological(trace: Trace, nodes: list[NodeRecord]) -> list[NodeRecord]:
    """Parents before children (Kahn's algorithm, ties broken by node id)."""
    import heapq

    ids = {node.id for node in nodes}
    parents = {node.id: 0 for node in nodes}
    for node in nodes:
        for next_id, _ in node.next:
            if next_id in ids:
                parents[next_id] += 1
    ready = [node_id for node_id, count in parents.items() if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        node_id = heapq.heappop(ready)
        order.append(trace.nodes[node_id])
        for next_id, _ in trace.nodes[node_id].next:
            if next_id in ids:
                parents[next_id] -= 1
                if parents[next_id] == 0:
                    heapq.heappush(ready, next_id)
    return order


def _endpoint_nodes(trace: Trace, endpoint: str, role: str) -> list[int]:
    """The node ids a tensor name or node name stands for in ``trace``.

    A tensor stands for its ``grad_fn`` or, for a leaf, its ``AccumulateGrad``.
    """
    tensor_ids = {record.id for record in trace.tensors.values() if record.name == endpoint}
    found = [node.id for node in trace.iter_nodes() if node.leaf in tensor_ids]
    found += [record.grad_fn for record in trace.tensors.values()
              if record.id in tensor_ids and record.grad_fn is not None]
    if not found:
        found = [node.id for node in trace.iter_nodes() if node.name == endpoint]
    return sorted(set(found))


class _TemporaryNames:
    """Give unnamed endpoint tensors a name while their graph is traced, so they can be
    found in the trace by name (a trace holds no live tensors); restored afterwards."""

    def __init__(self, **endpoints: Any) -> None:
        self.endpoints = endpoints
        self.restore: list[tuple[Any, Any]] = []

    def __enter__(self) -> dict[str, str]:
        from ..tensor import Tensor

        keys = {}
        for role, endpoint in self.endpoints.items():
            if isinstance(endpoint, Tensor):
                if endpoint.name is None:
                    self.restore.append((endpoint, None))
                    endpoint.name = f"<{role}>"
                keys[role] = endpoint.name
            elif isinstance(endpoint, str):
                keys[role] = endpoint
            else:
                raise TypeError(f"assert_no_path: '{role}' must be a Tensor, a tensor name or "
                                f"a node name, got {type(endpoint).__name__}.")
        return keys

    def __exit__(self, *exc_info) -> None:
        for tensor, name in self.restore:
            tensor.name = name


def assert_no_path(tensor_or_trace: Any, source: Any, target: Any) -> None:
    """Assert no gradient can flow from ``source`` back to ``target`` (detach cut it).

    ``source`` and ``target`` are tensors, tensor names, or node names. A target tensor that
    is not in the graph at all passes; a name that is nowhere in the graph is an error (it
    is more likely a typo than a cut).

    >>> import tracegrad as torch
    >>> w = torch.ones(2, requires_grad=True)
    >>> b = torch.ones(2, requires_grad=True)
    >>> out = ((w * 2).detach() * b).sum()
    >>> assert_no_path(out, out, w)
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not ours
    from ..tensor import Tensor

    with _TemporaryNames(source=source, target=target) as keys:
        trace, _ = trace_and_roots(tensor_or_trace)
    starts = _endpoint_nodes(trace, keys["source"], "source")
    goals = set(_endpoint_nodes(trace, keys["target"], "target"))
    names = sorted({r.name for r in trace.tensors.values() if r.name and r.name[0] != "<"})
    if not starts:
        raise ValueError(
            f"assert_no_path: the source {_label(source)} is not in the graph. Tensor names "
            f"in the graph: {names}. Hint: pass the output tensor itself, a tensor name or a "
            "node name such as 'MulBackward0'.")
    if not goals and not isinstance(target, Tensor):
        raise ValueError(
            f"assert_no_path: no tensor or node named {_label(target)} in the graph. Tensor "
            f"names in the graph: {names}. Hint: to assert that a tensor is cut off entirely, "
            "pass the tensor itself rather than its name.")
    parent: dict[int, int | None] = dict.fromkeys(starts)
    queue = list(starts)
    while queue:
        node_id = queue.pop(0)
        if node_id in goals:
            path = []
            step: int | None = node_id
            while step is not None:
                path.append(trace.nodes[step].name)
                step = parent[step]
            raise AssertionError(
                f"expected no path from {_label(source)} to {_label(target)}, but gradients "
                f"flow along: {' -> '.join(reversed(path))}.\nHint: detach() (or no_grad()) "
                "where the graph should be cut.")
        for next_id, _ in trace.nodes[node_id].next:
            if next_id is not None and next_id in trace.nodes and next_id not in parent:
                parent[next_id] = node_id
                queue.append(next_id)


def _label(endpoint: Any) -> str:
    if isinstance(endpoint, str):
        return f"'{endpoint}'"
    name = getattr(endpoint, "name", None)
    shape = list(getattr(endpoint, "shape", ()))
    return f"'{name}'" if name else f"the tensor of shape {shape}"


def assert_saved(tensor_or_trace: Any, node_name: str, *, count: int | None = None,
                 nbytes: int | None = None, names: Sequence[str] | None = None) -> None:
    """Assert what the node(s) named ``node_name`` save for backward.

    ``count`` and ``nbytes`` are totals over every node with that name; ``names`` lists the
    saved tensors' labels in order (as graph_text shows them).

    >>> import tracegrad as torch
    >>> x = torch.ones(8, requires_grad=True)
    >>> assert_saved(x.exp().sum(), "ExpBackward0", count=1, nbytes=32)
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not ours
    trace, roots = _as_named_trace(tensor_or_trace)
    nodes = [trace.nodes[node_id] for node_id in trace.reachable(roots)]
    matching = [node for node in nodes if node.name == node_name]
    if not matching:
        present = sorted({node.name for node in nodes})
        raise AssertionError(f"no node named {node_name} in the graph; it has: {present}")
    saved = [record for node in matching for record in node.saved]
    text_namer = _Namer(trace)
    render_text(trace, roots, namer=text_namer)  # so t<N> labels agree with graph_text
    found_names = [text_namer.label(record.tensor) for record in saved]
    found_bytes = sum(record.nbytes for record in saved)
    problems = []
    if count is not None and len(saved) != count:
        problems.append(f"count: expected {count}, found {len(saved)}")
    if nbytes is not None and found_bytes != nbytes:
        problems.append(f"nbytes: expected {nbytes}, found {found_bytes}")
    if names is not None and list(names) != found_names:
        problems.append(f"names: expected {list(names)}, found {found_names}")
    if problems:
        described = ", ".join(text_namer.describe(record.tensor) for record in saved) or "nothing"
        raise AssertionError(
            f"{node_name} ({len(matching)} node(s)) saves {described}:\n  "
            + "\n  ".join(problems))


# -- trace contents ----------------------------------------------------------------------------
def _whole_trace(trace_like: Any) -> Trace:
    __tracebackhide__ = True
    from ..tracing.query import recorded_trace

    trace = recorded_trace(trace_like)
    if trace is not None:
        _name_recorded_tensors(trace)
        return trace
    raise TypeError(
        f"expected a tracegrad Trace, got {type(trace_like).__name__}. Hint: record one with "
        "`with tracegrad.record() as tr:` (or the tracegrad_trace pytest fixture).")


def _name_recorded_tensors(trace: Trace) -> None:
    """A trace still being recorded (the ``tracegrad_trace`` fixture) names its tensors
    after the test's variables now, so findings say 'h' as ``tracegrad check`` does."""
    from ..autograd import events

    for listener in events.listeners:
        if getattr(listener, "trace", None) is trace and hasattr(listener, "name_pending"):
            listener.name_pending()


def assert_no_violations(trace: Any, kinds: Iterable[str] | None = None) -> None:
    """Assert the trace recorded no violations (in-place on saved tensors, NaN, ...).

    ``kinds`` limits the check to some kinds (``"inplace_saved"``, ``"nan"``, ...).
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not ours
    from ..cli import plural
    from ..tracing.report import findings, format_finding

    trace = _whole_trace(trace)
    wanted = set(kinds) if kinds is not None else None
    found = [finding for finding in findings(trace) if wanted is None or finding.kind in wanted]
    if found:
        # The same words as `tracegrad check`, so a finding reads the same everywhere.
        raise AssertionError(
            f"expected no violations, found {plural(len(found), 'finding')}:\n"
            + "\n".join(_indent(format_finding(trace, finding)) for finding in found))




def assert_no_nan(trace: Any) -> None:
    """Assert no NaN or Inf appeared in any captured value or gradient of the trace."""
    __tracebackhide__ = True  # pytest shows the caller's line, not ours
    trace = _whole_trace(trace)
    from ..tracing.report import findings, format_finding

    problems = [_indent(format_finding(trace, finding)) for finding in findings(trace)
                if finding.kind in ("nan", "inf")]
    for record in sorted(trace.tensors.values(), key=lambda r: r.id):
        for what, value in (("value", record.value), ("grad", record.grad)):
            if value is not None and value.stats.has_nonfinite:
                problems.append(f"  tensor {record.label} {what}: {value.stats.nan_count} NaN, "
                                f"{value.stats.inf_count} Inf")
    for backward_pass in trace.passes:
        for step in backward_pass.steps:
            for value in step.grads_out:
                if value is not None and value.stats.has_nonfinite:
                    node = trace.nodes.get(step.node)
                    problems.append(
                        f"  pass {backward_pass.index} step {step.index} "
                        f"({node.name if node else step.node}) gradient out: "
                        f"{value.stats.nan_count} NaN, {value.stats.inf_count} Inf")
    if problems:
        raise AssertionError("expected no NaN or Inf, found:\n" + "\n".join(problems))
