"""``tracegrad render``: run a script under the tracer (or open a .tgtrace) and draw it.

    tracegrad render examples/two_layer_net.py -o graph.svg
    tracegrad render run.tgtrace -o graph.png --collapse-modules --rankdir LR

Only argparse is imported at load time; the tracer and graphviz load in the handler.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "render", help="draw the autograd graph of a script or a .tgtrace file",
        description="Run a Python script under the tracer (or open a saved .tgtrace) and "
                    "draw its autograd graph with Graphviz.")
    parser.add_argument("target", help="a Python script to run, or a .tgtrace file")
    parser.add_argument("--script-args", default="", metavar="'ARGS'",
                        help="arguments for the script, as one shell-quoted string")
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
    parser.add_argument("--pass", dest="pass_index", type=int, default=0, metavar="N",
                        help="backward pass whose step numbers and gradients to show "
                             "(default: 0, the first)")
    parser.add_argument("--highlight-step", type=int, metavar="N",
                        help="outline the node that ran at step N of that pass")
    parser.add_argument("--max-nodes", type=int, default=5000, metavar="N",
                        help="collapse modules above N boxes (0: never; default: 5000)")
    parser.set_defaults(handler=run_render)


def run_render(args: argparse.Namespace) -> int:
    from ..errors import TracegradError
    from .render import GraphCollapsedWarning, render, resolve_format

    output = args.output or _default_output(args.target, args.format)
    try:
        format = resolve_format(output, args.format)
        if format != "dot":
            from .render import require_dot

            require_dot()  # say so before running a long script
        trace, crashed = _load(args.target, shlex.split(args.script_args))
    except (TracegradError, ValueError, OSError) as error:
        print(f"tracegrad render: {error}", file=sys.stderr)
        return 2
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", GraphCollapsedWarning)
        try:
            render(trace, output, format, show_saved=args.show_saved,
                   show_attrs=args.show_attrs, max_attr_chars=args.max_attr_chars,
                   rankdir=args.rankdir, collapse_modules=args.collapse_modules,
                   highlight_step=args.highlight_step, pass_index=args.pass_index,
                   max_nodes=args.max_nodes or None)
        except (TracegradError, ValueError, OSError) as error:
            print(f"tracegrad render: {error}", file=sys.stderr)
            return 1
    for warning in caught:
        print(f"tracegrad render: {warning.message}", file=sys.stderr)
    print(f"tracegrad render: wrote {output} ({len(trace.nodes)} nodes, "
          f"{len(trace.passes)} backward passes)", file=sys.stderr)
    if crashed:
        exception = trace.exception
        print(f"tracegrad render: {args.target} raised {exception.type}: {exception.message}"
              f"; the graph shows what was recorded until then.", file=sys.stderr)
        return 1
    return 0


def _default_output(target: str, format: str | None) -> str:
    stem = os.path.splitext(os.path.basename(target))[0] or "graph"
    return f"{stem}.{format or 'svg'}"


def _load(target: str, script_args: list[str]):
    """(Trace, whether the script crashed) for a script or a .tgtrace file."""
    if not os.path.exists(target):
        raise FileNotFoundError(f"no such file: {target!r}. Hint: pass a Python script or "
                                "a .tgtrace file written by `tracegrad run`.")
    if target.endswith(".py"):
        from ..tracing import nothing_recorded, run_script

        trace = run_script(target, list(script_args))
        if (message := nothing_recorded(trace)):  # issue 12
            raise ValueError(message)
        return trace, trace.exception is not None
    from ..tracing import load_trace

    trace = load_trace(target)
    return trace, False
