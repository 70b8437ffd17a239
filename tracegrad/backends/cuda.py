"""The CUDA backend on CuPy, imported lazily: `import tracegrad` never imports cupy."""

from __future__ import annotations

from ..errors import DeviceError

_INSTALL_HINT = "Install it with: pip install 'tracegrad[cuda]' (CuPy for CUDA 12)."
_cupy = None

# torch.backends.cuda's switches (``torch.backends.cuda.matmul.allow_tf32 = True``): kept so
# programs can set them; CuPy's matmul has no such switch, so they change nothing.
from .flags import matmul  # noqa: E402, F401 - re-exported as torch.backends.cuda.matmul


def is_built() -> bool:
    """Whether tracegrad can use CUDA at all (CuPy importable), as torch's is_built()."""
    return _load() is not None


def preferred_linalg_library(backend=None) -> str:
    return "default"


def _load():
    """Import cupy once; None when it is not installed."""
    global _cupy
    if _cupy is None:
        try:
            import cupy
        except ImportError:
            return None
        _cupy = cupy
    return _cupy


def is_available() -> bool:
    cupy = _load()
    if cupy is None:
        return False
    try:
        return bool(cupy.cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken driver counts as "not available", never a crash
        return False


def device_count() -> int:
    cupy = _load()
    if cupy is None or not is_available():
        return 0
    return int(cupy.cuda.runtime.getDeviceCount())


def require(target):
    """cupy, after checking that `target` can really be used; a clear error otherwise."""
    cupy = _load()
    if cupy is None:
        raise DeviceError(
            f"Cannot use device '{target}': CuPy is not installed, so tracegrad has no CUDA "
            f"backend. {_INSTALL_HINT}")
    if not is_available():
        raise DeviceError(
            f"Cannot use device '{target}': CuPy is installed but no usable CUDA GPU was "
            "found (cupy.cuda.is_available() is False). Check the driver with nvidia-smi, "
            "or use device='cpu'.")
    count = device_count()
    if target.index is not None and target.index >= count:
        raise DeviceError(
            f"Cannot use device '{target}': only {count} CUDA device(s) are visible.")
    return cupy


def module_of(array):
    cupy = _load()
    if cupy is not None and isinstance(array, cupy.ndarray):
        return cupy
    raise TypeError(f"tracegrad tensors hold numpy or cupy arrays, not {type(array).__name__}")


def device_of(array):
    from . import device

    return device("cuda", int(array.device.id))


def to_host(array):
    if _pending:
        raise_pending(wait=True)
    return array.get()


# Checks whose values are on their way to the host: (pinned host array, event, check, the
# device array, kept alive until its copy is done).
_pending: list = []


def check_later(array, check) -> None:
    """Copy ``array`` to pinned host memory asynchronously; ``check(host)`` runs once the
    copy is done and its exception (if it returns one) is raised then."""
    import numpy

    raise_pending(wait=False)
    cupy = _load()
    array = cupy.ascontiguousarray(array)
    memory = cupy.cuda.alloc_pinned_memory(array.nbytes)
    host = numpy.frombuffer(memory, array.dtype, array.size).reshape(array.shape)
    stream = cupy.cuda.get_current_stream()
    cupy.cuda.runtime.memcpyAsync(host.ctypes.data, array.data.ptr, array.nbytes,
                                  cupy.cuda.runtime.memcpyDeviceToHost, stream.ptr)
    _pending.append((host, stream.record(), check, array))


def raise_pending(wait: bool) -> None:
    """Run the checks whose copies are done (all of them, waiting, with ``wait``)."""
    while _pending:
        host, event, check, _ = _pending[0]
        if wait:
            event.synchronize()
        elif not event.done:
            return
        del _pending[0]
        error = check(host)
        if error is not None:
            _pending.clear()  # one error per bad batch, as the first one says what to fix
            raise error


def to_device(array, target):
    cupy = require(target)
    with cupy.cuda.Device(target.index or 0):
        return cupy.asarray(array)
