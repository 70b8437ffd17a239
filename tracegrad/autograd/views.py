"""Views and in-place operations, the way PyTorch does them.

A view (``x.view(4)``, ``x[0]``, ``x.t()``, ...) shares its base's storage and version
counter; ``view._base`` is the root base, never a view itself. An in-place op on a tensor:

* records a node whose first edge is the tensor's *prior* edge (its old grad_fn), then the
  tensor takes that node as its grad_fn -- no snapshot of the old data joins the graph
  (a node whose backward needs the old value saves a clone, PyTorch's ``original_self``);
* on a view, rebases the *base's* history instead: the base gets a ``CopySlices`` node that
  wraps the op's node and routes the view's part of the gradient through it;
* bumps the shared version counter, which refreshes every live view of the storage: each
  gets a new grad_fn (``AsStridedBackward0`` over the base), as PyTorch regenerates a
  view's grad_fn once its version moved.

PyTorch forbids some of it, and so do we, with its words: in-place on a leaf or a view of
a leaf that requires grad, on views from multi-output ops (split/unbind/chunk), on views
made under no_grad and modified with grad mode on, on views returned by custom Functions.

>>> import tracegrad as torch
>>> x = torch.ones(4, requires_grad=True)
>>> base = x * 1
>>> row = base.view(2, 2)[0]
>>> _ = row.mul_(3)
>>> base.grad_fn, row.grad_fn
(<CopySlices object>, <AsStridedBackward0 object>)
>>> base.sum().backward()
>>> x.grad
tensor([3., 3., 1., 1.])
"""

from __future__ import annotations

import weakref

import numpy as np

from .. import backends
from ..errors import AutogradError, DTypeError, InplaceError, ShapeError, describe_tensor
from . import events
from . import node as _node_module
from .grad_mode import inference_flags, state
from .inference import INFERENCE_COUNTER
from .node import Node, SavedTensor, VersionCounter, _sequence

# How a view was made (PyTorch's CreationMeta): what an in-place op through it may do.
DEFAULT = 0
NO_GRAD_MODE = 1  # made while grad mode was off
MULTI_OUTPUT_NODE = 2  # one of several views an op returned (split, unbind, chunk)
IN_CUSTOM_FUNCTION = 3  # returned by a custom Function
INFERENCE_MODE = 4  # made inside inference_mode() (of a normal tensor: autograd/inference.py)

Tensor = None  # tracegrad.tensor.Tensor, bound by bind_tensor_class (import order)
_ops = None  # tracegrad.ops.shape, bound on first use (the ops import this module's users)
_ndarray = np.ndarray
_NO_EDGE = (None, 0)
_weakref = weakref.ref


def bind_tensor_class(cls) -> None:
    global Tensor
    Tensor = cls


def _note_site(node) -> None:
    from .function import _note_site as note

    note(node)


def _shape_ops():
    global _ops
    if _ops is None:
        from ..ops import shape

        _ops = shape
    return _ops


# -- making views --------------------------------------------------------------------
def share_storage(base, view, multi_output: bool = False) -> None:
    """Make ``view`` a view of ``base``: same storage, same version counter, same root.

    Called once per output of a view op, so it is kept short: a floating-point view is
    registered with the counter (a weak reference) so that an in-place change can refresh
    its grad_fn later; other dtypes never have one.
    """
    counter = base._counter
    if counter is None:
        counter = base._counter = VersionCounter()
    view._counter = counter
    root = base._base
    if root is None:
        root = base
    view._base = root
    if not state.grad_enabled:
        view._creation = INFERENCE_MODE if inference_flags.entered and state.inference \
            else NO_GRAD_MODE
        if root._requires_grad:
            # PyTorch: such a view reports requires_grad=True (its base requires grad) but
            # has no edge to the graph -- gradients flowing into it go nowhere.
            view._requires_grad = True
            view._grad_from_base = True
    elif multi_output:
        view._creation = MULTI_OUTPUT_NODE
    elif base._creation:  # a view of a view inherits how the first one was made
        view._creation = base._creation
    if view._array.dtype.kind == "f":
        views = counter.views
        if views is None:
            counter.views = [_weakref(view)]
        else:
            views.append(_weakref(view))
            if not len(views) & 63:  # every 64 views, drop the dead ones (amortized)
                views[:] = [ref for ref in views if ref() is not None]


def base_requires_grad_changed(base) -> None:
    """``base.requires_grad_()`` on a root with views: as in PyTorch, a view that has no
    grad_fn of its own now requires grad because its base does (with no edge to it)."""
    wanted = base._requires_grad
    for view in live_views(base._version_counter):
        if view.__dict__.get("grad_fn") is None and view._array.dtype.kind == "f" and (
                view._grad_from_base or not view._requires_grad):
            view._requires_grad = wanted
            view._grad_from_base = wanted


def live_views(counter) -> list:
    """The views still alive that share ``counter``, oldest first."""
    views = counter.views
    if not views:
        return []
    alive = []
    kept = []
    for reference in views:
        view = reference()
        if view is not None:
            alive.append(view)
            kept.append(reference)
    counter.views = kept
    return alive


# -- the geometry of a view inside its base's storage ----------------------------------
def _address(array) -> int:
    if array.__class__ is _ndarray:
        return array.__array_interface__["data"][0]
    return array.data.ptr  # cupy


def _storage_start(array) -> int:
    """The lowest address an array touches (its storage start, for a root base)."""
    start = _address(array)
    for size, stride in zip(array.shape, array.strides):
        if size == 0:
            return _address(array)
        if stride < 0:
            start += (size - 1) * stride
    return start


def geometry(tensor, root=None) -> tuple:
    """``(size, stride, storage_offset)`` of ``tensor`` in its root base's storage, in
    elements, as PyTorch's ``t.size(), t.stride(), t.storage_offset()`` give them."""
    if root is None:
        root = tensor._base if tensor._base is not None else tensor
    array = tensor._array
    itemsize = array.itemsize
    offset = (_address(array) - _storage_start(root._array)) // itemsize
    return (tuple(array.shape), tuple(stride // itemsize for stride in array.strides), offset)


def extent(*geometries) -> int:
    """Elements of storage that every one of ``geometries`` fits in."""
    needed = 0
    for size, stride, offset in geometries:
        if 0 in size:
            continue
        last = offset + sum((count - 1) * step for count, step in zip(size, stride))
        needed = max(needed, last + 1)
    return needed


def strided(storage, geometry_: tuple):
    """The view of a 1-D ``storage`` array that ``geometry_`` describes."""
    size, stride, offset = geometry_
    itemsize = storage.itemsize
    xp = backends.array_module(storage)
    return xp.lib.stride_tricks.as_strided(
        storage[offset:], shape=size, strides=tuple(step * itemsize for step in stride))


def overlaps(geometry_: tuple) -> bool:
    """Whether two positions of the view share one storage element (PyTorch's "internal
    overlap", as an expanded tensor has): a stride of 0 on a dimension longer than 1."""
    size, stride, _ = geometry_
    return any(step == 0 and count > 1 for count, step in zip(size, stride))


# -- checks before an in-place op -------------------------------------------------------
def _node_label(node) -> str:
    """A node's name as PyTorch's view messages print it: ``Unbind`` for UnbindBackward0."""
    name = node.name()
    cut = name.rfind("Backward")
    return name[:cut] if cut > 0 else name


def view_error(view, indirect: bool) -> str:
    """PyTorch's message for an in-place change its view's creation forbids: the head says
    which view (by its grad_fn, when it has one), the tail why it is forbidden."""
    modified = "its base or another view of its base has been" if indirect else "is being"
    creation = view._creation
    node = view.__dict__.get("grad_fn")
    # (a view made in inference mode: PyTorch's words for it, else those for no_grad)
    mode, now, block = ("inference mode", "in normal mode", "inference_mode") \
        if creation == INFERENCE_MODE else ("no_grad mode", "with grad mode enabled", "no_grad")
    if node is None:
        head = f"A view was created in {mode} and {modified} modified inplace {now}."
    elif creation == NO_GRAD_MODE or creation == INFERENCE_MODE:
        head = (f"Output {view._output_nr} of {_node_label(node)} is a view of a view which "
                f"was created in {mode} and {modified} modified inplace {now}.")
    else:
        head = (f"Output {view._output_nr} of {_node_label(node)} is a view and {modified} "
                "modified inplace.")
    if creation == MULTI_OUTPUT_NODE:
        tail = (" This view is the output of a function that returns multiple views. Such "
                "functions do not allow the output views to be modified inplace. You should "
                "replace the inplace operation by an out-of-place one.")
    elif creation == IN_CUSTOM_FUNCTION:
        tail = (" This view was created inside a custom Function (or because an input was "
                "returned as-is) and the autograd logic to handle view+inplace would override "
                "the custom backward associated with the custom Function, leading to "
                "incorrect gradients. This behavior is forbidden. You can fix this by cloning "
                "the output of the custom Function.")
    else:
        tail = (" Given that this use case is ambiguous and error-prone, it is forbidden. You "
                "can clarify your code by moving both the view and the inplace either both "
                f"inside the {block} block (if you don't want the inplace to be tracked) or both "
                "outside (if you want the inplace to be tracked).")
    return head + tail + f" (the view: {describe_tensor(view)}, of {_describe_base(view)})"


def _describe_base(view) -> str:
    base = view._base
    label = f"'{base.name}' " if base.name else ""
    return f"a base {label}{describe_tensor(base)}"


def leaf_message(tensor, op_name: str, view: bool = False, tense: str = "is being") -> str:
    """PyTorch's in-place-on-a-leaf message, naming the tensor, with a hint."""
    target = tensor._base if view else tensor
    label = f"'{target.name}' " if target.name else ""
    what = "a view of a leaf Variable" if view else "a leaf Variable"
    return (
        f"{what} that requires grad {tense} used in an in-place operation. Tensor: "
        f"{label}{describe_tensor(target)}, operation: {op_name}. Hint: wrap the update in "
        "`with tracegrad.no_grad():` (as an optimizer step does), or use an out-of-place op"
        + (" on a clone of the leaf." if view else "."))


def check_inplace(tensor, op_name: str, tense: str = "is being") -> None:
    """PyTorch's ``check_inplace``: run before an in-place op that the graph records."""
    base = tensor._base
    if base is None:
        if tensor.grad_fn is None and tensor._requires_grad:
            _refused(tensor, op_name)
            raise InplaceError(leaf_message(tensor, op_name, tense=tense))
        return
    if tensor._creation != DEFAULT:
        raise InplaceError(view_error(tensor, indirect=False))
    if base.grad_fn is None and base._requires_grad:
        _refused(base, op_name)
        raise InplaceError(leaf_message(tensor, op_name, view=True))


def _refused(tensor, op_name: str) -> None:
    listener = events.listener
    if listener is not None:
        listener.on_inplace_refused(tensor, op_name)


def check_result(tensor, array, op_name: str, one_value: bool = False) -> None:
    """The op's result must fit the tensor it is written into: same shape (no broadcasting
    to a bigger one), a dtype the tensor can hold, and storage written once per element
    (unless ``one_value``: an op writing one number everywhere, as ``fill_(2)`` and
    ``zero_()``, may write into an expanded view, as PyTorch lets it)."""
    target = tensor._array
    if array.shape == target.shape and array.dtype is target.dtype and \
            0 not in target.strides:
        return  # the common case, in three comparisons
    if array.shape != target.shape:
        raise ShapeError(
            f"output with shape {list(target.shape)} doesn't match the broadcast shape "
            f"{list(array.shape)} ({op_name} on {describe_tensor(tensor)}). Hint: an in-place "
            "op keeps the tensor's shape; use the out-of-place op to broadcast.")
    if array.dtype != target.dtype and array.dtype.kind == "f" and target.dtype.kind != "f":
        from .._dtype import scalar_type_name

        raise DTypeError(
            f"result type {scalar_type_name(array.dtype)} can't be cast "
            f"to the desired output type {scalar_type_name(tensor._array.dtype)} ({op_name} on "
            f"{describe_tensor(tensor)}). Hint: convert the tensor with .float() first.")
    if not one_value:
        check_no_overlap(tensor)


def check_no_overlap(tensor) -> None:
    array = tensor._array
    for size, stride in zip(array.shape, array.strides):
        if stride == 0 and size > 1:
            raise AutogradError(
                "unsupported operation: more than one element of the written-to tensor "
                "refers to a single memory location. Please clone() the tensor before "
                f"performing the operation. (writing into {describe_tensor(tensor)}, an "
                "expanded view)")


_OVERLAP_MESSAGE = (
    "unsupported operation: some elements of the input tensor and the written-to tensor "
    "refer to a single memory location. Please clone() the tensor before performing the "
    "operation.")


def _dense(array) -> bool:
    """PyTorch's ``is_non_overlapping_and_dense``: the elements fill one block of storage
    without gaps, in some order of the dimensions (positive strides only)."""
    expected = array.itemsize
    for stride, size in sorted(zip(array.strides, array.shape)):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True


def overlap_status(written, read) -> str:
    """PyTorch's ``get_overlap_status`` of two arrays: "full" (the same elements in the same
    layout), "partial" (some shared memory otherwise), "none", or "too hard" (a layout with
    gaps, which PyTorch does not look into)."""
    if written is read:
        return "full"
    if not written.size or not read.size:
        return "none"
    xp = backends.array_module(written)
    if read.__class__ is not written.__class__ or not xp.may_share_memory(written, read):
        return "none"  # a bounds check: different storages answer here, cheaply
    if not (_dense(written) and _dense(read)):
        return "too hard"
    begin, other = _address(written), _address(read)
    end, other_end = begin + written.nbytes, other + read.nbytes
    if begin == other and end == other_end:
        same = written.strides == read.strides and written.itemsize == read.itemsize
        return "full" if same else "partial"
    return "partial" if begin < other_end and other < end else "none"


def check_no_partial_overlap(tensor, source, array=None) -> None:
    """PyTorch's ``assert_no_partial_overlap`` before an in-place op writes ``tensor``
    (or ``array``, the part of it being written) from ``source``: reading an element the
    same op has already overwritten would give an order-dependent result, so it refuses."""
    written = tensor._array if array is None else array
    if overlap_status(written, source._array) == "partial":
        raise AutogradError(_overlap_message(tensor, source))


def check_no_any_overlap(tensor, source) -> None:
    """PyTorch's ``assert_no_overlap`` (``index_put_``): the values may not share memory
    with the tensor written at all."""
    if overlap_status(tensor._array, source._array) in ("full", "partial"):
        raise AutogradError(_overlap_message(tensor, source))


# In-place ops whose PyTorch kernels read a tensor argument's value before writing
# (fill_ and friends take a 0-dim value) or are not TensorIterator kernels (the matrix
# products, masked_scatter_): PyTorch runs no overlap check for them.
_NO_OVERLAP_CHECK = frozenset({
    "fill_", "masked_fill_", "index_fill_", "masked_scatter_",
    "addmm_", "addmv_", "addbmm_", "baddbmm_"})


def _check_overlap(tensor, op_name: str, source, attrs: dict) -> None:
    """The memory-overlap check PyTorch's kernel for ``op_name`` makes on ``source``."""
    if op_name in _NO_OVERLAP_CHECK:
        return
    if "index" in attrs and op_name in ("index_put_", "__setitem__"):
        check_no_any_overlap(tensor, source)
    elif op_name != "__setitem__" or source._array.ndim:  # x[i] = 0-dim value is fill_
        check_no_partial_overlap(tensor, source)


def _overlap_message(tensor, source) -> str:
    return (f"{_OVERLAP_MESSAGE} (writing into {describe_tensor(tensor)} from "
            f"{describe_tensor(source)}, which shares its memory. Hint: write from "
            "source.clone().)")


# -- rebasing history ---------------------------------------------------------------------
def edge_of(tensor) -> tuple:
    """The (node, input_nr) a consumer of ``tensor`` would point to, or (None, 0)."""
    node = tensor.grad_fn
    if node is not None:
        return node, tensor._output_nr
    if tensor._requires_grad:
        return tensor._grad_accumulator(), 0
    return _NO_EDGE


def rebase_history(tensor, node, output_nr: int = 0) -> None:
    """After an in-place op recorded ``node``, make it the history of what changed.

    A plain tensor takes ``node`` as its grad_fn. A view leaves its own grad_fn to the
    refresh that follows the version bump; its base takes a CopySlices node wrapping
    ``node`` -- the base is what really changed.
    """
    base = tensor._base
    if base is None:
        _move_retained(tensor, node, output_nr)
        tensor.grad_fn = node
        tensor._output_nr = output_nr
        tensor._requires_grad = True
        return
    copy_slices = CopySlices(base, tensor, node, output_nr)
    _move_retained(base, copy_slices, 0)
    base.grad_fn = copy_slices
    base._output_nr = 0
    base._requires_grad = True


def _move_retained(tensor, new_node, output_nr: int) -> None:
    """``retain_grad()`` follows the tensor's value: after an in-place op, ``.grad`` is the
    gradient of the new value, so the retaining entry moves to the new grad_fn."""
    if not tensor._retains_grad:
        return
    old_node = tensor.grad_fn
    if old_node is not None and old_node._retained:
        entry = old_node._retained.get(tensor._output_nr)
        if entry is not None and entry() is tensor:
            del old_node._retained[tensor._output_nr]
    if new_node._retained is None:
        new_node._retained = {}
        new_node._hooked = True
    new_node._retained[output_nr] = weakref.ref(tensor)


_regenerated: list = []  # the views the last refresh gave a new grad_fn (for the listener)


def refresh(counter) -> None:
    """The version moved: give each live view its grad_fn anew, as PyTorch does lazily.

    A view whose creation forbids it (multi-output, no_grad, custom Function) is marked so
    that the next use of its grad_fn raises PyTorch's error, as PyTorch raises on access.
    """
    global _regenerated
    _regenerated = regenerated = []
    for view in live_views(counter):
        base = view._base
        if view.__class__ in _POISONED_CLASSES:
            continue
        node = view.__dict__.get("grad_fn")
        if node is None and not base._requires_grad:
            continue  # nothing to regenerate: neither side is part of a graph
        if view._creation != DEFAULT:
            poison(view, view_error(view, indirect=True))
            continue
        regenerate(view)
        regenerated.append(view)


_node_module.refresh_views = refresh


def regenerate(view) -> None:
    """``view.grad_fn = AsStridedBackward0(base)``: the view's value read off its base's
    current history."""
    base = view._base
    node_class = _shape_ops().AsStrided._node_class
    node = node_class.__new__(node_class)
    node._seq = next(_sequence)
    node.next_functions = (edge_of(base),)
    node.needs_input_grad = (True, False, False, False)
    node._arg_slots = (0,)
    node._num_args = 4
    base_array = base._array
    node._input_meta = ((base_array.shape, base_array.dtype),)
    node.size, node.stride, node.storage_offset = geometry(view, base)
    node.input_geometry = geometry(base, base)
    array = view._array
    node._output_meta = ((array.shape, array.dtype, backends.device_of(array)),)
    if state.anomaly or events.sites:
        _note_site(node)
    _move_retained(view, node, 0)
    view.grad_fn = node
    view._output_nr = 0
    view._requires_grad = True


# Views whose grad_fn may no longer be used: their class is swapped for a subclass whose
# grad_fn property raises (PyTorch raises when such a view's grad_fn is read). The hot
# paths read ``tensor.grad_fn`` as a plain attribute, so this costs them nothing.
_POISONED_CLASSES: dict = {}
_poisoned_for: dict = {}


def poison(view, message: str) -> None:
    cls = view.__class__
    poisoned = _poisoned_for.get(cls)
    if poisoned is None:
        def grad_fn(self):
            raise InplaceError(self._poison_message)

        def set_grad_fn(self, value):
            self.__dict__["grad_fn"] = value

        def representation(self):
            stand_in = Tensor._wrap(self._array, False)
            stand_in.grad_fn = _INVALID
            return repr(stand_in)

        poisoned = type(cls.__name__, (cls,), {
            "grad_fn": property(grad_fn, set_grad_fn), "__repr__": representation,
            "__module__": cls.__module__, "__qualname__": cls.__qualname__})
        _poisoned_for[cls] = poisoned
        _POISONED_CLASSES[poisoned] = cls
    view._poison_message = message
    view.__class__ = poisoned


class _Invalid:
    """What a view whose grad_fn may not be used prints as (``grad_fn=<Invalid>``)."""

    @staticmethod
    def name() -> str:
        return "Invalid"


_INVALID = _Invalid()


class CopySlices(Node):
    """The base's grad_fn after an in-place op on one of its views (PyTorch's CopySlices).

    Backward takes the gradient of the whole base, runs the wrapped op's backward on the
    view's part of it, puts the result back in that part, and passes the op's gradients for
    its other inputs on. ``next_functions`` is the base's prior edge, then the op's other
    edges.
    """

    _name = "torch::autograd::CopySlices"  # PyTorch's name(); the class name stays

    def __init__(self, base, view, fn: Node, output_nr: int = 0) -> None:
        super().__init__()
        self._fn = fn
        self._fn_output = output_nr
        self._base_geometry = geometry(base, base)
        self._view_geometry = geometry(view, base)
        self.next_functions = (edge_of(base),) + tuple(fn.next_functions[1:])
        array = base._array
        self._output_meta = ((array.shape, array.dtype, backends.device_of(array)),)
        self._saved = fn._saved  # released with this node, shown as saved by it
        self._site = fn._site
        self._module = fn._module

    def _backward(self, grads: list) -> tuple:
        grad = grads[0]
        ops = _shape_ops()
        fn = self._fn
        view_grad = ops.StridedRead.apply(grad, self._base_geometry, self._view_geometry)
        fn_grads = [None] * max(1, len(fn._output_meta))
        fn_grads[self._fn_output] = view_grad
        results = fn._backward(fn_grads)
        grad_base = None
        if self.next_functions[0][0] is not None:
            part = results[0] if results else None
            if part is None:
                part = Tensor._wrap(grad._xp.zeros((), dtype=grad._array.dtype), False)
            grad_base = ops.StridedScatter.apply(grad, part, self._base_geometry,
                                                 self._view_geometry, False)
        return (grad_base,) + tuple(results[1:])


# -- the in-place op itself ----------------------------------------------------------------
def _recording(tensor, args) -> bool:
    if not state.grad_enabled:
        return False
    if tensor._requires_grad:
        return True
    for arg in args:
        if isinstance(arg, Tensor) and arg._requires_grad:
            return True
    return False


def apply_inplace(tensor, op_name: str, op, args: tuple, attrs: dict):
    """``tensor.<op_name>(*args)``: ``op`` computes the new value, which is written into
    ``tensor``'s storage; recorded as PyTorch records an in-place op."""
    for arg in args:
        if arg.__class__ is Tensor or isinstance(arg, Tensor):
            _check_overlap(tensor, op_name, arg, attrs)
    if not _recording(tensor, args):
        result = op.apply(tensor, *args, **attrs)
        check_result(tensor, result._array, op_name, getattr(op, "writes_one_value", False))
        _write(tensor, result._array)
        after_inplace(tensor, op_name)
        return tensor
    check_inplace(tensor, op_name)
    from .function import wire

    inputs = (tensor,) + args
    node, array = wire(op, inputs, attrs)
    if array.__class__ is tuple:
        array = array[0]
    elif array.__class__ is not _ndarray and isinstance(array, np.generic):
        array = np.asarray(array)
    check_result(tensor, array, op_name)  # recorded: torch refuses its backward, tracegrad the write
    saved = _save_inputs(node, tensor, op)
    previous = edge_of(tensor._base if tensor._base is not None else tensor)
    _write(tensor, array)
    if tensor._counter is INFERENCE_COUNTER:  # refused (outside inference mode) as PyTorch
        INFERENCE_COUNTER.bump(op_name)  # does: after the write, before history changes
    node._output_meta = ((tensor._array.shape, tensor._array.dtype,
                          backends.device_of(tensor._array)),)
    if state.anomaly or events.sites:
        _note_site(node)
    rebase_history(tensor, node)
    after_inplace(tensor, op_name, node, inputs, previous, saved, op.saves_output)
    return tensor


def _save_inputs(node, tensor, op):
    """Saved tensors of an in-place op's node, made before the tensor changes.

    The first save of the tensor itself is its old value: a clone, as PyTorch's
    ``original_self`` (a CloneBackward0 node ties it to the old history, so double backward
    works). A second save of it (``y.mul_(y)``) saves the tensor at its old version, which
    fails in backward -- as in PyTorch. Returns the clone, or None.
    """
    to_save = node._to_save
    node._to_save = ()
    if not to_save:
        node._saved = ()
        return None
    original = None
    saved = []
    for value in to_save:
        if value is tensor and original is None:
            original = _original_value(tensor)
            saved.append(SavedTensor(original, node, False))
        elif isinstance(value, Tensor):
            saved.append(SavedTensor(value, node, False))
        else:
            saved.append(value)
    node._saved = tuple(saved)
    return original


def _original_value(tensor):
    from .function import wire

    ops = _shape_ops()
    if not tensor._requires_grad:
        return Tensor._wrap(tensor._array.copy(), False)
    clone_node, array = wire(ops.Clone, (tensor,), {})
    clone_node._output_meta = ((array.shape, array.dtype, backends.device_of(array)),)
    original = Tensor._wrap(array, True)
    original.grad_fn = clone_node
    return original


def _write(tensor, array) -> None:
    target = tensor._array
    if array is not target:
        try:
            target[...] = array
        except ValueError:  # read-only: an expanded view (only one-value writes get here)
            if 0 not in target.strides:
                raise
            _write_expanded(tensor, array)


def _write_expanded(tensor, array) -> None:
    """Write ``array`` (one value everywhere: ``fill_``/``zero_``) into an expanded view,
    whose NumPy array is read-only: through a writable alias of the storage it shares with
    its base, one element per stride-0 dimension."""
    target = tensor._array
    collapse = tuple(slice(0, 1) if stride == 0 else slice(None) for stride in target.strides)
    corner = target[collapse]
    root = tensor._base._array if tensor._base is not None else None
    if root is None or root.__class__ is not _ndarray or not root.flags.writeable or \
            not root.flags.c_contiguous:
        raise AutogradError(
            f"fill_/zero_ into {describe_tensor(tensor)}, an expanded view whose storage "
            "tracegrad cannot write through (not implemented). Hint: write into the tensor "
            "that was expanded instead.")
    offset = corner.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    alias = _ndarray(corner.shape, corner.dtype, buffer=root, offset=offset,
                     strides=corner.strides)
    alias[...] = array[collapse]


class InplaceInfo:
    """What a listener learns about an in-place change (``Listener.on_inplace``).

    tensor         the tensor changed in place (a view, or not)
    op_name        "add_", "__setitem__", a custom Function's name for mark_dirty, ...
    node           the node recorded for it: the tensor's new grad_fn, or for a view the
                   base's new CopySlices; None when the graph did not record it
    inputs         the op's arguments, the tensor first (tensors and plain values)
    base           the tensor whose history changed: ``tensor``, or the view's base
    previous_edge  ``base``'s (grad_fn, output_nr) before the change ((None, 0) if none)
    version        the version counter's value after the change
    site           the user's line (or None)
    original       the clone saved for backward as the tensor's old value, or None
    views          live views whose grad_fn was regenerated by this change
    """

    __slots__ = ("base", "inputs", "node", "op_name", "original", "previous_edge", "site",
                 "tensor", "version", "views")

    def __init__(self, tensor, op_name, node, inputs, base, previous_edge, version, site,
                 original, views) -> None:
        self.tensor, self.op_name, self.node, self.inputs = tensor, op_name, node, inputs
        self.base, self.previous_edge, self.version = base, previous_edge, version
        self.site, self.original, self.views = site, original, views


def after_inplace(tensor, op_name: str, node=None, inputs=(), previous=_NO_EDGE,
                  original=None, saves_output: bool = False) -> None:
    """Bump the version (refreshing the views), save the op's output if it saves one, and
    tell the listener."""
    if node is None and events.listener is None and not state.anomaly:
        counter = tensor._counter  # the common unrecorded case (an optimizer step): one bump
        if counter is None:
            counter = tensor._counter = VersionCounter()
        counter.bump(op_name)
        return
    site, regenerated = bump_version(tensor, op_name)
    if saves_output and node is not None:
        node._saved = node._saved + (SavedTensor(tensor, node, True),)
    if events.listener is not None:
        notify_inplace(tensor, op_name, node, inputs, previous, site, original, regenerated)


def bump_version(tensor, op_name: str) -> tuple:
    """Bump ``tensor``'s version counter (shared with its views, whose grad_fn is refreshed);
    returns ``(site, regenerated views)``, the site only while someone wants it."""
    global _regenerated
    site = None
    if state.anomaly or events.sites:
        from .site import user_site

        site = user_site(3)
    _regenerated = []
    tensor._version_counter.bump(op_name, site)
    regenerated = tuple(_regenerated)
    _regenerated = []
    return site, regenerated


def notify_inplace(tensor, op_name: str, node, inputs, previous, site, original,
                   regenerated) -> None:
    """Tell the listener about an in-place change (``node``: the op's node, or None)."""
    listener = events.listener
    if listener is None:
        return
    base = tensor._base if tensor._base is not None else tensor
    recorded = None
    if node is not None:
        recorded = base.grad_fn
    listener.on_inplace(InplaceInfo(
        tensor, op_name, recorded, tuple(inputs) or (tensor,), base, previous,
        tensor._version_counter.value, site, original, regenerated))
