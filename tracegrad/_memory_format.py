"""``torch.memory_format`` and its four values, as torch names them.

tracegrad keeps tensors strided as PyTorch does (a permuted tensor keeps its strides, and
ops lay their results out as PyTorch's do: see tracegrad/_layout.py), so ``contiguous_format``
and ``preserve_format`` mean what they mean in torch. The channels-last formats are not
implemented: asking for one raises NotImplementedError rather than silently giving a
row-major tensor (``is_contiguous(memory_format=torch.channels_last)`` still answers from
the strides, as torch does).
"""

from __future__ import annotations


class memory_format:  # noqa: N801 -- torch's name
    """The memory layout a tensor is asked to have (``torch.contiguous_format``, ...)."""

    __slots__ = ("_name",)
    __module__ = "tracegrad"

    def __new__(cls, *args, **kwargs):
        raise TypeError("cannot create 'torch.memory_format' instances")

    @classmethod
    def _make(cls, name: str) -> memory_format:
        value = object.__new__(cls)
        object.__setattr__(value, "_name", name)
        return value

    def __setattr__(self, name, value):
        raise AttributeError(f"'torch.memory_format' object attribute '{name}' is read-only")

    def __repr__(self) -> str:
        return f"torch.{self._name}"

    def __reduce__(self):  # pickles by name, so the four stay the only ones
        return self._name


contiguous_format = memory_format._make("contiguous_format")
preserve_format = memory_format._make("preserve_format")
channels_last = memory_format._make("channels_last")
channels_last_3d = memory_format._make("channels_last_3d")

_CHANNELS_LAST_RANK = {"channels_last": 4, "channels_last_3d": 5}


def check_memory_format(value, op_name: str, preserve: bool = True) -> None:
    """Refuse what torch refuses (not a memory_format: TypeError in torch's words; with
    ``preserve=False``, preserve_format, as ``contiguous()`` refuses it) and what tracegrad
    does not implement (the channels-last formats)."""
    if value is None or value is contiguous_format:
        return
    if not isinstance(value, memory_format):
        raise TypeError(f"{op_name}(): argument 'memory_format' must be torch.memory_format, "
                        f"not {type(value).__name__}")
    if value is preserve_format:
        if not preserve:
            raise RuntimeError(f"preserve memory format is unsupported by the {op_name} "
                               "operator")
        return
    raise NotImplementedError(
        f"{op_name}(memory_format={value!r}): tracegrad does not implement the channels-last "
        "memory formats. Hint: drop the memory_format argument; in PyTorch it changes only "
        "the layout in memory (and the speed), not any value.")


def is_contiguous_as(array, value) -> bool:
    """``Tensor.is_contiguous(memory_format=value)`` of an array, as torch answers it:
    channels-last contiguity from the strides (C fastest, then W, H, N; size-1 dimensions
    skipped), False for the wrong rank; row-major contiguity otherwise."""
    if value is None or value is contiguous_format or value is preserve_format:
        return bool(array.flags.c_contiguous)
    if not isinstance(value, memory_format):
        raise TypeError(f"is_contiguous(): argument 'memory_format' must be "
                        f"torch.memory_format, not {type(value).__name__}")
    rank = _CHANNELS_LAST_RANK[value._name]
    if array.ndim != rank:
        return False
    order = (1, 3, 2, 0) if rank == 4 else (1, 4, 3, 2, 0)
    expected = array.itemsize
    for dim in order:
        size = array.shape[dim]
        if size != 1:
            if array.strides[dim] != expected:
                return False
            expected *= size
    return True


def suggests_channels_last(array) -> bool:
    """Whether torch's ``suggest_memory_format`` names a channels-last format for an array
    of these strides (4-d or 5-d, channels fastest): then ``.to(memory_format=
    torch.contiguous_format)`` copies even a tensor it would otherwise return as it is."""
    if array.ndim == 4:
        order = (1, 3, 2, 0)
    elif array.ndim == 5:
        order = (1, 4, 3, 2, 0)
    else:
        return False
    sizes, strides = array.shape, [step // array.itemsize for step in array.strides]
    if strides[1] == 0:
        return False
    least = 0
    for dim in order:
        if sizes[dim] == 0 or strides[dim] < least:
            return False
        # (torch's ambiguous cases fall back to row-major: an N111 tensor, or one sliced
        # down to N11W)
        if dim == 0 and least == strides[1]:
            return False
        least = strides[dim] * (sizes[dim] if sizes[dim] > 1 else 1)
    return True
