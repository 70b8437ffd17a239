"""`tracegrad run` and `tracegrad check`, and the conventions every subcommand shares: the
argument grammar, the one error prefix, the exit statuses. Run in-process through
``tracegrad.cli.main`` (signals, which need a real process, are in test_tracing_signals.py).
"""

from __future__ import annotations

import os
import textwrap

import pytest

import tracegrad as tg
from tracegrad.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _source_lines(example: str) -> list[str]:
    with open(os.path.join(ROOT, "examples", example)) as handle:
        return handle.read().splitlines()


def _script(tmp_path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


ARGS_SCRIPT = """
    import sys
    import tracegrad as torch
    steps = int(sys.argv[1])
    w = torch.ones(3, requires_grad=True)
    for _ in range(steps):
        loss = (w * w).sum()
        loss.backward()
    print("argv", sys.argv[1:])
    if "-o" in sys.argv:
        open(sys.argv[sys.argv.index("-o") + 1], "w").write("the script's own file")
"""


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_run_saves_a_trace_options_before_the_script_arguments_after(in_tmp, capsys):
    script = _script(in_tmp, "args.py", ARGS_SCRIPT)
    assert main(["run", "-o", "out.tgtrace", script, "3", "--flag"]) == 0
    captured = capsys.readouterr()
    assert "argv ['3', '--flag']" in captured.out
    assert captured.err == "tracegrad run: wrote out.tgtrace (7 nodes, 3 backward passes, " \
                           "0 violations)\n"
    trace = tg.load_trace(in_tmp / "out.tgtrace")
    assert len(trace.passes) == 3 and trace.exception is None
    assert trace.metadata["argv"] == ["3", "--flag"]
    assert {record.name for record in trace.tensors.values()} >= {"w", "loss"}


def test_an_option_after_the_script_is_refused_not_guessed(in_tmp, capsys):
    script = _script(in_tmp, "args.py", ARGS_SCRIPT)
    (in_tmp / "model.pt").write_text("the user's model")
    assert main(["run", script, "1", "-o", "model.pt"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("tracegrad run: '-o' comes after the target")
    assert f"tracegrad run {script} -- -o" in error
    assert (in_tmp / "model.pt").read_text() == "the user's model"  # not a trace zip
    assert not (in_tmp / "args.tgtrace").exists()  # nothing ran


def test_after_double_dash_the_script_gets_everything(in_tmp, capsys):
    script = _script(in_tmp, "args.py", ARGS_SCRIPT)
    assert main(["run", script, "--", "1", "-o", "model.pt"]) == 0
    assert "argv ['1', '-o', 'model.pt']" in capsys.readouterr().out
    assert (in_tmp / "model.pt").read_text() == "the script's own file"
    assert tg.load_trace(in_tmp / "args.tgtrace").metadata["argv"] == ["1", "-o", "model.pt"]


def test_a_crash_prints_the_script_s_own_traceback_and_keeps_the_trace(in_tmp, capsys):
    script = _script(in_tmp, "crash.py", """
        import tracegrad as torch
        w = torch.ones(2, requires_grad=True)
        (w * 2).sum().backward()
        def inner():
            raise ValueError("boom")
        inner()
    """)
    assert main(["run", script]) == 1
    error = capsys.readouterr().err
    frames = [line for line in error.splitlines() if line.startswith("  File ")]
    assert frames[0].startswith(f'  File "{script}", line 7, in <module>')
    assert "runner.py" not in error and "runpy" not in error
    assert error.splitlines()[-1] == (f"tracegrad run: '{script}' raised ValueError at "
                                      f"{os.path.relpath(script)}:6: boom; the trace up to "
                                      "then was written to crash.tgtrace (3 nodes, "
                                      "1 backward pass, 0 violations)")
    trace = tg.load_trace(in_tmp / "crash.tgtrace")
    assert trace.exception.type == "ValueError"
    assert trace.exception.traceback.startswith("Traceback (most recent call last):\n"
                                                f'  File "{script}"')


def test_the_script_s_exit_status_comes_through(in_tmp, capsys):
    script = _script(in_tmp, "exits.py", """
        import sys
        import tracegrad as torch
        w = torch.ones(2, requires_grad=True)
        (w * 2).sum().backward()
        sys.exit(3)
    """)
    assert main(["run", script]) == 3
    error = capsys.readouterr().err
    assert "Traceback" not in error
    assert error.count("\n") == 1
    assert error.startswith(f"tracegrad run: '{script}' exited with status 3 at ")
    assert tg.load_trace(in_tmp / "exits.tgtrace").metadata["exit_status"] == 3


def test_sys_exit_with_a_message_exits_1_and_says_it(in_tmp, capsys):
    script = _script(in_tmp, "message.py", """
        import sys
        import tracegrad as torch
        w = torch.ones(2, requires_grad=True)
        (w * 2).sum().backward()
        sys.exit("bad configuration")
    """)
    assert main(["run", script]) == 1
    error = capsys.readouterr().err
    assert "exited with status 1" in error and ": bad configuration;" in error
    assert "Traceback" not in error


def test_sys_exit_0_is_success(in_tmp, capsys):
    script = _script(in_tmp, "zero.py", """
        import sys
        import tracegrad as torch
        (torch.ones(2, requires_grad=True) * 2).sum().backward()
        sys.exit(0)
    """)
    assert main(["run", script]) == 0


def test_a_syntax_error_is_one_line_and_writes_nothing(in_tmp, capsys):
    script = _script(in_tmp, "bad.py", """
        import tracegrad as torch
        x = = 1
    """)
    assert main(["run", script]) == 2
    error = capsys.readouterr().err
    assert error == (f"tracegrad run: cannot run '{script}': SyntaxError at "
                     f"{os.path.relpath(script)}:3: invalid syntax (`x = = 1`)\n")
    assert not (in_tmp / "bad.tgtrace").exists()


@pytest.mark.parametrize("command", ["run", "check", "render", "tui"])
def test_a_missing_script_has_one_prefix_and_exit_2(in_tmp, capsys, command):
    extra = ["--dump"] if command == "tui" else []
    assert main([command, *extra, "nope.py"]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"tracegrad {command}: cannot run 'nope.py': no such file.")
    assert "tracegrad: " not in error and error.count("\n") == 1


def test_a_trace_file_is_not_a_script(in_tmp, capsys):
    tg.tracing.save_trace(tg.Trace(), in_tmp / "run.tgtrace")
    assert main(["run", "run.tgtrace"]) == 2
    assert "it is not a Python script" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["run", "check", "render", "tui"])
def test_nothing_recorded_is_said_in_one_line_not_an_empty_result(in_tmp, capsys, command):
    script = _script(in_tmp, "nothing.py", """
        import tracegrad as torch
        print((torch.ones(2) * 2).sum().item())
    """)
    extra = ["--dump"] if command == "tui" else []
    extra += ["-o", "graph.dot"] if command == "render" else []
    assert main([command, *extra, script]) == 1
    captured = capsys.readouterr()
    assert captured.err == (f"tracegrad {command}: nothing was recorded: the script did not "
                            "build an autograd graph with tracegrad or torch "
                            f"('{script}' ran without an operation on a tensor that requires "
                            "grad). Hint: create the tensors to differentiate with "
                            "requires_grad=True, e.g. torch.randn(3, requires_grad=True); "
                            "tracegrad records programs on its own engine (`import tracegrad "
                            "as torch`) and on real PyTorch (`import torch`)." +
                            (" No trace was written." if command == "run" else "") + "\n")
    assert list(in_tmp.iterdir()) == [in_tmp / "nothing.py"]  # no empty file or picture
    assert "step" not in captured.out  # no empty debugger dump


def test_help_documents_the_grammar_and_the_exit_statuses(capsys):
    assert main(["--help"]) == 0
    top = capsys.readouterr().out
    for command in ("run", "check", "render", "tui"):
        assert main([command, "--help"]) == 0
        text = capsys.readouterr().out
        assert "exit status:" in text and "2    usage error" in text
        assert "TARGET [--] [SCRIPT ARGS ...]" in text
    assert "run passes the script's own status through" in top
    assert "128+N" in top


def test_usage_errors_have_the_command_prefix_and_exit_2(capsys):
    assert main(["run", "--budget-mb", "lots", "x.py"]) == 2
    assert "tracegrad run: argument --budget-mb: expected a number of MiB" in \
        capsys.readouterr().err
    assert main(["run"]) == 2
    assert "tracegrad run: the following arguments are required: TARGET" in \
        capsys.readouterr().err


def test_check_gives_one_finding_for_one_line_that_broke_two_saved_copies(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["check", "examples/inplace_bug.py"]) == 1
    captured = capsys.readouterr()
    source = _source_lines("inplace_bug.py")
    inplace_line = next(i for i, text in enumerate(source, 1) if text.startswith("h += 0.1"))
    mm_line = next(i for i, text in enumerate(source, 1) if "h.mm(w2)" in text)
    relu_line = next(i for i, text in enumerate(source, 1) if ".relu()" in text)
    out = captured.out
    assert out.count("in-place change of a tensor saved for backward") == 1
    assert f"examples/inplace_bug.py:{inplace_line}: in-place change" in out
    assert ("'h' float32 [8, 16] was modified in place by 'add_' after ReluBackward0 and "
            "MmBackward0 saved it for backward") in out
    assert f"saved by     ReluBackward0 at examples/inplace_bug.py:{relu_line}" in out
    assert f"saved by     MmBackward0 at examples/inplace_bug.py:{mm_line}" in out
    assert out.count("Hint:") == 1
    assert "saved at 0, now 1" in out
    assert captured.err.endswith("tracegrad check: 1 finding in examples/inplace_bug.py\n")


def test_check_nan_example_hints_fit_the_op(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["check", "examples/nan_bug.py"]) == 1
    captured = capsys.readouterr()
    out = captured.out
    source = _source_lines("nan_bug.py")
    log_line = next(i for i, text in enumerate(source, 1)
                    if text.startswith("log_spread = spread.log()"))
    loss_line = log_line + 1
    # Only NaN counts by default: the first NaN is -inf * 0 on the loss line, and its cause
    # names the log line where the Inf came from.
    assert f"examples/nan_bug.py:{loss_line}: NaN in forward [nan]" in out
    assert "cause        Inf × 0 at 1 of 2 elements of 'log_spread' ([1] = -inf)" in out
    assert f"first Inf    LogBackward0 at examples/nan_bug.py:{log_line}" in out
    assert "cause        the derivative of log at 0 (1/x) at 1 of 2 elements of 'spread' " \
        "([1] = 0)" in out
    assert "Inf in forward" not in out
    assert "4 Inf findings not counted (Inf can be meant); --inf reports them" in captured.err


def test_check_inf_counts_inf_findings(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["check", "--inf", "examples/nan_bug.py"]) == 1
    captured = capsys.readouterr()
    source = _source_lines("nan_bug.py")
    log_line = next(i for i, text in enumerate(source, 1)
                    if text.startswith("log_spread = spread.log()"))
    exp_line = next(i for i, text in enumerate(source, 1) if text.startswith("grown ="))
    assert f"examples/nan_bug.py:{log_line}: Inf in forward [inf]" in captured.out
    assert "cause        log of 0 at 1 of 2 elements of 'spread' ([1] = 0)" in captured.out
    assert f"examples/nan_bug.py:{exp_line}: Inf in forward [inf]" in captured.out
    assert "cause        exp overflow past 88.72 in float32 at 1 of 2 elements of 'logits' " \
        "([1] = 100)" in captured.out
    # The NaN an Inf then made is that Inf's consequence, not a finding of its own.
    assert "Inf × 0" not in captured.out and "Inf - Inf" not in captured.out
    assert "not counted" not in captured.err


def test_an_overflow_in_mm_does_not_blame_log_or_sqrt(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    script = _script(tmp_path, "overflow.py", """
        import tracegrad as torch
        x = torch.full((2, 2), 1e30)
        w = torch.full((2, 2), 1e30, requires_grad=True)
        loss = x.mm(w).sum()
        loss.backward()
    """)
    assert main(["check", "--inf", script]) == 1
    out = capsys.readouterr().out
    assert "MmBackward0" in out and "Inf in forward" in out
    assert "log" not in out and "sqrt" not in out
    assert "values grew too large for float32" in out


def test_check_clean_script_exits_0(tmp_path, capsys):
    script = _script(tmp_path, "clean.py", """
        import tracegrad as torch
        w = torch.ones(2, requires_grad=True)
        (w * 2).sum().backward()
    """)
    assert main(["check", script]) == 0
    assert "no violations" in capsys.readouterr().err


def test_check_script_that_fails_without_violation_exits_1(tmp_path, capsys):
    script = _script(tmp_path, "fails.py", """
        import tracegrad as torch
        w = torch.ones(2, requires_grad=True)
        (w * 2).sum().backward()
        raise ValueError("boom")
    """)
    assert main(["check", script]) == 1
    error = capsys.readouterr().err
    assert "raised ValueError" in error and "boom" in error


def test_tui_takes_run_s_recording_options(in_tmp, capsys, monkeypatch):
    from tracegrad.tui import dump

    seen = []
    monkeypatch.setattr(dump, "dump_steps",
                        lambda trace, all_passes: seen.append(trace) or "steps\n")
    script = _script(in_tmp, "loop.py", ARGS_SCRIPT)
    assert main(["tui", "--dump", "--keep-passes", "1", "0", "--budget-mb", "1",
                 "--no-values", script, "4"]) == 0
    (trace,) = seen
    assert trace.metadata["keep_passes"] == [1, 0]
    assert trace.metadata["budget_bytes"] == 1024 * 1024
    assert trace.metadata["values"] is False
    assert len(trace.passes) == 4


def test_tui_dump_after_the_script_is_refused(in_tmp, capsys):
    script = _script(in_tmp, "loop.py", ARGS_SCRIPT)
    assert main(["tui", script, "--dump"]) == 2
    error = capsys.readouterr().err
    assert "'--dump' comes after the target" in error
    assert f"tracegrad tui --dump ... {script}" in error


@pytest.mark.parametrize("example", ["autograd_basics.py", "exp_function.py"])
def test_run_script_api_on_examples(example):
    from tracegrad.tracing import run_script

    if not os.path.exists(os.path.join(ROOT, "examples", example)):
        pytest.skip(f"examples/{example} is not in this checkout")
    trace = run_script(os.path.join(ROOT, "examples", example), [], values=False)
    assert trace.exception is None
    assert trace.nodes and trace.passes


def test_two_copies_of_one_script_each_name_their_own_file(tmp_path, monkeypatch):
    # Code objects of identical source compare equal across files; the site cache must not
    # give the second copy the first one's file name.
    monkeypatch.chdir(tmp_path)
    body = """
        import tracegrad as torch
        w = torch.ones(2, requires_grad=True)
        (w * 2).sum().backward()
    """
    first = tg.tracing.run_script(_script(tmp_path, "first.py", body))
    second = tg.tracing.run_script(_script(tmp_path, "second.py", body))
    assert {node.site.file for node in first.nodes.values() if node.site} == {"first.py"}
    assert {node.site.file for node in second.nodes.values() if node.site} == {"second.py"}
