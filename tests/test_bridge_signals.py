"""`tracegrad run` on a torch program: a signal that arrives while the bridge is adapting an
op is raised as the bridge returns (the op complete in the trace), like one inside the
recorder; one that arrives while the program's own code runs inside torch's backward (a
tensor hook) is raised at once, not when backward() returns. Real subprocesses (signal
handlers need the main thread of a process of their own)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

pytestmark = [pytest.mark.torch,
              pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")]
pytest.importorskip("torch")

from test_tracing_signals import HOOKED, SCRIPT  # noqa: E402

# The runner's part of test_tracing_signals.py's script: run, then print what ended it.
_RUN_AND_REPORT = textwrap.dedent(HOOKED[HOOKED.index("    result = runner.run("):])
RUN = """
    import signal, sys
    from tracegrad.tracing import runner
    if sys.argv[1] == "bridge":
        from tracegrad.bridge import adapters
        storage_key = adapters.storage_key

        def hooked(tensor):  # called by the bridge while it reads what a node saved
            signal.raise_signal(signal.SIGTERM)
            adapters.storage_key = storage_key  # once
            return storage_key(tensor)

        adapters.storage_key = hooked
"""

# test_tracing_signals.py's endless tanh loop, on torch
LOOP = SCRIPT.replace("import tracegrad as torch", "import torch")

HOOK = """
    import signal
    import torch
    w = torch.ones(2, requires_grad=True)
    def hook(grad):
        signal.raise_signal(signal.SIGTERM)
        print("the hook went on", flush=True)
    y = (w * 3).tanh()
    y.register_hook(hook)
    y.sum().backward()
    print("backward returned", flush=True)
"""


def run(tmp_path, where: str, script: str) -> tuple[list[str], str]:
    (tmp_path / "run.py").write_text(textwrap.dedent(RUN) + _RUN_AND_REPORT)
    (tmp_path / "script.py").write_text(textwrap.dedent(script))
    done = subprocess.run([sys.executable, str(tmp_path / "run.py"), where,
                           str(tmp_path / "script.py")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "stopped recording" not in done.stderr, done.stderr  # the bridge did not fail
    lines = done.stdout.splitlines()
    return lines[-1].split(), "\n".join(lines[:-1])


def test_a_signal_while_the_bridge_adapts_an_op_ends_the_script_right_after_that_op(tmp_path):
    (status, signum, tanhs, exception, line), _ = run(tmp_path, "bridge", LOOP)
    assert (status, signum) == (str(128 + signal.SIGTERM), str(int(signal.SIGTERM)))
    # The first tanh's saved result was being read: that op was completed and recorded,
    # and the script stopped at its line (never half recorded, never loops later).
    assert (exception, line, tanhs) == ("SignalReceived", "7", "1")


def test_a_signal_in_a_program_hook_inside_backward_is_raised_at_once(tmp_path):
    (status, signum, tanhs, exception, line), printed = run(tmp_path, "hook", HOOK)
    assert (status, signum) == (str(128 + signal.SIGTERM), str(int(signal.SIGTERM)))
    # Raised in the hook itself: not deferred to the end of the bridge's backward() call.
    assert printed == "" and (exception, line, tanhs) == ("SignalReceived", "6", "1")
