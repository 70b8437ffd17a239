"""``tracegrad run`` and ``tracegrad check``, registered with ``tracegrad.cli``.

    tracegrad run -o run.tgtrace examples/two_layer_net.py   # trace a script, save the trace
    tracegrad check examples/inplace_bug.py                  # print findings; exit 1 if any

tracegrad's options go before the script; everything after the script is the script's (see
``tracegrad.cli``). Only argparse is imported at load time (``tracegrad --help`` stays fast).
"""

from __future__ import annotations

import argparse
import os

from ..cli import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, add_command, add_target, fail, plural, say

RUN_DESCRIPTION = """\
Run a Python script as __main__ under the tracer and save its trace (.tgtrace).

The trace is saved however the script ends: normally, with sys.exit(n), with an
exception, or on Ctrl-C, SIGTERM or SIGHUP (the trace recorded until then). The save
is atomic: it writes a temporary file next to the output and renames it, so the output
is always a complete trace (or the previous one). A second Ctrl-C (or SIGTERM, SIGHUP)
during the save waits for the save to finish; the run then exits with 128+N."""

CHECK_DESCRIPTION = """\
Run a Python script under the tracer and print every finding (in-place change of a
saved tensor, in-place on a leaf, NaN/Inf, backward through a freed graph) with the
lines involved."""


def register(subparsers) -> None:
    run_parser = add_command(
        subparsers, "run", help="run a script under the tracer and save its trace (.tgtrace)",
        description=RUN_DESCRIPTION)
    add_recording_options(run_parser)
    run_parser.add_argument("-o", "--output", default=None,
                            help="where to write the trace (default: <script name>.tgtrace)")
    run_parser.add_argument("--no-timings", action="store_true",
                            help="store step durations as 0 (byte-identical files across runs)")
    add_target(run_parser, "the Python script to run")
    run_parser.set_defaults(handler=run_command)

    check_parser = add_command(
        subparsers, "check", help="run a script and report autograd violations with file:line",
        description=CHECK_DESCRIPTION)
    check_parser.add_argument(
        "--inf", action="store_true",
        help="count Inf as a finding too (by default only NaN counts: an Inf can be meant, "
             "e.g. a -inf attention mask; the first NaN made from an Inf names the Inf's line)")
    check_parser.add_argument(
        "--memory", action="store_true",
        help="also report what backward keeps: saved-tensor bytes by module and by line at "
             "the peak held between forward and backward, and tensors saved twice")
    add_target(check_parser, "the Python script to run")
    check_parser.set_defaults(handler=check_command)


def add_recording_options(parser: argparse.ArgumentParser) -> None:
    """What to record: shared by ``run`` and ``tui`` (which traces a script first)."""
    parser.add_argument("--no-values", action="store_true",
                        help="record structure only, no forward values or gradients")
    parser.add_argument("--budget-mb", type=_positive_float, default=None, metavar="MIB",
                        help="memory for whole captured arrays, in MiB (default 256)")
    parser.add_argument("--keep-passes", type=_count, nargs=2, metavar=("FIRST", "LAST"),
                        default=None,
                        help="keep values for the first and last N backward passes "
                             "(default 2 2)")


def recording_options(args: argparse.Namespace) -> dict:
    """The keyword arguments for ``tracegrad.record()`` from ``add_recording_options``."""
    options: dict = {"values": not args.no_values}
    if args.budget_mb is not None:
        options["budget_bytes"] = int(args.budget_mb * 1024 * 1024)
    if args.keep_passes is not None:
        options["keep_passes"] = tuple(args.keep_passes)
    return options


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of MiB, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of MiB, got {text}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a count, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a count >= 0, got {value}")
    return value


def trace_script(command: str, args: argparse.Namespace, **trace_options):
    """Run ``args.target`` under the tracer with a progress line; (ScriptRun, None) or
    (None, exit status) when it cannot be run."""
    from .progress import script_progress
    from .runner import ScriptError, run

    try:
        with script_progress(args.target) as on_start:
            return run(args.target, args.script_args, on_start=on_start,
                       **trace_options), None
    except ScriptError as error:
        return None, fail(command, str(error), EXIT_USAGE)


def counts(trace) -> str:
    return (f"{plural(len(trace.nodes), 'node')}, {plural(len(trace.passes), 'backward pass')}"
            f", {plural(len(trace.violations), 'violation')}")


def run_command(args: argparse.Namespace) -> int:
    from .runner import signal_name, signals_deferred

    def saving_continues(signum: int) -> None:
        say("run", f"{signal_name(signum)} received while saving the trace; finishing the "
                   "save first (the file is never left half written).")

    # Signals are held from the moment the script ends (the runner hands its handlers back
    # to these) until the trace is saved: a second Ctrl-C never interrupts the save.
    with signals_deferred(saving_continues, script=True) as late_signals:
        status, failed = _run_and_save(args)
    if late_signals and not failed:
        return 128 + late_signals[0]
    return status


def _run_and_save(args: argparse.Namespace) -> tuple[int, bool]:
    """(exit status, whether the script failed) of ``tracegrad run``."""
    from ..errors import TracegradError
    from .runner import describe_end, nothing_recorded, print_traceback, signal_name

    output = args.output or os.path.splitext(os.path.basename(args.target))[0] + ".tgtrace"
    result, status = trace_script("run", args, **recording_options(args))
    if result is None:
        return status, False
    trace = result.trace
    if result.error is not None and result.signum is None \
            and not isinstance(result.error, SystemExit):
        print_traceback(trace)  # the script's own traceback, as python would print it
    empty = nothing_recorded(trace, args.target)
    if empty is not None:
        ending = describe_end(result)
        fail("run", (ending + "; " if ending else "") + empty + " No trace was written.")
        return result.exit_status or EXIT_PROBLEMS, True
    if result.signum is not None:
        say("run", f"{signal_name(result.signum)} received; saving the trace recorded so far "
                   f"to {output}")
    try:
        trace.save(output, timings=not args.no_timings)
    except (OSError, TracegradError) as error:
        return fail("run", f"could not write the trace to '{output}': {error}", EXIT_USAGE), True
    if result.failed:
        say("run", f"{describe_end(result)}; the trace up to then was written to {output} "
                   f"({counts(trace)})")
    else:
        say("run", f"wrote {output} ({counts(trace)})")
    return result.exit_status, result.failed


def check_command(args: argparse.Namespace) -> int:
    from .report import findings, format_finding
    from .runner import describe_end, nothing_recorded

    # No values kept: the recorder reads a NaN's cause from the live arrays as it happens.
    result, status = trace_script("check", args, values=False, keep_passes=None)
    if result is None:
        return status
    trace = result.trace
    found = findings(trace, inf=args.inf)
    for finding in found:
        print(format_finding(trace, finding))
    if args.memory:
        from .memory import memory_report
        from .text import format_memory

        print("\n".join(format_memory(trace, memory_report(trace))))
    if not args.inf:
        _note_uncounted_inf(trace)
    if result.failed:
        say("check", describe_end(result))
    if found:
        return fail("check", f"{plural(len(found), 'finding')} in {args.target}")
    empty = nothing_recorded(trace, args.target)
    if empty is not None:
        return fail("check", empty)
    if result.failed:
        return EXIT_PROBLEMS
    say("check", f"no violations in {args.target}")
    return EXIT_OK


def _note_uncounted_inf(trace) -> None:
    """Say on stderr how many Inf findings were left out (without ``--inf``)."""
    left_out = sum(1 for violation in trace.violations if violation.kind == "inf")
    if left_out:
        say("check", f"{plural(left_out, 'Inf finding')} not counted (Inf can be meant); "
                     "--inf reports them")
