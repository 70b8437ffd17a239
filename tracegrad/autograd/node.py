"""Nodes of the backward graph (what ``tensor.grad_fn`` points to) and saved tensors.

Also the per-thread state the engine and the saved-tensor hooks share: which node this
thread's backward is running (``running``), and the stack of default saved-tensor hooks
(``torch.autograd.graph.saved_tensors_hooks``).
"""

from __future__ import annotations

import itertools
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Self

from .._layout import laid_out_as_variable, obeys_layout_contract
from ..errors import AutogradError, InplaceError
from . import events
from .grad_mode import state

_sequence = itertools.count()
_handle_ids = itertools.count()
Tensor = None  # tracegrad.tensor.Tensor, bound by function.bind_tensor_class (import order)


class _Running(threading.local):
    """What this thread's backward is doing: ``node`` (the node whose backward runs, kept
    only in anomaly mode) and ``task`` (the engine's current GraphTask), None outside."""

    node = None
    task = None


running = _Running()


# The in-place changes a version counter remembers with their sites: the latest ones. A
# training loop under record() bumps its parameters every step, for as long as it runs.
HISTORY_LIMIT = 64


class VersionHistory(list):
    """A counter's ``(version, op name, Site)`` entries, the latest HISTORY_LIMIT or so;
    ``dropped_through`` is the version of the latest entry let go (0: none), so that a
    reader can tell a complete account of the changes since a version from a partial one."""

    __slots__ = ("dropped_through",)

    def __init__(self) -> None:
        super().__init__()
        self.dropped_through = 0

    def add(self, version: int, op_name: str, site) -> None:
        if len(self) >= HISTORY_LIMIT:  # the older half goes: amortized one entry a bump
            dropped = HISTORY_LIMIT // 2
            self.dropped_through = self[dropped - 1][0]
            del self[:dropped]
        self.append((version, op_name, site))


def changes_since(history, version: int) -> tuple[list, bool]:
    """``(changes, complete)``: the entries of ``history`` (a VersionHistory, a plain
    list, or None) after ``version``, and whether none of those was let go."""
    if not history:
        return [], True
    changes = [entry for entry in history if entry[0] > version]
    return changes, getattr(history, "dropped_through", 0) <= version


class VersionCounter:
    """Shared by a tensor and all its views; bumped by every in-place op.

    ``history`` is filled only while sites are wanted (tracing or anomaly mode), so the
    version error can say which in-place op changed the tensor and where: the latest
    changes (a VersionHistory, bounded: see HISTORY_LIMIT). ``views`` holds
    weak references to the views of the storage (autograd/views.py): a bump refreshes
    their grad_fn, as PyTorch regenerates a view's grad_fn when its version moved.
    """

    __slots__ = ("history", "last_op", "value", "views")

    def __init__(self) -> None:
        self.value = 0
        self.last_op = None
        self.history = None  # VersionHistory of (version, op name, Site) when recorded
        self.views = None  # list of weakref(view), made by the first view

    def bump(self, op_name: str, site=None) -> None:
        self.value += 1
        self.last_op = op_name
        if site is not None:
            if self.history is None:
                self.history = VersionHistory()
            self.history.add(self.value, op_name, site)
        if self.views:
            refresh_views(self)


def refresh_views(counter: VersionCounter) -> None:
    """Replaced by autograd/views.py when it loads (it imports this module)."""


class HookDict(dict):
    """Hooks by handle id, in registration order; a dict that a weak reference can point to
    (as PyTorch's OrderedDict of hooks), so a handle never keeps its hooks alive."""

    __slots__ = ("__weakref__",)


class RemovableHandle:
    """What ``register_hook`` and friends return (as ``torch.utils.hooks.RemovableHandle``):
    ``handle.remove()`` unregisters the hook; also a context manager.

    >>> import tracegrad as torch
    >>> x = torch.ones(2, requires_grad=True)
    >>> with x.register_hook(lambda grad: grad * 2):
    ...     (x * 1).sum().backward()
    >>> x.grad
    tensor([2., 2.])
    """

    def __init__(self, hooks_dict: HookDict, *, extra_dict=None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(_handle_ids)
        extras = () if extra_dict is None else (
            extra_dict if isinstance(extra_dict, (list, tuple)) else (extra_dict,))
        self.extra_dict_ref = tuple(weakref.ref(item) for item in extras)

    def remove(self) -> None:
        for reference in (self.hooks_dict_ref, *self.extra_dict_ref):
            hooks = reference()
            if hooks is not None:
                hooks.pop(self.id, None)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info) -> None:
        self.remove()


def add_hook(hooks: HookDict, hook: Callable) -> RemovableHandle:
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


# -- default saved-tensor hooks (torch.autograd.graph.saved_tensors_hooks) ------------------
class _SavedHooksState(threading.local):
    """The per-thread stack of (pack, unpack) pairs, and the message that forbids them
    (``disable_saved_tensors_hooks``)."""

    def __init__(self) -> None:
        self.stack: list[tuple[Callable, Callable]] = []
        self.disabled_message: str | None = None


saved_hooks = _SavedHooksState()
# How many saved_tensors_hooks contexts are open in all threads together: saving a tensor
# (every op that saves one) reads this module global first, and the thread-local stack
# only when it is non-zero.
hooks_in_use = 0
_hooks_in_use_lock = threading.Lock()


def push_saved_tensors_hooks(pack_hook: Callable, unpack_hook: Callable) -> None:
    global hooks_in_use
    message = saved_hooks.disabled_message
    if message is not None:
        raise AutogradError(message)
    saved_hooks.stack.append((pack_hook, unpack_hook))
    with _hooks_in_use_lock:
        hooks_in_use += 1


def pop_saved_tensors_hooks() -> None:
    global hooks_in_use
    stack = saved_hooks.stack
    if not stack:
        return  # an extra __exit__ (PyTorch tolerates it too)
    stack.pop()
    with _hooks_in_use_lock:
        hooks_in_use -= 1


def snapshot_saved_tensors_hooks() -> tuple:
    return tuple(saved_hooks.stack), saved_hooks.disabled_message


def restore_saved_tensors_hooks(snapshot: tuple) -> None:
    """Put this thread's hooks back as a backward pass found them: as in PyTorch, whose
    engine runs each node under the thread-local state captured when backward started, a
    hook entered or left inside backward does not outlive it."""
    global hooks_in_use
    stack, message = snapshot
    current = saved_hooks.stack
    if len(current) != len(stack) or any(a is not b for a, b in zip(current, stack)):
        with _hooks_in_use_lock:
            hooks_in_use += len(stack) - len(current)
        current[:] = stack
    saved_hooks.disabled_message = message


def _pack_hook_error() -> InplaceError:
    return InplaceError(
        "A saved tensor pack hook is modifying its input in place. Tensors provided as "
        "input to pack hook cannot be modified by in-place operations as this can lead to "
        "unexpected side-effects. Please open an issue if you need to perform in-place "
        "operations on the input to a pack hook. Hint: return a modified copy from the "
        "pack hook instead (e.g. x * 2, not x *= 2).")


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    Unpacking checks the version and raises PyTorch's in-place error when it moved. A node
    that saves its own output keeps only the array and a weak reference back to itself
    (as PyTorch does), so output -> grad_fn -> saved output is not a reference cycle.

    With saved-tensor hooks (a ``saved_tensors_hooks`` context when it was saved, or
    ``register_hooks`` on ``grad_fn._raw_saved_<name>``), the pack hook decides what is
    kept and the unpack hook gives the tensor back; as in PyTorch, no version check is
    made then (the hooks own the value).
    """

    __slots__ = (
        "_array",
        "counter",
        "node_ref",
        "original",
        "output_nr",
        "packed",
        "producer",
        "requires_grad",
        "tensor",
        "version",
    )

    def __init__(self, tensor, node, is_output: bool) -> None:
        self._array = tensor._array
        self.counter = tensor._version_counter
        if self.counter.__class__ is not VersionCounter:  # an inference tensor's
            _refuse_inference(self.counter)
        self.version = self.counter.value
        self.output_nr = tensor._output_nr
        self.requires_grad = tensor._requires_grad
        # A saved input's producer is its grad_fn (None: a leaf). `packed` (what hooks keep
        # instead of the tensor) stays unset until hooks take the value over: this runs
        # for nearly every op, and the fast paths never read it.
        self.producer = None if is_output else tensor.grad_fn
        if is_output:
            self.tensor = None
            self.node_ref = weakref.ref(node)
            self.original = weakref.ref(tensor)
        else:
            self.tensor = tensor
            self.node_ref = None
            self.original = None
        if hooks_in_use and saved_hooks.stack:
            self._pack_with(saved_hooks.stack[-1], tensor)

    # -- hooks ---------------------------------------------------------------------------
    def _pack_with(self, hooks: tuple, tensor, accumulator=None) -> None:
        """Hand ``tensor`` to the pack hook (under no_grad, as PyTorch does) and keep what
        it returns instead of the tensor."""
        if accumulator is None and self.is_saved_leaf and self.requires_grad:
            accumulator = tensor._grad_accumulator()
        counter = self.counter
        version = counter.value
        previous, state.grad_enabled = state.grad_enabled, False
        try:
            packed = hooks[0](tensor)
        finally:
            state.grad_enabled = previous
        if counter.value != version:
            raise _pack_hook_error()
        self.packed = _Packed(packed, hooks[1], accumulator)
        self.tensor = None  # the pack hook decides what is kept
        self._array = None

    def register_hooks(self, pack_hook: Callable, unpack_hook: Callable) -> None:
        """Pack the saved tensor now with ``pack_hook``; ``unpack_hook`` gives it back in
        backward (``grad_fn._raw_saved_<name>.register_hooks(pack, unpack)``)."""
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError(
                f"register_hooks(): expected two callables (pack_hook, unpack_hook), got "
                f"{type(pack_hook).__name__} and {type(unpack_hook).__name__}.")
        if self._packed() is not None:
            raise AutogradError(
                "Calling register_hooks on a saved tensor whose hooks have already been set. "
                "Hint: only one pair of hooks is allowed at a time.")
        if self._array is None:
            raise AutogradError(
                "Calling register_hooks on a saved tensor after it has been freed. Saved "
                "intermediate values of the graph are freed when you call .backward() or "
                "autograd.grad(). Specify retain_graph=True if you need to backward through "
                "the graph a second time or if you need to access saved variables after "
                "calling backward.")
        # PyTorch hands the pack hook a detached alias of the saved value.
        alias = Tensor._wrap(self._array, False)
        alias._version_counter = self.counter
        accumulator = None
        if self.is_saved_leaf and self.requires_grad:
            original = self.source_tensor()
            if original is not None:
                accumulator = original._grad_accumulator()
        self._pack_with((pack_hook, unpack_hook), alias, accumulator)

    def _unpack_hooked(self, node, packed: _Packed):
        result = packed.unpack_hook(packed.value)
        if not isinstance(result, Tensor):
            raise TypeError(
                f"Output of saved tensor unpack_hook expected to be a Tensor but got result "
                f"of type {type(result).__name__} (a tensor saved by {node.name()}). Hint: "
                "the unpack hook must return the tensor the pack hook was given, rebuilt "
                "from what pack returned.")
        tensor = Tensor._wrap(result._array, self.requires_grad)
        tensor._version_counter = result._version_counter  # not the original's counter
        if self.requires_grad:
            if self.node_ref is not None:  # a saved output: its grad_fn is the saving node
                tensor.grad_fn, tensor._output_nr = node, self.output_nr
            elif self.producer is not None:
                tensor.grad_fn, tensor._output_nr = self.producer, self.output_nr
            elif packed.accumulator is not None:
                tensor._accumulator = packed.accumulator
        return tensor

    def _packed(self) -> _Packed | None:
        try:
            return self.packed
        except AttributeError:  # never packed (the slot is set only by hooks)
            return None

    # -- unpacking -----------------------------------------------------------------------
    @property
    def is_output(self) -> bool:
        return self.node_ref is not None

    @property
    def is_saved_leaf(self) -> bool:
        """A leaf saved as an input (its AccumulateGrad is where its gradient goes)."""
        return self.node_ref is None and self.producer is None

    def source_tensor(self):
        """The tensor that was saved (None if a saved output has since been collected, or
        once backward released it, or when hooks packed it)."""
        if self.tensor is not None:
            return self.tensor
        if self.original is None:  # an input saved by reference, released by backward
            return None
        return self.original()

    def unpack(self, node: Node):
        array = self._array  # read once: another thread's backward may release it
        if array is None:
            packed = self._packed()
            if packed is not None:
                return self._unpack_hooked(node, packed)
            raise AutogradError(_freed_message(node))
        if self.counter.value != self.version:
            raise InplaceError(self._version_message(node))
        tensor = self.tensor
        if tensor is not None:
            if self.producer is not None and tensor.grad_fn is None:
                raise AutogradError(
                    "Trying to use a saved tensor that has been detached in-place, i.e. with "
                    ".detach_().This is not supported, please use out-of-place `.detach()` "
                    f"instead. (The tensor was saved by {node.name()}.)")
            return tensor
        saved_by = self.node_ref()
        tensor = Tensor._wrap(array, self.requires_grad)
        tensor._version_counter = self.counter
        if saved_by is not None and self.requires_grad:
            tensor.grad_fn = saved_by
            tensor._output_nr = self.output_nr
        return tensor

    def _version_message(self, node: Node) -> str:
        """PyTorch's message, word for word, then what tracegrad adds: the in-place op and
        its line when they are known, and where the saving node was made."""
        from .._dtype import from_numpy_dtype

        producer = self.node_ref() if self.node_ref is not None else self._current_producer()
        what = f"[{_legacy_type_name(from_numpy_dtype(self._array.dtype))} " \
               f"{list(self._array.shape)}]"
        if producer is not None:
            what += f", which is output {self.output_nr} of {forward_op_name(producer)},"
        message = (
            "one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: {what} is at version {self.counter.value}; expected version "
            f"{self.version} instead.")
        if state.anomaly:
            message += (" Hint: the backtrace further above shows the operation that failed "
                        "to compute its gradient. The variable in question was changed in "
                        "there or anywhere later. Good luck!")
        else:
            message += (" Hint: enable anomaly detection to find the operation that failed to "
                        "compute its gradient, with torch.autograd.set_detect_anomaly(True, "
                        "check_nan=False).")
        culprit = self._culprit()
        if culprit:
            message += f" {culprit}"
        elif not state.anomaly:
            message += (" (tracegrad: under anomaly detection or tracegrad.record() it also "
                        "names the in-place operation and its line.)")
        if node._site is not None:
            message += f" The tensor was saved by {node.name()} created at {node._site}."
        return message

    def _current_producer(self):
        """A saved input's grad_fn now (an in-place op on it since gave it a new one), as
        PyTorch names it; the one it had when saved if the tensor is gone."""
        tensor = self.tensor
        if tensor is not None:
            return tensor.grad_fn
        return self.producer

    def _culprit(self) -> str:
        changes, complete = changes_since(self.counter.history, self.version)
        if changes:
            parts = [f"'{op}' at {site}" + (f" ({site.code})" if site.code else "")
                     for _, op, site in changes]
            if not complete:  # the first changes were let go: never name a wrong first
                return (f"It was modified by in-place operations whose lines tracegrad no "
                        f"longer keeps (it keeps the latest {HISTORY_LIMIT // 2} to "
                        f"{HISTORY_LIMIT}), then by " + ", then ".join(parts) + ".")
            return "It was modified by " + ", then ".join(parts) + "."
        if self.counter.last_op:
            return (f"The last in-place operation on it was '{self.counter.last_op}'. Hint: "
                    "run under tracegrad.autograd.detect_anomaly() or tracegrad.record() to "
                    "see the line that did it.")
        return ""

    def release(self) -> None:
        self._array = None
        self.tensor = None
        self.packed = None


# The input_nr tuples of nodes whose edges all lead to output 0 (nearly all): shared.
ZERO_NRS = tuple((0,) * count for count in range(8))


def edge_numbers(numbers: tuple) -> tuple:
    """``numbers`` (the input_nr of each edge), shared when all are 0."""
    if len(numbers) < 8 and not any(numbers):
        return ZERO_NRS[len(numbers)]
    return numbers


def saved_input(tensor) -> SavedTensor:
    """``SavedTensor(tensor, node, False)``: an input saved for backward. With saved-tensor
    hooks in use anywhere, the general constructor (which runs the pack hook) makes it;
    otherwise ``_saved_value`` writes its fields."""
    if hooks_in_use:
        return SavedTensor(tensor, None, False)
    return _saved_value(tensor)


def saved_inputs(values: tuple) -> tuple:
    """What a built-in op's forward saved (``ctx.save_for_backward``), as its node keeps
    it: a SavedTensor per tensor -- each an input of the op: its outputs do not exist yet
    while forward runs -- and None or plain values as they are.

    One call per recorded op that saves anything; two values (what binary ops save) are
    written out, without a list (bench/bench_engine.py (a))."""
    if hooks_in_use:
        return tuple(SavedTensor(value, None, False) if isinstance(value, Tensor) else value
                     for value in values)
    if len(values) == 2:
        first, second = values
        return (first if first is None else _saved_value(first),
                second if second is None else _saved_value(second))
    saved = []
    for value in values:
        saved.append(value if value is None else _saved_value(value))
    return tuple(saved)


def _saved_value(value):
    """A saved input as its node keeps it, with no saved-tensor hooks in use: a tensor's
    SavedTensor made field by field -- nearly every recorded op makes one, and the general
    constructor's call and branches cost as much as the fields (bench/bench_engine.py (a))
    -- and a plain value (a Python scalar operand) as it is."""
    if value.__class__ is not Tensor and not isinstance(value, Tensor):
        return value
    saved = _new_object(SavedTensor)
    saved._array = value._array
    counter = value._counter  # Tensor._version_counter's lines, inline
    if counter is None:
        counter = value._counter = VersionCounter()
    elif counter.__class__ is not VersionCounter:  # an inference tensor's (inference.py)
        _refuse_inference(counter)
    saved.counter = counter
    saved.version = counter.value
    saved.output_nr = value._output_nr
    saved.requires_grad = value._requires_grad
    saved.producer = value.grad_fn
    saved.tensor = value
    saved.node_ref = saved.original = None
    return saved


_new_object = object.__new__


def saved_pair_value(value):
    """What a node of an op that saves two values (see SavedPair) keeps for one of them,
    with no saved-tensor hooks in use: a tensor that is a leaf without grad at version 0
    as itself -- everything its SavedTensor would hold is known from that, so
    ``SavedPair`` makes the SavedTensor only when someone reads ``node._saved`` (the
    tracer, ``_saved_<name>``) -- anything else as ``_saved_value`` keeps it.

    Why: the SavedTensor of a constant operand (``y * w``) was the one object per product
    besides its node that a deep graph kept for the cyclic collector to walk at every full
    collection (bench/bench_engine.py (b), (c)), and making it a third of the product's
    saving work (bench/bench_engine.py (a)).
    """
    if value.__class__ is Tensor and value.grad_fn is None and not value._requires_grad:
        counter = value._counter
        if counter is None:  # made now, once per tensor: backward reads it on every use
            value._counter = VersionCounter()
            return value
        if counter.__class__ is VersionCounter and counter.value == 0:
            return value
    return _saved_value(value)


def _kept_input_saved(tensor) -> SavedTensor:
    """The SavedTensor of a tensor ``saved_pair_value`` kept as itself: what
    ``_saved_value`` made of it when it was saved (a leaf without grad at version 0)."""
    saved = _new_object(SavedTensor)
    saved._array = tensor._array
    saved.counter = tensor._version_counter  # (made now if it had none: then still at 0)
    saved.version = 0
    saved.output_nr = tensor._output_nr
    saved.requires_grad = False
    saved.producer = None
    saved.tensor = tensor
    saved.node_ref = saved.original = None
    return saved


def release_kept_inputs(node) -> None:
    """Backward's release (``retain_graph=False``) of the tensors a pair-saving node kept
    as themselves (``saved_pair_value``): each becomes ``FREED_INPUT``."""
    if node._saved0.__class__ is Tensor:
        node._saved0 = FREED_INPUT
    if node._saved1.__class__ is Tensor:
        node._saved1 = FREED_INPUT


def _freed_input() -> SavedTensor:
    saved = _new_object(SavedTensor)
    saved._array = saved.tensor = saved.producer = saved.node_ref = saved.original = None
    saved.counter = VersionCounter()  # its own, never bumped: nothing is watched through it
    saved.version = saved.output_nr = 0
    saved.requires_grad = False
    return saved


def _refuse_inference(counter) -> None:
    """PyTorch's SavedVariable check: an inference tensor (one holding the inference
    counter) is never saved for backward."""
    from .inference import INFERENCE_COUNTER, refuse_saving  # (it imports this module)

    if counter is INFERENCE_COUNTER:
        refuse_saving()


class _Packed:
    """What saved-tensor hooks keep in place of the tensor: the pack hook's result, the
    unpack hook, and a saved leaf's AccumulateGrad (so the unpacked tensor still leads
    there in double backward)."""

    __slots__ = ("accumulator", "unpack_hook", "value")

    def __init__(self, value, unpack_hook: Callable, accumulator) -> None:
        self.value, self.unpack_hook, self.accumulator = value, unpack_hook, accumulator


class _AbsentSavedTensor:
    """What ``grad_fn._raw_saved_<name>`` gives where nothing was saved (PyTorch's
    default-constructed SavedVariable): hooks cannot be set on it."""

    def register_hooks(self, pack_hook: Callable, unpack_hook: Callable) -> None:
        raise AutogradError("Calling register_hooks on a saved tensor with value None is "
                            "forbidden")


def forward_op_name(node: Node) -> str:
    """The forward op a node belongs to, as PyTorch's version-counter message names it:
    ``name()`` less a ``Backward<digits>`` suffix, the digits kept unless they are 0.

    >>> forward_op_name(type("AddBackward0", (Node,), {"_name": "AddBackward0"})())
    'Add'
    """
    name = node.name()
    cut = name.rfind("Backward")
    if cut < 0 or not name[cut + 8:].isdigit() and name[cut + 8:] != "":
        return name
    suffix = name[cut + 8:]
    return name[:cut] + ("" if suffix in ("", "0") else suffix)


def _legacy_type_name(dtype) -> str:
    """``torch.FloatTensor`` for float32 (what ``Tensor.type()`` says), as the message
    prints it."""
    return {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor",
            "float16": "torch.HalfTensor", "bfloat16": "torch.BFloat16Tensor",
            "int64": "torch.LongTensor", "int32": "torch.IntTensor", "int16": "torch.ShortTensor",
            "int8": "torch.CharTensor", "uint8": "torch.ByteTensor",
            "bool": "torch.BoolTensor", "complex64": "torch.ComplexFloatTensor",
            "complex128": "torch.ComplexDoubleTensor"}.get(dtype.name,
                                                            dtype.name)


def _freed_message(node: Node) -> str:
    message = (
        "Trying to backward through the graph a second time (or directly access saved "
        "tensors after they have already been freed). Saved intermediate values of the graph "
        f"are freed when you call .backward() or autograd.grad(). Node: {node.name()}")
    if node._site is not None:
        message += f" created at {node._site}"
    message += (". Specify retain_graph=True if you need to backward through the graph a "
                "second time or if you need to access saved tensors after calling backward.")
    return message


def _saved_properties(function) -> dict:
    """``_saved_<name>`` and ``_raw_saved_<name>`` properties for a node class, from its
    op's ``saved_names``: ``"self"`` names the next saved slot, ``"dim=dims"`` shows the
    ctx attribute ``dims`` as ``_saved_dim``, and ``"self#"`` a slot that holds a Python
    number, shown as that number with no ``_raw_saved_`` (torch's saved Scalar, as
    ``(2 ** x).grad_fn._saved_self``)."""
    properties = {}
    slot = 0
    for entry in getattr(function, "saved_names", ()):
        name, _, attribute = entry.partition("=")
        if attribute:
            properties[f"_saved_{name}"] = property(_attribute_getter(attribute))
        elif name.endswith("#"):
            properties[f"_saved_{name[:-1]}"] = property(_number_getter(slot))
            slot += 1
        else:
            properties[f"_saved_{name}"] = property(_slot_getter(slot, name, raw=False))
            properties[f"_raw_saved_{name}"] = property(_slot_getter(slot, name, raw=True))
            slot += 1
    return properties


def _attribute_getter(attribute: str):
    def get(node):
        return getattr(node, attribute)

    return get


def _number_getter(slot: int):
    def get(node):
        return node._saved[slot] if slot < len(node._saved) else None

    return get


def _slot_getter(slot: int, name: str, raw: bool):
    def get(node):
        saved = node._saved[slot] if slot < len(node._saved) else None
        if type(saved) is SavedTensor:
            return saved if raw else saved.unpack(node)
        if saved is None:
            return _AbsentSavedTensor() if raw else None
        # A Python number operand (x * 2): PyTorch saves it as a 0-d tensor.
        if raw:
            raise AutogradError(
                f"{node.name()}._raw_saved_{name} is a Python number operand ({saved!r}), "
                "which tracegrad keeps as a plain value: it has no saved-tensor hooks.")
        from .. import _dtype
        from ..factories import tensor as make_tensor

        # torch's wrapped number: int64, float64, complex128 or bool, not the default dtype
        wrapped = {bool: _dtype.bool_, int: _dtype.int64, float: _dtype.float64,
                   complex: _dtype.complex128}.get(type(saved))
        return make_tensor(saved, dtype=wrapped) if wrapped is not None else make_tensor(saved)

    return get


_ONE_EDGE = object()  # _next1 of a node with one edge (see _EdgeNodes)
_TUPLE_EDGES = object()  # _next1 of a node whose _next_nodes is a tuple of its own


class _EdgeNodes:
    """``node._next_nodes`` of a node whose one or two edges are its ``_next0`` and
    ``_next1`` (``_ONE_EDGE`` there: one edge): a new tuple per read. A non-data
    descriptor, so a node given a tuple of its own (``node._next_nodes = ...``, with
    ``_next1`` set back to ``_TUPLE_EDGES``: any other number of edges, ``select_edges``,
    ``next_functions = ...``) reads that instead. (The engine's loops make the same read
    inline, without the call.)"""

    __slots__ = ()

    def __get__(self, node, owner=None):
        if node is None:
            return ()  # (the class attribute: no edges)
        second = node._next1
        if second is _ONE_EDGE:
            return (node._next0,)
        if second is _TUPLE_EDGES:  # never wired (a Function called under no_grad)
            return ()
        return (node._next0, second)


_NOT_SAVED = object()  # _saved0 of a node whose op has saved nothing (yet)


class SavedPair:
    """``node._saved`` of a node class whose op saves two values (``Mul``: self and
    other), kept as ``_saved0`` and ``_saved1``: a new tuple per read. Set on such classes
    by ``Op.__init_subclass__`` (function.py). A non-data descriptor, so a node given a
    tuple of its own (``node._saved = ...``: any other number of values, in-place ops,
    cleared tensors) reads that instead. Only ``_finish`` stores ``_saved0``, and nothing
    sets a ``_saved`` tuple on such a node after it: so the engine and
    ``OpNode.saved_tensors`` read ``_saved0`` directly (``_NOT_SAVED``: read ``_saved``),
    without this call, once per node of a backward pass.

    Why: the tuple was one of the objects per op the cyclic collector walks at each full
    collection of a deep graph (bench/bench_engine.py (b), (c)); see ``Node._next_nodes``.

    A slot may hold a Tensor: an input kept as itself (``saved_pair_value``), which this
    read turns into its SavedTensor, kept in the slot from then on (so hooks registered on
    ``_raw_saved_<name>`` stay with it); the engine's release replaces it with the shared,
    freed ``FREED_INPUT``. The direct readers (the engine, ``OpNode.saved_tensors``)
    take such a tensor as it is, after checking that it is still at version 0.
    """

    __slots__ = ()

    def __get__(self, node, owner=None):
        if node is None:
            return ()  # (the class attribute: nothing saved)
        first = node._saved0
        if first is _NOT_SAVED:
            return ()
        second = node._saved1
        if first.__class__ is Tensor:
            first = node._saved0 = _kept_input_saved(first)
        if second.__class__ is Tensor:
            second = node._saved1 = _kept_input_saved(second)
        return (first, second)


# What the engine's release leaves in a slot that held an input kept as itself: one
# SavedTensor for all such slots, freed (nothing mutates a freed SavedTensor: a second
# release writes the same Nones, register_hooks and unpack raise first).
FREED_INPUT = _freed_input()


class Node:
    """A function of the backward graph; ``tensor.grad_fn`` is one of these.

    ``next_functions`` holds one ``(node, input_nr)`` pair per differentiable input, in
    input order (``(None, 0)`` for an input that does not need grad).

    Hooks, as in PyTorch, run in this order when the node's backward runs: the hooks of
    its output tensors (``tensor.register_hook``, in the order the tensors got their first
    hook), then retain_grad, then the node's pre-hooks (``register_prehook``), the node
    itself, and its post-hooks (``register_hook``).
    """

    _name = "Node"
    _is_accumulate = False
    # Whether a backward pass without create_graph may hand this node backend arrays
    # (``_backward_arrays``) rather than Tensors (``_backward``): see engine._execute.
    _takes_arrays = False
    # Defaults live on the class so that making a node per op sets one attribute; an
    # instance attribute replaces a default only when it differs (they are never mutated).
    # The edges, flat: the node each leads to (None where no gradient flows) and its
    # input_nr, as two parallel tuples (``next_functions`` builds PyTorch's pairs from them
    # when asked). The numbers are interned. The node tuple is an instance attribute,
    # except on an op with one or two edges wired by ``_connect_pair``/``_connect_one``
    # (most recorded ops): that node keeps its nodes as ``_next0`` and ``_next1`` and
    # ``_EdgeNodes`` makes the tuple when it is read. Every object a node keeps is one
    # more for the cyclic garbage collector to walk at each full collection, and those
    # walks are what grows with a deep graph (bench/bench_engine.py (b), (c)): the tuple
    # was one of the three objects per op of the elementwise chain.
    _next_nodes = _EdgeNodes()  # (a node that sets _next_nodes reads its own)
    _next0 = None
    _next1 = _TUPLE_EDGES
    _next_nrs: tuple = ()
    _saved: tuple = ()  # (a SavedPair on the classes of ops that save two values)
    _saved0 = _saved1 = _NOT_SAVED
    _site = None
    _module = None
    _pre_hooks: HookDict | None = None  # fn(grad_outputs) -> new grad_outputs | None
    _post_hooks: HookDict | None = None  # fn(grad_inputs, grad_outputs) -> new | None
    _tensor_hooks: list | None = None  # [(output_nr, HookDict of fn(grad) -> grad | None)]
    _retained: dict | None = None  # output_nr -> weakref(tensor), for retain_grad
    _hooked = False  # any of the four above was ever set: the engine's one check per node
    _output_meta: tuple = ()  # (shape, numpy dtype, device) per output
    _freed_by: int | None = None  # index of the backward pass that freed the saved tensors
    _metadata: dict | None = None

    def __init__(self) -> None:
        self._seq = next(_sequence)
        self._next_nodes = ()  # (the class's _EdgeNodes reads _next0 and _next1)

    @property
    def metadata(self) -> dict:
        """A dict for the user's own notes on this node (anomaly mode keeps the forward
        traceback here, as PyTorch does)."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<{self._name.rpartition('::')[2]} object>"  # the class name, as in PyTorch

    @property
    def num_outputs(self) -> int:
        return len(self._output_meta)

    @property
    def next_functions(self) -> tuple:
        """One ``(node, input_nr)`` per differentiable input, ``(None, 0)`` where no
        gradient flows: a new tuple each time, as in PyTorch."""
        return tuple(zip(self._next_nodes, self._next_nrs))

    @next_functions.setter
    def next_functions(self, edges) -> None:
        self._next_nodes = tuple(node for node, _ in edges)
        self._next1 = _TUPLE_EDGES  # (the tuple, not _next0/_next1: see _EdgeNodes)
        self._next_nrs = edge_numbers(tuple(input_nr for _, input_nr in edges))

    def register_hook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs)`` runs after this node's backward; returning a
        tuple replaces ``grad_inputs`` (the gradients flowing on to ``next_functions``).

        >>> import tracegrad as torch
        >>> x = torch.ones(2, requires_grad=True)
        >>> y = x * 3
        >>> _ = y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0] * 0,))
        >>> y.sum().backward()
        >>> x.grad
        tensor([0., 0.])
        """
        if self._post_hooks is None:
            self._post_hooks = HookDict()
            self._hooked = True
        return add_hook(self._post_hooks, fn)

    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_outputs)`` runs before this node's backward; returning a tuple replaces
        ``grad_outputs`` (the gradients of this node's outputs)."""
        if self._pre_hooks is None:
            self._pre_hooks = HookDict()
            self._hooked = True
        return add_hook(self._pre_hooks, fn)

    def _register_hook_dict(self, output_nr: int, hooks: HookDict) -> None:
        """A tensor's hooks (``tensor.register_hook``) for output ``output_nr``: run before
        this node's backward, after the dicts registered earlier."""
        if self._tensor_hooks is None:
            self._tensor_hooks = []
            self._hooked = True
        self._tensor_hooks.append((output_nr, hooks))

    def _add_retains_grad(self, output_nr: int, tensor_ref) -> None:
        if self._retained is None:
            self._retained = {}
            self._hooked = True
        self._retained[output_nr] = tensor_ref

    def _backward(self, grads: list) -> tuple:
        """Gradients for each next_functions edge, given one gradient per output."""
        raise NotImplementedError

    def __call__(self, *grads):
        """Run this node's backward directly, as ``grad_fn(grad)`` does in PyTorch."""
        expected = max(1, len(self._output_meta))
        if len(grads) != expected:
            raise TypeError(f"{self.name()}: expected {expected} arguments, got {len(grads)} "
                            "instead (one gradient per output of the forward call).")
        outputs = self._backward(list(grads))
        return outputs[0] if len(outputs) == 1 else outputs

    def __init_subclass__(cls, **kwargs) -> None:
        # grad_fn._saved_<name> as properties made once per node class (a __getattr__
        # would slow every attribute read on every node).
        super().__init_subclass__(**kwargs)
        function = cls.__dict__.get("_function")
        if function is not None:
            for attribute, value in _saved_properties(function).items():
                setattr(cls, attribute, value)


_accumulate_lock = threading.Lock()
# References to a gradient that nobody else holds, as AccumulateGrad._backward sees it: the
# engine's list of gradients, the local `grad`, and getrefcount's own argument.
_STEALABLE_REFS = 3


class AccumulateGrad(Node):
    """The node of a leaf that requires grad: adds incoming gradients into ``.grad``.

    Then it runs the leaf's post-accumulate-grad hooks
    (``tensor.register_post_accumulate_grad_hook``), before the node's own post-hooks.
    """

    _name = "torch::autograd::AccumulateGrad"  # PyTorch's name(); the class name stays
    _is_accumulate = True
    _takes_arrays = True

    def __init__(self, variable) -> None:
        super().__init__()
        self.variable = variable
        self._output_meta = ((variable.shape, variable._array.dtype, variable.device),)

    def _backward(self, grads: list) -> tuple:
        grad = grads[0]
        variable = self.variable
        # A leaf whose requires_grad was switched off after the graph was built gets no
        # gradient (PyTorch's AccumulateGrad checks it the same way).
        if grad is None or not variable._requires_grad:
            return ()
        # Threads backpropagating into one shared leaf (Hogwild training) must not lose
        # an update between reading .grad and writing it.
        with _accumulate_lock:
            current = variable._grad
            if current is None:
                if state.grad_enabled:  # create_graph: a copy that keeps the graph
                    variable._grad = _recorded_copy(grad)
                elif not obeys_layout_contract(grad._array, variable._array):
                    variable._grad = Tensor._wrap(laid_out_as_variable(grad._array,
                                                                       variable._array), False)
                elif sys.getrefcount(grad) <= _STEALABLE_REFS and grad.grad_fn is None \
                        and not grad.requires_grad and _owns_unshared_memory(grad._array):
                    # Nobody else holds this gradient or its memory: keep it instead of a
                    # copy, as PyTorch does (so a post-accumulate hook that changes .grad
                    # in place changes what the node's post-hooks see, and no copy is made).
                    variable._grad = grad
                else:  # (a copy in the gradient's own layout, which obeys the contract)
                    variable._grad = Tensor._wrap(grad._array.copy(order="K"), False)
            elif state.grad_enabled:
                variable._grad = current + grad
            else:
                current._array += grad._array
                _bump_grad(current)
        hooks = variable._post_accumulate_grad_hooks
        if hooks:
            self._run_post_accumulate_hooks(variable, hooks)
        return ()

    def _backward_arrays(self, grads: list) -> tuple:
        """``_backward`` for a pass without create_graph: the gradient is a backend array,
        kept as the leaf's ``.grad`` when nothing else holds it, else copied or added."""
        grad = grads[0]
        variable = self.variable
        if grad is None or not variable._requires_grad:  # (see _backward)
            return ()
        with _accumulate_lock:  # (see _backward)
            current = variable._grad
            if current is None:
                # The references a gradient nobody else holds has here: the engine's list,
                # the local `grad`, the argument, getrefcount's own. Kept only if strided
                # as torch's gradient layout contract wants (tracegrad/_layout.py).
                if not obeys_layout_contract(grad, variable._array):
                    variable._grad = Tensor._wrap(laid_out_as_variable(grad, variable._array),
                                                  False)
                elif _owns_unshared_memory(grad, 4):
                    variable._grad = Tensor._wrap(grad, False)
                else:
                    variable._grad = Tensor._wrap(grad.copy(order="K"), False)
            else:
                current._array += grad
                _bump_grad(current)
        hooks = variable._post_accumulate_grad_hooks
        if hooks:
            self._run_post_accumulate_hooks(variable, hooks)
        return ()

    def _run_post_accumulate_hooks(self, variable, hooks: HookDict) -> None:
        listener = events.listener
        for hook in tuple(hooks.values()):
            result = hook(variable)
            if listener is not None:
                listener.on_hook(self, "post_accumulate", hook, False)
            if result is not None:
                if isinstance(result, Tensor):
                    raise AutogradError(
                        "Tensor post accumulate grad hooks should return None. (hook "
                        f"'{_hook_name(hook)}' on {variable._describe()} returned a tensor.) "
                        "Hint: update the tensor or its .grad in place instead.")
                raise TypeError(f"expected Variable, but hook returned "
                                f"'{type(result).__name__}'")


def _bump_grad(grad) -> None:
    """The version bump of PyTorch's in-place ``grad += new``: after the sum is written, so
    a ``.grad`` made inside inference mode (an inference tensor) has it when a backward
    outside then refuses to change it in place (autograd/inference.py)."""
    counter = grad._counter
    if counter is None:
        counter = grad._counter = VersionCounter()
    counter.bump("add_")


def _owns_unshared_memory(array, references: int = 3) -> bool:
    """The array owns its memory (not a view, whose base another tensor may hold or a
    later in-place accumulation would write through), is writable and contiguous (as
    PyTorch's layout contract asks of a gradient it keeps), and nothing else holds it:
    ``references`` counts the holders the caller knows of (by default the tensor's slot,
    the caller's argument, getrefcount's own)."""
    if array.base is not None or sys.getrefcount(array) > references:
        return False
    flags = array.flags
    return flags.c_contiguous and getattr(flags, "writeable", True)


def _recorded_copy(grad):
    """The first gradient of a leaf under create_graph: a copy that stays in the graph
    (PyTorch's CopyBackwards), so ``.grad`` never aliases a gradient flowing elsewhere."""
    from ..ops.arith import Copy

    empty = Tensor._wrap(grad._xp.empty_like(grad._array), False)
    return Copy.apply(empty, grad)


def _hook_name(hook) -> str:
    name = getattr(hook, "__name__", None)
    return name if isinstance(name, str) else "<unknown>"
