"""``tracegrad tui``: open the debugger on a script (traced first) or a saved .tgtrace.

Only argparse is imported at load time; tracing, loading and textual come in the handler.

    tracegrad tui examples/two_layer_net.py [script args...]
    tracegrad tui run.tgtrace
    tracegrad tui --dump run.tgtrace          # the steps table as text, no terminal needed
"""

from __future__ import annotations

import argparse
import sys

NO_TERMINAL = (
    "tracegrad tui: needs an interactive terminal, but {which} not a TTY (as in CI or a pipe).\n"
    "Hint: `tracegrad tui --dump {target}` prints the backward steps as text instead.")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "tui", help="step through a backward pass in the terminal",
        description="Open the backward debugger on a script (traced first) or a .tgtrace file.")
    parser.add_argument("--dump", action="store_true",
                        help="print the steps table as text and exit (works without a TTY)")
    parser.add_argument("--layout", choices=("dot", "grandalf"), default=None,
                        help="graph layout engine (default: dot when installed)")
    parser.add_argument("target", help="a Python script to trace, or a saved .tgtrace file")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    parser.set_defaults(handler=run_tui)


def run_tui(args: argparse.Namespace) -> int:
    if not args.dump:
        not_tty = [name for name, stream in (("stdin", sys.stdin), ("stdout", sys.stdout))
                   if not _is_tty(stream)]
        if not_tty:
            which = " and ".join(not_tty) + (" are" if len(not_tty) > 1 else " is")
            print(NO_TERMINAL.format(which=which, target=args.target), file=sys.stderr)
            return 2
    from tracegrad.errors import TraceFileError

    try:
        trace = load_target(args.target, args.args)
    except (TraceFileError, FileNotFoundError, IsADirectoryError) as error:
        print(f"tracegrad tui: {error}", file=sys.stderr)
        return 1
    from tracegrad.tracing import nothing_recorded

    if args.target.endswith(".py") and (message := nothing_recorded(trace)):  # issue 12
        print(f"tracegrad tui: {message}", file=sys.stderr)
        return 2
    if args.dump:
        from .dump import dump_steps

        sys.stdout.write(dump_steps(trace))
        return 0
    from .app import DebuggerApp

    DebuggerApp(trace, source=args.target, layout_engine=args.layout).run()
    return 0


def load_target(target: str, script_args: list[str]):
    """A Trace from a .tgtrace file, or from running a script under the tracer."""
    from pathlib import Path

    path = Path(target)
    if path.suffix == ".py":
        from tracegrad.tracing import run_script

        result = run_script(str(path), list(script_args))
        return getattr(result, "trace", result)
    from tracegrad.tracing import load_trace

    return load_trace(str(path))


def _is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or replaced streams
        return False
