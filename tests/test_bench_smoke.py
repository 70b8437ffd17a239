"""Every benchmark in bench/ runs end to end at a tiny size.

The benchmarks are where issue 14's targets live, and nothing else runs them: a bench that
stopped working (an import moved, a helper renamed -- bench_dot once broke that way) would
only be found the next time someone measured. Each case runs the script in its own process
with arguments that make it finish in seconds and checks that it printed what it measures.
The figures themselves are not checked: timings belong to the benchmarks, never to tests.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"

_HAS_TORCH = importlib.util.find_spec("torch") is not None
_needs_torch = pytest.mark.skipif(not _HAS_TORCH, reason="torch is not installed")

# script, arguments for a run of a few seconds, text its report must contain, needs torch
CASES = [
    ("bench_engine.py", ["--quick", "--repeats", "1", "--only", "a"],
     "tracegrad / torch, backward", True),
    ("bench_two_layer.py", ["--steps", "3", "--repeats", "1"], "per-step cost", False),
    ("bench_trace.py", ["--steps", "3", "--repeat", "1", "--chain", "200", "--loop", "4"],
     "values every pass", False),
    ("bench_trace_scale.py", ["--ops", "2000", "--loop-steps", "20", "--structure-mb", "1",
                              "--values-mb", "1", "--file-ops", "200"],
     "load per node (values)", False),
    ("bench_dot.py", ["--nodes", "300"], "DOT text per node", False),
    ("bench_bridge.py", ["--steps", "3", "--mlp-steps", "3", "--repeat", "1"],
     "values (first and last 2 passes)", True),
    ("bench_tui.py", ["--nodes", "200", "--moves", "3", "--wide", "200"],
     "step in the middle", False),
    ("bench_render_scale.py", ["--scale", "0.01"], "tracegrad render", False),
    ("bench_mlp.py", ["--batch", "8", "--width", "16", "--repeats", "1"],
     "tracegrad / numpy", False),
    ("bench_cnn.py", ["--batch", "2", "--repeats", "1"], "ms/step", True),
    ("bench_lstm.py", ["--batch", "2", "--length", "4", "--repeats", "1"], "ms/step", True),
    ("coverage.py", [], "all", True),
    # Instruction counts run under valgrind for minutes: the smoke case lists the workloads.
    ("instructions.py", ["--list"], "workloads: chain-forward", False),
]


def _run(script: str, arguments: list[str]) -> subprocess.CompletedProcess:
    environment = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, str(BENCH / script), *arguments], cwd=BENCH.parent,
                          env=environment, capture_output=True, text=True, timeout=240)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("script", "arguments", "expected"),
    [pytest.param(script, arguments, expected, id=script.removesuffix(".py"),
                  marks=[_needs_torch] if needs_torch else [])
     for script, arguments, expected, needs_torch in CASES])
def test_bench_runs_at_a_tiny_size(script, arguments, expected):
    finished = _run(script, arguments)
    report = finished.stdout + finished.stderr
    assert finished.returncode == 0, report[-3000:]
    assert expected in finished.stdout, report[-3000:]


def test_every_bench_script_has_a_smoke_case():
    scripts = {path.name for path in BENCH.glob("*.py") if not path.name.startswith("_")}
    covered = {case[0] for case in CASES} | {"bench_gpu.py"}  # (the GPU bench: below)
    assert scripts == covered, f"bench scripts without a smoke case: {scripts - covered}"


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None,
                    reason="CuPy is installed: the GPU bench runs for real on a GPU machine")
def test_gpu_bench_says_what_it_needs_without_cupy():
    finished = _run("bench_gpu.py", ["--repeats", "1", "--steps", "1", "--batch", "8",
                                     "--width", "16"])
    assert finished.returncode == 2
    assert "bench_gpu needs CuPy" in finished.stdout + finished.stderr
