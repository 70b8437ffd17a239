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
one requires grad (set inside inference mode); a Python number given to add/sub/mul/div
counts as a normal tensor (torch wraps it), so ``c * 2`` is recorded (function.py).

Not as in torch (not implemented):
- a gradient accumulated by backward inside inference mode is an inference tensor, as in
  torch, but a later backward outside adds into it without torch's in-place refusal;
- torch reads a version from ``c[0]`` of an inference tensor ``c`` that requires grad
  (indexing from Python); tracegrad raises as for any view of it;
- ``2 - c`` of an inference tensor requiring grad is RsubBackward1 here, SubBackward0 in
  torch (torch decomposes rsub there).
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
