"""Inference tensors: what ``inference_mode()`` makes, as PyTorch makes them.

A tensor created inside ``inference_mode()`` (by an op, a factory, ``detach()``, ``.data``),
and any view of such a tensor, is an *inference tensor*: ``is_inference()`` is True, it has
no version counter (``._version`` raises), it cannot be saved for backward, and outside
inference mode it cannot be changed in place nor be made to require grad. A view made
inside inference mode of a normal tensor stays a normal tensor (it shares the base's
version counter).

The mark is the tensor's version counter: every inference tensor holds the one shared
``INFERENCE_COUNTER``, so views (which share their base's counter) inherit it for free,
``is_inference()`` is an identity test, and the places PyTorch checks are the places that
already touch the counter: the version bump of an in-place op (which runs after the
op wrote its result, as in PyTorch: the data has changed when the error is raised), and
the saving of a tensor for backward. Nothing is checked on an op's hot path but an
identity test where a counter is read anyway, and one plain attribute read
(``inference_flags.entered``) where a new tensor is made without grad.

As in torch, an op whose tensor inputs are all inference tensors records nothing even if
one requires grad (set inside inference mode): inference tensors have no autograd dispatch
key, so only an op with a normal tensor among its inputs reaches autograd's kernel. Two
consequences follow torch's own implementation (function.py):

- A Python number given to add/sub/mul/div/floor_divide (and ``div`` with a rounding mode)
  counts as a normal tensor: torch's Python binding wraps it (their ``.Tensor``
  overloads), so ``c * 2``, ``c // 2`` and ``2 // c`` are recorded.
- An op with a Scalar overload that torch computes by wrapping the number and calling
  another op (``Op.inference_overload``) records that other op, whose wrapped number is a
  normal tensor: ``2 - c`` (rsub.Scalar) is ``SubBackward0`` with the number's edge first,
  ``c % 2`` is ``RemainderBackward1``, ``torch.fmod(c, 2)`` is ``FmodBackward1``; when that
  op saves the inference tensor, the save is refused (``2 % c``, ``torch.xlogy(c, 2)``).
  ``2 ** c`` (pow.Scalar) fills a normal tensor through ``pow(..., out=)`` and is refused
  with torch's out= message, as are ``c.abs()``, ``c.mean()``, ``c.var()`` and ``c.std()``
  over every element (through ``sum``; ``var(dim)`` records nothing) and
  ``c.logsumexp(dim)``. ``c.clone()`` and ``c.to(dtype)`` (``double()``, ``type()``, ...)
  ``copy_`` into a new normal tensor: ``CopyBackwards``, whose edges are (None, c). Other
  reflected operators take no such turn: ``2 + c`` and ``2 * c`` are ``c.add(2)`` and
  ``c.mul(2)``; ``2 / c`` is ``reciprocal(c) * 2``.

A gradient accumulated by backward inside inference mode (into a leaf without ``.grad``) is
an inference tensor, as in torch; a later backward outside adds into it in place and then
refuses, as torch's version bump does (the sum is already written), unless it runs with
create_graph (which adds out of place). A ``.grad`` that is a normal tensor stays one.

Not as in torch (not implemented):
- advanced indexing of an inference tensor ``c`` that requires grad, with an index that
  Python indexing makes into a normal tensor: torch records IndexBackward0 for ``c[[0]]``,
  ``c[c > 0]`` and ``c[:, [1]]`` (yet not for ``c[0, [1, 2]]``); tracegrad records nothing,
  its index op getting arrays (tests/test_parity_inference.py).
"""

from __future__ import annotations

from ..errors import AutogradError
from .grad_mode import inference_flags, state
from .node import VersionCounter

INPLACE_MESSAGE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
    "clone to get a normal tensor before doing inplace update.See "
    "https://github.com/pytorch/rfcs/pull/17 for more details.")
SAVE_MESSAGE = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead "
    "of `torch.inference_mode()`.")
VERSION_MESSAGE = "Inference tensors do not track version counter."
def out_message(op_name: str) -> str:
    """torch's refusal of an out= op whose input requires grad (an inference tensor's
    Scalar overload that torch computes through out=: ``2 ** c`` is ``pow``)."""
    return (f"{op_name}(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad.")


REQUIRES_GRAD_MESSAGE = (
    "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")


class InferenceCounter(VersionCounter):
    """The "no version counter" of inference tensors: one object shared by all of them.

    Its value never moves and it never holds views (views of inference tensors are not
    tracked as views); bumping it is allowed only inside inference mode, where it does
    nothing, as PyTorch's ``VariableVersion::bump`` on a tensor without a counter.
    """

    __slots__ = ()

    def bump(self, op_name: str, site=None) -> None:
        if not state.inference:
            raise AutogradError(INPLACE_MESSAGE)


INFERENCE_COUNTER = InferenceCounter()


def creating_inference() -> bool:
    """Whether a tensor made now is an inference tensor (this thread is in inference
    mode). The first read is a plain attribute (no thread-local lookup) that is 0 unless
    some thread is inside ``inference_mode()``."""
    return bool(inference_flags.entered) and state.inference


def refuse_saving() -> None:
    """PyTorch's SavedVariable check: an inference tensor cannot be saved for backward."""
    raise AutogradError(SAVE_MESSAGE)
