"""``tracegrad run`` and ``tracegrad check``, registered with ``tracegrad.cli``.

    tracegrad run examples/two_layer_net.py -o run.tgtrace   # trace a script, save the trace
    tracegrad check examples/inplace_bug.py                  # print violations; exit 1 if any

Options may come before or after the script; arguments after ``--`` go to the script as
they are. Only argparse is imported at load time (``tracegrad --help`` stays fast).
"""

from __future__ import annotations

import argparse
import os
import sys


def register(subparsers) -> None:
    run_parser = subparsers.add_parser(
        "run", help="run a script under the tracer and save its trace (.tgtrace)",
        description="Run a Python script as __main__ under the tracer and save the trace. "
                    "If the script raises, the trace up to the failure is still saved and "
                    "the exit status is 1.")
    _add_script_arguments(run_parser)
    _add_run_options(run_parser)
    run_parser.set_defaults(handler=run_command)

    check_parser = subparsers.add_parser(
        "check", help="run a script and report autograd violations with file:line",
        description="Run a Python script under the tracer and print every violation (in-place "
                    "change of a saved tensor, in-place on a leaf, NaN/Inf, backward through "
                    "a freed graph) with the lines involved. Exit status: 0 clean, 1 "
                    "violations found, 2 the script failed without a violation to explain it.")
    _add_script_arguments(check_parser)
    check_parser.set_defaults(handler=check_command)


def _add_script_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("script_args", nargs=argparse.REMAINDER,
                        help="arguments for the script (use -- before any that look like "
                             "tracegrad options)")


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", default=None,
                        help="where to write the trace (default: <script name>.tgtrace)")
    parser.add_argument("--no-values", action="store_true",
                        help="record structure only, no forward values or gradients")
    parser.add_argument("--budget-mb", type=float, default=None,
                        help="memory for whole captured arrays, in MiB (default 256)")
    parser.add_argument("--keep-passes", type=int, nargs=2, metavar=("FIRST", "LAST"),
                        default=None,
                        help="keep values for the first and last N backward passes "
                             "(default 2 2)")
    parser.add_argument("--no-timings", action="store_true",
                        help="store step durations as 0 (byte-identical files across runs)")


def _trailing_options(values: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """Our options given after the script name, and what is left for the script."""
    if "--" in values:
        split = values.index("--")
        ours, theirs = values[:split], values[split + 1:]
    else:
        ours, theirs = values, []
    parser = argparse.ArgumentParser(add_help=False)
    _add_run_options(parser)
    options, rest = parser.parse_known_args(ours)
    return options, rest + theirs


def _options(args: argparse.Namespace) -> tuple[argparse.Namespace, list[str]]:
    trailing, script_args = _trailing_options(list(args.script_args))
    for key, value in vars(trailing).items():
        if value not in (None, False):
            setattr(args, key, value)
    return args, script_args


def run_command(args: argparse.Namespace) -> int:
    from ..errors import TracegradError
    from . import nothing_recorded
    from .runner import format_exception_message, print_traceback, run_script

    args, script_args = _options(args)
    output = args.output or os.path.splitext(os.path.basename(args.script))[0] + ".tgtrace"
    trace_options = {"values": not args.no_values}
    if args.budget_mb is not None:
        trace_options["budget_bytes"] = int(args.budget_mb * 1024 * 1024)
    if args.keep_passes is not None:
        trace_options["keep_passes"] = tuple(args.keep_passes)
    try:
        trace = run_script(args.script, script_args, **trace_options)
    except FileNotFoundError as error:
        print(f"tracegrad run: {error}", file=sys.stderr)
        return 2
    if (message := nothing_recorded(trace)):  # issue 12: never an empty success
        print(f"tracegrad run: {message}", file=sys.stderr)
        return 2
    try:
        trace.save(output, timings=not args.no_timings)
    except (OSError, TracegradError) as error:
        print(f"tracegrad run: could not write the trace to '{output}': {error}",
              file=sys.stderr)
        return 2
    counts = (f"{len(trace.nodes)} nodes, {len(trace.passes)} backward passes, "
              f"{len(trace.violations)} violations")
    if trace.exception is not None:
        print_traceback(trace)
        print(f"tracegrad run: {format_exception_message(trace)}\n"
              f"tracegrad run: the trace up to the failure was written to {output} "
              f"({counts})", file=sys.stderr)
        return 1
    print(f"tracegrad run: wrote {output} ({counts})", file=sys.stderr)
    return 0


def check_command(args: argparse.Namespace) -> int:
    from . import nothing_recorded
    from .report import format_violation
    from .runner import format_exception_message, run_script

    args, script_args = _options(args)
    try:
        trace = run_script(args.script, script_args, values=False, keep_passes=None)
    except FileNotFoundError as error:
        print(f"tracegrad check: {error}", file=sys.stderr)
        return 2
    if (message := nothing_recorded(trace)):  # issue 12: never "no violations"
        print(f"tracegrad check: {message}", file=sys.stderr)
        return 2
    for violation in trace.violations:
        print(format_violation(trace, violation))
    if trace.exception is not None:
        print(f"tracegrad check: {format_exception_message(trace)}", file=sys.stderr)
    if trace.violations:
        count = len(trace.violations)
        print(f"tracegrad check: {count} violation{'s' if count != 1 else ''} in "
              f"{args.script}", file=sys.stderr)
        return 1
    if trace.exception is not None:
        return 2
    print(f"tracegrad check: no violations in {args.script}", file=sys.stderr)
    return 0
