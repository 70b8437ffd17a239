"""Skip tests whose marker names something this machine lacks (markers: pyproject.toml)."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

import tracegrad


def _gpu_missing() -> str | None:
    if importlib.util.find_spec("cupy") is None:
        return "CuPy is not installed (pip install -e '.[cuda]')"
    try:
        import cupy
    except ImportError as error:
        return f"CuPy does not import: {error}"
    try:
        devices = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as error:  # no driver or no device
        return f"no CUDA device: {error}"
    return None if devices > 0 else "no CUDA device"


def _missing(marker: str) -> str | None:
    """Why tests with this marker cannot run here, or None when they can."""
    if marker == "graphviz" and shutil.which("dot") is None:
        return "Graphviz `dot` is not installed (sudo apt-get install graphviz)"
    if marker == "torch" and importlib.util.find_spec("torch") is None:
        return "torch is not installed (.venv/bin/pip install torch==2.13.0)"
    if marker == "gpu":
        return _gpu_missing()
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reasons: dict[str, str | None] = {}
    for item in items:
        for marker in ("gpu", "graphviz", "torch"):
            if item.get_closest_marker(marker) is None:
                continue
            if marker not in reasons:  # look once per run, only for markers in use
                reasons[marker] = _missing(marker)
            if reasons[marker] is not None:
                item.add_marker(pytest.mark.skip(reason=reasons[marker]))


@pytest.fixture(params=[pytest.param("tracegrad", id="tracegrad"),
                        pytest.param("torch", id="torch", marks=pytest.mark.torch)])
def lib(request):
    """The library a test runs on: tracegrad, then torch (the reference, where installed);
    a test written once against ``lib`` checks that both behave the same."""
    if request.param == "torch":
        return pytest.importorskip("torch")
    return tracegrad
