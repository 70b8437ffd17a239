"""A torch name tracegrad lacks raises AttributeError that says so, in every namespace."""

from __future__ import annotations

import pytest

import tracegrad as tg
from tracegrad._unsupported import missing_attribute


def test_the_message_names_the_torch_name_and_the_way_out():
    error = missing_attribute("torch.nn", "Transformer", "module 'tracegrad.nn'")
    assert isinstance(error, AttributeError)
    message = str(error)
    assert message.startswith("tracegrad does not implement torch.nn.Transformer (module "
                              "'tracegrad.nn' has no attribute 'Transformer').")
    assert "`tracegrad run`" in message


def test_private_and_dunder_names_get_pythons_plain_message():
    assert str(missing_attribute("torch", "_C", "module 'tracegrad'")) == (
        "module 'tracegrad' has no attribute '_C'")
    assert str(missing_attribute("torch", "__wrapped__", "module 'tracegrad'")) == (
        "module 'tracegrad' has no attribute '__wrapped__'")


def test_top_level_miss():
    with pytest.raises(AttributeError, match=r"tracegrad does not implement torch\.fft "):
        tg.fft  # noqa: B018
    assert not hasattr(tg, "__wrapped__")
    assert getattr(tg, "compile_everything", None) is None
