"""`tracegrad run` keeps the trace when a signal ends the script, and the file on disk is
always complete: SIGINT, SIGTERM, SIGHUP mid-loop; a second SIGINT during the save; a
SIGKILL during the save leaves the previous file. Real subprocesses (signals need one)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import tracegrad as tg

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

LOOP = """
    import sys
    import tracegrad as torch
    size = int(sys.argv[1])
    w = torch.randn(size, size, requires_grad=True)
    x = torch.randn(size, size)
    step = 0
    while True:
        loss = (x.mm(w).tanh() * 2).sum()
        loss.backward()
        step += 1
        if step == 2:
            print("looping", flush=True)
"""


def start(tmp_path, size: int = 8, extra: tuple[str, ...] = ()) -> subprocess.Popen:
    script = tmp_path / "loop.py"
    script.write_text(textwrap.dedent(LOOP))
    # A suite started in the background (`scripts/test.sh &`, some CI runners) inherits
    # SIGINT ignored, and so would the script: `tracegrad run` rightly leaves an ignored
    # SIGINT ignored, and the SIGINT tests hung. A Python handler here becomes the default
    # disposition in the child, as in a terminal.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "tracegrad", "run", "--keep-passes", "2", "2", *extra,
             "-o", str(tmp_path / "loop.tgtrace"), str(script), str(size)],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "TRACEGRAD_PROGRESS": "0"})
    finally:
        signal.signal(signal.SIGINT, previous)
    assert process.stdout.readline() == "looping\n", process.communicate(timeout=60)
    return process


def wait_for_line(stream, text: str, timeout: float = 60.0) -> list[str]:
    lines = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        lines.append(line)
        if text in line:
            return lines
    raise AssertionError(f"{text!r} never came; got {lines}")


def assert_complete_trace(path, exception_type: str) -> tg.Trace:
    assert [name for name in os.listdir(path.parent) if name.endswith(".partial")] == []
    trace = tg.load_trace(path)
    assert len(trace.passes) >= 2
    assert trace.exception is not None and trace.exception.type == exception_type
    return trace


@pytest.mark.parametrize("signum, exception_type", [
    (signal.SIGINT, "KeyboardInterrupt"),
    (signal.SIGTERM, "SignalReceived"),
    (signal.SIGHUP, "SignalReceived"),
])
def test_a_signal_mid_loop_keeps_the_trace(tmp_path, signum, exception_type):
    process = start(tmp_path)
    process.send_signal(signum)
    _, error = process.communicate(timeout=60)
    assert process.returncode == 128 + signum, error
    name = signal.Signals(signum).name
    assert f"tracegrad run: {name} received; saving the trace recorded so far to" in error
    assert f"was interrupted by {name}" in error, error
    assert "Traceback" not in error
    trace = assert_complete_trace(tmp_path / "loop.tgtrace", exception_type)
    assert trace.metadata["exit_status"] == 128 + signum


def test_a_second_sigint_during_the_save_waits_for_it(tmp_path):
    # Arrays large enough that the save takes a moment to interrupt.
    process = start(tmp_path, size=700, extra=("--budget-mb", "512"))
    process.send_signal(signal.SIGINT)
    wait_for_line(process.stderr, "saving the trace recorded so far")
    process.send_signal(signal.SIGINT)
    rest = process.stderr.read()
    process.wait(timeout=60)
    assert process.returncode == 130, rest
    assert "SIGINT received while saving the trace; finishing the save first" in rest
    assert "the trace up to then was written to" in rest
    assert_complete_trace(tmp_path / "loop.tgtrace", "KeyboardInterrupt")


def test_a_kill_during_the_save_leaves_the_previous_complete_file(tmp_path):
    previous = tg.Trace(metadata={"program": "the previous run"})
    tg.tracing.save_trace(previous, tmp_path / "loop.tgtrace")
    process = start(tmp_path, size=700, extra=("--budget-mb", "512"))
    process.send_signal(signal.SIGTERM)
    wait_for_line(process.stderr, "saving the trace recorded so far")
    process.kill()  # SIGKILL: no handler runs, the save stops wherever it was
    process.wait(timeout=60)
    trace = tg.load_trace(tmp_path / "loop.tgtrace")  # complete: the old one or the new one
    assert trace.metadata["program"] in ("the previous run", "loop.py")
