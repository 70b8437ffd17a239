"""tracegrad: see what autograd does.

An autograd engine with PyTorch's API on NumPy (CuPy for CUDA), instrumented so that every
node, saved tensor and gradient can be recorded, drawn, stepped through and asserted on.
Programs written for torch.autograd run on it with ``import tracegrad as torch``.

Every name torch has means here what it means in torch (``tracegrad.trace`` is the matrix
trace). tracegrad's own API uses names torch does not: ``record``, ``Trace``,
``load_trace``, ``name``, ``render``, ``to_dot``, ``make_dot`` (torchviz's), and the packages ``tracing``, ``draw``,
``tui``.

Importing tracegrad never imports textual, graphviz, cupy, pytest or torch.
"""

from __future__ import annotations

__version__ = "0.1.0"

import math as _math

from . import _dtype, autograd, cuda, linalg, random  # noqa: E402 - torch.linalg needs Tensor and the ops loaded
from ._dtype import *  # torch's dtype names, listed in its __all__
from ._dtype import bool_ as bool
from ._dtype import dtype, float16, float32, float64, int32, int64, uint8
from ._functions import *  # noqa: F403 - the torch.* function forms, listed in its __all__
from ._functions import max, min, trace
from ._legacy import *  # the legacy typed constructors, listed in its __all__
from ._memory_format import (
    channels_last,
    channels_last_3d,
    contiguous_format,
    memory_format,
    preserve_format,
)
from ._numerics import *  # noqa: F403 - more torch.* functions, listed in its __all__
from .autograd import enable_grad, inference_mode, no_grad, set_grad_enabled
from .autograd.anomaly import (  # torch.* names of anomaly mode (graph-api)
    is_anomaly_check_nan_enabled as is_anomaly_check_nan_enabled,
)
from .autograd.anomaly import is_anomaly_enabled as is_anomaly_enabled
from .autograd.anomaly import set_anomaly_enabled as set_anomaly_enabled
from .autograd.grad_mode import is_grad_enabled
from .autograd.grad_mode import is_inference_mode_enabled as is_inference_mode_enabled
from .backends import device
from .errors import (
    AutogradError,
    DeviceError,
    DTypeError,
    InplaceError,
    ShapeError,
    TraceFileError,
    TracegradError,
)
from .factories import (
    arange,
    as_tensor,
    bernoulli,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    get_default_device,
    initial_seed,
    linspace,
    logspace,
    manual_seed,
    multinomial,
    normal,
    ones,
    ones_like,
    poisson,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    range,
    scalar_tensor,
    seed,
    set_default_device,
    tensor,
    zeros,
    zeros_like,
)
from .random import Generator, default_generator, get_rng_state, set_rng_state  # noqa: E402
from .tensor import Size, Tensor
from .tensor import is_inference as is_inference

half, float, double = float16, float32, float64
short, int, long = int16, int32, int64
chalf, cfloat, cdouble = complex32, complex64, complex128

# torch's constants (torch.inf is math.inf; newaxis is None, as in NumPy).
inf, nan, pi, e = _math.inf, _math.nan, _math.pi, _math.e
newaxis = None


def get_default_dtype() -> dtype:
    return _dtype.default_float


def set_default_dtype(d) -> None:
    """The dtype of new floating tensors (``tensor([1.0])``, ``zeros``, ``rand``): only a
    floating dtype, as torch requires."""
    from .errors import ArgumentTypeError

    if not isinstance(d, dtype):
        raise ArgumentTypeError(f"set_default_dtype(): argument 'd' (position 1) must be torch.dtype, "
                        f"not {type(d).__name__}")
    if not d.is_floating_point:
        raise ArgumentTypeError(f"only floating-point types are supported as the default type (got "
                        f"{d!r}). Hint: integer tensors come from integer data or "
                        f"dtype=torch.int64.")
    _dtype.default_float = d


# Submodules and tracer functions load on first use, keeping ``import tracegrad`` light.
_LAZY_MODULES = {"nn": ".nn", "optim": ".optim", "testing": ".testing", "draw": ".draw",
                 "tracing": ".tracing", "tui": ".tui", "utils": ".utils"}
_LAZY_NAMES = {"record": ".tracing", "Trace": ".tracing", "load_trace": ".tracing",
               "name": ".tracing", "render": ".draw", "to_dot": ".draw",
               "save": ".serialization", "load": ".serialization", "make_dot": ".draw"}


def __getattr__(name: str):
    import importlib

    if name in _LAZY_MODULES:
        return importlib.import_module(_LAZY_MODULES[name], __name__)
    if name in _LAZY_NAMES:
        return getattr(importlib.import_module(_LAZY_NAMES[name], __name__), name)
    from ._unsupported import missing_attribute

    raise missing_attribute("torch", name, "module 'tracegrad'")
