"""`tracegrad check | run | render | tui --dump` on scripts that keep `import torch`, end to
end, and the one line for a script without a graph. One test runs the command in a
subprocess, as a user does; the others call the same entry point in this process (torch is
imported once, not once per test)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import tracegrad as tg

pytestmark = pytest.mark.torch
pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTHING = ("nothing was recorded: the script did not build an autograd graph with tracegrad "
           "or torch")

INPLACE_BUG = """
    import torch

    torch.manual_seed(0)
    x = torch.randn(8, 4)
    w1 = torch.randn(4, 16, requires_grad=True)
    w2 = torch.randn(16, 2, requires_grad=True)
    h = x.mm(w1).relu()
    prediction = h.mm(w2)
    loss = prediction.pow(2).mean()
    h += 0.1
    print(f"loss {loss.item():.4f}")
    loss.backward()
"""

MLP = """
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    points, labels = torch.randn(16, 2), torch.randint(0, 3, (16,))
    for _ in range(3):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(points), labels)
        loss.backward()
        optimizer.step()
    print(f"loss {loss.item():.4f}")
"""


def _subprocess(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tracegrad", *args], cwd=ROOT, check=False,
                          capture_output=True, text=True, timeout=300)


class _Result:
    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def tracegrad_cli(capsys, monkeypatch):
    """``tracegrad ARGS`` in this process: (exit status, stdout, stderr)."""
    from tracegrad.cli import main

    monkeypatch.chdir(ROOT)

    def run(*args) -> _Result:
        capsys.readouterr()
        status = main(list(args))
        captured = capsys.readouterr()
        return _Result(status, captured.out, captured.err)

    return run


def _script(tmp_path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_check_names_the_inplace_line_and_both_saving_lines(tmp_path):
    script = _script(tmp_path, "bug.py", INPLACE_BUG)
    result = _subprocess("check", script)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    headers = [line for line in lines if "[inplace_saved]" in line]
    assert len(headers) == 1 and ":11: in-place change" in headers[0]  # one finding, both savers
    assert "saved by     ReluBackward0 at" in result.stdout and ":8   h = x.mm(w1).relu()" \
        in result.stdout
    assert "saved by     MmBackward0 at" in result.stdout and ":9   prediction = h.mm(w2)" \
        in result.stdout
    assert "raised RuntimeError at" in result.stderr  # torch's own error, still
    assert "1 finding in" in result.stderr


def test_check_of_a_clean_torch_training_loop(tmp_path, tracegrad_cli):
    result = tracegrad_cli("check", _script(tmp_path, "mlp.py", MLP))
    assert result.returncode == 0, result.stderr
    assert "no violations in" in result.stderr and result.stdout.startswith("loss ")


def test_run_saves_a_torch_trace_that_loads(tmp_path, tracegrad_cli):
    output = tmp_path / "mlp.tgtrace"
    result = tracegrad_cli("run", "-o", str(output), _script(tmp_path, "mlp.py", MLP))
    assert result.returncode == 0, result.stderr
    trace = tg.load_trace(output)
    assert trace.metadata["engine"] == "torch" and len(trace.passes) == 3
    leaves = {trace.tensor(node.leaf).name for node in trace.iter_nodes()
              if node.kind == "accumulate"}
    assert leaves == {"0.weight", "0.bias", "2.weight", "2.bias"}


def test_render_draws_the_torch_graph_with_parameter_names(tmp_path, tracegrad_cli):
    output = tmp_path / "mlp.dot"
    result = tracegrad_cli("render", "-o", str(output), "--format", "dot",
                           _script(tmp_path, "mlp.py", MLP))
    assert result.returncode == 0, result.stderr
    source = output.read_text()
    for expected in ("AddmmBackward0", "NllLossBackward0", "0.weight", "2.bias",
                     "cluster"):
        assert expected in source


@pytest.mark.graphviz
def test_render_writes_an_svg(tmp_path, tracegrad_cli):
    output = tmp_path / "bug.svg"
    result = tracegrad_cli("render", "-o", str(output), _script(tmp_path, "bug.py", INPLACE_BUG))
    assert result.returncode == 1  # the script raised; the picture shows what was recorded
    assert output.read_text().lstrip().startswith(("<?xml", "<svg"))
    assert "ReluBackward0" in output.read_text()


def test_tui_dump_steps_through_torch_backward(tmp_path, tracegrad_cli):
    result = tracegrad_cli("tui", "--dump", _script(tmp_path, "mlp.py", MLP))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.count("pass ") >= 3 and "NllLossBackward0" in out and "AccumulateGrad" in out


@pytest.mark.parametrize("command", [("check",), ("run",), ("render", "--format", "dot"),
                                     ("tui", "--dump")])
@pytest.mark.parametrize("body", [
    "import torch\nprint((torch.ones(3) * 2).sum().item())\n",
    "print('no tensors at all')\n",
], ids=["torch-without-grad", "plain-python"])
def test_a_script_without_a_graph_says_so_and_fails(tmp_path, tracegrad_cli, command, body):
    script = _script(tmp_path, "plain.py", body)
    extra = ("-o", str(tmp_path / "out.dot")) if command[0] == "render" else ()
    extra += ("-o", str(tmp_path / "out.tgtrace")) if command[0] == "run" else ()
    result = tracegrad_cli(*command[:1], *extra, *command[1:], script)
    assert result.returncode != 0
    assert any(line.startswith(f"tracegrad {command[0]}: {NOTHING} (")
               for line in result.stderr.splitlines()), result.stderr
    assert "no violations" not in result.stderr
