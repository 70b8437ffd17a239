"""An optimizer's step in a torch program, as the trace shows it: torch wraps every
``Optimizer.step`` in a profiler ``record_function``, and the bridge reports the step as
tracegrad's own optimizers do -- one in-place change per parameter -- not its arithmetic
(Adam's moments, its step counts are the optimizer's state, not the program's graph)."""

from __future__ import annotations

import pytest

import tracegrad as tg

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")


def _train(optimizer_class, steps: int = 3, **options):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3))
    optimizer = optimizer_class(model.parameters(), lr=0.01, **options)
    points, labels = torch.randn(8, 2), torch.randint(0, 3, (8,))
    with tg.record() as trace:
        for _ in range(steps):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(points), labels)
            loss.backward()
            optimizer.step()
    return trace, model


@pytest.mark.parametrize("optimizer_class, options, op", [
    (torch.optim.Adam, {}, "addcdiv_"),
    (torch.optim.SGD, {"momentum": 0.9}, "add_"),
    (torch.optim.SGD, {}, "add_"),
])
def test_a_step_is_one_inplace_change_per_parameter(optimizer_class, options, op):
    trace, model = _train(optimizer_class, **options)
    parameters = {record.name: record for record in trace.tensors.values()
                  if record.is_parameter}
    assert sorted(parameters) == sorted(name for name, _ in model.named_parameters())
    live = dict(model.named_parameters())
    for name, record in parameters.items():
        assert [change.op for change in record.versions] == [op] * 3
        last = live[name]._version  # initialisation changed it in place before the trace
        assert [change.version for change in record.versions] == [last - 2, last - 1, last]
        assert record.versions[-1].site is not None
        assert record.versions[-1].site.code.strip() == "optimizer.step()"
    # The step's own tensors (moments, momentum buffers, step counts) are not in the trace:
    # every tensor recorded is a parameter, the data, or made by the program's ops.
    shapes_of_parameters = {tuple(p.shape) for p in model.parameters()}
    unexplained = [record for record in trace.tensors.values()
                   if not record.is_parameter and record.grad_fn is None
                   and tuple(record.shape) in shapes_of_parameters and record.versions]
    assert unexplained == []
    assert all(not record.versions for record in trace.tensors.values()
               if not record.is_parameter)


def test_the_step_reports_no_flows_of_its_state():
    trace, _ = _train(torch.optim.Adam)
    assert trace.flows == [] or all("step" not in str(flow) for flow in trace.flows)
    # One recorded op per forward op and pass: the step added no nodes.
    names = sorted({node.name for node in trace.nodes.values()})
    assert names == sorted({"AccumulateGrad", "AddmmBackward0", "TBackward0",
                            "TanhBackward0", "LogSoftmaxBackward0", "NllLossBackward0"})


def test_a_parameter_changed_by_the_step_is_named_in_the_version_error():
    """The step's change of a saved parameter is what torch's version error is about; the
    trace names the op and the line."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(2, 2)
    optimizer = torch.optim.Adam(layer.parameters(), lr=0.1)
    x = torch.randn(3, 2, requires_grad=True)  # the weight is saved for x's gradient
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        with tg.record() as trace:
            loss = layer(x).pow(2).sum()
            loss.backward(retain_graph=True)
            optimizer.step()
            loss.backward()
    assert trace.exception is not None and trace.exception.type == "RuntimeError"
    weight = next(record for record in trace.tensors.values() if record.name == "weight")
    assert [change.op for change in weight.versions] == ["addcdiv_"]
    assert trace.violations, "the stale saved parameter is a violation"
    text = " ".join(violation.message for violation in trace.violations)
    assert "addcdiv_" in text


def test_the_step_is_left_and_torch_calls_after_it_are_recorded_again():
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(3))
    optimizer = torch.optim.SGD([w], lr=0.1)
    with tg.record() as trace:
        (w * 2).sum().backward()
        optimizer.step()
        moved = w.detach() * 3  # a value leaving the graph, after the step: reported
        with torch.no_grad():
            w.mul_(1.0)
    assert moved.shape == (3,)
    record = next(record for record in trace.tensors.values() if record.is_parameter)
    assert [change.op for change in record.versions] == ["add_", "mul_"]


def test_a_long_run_keeps_no_version_group_per_storage_it_ever_saved():
    """The in-place history of a storage lives as long as a saved tensor of it: 150 steps
    (some 700 storages saved) leave the groups of the last graphs' saved tensors."""
    import gc

    from tracegrad import bridge

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    points, labels = torch.randn(8, 2), torch.randint(0, 3, (8,))
    with tg.record(values=False):
        for _ in range(150):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(points), labels)
            loss.backward()
            optimizer.step()
        gc.collect()
        groups = bridge._session.registry._groups
        alive = [reference for reference in groups.values() if reference() is not None]
        assert 0 < len(alive) <= 60, len(alive)


def test_zero_grad_resets_are_flows_and_a_data_assignment_is_read_again():
    """``p.grad = None`` (zero_grad) is a gradient reset, one flow per parameter; ``t.data =
    other`` gives t other memory and shape, which the trace reads again."""
    trace, model = _train(torch.optim.SGD)
    resets = sorted(trace.tensor(flow.sources[0]).name for flow in trace.flows
                    if flow.kind == "grad_reset")
    assert resets == sorted(name for name, _ in model.named_parameters())
    from tracegrad import bridge

    w = torch.nn.Parameter(torch.ones(3))
    with tg.record():
        (w * 2).sum().backward()
        adapter = bridge._session.registry.known_tensor(w)
        w.grad = None
        assert adapter._trace_fields[0] == (3,)
        w.data = torch.zeros(5)
        assert adapter._trace_fields[0] == (5,)


def test_an_optimizer_writing_through_p_data_is_still_seen():
    """An optimizer of the older style (``p.data.add_(...)``) changes the values through
    ``.data``: the change stays in the trace (on the detached view of the parameter)."""

    class DataSGD(torch.optim.Optimizer):
        def __init__(self, params, lr):
            super().__init__(params, {"lr": lr})

        @torch.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    p.data.add_(p.grad, alpha=-group["lr"])

    trace, _ = _train(DataSGD)
    changed = [record for record in trace.tensors.values()
               if [change.op for change in record.versions] == ["add_"]]
    assert len(changed) == 3 * 4  # a fresh p.data per parameter and step


def test_a_step_written_in_the_program_is_seen_at_its_own_line():
    """A program's own optimizer is wrapped in torch's record_function as torch's are: its
    in-place change is reported at the line inside its step() that made it (the walk for
    the line starts past the bridge's own frames, one more inside a step)."""

    class PlainSGD(torch.optim.Optimizer):
        def __init__(self, params, lr):
            super().__init__(params, {"lr": lr})

        @torch.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    p.add_(p.grad, alpha=-group["lr"])  # the line of the change

    trace, _ = _train(PlainSGD)
    sites = {change.site.code.strip() for record in trace.tensors.values()
             if record.is_parameter for change in record.versions}
    assert sites == {'p.add_(p.grad, alpha=-group["lr"])  # the line of the change'}
