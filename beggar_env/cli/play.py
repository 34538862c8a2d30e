"""``beggar play``: one deal, its outcome (``--trace``: trick by trick; ``--json``)."""

import json

from .. import core
from ..checks import plural
from . import options


def add_parser(commands):
    p = commands.add_parser(
        "play", help="play one deal", description="Play one deal and report its outcome.", allow_abbrev=False
    )
    p.add_argument(
        "deal", nargs="?", help="compact ('-JQKA' hands separated by '/') or rank notation ('10H 2C JS / QD 7 A')"
    )
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
    from ..deals import parse_deal

    deal = parse_deal(args.deal)
    if deal.n_cards <= core.DECK_SIZE:
        game.use_interpreted()  # one short game: faster than loading compiled code (see jit.interpreted)
    limits = dict(max_cards=args.max_cards, max_tricks=args.max_tricks)
    if args.trace:
        traced = game.trace(deal, **limits)
        result, tricks = traced.result, list(traced)
    else:
        result = game.play(deal, detect_cycles=not args.no_cycles, **limits)
        tricks = None
    if args.json:
        out = {"deal": str(deal), "players": deal.n_players, **result.__dict__}
        out["hand_sizes"] = list(result.hand_sizes)
        if tricks is not None:
            out["trace"] = [{**t, "hand_sizes": list(t["hand_sizes"])} for t in tricks]
        print(json.dumps(out))
        return
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
