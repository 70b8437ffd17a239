"""The PyTorch bridge records a real torch program into the same Trace as tracegrad's engine:
nodes, edges, saved tensors, sites, module scope, names, backward steps and gradients."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tracegrad as tg

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")


def _names(trace) -> list[str]:
    return [node.name for node in trace.iter_nodes()]


def _two_layer():
    torch.manual_seed(0)
    x = torch.randn(4, 5)
    w1 = torch.randn(5, 3, requires_grad=True)
    w2 = torch.randn(3, 2, requires_grad=True)
    return x, w1, w2


def test_two_layer_graph_nodes_edges_saved_tensors_and_sites():
    x, w1, w2 = _two_layer()
    with tg.record() as tr:
        h = x.mm(w1)
        a = h.relu()
        y = a.mm(w2)
        loss = y.pow(2).sum()
    assert tr.metadata["engine"] == "torch"
    assert _names(tr) == ["MmBackward0", "AccumulateGrad", "ReluBackward0", "MmBackward0",
                          "AccumulateGrad", "PowBackward0", "SumBackward0"]
    names = {record.id: record.name for record in tr.tensors.values()}
    mm1, acc1, relu, mm2, acc2, power, total = tr.iter_nodes()
    assert [names[i] for i in mm1.inputs] == ["x", "w1"]
    assert [names[i] for i in mm1.outputs] == ["h"]
    assert mm1.next == [(None, 0), (acc1.id, 0)]
    assert acc1.kind == "accumulate" and names[acc1.leaf] == "w1"
    assert relu.next == [(mm1.id, 0)] and mm2.next == [(relu.id, 0), (acc2.id, 0)]
    assert total.next == [(power.id, 0)] and names[total.outputs[0]] == "loss"
    # which tensor, version at save, bytes and torch's slot names; torch saves an operand
    # only when a gradient needs it (x needs none, so mm1 keeps x but not w1)
    assert [(names[s.tensor], s.version, s.nbytes, s.slot) for s in mm1.saved] == [
        ("x", 0, 4 * 5 * 4, "self")]
    assert [(names[s.tensor], s.is_output, s.slot) for s in relu.saved] == [
        ("a", True, "result")]
    assert [(names[s.tensor], s.slot) for s in mm2.saved] == [("a", "self"), ("w2", "mat2")]
    assert power.attrs == {"exponent": 2}
    assert mm1.site.code == "h = x.mm(w1)" and mm1.site.file.endswith(
        "test_bridge_recording.py")
    assert mm2.site.line == mm1.site.line + 2
    assert tr.tensor(mm1.outputs[0]).shape == (4, 3)
    assert tr.tensor(mm1.outputs[0]).dtype == "float32"
    assert tr.tensor(acc1.leaf).is_leaf and tr.tensor(acc1.leaf).requires_grad
    assert loss.grad_fn is not None  # the program's own objects are untouched


def test_backward_steps_order_and_gradients_match_grad():
    x, w1, w2 = _two_layer()
    with tg.record() as tr:
        loss = x.mm(w1).relu().mm(w2).pow(2).sum()
        loss.backward()
    (backward_pass,) = tr.passes
    assert [tr.node(step.node).name for step in backward_pass.steps] == [
        "SumBackward0", "PowBackward0", "MmBackward0", "AccumulateGrad", "ReluBackward0",
        "MmBackward0", "AccumulateGrad"]
    assert backward_pass.kind == "backward" and backward_pass.error is None
    assert backward_pass.roots == [tr.node(backward_pass.steps[0].node).outputs[0]]
    assert backward_pass.site.code == "loss.backward()"
    accumulated = {tr.tensor(step.accumulated).name: step for step in backward_pass.steps
                   if step.accumulated is not None}
    assert set(accumulated) == {"w1", "w2"}
    for leaf, name in ((w1, "w1"), (w2, "w2")):
        step = accumulated[name]
        np.testing.assert_array_equal(step.grads_in[0].array, leaf.grad.numpy())
        np.testing.assert_array_equal(tr.tensor(step.accumulated).grad.array,
                                      leaf.grad.numpy())
    steps = backward_pass.steps
    np.testing.assert_array_equal(steps[0].grads_out[0].array, steps[1].grads_in[0].array)
    assert steps[0].grads_in[0].array.shape == ()
    assert all(step.duration_ns > 0 for step in steps)


def test_a_gradient_one_step_sends_and_the_next_takes_in_is_captured_once():
    # The bridge hands the recorder the same array at both ends (passes.py): one Value,
    # one copy of the bits, as tracegrad's engine gives it.
    x, w1, w2 = _two_layer()
    with tg.record() as tr:
        x.mm(w1).relu().mm(w2).pow(2).sum().backward()
    steps = tr.passes[0].steps
    assert [tr.node(step.node).name for step in steps[:2]] == ["SumBackward0", "PowBackward0"]
    assert steps[0].grads_out[0] is steps[1].grads_in[0]
    assert steps[1].grads_out[0] is steps[2].grads_in[0]
    with tg.record(values=False) as bare:
        x.mm(w1).relu().mm(w2).pow(2).sum().backward()
    assert [len(step.grads_in) for step in bare.passes[0].steps] == \
        [len(step.grads_in) for step in steps]


def test_values_and_structure_only():
    x, w1, _ = _two_layer()
    with tg.record() as tr:
        h = x.mm(w1)
    by_name = {record.name: record for record in tr.tensors.values()}
    np.testing.assert_array_equal(by_name["h"].value.array, h.detach().numpy())
    np.testing.assert_array_equal(by_name["w1"].value.array, w1.detach().numpy())
    with tg.record(values=False) as bare:
        x.mm(w1).sum().backward()
    assert all(record.value is None for record in bare.tensors.values())
    assert all(grad is None for step in bare.passes[0].steps for grad in step.grads_in)


class MyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


def test_custom_function_node_has_the_apply_line_its_input_and_what_it_saved():
    x, w1, _ = _two_layer()
    with tg.record() as tr:
        h = x.mm(w1)
        out = MyReLU.apply(h)
        total = out.sum()
        total.backward()
    mm, _, custom, total_node = tr.iter_nodes()
    assert (custom.name, custom.kind) == ("MyReLUBackward", "function")
    assert custom.site.code == "out = MyReLU.apply(h)"
    names = {record.id: record.name for record in tr.tensors.values()}
    assert [names[i] for i in custom.inputs] == ["h"]
    assert [names[i] for i in custom.outputs] == ["out"]
    assert [(names[s.tensor], s.slot) for s in custom.saved] == [("h", "0")]
    assert custom.next == [(mm.id, 0)] and total_node.next == [(custom.id, 0)]
    assert [tr.node(step.node).name for step in tr.passes[0].steps] == [
        "SumBackward0", "MyReLUBackward", "MmBackward0", "AccumulateGrad"]


def test_nested_custom_functions_are_one_record_per_tensor():
    x = torch.randn(6, requires_grad=True)
    with tg.record() as tr:
        inner = MyReLU.apply(x * 2)
        outer = MyReLU.apply(inner)
        total = outer.sum()
    assert _names(tr) == ["MulBackward0", "AccumulateGrad", "MyReLUBackward",
                          "MyReLUBackward", "SumBackward0"]
    first, second = (node for node in tr.iter_nodes() if node.name == "MyReLUBackward")
    assert second.inputs == first.outputs  # the same record, not a copy from metadata
    assert tr.tensor(first.outputs[0]).name == "inner"
    assert first.site.line + 1 == second.site.line
    assert total.requires_grad


def test_mlp_module_scope_and_named_parameters():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3))
    points, labels = torch.randn(5, 2), torch.tensor([0, 1, 2, 1, 0])
    loss_fn = torch.nn.CrossEntropyLoss()
    with tg.record() as tr:
        loss = loss_fn(model(points), labels)
        loss.backward()
    scopes = {(node.name, node.module) for node in tr.iter_nodes()
              if node.kind != "accumulate"}
    assert ("AddmmBackward0", "0") in scopes and ("ReluBackward0", "1") in scopes
    assert ("AddmmBackward0", "2") in scopes and ("TBackward0", "2") in scopes
    assert ("NllLossBackward0", "CrossEntropyLoss") in scopes
    leaves = sorted(tr.tensor(node.leaf).name for node in tr.iter_nodes()
                    if node.kind == "accumulate")
    assert leaves == ["0.bias", "0.weight", "2.bias", "2.weight"]
    assert all(tr.tensor(node.leaf).is_parameter for node in tr.iter_nodes()
               if node.kind == "accumulate")
    steps = [tr.node(step.node).name for step in tr.passes[0].steps]
    assert steps.count("AccumulateGrad") == 4 and steps[0] == "NllLossBackward0"


def test_hooks_and_retain_grad_are_recorded_on_their_step():
    x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    with tg.record() as tr:
        h = x * 2
        h.retain_grad()
        h.register_hook(lambda grad: None)
        x.register_hook(lambda grad: grad * 2)
        (h * h).sum().backward()
    hooks = {tr.node(step.node).name + str(index): [(k.kind, k.changed) for k in step.hooks]
             for index, step in enumerate(tr.passes[0].steps)}
    assert hooks == {"SumBackward00": [], "MulBackward01": [],
                     "MulBackward02": [("tensor", False), ("retain_grad", False)],
                     "AccumulateGrad3": [("tensor", True)]}
    assert x.grad.tolist() == [16.0, -32.0, 48.0] and h.grad.tolist() == [4.0, -8.0, 12.0]


def test_autograd_grad_is_a_grad_pass_without_accumulation():
    x = torch.tensor([2.0], requires_grad=True)
    with tg.record() as tr:
        (first,) = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
        (second,) = torch.autograd.grad(first.sum(), x)
    assert [backward_pass.kind for backward_pass in tr.passes] == ["grad", "grad"]
    assert tr.passes[0].create_graph and tr.passes[0].retain_graph
    assert all(step.accumulated is None for p in tr.passes for step in p.steps)
    assert first.item() == 12.0 and second.item() == 12.0 and x.grad is None


def test_inplace_op_records_the_tensor_itself_going_in_and_out():
    w = torch.ones(3, requires_grad=True)
    with tg.record() as tr:
        h = w * 2
        h.add_(1)
    add = next(node for node in tr.iter_nodes() if node.name == "AddBackward0")
    record = tr.tensor(add.outputs[0])
    assert record.name == "h" and add.inputs[0] == record.id
    assert [(change.version, change.op) for change in record.versions] == [(1, "add_")]
    assert record.versions[0].site.code == "h.add_(1)"


def test_trace_of_a_torch_program_saves_and_loads(tmp_path):
    x, w1, w2 = _two_layer()
    with tg.record() as tr:
        x.mm(w1).relu().mm(w2).sum().backward()
    path = tmp_path / "torch.tgtrace"
    tr.save(path)
    loaded = tg.load_trace(path)
    assert _names(loaded) == _names(tr) and loaded.metadata["engine"] == "torch"
    assert [s.node for s in loaded.passes[0].steps] == [s.node for s in tr.passes[0].steps]


def _global_state():
    from torch.nn.modules import module

    return (torch._C._len_torch_function_stack(), len(module._global_forward_pre_hooks),
            len(module._global_forward_hooks))


class _Counter(tg.autograd.events.Listener):
    def __init__(self):
        self.steps = 0

    def on_node_start(self, node, grads_in):
        self.steps += 1


def test_nothing_stays_installed_after_the_recording_even_on_error():
    before = _global_state()
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(ZeroDivisionError), tg.record():
        y = (x * 2).sin()
        assert _global_state() != before  # armed inside
        _ = 1 / 0
    assert _global_state() == before
    counter = _Counter()
    with tg.autograd.events.subscribe(counter):
        y.sum().backward()  # the nodes recorded above carry no hook any more
    assert counter.steps == 0 and x.grad is not None


def _live_tensors_of_shape(shape: tuple) -> int:
    import gc

    return sum(1 for item in gc.get_objects()
               if type(item) is torch.Tensor and tuple(item.shape) == shape)


@pytest.mark.parametrize("values", [True, False])
def test_a_tensor_the_program_drops_is_freed_then_not_when_the_recording_ends(values):
    # The recorder reads every output's values (a NaN check even without values); the
    # bridge's view of them must not keep the program's memory once the program let go
    # (it did until the registry's next sweep: hundreds of MB over a training loop).
    w, m = torch.ones(7, 13, requires_grad=True), torch.ones(13, 11)
    with tg.record(values=values) as tr:
        for _ in range(3):
            loss = w.mm(m).exp().sum()  # the [7, 11] temporaries: gone after backward
            loss.backward()
            with torch.no_grad():
                step = w.grad.mm(m) * 0.1  # an untracked op's output, read too
                del step
        del loss
        assert _live_tensors_of_shape((7, 11)) == 0
    assert _names(tr).count("ExpBackward0") == 3


def test_armed_when_the_program_imports_torch_during_the_recording():
    program = textwrap.dedent("""
        import sys
        import tracegrad
        assert "torch" not in sys.modules
        with tracegrad.record() as tr:
            import torch
            w = torch.ones(2, requires_grad=True)
            (w * 3).sum().backward()
        print([node.name for node in tr.iter_nodes()], tr.metadata["engine"])
        print(torch._C._len_torch_function_stack(),
              any(type(f).__name__ == "TorchImportWatcher" for f in sys.meta_path))
    """)
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "['MulBackward0', 'AccumulateGrad', 'SumBackward0'] torch", "0 False"]


def test_a_recording_without_torch_imports_none_and_leaves_no_hook():
    program = textwrap.dedent("""
        import sys
        import tracegrad
        with tracegrad.record() as tr:
            w = tracegrad.ones(2, requires_grad=True)
            (w * 3).sum().backward()
        print("torch" in sys.modules, len(tr.nodes), tr.metadata["engine"],
              any(type(f).__name__ == "TorchImportWatcher" for f in sys.meta_path))
    """)
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "3", "tracegrad", "False"]


def test_a_mode_the_program_entered_meanwhile_stays_and_ours_goes_quiet():
    from torch.overrides import TorchFunctionMode

    seen = []

    class ProgramMode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(getattr(func, "__name__", "?"))
            return func(*args, **(kwargs or {}))

    program_mode = ProgramMode()
    depth = torch._C._len_torch_function_stack()
    with tg.record() as tr:
        program_mode.__enter__()  # entered inside the recording, left after it
        (torch.ones(2, requires_grad=True) * 2).sum()
    assert _names(tr) == ["MulBackward0", "AccumulateGrad", "SumBackward0"]
    assert torch._C._get_function_stack_at(torch._C._len_torch_function_stack() - 1) \
        is program_mode
    y = torch.ones(2) + 1  # the program's mode still sees its calls
    program_mode.__exit__(None, None, None)
    assert "add" in seen or "__add__" in seen
    assert y.tolist() == [2.0, 2.0]
    # the bridge's mode stayed under the program's, passing calls on; leave this process
    # as it was
    assert torch._C._len_torch_function_stack() == depth + 1
    (torch.ones(2, requires_grad=True) * 2).sum()
    torch._C._pop_torch_function_stack()
    assert torch._C._len_torch_function_stack() == depth
