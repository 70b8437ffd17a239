"""The debugger in a real terminal (tmux) on a 500-step training loop that goes NaN at
step 400: ``:250:3`` reaches pass 250 step 3 in one command, ``c`` the first NaN."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

TRAINING_LOOP = """\
import tracegrad as torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(16, 4), torch.randn(16, 1)
for step in range(500):
    optimizer.zero_grad()
    scale = torch.tensor(float("nan") if step == 400 else 1.0)
    loss = ((model(x) * scale - y) ** 2).mean()
    loss.backward()
    optimizer.step()
"""


class Tmux:
    """One tmux server and session running a command; keys in, screen text out."""

    def __init__(self, command: str, cwd: Path, size: tuple[int, int] = (120, 40)) -> None:
        self.socket, self.session = f"tracegrad-tui-loop-{os.getpid()}", "debugger"
        # pytest sets COLUMNS=80 and LINES=24, which would win over the pane's real size.
        subprocess.run(["tmux", "-L", self.socket, "new-session", "-d", "-x", str(size[0]),
                        "-y", str(size[1]), "-s", self.session, "-c", str(cwd),
                        f"env -u COLUMNS -u LINES {command}"], check=True)

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "-L", self.socket, "send-keys", "-t", self.session, *keys],
                       check=True)

    def screen(self) -> str:
        return subprocess.run(["tmux", "-L", self.socket, "capture-pane", "-p", "-t",
                               self.session], capture_output=True, text=True,
                              check=True).stdout

    def wait_for(self, *texts: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if all(text in screen for text in texts):
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{texts!r} never all appeared on screen:\n{screen}")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True,
                       check=False)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed "
                    "(sudo apt-get install tmux)")
def test_training_loop_pass_250_step_3_and_the_first_nan(tmp_path):
    script = tmp_path / "train_loop.py"
    script.write_text(TRAINING_LOOP)
    terminal = Tmux(f"{sys.executable} -m tracegrad tui {script}", cwd=tmp_path)
    try:
        # It opens on the first finding: the NaN of step 400.
        screen = terminal.wait_for("opened at the first violation: pass 400")
        assert "pass 400 (401 of 500)" in screen
        terminal.keys(":")
        terminal.wait_for("pass:step")
        terminal.keys("250:3", "Enter")
        screen = terminal.wait_for("pass 250 (251 of 500)", "step 3/")
        assert "backward(loss) at" in screen and "train_loop.py:11, 13 steps" in screen
        terminal.keys("c")
        screen = terminal.wait_for("stopped at pass 400")
        assert "pass 400 (401 of 500)" in screen
        assert "NaN first appeared in backward: PowBackward0" in screen
        terminal.keys("q")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and subprocess.run(
                ["tmux", "-L", terminal.socket, "has-session", "-t", terminal.session],
                capture_output=True, check=False).returncode == 0:
            time.sleep(0.2)
    finally:
        terminal.close()
