"""The pytest plugin, exercised in fresh temporary projects with pytester.

Runs are in-process (``runpytest_inprocess``: a subprocess per run cost the suite about
100 s); the one test that proves the ``pytest11`` entry point loads the plugin the way a
user gets it runs pytest in a subprocess.
"""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest
import tutorial_programs

from tracegrad.testing import plugin

pytest_plugins = ["pytester"]

# The tutorial's MemoryEfficientSwish (and its other Functions), written into each project.
SWISH = Path(tutorial_programs.__file__).read_text(encoding="utf-8")


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch) -> pytest.Pytester:
    """A temporary project holding the tutorial's MemoryEfficientSwish as swish.py."""
    monkeypatch.delenv("CI", raising=False)  # snapshot policy depends on it
    pytester.makepyfile(swish=SWISH)
    return pytester


# Plugins the inner sessions do without: textual-snapshot keeps session state in module
# globals that an inner session would tear down under the outer one, and hypothesis's
# terminal summary re-imports hypothesis (seconds) in every inner session.
OTHER_PLUGINS = ("-p", "no:textual-snapshot", "-p", "no:hypothesispytest", "-p", "no:syrupy",
                 "-p", "no:xdist", "-p", "no:xdist.looponfail", "-p", "no:cacheprovider")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(*OTHER_PLUGINS, "-rs", *args)


def test_assert_graph_passes_and_fails_with_a_diff(project):
    project.makepyfile(test_swish='''
        import tracegrad as torch
        from tracegrad.testing import assert_graph
        from swish import MemoryEfficientSwish

        def test_swish_saves_only_its_input():
            x = torch.randn(8, requires_grad=True)
            y = MemoryEfficientSwish()(x).sum()
            assert_graph(y, """
                SumBackward0
                  SwishImplementationBackward  saves: x f32[8]
                    AccumulateGrad  x f32[8]
            """)

        def test_wrong_expectation():
            x = torch.randn(8, requires_grad=True)
            y = MemoryEfficientSwish()(x).mean()
            assert_graph(y, """
                SumBackward0
                  SwishImplementationBackward  saves: x f32[8]
                    AccumulateGrad  x f32[8]
            """)
    ''')
    result = run(project)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*the autograd graph differs from the expected text*",
        "*--- expected",
        "*+++ actual",
        "*-SumBackward0",
        "*+MeanBackward0",
    ])


def test_assertions_module_is_rewritten_by_pytest(project):
    project.makepyfile(test_rewrite='''
        import tracegrad.testing.assertions as assertions

        def test_rewritten():
            assert type(assertions.__loader__).__name__ == "AssertionRewritingHook"
    ''')
    run(project).assert_outcomes(passed=1)


def test_snapshot_is_written_compared_and_updated(project):
    test_file = '''
        import tracegrad as torch
        from swish import MemoryEfficientSwish

        def test_swish_graph(graph_snapshot):
            x = torch.randn(8, requires_grad=True)
            graph_snapshot(MemoryEfficientSwish()(x).{reduction}())
    '''
    project.makepyfile(test_snap=textwrap.dedent(test_file.format(reduction="sum")))
    snapshot = project.path / "__graph_snapshots__" / "test_snap" / "test_swish_graph.txt"

    first = run(project)
    first.assert_outcomes(passed=1)
    first.stdout.fnmatch_lines(["tracegrad: stored new 1 graph snapshot(s):",
                                "*__graph_snapshots__/test_snap/test_swish_graph.txt"])
    assert snapshot.read_text() == (
        "SumBackward0\n"
        "  SwishImplementationBackward  saves: x f32[8]\n"
        "    AccumulateGrad  x f32[8]\n")

    run(project).assert_outcomes(passed=1)  # unchanged graph: compares equal

    project.makepyfile(test_snap=textwrap.dedent(test_file.format(reduction="mean")))
    changed = run(project)
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines([
        ("*the graph differs from its snapshot __graph_snapshots__/test_snap/"
         "test_swish_graph.txt*"),
        "*-SumBackward0", "*+MeanBackward0",
        "*run pytest with --tracegrad-update*"])
    assert snapshot.read_text().startswith("SumBackward0\n")  # a failure never overwrites

    updated = run(project, "--tracegrad-update")
    updated.assert_outcomes(passed=1)
    updated.stdout.fnmatch_lines(["tracegrad: updated 1 graph snapshot(s):"])
    assert snapshot.read_text().startswith("MeanBackward0\n")
    run(project).assert_outcomes(passed=1)


def test_named_and_repeated_snapshots_get_their_own_files(project):
    project.makepyfile(test_names='''
        import tracegrad as torch

        def test_two_graphs(graph_snapshot):
            x = torch.randn(3, requires_grad=True)
            graph_snapshot(x.exp().sum())
            graph_snapshot(x.sin().sum())
            graph_snapshot(x.cos().sum(), name="cosine")
    ''')
    run(project).assert_outcomes(passed=1)
    folder = project.path / "__graph_snapshots__" / "test_names"
    assert sorted(p.name for p in folder.iterdir()) == [
        "test_two_graphs.2.txt", "test_two_graphs.cosine.txt", "test_two_graphs.txt"]
    assert (folder / "test_two_graphs.cosine.txt").read_text().splitlines()[1] == (
        "  CosBackward0  saves: x f32[3]")


def test_failing_test_gets_its_graph_drawn_and_named_in_the_report(project):
    project.makepyfile(test_fail='''
        import tracegrad as torch
        from swish import MemoryEfficientSwish

        def test_loss_is_small(graph_snapshot):
            x = torch.randn(8, requires_grad=True)
            loss = MemoryEfficientSwish()(x).sum()
            graph_snapshot(loss)
            assert loss.item() < -100, "loss too large"

        def test_passes(graph_snapshot):
            x = torch.randn(2, requires_grad=True)
            graph_snapshot(x.exp().sum())
    ''')
    artifacts = project.path / "drawn"
    result = run(project, "--tracegrad-artifacts", str(artifacts))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*tracegrad graph*",
                                 f"snapshot: graph written to {artifacts}/*test_loss_is_small*"])
    drawn = sorted(p.name for p in artifacts.iterdir())
    assert len(drawn) == 1 and "test_loss_is_small" in drawn[0]  # only the failing test
    content = (artifacts / drawn[0]).read_text()
    if shutil.which("dot") is not None and drawn[0].endswith(".svg"):
        assert "<svg" in content and "SwishImplementationBackward" in content
    else:  # no dot (or no exporter yet): DOT source or the canonical text
        assert "SwishImplementationBackward" in content


def test_default_artifact_folder_and_dot_text_without_graphviz(project, monkeypatch):
    project.makepyfile(test_fail='''
        import tracegrad as torch

        def test_fails(tracegrad_trace):
            x = torch.randn(2, requires_grad=True)
            x.exp().sum().backward()
            assert False
    ''')
    monkeypatch.setenv("PATH", str(project.mkdir("empty_bin")))  # no `dot`: DOT text instead
    result = run(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["trace: graph written to *.tracegrad/failures/*test_fails.dot"])
    (drawn,) = (project.path / ".tracegrad" / "failures").iterdir()
    dot_source = drawn.read_text()
    assert dot_source.lstrip().startswith("digraph") and "ExpBackward0" in dot_source


def test_tracegrad_trace_records_the_test_body(project):
    project.makepyfile(test_trace='''
        import tracegrad as torch
        from tracegrad.testing import assert_no_violations, graph_text

        def test_recorded(tracegrad_trace):
            w = torch.ones(3, requires_grad=True)
            loss = (w * w).sum()
            loss.backward()
            assert graph_text(tracegrad_trace).splitlines() == [
                "SumBackward0",
                "  MulBackward0  saves: w f32[3], w f32[3]",
                "    AccumulateGrad  w f32[3]",
                "    AccumulateGrad  w f32[3]",
            ]
            assert_no_violations(tracegrad_trace)
    ''')
    run(project).assert_outcomes(passed=1)


def test_markers_skip_with_a_reason(project, monkeypatch):
    project.makepyfile(test_markers='''
        import pytest

        @pytest.mark.tracegrad_graphviz
        def test_needs_dot():
            pass

        @pytest.mark.tracegrad_gpu
        def test_needs_gpu():
            pass
    ''')
    empty = project.mkdir("empty_bin")
    monkeypatch.setenv("PATH", str(empty))  # no `dot` on this PATH
    result = run(project, "--strict-markers")
    gpu_reason = plugin.gpu_missing()
    if gpu_reason is None:
        result.assert_outcomes(passed=1, skipped=1)
    else:
        result.assert_outcomes(skipped=2)
        result.stdout.fnmatch_lines(["*tracegrad_gpu: CuPy*"])
    result.stdout.fnmatch_lines(["*tracegrad_graphviz: Graphviz `dot` is not installed*"])


def test_graphviz_marker_runs_when_dot_exists(project):
    if shutil.which("dot") is None:
        pytest.skip("Graphviz `dot` is not installed here")
    project.makepyfile(test_markers='''
        import pytest

        @pytest.mark.tracegrad_graphviz
        def test_needs_dot():
            pass
    ''')
    run(project, "--strict-markers").assert_outcomes(passed=1)


def test_disabled_with_p_no_tracegrad(project):
    project.makepyfile(test_off='''
        def test_plugin_not_loaded(request):
            assert not request.config.pluginmanager.has_plugin("tracegrad")

        def test_fixture_missing(graph_snapshot):
            pass
    ''')
    result = run(project, "-p", "no:tracegrad")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*fixture 'graph_snapshot' not found*"])
    unknown = run(project, "-p", "no:tracegrad", "--tracegrad-update")
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR
    unknown.stderr.fnmatch_lines(["*unrecognized arguments: --tracegrad-update*"])


def test_plugin_module_imports_nothing_heavy():
    import subprocess
    import sys

    code = ("import sys, tracegrad.testing.plugin; "
            "print(sorted(m for m in ('textual', 'graphviz', 'cupy', 'tracegrad.draw', "
            "'tracegrad.tracing.recorder', 'tracegrad.testing.assertions') if m in sys.modules))")
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, env={**os.environ}).stdout.strip()
    assert output == "[]"


def test_the_entry_point_loads_the_plugin_in_a_fresh_pytest(project):
    project.makepyfile(test_entry='''
        import tracegrad as torch

        def test_fixture_from_the_entry_point(request, graph_snapshot):
            assert request.config.pluginmanager.has_plugin("tracegrad")
            graph_snapshot(torch.ones(2, requires_grad=True).exp().sum())
    ''')
    result = project.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["tracegrad: stored new 1 graph snapshot(s):"])


def test_a_failure_shows_the_diff_without_tracegrad_s_frames(project):
    project.makepyfile(test_hide='''
        import tracegrad as torch
        from tracegrad.testing import assert_graph, assert_op_counts

        def test_graph():
            x = torch.ones(2, requires_grad=True)
            assert_graph(x.exp().sum(), "SumBackward0")

        def test_counts():
            x = torch.ones(2, requires_grad=True)
            assert_op_counts(x.exp().sum(), {"MulBackward0": 1})

        def test_snapshot(graph_snapshot):
            x = torch.ones(2, requires_grad=True)
            graph_snapshot(x.exp().sum())
    ''')
    run(project).assert_outcomes(passed=1, failed=2)  # the snapshot is written
    (project.path / "__graph_snapshots__" / "test_hide" / "test_snapshot.txt").write_text(
        "SumBackward0\n")
    result = run(project)
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(["*+  ExpBackward0*"])
    result.stdout.no_fnmatch_line("*tracegrad/testing/assertions.py*")
    result.stdout.no_fnmatch_line("*tracegrad/testing/plugin.py*")
    result.stdout.no_fnmatch_line("*raise AssertionError(*")
    result.stdout.fnmatch_lines(['*assert_graph(x.exp().sum(), "SumBackward0")*'])


@pytest.mark.parametrize("how", ["CI", "option"])
def test_a_missing_snapshot_fails_in_ci_and_is_written_only_on_update(project, monkeypatch,
                                                                       how):
    project.makepyfile(test_new='''
        import tracegrad as torch

        def test_new_graph(graph_snapshot):
            graph_snapshot(torch.ones(2, requires_grad=True).exp().sum())
    ''')
    snapshot = project.path / "__graph_snapshots__" / "test_new" / "test_new_graph.txt"
    args = []
    if how == "CI":
        monkeypatch.setenv("CI", "true")
    else:
        args = ["--tracegrad-snapshot-missing=fail"]
    result = run(project, *args)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*no graph snapshot __graph_snapshots__/test_new/test_new_graph.txt to compare with*",
        "*run pytest with --tracegrad-update to store it*"])
    assert not snapshot.exists()
    run(project, *args, "--tracegrad-update").assert_outcomes(passed=1)
    assert snapshot.read_text().startswith("SumBackward0\n")
    run(project, *args).assert_outcomes(passed=1)


def test_update_removes_snapshots_no_test_used_and_a_plain_run_reports_them(project):
    project.makepyfile(test_unused='''
        import pytest
        import tracegrad as torch

        def test_kept(graph_snapshot):
            graph_snapshot(torch.ones(2, requires_grad=True).exp().sum())

        def test_fails_before_its_snapshot(graph_snapshot):
            assert False, "never reaches the snapshot"
            graph_snapshot(torch.ones(2, requires_grad=True).sin().sum())
    ''')
    folder = project.path / "__graph_snapshots__" / "test_unused"
    folder.mkdir(parents=True)
    for name in ("test_removed_test.txt", "test_kept.2.txt",
                 "test_fails_before_its_snapshot.txt"):
        (folder / name).write_text("SumBackward0\n")
    plain = run(project)
    plain.assert_outcomes(passed=1, failed=1)
    plain.stdout.fnmatch_lines(["tracegrad: found unused 2 graph snapshot(s):",
                                "*test_unused/test_kept.2.txt",
                                "*test_unused/test_removed_test.txt",
                                "*--tracegrad-update to remove them*"])
    assert len(list(folder.iterdir())) == 4  # reported, not removed
    updated = run(project, "--tracegrad-update")
    updated.stdout.fnmatch_lines(["tracegrad: removed unused 2 graph snapshot(s):"])
    assert sorted(path.name for path in folder.iterdir()) == [
        "test_fails_before_its_snapshot.txt", "test_kept.txt"]  # a failed test keeps its own
    # Run with -k: the other tests' snapshots are not judged.
    (folder / "test_removed_test.txt").write_text("SumBackward0\n")
    run(project, "--tracegrad-update", "-k", "kept").assert_outcomes(passed=1)
    assert (folder / "test_removed_test.txt").exists()


def test_a_finding_names_the_tensor_as_tracegrad_check_does(project):
    project.makepyfile(test_names='''
        import tracegrad as torch
        from tracegrad.testing import assert_no_violations

        def test_inplace(tracegrad_trace):
            x = torch.randn(8, 4)
            w1 = torch.randn(4, 16, requires_grad=True)
            w2 = torch.randn(16, 2, requires_grad=True)
            h = x.mm(w1).relu()
            loss = h.mm(w2).pow(2).mean()
            h += 0.1
            assert_no_violations(tracegrad_trace)
    ''')
    result = run(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*expected no violations, found 1 finding:*",
        ("*'h' float32 [[]8, 16[]] was modified in place by 'add_' after ReluBackward0 and "
         "MmBackward0 saved it for backward*")])
    result.stdout.no_fnmatch_line("*t[0-9] float32*")


OVERFLOWING_TEST = '''
    import tracegrad as torch

    def test_overflow_and_division_by_zero_are_silent_as_in_torch():
        x = torch.tensor([1e30, 0.0], requires_grad=True)
        (x * x * x).sum().backward()
        torch.tensor([1.0]) / torch.tensor([0.0])
'''


def test_numpy_float_warnings_from_tracegrad_stay_out_of_the_summary(project):
    """torch computes inf and nan without a warning; tracegrad's own NumPy calls must not
    fill a user's warnings summary either (pytest resets the filter tracegrad installs when
    imported, so the plugin keeps it as an ini filter for the session)."""
    # Fresh processes: this one has tracegrad's own filter in force since conftest imported it.
    project.makepyfile(test_overflow=OVERFLOWING_TEST)
    result = project.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "RuntimeWarning" not in result.stdout.str()
    without = project.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:tracegrad")
    assert "RuntimeWarning: overflow encountered in multiply" in without.stdout.str()


def test_the_plugin_filters_the_messages_tracegrad_filters():
    from tracegrad.autograd import quiet

    action, message, category, module = plugin.FLOAT_WARNINGS_FILTER.split(":")
    assert (action, category, module) == ("ignore", "RuntimeWarning", r"tracegrad\.")
    assert message == quiet.FLOAT_WARNINGS
