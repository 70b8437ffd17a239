"""``Tensor.__getattr__``: a torch Tensor attribute tracegrad lacks says so.

A mixin of Tensor. Python calls ``__getattr__`` only after normal lookup fails, so it costs
nothing on the attributes that exist.
"""

from __future__ import annotations


class UnsupportedMethods:
    __slots__ = ()

    def __getattr__(self, name: str):
        from .._unsupported import missing_attribute

        for cls in type(self).__mro__:
            if name in cls.__dict__:
                # A property that raised AttributeError itself lands here too: say so
                # rather than claim the attribute does not exist.
                raise AttributeError(
                    f"'Tensor' attribute '{name}' exists but raised AttributeError while "
                    "being computed")
        raise missing_attribute("torch.Tensor", name, "'Tensor' object")
