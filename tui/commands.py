"""``tracegrad tui``: open the debugger on a script (traced first) or a saved .tgtrace.

Only argparse is imported at load time; tracing, loading and textual come in the handler.

    tracegrad tui examples/two_layer_net.py [script args...]
    tracegrad tui --keep-passes 5 5 train.py -- --epochs 3
    tracegrad tui run.tgtrace
    tracegrad tui --dump run.tgtrace          # the steps table as text, no terminal needed

tracegrad's options (``--dump`` included) go before the target; what follows the target is
the script's (``tracegrad tui x.py --dump`` is refused as ambiguous, see tracegrad.cli).
"""

from __future__ import annotations

import argparse
import sys

from tracegrad.cli import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, add_command, add_target, fail
from tracegrad.tracing.commands import add_recording_options, recording_options

NO_TERMINAL = (
    "needs an interactive terminal, but {which} not a TTY (as in CI or a pipe).\n"
    "Hint: `tracegrad tui --dump {target}` prints the backward steps as text instead.")

DESCRIPTION = """\
Open the backward debugger on a script (traced first, with the same recording
options as `tracegrad run`) or on a saved .tgtrace file."""


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
    add_recording_options(parser)
    add_target(parser, "a Python script to trace, or a saved .tgtrace file")
    parser.set_defaults(handler=run_tui)


def run_tui(args: argparse.Namespace) -> int:
    if not args.dump:
        not_tty = [name for name, stream in (("stdin", sys.stdin), ("stdout", sys.stdout))
                   if not _is_tty(stream)]
        if not_tty:
            which = " and ".join(not_tty) + (" are" if len(not_tty) > 1 else " is")
            return fail("tui", NO_TERMINAL.format(which=which, target=args.target),
                        EXIT_USAGE)
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


def _is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or replaced streams
        return False
