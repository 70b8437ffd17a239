"""Progress on the terminal while the command line works: running a script under the
tracer, loading a trace, laying out a graph. Uses rich's progress display (Textual's own
renderer, installed with it), on stderr, and only when stdout and stderr are both a
terminal: in a pipe, a log or CI nothing extra is printed. ``TRACEGRAD_PROGRESS=0`` turns it
off. The display is transient: it disappears when the work is done.

>>> with spinner("loading run.tgtrace"):   # nothing shows here: not a terminal
...     pass
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator


def progress_console():
    """A rich Console on stderr when progress should show, else None."""
    if os.environ.get("TRACEGRAD_PROGRESS", "1") == "0":
        return None
    if not (_is_tty(sys.stdout) and _is_tty(sys.stderr)):
        return None
    try:
        from rich.console import Console
    except ImportError:  # rich comes with textual; without it, no progress line
        return None
    return Console(file=sys.stderr)


def _is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # replaced or closed streams
        return False


@contextlib.contextmanager
def spinner(description: str, detail: Callable[[], str] | None = None) -> Iterator[None]:
    """A spinner with ``description``, the elapsed time and ``detail()`` (polled)."""
    console = progress_console()
    if console is None:
        yield
        return
    with _progress(console, detail) as progress:
        progress.add_task(description, total=None)
        yield


@contextlib.contextmanager
def script_progress(target: str) -> Iterator[Callable | None]:
    """Yields the ``on_start`` callback for ``runner.run``: once the script starts, a line
    shows what the tracer has recorded so far (nodes, passes) and the time it has run.

    The script's own prints appear above the line (rich redirects stdout and stderr while
    it shows), so output is never mixed into it.
    """
    console = progress_console()
    if console is None:
        yield None
        return
    recording: list = []

    def counts() -> str:
        if not recording:
            return ""
        trace = recording[0]
        passes = len(trace.passes)
        return (f"{len(trace.nodes):,} nodes, {passes:,} backward "
                f"pass{'es' if passes != 1 else ''}")

    with _progress(console, counts, redirect=True) as progress:
        progress.add_task(f"tracing {target}", total=None)
        yield recording.append


@contextlib.contextmanager
def _progress(console, detail: Callable[[], str] | None, redirect: bool = False):
    from rich.progress import Progress, ProgressColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.text import Text

    class DetailColumn(ProgressColumn):
        """Text computed at each refresh (the recorder's counts as the script runs)."""

        def render(self, task) -> Text:
            return Text(detail() if detail is not None else "", style="progress.data")

    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), DetailColumn(),
                        TimeElapsedColumn(), console=console, transient=True,
                        redirect_stdout=redirect, redirect_stderr=redirect)
    with progress:
        yield progress
