"""`tracegrad run` and `tracegrad check`, run as the user runs them: in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import tracegrad as tg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _tracegrad(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tracegrad", *args], cwd=cwd, check=False,
                          capture_output=True, text=True, timeout=120)


def _source_lines(example: str) -> list[str]:
    with open(os.path.join(ROOT, "examples", example)) as handle:
        return handle.read().splitlines()


def _script(tmp_path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_run_saves_a_trace_with_script_arguments(tmp_path):
    script = _script(tmp_path, "args.py", """
        import sys
        import tracegrad as torch
        steps = int(sys.argv[1])
        w = torch.ones(3, requires_grad=True)
        for _ in range(steps):
            loss = (w * w).sum()
            loss.backward()
        print("argv", sys.argv[1:])
    """)
    output = tmp_path / "out.tgtrace"
    result = _tracegrad("run", script, "3", "--flag", "-o", str(output))
    assert result.returncode == 0, result.stderr
    assert "argv ['3', '--flag']" in result.stdout
    assert "wrote" in result.stderr
    trace = tg.load_trace(output)
    assert len(trace.passes) == 3 and trace.exception is None
    assert trace.metadata["argv"] == ["3", "--flag"]
    assert {record.name for record in trace.tensors.values()} >= {"w", "loss"}


def test_run_of_a_crashing_script_still_writes_the_trace(tmp_path):
    output = tmp_path / "crash.tgtrace"
    result = _tracegrad("run", "examples/inplace_bug.py", "-o", str(output))
    assert result.returncode == 1
    assert "raised InplaceError at examples/inplace_bug.py:" in result.stderr
    assert "trace up to the failure was written" in result.stderr
    trace = tg.load_trace(output)
    assert trace.exception.type == "InplaceError"
    assert trace.exception.site.file == "examples/inplace_bug.py"
    assert trace.exception.site.code == "loss.backward()"
    assert "Traceback" in trace.exception.traceback
    assert trace.passes[0].error.startswith("InplaceError")
    assert [v.kind for v in trace.violations] == ["inplace_saved", "inplace_saved"]


def test_check_prints_both_sites_and_exits_1():
    result = _tracegrad("check", "examples/inplace_bug.py")
    assert result.returncode == 1
    source = _source_lines("inplace_bug.py")
    inplace_line = next(i for i, text in enumerate(source, 1) if text.startswith("h += 0.1"))
    mm_line = next(i for i, text in enumerate(source, 1) if "h.mm(w2)" in text)
    relu_line = next(i for i, text in enumerate(source, 1) if ".relu()" in text)
    out = result.stdout
    assert f"examples/inplace_bug.py:{inplace_line}: in-place change" in out
    assert f"saved by     MmBackward0 at examples/inplace_bug.py:{mm_line}" in out
    assert f"saved by     ReluBackward0 at examples/inplace_bug.py:{relu_line}" in out
    assert "saved at 0, now 1" in out
    assert "2 violations" in result.stderr


def test_check_nan_example():
    result = _tracegrad("check", "examples/nan_bug.py")
    assert result.returncode == 1
    source = _source_lines("nan_bug.py")
    log_line = next(i for i, text in enumerate(source, 1)
                    if text.startswith("log_spread = spread.log()"))
    assert f"examples/nan_bug.py:{log_line}: Inf in forward [inf]" in result.stdout
    assert "in backward" in result.stdout


def test_check_clean_script_exits_0(tmp_path):
    script = _script(tmp_path, "clean.py", """
        import tracegrad as torch
        w = torch.ones(2, requires_grad=True)
        (w * 2).sum().backward()
    """)
    result = _tracegrad("check", script)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no violations" in result.stderr


def test_check_script_that_fails_without_violation_exits_2(tmp_path):
    script = _script(tmp_path, "fails.py", """
        raise ValueError("boom")
    """)
    result = _tracegrad("check", script)
    assert result.returncode == 2
    assert "raised ValueError" in result.stderr and "boom" in result.stderr


def test_run_missing_script(tmp_path):
    result = _tracegrad("run", str(tmp_path / "absent.py"))
    assert result.returncode == 2
    assert "no such file" in result.stderr


@pytest.mark.parametrize("example", ["two_layer_net_clamp.py", "exp_function.py"])
def test_run_script_api_on_examples(example):
    from tracegrad.tracing import run_script

    if not os.path.exists(os.path.join(ROOT, "examples", example)):
        pytest.skip(f"examples/{example} is not in this checkout")
    trace = run_script(os.path.join(ROOT, "examples", example), [], values=False)
    assert trace.exception is None
    assert trace.nodes and trace.passes
