"""Write the graph with the current step highlighted to an SVG file.

Uses the exporter (``tracegrad.render(trace, path, highlight_step=N, pass_index=P)``)
when it is available; otherwise writes a small DOT of its own (every node, executed ones filled, the
current one highlighted) and runs ``dot -Tsvg`` on it.

Example:
    >>> from tracegrad.tracing.model import Trace, NodeRecord, BackwardPass, Step
    >>> trace = Trace(nodes={0: NodeRecord(0, "SumBackward0")},
    ...               passes=[BackwardPass(0, steps=[Step(0, 0)])])
    >>> "fillcolor=yellow" in fallback_dot(trace, 0, 0)
    True
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tracegrad.tracing.model import Trace

# Beyond this the fallback draws only the nodes of the selected pass: dot on 50,000 nodes
# takes minutes, and a picture that large is not readable anyway.
_FALLBACK_NODE_LIMIT = 2000


def export_svg(trace: Trace, path: Path, pass_index: int, step_index: int) -> Path:
    """Write ``path`` (an .svg) and return it; raise OSError/RuntimeError when it cannot."""
    path = Path(path)
    render = _exporter_render()
    if render is not None:
        render(trace, path, highlight_step=step_index, pass_index=pass_index)
        return path
    if shutil.which("dot") is None:
        raise RuntimeError(
            "export: cannot write an SVG, Graphviz `dot` is not installed.\n"
            "Hint: sudo apt-get install graphviz")
    subprocess.run(["dot", "-Tsvg", "-o", str(path)],
                   input=fallback_dot(trace, pass_index, step_index), text=True,
                   check=True, capture_output=True, timeout=120)
    return path


def _exporter_render():
    try:
        import tracegrad
    except ImportError:
        return None
    render = getattr(tracegrad, "render", None)
    if render is None:
        return None
    import inspect

    try:
        parameters = inspect.signature(render).parameters
    except (TypeError, ValueError):
        return None
    return render if {"highlight_step", "pass_index"} <= set(parameters) else None


def fallback_dot(trace: Trace, pass_index: int, step_index: int) -> str:
    """A minimal DOT: nodes by name, executed steps green, the current step yellow."""
    steps = trace.passes[pass_index].steps if trace.passes else []
    order = {step.node: step.index for step in steps}
    current = steps[step_index].node if steps else None
    node_ids = sorted(trace.nodes)
    if len(node_ids) > _FALLBACK_NODE_LIMIT:
        node_ids = sorted(order)
    members = set(node_ids)
    lines = ["digraph backward {", "  node [shape=box, style=filled, fillcolor=white];"]
    for node_id in node_ids:
        node = trace.nodes[node_id]
        label = node.name
        if node_id in order:
            label += f"\\nstep {order[node_id]}"
        if node_id == current:
            fill = "yellow"
        elif node_id in order and order[node_id] < step_index:
            fill = "palegreen"
        else:
            fill = "white"
        lines.append(f'  n{node_id} [label="{label}", fillcolor={fill}];')
    for source, target, _ in trace.edges():
        if source in members and target in members:
            lines.append(f"  n{source} -> n{target};")
    lines.append("}")
    return "\n".join(lines)
