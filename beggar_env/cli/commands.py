"""The commands of ``beggar``, one module each (``add_parser``, ``run``), and the parsing
that dispatches to them (the entry point, and the errors' exit statuses, are
:mod:`beggar_env.cli`'s)."""

import argparse
import sys

from .. import __version__, checks
from . import EXIT_STATUSES, UsageError, baselines, cycles, dataset, options, play, search, simulate, warmup

COMMANDS = {
    "play": play,
    "simulate": simulate,
    "dataset": dataset,
    "baselines": baselines,
    "search": search,
    "cycles": cycles,
    "warmup": warmup,
}
DEAL_OPTIONS = ("--start", "--deal")  # options whose value is a deal, which may start with '-'
DECK_OPTIONS = ("--deck",)  # options whose value is a deck of compact symbols, which may start with '-'


def build_parser():
    parser = options.Parser(
        prog="beggar",
        description="Beggar-My-Neighbour: play deals, simulate games, generate datasets, search, evaluate.",
        epilog=EXIT_STATUSES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=version())
    subparsers = parser.add_subparsers(dest="command", parser_class=options.Parser, metavar="COMMAND")
    for command in COMMANDS.values():
        command.add_parser(subparsers)
    return parser


def version():
    import numba
    import numpy as np

    return f"beggar {__version__} (numba {numba.__version__}, numpy {np.__version__})"


def run(args):
    """Run the command ``args`` parsed to."""
    COMMANDS[args.command].run(args)


def _attach_values(argv):
    """``--start -A/-Q`` as ``--start=-A/-Q`` (and ``--deck -JQKA`` as ``--deck=-JQKA``):
    argparse would take a value that starts with '-' for an option. The deck ``--`` (given
    as ``--deck --`` or ``--deck=--``), which argparse would drop, is passed as
    ``options.DOUBLE_DASH``."""
    words, rest = [], list(argv)
    while rest:
        word = rest.pop(0)
        if rest and rest[0].startswith("-"):
            deal = word in DEAL_OPTIONS and "/" in rest[0]
            deck = word in DECK_OPTIONS and not rest[0].strip("-JQKAjqka")
            if deal or deck:
                word = f"{word}={rest.pop(0)}"
        flag, equals, value = word.partition("=")
        if flag in DECK_OPTIONS and equals and value == "--":
            word = f"{flag}={options.DOUBLE_DASH}"
        words.append(word)
    return words


def parse_args(argv):
    """Parse the command line; a deal may start with '-' (``beggar play -/-``), which
    argparse would take for an option: an unclaimed word with a '/' in it, or made of
    compact symbols only, is the deal."""
    argv = _attach_values(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)

    def in_order(words):  # as given, not as argparse found them
        return sorted(words, key=lambda word: argv.index(word) if word in argv else len(argv))

    extras = in_order(extras)
    if args.command is None:
        if extras:
            raise UsageError(f"beggar: unrecognised arguments: {checks.excerpt(' '.join(extras))} (see beggar --help)")
        raise UsageError(parser.format_help().rstrip())
    if args.command == "play":
        words = in_order(([] if args.deal is None else [args.deal]) + extras)
        deals = [word for word in words if "/" in word or not word.strip("-JQKAjqka")]
        if not words and args.index is None:
            raise UsageError("beggar play: a deal is required, e.g. beggar play '-A--Q/----K-J', or --index N")
        args.deal = (deals[0] if deals else words[0]) if words else None  # else: the deal's own error says what
        if words:
            words.remove(args.deal)
        extras = words
    if extras:
        raise UsageError(f"beggar {args.command}: unrecognised arguments: {checks.excerpt(' '.join(extras))}")
    return args
