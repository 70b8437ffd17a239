"""The backward engine: iterative, with dependency counts and a ready queue.

Never recursive, so a graph 100,000 nodes deep runs. Among ready nodes the one created
last runs first (PyTorch's order on the CPU), and an AccumulateGrad runs as soon as it is
ready -- so the step order a trace shows is the order PyTorch would have used.
"""

from __future__ import annotations

import gc
import heapq
import itertools
import time
import warnings
from collections.abc import Sequence

from ..errors import AutogradError, ShapeError
from . import events
from .grad_mode import state
from .node import Node

_pass_counter = itertools.count()


class PassInfo:
    """What a listener learns about a backward pass when it starts."""

    __slots__ = ("create_graph", "index", "inputs", "kind", "retain_graph", "roots")

    def __init__(self, index, kind, roots, retain_graph, create_graph, inputs) -> None:
        self.index, self.kind, self.roots = index, kind, roots
        self.retain_graph, self.create_graph, self.inputs = retain_graph, create_graph, inputs


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves they depend on."""
    if grad_variables is not None:
        grad_tensors = _legacy_grad_variables(grad_tensors, grad_variables)
    tensors = _as_tuple(tensors)
    grad_tensors = _grads_tuple(grad_tensors, len(tensors))
    if retain_graph is None:
        retain_graph = create_graph
    input_tensors = _as_tuple(inputs) if inputs is not None else None
    if input_tensors is not None and not input_tensors:
        raise AutogradError("backward() got an empty 'inputs' sequence.")
    captured = run(tensors, grad_tensors, retain_graph, create_graph, input_tensors,
                   accumulate=True, kind="backward")
    del captured


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs``, without touching ``.grad``.

    >>> import tracegrad as torch
    >>> x = torch.tensor([2.0], requires_grad=True)
    >>> (g,) = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
    >>> g, torch.autograd.grad(g.sum(), x)[0]
    (tensor([12.], grad_fn=<MulBackward0>), tensor([12.]))
    """
    if is_grads_batched:
        raise NotImplementedError("is_grads_batched is not supported by tracegrad")
    if not only_inputs:
        _warn_only_inputs()
    outputs = _as_tuple(outputs)
    input_tensors = _as_tuple(inputs)
    if not input_tensors:
        raise AutogradError("grad requires at least one input tensor (inputs was empty).")
    for index, tensor in enumerate(input_tensors):
        if not tensor.requires_grad:
            raise AutogradError(
                f"One of the differentiated Tensors does not require grad (inputs[{index}]: "
                f"{tensor._describe()}). Hint: create it with requires_grad=True or call "
                ".requires_grad_().")
    grad_outputs = _grads_tuple(grad_outputs, len(outputs))
    if retain_graph is None:
        retain_graph = create_graph
    if allow_unused is None:
        allow_unused = materialize_grads
    results = run(outputs, grad_outputs, retain_graph, create_graph, input_tensors,
                  accumulate=False, kind="grad")
    final = []
    for index, (tensor, result) in enumerate(zip(input_tensors, results)):
        if result is None:
            if materialize_grads:
                from ..factories import zeros_like

                result = zeros_like(tensor)
            elif not allow_unused:
                raise AutogradError(
                    f"One of the differentiated Tensors appears to not have been used in the "
                    f"graph (inputs[{index}]: {tensor._describe()}). Set allow_unused=True if "
                    "this is the desired behavior.")
        final.append(result)
    return tuple(final)


def _legacy_grad_variables(grad_tensors, grad_variables):
    """backward()'s pre-0.4 name for grad_tensors, accepted with torch's warning."""
    warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.",
                  FutureWarning, stacklevel=3)
    if grad_tensors is not None:
        raise AutogradError("`grad_tensors` and `grad_variables` (deprecated) arguments both "
                            "passed to `backward()`. Please only use `grad_tensors`.")
    return grad_variables


def _warn_only_inputs() -> None:
    warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). "
                  "To accumulate gradient for other parts of the graph, please use "
                  "torch.autograd.backward.", FutureWarning, stacklevel=3)


def _as_tuple(value) -> tuple:
    from ..tensor import Tensor

    if isinstance(value, Tensor):
        return (value,)
    return tuple(value)


def _grads_tuple(grads, count: int) -> tuple:
    from ..tensor import Tensor

    if grads is None:
        return (None,) * count
    if isinstance(grads, Tensor):
        grads = (grads,)
    grads = tuple(grads)
    if len(grads) != count:
        raise AutogradError(
            f"grad_tensors has {len(grads)} entries but there are {count} outputs; pass one "
            "gradient (or None) per output.")
    return grads


def _root_gradient(index: int, tensor, grad):
    from ..factories import ones_like
    from ..tensor import Tensor

    if grad is None:
        if tensor.numel() != 1:
            raise AutogradError(
                f"grad can be implicitly created only for scalar outputs (output {index} is "
                f"{tensor._describe()}). Hint: pass gradient= with the same shape as the "
                "output, e.g. y.backward(gradient=torch.ones_like(y)), or reduce it first "
                "with .sum() or .mean().")
        return ones_like(tensor)
    if not isinstance(grad, Tensor):
        from ..factories import tensor as make_tensor

        grad = make_tensor(grad, dtype=tensor.dtype)
    if grad.shape != tensor.shape:
        raise ShapeError(
            f"Mismatch in shape: grad_output[{index}] has a shape of {grad.shape} and "
            f"output[{index}] has a shape of {tensor.shape}.")
    return grad


def run(outputs: Sequence, grad_outputs: Sequence, retain_graph: bool, create_graph: bool,
        inputs: Sequence | None, accumulate: bool, kind: str) -> list:
    """Run one backward pass; returns the gradients captured for ``inputs`` (if any)."""
    roots = []
    for index, (tensor, grad_value) in enumerate(zip(outputs, grad_outputs)):
        if not tensor.requires_grad:
            raise AutogradError(
                f"element {index} of tensors does not require grad and does not have a "
                f"grad_fn ({tensor._describe()}). Hint: did the computation run under "
                "no_grad(), or call .detach()? Inputs need requires_grad=True.")
        node, output_nr = tensor._edge()
        roots.append((node, output_nr, _root_gradient(index, tensor, grad_value)))

    captures: dict = {}  # (node, output_nr) -> list of input indices
    if inputs is not None:
        for index, tensor in enumerate(inputs):
            captures.setdefault(tensor._edge(), []).append(index)
    dependencies = _count_dependencies([node for node, _, _ in roots], captures, accumulate)

    info = PassInfo(next(_pass_counter), kind, tuple(outputs), retain_graph, create_graph,
                    tuple(inputs) if inputs is not None else None)
    listener = events.listener  # one per pass: a listener leaving mid-pass still hears its end
    if listener is not None:
        listener.on_backward_start(info)
    previous_mode = state.grad_enabled
    state.grad_enabled = create_graph
    # A pass makes and drops many gradient tensors, none in a reference cycle; a collector
    # scanning the (possibly huge) graph meanwhile would only cost time. Cycles that hooks
    # make are collected after the pass.
    collecting = gc.isenabled()
    if collecting:
        gc.disable()
    error = None
    try:
        results = _execute(roots, dependencies, captures, inputs, accumulate, retain_graph,
                           info.index, listener)
    except BaseException as exc:
        error = exc
        raise
    finally:
        if collecting:
            gc.enable()
        state.grad_enabled = previous_mode
        if listener is not None:
            listener.on_backward_end(info, error)
    return results


def _count_dependencies(root_nodes: list, captures: dict, accumulate: bool) -> dict:
    """How many edges lead into each node reachable from the roots (iterative DFS).

    With ``captures`` (autograd.grad, or backward(inputs=...)), only nodes from which a
    captured edge can be reached take part: the rest would compute unused gradients.
    """
    if not captures:
        return _count_all_dependencies(root_nodes)
    order = []
    stack = [node for node in root_nodes if node is not None]
    seen = set(stack)
    while stack:
        node = stack.pop()
        order.append(node)
        for next_node, _ in node.next_functions:
            if next_node is not None and next_node not in seen:
                seen.add(next_node)
                stack.append(next_node)
    needed = None
    if captures:
        capture_nodes = {node for node, _ in captures}
        needed = set()
        # Nodes in creation order: every input of a node was created before it.
        for node in sorted(order, key=_creation_order):
            if node in capture_nodes or any(
                    next_node in needed for next_node, _ in node.next_functions):
                needed.add(node)
    dependencies: dict = {}
    for node in order:
        if needed is not None and node not in needed:
            continue
        dependencies.setdefault(node, 0)
        for next_node, _ in node.next_functions:
            if next_node is not None and (needed is None or next_node in needed):
                dependencies[next_node] = dependencies.get(next_node, 0) + 1
    return dependencies


def _count_all_dependencies(root_nodes: list) -> dict:
    """The common case of _count_dependencies (every reachable node runs), in one pass:
    a node's count doubles as its "seen" mark."""
    dependencies: dict = {}
    stack = []
    for node in root_nodes:
        if node is not None and node not in dependencies:
            dependencies[node] = 0
            stack.append(node)
    while stack:
        node = stack.pop()
        for next_node, _ in node.next_functions:
            if next_node is not None:
                count = dependencies.get(next_node)
                if count is None:
                    dependencies[next_node] = 1
                    stack.append(next_node)
                else:
                    dependencies[next_node] = count + 1
    return dependencies


def _creation_order(node: Node) -> tuple:
    # Every input's node was created before its consumer, except AccumulateGrad nodes,
    # which are made lazily (when a leaf is first used) -- but they have no inputs.
    return (not node._is_accumulate, node._seq)


_ACCUMULATE_FIRST = -(1 << 62)


def _priority(node: Node) -> int:
    # heapq pops the smallest: AccumulateGrad first, then the most recently created node.
    return _ACCUMULATE_FIRST if node._is_accumulate else -node._seq


def _execute(roots, dependencies, captures, inputs, accumulate, retain_graph, pass_index,
             listener) -> list:
    """Run ready nodes until none is left. The loop body runs once per node of the graph,
    so the common case (no hooks, nobody listening, no anomaly mode) is kept inline."""
    buffers: dict = {}
    results = [None] * (len(inputs) if inputs is not None else 0)
    for node, output_nr, grad_value in roots:
        if node is None or node not in dependencies:
            _capture(captures, results, node, output_nr, grad_value)
            continue
        _add_to_buffer(buffers, node, output_nr, grad_value)
    ready = [(_priority(node), node._seq, node) for node in dependencies
             if dependencies[node] == 0]
    heapq.heapify(ready)
    heappop, heappush = heapq.heappop, heapq.heappush
    slow = listener is not None or state.anomaly
    while ready:
        node = heappop(ready)[2]
        grads = buffers.pop(node, None)
        if grads is None:
            grads = [None] * max(1, len(node._output_meta))
        if captures:
            for output_nr, grad_value in enumerate(grads):
                if (node, output_nr) in captures:
                    _capture(captures, results, node, output_nr, grad_value)
            if not accumulate and node._is_accumulate:
                continue
        has_grad = False
        for grad_value in grads:
            if grad_value is not None:
                has_grad = True
                break
        if not has_grad:
            next_grads = (None,) * len(node.next_functions)
        elif slow or node._hooked:
            next_grads = _run_node(node, grads, pass_index, listener, state.anomaly)
        else:
            try:
                next_grads = node._backward(grads)
            except Exception as error:
                _annotate(error, node)
                raise
        if not retain_graph and node._saved:
            node._release(pass_index)
        for (next_node, input_nr), grad_value in zip(node.next_functions, next_grads):
            if next_node is not None and next_node in dependencies:
                if grad_value is not None:
                    grads_in = buffers.get(next_node)
                    if grads_in is None:
                        if input_nr == 0 and len(next_node._output_meta) < 2:
                            buffers[next_node] = [grad_value]  # the common one-output case
                        else:
                            grads_in = buffers[next_node] = [None] * max(
                                1, len(next_node._output_meta))
                            grads_in[input_nr] = grad_value
                    else:
                        current = grads_in[input_nr]
                        grads_in[input_nr] = grad_value if current is None else current + \
                            grad_value
                remaining = dependencies[next_node] - 1
                dependencies[next_node] = remaining
                if remaining == 0:
                    heappush(ready, (_ACCUMULATE_FIRST if next_node._is_accumulate
                                     else -next_node._seq, next_node._seq, next_node))
    return results


def _capture(captures, results, node, output_nr, grad_value) -> None:
    for index in captures.get((node, output_nr), ()):
        if results[index] is None:
            results[index] = grad_value
        elif grad_value is not None:
            results[index] = results[index] + grad_value


def _add_to_buffer(buffers: dict, node: Node, output_nr: int, grad_value) -> None:
    grads = buffers.get(node)
    if grads is None:
        grads = buffers[node] = [None] * max(1, len(node._output_meta))
    current = grads[output_nr]
    grads[output_nr] = grad_value if current is None else current + grad_value


def _run_node(node: Node, grads: list, pass_index: int, listener, anomaly: bool):
    if node._tensor_hooks or node._retained or node._pre_hooks:
        grads = _run_pre_hooks(node, grads, listener)
    if listener is not None:
        listener.on_node_start(node, tuple(grads))
        started = time.perf_counter_ns()
    try:
        next_grads = node._backward(grads)
    except Exception as error:
        if listener is not None:
            listener.on_error(error, node)
        _annotate(error, node)
        raise
    if node._post_hooks:
        next_grads = _run_post_hooks(node, next_grads, grads, listener)
    if listener is not None:
        listener.on_node_end(node, tuple(next_grads), time.perf_counter_ns() - started)
        if node._is_accumulate:
            listener.on_accumulate(node.variable, grads[0])
    if anomaly:
        _check_nan(node, next_grads)
    return next_grads


def _annotate(error: Exception, node: Node) -> None:
    if node._site is not None and hasattr(error, "add_note"):
        note = f"(tracegrad) while running {node.name()}, created at {node._site}"
        if note not in getattr(error, "__notes__", ()):
            error.add_note(note)


def _run_pre_hooks(node: Node, grads: list, listener) -> list:
    grads = list(grads)
    if node._tensor_hooks:
        for output_nr, hooks in node._tensor_hooks.items():
            for hook in tuple(hooks):
                if grads[output_nr] is None:
                    continue
                result = hook(grads[output_nr])
                if listener is not None:
                    listener.on_hook(node, "tensor", hook, result is not None)
                if result is not None:
                    grads[output_nr] = result
    if node._pre_hooks:
        for hook in tuple(node._pre_hooks):
            result = hook(tuple(grads))
            if listener is not None:
                listener.on_hook(node, "pre", hook, result is not None)
            if result is not None:
                grads = list(result)
    if node._retained:
        for output_nr, tensor_ref in node._retained.items():
            tensor = tensor_ref()
            if tensor is not None and grads[output_nr] is not None:
                _retain(tensor, grads[output_nr])
                if listener is not None:
                    listener.on_hook(node, "retain_grad", _retain, False)
    return grads


def _retain(tensor, grad_value) -> None:
    if tensor.grad is None:
        tensor.grad = grad_value if state.grad_enabled else grad_value._detached_copy()
    else:
        tensor.grad = tensor.grad + grad_value


def _run_post_hooks(node: Node, next_grads, grads, listener):
    for hook in tuple(node._post_hooks):
        result = hook(tuple(next_grads), tuple(grads))
        if listener is not None:
            listener.on_hook(node, "post", hook, result is not None)
        if result is not None:
            next_grads = tuple(result)
    return next_grads


def _check_nan(node: Node, next_grads) -> None:
    for index, grad_value in enumerate(next_grads):
        if grad_value is None:
            continue
        xp = grad_value._xp
        if bool(xp.isnan(grad_value._array).any()):
            where = f" It was created at {node._site}" if node._site is not None else ""
            if node._site is not None and node._site.code:
                where += f": {node._site.code}"
            raise AutogradError(
                f"Function '{node.name()}' returned nan values in its {index}th output."
                f"{where}. Hint: look for a log/sqrt/division of zero or a negative value "
                "in that forward line.")
