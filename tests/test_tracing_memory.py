"""What backward keeps: saved bytes, distinct storage, the peak between forward and
backward, by module and line, tensors saved twice; in summary(), check --memory, the TUI."""

from __future__ import annotations

import textwrap

import pytest

import tracegrad as tg
from tracegrad.cli import main
from tracegrad.tracing.memory import memory_report

ENGINES = [pytest.param(False, id="tracegrad"),
           pytest.param(True, id="torch", marks=pytest.mark.torch)]


def _lib(real_torch: bool):
    return pytest.importorskip("torch") if real_torch else tg


@pytest.mark.parametrize("real_torch", ENGINES)
def test_known_byte_counts_and_a_tensor_saved_by_two_nodes(real_torch):
    lib = _lib(real_torch)
    x = lib.ones(8, 4, requires_grad=True)  # 8 * 4 float32: 128 bytes
    with tg.record() as trace:
        a = x.exp()  # ExpBackward0 saves its result a
        b = a * a  # MulBackward0 saves a as self and as other
        b.sum().backward()
    report = memory_report(trace)
    assert (report.saved_count, report.saved_bytes) == (3, 384)
    assert report.distinct_bytes == 128 and report.peak_bytes == 128
    assert report.peak_pass == 0
    (twice,) = report.saved_twice
    assert twice.kind == "shared" and twice.nbytes == 128
    assert trace.tensor(twice.tensor).name == "a"
    assert [holder.name for holder in twice.holders] == ["ExpBackward0", "MulBackward0"]
    assert [line[1] for line in report.by_line] == [128, 128]  # two lines, both hold a


@pytest.mark.parametrize("real_torch", ENGINES)
def test_an_input_and_its_copy_both_saved(real_torch):
    lib = _lib(real_torch)
    x = lib.ones(4, requires_grad=True)
    w = lib.ones(4, requires_grad=True)
    with tg.record() as trace:
        a = x.exp()  # saves a
        c = a.clone()
        d = (c * w).sum()  # saves c (a copy of a) and w
        d.backward()
    report = memory_report(trace)
    copies = [twice for twice in report.saved_twice if twice.kind == "copy"]
    (copy,) = copies
    assert (trace.tensor(copy.tensor).name, trace.tensor(copy.original).name) == ("c", "a")
    assert copy.nbytes == 16
    assert "'c' float32 [4], a copy of 'a' float32 [4]: both saved" in trace.summary()


def test_peak_is_one_iteration_unless_the_graph_is_retained():
    w = tg.ones(16, requires_grad=True)  # 64 bytes

    def peak(retain: bool) -> tuple[int, int]:
        with tg.record() as trace:
            for _ in range(3):
                h = w.exp()  # saves h: 64 bytes per iteration
                h.sum().backward(retain_graph=retain)
        report = memory_report(trace)
        return report.peak_bytes, report.saved_bytes

    assert peak(False) == (64, 192)  # each backward frees its iteration's graph
    assert peak(True) == (192, 192)  # retained: the three graphs are held at once


def test_peak_without_backward_counts_everything_saved():
    w = tg.ones(4, requires_grad=True)
    with tg.record() as trace:
        w.exp().exp()
    report = memory_report(trace)
    assert (report.peak_bytes, report.peak_pass) == (32, None)


def test_by_module_at_the_peak():
    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(4, 3), tg.nn.ReLU())
    with tg.record() as trace:
        model(tg.ones(2, 4)).sum().backward()
    report = memory_report(trace)
    by_module = dict(report.by_module)
    assert by_module["1"] == 24  # ReLU saves its [2, 3] float32 result
    linear = sum(node.saved_bytes for node in trace.nodes.values() if node.module == "0")
    assert by_module["0"] == linear > 0
    assert report.by_module[0][1] >= report.by_module[-1][1]  # largest first
    summary = trace.summary()
    assert "at the peak, by module:" in summary and "peak held between forward and " \
        "backward" in summary


def test_check_memory_prints_the_report_and_keeps_exit_0(tmp_path, capsys):
    script = tmp_path / "clean.py"
    script.write_text(textwrap.dedent("""
        import tracegrad as torch
        x = torch.ones(8, 4, requires_grad=True)
        a = x.exp()
        (a * a).sum().backward()
    """))
    assert main(["check", "--memory", str(script)]) == 0
    out = capsys.readouterr().out
    assert "saved for backward: 3 tensors, 384 B (128 B in distinct storage); peak held " \
        "between forward and backward 128 B (as pass 0 started)" in out
    assert "at the peak, by line:" in out
    assert "saved twice:" in out and "'a' float32 [8, 4] saved by ExpBackward0" in out


def test_check_inf_exit_codes(tmp_path, capsys):
    script = tmp_path / "overflow.py"
    script.write_text(textwrap.dedent("""
        import tracegrad as torch
        logits = torch.tensor([1.0, 100.0], requires_grad=True)
        logits.exp().sum().backward()
    """))
    assert main(["check", str(script)]) == 0  # only an Inf: not counted by default
    err = capsys.readouterr().err
    assert "2 Inf findings not counted (Inf can be meant); --inf reports them" in err
    assert main(["check", "--inf", str(script)]) == 1
    captured = capsys.readouterr()
    assert "cause        exp overflow past 88.72 in float32 at 1 of 2 elements of " \
        "'logits' ([1] = 100)" in captured.out
    assert "2 findings in" in captured.err
    # Backward multiplies by exp's result: the Inf it made in forward, named as the cause.
    assert "cause        an input that was already non-finite at 1 of 2 elements of " \
        "t1 ([1] = inf)" in captured.out
