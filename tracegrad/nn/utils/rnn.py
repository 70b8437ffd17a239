"""``nn.utils.rnn``: padding a list of sequences into one batch.

Packed sequences (``pack_padded_sequence`` and friends) are not implemented: the
recurrent layers here take padded batches.
"""

from __future__ import annotations

from ...ops.padding import ConstantPadNd
from ...ops.shape import Stack
from ...tensor import Tensor


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences of different lengths (L_i, *) into (L_max, B, *) (or (B, L_max, *)
    with ``batch_first``), filling with ``padding_value``.

    >>> import tracegrad as torch
    >>> torch.nn.utils.rnn.pad_sequence([torch.ones(2), torch.ones(1)], batch_first=True)
    tensor([[1., 1.],
            [1., 0.]])
    """
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(seq.shape[0] for seq in sequences)
    padded = []
    for seq in sequences:
        missing = longest - seq.shape[0]
        trailing = [0, 0] * (seq.ndim - 1)
        pad = trailing + ([0, missing] if padding_side == "right" else [missing, 0])
        padded.append(ConstantPadNd.apply(seq, tuple(pad), padding_value) if missing else seq)
    return Stack.apply(*padded, dim=0 if batch_first else 1)


def _not_implemented(name: str):
    def function(*args, **kwargs):
        raise NotImplementedError(
            f"tracegrad does not implement torch.nn.utils.rnn.{name} (packed sequences). "
            "Pad the batch with pad_sequence and run the recurrent layer on it (masking the "
            "padded steps in the loss), or observe the script on real PyTorch with "
            "`tracegrad run`.")

    function.__name__ = name
    return function


pack_padded_sequence = _not_implemented("pack_padded_sequence")
pad_packed_sequence = _not_implemented("pad_packed_sequence")
pack_sequence = _not_implemented("pack_sequence")
unpack_sequence = _not_implemented("unpack_sequence")


def __getattr__(name: str):
    if name.startswith("_"):
        raise AttributeError(f"module 'tracegrad.nn.utils.rnn' has no attribute '{name}'")
    raise AttributeError(
        f"tracegrad does not implement torch.nn.utils.rnn.{name} (module "
        f"'tracegrad.nn.utils.rnn' has no attribute '{name}'). A script that uses it can "
        "still be observed on real PyTorch: keep `import torch` and run it with "
        "`tracegrad run`.")
