"""The tracegrad pytest plugin (the ``pytest11`` entry point ``tracegrad``).

What it adds:

* ``tracegrad_trace`` -- a fixture that records the test body with ``tracegrad.record()``
  and gives the recording (pass it to ``graph_text``, ``assert_no_violations``, ...).
* ``graph_snapshot(tensor_or_trace, name=None)`` -- a fixture that compares the graph's
  text with ``__graph_snapshots__/<test module>/<test name>.txt`` next to the test file.
  A missing snapshot is written on a developer's machine; with ``CI`` set (or
  ``--tracegrad-snapshot-missing=fail``) it fails, as syrupy does, and is written only with
  ``--tracegrad-update``. ``--tracegrad-update`` also rewrites changed snapshots and removes
  those no test used (without it, they are reported).
* When a test that used these fixtures fails, each graph it used is drawn into
  ``--tracegrad-artifacts DIR`` (default ``.tracegrad/failures``; SVG when Graphviz ``dot``
  is installed, else DOT text) and the path is added to the failure report.
* Markers ``tracegrad_gpu`` and ``tracegrad_graphviz``: the test is skipped, with the reason,
  when CuPy and a CUDA device, or the ``dot`` binary, are missing.
* NumPy's floating-point RuntimeWarnings from tracegrad's own modules stay out of the
  warnings summary (torch computes the same inf and nan silently): see FLOAT_WARNINGS_FILTER.
* Assertion rewriting for ``tracegrad.testing.assertions``; ``-p no:tracegrad`` turns all of
  it off.

Import cost: pytest loads this module at start-up for every project where tracegrad is
installed, so it imports only the standard library and pytest here; the engine, the tracer
and the exporter are imported inside fixtures and hooks, when a test uses them.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

# Before anything imports the module (the package's __init__ loads it lazily), so pytest's
# import hook rewrites its asserts wherever tracegrad is installed.
pytest.register_assert_rewrite("tracegrad.testing.assertions")

SNAPSHOT_FOLDER = "__graph_snapshots__"
DEFAULT_ARTIFACTS = ".tracegrad/failures"

_GRAPHS = pytest.StashKey[list]()  # (label, Trace or recorder) per test item
_SNAPSHOTS = pytest.StashKey[dict]()  # "written"/"updated"/"removed"/"unused" -> [paths]
_USED = pytest.StashKey[set]()  # snapshot paths compared or written this session
_OUTCOMES = pytest.StashKey[dict]()  # test module path -> {test name: passed?}
_DESELECTED = pytest.StashKey[set]()  # test module paths with deselected tests


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tracegrad", "tracegrad graph snapshots and artifacts")
    group.addoption(
        "--tracegrad-update", action="store_true", default=False,
        help="rewrite graph snapshots (__graph_snapshots__/...) with the current graphs "
             "instead of comparing with them")
    group.addoption(
        "--tracegrad-snapshot-missing", choices=("write", "fail"), default=None,
        help="what a missing graph snapshot does: write it, or fail the test (default: fail "
             "when the CI environment variable is set, else write); --tracegrad-update "
             "always writes")
    group.addoption(
        "--tracegrad-artifacts", default=DEFAULT_ARTIFACTS, metavar="DIR",
        help="folder where the graphs of failing tests are drawn (default: "
             f"{DEFAULT_ARTIFACTS}, relative to the rootdir)")


# NumPy's floating-point RuntimeWarnings raised inside tracegrad's own modules: torch computes
# the same inf or nan without a word, and tracegrad/autograd/quiet.py filters them when
# tracegrad is imported. pytest restores the warning filters around collection (where a test
# module's `import tracegrad` runs) and around each test, which drops that filter; as an ini
# filter it holds for the whole session. Only warnings NumPy attributes to a tracegrad module;
# a test's own NumPy code, `-W` options and the test's own filters still come first. (The
# message pattern is quiet.FLOAT_WARNINGS: tests/test_testing_plugin_warnings.py keeps the two
# alike; it is written out here because this module must not import tracegrad.)
FLOAT_WARNINGS_FILTER = (r"ignore:(overflow|invalid value|divide by zero|underflow) "
                         r"encountered in :RuntimeWarning:tracegrad\.")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("filterwarnings", FLOAT_WARNINGS_FILTER)
    config.addinivalue_line(
        "markers", "tracegrad_gpu: needs CuPy and a CUDA device (skipped without them)")
    config.addinivalue_line(
        "markers", "tracegrad_graphviz: needs the Graphviz `dot` binary (skipped without it)")
    config.stash[_SNAPSHOTS] = {"written": [], "updated": [], "removed": [], "unused": []}
    config.stash[_USED] = set()
    config.stash[_OUTCOMES] = {}
    config.stash[_DESELECTED] = set()


def missing_snapshots_fail(config: pytest.Config) -> bool:
    """Whether a missing snapshot fails the test rather than being written."""
    if config.getoption("tracegrad_update"):
        return False
    choice = config.getoption("tracegrad_snapshot_missing")
    if choice is None:
        return bool(os.environ.get("CI"))  # set by GitHub Actions, GitLab, most CIs
    return choice == "fail"


# -- markers ---------------------------------------------------------------------------------
def graphviz_missing() -> str | None:
    """Why Graphviz cannot be used here, or None when ``dot`` is on the PATH."""
    if shutil.which("dot") is None:
        return ("Graphviz `dot` is not installed (Debian/Ubuntu: sudo apt-get install "
                "graphviz; macOS: brew install graphviz)")
    return None


def gpu_missing() -> str | None:
    """Why CUDA tests cannot run here, or None when CuPy sees a device."""
    if importlib.util.find_spec("cupy") is None:
        return "CuPy is not installed (pip install 'tracegrad[cuda]')"
    try:
        import cupy
    except ImportError as error:
        return f"CuPy does not import: {error}"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # noqa: BLE001 - CUDARuntimeError without a driver, ...
        return f"no CUDA device: {error}"
    return None if count > 0 else "no CUDA device"


_MARKER_CHECKS = {"tracegrad_gpu": gpu_missing, "tracegrad_graphviz": graphviz_missing}


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker, missing in _MARKER_CHECKS.items():
        if item.get_closest_marker(marker) is not None:
            reason = missing()
            if reason is not None:
                pytest.skip(f"{marker}: {reason}")


# -- fixtures --------------------------------------------------------------------------------
def _graphs(item: pytest.Item) -> list:
    if _GRAPHS not in item.stash:
        item.stash[_GRAPHS] = []
    return item.stash[_GRAPHS]


@pytest.fixture
def tracegrad_trace(request: pytest.FixtureRequest):
    """Record the test body with ``tracegrad.record()``; yields the recording.

    Example::

        def test_no_inplace_surprises(tracegrad_trace):
            model(x).sum().backward()
            assert_no_violations(tracegrad_trace)
    """
    import tracegrad

    with tracegrad.record() as recording:
        _graphs(request.node).append(("trace", recording))
        yield recording


class GraphSnapshot:
    """``graph_snapshot(tensor_or_trace, name=None)``: compare a graph with its stored text.

    The first call in a test uses ``<test name>.txt``; later unnamed calls add ``.2``,
    ``.3``...; ``name="encoder"`` uses ``<test name>.encoder.txt``.
    """

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self._request = request
        self._unnamed = 0
        self.update = bool(request.config.getoption("tracegrad_update"))

    def path_for(self, name: str | None) -> Path:
        node = self._request.node
        module_file = Path(str(node.path))
        test_name = node.nodeid.split("::", 1)[-1].replace("::", ".")
        if name is None:
            self._unnamed += 1
            suffix = "" if self._unnamed == 1 else f".{self._unnamed}"
        else:
            suffix = f".{name}"
        file_name = _safe_file_name(test_name + suffix) + ".txt"
        return module_file.parent / SNAPSHOT_FOLDER / module_file.stem / file_name

    def __call__(self, tensor_or_trace: Any, name: str | None = None) -> str:
        __tracebackhide__ = True  # a failure shows the test's line and the diff, not ours
        from .assertions import graph_diff
        from .graph_text import normalize_text, render_text, trace_and_roots

        trace, roots = trace_and_roots(tensor_or_trace)
        _graphs(self._request.node).append((name or "snapshot", trace))
        actual = render_text(trace, roots) + "\n"
        path = self.path_for(name)
        config = self._request.config
        config.stash[_USED].add(path)
        stats = config.stash[_SNAPSHOTS]
        if not path.exists():
            if missing_snapshots_fail(config):
                raise AssertionError(
                    f"no graph snapshot {_shown(path, config)} to compare with; the graph is:"
                    f"\n{actual}Hint: run pytest with --tracegrad-update to store it (missing "
                    "snapshots fail when CI is set or with --tracegrad-snapshot-missing=fail).")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(actual, encoding="utf-8")
            stats["written"].append(path)
            return actual
        expected = path.read_text(encoding="utf-8")
        if normalize_text(expected) == normalize_text(actual):
            return actual
        if self.update:
            path.write_text(actual, encoding="utf-8")
            stats["updated"].append(path)
            return actual
        raise AssertionError(
            f"the graph differs from its snapshot {_shown(path, self._request.config)} "
            f"(- snapshot, + actual):\n{graph_diff(expected, actual)}\n"
            "Hint: if the new graph is right, run pytest with --tracegrad-update to store it.")


def _safe_file_name(text: str) -> str:
    return re.sub(r"[^\w.\-\[\]]+", "_", text)


def _shown(path: Path, config: pytest.Config) -> str:
    try:
        return str(path.relative_to(config.rootpath))
    except ValueError:
        return str(path)


@pytest.fixture
def graph_snapshot(request: pytest.FixtureRequest) -> GraphSnapshot:
    """Compare a graph's text with the snapshot stored next to the test (see GraphSnapshot).

    Example::

        def test_swish_graph(graph_snapshot):
            graph_snapshot(MemoryEfficientSwish()(x).sum())
    """
    return GraphSnapshot(request)


# -- reporting -------------------------------------------------------------------------------
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    _note_outcome(item, report)
    if report.when != "call" or not report.failed:
        return
    graphs = item.stash.get(_GRAPHS, None)
    if not graphs:
        return
    lines = [_draw_failure(item, index, label, graph) for index, (label, graph)
             in enumerate(graphs, start=1)]
    text = "\n".join(lines)
    add_section = getattr(report.longrepr, "addsection", None)
    if add_section is not None:  # printed with the failure, whatever --show-capture says
        add_section("tracegrad graph", text)
    else:
        report.sections.append(("tracegrad graph", text))


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    # The graphs were kept only to draw them if the test failed; drop them so a long
    # session does not hold every test's trace (values included) until the end.
    if _GRAPHS in item.stash:
        del item.stash[_GRAPHS]


def _artifact_dir(config: pytest.Config) -> Path:
    folder = Path(config.getoption("tracegrad_artifacts"))
    return folder if folder.is_absolute() else config.rootpath / folder


def _draw_failure(item: pytest.Item, index: int, label: str, graph: Any) -> str:
    """Draw one graph of a failed test; the line naming the file (or why there is none)."""
    stem = _safe_file_name(item.nodeid.replace("::", "__").replace("/", "_"))
    if index > 1:
        stem += f".{index}"
    folder = _artifact_dir(item.config)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = _write_graph(graph, folder / stem)
    except Exception as error:  # noqa: BLE001 - a drawing problem must not hide the failure
        return f"{label}: could not draw the graph ({type(error).__name__}: {error})"
    return f"{label}: graph written to {path}"


def _write_graph(graph: Any, stem: Path) -> Path:
    """SVG through tracegrad.render when ``dot`` exists, else the DOT source."""
    from tracegrad.draw import render, to_dot
    from tracegrad.tracing.query import as_trace

    trace = as_trace(graph)
    if graphviz_missing() is None:
        path = stem.parent / (stem.name + ".svg")
        render(trace, str(path))
        return path
    path = stem.parent / (stem.name + ".dot")
    path.write_text(to_dot(trace).source, encoding="utf-8")
    return path


# -- unused snapshots ------------------------------------------------------------------------
def _note_outcome(item: pytest.Item, report) -> None:
    """Whether each test passed, per test module: a snapshot of a test that failed or was
    skipped may just not have been reached, so it is never called unused."""
    outcomes = item.config.stash.get(_OUTCOMES, None)
    if outcomes is None:
        return
    tests = outcomes.setdefault(Path(str(item.path)), {})
    name = item.nodeid.split("::", 1)[-1].replace("::", ".")
    passed = tests.get(name, True) and not (report.failed or report.skipped)
    tests[name] = passed


def pytest_deselected(items) -> None:
    for item in items:
        deselected = item.config.stash.get(_DESELECTED, None)
        if deselected is not None:
            deselected.add(Path(str(item.path)))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Snapshots of the test modules that ran in full that no test used: reported, and
    removed with --tracegrad-update."""
    config = session.config
    if _OUTCOMES not in config.stash or exitstatus == pytest.ExitCode.INTERRUPTED:
        return
    if hasattr(config, "workerinput"):
        return  # a pytest-xdist worker ran only part of each module: it cannot judge
    stats, used = config.stash[_SNAPSHOTS], config.stash[_USED]
    update = bool(config.getoption("tracegrad_update"))
    for module, tests in sorted(config.stash[_OUTCOMES].items()):
        if module in config.stash[_DESELECTED]:
            continue  # -k or --deselect: the other tests' snapshots are not ours to judge
        folder = module.parent / SNAPSHOT_FOLDER / module.stem
        if not folder.is_dir():
            continue
        owners = {_safe_file_name(name): passed for name, passed in tests.items()}
        for path in sorted(folder.glob("*.txt")):
            if path in used or not _owner_passed_or_gone(path.name[:-4], owners):
                continue
            if update:
                path.unlink()
                stats["removed"].append(path)
            else:
                stats["unused"].append(path)
        if update and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


def _owner_passed_or_gone(stem: str, owners: dict[str, bool]) -> bool:
    """True when the test this snapshot belongs to passed (so it would have used it) or is
    no longer there; False when it failed or was skipped before getting to it."""
    for owner, passed in owners.items():
        if stem == owner or stem.startswith(owner + "."):
            return passed
    return True


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    stats = config.stash.get(_SNAPSHOTS, None)
    if not stats:
        return
    for key, verb in (("written", "stored new"), ("updated", "updated"),
                      ("removed", "removed unused"), ("unused", "found unused")):
        paths = stats[key]
        if paths:
            terminalreporter.write_line(f"tracegrad: {verb} {len(paths)} graph snapshot(s):")
            for path in paths:
                terminalreporter.write_line(f"  {_shown(path, config)}")
    if stats["unused"]:
        terminalreporter.write_line("  (run pytest with --tracegrad-update to remove them)")
