"""`tracegrad tui` from the command line: no-TTY refusal, --dump, bad files (in-process,
through ``tracegrad.cli.main``), and the real program driven in tmux."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INPLACE_BUG = "examples/inplace_bug.py"


@pytest.fixture
def run_cli(capsys, monkeypatch):
    """``tracegrad tui ARGS`` in this process, from the repository root, stdin not a TTY."""
    from tracegrad.cli import main

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))

    def run(*args: str) -> subprocess.CompletedProcess:
        status = main(["tui", *args])
        captured = capsys.readouterr()
        return subprocess.CompletedProcess(["tracegrad", "tui", *args], status,
                                           captured.out, captured.err)

    return run


def test_without_a_terminal_it_says_so_and_exits_non_zero(run_cli):
    started = time.perf_counter()
    result = run_cli(INPLACE_BUG)
    assert result.returncode == 2
    assert "needs an interactive terminal" in result.stderr
    assert "stdin and stdout are not a TTY" in result.stderr
    assert f"tracegrad tui --dump {INPLACE_BUG}" in result.stderr
    assert "Traceback" not in result.stderr
    assert time.perf_counter() - started < 30  # it did not hang waiting for a terminal


def test_dump_traces_the_script_and_prints_the_steps(run_cli):
    result = run_cli("--dump", INPLACE_BUG)
    assert result.returncode == 1, result.stderr  # the script raised
    out = result.stdout
    assert "pass 0: backward(loss) at examples/inplace_bug.py:" in out
    assert "MeanBackward0" in out and "MmBackward0" in out
    assert "in-place change of a tensor saved for backward [inplace_saved]" in out
    assert "'h' float32 [8, 16] was modified in place by 'add_'" in out
    assert "in-place op  examples/inplace_bug.py:" in out
    assert "version      saved at 0, now 1" in out
    assert "the program raised InplaceError" in out


def test_dump_opens_a_saved_trace(tmp_path, run_cli):
    import tracegrad as tg
    from tracegrad.tracing import save_trace

    with tg.record() as trace:
        weight = tg.randn(3, requires_grad=True)
        (weight * 2).exp().sum().backward()
    path = tmp_path / "run.tgtrace"
    save_trace(trace, path)
    result = run_cli("--dump", str(path))
    assert result.returncode == 0, result.stderr
    rows = [line.split()[1] for line in result.stdout.splitlines()[2:6]]
    assert rows == ["SumBackward0", "ExpBackward0", "MulBackward0", "AccumulateGrad"]


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04 not really a zip", b"{}"])
def test_damaged_trace_file_gives_one_error_line(tmp_path, content, run_cli):
    path = tmp_path / "broken.tgtrace"
    path.write_bytes(content)
    result = run_cli("--dump", str(path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("tracegrad tui: cannot read trace file")
    assert str(path) in result.stderr


def test_missing_script_gives_one_error_line(run_cli):
    result = run_cli("--dump", "examples/no_such_script.py")
    assert result.returncode == 2
    assert result.stderr == ("tracegrad tui: cannot run 'examples/no_such_script.py': no such "
                             "file. Hint: give the path of a Python script, e.g. `tracegrad "
                             "run examples/two_layer_net.py`.\n")


# -- the real program in a real terminal ---------------------------------------------------
def _capture(socket: str, session: str) -> str:
    return subprocess.run(["tmux", "-L", socket, "capture-pane", "-p", "-t", session],
                          capture_output=True, text=True, check=True).stdout


def _wait_for(socket: str, session: str, text: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = _capture(socket, session)
        if text in screen:
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never appeared on screen:\n{screen}")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed "
                    "(sudo apt-get install tmux)")
def test_real_program_in_tmux_shows_the_violation_and_steps():
    socket, session = f"tracegrad-tui-test-{os.getpid()}", "debugger"
    command = f"{sys.executable} -m tracegrad tui {INPLACE_BUG}"
    subprocess.run(["tmux", "-L", socket, "new-session", "-d", "-x", "120", "-y", "40",
                    "-s", session, "-c", str(ROOT), command], check=True)
    try:
        screen = _wait_for(socket, session, "inplace_saved")
        # It opens at the step that raised, with the violation and both sites (the panel
        # wraps the long lines; the versions are further down it).
        assert "step 3  MmBackward0" in screen
        assert "in-place op  examples/inplace_bug.py:" in screen
        assert "saved by     MmBackward0 at" in screen
        assert "the program raised InplaceError" in screen
        subprocess.run(["tmux", "-L", socket, "send-keys", "-t", session, "g"], check=True)
        screen = _wait_for(socket, session, "step 0  MeanBackward0")
        subprocess.run(["tmux", "-L", socket, "send-keys", "-t", session, "n"], check=True)
        screen = _wait_for(socket, session, "step 1  PowBackward0")
        assert "[PowBackward0]" in screen  # the graph pane follows the current node
        subprocess.run(["tmux", "-L", socket, "send-keys", "-t", session, "q"], check=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            alive = subprocess.run(["tmux", "-L", socket, "has-session", "-t", session],
                                   capture_output=True, check=False).returncode == 0
            if not alive:
                break
            time.sleep(0.2)
        assert not alive, "q did not quit the debugger"
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True,
                       check=False)


def test_dump_hides_gradcheck_probes_unless_all_passes(tmp_path, run_cli):
    script = tmp_path / "probes.py"
    script.write_text(
        "import tracegrad as torch\n"
        "x = torch.randn(2, dtype=torch.float64, requires_grad=True)\n"
        "torch.autograd.gradcheck(lambda t: (t * t).sum(), (x,))\n"
        "(x * 3).sum().backward()\n")
    own = run_cli("--dump", str(script))
    assert own.returncode == 0, own.stderr
    every = run_cli("--dump", "--all-passes", str(script))
    assert every.returncode == 0, every.stderr
    assert own.stdout.count("pass ") < every.stdout.count("pass ")
    assert "gradcheck" in every.stdout
