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

The script runs as ``python script.py`` would run it: as ``__main__``, with its own
``sys.argv`` and its folder first on ``sys.path``. How it ended -- normally, ``sys.exit(n)``,
an exception, or a signal -- is recorded, never re-raised, so the trace up to that point
is kept; ``ScriptRun.exit_status`` is the status ``python script.py`` would have exited with.
SIGTERM and SIGHUP end the script the way Ctrl-C does (the trace is kept), instead of
killing the process.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..autograd.site import _is_internal, display_path
from ..errors import TracegradError
from .model import Trace
from .recorder import Recorder

# Signals that end a traced script with its trace kept. SIGINT raises KeyboardInterrupt as
# Python's own handler does; the others raise SignalReceived.
_SIGNAL_NAMES = ("SIGINT", "SIGTERM", "SIGHUP")
SIGNALS = tuple(getattr(signal, name) for name in _SIGNAL_NAMES if hasattr(signal, name))

_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = os.path.dirname(_HERE) + os.sep
_BRIDGE = os.path.join(os.path.dirname(_HERE), "bridge")
# While one of these is running, the recorder is between two consistent states of the trace
# (an op half recorded); a signal is then raised as the recorder returns. The PyTorch
# bridge's bookkeeping (an op's nodes half adapted, a step half reported) is the same.
_RECORDER_FILES = frozenset((
    *(os.path.join(_HERE, name) for name in (
        "recorder.py", "graph.py", "violations.py", "values.py", "names.py", "model.py")),
    *(os.path.join(_BRIDGE, name) for name in (
        "session.py", "adapters.py", "passes.py", "custom.py", "modules.py", "walk.py",
        "__init__.py", "_arming.py"))))
_OWN_FRAMES = frozenset({os.path.abspath(__file__), os.path.abspath(runpy.__file__),
                         "<frozen runpy>"})


class ScriptError(TracegradError, OSError):
    """The script cannot be run at all: no such file, not readable, not valid Python."""


class SignalReceived(BaseException):
    """SIGTERM or SIGHUP arrived while the script ran (a BaseException, like
    KeyboardInterrupt, so that the script's ``except Exception`` does not swallow it)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"received {signal_name(signum)}")


@dataclass
class ScriptRun:
    """A traced script: its trace, how it ended, and the status ``python`` would exit with."""

    path: str
    trace: Trace
    exit_status: int = 0
    error: BaseException | None = None  # what ended it, when not a normal end or exit 0
    signum: int | None = None  # the signal that ended it (SIGINT for Ctrl-C)
    namespace: dict = field(default_factory=dict)  # the script's globals when it ended

    @property
    def failed(self) -> bool:
        return self.exit_status != 0


def run_script(path: str, argv: list[str] | None = None, **trace_options) -> Trace:
    """Run ``path`` as ``__main__`` (``sys.argv = [path, *argv]``) under the tracer.

    Whatever the script raises (including a non-zero ``sys.exit``) is recorded in
    ``trace.exception`` together with the trace up to that point, and not re-raised;
    KeyboardInterrupt is recorded as well. ``trace_options`` go to ``tracegrad.record()``.
    A script that cannot run (missing, not Python, a syntax error) raises ScriptError.
    """
    return run(path, argv, **trace_options).trace


def run(path: str, argv: list[str] | None = None, *,
        on_start: Callable[[Trace], None] | None = None, **trace_options) -> ScriptRun:
    """Like ``run_script``, returning how the script ended as well (a ScriptRun).

    ``on_start(trace)`` is called just before the script starts, with the Trace that fills
    as it runs (the command line shows progress from it).
    """
    compile_script(path)  # a syntax error is reported before anything starts
    recorder = Recorder(**trace_options)
    trace = recorder.trace
    trace.metadata["program"] = display_path(os.path.abspath(path))
    trace.metadata["argv"] = list(argv or [])
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [path, *(argv or [])]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))  # as `python script.py` does
    module_globals: dict = {}
    failure: BaseException | None = None
    status = 0
    if on_start is not None:
        on_start(trace)
    with _ScriptSignals().installed() as signals:
        recorder.start()
        try:
            signals.start(_signals_held_before_the_script())
            module_globals = runpy.run_path(path, run_name="__main__")
        except SystemExit as exit_request:
            status = _exit_status(exit_request)
            if status != 0:
                failure = exit_request
        except BaseException as error:  # noqa: BLE001 - recorded, the caller decides
            failure = error
            status = _status_of(error)
        finally:
            signals.ending = True  # a signal from here on is noted, never raised in here
            sys.argv = saved_argv
            sys.path[:] = saved_path
            frame = None
            if failure is not None:
                failure.__traceback__ = _script_frames(failure.__traceback__)
                frame = _innermost_user_frame(failure)
            recorder.stop(frame, failure, scopes=(module_globals,) if module_globals else ())
    signum = _signal_of(failure)
    if signum is None and signals.pending is not None:  # came as the script ended
        signum = signals.pending
        status = 128 + signum
    trace.metadata["exit_status"] = status
    return ScriptRun(path, trace, status, failure, signum, module_globals)


def compile_script(path: str):
    """The script's code object; ScriptError (one sentence) when it cannot be run."""
    if not os.path.exists(path):
        raise ScriptError(
            f"cannot run '{path}': no such file. Hint: give the path of a Python script, "
            "e.g. `tracegrad run examples/two_layer_net.py`.")
    if os.path.isdir(path):
        raise ScriptError(f"cannot run '{path}': it is a folder, not a Python script.")
    try:
        with open(path, "rb") as handle:
            source = handle.read()
    except OSError as error:
        raise ScriptError(f"cannot run '{path}': {error.strerror or error}.") from None
    try:
        return compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as error:
        if error.lineno is None:  # null bytes and the like: not a text file at all
            return _not_python(path, error)
        where = f" at {display_path(error.filename or path)}:{error.lineno}" \
            if error.lineno else ""
        code = (error.text or "").strip()
        shown = f" (`{code}`)" if code else ""
        raise ScriptError(f"cannot run '{path}': {type(error).__name__}{where}: "
                          f"{error.msg}{shown}") from None
    except ValueError as error:  # null bytes, on older Pythons
        return _not_python(path, error)


def _not_python(path: str, error: Exception):
    hint = " Hint: a .tgtrace file opens with `tracegrad tui` or `tracegrad render`." \
        if path.endswith(".tgtrace") else ""
    raise ScriptError(f"cannot run '{path}': it is not a Python script ({error}).{hint}") \
        from None


def _exit_status(exit_request: SystemExit) -> int:
    """The status ``python`` exits with for ``sys.exit(code)``: an int as it is, None 0,
    anything else (a message) 1."""
    code = exit_request.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF if code >= 0 else code % 256
    return 1


def _status_of(error: BaseException) -> int:
    signum = _signal_of(error)
    return 128 + signum if signum is not None else 1


def _signal_of(error: BaseException | None) -> int | None:
    if isinstance(error, SignalReceived):
        return error.signum
    if isinstance(error, KeyboardInterrupt):
        return int(signal.SIGINT)
    return None


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _script_frames(tb):
    """The traceback from the script's own first frame: runpy's and this module's frames
    say nothing about the script."""
    while tb is not None and _is_own(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return tb


def _is_own(filename: str) -> bool:
    return filename in _OWN_FRAMES or os.path.abspath(filename) in _OWN_FRAMES


def _innermost_user_frame(error: BaseException):
    """The innermost frame of the script's own code in the traceback of ``error``."""
    frame = None
    tb = error.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not _is_internal(filename) and not _is_own(filename):
            frame = tb.tb_frame
        tb = tb.tb_next
    return frame


# -- signals ---------------------------------------------------------------------------------
def _handled_signals() -> list[int]:
    """The signals to take over: not those the user ignores (``nohup`` ignores SIGHUP), and
    none outside the main thread, where Python cannot set handlers."""
    if threading.current_thread() is not threading.main_thread():
        return []
    return [signum for signum in SIGNALS if signal.getsignal(signum) is not signal.SIG_IGN]


class _ScriptSignals:
    """While the script runs, SIGINT, SIGTERM and SIGHUP end it with an exception (so it
    unwinds and the trace is kept) instead of killing the process; restored afterwards.

    A signal that arrives while the recorder is recording an op is raised the moment the
    outermost recorder frame returns, so the trace left behind is consistent: a profile
    function (``sys.setprofile``, this thread only, installed just for that) raises it
    from that frame's return event, i.e. in the recorder's caller. It used to be re-sent
    5 ms later by a timer thread (``_thread.interrupt_main``), but Python runs a handler
    where the main thread resumes, and it resumes where NumPy handed the GIL to that
    timer: inside the recorder's value statistics, nearly every time. Each retry deferred
    again and ``tracegrad run`` hung on SIGTERM (tests/test_tracing_signals.py).

    ``pending`` holds the signal until it is raised. Before the script starts (``start``)
    and once it has ended (``ending``) a signal is only noted there, never raised into the
    runner: ``start`` raises it as the script's end, after it the caller reads it.
    """

    def __init__(self) -> None:
        self.pending: int | None = None
        self.running = False
        self.ending = False
        self._armed = False
        self._previous = None

    @contextlib.contextmanager
    def installed(self) -> Iterator[_ScriptSignals]:
        try:
            with _handlers(self._handle):
                yield self
        finally:
            self.ending = True
            self._disarm()

    def start(self, early: list[int]) -> None:
        """The script starts now: a signal that came before (``early``: held by
        ``signals_deferred``, or noted here) ends it before its first line."""
        self.running = True
        signum = early[0] if early else self.pending
        if signum is not None:
            self.pending = None
            raise _exception_for(signum)

    def _handle(self, signum, frame) -> None:
        if self.ending or not self.running:
            if self.pending is None:
                self.pending = signum
            return
        outermost = _outermost_recorder_frame(frame)
        if outermost is not None:
            if self.pending is None:
                self.pending = signum
                self._arm(outermost)
            return
        self.pending = None
        self._disarm()
        raise _exception_for(signum)

    def _arm(self, target) -> None:
        previous = sys.getprofile()

        def at_return(frame, event, arg):
            if previous is not None:
                previous(frame, event, arg)
            if event != "return" or frame is not target:
                return
            self._disarm()
            if self.pending is not None and not self.ending:
                signum, self.pending = self.pending, None
                raise _exception_for(signum)  # propagates in the caller of ``target``

        if previous is not None and not callable(previous):
            # A C profiler (cProfile) cannot be chained from Python: raise now, at the
            # cost of a possibly half-recorded last op, rather than never.
            signum, self.pending = self.pending, None
            raise _exception_for(signum)
        self._armed, self._previous = True, previous
        sys.setprofile(at_return)

    def _disarm(self) -> None:
        if self._armed:
            self._armed = False
            sys.setprofile(self._previous)


def _exception_for(signum: int) -> BaseException:
    return KeyboardInterrupt() if signum == signal.SIGINT else SignalReceived(signum)


@contextlib.contextmanager
def signals_deferred(on_first: Callable[[int], None] | None = None, *,
                     script: bool = False) -> Iterator[list[int]]:
    """Hold SIGINT, SIGTERM and SIGHUP while the block runs (a trace being saved): the
    block finishes, then the caller sees the signals in the yielded list. ``on_first`` is
    called with the first one (to say that the save goes on).

    ``script=True``: the block runs a script (``run``) first, and a signal held before
    that script started is not the save's: the script ends with it before its first line.
    It used to run regardless, and one that loops forever hung ``tracegrad run``."""
    held = _Held(on_first)
    held.script_started = not script
    _HOLDING.append(held)
    try:
        with _handlers(held.hold):
            yield held.received
    finally:
        _HOLDING.remove(held)
        held.received[:0] = held.early  # no script took them: the caller's, then


class _Held:
    def __init__(self, on_first: Callable[[int], None] | None) -> None:
        self.on_first = on_first
        self.received: list[int] = []
        self.early: list[int] = []  # before a script started: for that script to end with
        self.script_started = False

    def hold(self, signum, frame) -> None:
        if not self.script_started:
            self.early.append(signum)
            return
        if not self.received and self.on_first is not None:
            self.on_first(signum)
        self.received.append(signum)


_HOLDING: list[_Held] = []  # the signals_deferred blocks open, innermost last


def _signals_held_before_the_script() -> list[int]:
    """The signals that the innermost signals_deferred block held before this script
    started (taken: from now on the block holds them for its save)."""
    if not _HOLDING or _HOLDING[-1].script_started:
        return []
    held = _HOLDING[-1]
    held.script_started = True
    early, held.early = held.early, []
    return early


@contextlib.contextmanager
def _handlers(handler) -> Iterator[None]:
    previous = {}
    for signum in _handled_signals():
        previous[signum] = signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def _outermost_recorder_frame(frame):
    """The outermost frame of the recorder's own code that the signal interrupted, or None.

    Walking out from the innermost frame, the search ends where code neither tracegrad's
    nor Python's own called in: torch calling the bridge (its mode, a node hook), or the
    program running (a hook of its own, called by torch's backward inside the bridge's
    ``backward()``; or the program's own loop). What is further out waits on that code,
    which may run as long as it likes: the signal is raised now (or as the bridge's hook
    returns), not when the whole ``backward()`` returns. A program function the recorder
    itself calls stays inside the recorder (the signal tests' hooks are such)."""
    outermost = None
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename in _RECORDER_FILES:
            outermost = frame
        elif not (filename.startswith(_PACKAGE) or _is_python_library(filename)):
            if outermost is not None:
                break  # torch or the program called the recorder in here
            if not _is_internal(filename) and not _called_by_recorder(frame):
                break  # the program is running
        frame = frame.f_back
    return outermost


_PYTHON_LIBRARY = os.path.dirname(os.__file__) + os.sep


def _is_python_library(filename: str) -> bool:
    """Python's own modules (contextlib, weakref, ...): they run for whoever called them."""
    return filename.startswith("<") or (filename.startswith(_PYTHON_LIBRARY)
                                        and "-packages" not in filename)


def _called_by_recorder(frame) -> bool:
    caller = frame.f_back
    while caller is not None and _is_python_library(caller.f_code.co_filename):
        caller = caller.f_back
    return caller is not None and caller.f_code.co_filename in _RECORDER_FILES


# -- words -----------------------------------------------------------------------------------
def describe_end(result: ScriptRun) -> str:
    """One sentence saying how the script ended, when it did not end normally."""
    exception = result.trace.exception
    where = f" at {exception.site}" if exception is not None and exception.site else ""
    if result.signum is not None:
        return f"'{result.path}' was interrupted by {signal_name(result.signum)}{where}"
    if isinstance(result.error, SystemExit):
        code = result.error.code
        said = f": {code}" if not isinstance(code, int) else ""
        return f"'{result.path}' exited with status {result.exit_status}{where}{said}"
    if exception is not None:
        return f"'{result.path}' raised {exception.type}{where}: {exception.message}"
    return ""


def nothing_recorded(trace: Trace, target: str) -> str | None:
    """Why there is nothing to show, or None when the trace holds a graph or a finding.

    The one place that decides "nothing was recorded", for every command: ``run`` writes no
    empty file, ``render`` draws no empty picture, ``tui`` opens no empty debugger.
    """
    if trace.nodes or trace.passes or trace.violations:
        return None
    if not target.endswith(".py"):
        return (f"nothing was recorded in '{target}': the trace holds no node, backward pass "
                "or violation. Hint: record it from a script that computes with tensors that "
                "require grad.")
    if trace.exception is not None:
        return (f"nothing was recorded before '{target}' stopped: it ended before any "
                "autograd operation.")
    return (f"nothing was recorded: the script did not build an autograd graph with tracegrad "
            f"or torch ('{target}' ran without an operation on a tensor that requires grad). "
            "Hint: create the tensors to differentiate with requires_grad=True, e.g. "
            "torch.randn(3, requires_grad=True); tracegrad records programs on its own engine "
            "(`import tracegrad as torch`) and on real PyTorch (`import torch`).")


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


__all__ = ["SIGNALS", "ScriptError", "ScriptRun", "SignalReceived", "compile_script",
           "describe_end", "format_exception_message", "nothing_recorded", "print_traceback",
           "run", "run_script", "signal_name", "signals_deferred"]
