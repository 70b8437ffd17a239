"""The one hook through which the engine reports what it does: a typed listener.

The engine knows nothing of the tracer. At each event site it runs::

    listener = events.listener
    if listener is not None:
        listener.on_op(node, args, outputs)

-- one check when nobody listens, and a direct method call when someone does (no event
names looked up by string). ``events.listener`` is None, the one subscribed ``Listener``,
or a ``FanOut`` that calls each subscriber in turn. ``subscribe`` returns a handle that
removes the listener (use it in a ``finally`` or a ``with``).

Both engines speak this protocol: tracegrad's calls it directly, and the PyTorch bridge
makes the same calls from torch's hooks, so the recorder does not know which engine ran.
"""

from __future__ import annotations

import threading


class Listener:
    """What a listener can be told. Every method is a no-op here: override what you need.
    (Which methods a listener overrides is looked at when it subscribes: the engine may
    skip building an event nobody overrides, and take its faster path -- see ``steps``
    and ``untracked`` below.)

    ``wants_sites``: whether the engine notes, while this listener listens, where each node
    was made (``node._site``: the user's source line; ``node._module``) and where each
    in-place change happened (``InplaceInfo.site``, the version history the
    "modified by an inplace operation" error reads). Finding the line walks up the Python
    stack for every op, the largest part of what a listener costs the engine
    (bench/bench_trace.py (a), (b)), so it is noted only for a listener that wants it:
    every subclass does, unless it sets ``wants_sites = False``; the base class, which
    hears nothing, does not. (Anomaly mode notes sites whatever listens.)
    """

    @property
    def wants_sites(self) -> bool:
        return type(self) is not Listener

    def on_op(self, node, inputs, outputs) -> None:
        """A node was recorded in forward: ``inputs`` are the op's arguments (tensors and
        plain values, in call order), ``outputs`` its output tensors. The keyword arguments
        of the call (a built-in op's attributes: ``dim``, ``shape``, ...; a Function's
        keywords that forward takes as such) are ``node._call_kwargs``, a mapping (empty
        when there were none): ``type(node)._function.apply(*inputs, **node._call_kwargs)``
        makes the same op again."""

    def on_tensor(self, tensor, kind: str) -> None:
        """A tensor was made outside an op (``kind``: "factory", or "data" when it was
        made from Python data or an array: ``tensor()``, ``as_tensor()``, ``from_numpy()``)."""

    def on_detach(self, source, result, kind: str) -> None:
        """``result`` holds ``source``'s values outside the graph (``kind``: "detach",
        "data", "detach_"): no node links them, so no gradient flows back through here."""

    def on_untracked_op(self, name: str, args, outputs, grad_enabled: bool) -> None:
        """An op ran without building a node: grad mode was off (``grad_enabled`` False,
        e.g. under ``no_grad``) or no input required grad. ``name`` is the grad_fn name the
        op would have had, ``args`` its arguments, ``outputs`` its output tensors."""

    def on_value_out(self, tensor, kind: str, value) -> None:
        """``tensor``'s values left the graph as plain data (``kind``: "item", "tolist",
        "numpy"); ``value`` is what the program got."""

    def on_grad_reset(self, tensor) -> None:
        """``tensor.grad`` was set to None (``zero_grad()``, ``t.grad = None``, ``del``)."""

    def on_inplace(self, info) -> None:
        """A tensor was modified in place; ``info`` (autograd.views.InplaceInfo) says all a
        record of it needs, the first time: ``tensor``, ``op_name``, ``node`` (the node the
        graph recorded -- the tensor's new grad_fn, or a view's base's CopySlices -- or
        None), ``inputs`` (the op's arguments, the tensor first), ``base`` (the tensor whose
        history changed), ``previous_edge`` (base's (grad_fn, output_nr) before), ``version``
        (after the bump), ``site`` (the user's line), ``original`` (the clone the node saved
        as the tensor's old value, or None) and ``views`` (views whose grad_fn was
        regenerated)."""

    def on_inplace_refused(self, tensor, op_name: str) -> None:
        """An in-place op on a leaf that requires grad (or a view of one) is about to raise
        InplaceError."""

    def on_backward_start(self, info) -> None:
        """``backward()``/``autograd.grad()`` started (``info``: engine.PassInfo)."""

    def on_node_start(self, node, grads_in: tuple) -> None:
        """The engine is about to run ``node``'s backward."""

    def on_node_end(self, node, grads_out: tuple, duration_ns: int) -> None:
        """``node``'s backward finished."""

    def on_node_start_arrays(self, node, grads_in: tuple) -> None:
        """``on_node_start`` with the gradients as the backend arrays (or None) they are:
        what a pass without create_graph tells for a built-in op's node that has no hooks
        (nothing wraps the arrays as Tensors unless a listener wants them). This default
        tells ``on_node_start`` with them wrapped, when a subclass overrides it."""
        if type(self).on_node_start is not Listener.on_node_start:
            self.on_node_start(node, _as_tensors(grads_in))

    def on_node_end_arrays(self, node, grads_out: tuple, duration_ns: int) -> None:
        """``on_node_end`` with the gradients as arrays (see ``on_node_start_arrays``)."""
        if type(self).on_node_end is not Listener.on_node_end:
            self.on_node_end(node, _as_tensors(grads_out), duration_ns)

    def on_hook(self, node, kind: str, hook, changed: bool) -> None:
        """A hook fired (``kind``: "tensor", "pre", "post", "retain_grad", "post_accumulate")."""

    def on_accumulate(self, tensor, grad) -> None:
        """A gradient was accumulated into a leaf's ``.grad``."""

    def on_backward_end(self, info, error) -> None:
        """Backward finished (``error``: the exception, or None)."""

    def on_error(self, error, node) -> None:
        """The engine raised while running ``node``."""


def _as_tensors(arrays: tuple) -> tuple:
    """Arrays (or None) as the Tensors the engine wraps gradients in for its listeners."""
    from ..tensor import Tensor  # (at call time: the engine's modules import this one)

    wrap = Tensor._wrap
    return tuple(None if array is None else wrap(array, False) for array in arrays)


_EVENT_NAMES = tuple(name for name in vars(Listener) if name.startswith("on_"))


class FanOut(Listener):
    """Several listeners at once: each event goes to each of them, in subscription order."""

    def __init__(self, listeners: tuple) -> None:
        self.listeners = listeners
        # Bound methods per event, looked up once: an event costs one loop, no getattr.
        for event in _EVENT_NAMES:
            methods = tuple(getattr(item, event) for item in listeners)
            setattr(self, event, _fan(methods))


def _fan(methods: tuple):
    def call(*args) -> None:
        for method in methods:
            method(*args)

    return call


# The listener the engine calls, or None. Replaced (never mutated) under _lock, so a reader
# sees either the old or the new value, never a half-built one.
listener: Listener | None = None
listeners: tuple = ()
# What the subscribed listeners ask of the engine beyond the calls, decided when one
# subscribes or leaves (read by the engine while a listener listens):
# ``sites``: some listener wants sites (``Listener.wants_sites``);
# ``untracked``: some listener hears ``on_untracked_op`` -- else an optimizer's update
#   (``w -= lr * w.grad`` under no_grad) keeps its fast in-place path, which has no
#   out-of-place result to tell of (_methods/inplace.py);
# ``steps``: some listener hears the backward steps (``on_node_start``/``on_node_end``,
#   their ``_arrays`` forms, ``on_accumulate``) -- else each node runs on the engine's fast
#   path, unwrapped and untimed (engine._execute).
# A listener "hears" an event when its method is not Listener's no-op: telling it costs
# a call, and building the event's arguments more (bench/bench_trace.py (a), (b)).
sites: bool = False
untracked: bool = False
steps: bool = False
_lock = threading.Lock()
_STEP_EVENTS = ("on_node_start", "on_node_start_arrays", "on_node_end", "on_node_end_arrays",
                "on_accumulate")


def _hears(subscribers: tuple, names) -> bool:
    """Whether some subscriber overrides one of the events ``names`` (looked up on the
    instance, so a method set on it counts too)."""
    for item in subscribers:
        for name in names:
            method = getattr(item, name)
            if getattr(method, "__func__", None) is not getattr(Listener, name):
                return True
    return False


def _publish(new: tuple) -> None:
    global listener, listeners, sites, untracked, steps
    listeners = new
    # (the flags first: a reader that sees the new listener sees what it asks for)
    sites = any(item.wants_sites for item in new)
    untracked = _hears(new, ("on_untracked_op",))
    steps = _hears(new, _STEP_EVENTS)
    listener = None if not new else new[0] if len(new) == 1 else FanOut(new)


class Subscription:
    """What ``subscribe`` returns: ``remove()`` (or leaving the ``with``) unsubscribes."""

    def __init__(self, subscriber: Listener) -> None:
        self.listener = subscriber

    def remove(self) -> None:
        with _lock:
            if self.listener in listeners:
                _publish(tuple(item for item in listeners if item is not self.listener))

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info) -> None:
        self.remove()


def subscribe(subscriber: Listener) -> Subscription:
    """Start telling ``subscriber`` what the engine does; returns the handle to stop."""
    if not isinstance(subscriber, Listener):
        raise TypeError(
            f"events.subscribe expects a tracegrad.autograd.events.Listener, got "
            f"{type(subscriber).__name__}. Hint: subclass Listener and override the on_* "
            "methods you need.")
    with _lock:
        _publish(listeners + (subscriber,))
    return Subscription(subscriber)
