"""A custom Function that builds its outputs with ``.new()``: BadFFTFunction, on tracegrad.

Source: the PyTorch tutorial "Creating extensions using numpy and scipy" (Adam Paszke;
pytorch/tutorials advanced_source/numpy_extensions_tutorial.py), its parameter-less part,
in the new-style (static) form the tutorial has used since torch deprecated non-static
Functions (text as in the copy at JSJSWON/ex-tutorials-kr-2023; older copies in
pytorch/tutorials call ``BadFFTFunction()(input)``, which torch 2.13 refuses). Verbatim
except the import lines (``import tracegrad as torch``, ``from tracegrad.autograd import
Function``); the tutorial's second part needs SciPy and is left out.

``input.new(result)`` and ``grad_output.new(result)`` make tensors of the input's dtype
and device from NumPy arrays: the legacy constructor, still in torch 2.13.

    python examples/legacy_bad_fft.py
"""
# ruff: noqa: I001 - the program's own style, kept verbatim

import tracegrad as torch
from tracegrad.autograd import Function

###############################################################
# Parameter-less example
# ----------------------
#
# This layer doesn’t particularly do anything useful or mathematically
# correct.
#
# It is aptly named BadFFTFunction
#
# **Layer Implementation**

from numpy.fft import rfft2, irfft2


class BadFFTFunction(Function):
    @staticmethod
    def forward(ctx, input):
        numpy_input = input.detach().numpy()
        result = abs(rfft2(numpy_input))
        return input.new(result)

    @staticmethod
    def backward(ctx, grad_output):
        numpy_go = grad_output.numpy()
        result = irfft2(numpy_go)
        return grad_output.new(result)

# since this layer does not have any parameters, we can
# simply declare this as a function, rather than as an nn.Module class


def incorrect_fft(input):
    return BadFFTFunction.apply(input)

###############################################################
# **Example usage of the created layer:**

input = torch.randn(8, 8, requires_grad=True)
result = incorrect_fft(input)
print(result)
result.backward(torch.randn(result.size()))
print(input)
