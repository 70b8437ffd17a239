"""Embedding: a lookup table of learned rows; EmbeddingBag: bags of them reduced.

>>> import tracegrad as torch
>>> table = torch.nn.Embedding(10, 3, padding_idx=0)
>>> table(torch.tensor([[0, 4]])).shape, table.weight[0].abs().sum().item()
(tracegrad.Size([1, 2, 3]), 0.0)
"""

from __future__ import annotations

from .. import factories
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from . import _functional_norm as F
from . import init
from .module import Module
from .parameter import Parameter


def _padding_row(padding_idx: int | None, rows: int, word: str) -> int | None:
    """``padding_idx`` as a row number (a negative one counts from the end), or torch's
    AssertionError (Embedding writes ``word`` "Padding_idx", EmbeddingBag "padding_idx")."""
    if padding_idx is None:
        return None
    if padding_idx >= rows or padding_idx < -rows:
        raise AssertionError(f"{word} must be within num_embeddings")
    return padding_idx % rows


def _table(module: Module, weight: Tensor | None, dtype, device,
           requires_grad: bool = True) -> Parameter:
    """The module's weight: ``weight`` as given (of the module's shape) or a new one drawn
    from N(0, 1) with the padding row zeroed."""
    shape = [module.num_embeddings, module.embedding_dim]
    if weight is not None:
        if list(weight.shape) != shape:
            raise AssertionError("Shape of weight does not match num_embeddings and "
                                 "embedding_dim")
        return Parameter(weight, requires_grad=requires_grad)
    module.weight = Parameter(factories.empty(*shape, dtype=dtype, device=device),
                              requires_grad=requires_grad)
    module.reset_parameters()
    return module.weight


_DEFAULTS = {"padding_idx": None, "max_norm": None, "norm_type": 2,
             "scale_grad_by_freq": False, "sparse": False}  # not shown by extra_repr


def _table_repr(module: Module, names: tuple) -> str:
    """torch's extra_repr of the embedding modules: the sizes, then ``names`` in this order,
    each unless at its default."""
    shown = "".join(f", {name}={getattr(module, name)!r}" for name in names
                    if name not in _DEFAULTS or getattr(module, name) != _DEFAULTS[name])
    return f"{module.num_embeddings}, {module.embedding_dim}{shown}"


class Embedding(Module):
    """Rows of ``weight`` (num_embeddings x embedding_dim, initialised from N(0, 1)) picked
    by integer indices; the ``padding_idx`` row starts at zero and gets no gradient."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight: Tensor | None = None, _freeze: bool = False, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = _padding_row(padding_idx, num_embeddings, "Padding_idx")
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        self.weight = _table(self, _weight, dtype, device, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm,
                           self.norm_type, self.scale_grad_by_freq, self.sparse)

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        padding_idx: int | None = None, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)

    def extra_repr(self) -> str:
        return _table_repr(self, ("padding_idx", "max_norm", "norm_type",
                                  "scale_grad_by_freq", "sparse"))


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of ``Embedding`` rows (``F.embedding_bag``), without
    the rows in between."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight: Tensor | None = None,
                 include_last_offset: bool = False, padding_idx: int | None = None,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.padding_idx = _padding_row(padding_idx, num_embeddings, "padding_idx")
        self.weight = _table(self, _weight, dtype, device)
        self.mode, self.sparse, self.include_last_offset = mode, sparse, include_last_offset

    reset_parameters = Embedding.reset_parameters

    def forward(self, input: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None) -> Tensor:
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        max_norm: float | None = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, mode: str = "mean",
                        sparse: bool = False, include_last_offset: bool = False,
                        padding_idx: int | None = None) -> EmbeddingBag:
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                  _weight=embeddings, include_last_offset=include_last_offset,
                  padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag

    def extra_repr(self) -> str:
        return _table_repr(self, ("max_norm", "norm_type", "scale_grad_by_freq", "mode",
                                  "padding_idx"))
