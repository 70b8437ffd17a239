"""tracegrad: see what autograd does.

An autograd engine with PyTorch's API on NumPy (CuPy for CUDA), instrumented so that every
node, saved tensor and gradient can be recorded, drawn, stepped through and asserted on.
Programs written for torch.autograd run on it with ``import tracegrad as torch``.

Importing tracegrad never imports textual, graphviz, cupy or pytest.
"""

from __future__ import annotations

__version__ = "0.1.0"

from . import _dtype, autograd, cuda
from ._dtype import (
    bool_ as bool,
)
from ._dtype import (
    dtype,
    float16,
    float32,
    float64,
    int32,
    int64,
    uint8,
)
from .autograd import enable_grad, inference_mode, no_grad, set_grad_enabled
from .autograd.grad_mode import is_grad_enabled
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
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    seed,
    tensor,
    zeros,
    zeros_like,
)
from .functional import *
from .functional import max, min
from .tensor import Size, Tensor

half, float, double = float16, float32, float64
long, int = int64, int32
uint8 = uint8


def get_default_dtype():
    return _dtype.default_float


def set_default_dtype(value) -> None:
    _dtype.default_float = _dtype.from_numpy_dtype(_dtype.to_numpy_dtype(value))


_LAZY = {
    "nn": ".nn",
    "optim": ".optim",
    "testing": ".testing",
    "draw": ".draw",
    "tracing": ".tracing",
}


def __getattr__(name: str):
    """Submodules and tracer functions load on first use, keeping ``import tracegrad``
    light."""
    import importlib

    if name in _LAZY:
        return importlib.import_module(_LAZY[name], __name__)
    if name in ("record", "load_trace", "name", "Trace"):
        module = importlib.import_module(".tracing", __name__)
        return getattr(module, name)
    if name in ("render", "to_dot"):
        module = importlib.import_module(".draw", __name__)
        return getattr(module, name)
    if name == "tui":
        return importlib.import_module(".tui", __name__)
    raise AttributeError(f"module 'tracegrad' has no attribute '{name}'")
