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


SECOND_SIGINT = """
    import signal, sys
    import tracegrad as tg
    from tracegrad import cli
    save = tg.Trace.save

    def hooked(self, *args, **kwargs):  # the second Ctrl-C lands inside the save, always
        signal.raise_signal(signal.SIGINT)
        return save(self, *args, **kwargs)

    tg.Trace.save = hooked
    sys.exit(cli.main(["run", "--keep-passes", "2", "2", "-o", "loop.tgtrace", sys.argv[1]]))
"""

INTERRUPTED = """
    import signal
    import tracegrad as torch
    w = torch.randn(8, 8, requires_grad=True)
    for step in range(5):
        (w.tanh() * 2).sum().backward()
    signal.raise_signal(signal.SIGINT)  # the first Ctrl-C, mid-script
    print("never printed")
"""


def test_a_second_sigint_during_the_save_waits_for_it(tmp_path):
    # Sent from inside the save through a hook, not after a pause: a save that finished
    # before a timed second signal arrived made the test depend on the machine's speed.
    (tmp_path / "second.py").write_text(textwrap.dedent(SECOND_SIGINT))
    (tmp_path / "loop.py").write_text(textwrap.dedent(INTERRUPTED))
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # see start()
    try:
        done = subprocess.run([sys.executable, str(tmp_path / "second.py"),
                               str(tmp_path / "loop.py")], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path, env={**os.environ, "TRACEGRAD_PROGRESS": "0"})
    finally:
        signal.signal(signal.SIGINT, previous)
    assert done.returncode == 130, done.stderr
    assert "never printed" not in done.stdout
    assert "SIGINT received; saving the trace recorded so far to" in done.stderr
    assert "SIGINT received while saving the trace; finishing the save first" in done.stderr
    assert "the trace up to then was written to" in done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    trace = assert_complete_trace(tmp_path / "loop.tgtrace", "KeyboardInterrupt")
    assert len(trace.passes) == 5


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


# A signal that arrives while the recorder is recording an op is raised as the recorder
# returns. It used to be re-sent 5 ms later by a timer, and Python ran the re-sent one
# where NumPy had handed the GIL to that timer -- inside the recorder again, nearly every
# time -- so `tracegrad run` on a loop hung on SIGTERM. These deliver the signal at the
# racy points through a hook (signal.raise_signal runs the handler before it returns), in
# a subprocess: handlers need the main thread of a process of their own.
HOOKED = """
    import signal, sys
    import tracegrad.tracing.recorder as recorder
    from tracegrad.tracing import runner
    where = sys.argv[1]
    calls = 0
    if where == "recording":
        value_is_finite = recorder.value_is_finite

        def hooked(*args):  # called by Recorder.on_op in the middle of recording an op
            global calls
            calls += 1
            if calls == 3:
                signal.raise_signal(signal.SIGTERM)
            return value_is_finite(*args)

        recorder.value_is_finite = hooked
    else:  # "stopping": the script has ended, the recorder is being stopped
        stop = recorder.Recorder.stop

        def hooked(self, *args, **kwargs):
            signal.raise_signal(signal.SIGTERM)
            return stop(self, *args, **kwargs)

        recorder.Recorder.stop = hooked
    result = runner.run(sys.argv[2], [], values=True)
    trace = result.trace
    nodes = trace.nodes.values() if isinstance(trace.nodes, dict) else trace.nodes
    print(result.exit_status, result.signum,
          sum(node.name == "TanhBackward0" for node in nodes),
          trace.exception and trace.exception.type,
          trace.exception and trace.exception.site and trace.exception.site.line)
"""

SCRIPT = """
    import tracegrad as torch
    w = torch.ones(2, requires_grad=True)
    a = w * 3
    b = a + 1
    for _ in range(100000):
        c = b.tanh()
"""


def run_hooked(tmp_path, where: str) -> list[str]:
    (tmp_path / "hooked.py").write_text(textwrap.dedent(HOOKED))
    (tmp_path / "script.py").write_text(textwrap.dedent(SCRIPT))
    done = subprocess.run([sys.executable, str(tmp_path / "hooked.py"), where,
                           str(tmp_path / "script.py")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout.split()


def test_a_signal_while_an_op_is_recorded_ends_the_script_right_after_that_op(tmp_path):
    status, signum, tanhs, exception, line = run_hooked(tmp_path, "recording")
    assert (status, signum) == (str(128 + signal.SIGTERM), str(int(signal.SIGTERM)))
    # The third op recorded is the first tanh: the script stopped right after it (never
    # some loops later, or 100,000 loops later), and that op is in the trace.
    assert (exception, line, tanhs) == ("SignalReceived", "7", "1")


def test_a_signal_while_the_recorder_stops_is_noted_not_raised_into_the_runner(tmp_path):
    status, signum, tanhs, exception, line = run_hooked(tmp_path, "stopping")
    assert (status, signum) == (str(128 + signal.SIGTERM), str(int(signal.SIGTERM)))
    # The script itself ended normally; the signal only sets the exit status.
    assert (exception, line) == ("None", "None") and int(tanhs) >= 1


EARLY = """
    import signal, sys
    from tracegrad import cli
    from tracegrad.tracing import runner
    compile_script = runner.compile_script

    def hooked(path):  # after `tracegrad run` holds signals, before the script starts
        signal.raise_signal(signal.SIGTERM)
        return compile_script(path)

    runner.compile_script = hooked
    sys.exit(cli.main(["run", "-o", "early.tgtrace", sys.argv[1]]))
"""

FINITE = """
    import tracegrad as torch
    print("started", flush=True)
    w = torch.ones(2, requires_grad=True)
    for _ in range(200):  # a loop without end hung here: the signal was held for the save
        (w * 3).sum().backward()
    print("finished", flush=True)
"""


def test_a_signal_before_the_script_starts_ends_it_before_its_first_line(tmp_path):
    (tmp_path / "early.py").write_text(textwrap.dedent(EARLY))
    (tmp_path / "finite.py").write_text(textwrap.dedent(FINITE))
    done = subprocess.run([sys.executable, str(tmp_path / "early.py"),
                           str(tmp_path / "finite.py")], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env={**os.environ, "TRACEGRAD_PROGRESS": "0"})
    assert done.returncode == 128 + signal.SIGTERM, done.stderr
    assert done.stdout == "", done.stdout
    assert "Traceback" not in done.stderr and "while saving" not in done.stderr, done.stderr
    assert "SIGTERM" in done.stderr, done.stderr
