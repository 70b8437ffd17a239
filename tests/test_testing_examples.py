"""examples/graph_tests/ (the graph assertions on the tutorial programs) run and pass.

They run in a subprocess, as a user would run them (``pytest examples/graph_tests``), with
the plugin loaded from the installed entry point; the stored snapshot must match, so a
missing or stale snapshot fails here rather than being written silently.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GRAPH_TESTS = ROOT / "examples" / "graph_tests"


def test_graph_test_examples_pass_against_their_stored_snapshots():
    snapshots = sorted((GRAPH_TESTS / "__graph_snapshots__").rglob("*.txt"))
    assert snapshots, "examples/graph_tests has no stored snapshots"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(GRAPH_TESTS)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert " passed" in output and "failed" not in output, output
    assert "stored new" not in output and "updated" not in output, output
