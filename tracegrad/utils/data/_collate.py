"""``default_collate`` (a list of samples into one batch) and ``default_convert`` (one
sample's NumPy arrays into tensors), with torch's rules for every kind of sample."""

from __future__ import annotations

import collections.abc
import copy

import numpy as np

from ... import _dtype, factories
from ...ops.shape import Stack
from ...tensor import Tensor

_ERROR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
          "lists; found {}")


def default_collate(batch):
    """Stack tensors (and NumPy arrays) along a new first dim, make numbers into a tensor,
    and recurse into dicts, named tuples and sequences (a tuple of fields becomes a list of
    batched fields, as in torch).

    >>> import tracegrad as torch
    >>> from tracegrad.utils.data import default_collate
    >>> default_collate([(torch.zeros(2), 1), (torch.ones(2), 0)])
    [tensor([[0., 0.],
            [1., 1.]]), tensor([1, 0])]
    """
    element = batch[0]
    kind = type(element)
    if isinstance(element, Tensor):
        return Stack.apply(*batch, dim=0)
    if kind.__module__ == "numpy" and kind.__name__ not in ("str_", "string_"):
        if kind.__name__ in ("ndarray", "memmap"):
            if element.dtype.kind in "OSU":
                raise TypeError(_ERROR.format(element.dtype))
            return default_collate([factories.as_tensor(np.asarray(b)) for b in batch])
        if element.shape == ():  # a NumPy scalar
            return factories.as_tensor(np.asarray(batch))
    if isinstance(element, bool):
        return factories.tensor(batch, dtype=_dtype.bool_)
    if isinstance(element, float):
        return factories.tensor(batch, dtype=_dtype.float64)
    if isinstance(element, int):
        return factories.tensor(batch)
    if isinstance(element, (str, bytes)):
        return batch
    if isinstance(element, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in element}
        try:
            if isinstance(element, collections.abc.MutableMapping):
                clone = copy.copy(element)
                clone.update(collated)
                return clone
            return kind(collated)
        except TypeError:
            return collated
    if isinstance(element, tuple) and hasattr(element, "_fields"):
        return kind(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(element, collections.abc.Sequence):
        size = len(element)
        if not all(len(item) == size for item in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        collated = [default_collate(samples) for samples in transposed]
        if isinstance(element, tuple):
            return collated
        try:
            return kind(collated)
        except TypeError:
            return collated
    raise TypeError(_ERROR.format(kind))


def default_convert(data):
    """NumPy arrays (and scalars) inside ``data`` as tensors; everything else unchanged."""
    kind = type(data)
    if isinstance(data, Tensor):
        return data
    if kind.__module__ == "numpy" and kind.__name__ not in ("str_", "string_"):
        if kind.__name__ == "ndarray" and data.dtype.kind in "OSU":
            return data
        return factories.as_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return {key: default_convert(value) for key, value in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return kind(*(default_convert(item) for item in data))
    if isinstance(data, tuple):
        return [default_convert(item) for item in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return kind([default_convert(item) for item in data])
        except TypeError:
            return [default_convert(item) for item in data]
    return data
