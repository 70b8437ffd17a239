"""``tracegrad render``: run a script under the tracer (or open a .tgtrace) and draw it.

    tracegrad render -o graph.svg examples/two_layer_net.py
    tracegrad render -o graph.svg examples/train.py -- --steps 2     # the script's own options
    tracegrad render -o graph.png --collapse-modules --rankdir LR run.tgtrace

Only argparse is imported at load time; the tracer and graphviz load in the handler.
"""

from __future__ import annotations

import argparse
import os

from ..cli import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, add_command, add_target, fail, plural, say

DESCRIPTION = """\
Run a Python script under the tracer (or open a saved .tgtrace) and draw its autograd
graph with Graphviz. The picture shows one backward pass (--pass; by default the
first the program itself ran) and says which. A graph too large to lay out is drawn
smaller -- one box per nn.Module, then repeated structure folded, then a summary --
and the command says what it did."""


def register(subparsers) -> None:
    parser = add_command(
        subparsers, "render", help="draw the autograd graph of a script or a .tgtrace file",
        description=DESCRIPTION)
    parser.add_argument("-o", "--output",
                        help="file to write (default: the target's name with the format's "
                             "suffix, in the current directory)")
    parser.add_argument("--format", choices=("svg", "png", "pdf", "dot"),
                        help="output format (default: from the output's suffix, else svg)")
    parser.add_argument("--show-saved", action=argparse.BooleanOptionalAction, default=True,
                        help="draw tensors saved for backward (default: yes)")
    parser.add_argument("--show-attrs", action="store_true",
                        help="list each node's attributes (dim, keepdim, ...) in its box")
    parser.add_argument("--max-attr-chars", type=int, default=50, metavar="N",
                        help="cut attribute text at N characters (default: 50)")
    parser.add_argument("--collapse-modules", action="store_true",
                        help="one box per nn.Module instead of its nodes")
    parser.add_argument("--rankdir", choices=("TB", "LR", "BT", "RL"), default="TB",
                        help="layout direction (default: TB, top to bottom)")
    parser.add_argument("--pass", dest="pass_index", type=int, default=None, metavar="N",
                        help="backward pass to draw, with its step numbers and gradients "
                             "(default: the first pass the program itself ran)")
    parser.add_argument("--highlight-step", type=int, metavar="N",
                        help="outline the node that ran at step N of that pass")
    parser.add_argument("--max-nodes", type=int, default=5000, metavar="N",
                        help="draw graphs over N boxes smaller (0: never; default: 5000)")
    add_target(parser, "a Python script to run, or a .tgtrace file")
    parser.set_defaults(handler=run_render)


def run_render(args: argparse.Namespace) -> int:
    from ..errors import GraphvizNotFoundError, TracegradError
    from .render import require_dot, resolve_format

    output = args.output or _default_output(args.target, args.format)
    try:
        format = resolve_format(output, args.format)
        if format != "dot":
            require_dot()  # say so before running a long script
    except (ValueError, GraphvizNotFoundError) as error:
        return fail("render", str(error), EXIT_USAGE)
    result, status = load_target("render", args)
    if result is None:
        return status
    trace, run = result
    from ..tracing.runner import describe_end, nothing_recorded

    empty = nothing_recorded(trace, args.target)
    if empty is not None:
        if run is not None and run.failed:
            say("render", describe_end(run))
        return fail("render", empty)
    from .plan import resolve_pass

    try:
        shown = resolve_pass(trace, args.pass_index, args.highlight_step)
    except ValueError as error:
        return fail("render", str(error), EXIT_USAGE)
    try:
        notes = _draw(trace, output, format, args, shown)
    except (TracegradError, OSError) as error:
        return fail("render", str(error), EXIT_USAGE)
    for note in notes:
        say("render", note)
    which = f"pass {shown} of {len(trace.passes)}" if shown is not None \
        else plural(len(trace.passes), "backward pass")
    say("render", f"wrote {output} ({plural(len(trace.nodes), 'node')}; {which})")
    if run is not None and run.failed:
        say("render", f"{describe_end(run)}; the graph shows what was recorded until then.")
        return EXIT_PROBLEMS
    return EXIT_OK


def _draw(trace, output: str, format: str, args: argparse.Namespace, pass_index) -> list[str]:
    """Render with a progress line; the notes the renderer made (what it collapsed)."""
    import warnings

    from ..tracing.progress import spinner
    from .render import GraphCollapsedWarning, render

    with warnings.catch_warnings(record=True) as caught, spinner(f"drawing {output}"):
        warnings.simplefilter("always", GraphCollapsedWarning)
        render(trace, output, format, show_saved=args.show_saved,
               show_attrs=args.show_attrs, max_attr_chars=args.max_attr_chars,
               rankdir=args.rankdir, collapse_modules=args.collapse_modules,
               highlight_step=args.highlight_step, pass_index=pass_index,
               max_nodes=args.max_nodes or None)
    return [str(warning.message) for warning in caught
            if issubclass(warning.category, GraphCollapsedWarning)]


def _default_output(target: str, format: str | None) -> str:
    stem = os.path.splitext(os.path.basename(target))[0] or "graph"
    return f"{stem}.{format or 'svg'}"


def load_target(command: str, args: argparse.Namespace, **trace_options):
    """((Trace, ScriptRun or None), None) for a script or a .tgtrace file, or
    (None, exit status) after saying why it cannot be read."""
    if args.target.endswith(".py"):
        from ..tracing.commands import trace_script

        run, status = trace_script(command, args, **trace_options)
        return ((run.trace, run), None) if run is not None else (None, status)
    if args.script_args:
        return None, fail(command, f"'{args.target}' is a trace file, not a script, so it takes "
                                   f"no script arguments (got {' '.join(args.script_args)}).",
                          EXIT_USAGE)
    from ..errors import TraceFileError
    from ..tracing import load_trace
    from ..tracing.progress import spinner

    try:
        with spinner(f"loading {args.target}"):
            return (load_trace(args.target), None), None
    except (TraceFileError, OSError) as error:
        return None, fail(command, str(error), EXIT_USAGE)
