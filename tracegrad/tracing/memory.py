"""What backward keeps: saved-tensor bytes by module and by source line, the peak held
between forward and backward, and tensors saved twice, largest first.

Read from the Trace only (``SavedRecord.nbytes`` and the tensors' view bases), so it works
on traces of both engines, recorded with or without values.

>>> import tracegrad
>>> w = tracegrad.ones(4, requires_grad=True)
>>> with tracegrad.record() as tr:
...     h = w * 2
...     y = (h * h).sum()
...     y.backward()
>>> report = memory_report(tr)
>>> report.saved_bytes, report.distinct_bytes, report.peak_bytes
(32, 16, 16)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .model import NodeRecord, Site, Trace

# The ops whose output is a copy of their input: that input and its copy both saved keep
# the same values twice.
COPY_OPS = frozenset({"CloneBackward0", "ToCopyBackward0", "CopyBackwards",
                      "CopySlices", "ContiguousBackward0"})


@dataclass
class Holder:
    """One node that saved a tensor, with its forward line."""

    node: int
    name: str
    site: Site | None


@dataclass
class SavedTwice:
    """The same values kept more than once: one storage saved by several nodes
    (``kind="shared"``), or a tensor and its copy both saved (``kind="copy"``)."""

    kind: str  # "shared" or "copy"
    tensor: int  # the tensor saved (for "copy": the copy)
    nbytes: int  # what the second copy costs (shared: the storage's bytes, counted once)
    holders: list[Holder] = field(default_factory=list)
    original: int | None = None  # for "copy": the tensor it was copied from


@dataclass
class MemoryReport:
    saved_count: int = 0  # saved-tensor slots
    saved_bytes: int = 0  # their bytes, each slot counted
    distinct_bytes: int = 0  # each storage counted once
    peak_bytes: int = 0  # the most distinct bytes held at once, as backward starts
    peak_pass: int | None = None  # the pass that started at the peak (None: no pass)
    # at the peak, largest first: (module, bytes), (line, bytes, ops that saved there)
    by_module: list[tuple[str, int]] = field(default_factory=list)
    by_line: list[tuple[Site | None, int, list[str]]] = field(default_factory=list)
    saved_twice: list[SavedTwice] = field(default_factory=list)  # largest first


def memory_report(trace: Trace) -> MemoryReport:
    """The saved-tensor memory of ``trace`` (see the module docstring). ``by_module`` and
    ``by_line`` break down the peak: what backward kept at its most."""
    report = MemoryReport()
    storage_bytes: dict[int, int] = {}
    for node in trace.iter_nodes():
        for saved in node.saved:
            report.saved_count += 1
            report.saved_bytes += saved.nbytes
            key = storage_of(trace, saved.tensor)
            storage_bytes[key] = max(storage_bytes.get(key, 0), saved.nbytes)
    report.distinct_bytes = sum(storage_bytes.values())
    twice: dict = {}
    peak = _peak(trace, storage_bytes, twice)
    report.peak_bytes, report.peak_pass = peak.held, peak.pass_index
    report.by_module, report.by_line = _breakdown(trace, peak.nodes, storage_bytes)
    report.saved_twice = sorted(twice.values(),
                                key=lambda item: (-item.nbytes, item.tensor, item.kind))
    return report


def _breakdown(trace: Trace, nodes: list[NodeRecord], storage_bytes: dict) -> tuple:
    """(by module, by line) of the saved storage ``nodes`` hold, largest first; a storage
    two lines saved counts for each."""
    modules: dict[str, set] = {}
    lines: dict = {}
    for node in nodes:
        for saved in node.saved:
            key = storage_of(trace, saved.tensor)
            modules.setdefault(node.module or "(no module)", set()).add(key)
            line = lines.setdefault(_site_key(node.site), [node.site, set(), []])
            line[1].add(key)
            if node.name not in line[2]:
                line[2].append(node.name)
    by_module = sorted(((name, sum(storage_bytes[key] for key in keys))
                        for name, keys in modules.items()),
                       key=lambda item: (-item[1], item[0]))
    by_line = sorted(((site, sum(storage_bytes[key] for key in keys), names)
                      for site, keys, names in lines.values()),
                     key=lambda item: (-item[1], _site_key(item[0]) or ("", 0)))
    return by_module, by_line


@dataclass
class _Peak:
    held: int = 0
    pass_index: int | None = None
    nodes: list[NodeRecord] = field(default_factory=list)  # the nodes holding it


def storage_of(trace: Trace, tensor_id: int) -> int:
    """The tensor id that stands for ``tensor_id``'s storage: its view base, followed to
    the root (a view and its base share memory)."""
    seen = 0
    record = trace.tensors.get(tensor_id)
    while record is not None and record.base is not None and seen < 64:
        tensor_id, seen = record.base, seen + 1
        record = trace.tensors.get(tensor_id)
    return tensor_id


def _note_twice(trace: Trace, alive: list[NodeRecord], storage_bytes: dict,
                found: dict) -> None:
    """Add to ``found`` the values the nodes in ``alive`` (whose saved tensors are held at
    the same time) keep twice: one storage saved by two nodes, or a tensor and its copy."""
    holders: dict[int, list[Holder]] = {}
    for node in alive:
        for saved in node.saved:
            entry = holders.setdefault(storage_of(trace, saved.tensor), [])
            if all(holder.node != node.id for holder in entry):
                entry.append(Holder(node.id, node.name, node.site))
    for key, entry in holders.items():
        if len(entry) > 1:
            _add_twice(found, SavedTwice("shared", key, storage_bytes[key], entry))
        copy_of = _copied_from(trace, key)
        original = storage_of(trace, copy_of) if copy_of is not None else None
        if original in holders:
            both = holders[original] + entry
            unique = [holder for index, holder in enumerate(both)
                      if all(other.node != holder.node for other in both[:index])]
            _add_twice(found, SavedTwice("copy", key, storage_bytes[key], unique,
                                         original=copy_of))


def _add_twice(found: dict, twice: SavedTwice) -> None:
    """One entry per (kind, lines that saved it): a loop saving the same way every
    iteration is one entry."""
    key = (twice.kind, tuple(sorted({_site_key(holder.site) or ("", 0)
                                     for holder in twice.holders})), twice.nbytes)
    if key not in found:
        found[key] = twice


def _copied_from(trace: Trace, tensor_id: int) -> int | None:
    record = trace.tensors.get(tensor_id)
    producer: NodeRecord | None = trace.nodes.get(record.grad_fn) \
        if record is not None and record.grad_fn is not None else None
    if producer is None or producer.name not in COPY_OPS or not producer.inputs:
        return None
    return producer.inputs[0]


def _peak(trace: Trace, storage_bytes: dict, twice: dict) -> _Peak:
    """The most distinct saved bytes alive at once, the pass that started then and the
    nodes holding them; fills ``twice`` with what those nodes keep twice.

    Saved tensors live from their node's forward until a pass without retain_graph runs
    that node. Nodes recorded before a pass started are those with a smaller id than the
    first node recorded after it (``metadata["pass_node_marks"]``; older traces: the
    largest node the pass ran). Two replays, each linear in nodes and steps: the first
    finds the peak, the second stops there to list its nodes (copying the live set at
    every new peak would be passes x nodes on a long gradcheck or retained loop).
    """
    peak = _Peak()
    for moment, held, _ in _replay(trace, storage_bytes):
        if held > peak.held:
            peak.held, peak.pass_index = held, moment
    if peak.held:
        for moment, _, alive in _replay(trace, storage_bytes):
            if moment == peak.pass_index:
                peak.nodes = list(alive.values())
                break
    _note_twice(trace, peak.nodes, storage_bytes, twice)
    return peak


def _replay(trace: Trace, storage_bytes: dict):
    """(pass index or None at the end, distinct bytes held, live nodes) as each pass
    starts and once at the end."""
    nodes = sorted(trace.nodes.values(), key=lambda node: node.id)
    marks = trace.metadata.get("pass_node_marks") or []
    # storage -> saved slots alive; the running total of their bytes sits under key -1
    # (kept as it changes: summing at every pass would be passes x storages on a long loop)
    holding: dict[int, int] = {-1: 0}
    alive: dict[int, NodeRecord] = {}
    added = 0
    for index, backward_pass in enumerate(trace.passes):
        mark = marks[index] if index < len(marks) else \
            max((step.node for step in backward_pass.steps), default=-1) + 1
        while added < len(nodes) and nodes[added].id < mark:
            _hold(trace, nodes[added], holding, 1, storage_bytes)
            alive[nodes[added].id] = nodes[added]
            added += 1
        yield backward_pass.index, holding[-1], alive
        if backward_pass.retain_graph:
            continue
        if backward_pass.summarized:
            ran = list(alive)
        else:
            ran = [step.node for step in backward_pass.steps if step.node in alive]
        for node_id in ran:
            if node_id in alive:
                _hold(trace, alive.pop(node_id), holding, -1, storage_bytes)
    while added < len(nodes):
        _hold(trace, nodes[added], holding, 1, storage_bytes)
        alive[nodes[added].id] = nodes[added]
        added += 1
    yield None, holding[-1], alive


def _hold(trace: Trace, node: NodeRecord, holding: dict, change: int,
          storage_bytes: dict) -> None:
    """Count ``node``'s saved slots in (``change`` 1) or out (-1), keeping the total of
    the storage held (``holding[-1]``): a storage counts from its first slot to its last."""
    for saved in node.saved:
        key = storage_of(trace, saved.tensor)
        before = holding.get(key, 0)
        after = holding[key] = before + change
        if before == 0 and after > 0:
            holding[-1] += storage_bytes[key]
        elif before > 0 and after == 0:
            holding[-1] -= storage_bytes[key]
            del holding[key]


def _site_key(site: Site | None):
    return (site.file, site.line) if site is not None else None
