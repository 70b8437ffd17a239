"""The ``tracegrad`` command: run | check | render | tui | why | diff.

Each subcommand lives with the part it belongs to and exposes ``register(subparsers)``,
which adds its parser and sets ``handler`` (a function taking the parsed args and
returning an exit code). Those modules import only argparse (and this module) at load time,
so ``--help`` is fast; the heavy imports happen inside the handlers.

One grammar for every subcommand that runs a script::

    tracegrad COMMAND [OPTIONS] TARGET [--] [SCRIPT ARGS ...]

tracegrad's options come before the target; everything after the target belongs to the
script, exactly as ``python script.py ARGS`` would pass it. An argument after the target
that is spelled like one of the command's own options is refused (exit 2) unless it comes
after ``--``: ``tracegrad tui x.py --dump`` could mean either, so it is never guessed.

>>> run = build_parser()._subcommands["run"]
>>> split_script_args(run, ["-o", "a.tgtrace", "x.py", "--", "-o", "m.pt"])
(['-o', 'a.tgtrace', 'x.py'], ['-o', 'm.pt'], None)
>>> split_script_args(run, ["x.py", "-o", "m.pt"])[2]
'-o'
"""

from __future__ import annotations

import argparse
import importlib
import sys

# The exit-status convention every subcommand follows (also printed by --help).
EXIT_OK = 0
EXIT_PROBLEMS = 1  # violations found, nothing recorded, or the script raised
EXIT_USAGE = 2  # bad command line, or a script or trace file that cannot be read

EXIT_STATUS_HELP = """\
exit status:
  0    success
  1    problems found (violations, nothing recorded), or the script raised
  2    usage error, or a script or trace file that cannot be read
  run passes the script's own status through: sys.exit(3) exits 3. A signal
  ends a run with 128+N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP), after the trace
  recorded so far is saved."""

GRAMMAR_HELP = """\
arguments:
  tracegrad COMMAND [OPTIONS] TARGET [--] [SCRIPT ARGS ...]
  tracegrad's options go before the target; everything after it is the script's.
  An argument after the target spelled like one of the command's own options is
  refused unless it follows `--`: `tracegrad run x.py -- -o model.pt` passes
  `-o model.pt` to x.py."""

# Modules that each register one or more subcommands.
COMMANDS = (
    "tracegrad.tracing.commands",  # run, check
    "tracegrad.draw.commands",  # render
    "tracegrad.tui.commands",  # tui
    "tracegrad.tracing.answer_commands",  # why, diff
)


class Parser(argparse.ArgumentParser):
    """argparse with tracegrad's one error prefix (``tracegrad run: ...``) and exit 2."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: {message}\n")


def build_parser() -> Parser:
    parser = Parser(
        prog="tracegrad",
        description="See what autograd does: trace a script, draw its graph, step through "
                    "its backward pass.",
        epilog=GRAMMAR_HELP + "\n\n" + EXIT_STATUS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=_version())
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMANDS:
        importlib.import_module(module_name).register(subparsers)
    # name -> subparser, for the commands that take a target (see add_target)
    parser._subcommands = {name: sub for name, sub in subparsers.choices.items()
                           if sub.get_default("takes_target")}
    return parser


def add_command(subparsers, name: str, *, help: str, description: str) -> Parser:
    """A subcommand parser whose --help ends with the grammar and the exit statuses."""
    return subparsers.add_parser(
        name, help=help, description=description,
        epilog=GRAMMAR_HELP + "\n\n" + EXIT_STATUS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter)


def add_target(parser: argparse.ArgumentParser, help: str) -> None:
    """The TARGET positional and, for --help only, the script's arguments after it.

    ``main`` splits the command line at the target itself (argparse cannot tell
    ``x.py -o m.pt`` from ``x.py -- -o m.pt``), so argparse never sees the script's part.
    """
    parser.add_argument("target", metavar="TARGET", help=help)
    parser.add_argument("script_args", nargs="*", metavar="SCRIPT_ARG",
                        help="arguments for the script: everything after TARGET (put them "
                             "after -- when one is spelled like a tracegrad option)")
    parser.set_defaults(takes_target=True)


def split_script_args(parser: argparse.ArgumentParser, tokens: list[str]
                      ) -> tuple[list[str], list[str], str | None]:
    """(tracegrad's tokens up to and including the target, the script's tokens, problem).

    ``problem`` is None, or the first token after the target that is one of this command's
    own options (given without ``--``): the caller refuses it rather than guess.
    """
    takes = _option_arities(parser)
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token == "--":  # `tracegrad run -o x -- script.py ...`: the target follows
            ours = tokens[:index] + tokens[index + 1:index + 2]
            return ours, tokens[index + 2:], None
        if token.startswith("-") and token != "-":
            index += 1 + _values_taken(token, takes)
            continue
        ours, theirs = tokens[:index + 1], tokens[index + 1:]
        if theirs[:1] == ["--"]:
            return ours, theirs[1:], None
        for item in theirs:
            if item == "--":
                break
            if _values_taken(item, takes, exact=True) is not None:
                return ours, theirs, item
        return ours, theirs, None
    return tokens, [], None  # no target: argparse says so


def _option_arities(parser: argparse.ArgumentParser) -> dict[str, int]:
    """Option string -> how many values follow it on the command line."""
    arities = {}
    for action in parser._actions:  # argparse has no public list of its actions
        if action.nargs == 0:
            count = 0
        elif action.nargs is None or action.nargs == "?":
            count = 1
        elif isinstance(action.nargs, int):
            count = action.nargs
        else:
            count = 1
        for option in action.option_strings:
            arities[option] = count
    return arities


def _values_taken(token: str, arities: dict[str, int], exact: bool = False) -> int | None:
    """How many following tokens ``token`` consumes as an option (None: not one of ours).

    ``--output=x`` and ``-ox`` carry their value. With ``exact`` (a token after the target),
    only options spelled out in full count: an abbreviation or ``-ofile`` there is more
    likely the script's own.
    """
    if token in arities:
        return arities[token]
    if token.startswith("--"):
        name = token.split("=", 1)[0]
        if "=" in token and name in arities:
            return 0
        if exact:
            return None
        matches = [option for option in arities if option.startswith(name)
                   and option.startswith("--")]
        return arities[matches[0]] if len(matches) == 1 else 0
    if exact:
        return None
    return 0  # -ofile carries its value; unknown options are left to argparse


def refuse_ambiguous(command: str, target: str, option: str) -> int:
    """Say why an option after the target is refused, and both ways to write it."""
    return fail(command,
                f"'{option}' comes after the target '{target}', so it would go to the "
                f"script. Put tracegrad's options before the target (`tracegrad {command} "
                f"{option} ... {target}`), or pass it to the script after -- (`tracegrad "
                f"{command} {target} -- {option} ...`).", EXIT_USAGE)


def fail(command: str, message: str, status: int = EXIT_PROBLEMS) -> int:
    """Print ``tracegrad COMMAND: message`` on stderr and return ``status``."""
    print(f"tracegrad {command}: {message}", file=sys.stderr)
    return status


def say(command: str, message: str) -> None:
    """A status line on stderr (stdout stays the script's and the report's)."""
    print(f"tracegrad {command}: {message}", file=sys.stderr, flush=True)


def plural(count: int, word: str, plural_form: str | None = None) -> str:
    """``1 backward pass``, ``2 backward passes``, ``1,234 nodes``.

    >>> plural(1, "backward pass"), plural(3, "node"), plural(2, "pass")
    ('1 backward pass', '3 nodes', '2 passes')
    """
    if count == 1:
        return f"1 {word}"
    if plural_form is None:
        plural_form = word + ("es" if word.endswith(("s", "x", "ch", "sh")) else "s")
    return f"{count:,} {plural_form}"


def _version() -> str:
    from tracegrad import __version__

    return f"tracegrad {__version__}"


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    tokens = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    script_args: list[str] = []
    ambiguous = None
    command_index = next((index for index, token in enumerate(tokens)
                          if not token.startswith("-")), None)
    if command_index is not None and tokens[command_index] in parser._subcommands:
        subparser = parser._subcommands[tokens[command_index]]
        ours, script_args, ambiguous = split_script_args(subparser,
                                                         tokens[command_index + 1:])
        tokens = tokens[:command_index + 1] + ours
    try:
        args = parser.parse_args(tokens)
    except SystemExit as exit_request:  # --help, --version, usage errors
        return int(exit_request.code or 0) if not isinstance(exit_request.code, str) \
            else EXIT_USAGE
    if not getattr(args, "handler", None):
        parser.print_help()
        return EXIT_USAGE
    if ambiguous is not None:
        return refuse_ambiguous(args.command, args.target, ambiguous)
    if getattr(args, "takes_target", False):
        args.script_args = script_args
    return int(args.handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
