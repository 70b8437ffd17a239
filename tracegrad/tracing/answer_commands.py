"""``tracegrad why`` and ``tracegrad diff``, registered with ``tracegrad.cli``.

    tracegrad why examples/no_grad/detach.py w1        # why w1 has no gradient
    tracegrad why run.tgtrace                          # every leaf without a gradient
    tracegrad diff a.tgtrace b.tgtrace                 # where two runs part

Only argparse is imported at load time (``tracegrad --help`` stays fast).
"""

from __future__ import annotations

import argparse

from ..cli import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, add_command, fail, plural, say

WHY_DESCRIPTION = """\
Say why a tensor's .grad is None or zero after backward: where the path from the
loss to it was cut (detach(), .data, no_grad, an integer dtype, requires_grad=False,
a custom Function returning None, a .item() round trip), why backward never reached
it (no backward, the wrong loss, a failed pass, zero_grad() afterwards), or which
node made its gradient zero (a dead ReLU, a clamp, a saturated sigmoid).

TARGET is a script (run under the tracer) or a .tgtrace file; TENSOR names a tensor
as the program calls it (w1, fc.weight). Without TENSOR, every named leaf that
requires grad is checked. Arguments for the script go after --:
  tracegrad why train.py w1 -- --epochs 3
Exits 0 when each tensor has a nonzero gradient, 1 when one has none (or a zero
one), 2 when the target cannot be read or no tensor has that name."""

DIFF_DESCRIPTION = """\
Line up two traces of the same program (two runs, two versions of a custom
Function, tracegrad's engine and real torch) by structure -- node names, edge
order, source lines, names; never by ids -- and report the first node whose forward
value or gradient differs beyond the tolerance, with both values, both lines and
the ops above it. Nodes in one trace and not the other are shown as a unified diff
of the graphs' text.
Exits 0 when the traces agree within the tolerance, 1 when they differ, 2 when a
trace cannot be read."""


def register(subparsers) -> None:
    why_parser = add_command(subparsers, "why", help="say why a tensor has no (or a zero) "
                             "gradient", description=WHY_DESCRIPTION)
    why_parser.add_argument("--pass", dest="pass_index", type=int, default=None,
                            metavar="N", help="explain after backward pass N (default: the "
                                              "last one the program started)")
    why_parser.add_argument("target", metavar="TARGET",
                            help="a Python script to run, or a .tgtrace file")
    why_parser.add_argument("rest", nargs=argparse.REMAINDER, metavar="TENSOR",
                            help="tensor names; then -- and the script's arguments")
    why_parser.set_defaults(handler=why_command)

    diff_parser = add_command(subparsers, "diff", help="find where two traces of one "
                              "program part", description=DIFF_DESCRIPTION)
    add_tolerance_options(diff_parser)
    diff_parser.add_argument("--tui", action="store_true",
                             help="show both traces side by side in the terminal, at the "
                                  "node where they part")
    diff_parser.add_argument("first", metavar="A", help="a .tgtrace file")
    diff_parser.add_argument("second", metavar="B", help="the .tgtrace file to compare with")
    diff_parser.set_defaults(handler=diff_command)


def add_tolerance_options(parser: argparse.ArgumentParser) -> None:
    """``--rtol``/``--atol`` for comparing two traces (``tracegrad diff``, ``tracegrad tui
    A B``): None unless given, meaning torch.testing's defaults for each value's dtype."""
    parser.add_argument("--rtol", type=float, default=None,
                        help="relative tolerance (default 1.3e-6 for float32, 1e-7 "
                             "for float64, as torch.testing)")
    parser.add_argument("--atol", type=float, default=None,
                        help="absolute tolerance (default 1e-5 for float32, 1e-7 "
                             "for float64)")


def why_command(args: argparse.Namespace) -> int:
    rest = list(args.rest)
    if "--" in rest:
        split = rest.index("--")
        names, args.script_args = rest[:split], rest[split + 1:]
    else:
        names, args.script_args = rest, []
    for name in names:
        if name.startswith("-"):
            return fail("why", f"'{name}' comes after the target '{args.target}'. Put "
                               f"tracegrad's options before the target (`tracegrad why "
                               f"{name} ... {args.target}`), or pass it to the script after "
                               f"-- (`tracegrad why {args.target} TENSOR -- {name}`).",
                        EXIT_USAGE)
    from ..draw.commands import load_target

    loaded, status = load_target("why", args, values=True, keep_passes=None)
    if loaded is None:
        return status
    trace, run = loaded
    if run is not None and run.failed:
        from .runner import describe_end

        say("why", describe_end(run))
    if args.pass_index is not None and not 0 <= args.pass_index < len(trace.passes):
        return fail("why", f"--pass {args.pass_index}: the trace has "
                           f"{plural(len(trace.passes), 'backward pass')}.", EXIT_USAGE)
    namespace = run.namespace if run is not None else {}
    return _explain(trace, names, namespace, args.pass_index)


def _explain(trace, names: list[str], namespace: dict, pass_index) -> int:
    from .why import why_no_grad

    targets = names or _leaves(trace)
    if not targets:
        return fail("why", "no named leaf that requires grad in this trace. Hint: name the "
                           "tensor: tracegrad why TARGET w1.")
    missing = 0
    for name in targets:
        live = namespace.get(name)
        try:
            # The script's own tensor when it is still there: its .grad now shows what the
            # trace cannot (zeroed in place after backward); else the name in the trace.
            if live is None or not hasattr(live, "grad"):
                raise ValueError(name)
            answer = why_no_grad(trace, live, pass_index)
        except (ValueError, TypeError):
            try:
                answer = why_no_grad(trace, name, pass_index)
            except ValueError as error:
                if live is None or getattr(live, "requires_grad", True) is not False:
                    return fail("why", str(error).removeprefix("why_no_grad: "), EXIT_USAGE)
                answer = why_no_grad(trace, live, pass_index)
        answer.label = name
        if names or not answer.has_grad or answer.cause == "zero":
            print(answer)
        if answer.cause != "has_grad":
            missing += 1
    if missing:
        return fail("why", f"{plural(missing, 'tensor')} without a nonzero gradient")
    if not names:
        say("why", f"every named leaf that requires grad has a gradient "
                   f"({plural(len(targets), 'tensor')})")
    return EXIT_OK


def _leaves(trace) -> list[str]:
    """Named leaves that require grad, but not those only gradcheck's probes used."""
    from .why import reachable_nodes

    def reached(passes) -> set[int]:
        roots = [trace.tensors[root].grad_fn for backward_pass in passes
                 for root in backward_pass.roots if root in trace.tensors]
        return reachable_nodes(trace, roots)

    user = reached(trace.user_passes())
    probes = reached([item for item in trace.passes if not item.is_user]) - user
    probed = {node.leaf for node in trace.nodes.values()
              if node.kind == "accumulate" and node.id in probes}
    return sorted({record.name for record in trace.tensors.values()
                   if record.is_leaf and record.requires_grad and record.name
                   and record.id not in probed})


def diff_command(args: argparse.Namespace) -> int:
    if args.tui:
        from tracegrad.tui.commands import run_diff_tui

        return run_diff_tui(args.first, args.second, rtol=args.rtol, atol=args.atol,
                            command="diff")
    from ..errors import TraceFileError
    from . import load_trace
    from .diff import diff_traces

    traces = []
    for path in (args.first, args.second):
        try:
            traces.append(load_trace(path))
        except (TraceFileError, OSError) as error:
            return fail("diff", str(error), EXIT_USAGE)
    result = diff_traces(traces[0], traces[1], rtol=args.rtol, atol=args.atol,
                         names=(args.first, args.second))
    print(result)
    if result.same:
        return EXIT_OK
    return EXIT_PROBLEMS
