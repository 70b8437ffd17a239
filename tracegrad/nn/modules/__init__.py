"""``tracegrad.nn.modules``: where torch keeps its module classes (the same ones as
``tracegrad.nn``), and ``nn.modules.module`` with the global module hooks."""

from __future__ import annotations

from .. import (
    activation,
    attention,
    container,
    conv,
    dropout,
    layers,
    loss,
    normalization,
    padding,
    pooling,
    rnn,
    sparse,
    upsampling,
)
from . import module
from .module import Module

__all__ = ["Module", "activation", "attention", "container", "conv", "dropout", "layers",
           "loss", "module", "normalization", "padding", "pooling", "rnn", "sparse",
           "upsampling"]
