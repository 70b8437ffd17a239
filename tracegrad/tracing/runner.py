"""Running an unmodified script under the tracer (``tracegrad run``, ``check``, ``render``,
``tui``).

>>> import os, tempfile
>>> script = os.path.join(tempfile.mkdtemp(), "tiny.py")
>>> with open(script, "w") as handle:
...     _ = handle.write("import tracegrad as torch\\n"
...                      "w = torch.ones(2, requires_grad=True)\\n"
...                      "(w * 3).sum().backward()\\n")
>>> trace = run_script(script, values=False)
>>> len(trace.passes), trace.exception is None
(1, True)
"""

from __future__ import annotations

import os
import runpy
import sys

from ..autograd.site import _is_internal, display_path
from .model import Trace
from .recorder import Recorder


def run_script(path: str, argv: list[str] | None = None, **trace_options) -> Trace:
    """Run ``path`` as ``__main__`` (``sys.argv = [path, *argv]``) under the tracer.

    Whatever the script raises (including a non-zero ``sys.exit``) is recorded in
    ``trace.exception`` together with the trace up to that point, and not re-raised;
    KeyboardInterrupt is recorded as well. ``trace_options`` go to ``tracegrad.record()``.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"tracegrad: cannot run '{path}': no such file. Hint: give the path of a Python "
            "script, e.g. `tracegrad run examples/two_layer_net.py`.")
    recorder = Recorder(**trace_options)
    trace = recorder.trace
    trace.metadata["program"] = display_path(os.path.abspath(path))
    trace.metadata["argv"] = list(argv or [])
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [path, *(argv or [])]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))  # as `python script.py` does
    module_globals: dict = {}
    failure: BaseException | None = None
    recorder.start()
    try:
        module_globals = runpy.run_path(path, run_name="__main__")
    except SystemExit as exit_request:
        if exit_request.code not in (None, 0):
            failure = exit_request
    except BaseException as error:  # noqa: BLE001 - recorded, the caller decides
        failure = error
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        frame = _innermost_user_frame(failure) if failure is not None else None
        recorder.stop(frame, failure, scopes=(module_globals,) if module_globals else ())
    return trace


def _innermost_user_frame(error: BaseException):
    """The innermost frame of the script's own code in the traceback of ``error``."""
    frame = None
    tb = error.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not _is_internal(filename) and filename != runpy.__file__:
            frame = tb.tb_frame
        tb = tb.tb_next
    return frame


def format_exception_message(trace: Trace) -> str:
    """One paragraph saying what the script raised and where."""
    exception = trace.exception
    if exception is None:
        return ""
    where = f" at {exception.site}" if exception.site is not None else ""
    code = f"\n    {exception.site.code}" if exception.site and exception.site.code else ""
    return f"the script raised {exception.type}{where}: {exception.message}{code}"


def print_traceback(trace: Trace, stream=None) -> None:
    if trace.exception is not None and trace.exception.traceback:
        (stream or sys.stderr).write(trace.exception.traceback)


__all__ = ["format_exception_message", "print_traceback", "run_script"]
