"""The backward engine: iterative, with dependency counts and a ready queue.

Never recursive, so a graph 100,000 nodes deep runs. Among ready nodes the one created
last runs first (PyTorch's order on the CPU), and an AccumulateGrad runs as soon as it is
ready -- so the step order a trace shows is the order PyTorch would have used.

Backward runs on the calling thread and changes grad mode only there (grad mode is per
thread), so several threads can each run forward and backward at once. As in PyTorch:

- hooks run in this order for each node: its output tensors' hooks, retain_grad, the
  node's pre-hooks, the node, its post-hooks (hooks.py-style checks on what they return);
- ``autograd.grad`` and ``backward(inputs=...)`` run only the nodes that lead to the
  inputs. ``grad`` captures an input's gradient after that input's tensor hooks (the
  input's own node does not run unless another input needs it); ``backward(inputs=...)``
  makes non-leaf inputs retain their gradient;
- in anomaly mode an error in a node's backward is preceded by warnings carrying the
  traceback of the forward call that made the node.

NumPy's floating-point warnings (``x / 0``, overflow) are off for the pass, as PyTorch
prints none (autograd/quiet.py); user code the pass runs -- hooks, custom Functions'
backwards, a leaf's post-accumulate hooks -- gets the caller's own setting back.
"""

from __future__ import annotations

import gc
import heapq
import itertools
import time
import warnings
from collections.abc import Sequence

import numpy as np

from .. import backends
from ..errors import AutogradError, ShapeError
from . import anomaly, events, quiet
from . import node as _node_module
from . import views as _views
from .function import BackwardCFunction, OpNode, _fit_array
from .grad_mode import state
from .graph import GradientEdge
from .node import (
    _NOT_SAVED,
    _ONE_EDGE,
    _TUPLE_EDGES,
    AccumulateGrad,
    Node,
    _hook_name,
    restore_saved_tensors_hooks,
    running,
    saved_hooks,
    snapshot_saved_tensors_hooks,
)
from .node import SavedTensor as _SavedTensor
from .node import release_kept_inputs as _release_kept_inputs

_pass_counter = itertools.count()
_perf_counter_ns = time.perf_counter_ns
_CPU = backends.CPU
_np_empty = np.empty
_ndarray = np.ndarray
_create_graph_warned = False  # PyTorch gives the create_graph warning once per process


class PassInfo:
    """What a listener learns about a backward pass when it starts."""

    __slots__ = ("create_graph", "index", "inputs", "kind", "retain_graph", "roots")

    def __init__(self, index, kind, roots, retain_graph, create_graph, inputs) -> None:
        self.index, self.kind, self.roots = index, kind, roots
        self.retain_graph, self.create_graph, self.inputs = retain_graph, create_graph, inputs


class GraphTask:
    """One running backward pass, as ``node.running.task`` shows it to hooks in its thread
    (``register_multi_grad_hook`` asks which nodes will run).

    ``dependencies`` holds every node that takes part; ``needed`` the ones that execute
    (None: all of them; otherwise a node outside it only has its gradient captured).
    ``user_errors`` is NumPy's error state of the caller, for the user code the pass runs.
    """

    __slots__ = ("dependencies", "id", "needed", "user_errors")

    def __init__(self, task_id: int, dependencies: dict, needed) -> None:
        self.id, self.dependencies, self.needed = task_id, dependencies, needed
        self.user_errors = quiet.current()

    def will_execute(self, node: Node) -> bool:
        """Whether ``node`` takes part in this pass (runs, or has its gradient captured)."""
        return node in self.dependencies


# -- the public entry points ---------------------------------------------------------------
def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves they depend on.

    With ``inputs``, only those tensors (leaves, non-leaves or GradientEdges) get gradients;
    a non-leaf input retains its gradient in ``.grad``, as in PyTorch.

    >>> import tracegrad as torch
    >>> x = torch.tensor([1.0, 2.0], requires_grad=True)
    >>> h = x * 3
    >>> torch.autograd.backward((h * h).sum(), inputs=[h])
    >>> h.grad, x.grad
    (tensor([ 6., 12.]), None)
    """
    if grad_variables is not None:
        grad_tensors = _legacy_grad_variables(grad_tensors, grad_variables)
    if grad_tensors is None and inputs is None and tensors.__class__ is _node_module.Tensor:
        # loss.backward() -- once per training step (bench/bench_two_layer.py): a tensor
        # that requires grad and holds one element on the CPU gets its root gradient
        # here, what _make_grads would make of it, without its general checks.
        array = tensors._array
        if tensors._requires_grad and array.size == 1 and array.__class__ is _ndarray:
            ones = _np_empty(array.shape, array.dtype)
            ones.fill(1)
            run((tensors,), (_node_module.Tensor._wrap(ones, False),),
                create_graph if retain_graph is None else retain_graph, create_graph, None,
                accumulate=True, kind="backward")
            return
    input_tuple = _inputs_tuple(inputs, "backward") if inputs is not None else None
    tensors = _as_tuple(tensors)
    if grad_tensors is None and len(tensors) == 1:  # loss.backward(): no tuple to check
        grad_tensors = _make_grads(tensors, _NO_GRAD)
    else:
        grad_tensors = _make_grads(tensors, _grads_tuple(grad_tensors, len(tensors)))
    if retain_graph is None:
        retain_graph = create_graph
    if input_tuple is not None:
        for tensor in input_tuple:
            if not isinstance(tensor, GradientEdge):
                # PyTorch's run_backward: the inputs' gradients land in .grad, non-leaves
                # included (a no-op for leaves).
                tensor.retain_grad()
    run(tensors, grad_tensors, retain_graph, create_graph, input_tuple, accumulate=True,
        kind="backward")


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False,
         materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs``, without touching ``.grad``.

    ``inputs`` may hold tensors and GradientEdges; a dict of tensors gives a dict back.

    >>> import tracegrad as torch
    >>> x = torch.tensor([2.0], requires_grad=True)
    >>> (g,) = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
    >>> g, torch.autograd.grad(g.sum(), x)[0]
    (tensor([12.], grad_fn=<MulBackward0>), tensor([12.]))
    """
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _as_tuple(outputs)
    input_tuple = _inputs_tuple(inputs, "grad")
    if is_grads_batched:
        raise NotImplementedError(
            "tracegrad does not implement autograd.grad(is_grads_batched=True) (it needs "
            "vmap). Hint: call autograd.grad once per row of the batched grad_outputs.")
    if not only_inputs:
        _warn_only_inputs()
    for index, tensor in enumerate(input_tuple):
        if not isinstance(tensor, GradientEdge) and not tensor.requires_grad:
            raise AutogradError(
                f"One of the differentiated Tensors does not require grad (inputs[{index}]: "
                f"{tensor._describe()}). Hint: create it with requires_grad=True or call "
                ".requires_grad_().")
    grad_outputs = _make_grads(outputs, _grads_tuple(grad_outputs, len(outputs)))
    if retain_graph is None:
        retain_graph = create_graph
    results = run(outputs, grad_outputs, retain_graph, create_graph, input_tuple,
                  accumulate=False, kind="grad")
    final = []
    for index, (tensor, result) in enumerate(zip(input_tuple, results)):
        if result is None and not allow_unused:
            described = "" if isinstance(tensor, GradientEdge) else \
                f" (inputs[{index}]: {tensor._describe()})"
            raise AutogradError(
                f"The differentiated Tensor at index {index} appears to not have been used "
                f"in the graph{described}. Set allow_unused=True if this is the desired "
                "behavior.")
        final.append(result)
    if materialize_grads:
        if any(result is None and isinstance(tensor, GradientEdge)
               for result, tensor in zip(final, input_tuple)):
            raise AutogradError(
                "materialize_grads cannot be used when the given input is a GradientEdge")
        from ..factories import zeros_like

        final = [result if result is not None else
                 zeros_like(tensor).requires_grad_(bool(create_graph))
                 for result, tensor in zip(final, input_tuple)]
    if type(inputs) is dict:
        return dict(zip(inputs.keys(), final))
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


def _is_tensor(value) -> bool:
    # node.py holds the Tensor class once tensor.py has bound it: an attribute read, not
    # an import on every backward() call.
    return isinstance(value, _node_module.Tensor)


def _as_tuple(value) -> tuple:
    if _is_tensor(value) or isinstance(value, GradientEdge):
        return (value,)
    return tuple(value)


def _inputs_tuple(inputs, caller: str) -> tuple:
    if _is_tensor(inputs) or isinstance(inputs, GradientEdge):
        result = (inputs,)
    elif type(inputs) is dict:
        result = tuple(inputs.values())
    elif isinstance(inputs, dict) or hasattr(inputs, "keys"):
        raise TypeError(
            f"`inputs` argument to `{caller}()` must be a dict, not {type(inputs).__name__}. "
            "Other Mapping types are not supported.")
    else:
        result = tuple(inputs)
    if not result:
        raise AutogradError(f"`inputs` argument to `{caller}()` cannot be empty.")
    return result


_NO_GRAD = (None,)  # backward()'s one missing gradient of one output


def _grads_tuple(grads, count: int) -> tuple:
    if grads is None:
        return (None,) * count
    if _is_tensor(grads):
        grads = (grads,)
    grads = tuple(grads)
    if len(grads) != count:
        raise AutogradError(
            f"got {len(grads)} gradients for {count} outputs (grad_tensors/grad_outputs "
            "must have one entry, a Tensor or None, per output).")
    return grads


def _output_meta(output) -> tuple:
    """(shape, numpy dtype, device, requires_grad) of an output tensor or GradientEdge."""
    if isinstance(output, GradientEdge):
        shape, numpy_dtype, device = output.node._output_meta[output.output_nr]
        return tuple(shape), numpy_dtype, device, True
    array = output._array
    return array.shape, array.dtype, backends.device_of(array), output.requires_grad


def _make_grads(outputs: tuple, grads: tuple) -> tuple:
    """The root gradients, checked as PyTorch's ``_make_grads``: a given one must match its
    output's shape; a missing one is ones for a scalar output."""
    made = []
    for index, (output, grad_value) in enumerate(zip(outputs, grads)):
        shape, numpy_dtype, device, requires_grad = _output_meta(output)
        if _is_tensor(grad_value):
            if tuple(grad_value.shape) != shape:
                out_shape = output.shape if _is_tensor(output) else shape
                raise ShapeError(
                    f"Mismatch in shape: grad_output[{index}] has a shape of "
                    f"{grad_value.shape!r} and output[{index}] has a shape of {out_shape!r}.")
            made.append(grad_value)
        elif grad_value is None:
            if not requires_grad:
                made.append(None)
                continue
            numel = 1
            for size in shape:
                numel *= size
            if numel != 1:
                what = f" (output {index} is {output._describe()})" if _is_tensor(output) \
                    else f" (output {index} has shape {list(shape)})"
                raise AutogradError(
                    f"grad can be implicitly created only for scalar outputs{what}. Hint: "
                    "pass gradient= with the same shape as the output, e.g. "
                    "y.backward(gradient=torch.ones_like(y)), or reduce it first with "
                    ".sum() or .mean().")
            # The root gradient: a ones array of the output's shape and dtype, made
            # directly (not through ones_like's op and checks; on the CPU not through
            # np.ones either, a Python function twice the cost of its two steps).
            if device is _CPU:
                ones = _np_empty(shape, numpy_dtype)
                ones.fill(1)
            else:
                ones = backends.module_for(device).ones(shape, dtype=numpy_dtype)
            made.append(_node_module.Tensor._wrap(ones, False))
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got "
                            f"{type(grad_value).__name__}")
    return tuple(made)


def _edge_of(value) -> tuple:
    if isinstance(value, GradientEdge):
        return value.node, value.output_nr
    return value._edge()


# -- one backward pass ---------------------------------------------------------------------
def run(outputs: Sequence, grad_outputs: Sequence, retain_graph: bool, create_graph: bool,
        inputs: Sequence | None, accumulate: bool, kind: str) -> list:
    """Run one backward pass; returns the gradients captured for ``inputs`` (grad)."""
    global _create_graph_warned
    roots = []
    for index, (output, grad_value) in enumerate(zip(outputs, grad_outputs)):
        if isinstance(output, GradientEdge):
            roots.append((output.node, output.output_nr, grad_value))
            continue
        if not output.requires_grad:
            raise AutogradError(
                f"element {index} of tensors does not require grad and does not have a "
                f"grad_fn ({output._describe()}). Hint: did the computation run under "
                "no_grad(), or call .detach()? Inputs need requires_grad=True.")
        node, output_nr = output._edge()
        roots.append((node, output_nr, grad_value))

    captures: dict = {}  # (node, output_nr) -> input indices, for grad()
    targets = None  # the nodes backward(inputs=...) / grad() must reach
    if inputs is not None:
        targets = set()
        for index, tensor in enumerate(inputs):
            edge = _edge_of(tensor)
            targets.add(edge[0])
            if not accumulate:
                captures.setdefault(edge, []).append(index)
    if targets is None:  # every reachable node runs
        dependencies, needed = _count_all_dependencies(roots), None
    else:
        dependencies, needed = _plan(roots, targets, accumulate)

    if accumulate and create_graph and not _create_graph_warned:
        _create_graph_warned = True
        warnings.warn(
            "Using backward() with create_graph=True will create a reference cycle between "
            "the parameter and its gradient which can cause a memory leak. We recommend "
            "using autograd.grad when creating the graph to avoid this. If you have to use "
            "this function, make sure to reset the .grad fields of your parameters to None "
            "after use to break the cycle and avoid the leak.", UserWarning, stacklevel=3)

    pass_index = next(_pass_counter)
    listener = events.listener  # one per pass: a listener leaving mid-pass still hears its end
    told = listener is not None and events.steps  # (and what it hears: events._publish)
    if listener is not None:  # (the pass's description is made for a listener only)
        info = PassInfo(pass_index, kind, tuple(outputs), retain_graph, create_graph,
                        tuple(inputs) if inputs is not None else None)
        listener.on_backward_start(info)
    # Grad mode is per thread: only this thread's backward runs with create_graph's mode.
    previous_mode = state.grad_enabled
    state.grad_enabled = create_graph and not state.inference  # (inference mode: no graph)
    previous_task, previous_node = running.task, running.node
    running.task = GraphTask(pass_index, dependencies, needed)
    hooks_before = snapshot_saved_tensors_hooks()
    # A pass makes and drops many gradient tensors, none in a reference cycle; a collector
    # scanning the (possibly huge) graph meanwhile would only cost time. Cycles that hooks
    # make are collected after the pass. (gc.disable is process-wide: with threads, the
    # last pass to finish turns it back on.)
    collecting = gc.isenabled()
    if collecting:
        gc.disable()
    error = None
    silenced = quiet.silence()  # once per pass: no warning torch would not print
    try:
        # Without create_graph nothing is recorded, so gradients flow as backend arrays:
        # each built-in backward is then a few NumPy/CuPy calls (OpNode._backward_arrays).
        results = _execute(roots, dependencies, needed, captures, inputs, retain_graph,
                           pass_index, listener, told, not create_graph)
    except BaseException as exc:
        error = exc
        raise
    finally:
        quiet.restore(silenced)
        if collecting:
            gc.enable()
        state.grad_enabled = previous_mode
        running.task, running.node = previous_task, previous_node
        if hooks_before[0] or saved_hooks.stack or \
                saved_hooks.disabled_message is not hooks_before[1]:  # (else nothing to undo)
            restore_saved_tensors_hooks(hooks_before)
        if listener is not None:
            listener.on_backward_end(info, error)
        # The error's traceback holds this frame: drop the frame's reference back to it, so
        # a failed pass's graph is freed at once, not at the next garbage collection.
        error = None
    return results


def _mask_needs(node, next_nodes, dependencies):
    """In a pass with targets, a built-in formula computes only the gradients that lead
    somewhere the pass goes (torch's should_compute_output): ``needs_input_grad`` masked by
    the edges that take part, for the formula's call. Returns what to restore, or None.
    (Under create_graph the skipped formulas would otherwise be recorded too.)"""
    needs = node.needs_input_grad
    if node._arg_slots is not None or len(needs) != len(next_nodes):
        return None
    masked = tuple(need and next_node in dependencies
                   for need, next_node in zip(needs, next_nodes))
    if masked == needs:
        return None
    node.needs_input_grad = masked
    return needs


def _plan(roots: list, targets: set, accumulate: bool) -> tuple:
    """(dependencies, needed) for a pass with targets (backward(inputs=...), grad()): how
    many edges lead into each node that takes part, and the nodes that execute.

    A node takes part when it is a target or leads to one; it executes when it leads to
    a node that takes part, or -- in backward(inputs=...) -- is a target itself. A
    target that grad() needs only for its gradient is captured without running. (Without
    targets every reachable node runs: ``_count_all_dependencies``.)
    """
    order = []
    stack = [node for node, _, _ in roots if node is not None]
    seen = set(stack)
    while stack:
        node = stack.pop()
        order.append(node)
        for next_node in node._next_nodes:
            if next_node is not None and next_node not in seen:
                seen.add(next_node)
                stack.append(next_node)
    participates, needed = set(), set()
    # Nodes in creation order: every input of a node was created before it.
    for node in sorted(order, key=_creation_order):
        for next_node in node._next_nodes:
            if next_node in participates:
                participates.add(node)
                needed.add(node)
                break
        else:
            if node in targets:
                participates.add(node)
                if accumulate:
                    needed.add(node)
    dependencies: dict = {}
    for node in order:
        if node not in participates:
            continue
        dependencies.setdefault(node, 0)
        for next_node in node._next_nodes:
            if next_node in participates:
                dependencies[next_node] = dependencies.get(next_node, 0) + 1
    return dependencies, needed


def _count_all_dependencies(roots: list) -> dict:
    """How many edges lead into each node reachable from the roots ((node, output_nr,
    gradient) each; iterative DFS), in one pass: a node's count doubles as its "seen" mark."""
    dependencies: dict = {}
    stack = []
    for node, _, _ in roots:
        if node is not None and node not in dependencies:
            dependencies[node] = 0
            stack.append(node)
    pop, push, get = stack.pop, stack.append, dependencies.get  # (once per node or edge)
    while stack:
        node = pop()
        second = node._next1  # (node._next_nodes, without its descriptor's call)
        if second is _ONE_EDGE:
            next_nodes = (node._next0,)
        elif second is _TUPLE_EDGES:
            next_nodes = node._next_nodes
        else:
            next_nodes = (node._next0, second)
        for next_node in next_nodes:
            if next_node is not None:
                count = get(next_node)
                if count is None:
                    dependencies[next_node] = 1
                    push(next_node)
                else:
                    dependencies[next_node] = count + 1
    return dependencies


def _creation_order(node: Node) -> tuple:
    # Every input's node was created before its consumer, except AccumulateGrad nodes,
    # which are made lazily (when a leaf is first used) -- but they have no inputs.
    return (not node._is_accumulate, node._seq)


_ACCUMULATE_FIRST = -(1 << 62)
# What _execute zips with a node's results when they need no fitting: None for every edge.
_UNFITTED = itertools.repeat(None)


def _priority(node: Node) -> int:
    # heapq pops the smallest: AccumulateGrad first (the oldest of them first), then the
    # most recently created node. Keys are unique (from _seq), so nodes are never compared
    # and the heap holds (key, node) pairs. _execute writes this inline where it pushes.
    return _ACCUMULATE_FIRST + node._seq if node._is_accumulate else -node._seq


def _execute(roots, dependencies, needed, captures, inputs, retain_graph, pass_index,
             listener, told: bool, raw: bool) -> list:
    """Run ready nodes until none is left. The loop body runs once per node of the graph,
    so the common case (no hooks, no anomaly mode, nobody told of the steps) is kept
    inline: it is what bench/bench_engine.py (a) and (b) time per backward node.

    ``told``: the listener hears the steps (``events.steps``). A built-in op's node in a
    raw pass is then still run here, the listener told in arrays around its formula
    (bench/bench_trace.py (b)); any other node with a listener told goes through
    ``_run_node``. A listener that hears no step costs a node nothing but its ``on_error``.

    ``raw``: gradients are backend arrays between nodes (no graph is built of this pass);
    a node whose backward takes Tensors gets them wrapped (``_run_wrapped``), and hooks
    and the listener always see Tensors (``_run_node``). Otherwise they are Tensors.

    A node has a gradient buffer only once some gradient for it is not None, so "no
    buffer" is "nothing to run": such a node only passes its dependencies on.
    """
    buffers: dict = {}
    results = [None] * (len(inputs) if inputs is not None else 0)
    for node, output_nr, grad_value in roots:
        if node is not None and grad_value is not None and node in dependencies:
            if raw:
                grad_value = grad_value._array
            _add_to_buffer(buffers, node, output_nr, grad_value)
    # A node that became ready while no other was (a chain: nearly every node) runs next
    # without a trip through the heap; a second ready node sends both to the heap, which
    # orders them (_priority).
    pending = None
    ready = []
    if needed is None:
        # Every node was reached from a root through an edge, which it counts: only a root
        # can have none, so the ready nodes are found among the roots, not by a walk over
        # the whole graph. (The heap orders them: keys are unique.)
        if len(roots) == 1:  # (loss.backward(): its node, if it takes part, runs first)
            if dependencies.get(roots[0][0]) == 0:
                pending = roots[0][0]
        else:
            for node, _, _ in roots:
                if dependencies.get(node) == 0 and all(other is not node
                                                       for _, other in ready):
                    ready.append((_priority(node), node))
            heapq.heapify(ready)
    else:
        ready = [(_priority(node), node) for node in dependencies if dependencies[node] == 0]
        heapq.heapify(ready)
    heappop, heappush = heapq.heappop, heapq.heappush
    buffers_pop, buffers_get = buffers.pop, buffers.get
    anomaly_on = state.anomaly  # read once per pass, not per node
    if told:  # the listener's step events, looked up once per pass (see events.Listener)
        start, end = listener.on_node_start_arrays, listener.on_node_end_arrays
    while True:
        if pending is not None:
            node, pending = pending, None
        elif ready:
            node = heappop(ready)[1]
        else:
            break
        grads = buffers_pop(node, None)
        metas = _UNFITTED
        masked_from = None  # (see _mask_needs)
        # node._next_nodes, read once, without its descriptor's call (node._EdgeNodes).
        second = node._next1
        if second is _ONE_EDGE:
            next_nodes = (node._next0,)
        elif second is _TUPLE_EDGES:
            next_nodes = node._next_nodes
        else:
            next_nodes = (node._next0, second)
        if needed is not None:
            if grads is None:
                grads = [None] * max(1, len(node._output_meta))
            if node not in needed:
                # grad() wants this node's gradient, not its backward: its tensor hooks
                # run (as in PyTorch), then the gradient is captured.
                if raw:
                    grads = _wrapped(grads)
                if node._tensor_hooks or node._retained:
                    grads = _call_tensor_pre_hooks(node, grads, listener)
                _capture(captures, results, node, grads)
                continue
            if captures:
                _capture(captures, results, node, _wrapped(grads) if raw else grads)
            if not any(grad_value is not None for grad_value in grads):
                grads = None  # nothing to run (the hooked path below remakes the Nones)
            elif node.__class__ is not AccumulateGrad and isinstance(node, OpNode):
                masked_from = _mask_needs(node, next_nodes, dependencies)
        if anomaly_on or node._hooked or told and (
                grads is None or not raw or not node._takes_arrays or node._is_accumulate):
            if grads is None:
                grads = [None] * max(1, len(node._output_meta))
            next_grads = _run_node(node, grads, listener, anomaly_on, raw)
        elif grads is None:
            next_grads = None  # no gradient reached it: nothing runs, nothing flows on
        else:
            try:
                if told:  # (a built-in op in a raw pass: _run_told's steps, inline)
                    start(node, tuple(grads))  # (a copy: the formula fills a multi-output
                    started = _perf_counter_ns()  # node's missing gradients)
                    next_grads = node._backward_arrays(grads)  # (fitted: as the listener
                    end(node, tuple(next_grads), _perf_counter_ns() - started)  # sees them)
                elif raw and node._takes_arrays and not node._is_accumulate:
                    # A built-in op on arrays. One output (nearly all): its formula is
                    # called here, with no call in between (OpNode._edge_arrays is the
                    # same, for any number of outputs). The results are fitted to their
                    # edges -- summed to the input's shape, cast to its dtype -- below, as
                    # they are handed on: the one place that undoes broadcasting, as
                    # torch's validate_outputs.
                    if len(grads) == 1:
                        node._on_arrays = True
                        next_grads = node._formula(node, grads[0])
                        node._on_arrays = False
                        if next_grads.__class__ is not tuple:
                            next_grads = (next_grads,)
                        if node._arg_slots is not None or \
                                len(next_grads) != len(next_nodes):
                            next_grads = node._edge_results(next_grads)
                    else:
                        next_grads = node._edge_arrays(grads)
                    metas = node._input_meta
                elif raw and node._is_accumulate and \
                        not node.variable._post_accumulate_grad_hooks:
                    node._backward_arrays(grads)  # (_run_backward's case, inline)
                    # A leaf's AccumulateGrad saves nothing and has no edges: nothing to free
                    # or hand on (two of the eight nodes of bench/bench_two_layer.py's pass).
                    grads = None
                    continue
                elif raw and isinstance(node, BackwardCFunction) and \
                        not isinstance(node, OpNode):
                    # A custom Function: user code, under the caller's NumPy error state.
                    token = quiet.as_user(running.task.user_errors)
                    try:
                        next_grads = node._backward_raw(grads)
                    finally:
                        quiet.restore(token)
                else:
                    next_grads = _run_backward(node, grads, raw)
            except Exception as error:
                if getattr(node, "_on_arrays", False):  # a formula that raised left it set
                    node._on_arrays = False
                if listener is not None:
                    listener.on_error(error, node)
                    if state.anomaly:  # (turned on by a hook during this pass)
                        anomaly.warn_forward_traceback(node)
                _annotate(error, node)
                raise
            finally:
                if masked_from is not None:
                    node.needs_input_grad, masked_from = masked_from, None
        if masked_from is not None:  # (the hooked path's run, outside the try above)
            node.needs_input_grad, masked_from = masked_from, None
        grads = None
        if not retain_graph:
            first = node._saved0  # (node._saved without SavedPair's call: see there)
            saved_values = node._saved if first is _NOT_SAVED else (first, node._saved1)
            if saved_values:  # freed (SavedTensor.release, inline: once per node)
                for saved in saved_values:
                    if saved.__class__ is _SavedTensor:
                        saved._array = saved.tensor = saved.packed = None
                    elif saved.__class__ is _node_module.Tensor:  # (see node.SavedPair)
                        _release_kept_inputs(node)
                node._freed_by = pass_index
        if next_grads is None:
            for next_node in next_nodes:
                remaining = dependencies.get(next_node)
                if remaining is not None:
                    dependencies[next_node] = remaining - 1
                    if remaining == 1:
                        if pending is None and not ready:
                            pending = next_node
                            continue
                        if pending is not None:
                            heappush(ready, (_priority(pending), pending))
                            pending = None
                        heappush(ready, (_priority(next_node), next_node))
            continue
        for next_node, input_nr, grad_value, meta in zip(next_nodes, node._next_nrs,
                                                         next_grads, metas):
            remaining = dependencies.get(next_node)  # None: no node, or one not taking part
            if remaining is not None:
                if grad_value is not None:
                    # (meta is (shape, dtype): one tuple comparison, whose dtype part is an
                    # identity check when the dtypes are the same object)
                    if meta is not None and (grad_value.__class__ is not _ndarray or
                                             (grad_value.shape, grad_value.dtype) != meta):
                        grad_value = _fit_array(grad_value, meta)
                    grads_in = buffers_get(next_node)
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
                # (kept at 0, not deleted: GraphTask.will_execute reads the keys)
                dependencies[next_node] = remaining - 1
                if remaining == 1:
                    if pending is None and not ready:
                        pending = next_node
                    else:
                        if pending is not None:
                            heappush(ready, (_priority(pending), pending))
                            pending = None
                        heappush(ready, (-next_node._seq if not next_node._is_accumulate
                                         else _ACCUMULATE_FIRST + next_node._seq, next_node))
        # Hold no gradient past its hand-off: an AccumulateGrad keeps (rather than copies)
        # a gradient that nothing else references, as PyTorch does.
        next_grads = grad_value = None
    return results


def _wrapped(grads) -> list:
    """Backend arrays (or None) as Tensors, for what must see Tensors in a raw pass."""
    wrap = _node_module.Tensor._wrap
    return [None if grad_value is None else wrap(grad_value, False) for grad_value in grads]


def _unwrapped(grads) -> list:
    return [None if grad_value is None else grad_value._array for grad_value in grads]


# The nodes whose backward is tracegrad's own code (an AccumulateGrad's post-accumulate
# hooks aside): it runs with NumPy's warnings off. Anything else -- a custom Function, a
# module's backward hook -- is user code and gets the caller's NumPy error state back.
_BUILT_IN_NODES = (OpNode, AccumulateGrad, _views.CopySlices)


def _runs_user_code(node: Node) -> bool:
    if node._is_accumulate:
        return bool(node.variable._post_accumulate_grad_hooks)
    return not isinstance(node, _BUILT_IN_NODES)


def _as_user(function, *args):
    """``function(*args)`` -- user code inside a pass -- under the caller's own NumPy error
    state (the pass silences NumPy's warnings for its own formulas only)."""
    token = quiet.as_user(running.task.user_errors)
    try:
        return function(*args)
    finally:
        quiet.restore(token)


def _run_backward(node: Node, grads: list, raw: bool):
    """A node's backward off the fast path: an AccumulateGrad, a node whose backward takes
    Tensors (wrapped for it in a raw pass), and user code (``_as_user``)."""
    if not raw:
        call = node._backward
    elif node._takes_arrays:
        call = node._backward_arrays
    else:
        return _as_user(_run_wrapped, node, grads) if _runs_user_code(node) else \
            _run_wrapped(node, grads)
    return _as_user(call, grads) if _runs_user_code(node) else call(grads)


def _run_wrapped(node: Node, grads: list):
    """In a raw pass, a node whose backward takes Tensors (a custom Function, an op whose
    backward is not written for arrays, CopySlices): Tensors in, arrays out."""
    return _unwrapped(node._backward(_wrapped(grads)))


def _capture(captures, results, node, grads) -> None:
    for output_nr, grad_value in enumerate(grads):
        for index in captures.get((node, output_nr), ()):
            results[index] = grad_value


def _add_to_buffer(buffers: dict, node: Node, output_nr: int, grad_value) -> None:
    grads = buffers.get(node)
    if grads is None:
        grads = buffers[node] = [None] * max(1, len(node._output_meta))
    current = grads[output_nr]
    if grad_value is not None:
        grads[output_nr] = grad_value if current is None else current + grad_value


def _run_node(node: Node, grads: list, listener, anomaly_on: bool, raw: bool):
    """One node with everything around it: hooks, the listener, anomaly mode. Hooks and
    the listener see Tensors; in a raw pass the node itself still runs on arrays."""
    if raw and not anomaly_on and not node._hooked and node._takes_arrays \
            and not node._is_accumulate:
        return _run_told(node, grads, listener)
    if anomaly_on:
        previous_node, running.node = running.node, node  # its nodes' "parent_"
    try:
        # In a raw pass the arrays go on to the formula as they came, unless a hook replaced
        # the gradients, and its results go back as they were made, unless a post hook
        # replaced them: no unwrapping of what was just wrapped (bench_trace.py (b)).
        arrays = grads if raw else None
        if raw:
            grads = _wrapped(grads)
        if node._tensor_hooks or node._retained:
            grads = _call_tensor_pre_hooks(node, grads, listener)
            arrays = None
        if node._pre_hooks:
            grads = _call_pre_hooks(node, grads, listener)
            arrays = None
        if listener is not None:
            listener.on_node_start(node, tuple(grads))
            started = time.perf_counter_ns()
        next_arrays = None
        reached = False  # (a flag, not the gradient: AccumulateGrad counts its references)
        for grad_value in grads:
            if grad_value is not None:
                reached = True
                break
        grad_value = None
        if reached:  # some gradient reached the node: it runs
            if raw and node._takes_arrays and not node._is_accumulate:
                next_arrays = node._backward_arrays(arrays if arrays is not None
                                                    else _unwrapped(grads))
                next_grads = _wrapped(next_arrays)
            elif _runs_user_code(node):
                next_grads = _as_user(node._backward, grads)
            else:
                # (an AccumulateGrad runs on the Tensors the hooks saw: PyTorch's .grad is
                # the very tensor the node's hooks are given)
                next_grads = node._backward(grads)
        else:
            next_grads = () if node._is_accumulate else (None,) * len(node._next_nodes)
        if node._post_hooks:
            next_grads = _call_post_hooks(node, next_grads, grads, listener)
            next_arrays = None
        if listener is not None:
            listener.on_node_end(node, tuple(next_grads), time.perf_counter_ns() - started)
            if node._is_accumulate and grads[0] is not None:
                listener.on_accumulate(node.variable, grads[0])
        if anomaly_on and state.anomaly_check_nan:
            _check_nan(node, next_grads)
    except Exception as error:
        if listener is not None:
            listener.on_error(error, node)
        if state.anomaly:
            anomaly.warn_forward_traceback(node)
        _annotate(error, node)
        raise
    finally:
        if anomaly_on:
            running.node = previous_node
    if next_arrays is not None:
        return next_arrays
    return _unwrapped(next_grads) if raw else next_grads


def _run_told(node: Node, grads: list, listener):
    """A built-in op's node in a raw pass with a listener and nothing else around it (no
    hooks, no anomaly mode): the listener is told in arrays (``on_node_start_arrays``,
    ``on_node_end_arrays``), so no Tensor is made for it per gradient, and the node's
    results go on as they were made (bench/bench_trace.py (b))."""
    try:
        listener.on_node_start_arrays(node, tuple(grads))  # (a copy: the formula fills
        started = time.perf_counter_ns()  # a multi-output node's missing gradients)
        reached = False
        for grad_value in grads:
            if grad_value is not None:
                reached = True
                break
        grad_value = None
        next_grads = node._backward_arrays(grads) if reached else \
            (None,) * len(node._next_nodes)
        listener.on_node_end_arrays(node, tuple(next_grads),
                                    time.perf_counter_ns() - started)
    except Exception as error:
        listener.on_error(error, node)
        if state.anomaly:
            anomaly.warn_forward_traceback(node)
        _annotate(error, node)
        raise
    return next_grads


def _annotate(error: Exception, node: Node) -> None:
    if node._site is not None and hasattr(error, "add_note"):
        note = f"(tracegrad) while running {node.name()}, created at {node._site}"
        if note not in getattr(error, "__notes__", ()):
            error.add_note(note)


# -- hooks ---------------------------------------------------------------------------------
def _call_tensor_pre_hooks(node: Node, grads: list, listener) -> list:
    """The hooks of the node's output tensors, then retain_grad (which sees what they
    returned, and nothing later hooks do)."""
    grads = list(grads)
    if node._tensor_hooks:
        for output_nr, hooks in tuple(node._tensor_hooks):
            for hook in tuple(hooks.values()):
                original = grads[output_nr]
                result = _as_user(hook, original)
                if listener is not None:
                    listener.on_hook(node, "tensor", hook, result is not None)
                if result is not None:
                    grads[output_nr] = _checked_single(original, result, hook, node,
                                                       output_nr)
    if node._retained:
        for output_nr, tensor_ref in tuple(node._retained.items()):
            tensor = tensor_ref()
            if tensor is not None and grads[output_nr] is not None:
                _retain(tensor, grads[output_nr])
                if listener is not None:
                    listener.on_hook(node, "retain_grad", _retain, False)
    return grads


def _call_pre_hooks(node: Node, grads: list, listener) -> list:
    for hook in tuple(node._pre_hooks.values()):
        result = _as_user(hook, tuple(grads))
        if listener is not None:
            listener.on_hook(node, "pre", hook, result is not None)
        if result is not None:
            grads = _checked_tuple(grads, result, hook, node, "grad_outputs")
    return grads


def _call_post_hooks(node: Node, next_grads, grads, listener):
    for hook in tuple(node._post_hooks.values()):
        result = _as_user(hook, tuple(next_grads), tuple(grads))
        if listener is not None:
            listener.on_hook(node, "post", hook, result is not None)
        if result is not None:
            next_grads = tuple(_checked_tuple(next_grads, result, hook, node, "grad_inputs"))
    return next_grads


def _checked_tuple(originals, result, hook, node: Node, what: str) -> list:
    """PyTorch's check of what a node hook returned: a tuple of the same length, each
    entry passing _checked_single."""
    if not isinstance(result, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(result).__name__}'")
    if len(result) != len(originals):
        raise AutogradError(
            f"hook '{_hook_name(hook)}' has returned an incorrect number of values (got "
            f"{len(result)}, but expected {len(originals)}) -- a {node.name()} "
            f"{'pre' if what == 'grad_outputs' else 'post'}-hook must return one entry per "
            f"{what} entry it was given.")
    checked = []
    for index, (original, value) in enumerate(zip(originals, result)):
        checked.append(None if value is None else
                       _checked_single(original, value, hook, node, index))
    return checked


def _checked_single(original, result, hook, node: Node, index: int):
    """A hook's replacement for one gradient must be a Tensor of the same type, device
    and size (PyTorch's check_single_result); otherwise say which hook and tensor."""
    from ..tensor import Tensor

    if original is None:
        raise AutogradError(
            f"can't replace a None gradient with a non-None value (hook '{_hook_name(hook)}' "
            f"on {node.name()}, gradient {index}).")
    if not isinstance(result, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")
    name = _hook_name(hook)
    where = f"the gradient of output {index} of {node.name()}, {_grad_description(original)}"
    if result._array.dtype != original._array.dtype or result.device != original.device:
        raise AutogradError(
            f"hook '{name}' has changed the type of value (was {_legacy_type(original)} got "
            f"{_legacy_type(result)}) -- {where}. Hint: return grad.to(grad.dtype) "
            "(the same dtype and device as the gradient the hook was given).")
    if result._array.shape != original._array.shape:
        raise AutogradError(
            f"hook '{name}' has changed the size of value (was {list(original.shape)} got "
            f"{list(result.shape)}) -- {where}. Hint: a hook must return a gradient of the "
            "same shape as the one it was given.")
    return result


def _grad_description(grad) -> str:
    from ..errors import describe_tensor

    return describe_tensor(grad)


_LEGACY_TYPE_NAMES = {
    "float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
    "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
    "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor",
}


def _legacy_type(tensor) -> str:
    """PyTorch's name for a tensor's type in hook messages: torch.FloatTensor,
    torch.cuda.DoubleTensor."""
    name = _LEGACY_TYPE_NAMES.get(tensor._array.dtype.name, tensor.dtype.name)
    return f"torch.cuda.{name}" if tensor.device.type == "cuda" else f"torch.{name}"


def _retain(tensor, grad_value) -> None:
    """retain_grad's hook: ``.grad`` becomes a copy of the gradient (recorded under
    create_graph, as PyTorch's clone), later gradients add to it."""
    current = tensor._grad
    if current is None:
        tensor._grad = grad_value.clone() if state.grad_enabled else \
            grad_value._detached_copy()
    else:
        tensor._grad = current + grad_value


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
