"""``tracegrad.cuda``: torch.cuda's common functions, on CuPy.

Queries that need no GPU answer without one (``is_available()`` is False,
``device_count()`` 0, memory counters 0, ``manual_seed`` accepted); those that need a
device raise ``CudaUnavailableError`` (an AssertionError, as torch's CPU build raises, and
a RuntimeError) saying what is missing. Nothing here imports CuPy until a GPU is asked for.

>>> import tracegrad as torch
>>> torch.cuda.is_available() in (True, False)
True
"""

from __future__ import annotations

from ._unsupported import missing_attribute
from .errors import CudaUnavailableError


def _backend():
    from .backends import cuda

    return cuda


def is_available() -> bool:
    return _backend().is_available()


def device_count() -> int:
    return _backend().device_count()


def is_initialized() -> bool:
    return _backend()._cupy is not None and is_available()


def init() -> None:
    _cupy_or_raise()


def _cupy_or_raise():
    backend = _backend()
    cupy = backend._load()
    if cupy is None:
        raise CudaUnavailableError(
            "Torch not compiled with CUDA enabled: tracegrad has no CUDA backend because "
            f"CuPy is not installed. {backend._INSTALL_HINT}")
    if not backend.is_available():
        raise CudaUnavailableError(
            "No CUDA GPUs are available: CuPy is installed but found no usable GPU "
            "(check the driver with nvidia-smi), or use device='cpu'.")
    return cupy


def _index(device) -> int:
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    from .backends import as_device

    resolved = as_device(device)
    return resolved.index or 0


def current_device() -> int:
    return int(_cupy_or_raise().cuda.runtime.getDevice())


def set_device(device) -> None:
    _cupy_or_raise().cuda.Device(_index(device)).use()


class device:
    """``with torch.cuda.device(i):`` makes device i current inside the block."""

    def __init__(self, device) -> None:
        self.index = _index(device) if device is not None else None
        self._previous = None

    def __enter__(self):
        if self.index is not None:
            self._previous = current_device()
            set_device(self.index)
        return self

    def __exit__(self, *exc_info) -> None:
        if self._previous is not None:
            set_device(self._previous)


def get_device_properties(device=None):
    return _cupy_or_raise().cuda.runtime.getDeviceProperties(_index(device))


def get_device_name(device=None) -> str:
    name = get_device_properties(device)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def get_device_capability(device=None) -> tuple[int, int]:
    properties = get_device_properties(device)
    return int(properties["major"]), int(properties["minor"])


def synchronize(device=None) -> None:
    cupy = _cupy_or_raise()
    cupy.cuda.Device(_index(device)).synchronize()
    _backend().raise_pending(wait=True)


def _pool():
    cupy = _backend()._load()
    if cupy is None or not _backend().is_available():
        return None
    return cupy.get_default_memory_pool()


def memory_allocated(device=None) -> int:
    """Bytes held by tensors (CuPy's memory pool in use); 0 without a GPU, as torch."""
    pool = _pool()
    return 0 if pool is None else int(pool.used_bytes())


def memory_reserved(device=None) -> int:
    pool = _pool()
    return 0 if pool is None else int(pool.total_bytes())


_peak_allocated = 0


def max_memory_allocated(device=None) -> int:
    """The largest ``memory_allocated`` seen by calls to it since the last reset (CuPy
    keeps no peak of its own)."""
    global _peak_allocated
    _peak_allocated = max(_peak_allocated, memory_allocated(device))
    return _peak_allocated


def max_memory_reserved(device=None) -> int:
    return memory_reserved(device)


def reset_peak_memory_stats(device=None) -> None:
    global _peak_allocated
    _peak_allocated = 0


reset_max_memory_allocated = reset_peak_memory_stats


def empty_cache() -> None:
    """Give CuPy's cached blocks back to the driver (nothing to do without a GPU)."""
    pool = _pool()
    if pool is not None:
        pool.free_all_blocks()


def mem_get_info(device=None) -> tuple[int, int]:
    free, total = _cupy_or_raise().cuda.runtime.memGetInfo()
    return int(free), int(total)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


def manual_seed(seed) -> None:
    """Seed the generator CUDA tensors draw from (tracegrad's one default generator)."""
    from .random import manual_seed as seed_all_generators

    seed_all_generators(seed)


manual_seed_all = manual_seed


def seed() -> None:
    from .random import seed as reseed

    reseed()


seed_all = seed


def initial_seed() -> int:
    _cupy_or_raise()
    from .random import initial_seed as first_seed

    return first_seed()


def get_rng_state(device="cuda"):
    _cupy_or_raise()
    from .random import get_rng_state as state

    return state()


def set_rng_state(new_state, device="cuda") -> None:
    _cupy_or_raise()
    from .random import set_rng_state as restore

    restore(new_state)


def __getattr__(name: str):
    raise missing_attribute("torch.cuda", name, "module 'tracegrad.cuda'")
