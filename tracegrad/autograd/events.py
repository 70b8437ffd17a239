"""The one hook through which the engine reports what it does.

The engine knows nothing of the tracer. At each event site it runs
``if listeners: emit(...)`` -- one truthiness check when nobody listens. A listener is an
object with any of the methods below; ``subscribe`` returns a handle to remove it in a
``finally``.

Events, with their payloads:
    on_op(node, inputs, outputs)               a node was recorded in forward
    on_tensor(tensor, kind)                    a tensor was made outside an op (factory)
    on_inplace(tensor, op_name, site)          a tensor was modified in place (its version was
                                               bumped; tensor.grad_fn is the new node when the
                                               graph recorded it; site: the user's line)
    on_inplace_refused(tensor, op_name)        an in-place op on a leaf that requires grad (or a
                                               view of one) is about to raise InplaceError
    on_backward_start(pass_info)               backward()/autograd.grad() started
    on_node_start(node, grads_in)              the engine is about to run node's backward
    on_node_end(node, grads_out, duration_ns)  it finished
    on_hook(node, kind, hook, changed)         a hook fired
    on_accumulate(tensor, grad)                a gradient was accumulated into a leaf's .grad
    on_backward_end(pass_info, error)          backward finished (error: exception or None)
    on_error(error, node)                      the engine raised while running node
"""

from __future__ import annotations

listeners: list = []

# event name -> the bound methods that handle it, for the listeners in _methods_for. Looking
# methods up once per event name, not once per emit, is most of what emitting costs.
_methods: dict[str, tuple] = {}
_methods_for: list = []


def _forget_methods() -> None:
    # Also drops the bound methods, so an unsubscribed listener is not kept alive here.
    _methods.clear()
    _methods_for[:] = listeners


class _Subscription:
    def __init__(self, listener) -> None:
        self.listener = listener

    def remove(self) -> None:
        try:
            listeners.remove(self.listener)
        except ValueError:
            pass
        _forget_methods()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.remove()


def subscribe(listener) -> _Subscription:
    listeners.append(listener)
    _forget_methods()
    return _Subscription(listener)


def emit(event: str, *args) -> None:
    if _methods_for != listeners:  # someone edited the list directly
        _forget_methods()
    methods = _methods.get(event)
    if methods is None:
        methods = _methods[event] = tuple(
            method for listener in listeners
            if (method := getattr(listener, event, None)) is not None)
    for method in methods:
        method(*args)


def wants_sites() -> bool:
    """Whether anyone needs the source site of each node (the tracer or anomaly mode)."""
    for listener in listeners:
        if getattr(listener, "wants_sites", False):
            return True
    return False
