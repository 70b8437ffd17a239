"""What a listener asks of the engine (events.py): sites only when it wants them
(``Listener.wants_sites``), and the events it hears -- a method that is not Listener's
no-op -- told with their arguments, the others skipped with what building them costs
(the fast in-place update, the fast backward step). What a listener is told does not
depend on which path the engine took."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad
from tracegrad.autograd import events
from tracegrad.autograd.views import InplaceInfo


class _Ops(events.Listener):
    """Hears the forward ops (and so, a subclass, wants sites unless it says otherwise)."""

    def __init__(self) -> None:
        self.nodes: list = []

    def on_op(self, node, inputs, outputs) -> None:
        self.nodes.append(node)


class _OpsWithoutSites(_Ops):
    wants_sites = False


def _subscribed_flags(listener) -> tuple:
    with events.subscribe(listener):
        return events.sites, events.untracked, events.steps


def test_a_bare_listener_asks_for_nothing_and_a_subclass_for_sites():
    assert _subscribed_flags(events.Listener()) == (False, False, False)
    assert _subscribed_flags(_Ops()) == (True, False, False)
    assert _subscribed_flags(_OpsWithoutSites()) == (False, False, False)
    assert (events.sites, events.untracked, events.steps) == (False, False, False)


def test_the_events_a_listener_hears_are_found_on_the_instance_too():
    class Untracked(events.Listener):
        def on_untracked_op(self, name, args, outputs, grad_enabled) -> None:
            pass

    class Arrays(events.Listener):
        def on_node_end_arrays(self, node, grads_out, duration_ns) -> None:
            pass

    class Accumulated(events.Listener):
        def on_accumulate(self, tensor, grad) -> None:
            pass

    assert _subscribed_flags(Untracked())[1:] == (True, False)
    assert _subscribed_flags(Arrays())[1:] == (False, True)
    assert _subscribed_flags(Accumulated())[1:] == (False, True)
    bare = events.Listener()
    bare.on_node_start = lambda node, grads: None  # a method set on the instance
    assert _subscribed_flags(bare)[2] is True
    # several listeners: what any of them asks for
    with events.subscribe(events.Listener()), events.subscribe(Untracked()):
        assert (events.sites, events.untracked, events.steps) == (True, True, False)


def test_sites_are_noted_for_a_listener_that_wants_them_only():
    x = tracegrad.ones(3, requires_grad=True)
    wanting, not_wanting = _Ops(), _OpsWithoutSites()
    with events.subscribe(wanting):
        y = x * 2.0  # the line the site names
    with events.subscribe(not_wanting):
        z = x * 2.0
    assert wanting.nodes == [y.grad_fn] and not_wanting.nodes == [z.grad_fn]
    assert y.grad_fn._site.code == "y = x * 2.0  # the line the site names"
    assert y.grad_fn._site.file.endswith("test_events_asks.py")
    assert z.grad_fn._site is None
    with events.subscribe(events.Listener()):
        w = x * 2.0
    assert w.grad_fn._site is None
    # anomaly mode notes sites whatever listens
    with pytest.warns(UserWarning), tracegrad.autograd.detect_anomaly():
        with events.subscribe(_OpsWithoutSites()):
            v = x * 2.0
    assert v.grad_fn._site is not None


class _Changes(events.Listener):
    def __init__(self) -> None:
        self.changes: list = []

    def on_inplace(self, info: InplaceInfo) -> None:
        self.changes.append((info.tensor, info.op_name, info.node, info.inputs, info.base,
                             info.previous_edge, info.version, info.original, info.views))


class _ChangesAndUntracked(_Changes):
    def __init__(self) -> None:
        super().__init__()
        self.untracked: list = []

    def on_untracked_op(self, name, args, outputs, grad_enabled) -> None:
        self.untracked.append((name, grad_enabled, [output.tolist() for output in outputs]))


def _optimizer_step(listener) -> tuple:
    """An optimizer's update and zero_grad under ``listener``: the weights after, and what
    it was told of the changes."""
    w = tracegrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (w * w).sum().backward()
    with events.subscribe(listener), tracegrad.no_grad():
        w -= 0.5 * w.grad
        w *= 2.0
        w.grad.zero_()
    return w, listener


def test_an_update_takes_its_fast_path_unless_the_listener_hears_untracked_ops():
    fast_w, fast = _optimizer_step(_Changes())
    slow_w, slow = _optimizer_step(_ChangesAndUntracked())
    # The same values and the same in-place events either way.
    assert fast_w.tolist() == slow_w.tolist() == [0.0, 0.0, 0.0]
    assert fast_w.grad.tolist() == slow_w.grad.tolist() == [0.0, 0.0, 0.0]
    assert [change[1:2] + change[5:7] for change in fast.changes] == \
        [change[1:2] + change[5:7] for change in slow.changes] == [
            ("sub_", (None, 0), 1), ("mul_", (None, 0), 2), ("zero_", (None, 0), 1)]
    for fast_change, slow_change in zip(fast.changes, slow.changes):
        assert fast_change[2] is None and slow_change[2] is None  # no node recorded
        assert len(fast_change[3]) == len(slow_change[3]) == 1  # the tensor itself
        assert fast_change[7:] == slow_change[7:] == (None, ())
    # only the listener that hears untracked ops got the ops' out-of-place results
    assert [name for name, _, _ in slow.untracked] == ["MulBackward0", "SubBackward0",
                                                       "MulBackward0", "ZeroBackward0"]
    assert all(not grad_enabled for _, grad_enabled, _ in slow.untracked)


class _Failures(events.Listener):
    def __init__(self) -> None:
        self.errors: list = []

    def on_error(self, error, node) -> None:
        self.errors.append((type(error), node.name()))


class _Breaks(tracegrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("broken backward")


def test_a_listener_that_hears_no_step_still_hears_the_error():
    x = tracegrad.ones(2, requires_grad=True)
    failures = _Failures()
    with events.subscribe(failures):
        loss = _Breaks.apply(x * 2.0).sum()
        with pytest.raises(ValueError, match="broken backward"):
            loss.backward()
    assert failures.errors == [(ValueError, "_BreaksBackward")]


def test_a_listener_hearing_steps_is_told_every_node_in_the_fast_paths_order():
    x = tracegrad.tensor([1.0, 2.0], requires_grad=True)
    b = tracegrad.tensor([0.5, 0.5])
    seen = []

    class Steps(events.Listener):
        def on_node_start_arrays(self, node, grads_in) -> None:
            seen.append(("start", node.name(), [None if g is None else g.tolist()
                                                for g in grads_in]))

        def on_node_end_arrays(self, node, grads_out, duration_ns) -> None:
            assert duration_ns >= 0
            seen.append(("end", node.name(), [None if g is None else g.tolist()
                                              for g in grads_out]))

        def on_node_start(self, node, grads_in) -> None:
            seen.append(("start", node.name(), [g.tolist() for g in grads_in]))

    y = (x * b + b).sum()
    with events.subscribe(Steps()):
        y.backward()
    assert seen == [
        ("start", "SumBackward0", [1.0]), ("end", "SumBackward0", [[1.0, 1.0]]),
        ("start", "AddBackward0", [[1.0, 1.0]]), ("end", "AddBackward0", [[1.0, 1.0], None]),
        ("start", "MulBackward0", [[1.0, 1.0]]), ("end", "MulBackward0", [[0.5, 0.5], None]),
        ("start", "torch::autograd::AccumulateGrad", [[0.5, 0.5]])]
    np.testing.assert_allclose(x.grad.numpy(), [0.5, 0.5])


class _ChangesWithSites(_Changes):
    def __init__(self) -> None:
        super().__init__()
        self.sites: list = []

    def on_inplace(self, info: InplaceInfo) -> None:
        super().on_inplace(info)
        self.sites.append(info.site)


class _ChangesWithoutSites(_ChangesWithSites):
    wants_sites = False


def test_increment_version_is_told_as_an_unrecorded_inplace_change():
    # (it once called on_inplace with the arguments of an older protocol: any listener
    # made it raise TypeError)
    w = tracegrad.ones(2, requires_grad=True) * 2.0
    node = w.grad_fn
    with events.subscribe(events.Listener()):
        tracegrad.autograd.graph.increment_version(w)  # a listener that hears nothing
    wanting, not_wanting = _ChangesWithSites(), _ChangesWithoutSites()
    with events.subscribe(wanting):
        tracegrad.autograd.graph.increment_version([w])  # the line the site names
    with events.subscribe(not_wanting):
        tracegrad.autograd.graph.increment_version(w)
    assert w._version == 3 and w.grad_fn is node  # the graph is unchanged
    for listener, version in ((wanting, 2), (not_wanting, 3)):
        assert listener.changes == [(w, "increment_version", None, (w,), w, (None, 0),
                                     version, None, ())]
    assert wanting.sites[0].code == "tracegrad.autograd.graph.increment_version([w])  " \
        "# the line the site names"
    assert not_wanting.sites == [None]


class _Scaled(tracegrad.nn.Module):
    def forward(self, x):
        return x * 2.0


def test_a_module_scope_is_noted_with_the_sites_only():
    x = tracegrad.ones(2, requires_grad=True)
    model = tracegrad.nn.Sequential(_Scaled())
    wanting, not_wanting = _Ops(), _OpsWithoutSites()
    with events.subscribe(wanting):
        model(x)
    with events.subscribe(not_wanting):
        model(x)
    assert [node._module for node in wanting.nodes] == ["0"]
    assert [node._module for node in not_wanting.nodes] == [None]
