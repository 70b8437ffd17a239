"""``tracegrad tui``: open the debugger on a script (traced first) or a saved .tgtrace.

Only argparse is imported at load time; tracing, loading and textual come in the handler.

    tracegrad tui examples/two_layer_net.py [script args...]
    tracegrad tui --keep-passes 5 5 train.py -- --epochs 3
    tracegrad tui run.tgtrace
    tracegrad tui --dump run.tgtrace          # the steps table as text, no terminal needed
    tracegrad tui a.tgtrace b.tgtrace         # two runs side by side, where they part
    tracegrad tui --dump a.tgtrace b.tgtrace  # the same, as text
    tracegrad tui --rtol 1e-4 a.tgtrace b.tgtrace  # tolerances, as `tracegrad diff`

tracegrad's options (``--dump`` included) go before the target; what follows the target is
the script's (``tracegrad tui x.py --dump`` is refused as ambiguous, see tracegrad.cli).
"""

from __future__ import annotations

import argparse
import sys

from tracegrad.cli import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, add_command, add_target, fail
from tracegrad.tracing.answer_commands import add_tolerance_options
from tracegrad.tracing.commands import add_recording_options, recording_options

NO_TERMINAL = (
    "needs an interactive terminal, but {which} not a TTY (as in CI or a pipe).\n"
    "Hint: `tracegrad tui --dump {target}` prints the backward steps as text instead.")

DESCRIPTION = """\
Open the backward debugger on a script (traced first, with the same recording
options as `tracegrad run`) or on a saved .tgtrace file. Given two .tgtrace files,
show them side by side at the node where the runs part (as `tracegrad diff`)."""


def register(subparsers) -> None:
    parser = add_command(subparsers, "tui", help="step through a backward pass in the terminal",
                         description=DESCRIPTION)
    parser.add_argument("--dump", action="store_true",
                        help="print the steps table as text and exit (works without a TTY)")
    parser.add_argument("--layout", choices=("dot", "grandalf"), default=None,
                        help="graph layout engine (default: dot when installed)")
    parser.add_argument("--all-passes", action="store_true",
                        help="also show gradcheck's probe passes (hidden by default: a "
                             "program that calls gradcheck records one pass per probe)")
    add_tolerance_options(parser)  # only with two traces, as in `tracegrad diff`
    add_recording_options(parser)
    add_target(parser, "a Python script to trace, or a saved .tgtrace file")
    parser.set_defaults(handler=run_tui)


def run_tui(args: argparse.Namespace) -> int:
    if _two_traces(args):
        return run_diff_tui(args.target, args.script_args[0], dump=args.dump,
                            rtol=args.rtol, atol=args.atol)
    if args.rtol is not None or args.atol is not None:
        return fail("tui", "--rtol and --atol are the tolerances for comparing two traces "
                           "(`tracegrad tui --rtol 1e-4 A.tgtrace B.tgtrace`); with one "
                           "target there is nothing to compare.", EXIT_USAGE)
    if not args.dump:
        refusal = no_terminal(args.target)
        if refusal is not None:
            return refusal
    from tracegrad.draw.commands import load_target
    from tracegrad.tracing.runner import describe_end, nothing_recorded

    loaded, status = load_target("tui", args, **recording_options(args))
    if loaded is None:
        return status
    trace, run = loaded
    empty = nothing_recorded(trace, args.target)
    if empty is not None:
        if run is not None and run.failed:
            print(f"tracegrad tui: {describe_end(run)}", file=sys.stderr)
        return fail("tui", empty)
    status = EXIT_PROBLEMS if run is not None and run.failed else EXIT_OK
    if args.dump:
        from .dump import dump_steps

        sys.stdout.write(dump_steps(trace, all_passes=args.all_passes))
        return status
    from .app import DebuggerApp

    DebuggerApp(trace, source=args.target, layout_engine=args.layout,
                show_probes=args.all_passes).run()
    return status


def no_terminal(target: str, command: str = "tui") -> int | None:
    """None when stdin and stdout are terminals, else the exit status after saying so."""
    not_tty = [name for name, stream in (("stdin", sys.stdin), ("stdout", sys.stdout))
               if not _is_tty(stream)]
    if not not_tty:
        return None
    which = " and ".join(not_tty) + (" are" if len(not_tty) > 1 else " is")
    return fail(command, NO_TERMINAL.format(which=which, target=target), EXIT_USAGE)


def _two_traces(args: argparse.Namespace) -> bool:
    return (args.target.endswith(".tgtrace") and len(args.script_args) == 1
            and args.script_args[0].endswith(".tgtrace"))


def run_diff_tui(first: str, second: str, dump: bool = False, rtol: float | None = None,
                 atol: float | None = None, command: str = "tui") -> int:
    """Two saved traces side by side where they part (``dump``: as text); exits 0 when
    they agree, 1 when they differ, 2 when one cannot be read or there is no terminal."""
    if not dump:
        refusal = no_terminal(f"{first} {second}", command)
        if refusal is not None:
            return refusal
    from tracegrad.errors import TraceFileError
    from tracegrad.tracing import load_trace

    traces = []
    for path in (first, second):
        try:
            traces.append(load_trace(path))
        except (TraceFileError, OSError) as error:
            return fail(command, str(error), EXIT_USAGE)
    if dump:
        from .diff_view import DiffView, view_text

        view = DiffView(traces[0], traces[1], names=(first, second), rtol=rtol, atol=atol)
        sys.stdout.write(view_text(view))
        return EXIT_OK if view.result.same else EXIT_PROBLEMS
    from .diff_app import DiffApp

    app = DiffApp(traces[0], traces[1], names=(first, second), rtol=rtol, atol=atol)
    app.run()
    return EXIT_OK if app.view.result.same else EXIT_PROBLEMS


def _is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or replaced streams
        return False
