"""examples/graph_tests/ (the graph assertions on the tutorial programs) run and pass.

They run as a user would run them (``pytest examples/graph_tests``), in an inner pytest
session in this process (pytester; a subprocess cost two seconds of start-up, and
test_testing_plugin's entry-point test already proves the plugin loads in a fresh one); the
stored snapshot must match, so a missing or stale snapshot fails here rather than being
written silently.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
GRAPH_TESTS = ROOT / "examples" / "graph_tests"
# As test_testing_plugin's inner sessions: plugins that keep session state in module
# globals or cost seconds per session stay out.
OTHER_PLUGINS = ("-p", "no:textual-snapshot", "-p", "no:hypothesispytest", "-p", "no:syrupy",
                 "-p", "no:xdist", "-p", "no:xdist.looponfail", "-p", "no:cacheprovider")


def test_graph_test_examples_pass_against_their_stored_snapshots(pytester: pytest.Pytester):
    snapshots = sorted((GRAPH_TESTS / "__graph_snapshots__").rglob("*.txt"))
    assert snapshots, "examples/graph_tests has no stored snapshots"
    pytester.chdir()
    result = pytester.runpytest_inprocess(*OTHER_PLUGINS, "-q", "--rootdir", str(ROOT),
                                          str(GRAPH_TESTS))
    output = "\n".join(result.outlines + result.errlines)
    assert result.ret == 0, output
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) > 0 and "failed" not in outcomes, output
    assert "stored new" not in output and "updated" not in output, output
