"""The ``tracegrad`` command: run | check | render | tui.

Each subcommand lives with the part it belongs to and exposes ``register(subparsers)``,
which adds its parser and sets ``handler`` (a function taking the parsed args and
returning an exit code). Those modules import only argparse at load time, so ``--help`` is
fast; the heavy imports happen inside the handlers.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# (module, attribute): each registers one or more subcommands.
COMMANDS = (
    "tracegrad.tracing.commands",  # run, check
    "tracegrad.draw.commands",  # render
    "tracegrad.tui.commands",  # tui
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tracegrad",
        description="See what autograd does: trace a script, draw its graph, step through "
                    "its backward pass.")
    parser.add_argument("--version", action="version", version=_version())
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMANDS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name != module_name:
                raise
            continue  # that part is not installed (or not written yet)
        module.register(subparsers)
    return parser


def _version() -> str:
    from tracegrad import __version__

    return f"tracegrad {__version__}"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    return int(args.handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
