"""Shared bench plumbing: best-of-N timing, loading an example with torch swapped in, and
running a bench under each BLAS thread setting in turn (never two at once)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
THREAD_SETTINGS = ("1", "default")


def best_of(function: Callable[[], object], repeats: int) -> float:
    """The fastest of ``repeats`` runs, in seconds: the least disturbed by other processes."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def load_example(name: str, real_torch: bool = False) -> types.ModuleType:
    path = EXAMPLES / f"{name}.py"
    source = path.read_text()
    if real_torch:
        source = (source.replace("import tracegrad.nn as nn", "import torch.nn as nn")
                  .replace("import tracegrad as torch", "import torch"))
    module = types.ModuleType(f"bench_{name}_{'torch' if real_torch else 'tracegrad'}")
    module.__file__ = str(path)
    exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102 - our own file
    return module


def torch_or_none():
    try:
        import torch
    except ImportError:
        return None
    return torch


def run_each_thread_setting(script: str, argv: list[str]) -> int:
    """Re-run ``script`` once per BLAS thread setting, one after the other (the env var only
    takes effect before NumPy loads, hence a fresh process each time)."""
    status = 0
    for setting in THREAD_SETTINGS:
        environment = dict(os.environ)
        if setting == "default":
            for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
                environment.pop(name, None)
        else:
            environment["OMP_NUM_THREADS"] = setting
        print(f"== OMP_NUM_THREADS={setting}", flush=True)
        status |= subprocess.call([sys.executable, script, "--child", *argv], env=environment)
    return status


def describe_threads() -> str:
    return os.environ.get("OMP_NUM_THREADS", "default")
