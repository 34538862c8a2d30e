"""``beggar play``: one deal, given or by its index, and its outcome (``--trace``: trick by
trick; ``--json``)."""

import json
import re
from contextlib import nullcontext

from .. import core
from ..checks import plural
from ..deals import ORDERS, STANDARD_DECK
from . import UsageError, options

FLAGS = {"index": "--index", "deck": "--deck", "n_players": "--players", "order": "--order"}
API_NAME = re.compile(r"^(\w+)(?=:? )")  # an argument's name, as the API's messages start


def add_parser(commands):
    p = commands.add_parser(
        "play", help="play one deal", description="Play one deal and report its outcome.", allow_abbrev=False
    )
    p.add_argument(
        "deal", nargs="?", help="compact ('-JQKA' hands separated by '/') or rank notation ('10H 2C JS / QD 7 A')"
    )
    p.add_argument(
        "--index",
        type=options.whole_number(0, None),
        metavar="N",
        help="play deal number N of --deck instead (see --order; the standard deck has 653534134886878245000)",
    )
    p.add_argument(
        "--order",
        choices=tuple(ORDERS),
        default="camicia",
        help="the numbering of --index: camicia (A < K < Q < J < numeral, the public 52-card census's) or census "
        "(numeral < J < Q < K < A, beggar cycles census's) (default camicia)",
    )
    p.add_argument(
        "--deck",
        type=options.deck,
        metavar="CARDS",
        help="with --index: the deck, in compact symbols (default: the standard 52 cards; may start with -)",
    )
    p.add_argument("--players", type=options.players, metavar="P", help="with --index: 2, 3 or 4 (default 2)")
    options.add_limits(p)
    p.add_argument(
        "--no-cycles", action="store_true", help="do not detect cycles (a deal that never ends runs until Ctrl-C)"
    )
    p.add_argument("--trace", action="store_true", help="print the game trick by trick")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def describe(result):
    """A game's result in words, as ``beggar play`` prints it."""
    lines = []
    if result.outcome == "win":
        lines.append(
            f"seat {result.winner} wins after {plural(result.cards, 'card')} and {plural(result.tricks, 'trick')}"
        )
    elif result.outcome == "cycle":
        lines.append(
            f"no winner: the game never ends (first repeated position after {plural(result.cards, 'card')}, "
            f"{plural(result.tricks, 'trick')})"
        )
        lines.append(
            f"the cycle starts after {plural(result.cycle_start_cards, 'card')}, "
            f"{plural(result.cycle_start_tricks, 'trick')}; "
            f"its period is {plural(result.cycle_cards, 'card')}, {plural(result.cycle_tricks, 'trick')}"
        )
    else:
        verdict = "a draw" if result.winner is None else f"seat {result.winner} wins on cards in hand"
        lines.append(
            f"time limit reached after {plural(result.cards, 'card')} and {plural(result.tricks, 'trick')}: {verdict}"
        )
    lines.append("hand sizes: " + " ".join(str(n) for n in result.hand_sizes))
    return "\n".join(lines)


def run(args):
    from .. import game

    deal = _deal(args)
    short = deal.n_cards <= core.DECK_SIZE  # one short game: faster as Python than loading compiled code
    limits = dict(max_cards=args.max_cards, max_tricks=args.max_tricks)
    with game.interpreted_engine() if short else nullcontext():
        if args.trace:
            traced = game.trace(deal, **limits)
            result, tricks = traced.result, list(traced)
        else:
            result = game.play(deal, detect_cycles=not args.no_cycles, **limits)
            tricks = None
    if args.json:
        out = {"deal": str(deal), "players": deal.n_players, **result.__dict__}
        if args.index is not None:
            out.update(index=args.index, order=args.order)
        out["hand_sizes"] = list(result.hand_sizes)
        if tricks is not None:
            out["trace"] = [{**t, "hand_sizes": list(t["hand_sizes"])} for t in tricks]
        print(json.dumps(out))
        return
    if args.index is not None:
        print(f"deal {args.index:,} ({args.order} order): {deal}")
    for t in tricks or ():
        hands = " ".join(f"{n:2d}" for n in t["hand_sizes"])
        if t["taker"] is None:
            print(f"stopped        after {t['cards']:5d} cards   hands {hands}")
        else:
            print(
                f"trick {t['trick']:4d}: seat {t['taker']} takes {t['taken']:2d} cards "
                f"(played {t['cards']:5d})   hands {hands}"
            )
    print(describe(result))


def _deal(args):
    """The deal given, or the one ``--index`` numbers."""
    from ..deals import deal_at, parse_deal

    if args.index is None:
        given = [flag for flag, value in (("--deck", args.deck), ("--players", args.players)) if value is not None]
        if given:
            raise UsageError(f"beggar play: {given[0]} is for --index")
        return parse_deal(args.deal)
    if args.deal is not None:
        raise UsageError("beggar play: give a deal or --index N, not both")
    try:
        return deal_at(args.index, STANDARD_DECK if args.deck is None else args.deck, args.players or 2, args.order)
    except ValueError as error:  # the API's words for an argument are the command line's flags here
        text = API_NAME.sub(lambda m: FLAGS.get(m.group(1), m.group(1)), str(error).splitlines()[0])
        raise UsageError(f"beggar play: {text}") from None
