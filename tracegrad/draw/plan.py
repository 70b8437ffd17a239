"""What to draw for a Trace: boxes and arrows as plain data, before any DOT is written.

Vocabulary follows torchviz so its users feel at home: grad_fn nodes are grey boxes named
``grad_fn.name()``; leaves that require grad are light blue with name and shape; saved
tensors are orange, joined to the node that saved them by an undirected edge; outputs are
green; a view is joined to its base by a dotted edge. On top: step numbers from a backward
pass, gradient summaries on edges, saved versions and bytes, violations in red, and one
cluster per nn.Module scope (or one box per module with ``collapse_modules``).

A tensor is keyed by its trace tensor id, so a tensor with two roles (a leaf that is also
saved, an output that its own node saved) is one box, never two. Everything here is built
with loops over sorted ids -- no recursion, no ``id()`` -- so a 100,000-node chain works
and the result is the same on every run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..tracing.model import (
    BackwardPass,
    NodeRecord,
    Step,
    TensorRecord,
    Trace,
    Value,
    Violation,
)
from ..tracing.text import violation_lines, violation_mark
from ._text import (
    bytes_text,
    clip,
    site_full,
    site_short,
    size_text,
    value_detail,
    value_summary,
)
from .fold import FOLDED, FOLDED_LEAVES

# torchviz's colours, so a torchviz user reads the picture at once.
NODE_FILL = "lightgrey"
LEAF_FILL = "lightblue"
SAVED_FILL = "orange"
OUTPUT_FILL = "darkolivegreen1"
BASE_FILL = "darkolivegreen3"
MODULE_FILL = "lightyellow"
# Ours.
VIOLATION_FILL = "red"
VIOLATION_COLOR = "red"
HIGHLIGHT_COLOR = "blue"
EXCEPTION_FILL = "lightpink"
TOOLTIP_ITEMS = 8  # inputs, outputs, saved tensors, gradients listed per tooltip


@dataclass(slots=True)  # slots: made 100,000 times for a large graph (bench/bench_dot.py)
class Box:
    """One DOT node: its id, label lines, tooltip lines and extra attributes."""

    key: str
    label: list[str]
    tooltip: list[str]
    fill: str
    module: str | None = None  # cluster scope, when drawn inside one
    attrs: dict[str, str] = field(default_factory=dict)
    roles: list[str] = field(default_factory=list)  # tensors: output, leaf, saved, base


@dataclass(slots=True)
class Arrow:
    """One DOT edge from ``tail`` to ``head`` (forward direction, as torchviz draws)."""

    tail: str
    head: str
    label: str = ""
    tooltip: list[str] = field(default_factory=list)
    attrs: dict[str, str] = field(default_factory=dict)


ALL_PASSES = "all"  # pass_index that draws every recorded node, no pass selected


@dataclass
class Options:
    show_saved: bool = True
    show_attrs: bool = False
    max_attr_chars: int = 50
    collapse_modules: bool = False
    highlight_step: int | None = None
    pass_index: int | str | None = None  # None: the default pass; "all": every node


@dataclass
class Plan:
    boxes: list[Box]
    arrows: list[Arrow]
    collapsed: bool = False
    title: list[str] = field(default_factory=list)  # which pass, what was folded
    module_labels: dict[str, str] = field(default_factory=dict)  # scope -> "0: Linear"

    @property
    def size(self) -> int:
        return len(self.boxes)


def given_outputs(trace: Trace) -> list[int] | None:
    """The tensors the user asked to draw (a Trace made from tensors has them as roots);
    None lets the plan choose (the selected pass's roots, or the graph's outputs)."""
    return trace.output_tensors() if trace.roots else None


def plan_graph(trace: Trace, outputs: list[int] | None = None,
               options: Options | None = None) -> Plan:
    """Decide every box and arrow for ``trace``.

    ``outputs`` are the tensor ids to draw green (the tensors the user passed); when None,
    the roots of the backward passes, or else the outputs of nodes nothing consumes.
    """
    return _Planner(trace, outputs, options or Options()).build()


class _Planner:
    def __init__(self, trace: Trace, outputs: list[int] | None, options: Options) -> None:
        self.trace = trace
        self.options = options
        self.nodes = list(trace.iter_nodes())
        self.pass_index = resolve_pass(trace, options.pass_index, options.highlight_step)
        self.backward: BackwardPass | None = (
            trace.passes[self.pass_index] if self.pass_index is not None else None)
        self.steps: dict[int, Step] = (
            self.backward.steps_by_node() if self.backward is not None else {})
        if outputs is None and self.backward is not None and self.backward.roots:
            # A training loop records one graph per iteration: draw the selected pass's.
            outputs = list(self.backward.roots)
            reached = trace.reachable(trace.tensor_nodes(outputs))
            self.nodes = [trace.nodes[node_id] for node_id in sorted(reached)]
        self.outputs = _unique(outputs if outputs is not None else trace.output_tensors())
        self.node_violations: dict[int, list[Violation]] = {}
        self.tensor_violations: dict[int, list[Violation]] = {}
        self.module_of_node: dict[int, str] = {}
        self.module_keys: dict[str, str] = {}
        self.scopes: set[str] | None = None
        self.saved_detail_shown: set[str] = set()
        self.boxes: dict[str, Box] = {}
        self.arrows: list[Arrow] = []
        self.grads_after: dict[int, Value] | None = None  # built on first use
        # Texts asked for again and again (a tensor is briefed as one node's output and the
        # next one's input; a gradient is one step's output and the next step's input, and
        # labels an arrow too): each made once. Values are keyed by id(): the trace keeps
        # them alive while this plan is built, and nothing is ordered by the keys.
        self._briefs: dict[int | None, str] = {}
        self._value_details: dict[int, str] = {}
        self._site_lines: dict[int, str] = {}
        self._node_keys: dict[int, str] = {}
        self._bytes_texts: dict[int, str] = {}

    # -- top level -------------------------------------------------------------------
    def build(self) -> Plan:
        self._index_violations()
        if self.options.collapse_modules:
            self._index_modules()
        self._add_module_boxes()
        for node in self.nodes:
            if node.kind == "accumulate" and node.leaf is not None:
                self._tensor_box(node.leaf, role="leaf", node=node)
            elif node.id not in self.module_of_node:
                self._node_box(node)
        for node in self.nodes:
            self._add_next_arrows(node)
            if self.options.show_saved and node.id not in self.module_of_node:
                self._add_saved(node)
        for tensor_id in self.outputs:
            self._add_output(tensor_id)
        self._add_view_bases()
        self._add_undrawn_violations()
        self._add_exception_note()
        if self.module_keys:
            self.arrows = _merge_parallel(self.arrows)
        return Plan(list(self.boxes.values()), self.arrows,
                    collapsed=self.options.collapse_modules, title=self._title(),
                    module_labels=self._module_labels())

    def _module_labels(self) -> dict[str, str]:
        classes = self.trace.metadata.get("module_classes") or {}
        return {scope: module_label(scope, name) for scope, name in classes.items()}

    def _title(self) -> list[str]:
        return picture_title(self.trace, self.pass_index,
                             all_nodes=self.options.pass_index == ALL_PASSES)

    # -- indexes ---------------------------------------------------------------------
    def _index_violations(self) -> None:
        for violation in self.trace.violations:
            if violation.node is not None and violation.node in self.trace.nodes:
                node = self.trace.nodes[violation.node]
                if node.kind == "accumulate" and node.leaf is not None:
                    self.tensor_violations.setdefault(node.leaf, []).append(violation)
                else:
                    self.node_violations.setdefault(violation.node, []).append(violation)
                if violation.tensor is not None and violation.kind == "inplace_saved":
                    self.tensor_violations.setdefault(violation.tensor, []).append(violation)
            elif violation.tensor is not None and violation.tensor in self.trace.tensors:
                self.tensor_violations.setdefault(violation.tensor, []).append(violation)

    def _index_modules(self) -> None:
        for node in self.nodes:
            if node.kind != "accumulate" and node.module:
                self.module_of_node[node.id] = node.module
                if node.module not in self.module_keys:
                    self.module_keys[node.module] = f"m{len(self.module_keys)}"

    def key_of_node(self, node_id: int) -> str:
        key = self._node_keys.get(node_id)  # asked for as head and again as tail
        if key is None:
            key = self._node_keys[node_id] = self._new_key_of_node(node_id)
        return key

    def _new_key_of_node(self, node_id: int) -> str:
        module = self.module_of_node.get(node_id)
        if module is not None:
            return self.module_keys[module]
        node = self.trace.nodes.get(node_id)
        if node is not None and node.kind == "accumulate" and node.leaf is not None:
            return f"t{node.leaf}"
        return f"n{node_id}"

    # -- boxes -----------------------------------------------------------------------
    def _node_box(self, node: NodeRecord) -> None:
        # Run once per node of a 100,000-node graph: lookups hoisted, the common shapes
        # (one input, one output, no saved tensors, no hooks) taken without slicing or
        # joining lists (bench/bench_dot.py).
        node_id = node.id
        step = self.steps.get(node_id) if self.steps else None
        label = [node.name] if step is None else [node.name, f"step {step.index}"]
        tensors = self.trace.tensors
        for output_id in node.outputs:
            tensor = tensors.get(output_id)
            if tensor is not None and tensor.name:
                label.append(f"→ {tensor.name} {size_text(tensor.shape)}")
        options = self.options
        if options.show_attrs:
            for attr_name, value in node.attrs.items():
                label.append(clip(f"{attr_name}: {value}", options.max_attr_chars))
        key = f"n{node_id}"
        # key_of_node's answer for a node drawn as its own box (not in a collapsed module,
        # not a leaf's AccumulateGrad): its arrows ask for it next, made once here.
        self._node_keys[node_id] = key
        box = Box(key, label, self._node_tooltip(node, step), NODE_FILL, module=node.module)
        if node.kind in _FOLDED_KINDS:  # many nodes drawn as one (fold.py)
            box.fill = LEAF_FILL if node.kind == FOLDED_LEAVES else MODULE_FILL
            box.attrs["shape"] = "box3d"
            box.label.extend(f"{key}: {value}" for key, value in node.attrs.items()
                             if key != "folded" and not options.show_attrs)
        if step is not None:
            self._mark_step(box, step)
        if self.node_violations:
            self._mark_violations(box, self.node_violations.get(node_id, ()))
        if step is not None and step.error:
            box.attrs["color"] = VIOLATION_COLOR
            box.attrs["penwidth"] = "2"
            box.label.append(clip(f"failed: {step.error}", 60))
        self.boxes[box.key] = box

    def _node_tooltip(self, node: NodeRecord, step: Step | None) -> list[str]:
        briefs, brief = self._briefs, self._tensor_brief  # briefs.get: brief's cache, inline
        kind = node.kind
        lines = [f"{node.name} (node {node.id}, "
                 f"{'built-in op' if kind == 'op' else _NODE_KINDS.get(kind, 'built-in op')})",
                 self._created_at(node.site)]
        if node.module:
            lines.append(f"module: {node.module}")
        inputs, outputs = node.inputs, node.outputs
        if len(inputs) == 1:
            lines.append("inputs: " + (briefs.get(inputs[0]) or brief(inputs[0])))
        else:
            lines.append("inputs: " + (_capped(list(map(brief, inputs[:TOOLTIP_ITEMS + 1])),
                                               len(inputs)) or "none"))
        if len(outputs) == 1:
            lines.append("outputs: " + (briefs.get(outputs[0]) or brief(outputs[0])))
        else:
            lines.append("outputs: " + (_capped(list(map(brief, outputs[:TOOLTIP_ITEMS + 1])),
                                                len(outputs)) or "none"))
        saved_list = node.saved
        if saved_list:
            for saved in saved_list[:TOOLTIP_ITEMS]:
                lines.append(f"saved {saved.slot or '?'}: {brief(saved.tensor)} "
                             f"version {saved.version}, {self._bytes(saved.nbytes)}"
                             + (" (its own output)" if saved.is_output else ""))
            if len(saved_list) > TOOLTIP_ITEMS:
                lines.append(f"... and {len(saved_list) - TOOLTIP_ITEMS:,} more saved tensors")
        if node.attrs:
            for attr_name, value in node.attrs.items():
                lines.append(f"{attr_name} = {value}")
        if step is not None:
            detail, details = self._detail, self._value_details
            lines.append(f"backward pass {self.backward.index}, step {step.index}")
            grads_in, grads_out = step.grads_in, step.grads_out
            if len(grads_in) <= TOOLTIP_ITEMS and len(grads_out) <= TOOLTIP_ITEMS:
                number = 0  # the usual node: a few gradients, each line looked up once
                for grad in grads_in:
                    if grad is not None:
                        lines.append(_GRAD_IN[number]
                                     + (details.get(id(grad)) or detail(grad)))
                    number += 1
                number = 0
                for grad in grads_out:
                    if grad is not None:
                        lines.append(_GRAD_OUT[number]
                                     + (details.get(id(grad)) or detail(grad)))
                    number += 1
            else:
                for prefixes, direction, grads in ((_GRAD_IN, "in", grads_in),
                                                   (_GRAD_OUT, "out", grads_out)):
                    for number, grad in enumerate(grads[:TOOLTIP_ITEMS]):
                        if grad is not None:
                            lines.append(prefixes[number] + detail(grad))
                    if len(grads) > TOOLTIP_ITEMS:
                        lines.append(f"... and {len(grads) - TOOLTIP_ITEMS:,} more "
                                     f"gradients {direction}")
            for hook in step.hooks:
                changed = " (replaced the gradient)" if hook.changed else ""
                lines.append(f"{hook.kind} hook {hook.name}{changed}")
            if step.error:
                lines.append(f"error: {step.error}")
        if self.node_violations:
            for violation in self.node_violations.get(node.id, ()):
                lines.extend(violation_lines(self.trace, violation))
        return lines

    def _tensor_brief(self, tensor_id: int | None) -> str:
        brief = self._briefs.get(tensor_id)
        if brief is None:
            tensor = self.trace.tensors.get(tensor_id) if tensor_id is not None else None
            if tensor is not None:
                brief = f"{tensor.label} {tensor.dtype} {size_text(tensor.shape)}"
            else:
                brief = "None" if tensor_id is None else f"t{tensor_id}"
            self._briefs[tensor_id] = brief
        return brief

    def _detail(self, value: Value) -> str:
        """``value_detail(value)``, made once per Value."""
        detail = self._value_details.get(id(value))
        if detail is None:
            detail = self._value_details[id(value)] = value_detail(value)
        return detail

    def _bytes(self, count: int) -> str:
        """``bytes_text(count)``, made once per count (a chain saves one size 50,000 times)."""
        text = self._bytes_texts.get(count)
        if text is None:
            text = self._bytes_texts[count] = bytes_text(count)
        return text

    def _created_at(self, site) -> str:
        """``created at file:line in function: code``, made once per Site."""
        line = self._site_lines.get(id(site))
        if line is None:
            line = self._site_lines[id(site)] = f"created at {site_full(site)}"
        return line

    def _tensor_box(self, tensor_id: int, role: str, node: NodeRecord | None = None) -> Box:
        """The one box of a tensor, made on first use and given one more role each call."""
        key = f"t{tensor_id}"
        box = self.boxes.get(key)
        tensor = self.trace.tensors.get(tensor_id)
        if box is None:
            # The label's two texts go into the tooltip's first line too: made once here
            # (a chain draws 50,000 saved tensors; bench/bench_dot.py).
            if tensor is not None:
                label = [tensor.name or f"t{tensor.id}", size_text(tensor.shape)]  # .label
            else:
                label = [f"t{tensor_id}", size_text(None)]
            box = Box(key, label, self._tensor_tooltip(tensor_id, tensor, *label),
                      _ROLE_FILL[role], roles=[role])
            if role == "leaf" and tensor is not None:
                box.module = self._parameter_module(tensor)
            if self.tensor_violations:
                self._mark_violations(box, self.tensor_violations.get(tensor_id, ()))
            self.boxes[key] = box
        else:
            roles = box.roles
            if role not in roles:
                roles.append(role)
                outranks = _ROLE_RANK[role] < min(_ROLE_RANK[name] for name in roles[:-1])
                if outranks and box.fill != VIOLATION_FILL:
                    box.fill = _ROLE_FILL[role]
            if role == "saved" and box.attrs.get("color") != VIOLATION_COLOR:
                # The second role shows as an orange border around the first one's fill.
                box.attrs["color"] = SAVED_FILL
                box.attrs["penwidth"] = "2"
        if role == "leaf" and node is not None:
            step = self.steps.get(node.id)
            if step is not None and f"step {step.index}" not in box.label:
                box.label.insert(2, f"step {step.index}")
                self._mark_step(box, step)
        return box

    def _parameter_module(self, tensor: TensorRecord) -> str | None:
        """``layer1`` for a parameter named ``layer1.weight``, so it sits in that cluster."""
        if self.options.collapse_modules:
            return None  # parameters stay outside the module boxes
        if not tensor.is_parameter or not tensor.name or "." not in tensor.name:
            return None
        if self.scopes is None:
            self.scopes = {node.module for node in self.nodes if node.module}
        module = tensor.name.rsplit(".", 1)[0]
        return module if module in self.scopes else None

    def _tensor_tooltip(self, tensor_id: int, tensor: TensorRecord | None, label: str,
                        size: str) -> list[str]:
        """The tooltip of a tensor's box; ``label`` and ``size``: its box label's texts
        (``tensor.label``, ``size_text(tensor.shape)``)."""
        if tensor is None:
            return [f"tensor t{tensor_id} (not recorded)"]
        # One f-string for the first line, the rare parts tested before any call: run once
        # per drawn tensor (a chain saves 50,000 of them; bench/bench_dot.py).
        lines = [f"{label} (tensor {tensor.id}): {tensor.dtype} {size} on {tensor.device}, "
                 f"{'leaf' if tensor.is_leaf else 'non-leaf'}"
                 f"{', requires grad' if tensor.requires_grad else ''}"
                 f"{', parameter' if tensor.is_parameter else ''}"]
        if tensor.site is not None:
            lines.append(self._created_at(tensor.site))
        grad_fn = tensor.grad_fn
        if grad_fn is not None:
            made_by = self.trace.nodes.get(grad_fn)
            if made_by is not None:
                lines.append(f"made by {made_by.name} (output {tensor.output_nr})")
        if tensor.base is not None:
            lines.append(f"view of {self._tensor_brief(tensor.base)}")
        versions = tensor.versions
        if versions:
            lines.append(f"version {tensor.version}")
            for change in versions:
                lines.append(f"  v{change.version}: {change.op} at {site_full(change.site)}")
        else:
            lines.append("version 0")  # tensor.version with no change recorded
        if tensor.value is not None:
            lines.append(f"value: {self._detail(tensor.value)}")
        if self.backward is not None or tensor.grad is not None:
            lines.extend(self._grad_lines(tensor))
        if self.tensor_violations:
            for violation in self.tensor_violations.get(tensor_id, ()):
                lines.extend(violation_lines(self.trace, violation))
        return lines

    def _grad_lines(self, tensor: TensorRecord) -> list[str]:
        """``.grad`` as it was after the drawn pass (recorded per pass since schema 3);
        traces without it show the .grad after the last pass, and say so."""
        if self.backward is not None:
            if self.grads_after is None:  # every leaf's .grad up to the pass, in one sweep
                self.grads_after = {}
                for backward_pass in self.trace.passes[:self.backward.index + 1]:
                    self.grads_after.update(backward_pass.grads_after())
            grad = self.grads_after.get(tensor.id)
            if grad is not None:
                return [f"grad: {self._detail(grad)}"]  # after the drawn pass
        if tensor.grad is not None:
            return [f"grad (after the last pass): {self._detail(tensor.grad)}"]
        return []

    def _mark_step(self, box: Box, step: Step | None) -> None:
        if step is not None and step.index == self.options.highlight_step:
            box.attrs["color"] = HIGHLIGHT_COLOR
            box.attrs["penwidth"] = "3"

    def _mark_violations(self, box: Box, violations) -> None:
        for violation in violations:
            box.fill = VIOLATION_FILL
            box.attrs["color"] = VIOLATION_COLOR
            box.attrs["fontcolor"] = "white"
            box.label.extend(violation_mark(violation))

    # -- modules (collapsed) ---------------------------------------------------------
    def _add_module_boxes(self) -> None:
        members: dict[str, list[NodeRecord]] = {}
        for node in self.nodes:
            module = self.module_of_node.get(node.id)
            if module is not None:
                members.setdefault(module, []).append(node)
        for module, nodes in members.items():
            counts: dict[str, int] = {}
            for node in nodes:
                counts[node.name] = counts.get(node.name, 0) + 1
            saved_bytes = sum(node.saved_bytes for node in nodes)
            saved_count = sum(len(node.saved) for node in nodes)
            classes = self.trace.metadata.get("module_classes") or {}
            label = [module_label(module, classes.get(module)),
                     f"{len(nodes)} node" + ("s" if len(nodes) > 1 else "")]
            if saved_count:
                label.append(f"saved: {saved_count} tensors, {bytes_text(saved_bytes)}")
            tooltip = [f"module {module}: {len(nodes)} nodes (collapsed)"]
            tooltip += [f"{name} ×{count}" for name, count in counts.items()]
            box = Box(self.module_keys[module], label, tooltip, MODULE_FILL,
                      attrs={"shape": "box3d"})
            for node in nodes:
                self._mark_violations(box, self.node_violations.get(node.id, ()))
            self.boxes[box.key] = box

    # -- arrows ----------------------------------------------------------------------
    def _add_next_arrows(self, node: NodeRecord) -> None:
        edges = node.next
        if not edges:
            return
        head = self._node_keys.get(node.id) or self.key_of_node(node.id)
        step = self.steps.get(node.id) if self.steps else None
        grads = step.grads_out if step is not None else ()
        keys = self._node_keys
        arrows = self.arrows
        for number, (next_id, _input_nr) in enumerate(edges):
            if next_id is None:
                continue
            tail = keys.get(next_id) or self.key_of_node(next_id)
            if tail == head:
                continue  # inside one collapsed module
            arrow = Arrow(tail, head)
            grad = grads[number] if number < len(grads) else None
            if grad is not None:
                arrow.label = value_summary(grad)
                arrow.tooltip = [(f"gradient to {self._node_name(next_id)}: "
                                 f"{self._detail(grad)}")]
                stats = grad.stats
                if stats.nan_count or stats.inf_count:  # nonfinite_text's test
                    arrow.attrs.update(color=VIOLATION_COLOR, fontcolor=VIOLATION_COLOR)
            arrows.append(arrow)

    def _node_name(self, node_id: int) -> str:
        node = self.trace.nodes.get(node_id)
        if node is None:
            return f"n{node_id}"
        if node.kind == "accumulate" and node.leaf is not None:
            tensor = self.trace.tensors.get(node.leaf)
            return f"{tensor.label if tensor else node.leaf} (AccumulateGrad)"
        return node.name

    def _add_saved(self, node: NodeRecord) -> None:
        if not node.saved:
            return
        tensors = self.trace.tensors
        shown = self.saved_detail_shown
        head = f"n{node.id}"
        saver = f"saved by {node.name} (node {node.id}) as "
        for saved in node.saved:
            box = self._tensor_box(saved.tensor, role="saved")
            tensor = tensors.get(saved.tensor)
            size = self._bytes(saved.nbytes)
            slot = saved.slot or "?"
            version = saved.version
            if box.key not in shown:  # the first saver's version, bytes
                shown.add(box.key)
                box.label.append(f"v{version} · {size}")
            box.tooltip.append(f"{saver}{slot} at version {version}, {size}")
            arrow = Arrow(box.key, head, saved.slot,
                          [f"{node.name} saved this as {slot} (version {version})"],
                          {"dir": "none", "color": SAVED_FILL})
            if self.node_violations and self._saved_was_broken(node.id, saved.tensor):
                arrow.attrs["color"] = VIOLATION_COLOR
                current = tensor.version if tensor is not None else "?"
                arrow.label = f"{saved.slot} v{version}≠v{current}".strip()
            elif tensor is not None and tensor.version != version:
                # changed later (e.g. an optimizer step after backward): not an error
                arrow.tooltip.append(f"the tensor is now at version {tensor.version}")
            self.arrows.append(arrow)

    def _saved_was_broken(self, node_id: int, tensor_id: int) -> bool:
        violations = self.node_violations.get(node_id)
        return bool(violations) and any(
            violation.kind == "inplace_saved" and violation.tensor == tensor_id
            for violation in violations)

    def _add_output(self, tensor_id: int) -> None:
        box = self._tensor_box(tensor_id, role="output")
        tensor = self.trace.tensors.get(tensor_id)
        if tensor is not None and tensor.grad_fn is not None and tensor.grad_fn in self.trace.nodes:
            self.arrows.append(Arrow(self.key_of_node(tensor.grad_fn), box.key))

    def _add_view_bases(self) -> None:
        # Only the drawn tensors that are views can add anything: the others are left out
        # of ``pending`` at once (their order among the rest is kept, so are the arrows').
        tensors = self.trace.tensors
        pending = []
        for key in self.boxes:
            if key[0] == "t":
                tensor = tensors.get(int(key[1:]))
                if tensor is not None and tensor.base is not None:
                    pending.append(int(key[1:]))
        done: set[int] = set()
        while pending:
            tensor_id = pending.pop()
            if tensor_id in done:
                continue
            done.add(tensor_id)
            tensor = self.trace.tensors.get(tensor_id)
            if tensor is None or tensor.base is None or tensor.base not in self.trace.tensors:
                continue
            base_key = f"t{tensor.base}"
            if base_key not in self.boxes:
                self._tensor_box(tensor.base, role="base")
                pending.append(tensor.base)
            self.arrows.append(Arrow(base_key, f"t{tensor_id}", attrs={"style": "dotted"}))

    def _is_drawn(self, violation: Violation) -> bool:
        """Whether a box already shows ``violation`` (boxes mark theirs when made)."""
        node = self.trace.nodes.get(violation.node) if violation.node is not None else None
        if node is not None and self.key_of_node(node.id) in self.boxes:
            return True
        if node is not None and node.kind != "accumulate" and violation.kind != "inplace_saved":
            return False  # indexed under the node only
        return violation.tensor is not None and f"t{violation.tensor}" in self.boxes

    def _add_undrawn_violations(self) -> None:
        """Every violation appears in the picture: one on a tensor no node uses (a leaf
        changed in place and never used) gets that tensor's box; one on a node outside
        the drawn pass, or on nothing recorded, gets a note of its own."""
        notes = 0
        for violation in self.trace.violations:
            if self._is_drawn(violation):
                continue
            tensor = self.trace.tensors.get(violation.tensor) \
                if violation.tensor is not None else None
            if tensor is not None and violation.node is None:
                # _index_violations filed it under the tensor: the new box marks it.
                self._tensor_box(tensor.id, role="leaf" if tensor.is_leaf else "base")
                continue
            label = violation_mark(violation)
            if violation.node is not None and self.backward is not None:
                label.append(f"(not in the graph of pass {self.backward.index})")
            self.boxes[f"v{notes}"] = Box(
                f"v{notes}", label, violation_lines(self.trace, violation), VIOLATION_FILL,
                attrs={"shape": "note", "fontcolor": "white"})
            notes += 1

    def _add_exception_note(self) -> None:
        exception = self.trace.exception
        if exception is None:
            return
        label = ["program raised", clip(f"{exception.type}: {exception.message}", 80)]
        if exception.site is not None:
            label.append(f"at {site_short(exception.site)}")
        tooltip = [f"{exception.type}: {exception.message}", f"at {site_full(exception.site)}"]
        self.boxes["exception"] = Box("exception", label, tooltip, EXCEPTION_FILL,
                                      attrs={"shape": "note"})


_NODE_KINDS = {"function": "user autograd.Function", "accumulate": "AccumulateGrad"}
_FOLDED_KINDS = frozenset((FOLDED, FOLDED_LEAVES))
# "grad in 0: ", ...: the tooltip's gradient line prefixes, made once
_GRAD_IN = [f"grad in {number}: " for number in range(TOOLTIP_ITEMS)]
_GRAD_OUT = [f"grad out {number}: " for number in range(TOOLTIP_ITEMS)]


def _capped(items: list[str], total: int) -> str:
    """At most TOOLTIP_ITEMS items, then how many more (a node can have 100,000 inputs)."""
    shown = ", ".join(items[:TOOLTIP_ITEMS])
    return shown + (f", ... and {total - TOOLTIP_ITEMS:,} more" if total > TOOLTIP_ITEMS else "")


# The first role drawn decides the fill; a higher-ranked role (lower number) replaces it.
_ROLE_RANK = {"output": 0, "leaf": 1, "saved": 2, "base": 3}
_ROLE_FILL = {"output": OUTPUT_FILL, "leaf": LEAF_FILL, "saved": SAVED_FILL, "base": BASE_FILL}


def _merge_parallel(arrows: list[Arrow]) -> list[Arrow]:
    """One arrow per (tail, head, kind) once modules are collapsed, counting the merged."""
    merged: dict[tuple[str, str, str], Arrow] = {}
    counts: dict[tuple[str, str, str], int] = {}
    for arrow in arrows:
        key = (arrow.tail, arrow.head, arrow.attrs.get("dir", ""))
        if key in merged:
            counts[key] += 1
            merged[key].tooltip.extend(arrow.tooltip)
        else:
            merged[key], counts[key] = arrow, 1
    for key, arrow in merged.items():
        if counts[key] > 1:
            arrow.label = f"{arrow.label} (×{counts[key]})".strip()
    return list(merged.values())


def module_label(scope: str, class_name: str | None) -> str:
    """``0: Linear`` for a module scope and its class (just the class for a root module,
    whose scope is its class name).

    >>> module_label("0", "Linear"), module_label("MLP", "MLP"), module_label("fc", None)
    ('0: Linear', 'MLP', 'fc')
    """
    if class_name is None or class_name == scope:
        return scope
    return f"{scope}: {class_name}"


def picture_title(trace: Trace, pass_index: int | None, all_nodes: bool = False) -> list[str]:
    """Which pass a picture shows (a training loop records one graph per pass).

    >>> picture_title(Trace(), None)
    ['forward graph: no backward pass recorded']
    """
    if pass_index is not None:
        backward = trace.passes[pass_index]
        where = f" at {site_short(backward.site)}" if backward.site is not None else ""
        roots = ", ".join(trace.tensors[root].label if root in trace.tensors else f"t{root}"
                          for root in backward.roots)
        call = backward.label or (f"{backward.kind}({roots})" if roots else backward.kind)
        probe = "" if backward.is_user else " (gradcheck probe)"
        return [f"backward pass {backward.index} of {len(trace.passes)}{probe}: {call}{where}"]
    if all_nodes and trace.passes:
        return [f"every recorded node ({_count(len(trace.passes), 'backward pass')})"]
    if trace.metadata.get("source") == "from_tensor":
        return ["the graph behind the tensor (no backward pass recorded)"]
    return ["forward graph: no backward pass recorded"]


def default_pass(trace: Trace) -> int | None:
    """The pass a picture shows when none is asked for: the first one the program itself
    started (not a gradcheck probe), else the first; None when there is none.

    >>> default_pass(Trace(passes=[BackwardPass(0)]))
    0
    """
    own = trace.user_passes()
    if own:
        return own[0].index
    return 0 if trace.passes else None


def resolve_pass(trace: Trace, pass_index: int | str | None,
                 highlight_step: int | None = None) -> int | None:
    """The index of the pass to draw (None: no pass); ValueError for one out of range.

    ``pass_index`` None picks the default pass, ``"all"`` none (every recorded node), a
    negative number counts from the end as in Python.

    >>> resolve_pass(Trace(passes=[BackwardPass(0)]), -1)
    0
    >>> resolve_pass(Trace(passes=[BackwardPass(0)]), 3)
    Traceback (most recent call last):
    ...
    ValueError: pass 3 is out of range: the trace has 1 backward pass (0). Hint: pass_index=0, or 'all' for every recorded node.
    """
    count = len(trace.passes)
    if pass_index == ALL_PASSES:
        index = None
    elif pass_index is None:
        index = default_pass(trace)
    elif isinstance(pass_index, bool) or not isinstance(pass_index, int):
        raise TypeError(f"pass_index must be an int, None or 'all', got {pass_index!r}")
    elif -count <= pass_index < count:
        index = pass_index % count
    else:
        which = f"{_count(count, 'backward pass')} ({_range(count)})" if count \
            else "no backward pass"
        hint = f"pass_index={count - 1}, or 'all'" if count else "'all'"
        raise ValueError(f"pass {pass_index} is out of range: the trace has {which}. "
                         f"Hint: {hint} for every recorded node.")
    if highlight_step is not None:
        if index is None:
            raise ValueError(f"step {highlight_step} cannot be highlighted: no backward pass "
                             "is drawn. Hint: pick a pass as well.")
        backward = trace.passes[index]
        if backward.summarized:
            raise ValueError(f"step {highlight_step} cannot be highlighted: backward pass "
                             f"{index} kept no steps (it was summarized to stay within the "
                             "trace's structure budget).")
        steps = len(backward.steps)
        if not 0 <= highlight_step < steps:
            raise ValueError(f"step {highlight_step} is out of range: backward pass {index} "
                             f"has {_count(steps, 'step')} ({_range(steps)}).")
    return index


def _count(count: int, word: str) -> str:
    plural_word = word + ("es" if word.endswith("s") else "s")
    return f"1 {word}" if count == 1 else f"{count:,} {plural_word}"


def _range(count: int) -> str:
    return "0" if count == 1 else f"0-{count - 1}" if count else "none"


def _unique(values: list[int]) -> list[int]:
    seen: set[int] = set()
    result = []
    for value in values:
        if value not in seen:
            seen.add(value)
            result.append(value)
    return result
