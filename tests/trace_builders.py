"""Hand-built Traces (plain data, no engine) for the tests of what reads a Trace: the
debugger, the picture, the files. test_tui_builders.py checks that they hold together.

``two_layer_trace`` is the shape of the tutorials' two-layer net (x.mm(w1).relu().mm(w2)
.sum()), with knobs to add an in-place violation, a NaN, a hook and more passes.
``mul_chain_trace`` is a long chain with a backward pass for the size/speed tests;
``exp_chain_trace`` a chain without one (optionally in module scopes) for the picture.
``mul_sum_trace`` and ``inplace_violation_trace`` are the picture's small cases.
"""

from __future__ import annotations

import numpy as np

from tracegrad.tracing.model import (
    BackwardPass,
    ExceptionRecord,
    HookRecord,
    NodeRecord,
    SavedRecord,
    Site,
    Stats,
    Step,
    TensorRecord,
    Trace,
    Value,
    VersionChange,
    Violation,
)

SOURCE = "examples/hand_built_net.py"  # does not exist: panels fall back to Site.code


def value_of(array: np.ndarray, summarized: bool = False) -> Value:
    """A Value as the recorder makes it; ``summarized``: statistics only, over budget."""
    array = np.asarray(array, dtype=np.float32)
    finite = array[np.isfinite(array)]
    stats = Stats(
        min=float(finite.min()) if finite.size else None,
        max=float(finite.max()) if finite.size else None,
        mean=float(finite.mean()) if finite.size else None,
        norm=float(np.linalg.norm(finite)) if finite.size else None,
        nan_count=int(np.isnan(array).sum()), inf_count=int(np.isinf(array).sum()))
    return Value(tuple(array.shape), "float32", stats, None if summarized else array,
                 dropped="budget" if summarized else None)


def site(line: int, code: str, file: str = SOURCE, function: str = "<module>") -> Site:
    return Site(file, line, function, code)


def two_layer_trace(*, violation: bool = False, nan: bool = False, hook: bool = False,
                    passes: int = 1, summarized: bool = False, exception: bool = False,
                    source: str = SOURCE) -> Trace:
    rng = np.random.default_rng(0)
    x, w1, w2 = rng.normal(size=(4, 3)), rng.normal(size=(3, 5)), rng.normal(size=(5, 2))
    h = x @ w1
    r = np.maximum(h, 0)
    y = r @ w2

    def tensor(id_, array, name, *, leaf=True, requires_grad=False, grad_fn=None, line=0,
               code=""):
        return TensorRecord(id_, tuple(np.shape(array)), "float32", name=name,
                            requires_grad=requires_grad, is_leaf=leaf, grad_fn=grad_fn,
                            value=value_of(array, summarized),
                            site=site(line, code, source) if line else None)

    tensors = {
        0: tensor(0, x, "x", line=3, code="x = tg.randn(4, 3)"),
        1: tensor(1, w1, "w1", requires_grad=True, line=4, code="w1 = tg.randn(3, 5)"),
        2: tensor(2, h, None, leaf=False, requires_grad=True, grad_fn=1),
        3: tensor(3, r, "r", leaf=False, requires_grad=True, grad_fn=2),
        4: tensor(4, w2, "w2", requires_grad=True, line=5, code="w2 = tg.randn(5, 2)"),
        5: tensor(5, y, None, leaf=False, requires_grad=True, grad_fn=4),
        6: tensor(6, np.float32(y.sum()), "loss", leaf=False, requires_grad=True, grad_fn=5),
    }
    mm1_site = site(7, "h = x.mm(w1)", source)
    relu_site = site(8, "r = h.relu()", source)
    inplace_site = site(9, "r.add_(1)", source)
    nodes = {
        0: NodeRecord(0, "AccumulateGrad", kind="accumulate", leaf=1),
        1: NodeRecord(1, "MmBackward0", inputs=[0, 1], outputs=[2], next=[(None, 0), (0, 0)],
                      saved=[SavedRecord(0, 0, 48, "self"), SavedRecord(1, 0, 60, "mat2")],
                      site=mm1_site, module="layer1"),
        2: NodeRecord(2, "ReluBackward0", inputs=[2], outputs=[3], next=[(1, 0)],
                      saved=[SavedRecord(3, 0, 80, "result", is_output=True)], site=relu_site),
        3: NodeRecord(3, "AccumulateGrad", kind="accumulate", leaf=4),
        4: NodeRecord(4, "MmBackward0", inputs=[3, 4], outputs=[5], next=[(2, 0), (3, 0)],
                      saved=[SavedRecord(3, 0, 80, "self"), SavedRecord(4, 0, 40, "mat2")],
                      site=site(10, "y = r.mm(w2)", source), module="layer2"),
        5: NodeRecord(5, "SumBackward0", inputs=[5], outputs=[6], next=[(4, 0)],
                      site=site(11, "loss = y.sum()", source)),
    }
    grad_y = np.ones_like(y)
    grad_r = grad_y @ w2.T
    grad_h = grad_r * (h > 0)
    if nan:
        grad_h = grad_h.copy()
        grad_h[0, 0] = np.nan
    grad_w1 = x.T @ grad_h
    grad_w2 = r.T @ grad_y

    def steps(pass_index: int) -> list[Step]:
        def v(array):
            return value_of(array, summarized)

        # .grad after each pass: the gradients accumulate, pass after pass.
        return [
            Step(0, 5, [v(np.float32(1.0))], [v(grad_y)], duration_ns=1200),
            Step(1, 4, [v(grad_y)], [v(grad_r), v(grad_w2)],
                 hooks=[HookRecord("post", "print_grad", changed=False)] if hook else []),
            Step(2, 3, [v(grad_w2)], [], accumulated=4,
                 grad_after=v(grad_w2 * (pass_index + 1))),
            Step(3, 2, [v(grad_r)], [v(grad_h)]),
            Step(4, 1, [v(grad_h)], [None, v(grad_w1)]),
            Step(5, 0, [v(grad_w1)], [], accumulated=1,
                 grad_after=v(grad_w1 * (pass_index + 1))),
        ]

    backward_site = site(12, "loss.backward()", source)
    trace = Trace(tensors=tensors, nodes=nodes,
                  passes=[BackwardPass(index, roots=[6], site=backward_site,
                                       values_captured=True, steps=steps(index),
                                       label="backward(loss)")
                          for index in range(passes)])
    tensors[1].grad = trace.passes[-1].steps[5].grad_after
    tensors[4].grad = trace.passes[-1].steps[2].grad_after
    if violation:
        tensors[3].versions = [VersionChange(1, "add_", inplace_site)]
        trace.violations.append(Violation(
            "inplace_saved",
            "one of the variables needed for gradient computation has been modified by an "
            "inplace operation: [float32 [4, 5]], which is output 0 of ReluBackward0, is at "
            "version 1; expected version 0 instead.",
            tensor=3, node=2, site=inplace_site, other_site=relu_site, saved_version=0,
            current_version=1, phase="backward", pass_index=0, step_index=3))
    if nan:
        trace.violations.append(Violation(
            "nan", "ReluBackward0 produced a NaN gradient", node=2, site=relu_site,
            phase="backward", pass_index=0, step_index=3))
    if exception:
        trace.passes[0].steps[3].error = "RuntimeError: modified by an inplace operation"
        trace.passes[0].steps = trace.passes[0].steps[:4]
        trace.passes[0].error = "RuntimeError"
        trace.exception = ExceptionRecord("RuntimeError", "modified by an inplace operation",
                                          site=backward_site)
    return trace


def mul_chain_trace(length: int, summarized: bool = True) -> Trace:
    """``length`` nodes: a chain of MulBackward0 with an AccumulateGrad every 10 nodes."""
    stats = Stats(0.0, 1.0, 0.5, 2.0)
    grad = Value((8, 8), "float32", stats, None if summarized else np.ones((8, 8), np.float32))
    tensors: dict[int, TensorRecord] = {}
    nodes: dict[int, NodeRecord] = {}
    steps: list[Step] = []
    for node_id in range(length):
        tensors[node_id] = TensorRecord(node_id, (8, 8), "float32", is_leaf=False,
                                        requires_grad=True, grad_fn=node_id)
        nexts: list[tuple[int | None, int]] = []
        if node_id + 1 < length:
            nexts.append((node_id + 1, 0))
        nodes[node_id] = NodeRecord(node_id, "MulBackward0" if node_id % 10 else "AccumulateGrad",
                                    outputs=[node_id], next=nexts,
                                    site=Site("big.py", 1 + node_id % 50, "f", "y = y * 2"))
        steps.append(Step(node_id, node_id, [grad], [grad] * len(nexts)))
    return Trace(tensors=tensors, nodes=nodes, passes=[BackwardPass(0, roots=[0], steps=steps)])


def deep_trace(layers: int) -> Trace:
    """A deep network's one pass: MmBackward0 after MmBackward0, each with the
    AccumulateGrad of its weight ``layers.N.weight`` beside it (2 * layers nodes)."""
    grad = Value((8, 8), "float32", Stats(-1.0, 1.0, 0.0, 2.0))
    tensors: dict[int, TensorRecord] = {}
    nodes: dict[int, NodeRecord] = {}
    steps: list[Step] = []
    for layer in range(layers):
        op_id, accumulate_id = 2 * layer, 2 * layer + 1
        tensors[op_id] = TensorRecord(op_id, (8, 8), "float32", is_leaf=False,
                                      requires_grad=True, grad_fn=op_id)
        tensors[accumulate_id] = TensorRecord(accumulate_id, (8, 8), "float32",
                                              name=f"layers.{layer}.weight",
                                              requires_grad=True, is_parameter=True)
        nexts: list[tuple[int | None, int]] = [(accumulate_id, 0)]
        if layer + 1 < layers:
            nexts.insert(0, (op_id + 2, 0))
        nodes[op_id] = NodeRecord(op_id, "MmBackward0", outputs=[op_id], next=nexts,
                                  inputs=[op_id + 2 if layer + 1 < layers else None,
                                          accumulate_id], module=f"layers.{layer}")
        nodes[accumulate_id] = NodeRecord(accumulate_id, "AccumulateGrad", kind="accumulate",
                                          leaf=accumulate_id)
    for op_id in range(0, 2 * layers, 2):
        steps.append(Step(len(steps), op_id, [grad], [grad] * len(nodes[op_id].next)))
        steps.append(Step(len(steps), op_id + 1, [grad], [], accumulated=op_id + 1))
    return Trace(tensors=tensors, nodes=nodes,
                 passes=[BackwardPass(0, roots=[0], steps=steps, label="backward(loss)")])


def loop_trace(passes: int, *, nan_at: int | None = None, probes: int = 0,
               summarized: tuple[int, ...] = (), kept: tuple[int, ...] | None = None) -> Trace:
    """A training loop: ``probes`` gradcheck passes first, then ``passes`` passes of
    ``loss = (x * w).sum()``, each with its own graph and the shared AccumulateGrad of the
    parameter ``0.weight``. From ``nan_at`` on, MulBackward0 returns NaN (a violation at
    the first). Passes in ``summarized`` keep counts only; values are kept for the passes
    in ``kept`` (default all), the others keep statistics ("not kept for this pass")."""
    grad = Value((3,), "float32", Stats(1.0, 1.0, 1.0, 1.7320508), np.ones(3, np.float32))
    bad = Value((3,), "float32", Stats(None, None, None, None, nan_count=3),
                np.full(3, np.nan, np.float32))
    tensors = {0: TensorRecord(0, (3,), "float32", name="0.weight", requires_grad=True,
                               is_parameter=True)}
    nodes = {0: NodeRecord(0, "AccumulateGrad", kind="accumulate", leaf=0)}
    trace = Trace(tensors=tensors, nodes=nodes, metadata={"keep_passes": [2, 2]})
    loss_site, mul_site = site(20, "loss = (x * w).sum()"), site(20, "loss = (x * w).sum()")
    for position in range(probes + passes):
        probe = position < probes
        iteration = position - probes
        mul_id, sum_id, out_id, loss_id = 1 + 2 * position, 2 + 2 * position, \
            1 + 2 * position, 2 + 2 * position
        tensors[out_id] = TensorRecord(out_id, (3,), "float32", is_leaf=False,
                                       requires_grad=True, grad_fn=mul_id)
        tensors[loss_id] = TensorRecord(loss_id, (), "float32", name="loss", is_leaf=False,
                                        requires_grad=True, grad_fn=sum_id)
        nodes[mul_id] = NodeRecord(mul_id, "MulBackward0", inputs=[None, 0], outputs=[out_id],
                                   next=[(None, 0), (0, 0)], site=mul_site)
        nodes[sum_id] = NodeRecord(sum_id, "SumBackward0", inputs=[out_id], outputs=[loss_id],
                                   next=[(mul_id, 0)], site=loss_site)
        nan = nan_at is not None and not probe and iteration >= nan_at
        out = bad if nan else grad
        keep = probe is False and (kept is None or iteration in kept)
        if not keep:
            out = Value(out.shape, out.dtype, out.stats, None, dropped="pass")
        index = len(trace.passes)
        steps = [Step(0, sum_id, [out], [out]), Step(1, mul_id, [out], [None, out]),
                 Step(2, 0, [out], [], accumulated=0, grad_after=out)]
        backward_pass = BackwardPass(
            index, roots=[loss_id], steps=steps, values_captured=keep,
            site=site(30, "assert gradcheck(f, (w,))") if probe else site(21,
                                                                          "loss.backward()"),
            origin="gradcheck" if probe else "user",
            label="gradcheck(f)" if probe else "backward(loss)")
        if not probe and iteration in summarized:
            backward_pass.summarized, backward_pass.summarized_steps = True, 3
            backward_pass.op_counts = {"AccumulateGrad": 1, "MulBackward0": 1,
                                       "SumBackward0": 1}
            backward_pass.steps, backward_pass.values_captured = [], False
        trace.passes.append(backward_pass)
        if nan and iteration == nan_at:
            trace.violations.append(Violation(
                "nan", "NaN first appeared in backward: MulBackward0", node=mul_id,
                site=mul_site, phase="backward", pass_index=index, step_index=1))
    return trace


def wide_trace(inputs: int) -> Trace:
    """``loss = torch.stack(xs).sum()`` over ``inputs`` leaves: a StackBackward0 with that
    many inputs and next edges, one AccumulateGrad per leaf (``inputs`` + 2 steps)."""
    grad = Value((2,), "float32", Stats(1.0, 1.0, 1.0, 1.4142135))
    tensors: dict[int, TensorRecord] = {}
    nodes: dict[int, NodeRecord] = {}
    for leaf in range(inputs):
        tensors[leaf] = TensorRecord(leaf, (2,), "float32", name=f"x{leaf}",
                                     requires_grad=True)
        nodes[leaf] = NodeRecord(leaf, "AccumulateGrad", kind="accumulate", leaf=leaf)
    stack_id, sum_id = inputs, inputs + 1
    tensors[stack_id] = TensorRecord(stack_id, (inputs, 2), "float32", is_leaf=False,
                                     requires_grad=True, grad_fn=stack_id)
    tensors[sum_id] = TensorRecord(sum_id, (), "float32", name="loss", is_leaf=False,
                                   requires_grad=True, grad_fn=sum_id)
    nodes[stack_id] = NodeRecord(stack_id, "StackBackward0", inputs=list(range(inputs)),
                                 outputs=[stack_id], next=[(leaf, 0) for leaf in range(inputs)],
                                 site=site(5, "loss = torch.stack(xs).sum()"))
    nodes[sum_id] = NodeRecord(sum_id, "SumBackward0", inputs=[stack_id], outputs=[sum_id],
                               next=[(stack_id, 0)], site=site(5, "loss = torch.stack(xs).sum()"))
    steps = [Step(0, sum_id, [grad], [grad]), Step(1, stack_id, [grad], [grad] * inputs)]
    steps += [Step(2 + leaf, leaf, [grad], [], accumulated=leaf, grad_after=grad)
              for leaf in range(inputs)]
    return Trace(tensors=tensors, nodes=nodes,
                 passes=[BackwardPass(0, roots=[sum_id], steps=steps, label="backward(loss)")])


# -- the builders build what the tests rely on --------------------------------------------


def grad_value(shape=(2, 3), norm=1.5, nan_count=0) -> Value:
    return Value(tuple(shape), "float32", Stats(min=0.0, max=1.0, mean=0.5, norm=norm,
                                                nan_count=nan_count))


def mul_sum_trace(w_name: str = "w", nan_count: int = 0) -> Trace:
    """loss = (w * x).sum(): w a leaf requiring grad (saved as self), x saved as other."""
    trace = Trace()
    trace.tensors[0] = TensorRecord(0, (2, 3), "float32", name=w_name, requires_grad=True)
    trace.tensors[1] = TensorRecord(1, (2, 3), "float32", name="x")
    trace.tensors[2] = TensorRecord(2, (2, 3), "float32", is_leaf=False, grad_fn=1,
                                    requires_grad=True)
    trace.tensors[3] = TensorRecord(3, (), "float32", name="loss", is_leaf=False, grad_fn=2,
                                    requires_grad=True)
    trace.nodes[0] = NodeRecord(0, "AccumulateGrad", kind="accumulate", leaf=0)
    trace.nodes[1] = NodeRecord(
        1, "MulBackward0", inputs=[0, 1], outputs=[2], next=[(0, 0), (None, 0)],
        saved=[SavedRecord(0, 0, 24, "self"), SavedRecord(1, 0, 24, "other")],
        site=Site("prog.py", 3, "<module>", "y = w * x"))
    trace.nodes[2] = NodeRecord(2, "SumBackward0", inputs=[2], outputs=[3], next=[(1, 0)],
                                site=Site("prog.py", 4, "<module>", "loss = y.sum()"))
    trace.passes.append(BackwardPass(0, roots=[3], steps=[
        Step(0, 2, grads_out=[grad_value(nan_count=nan_count)]),
        Step(1, 1, grads_out=[grad_value(nan_count=nan_count), None]),
        Step(2, 0, accumulated=0),
    ]))
    return trace


def exp_chain_trace(length: int, module_every: int = 0) -> Trace:
    """x -> ExpBackward0 -> ... (``length`` nodes) -> output; no pass.

    With ``module_every`` > 0, every run of that many nodes sits in its own module scope.
    """
    trace = Trace()
    trace.tensors[0] = TensorRecord(0, (1,), "float32", name="x", requires_grad=True)
    trace.nodes[0] = NodeRecord(0, "AccumulateGrad", kind="accumulate", leaf=0)
    for number in range(1, length + 1):
        module = f"block{(number - 1) // module_every}" if module_every else None
        trace.tensors[number] = TensorRecord(number, (1,), "float32", is_leaf=False,
                                             grad_fn=number, requires_grad=True)
        trace.nodes[number] = NodeRecord(number, "ExpBackward0", inputs=[number - 1],
                                         outputs=[number], next=[(number - 1, 0)],
                                         module=module)
    return trace


def inplace_violation_trace() -> Trace:
    """y = x.sigmoid(); y.mul_(2) -> SigmoidBackward0's saved result is at version 1."""
    trace = Trace()
    trace.tensors[0] = TensorRecord(0, (3,), "float32", name="x", requires_grad=True)
    trace.tensors[1] = TensorRecord(1, (3,), "float32", name="y", is_leaf=False, grad_fn=1,
                                    requires_grad=True)
    trace.tensors[1].versions.append(
        VersionChange(1, "mul_", Site("prog.py", 9, "<module>", "y.mul_(2)")))
    trace.nodes[0] = NodeRecord(0, "AccumulateGrad", kind="accumulate", leaf=0)
    trace.nodes[1] = NodeRecord(1, "SigmoidBackward0", inputs=[0], outputs=[1],
                                next=[(0, 0)],
                                saved=[SavedRecord(1, 0, 12, "result", is_output=True)],
                                site=Site("prog.py", 8, "<module>", "y = x.sigmoid()"))
    trace.violations.append(Violation(
        "inplace_saved", "a tensor saved for backward was modified in place", tensor=1,
        node=1, site=Site("prog.py", 9, "<module>", "y.mul_(2)"),
        other_site=Site("prog.py", 8, "<module>", "y = x.sigmoid()"),
        saved_version=0, current_version=1))
    return trace
