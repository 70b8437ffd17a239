"""Shared bench plumbing: CPU-time measurement with interleaved repeats and medians, one BLAS
thread, loading an example with torch swapped in, and printing a figure next to its target.

How we measure (the machine is small and shared, so wall time mostly measures the others):

* CPU time of this process (``time.process_time``), not wall time: another process running
  on the same core does not add to it;
* one BLAS thread (``one_blas_thread()`` before NumPy loads; ``torch.set_num_threads(1)``),
  so CPU time is the work of one core and no thread pool spins;
* contenders interleaved round by round (a, b, c, a, b, c, ...), so a burst of load or a
  frequency change hits all of them alike, and the median of the rounds (not the best:
  the median is what a user sees, and it is stable under interleaving).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
THREAD_SETTINGS = ("1", "default")
_BLAS_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def one_blas_thread() -> None:
    """One BLAS thread for NumPy (and torch): call before either is imported."""
    for name in _BLAS_VARIABLES:
        os.environ.setdefault(name, "1")


def cpu_seconds(function: Callable[[], object]) -> float:
    """CPU time of one call, in seconds."""
    started = time.process_time()
    function()
    return time.process_time() - started


def interleaved(functions: dict[str, Callable[[], object]], repeats: int,
                warmup: int = 1) -> dict[str, float]:
    """Median CPU seconds of each function over ``repeats`` rounds, run in turns."""
    for _ in range(warmup):
        for function in functions.values():
            function()
    samples: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(repeats):
        for name, function in functions.items():
            samples[name].append(cpu_seconds(function))
    return {name: statistics.median(values) for name, values in samples.items()}


def training_steps(make_step: Callable[[Any], Callable[[], float]], warmup: int,
                   repeats: int) -> dict[str, list[float]]:
    """Seconds per call of a training step on tracegrad and (when installed, on one
    thread) torch: ``make_step(lib)`` builds the step, which returns its loss. The warm-up
    steps' losses must agree (rtol 1e-3) -- a bench of two different programs measures
    nothing -- then the two run in turns, so a burst of load hits both alike."""
    import numpy as np

    import tracegrad

    steps = {"tracegrad": make_step(tracegrad)}
    torch = torch_or_none()
    if torch is not None:
        torch.set_num_threads(1)
        steps["pytorch"] = make_step(torch)
    losses = {name: [step() for _ in range(warmup)] for name, step in steps.items()}
    if "pytorch" in losses and not np.allclose(losses["tracegrad"], losses["pytorch"],
                                               rtol=1e-3):
        raise AssertionError(f"the two runs disagree: {losses}")
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(repeats):
        for name, step in steps.items():
            started = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - started)
    return times


def best_of(function: Callable[[], object], repeats: int) -> float:
    """The fastest of ``repeats`` runs, in CPU seconds (kept for the GPU/TUI benches, where
    one contender runs at a time)."""
    return min(cpu_seconds(function) for _ in range(repeats))


def versus(label: str, value: float, target: float, figures: str = "", unit: str = "x") -> str:
    """``label  1.23x  (target <= 1.2x: MISSES)``: one line per target, as the issue's table
    has it (``unit``: "x" for a ratio, or " µs", " KB", ... for an absolute figure)."""
    verdict = "meets" if value <= target else "MISSES"
    tail = f"   [{figures}]" if figures else ""
    return f"  {label:<52} {value:7.2f}{unit}  (target <= {target}{unit}: {verdict}){tail}"


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
    torch.set_num_threads(1)
    return torch


def run_each_thread_setting(script: str, argv: list[str]) -> int:
    """Re-run ``script`` once per BLAS thread setting, one after the other (the env var only
    takes effect before NumPy loads, hence a fresh process each time)."""
    status = 0
    for setting in THREAD_SETTINGS:
        environment = dict(os.environ)
        if setting == "default":
            for name in _BLAS_VARIABLES:
                environment.pop(name, None)
        else:
            for name in _BLAS_VARIABLES:
                environment[name] = setting
        print(f"== OMP_NUM_THREADS={setting}", flush=True)
        status |= subprocess.call([sys.executable, script, "--child", *argv], env=environment)
    return status


def describe_threads() -> str:
    return os.environ.get("OMP_NUM_THREADS", "default")
