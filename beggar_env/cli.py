"""The ``beggar`` command: play one deal, simulate many games, generate datasets.

Bad input gives one line on stderr and exit status 2.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

from . import core
from .deals import parse_deal
from .game import play, simulate, trace

PERCENTILES = (5, 25, 50, 75, 95, 99)


class UsageError(Exception):
    """Bad input from the command line: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{self.prog}: {message}")


def _count(minimum):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
        return value

    return parse


def _add_limits(parser):
    parser.add_argument("--max-cards", type=_count(0), metavar="N", help="the agreed time limit, in cards played")
    parser.add_argument("--max-tricks", type=_count(0), metavar="N", help="the agreed time limit, in tricks")


def build_parser():
    parser = _Parser(prog="beggar", description="Beggar-My-Neighbour: play deals, simulate games.",
                     allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = commands.add_parser("play", help="play one deal", description="Play one deal and report its outcome.",
                            allow_abbrev=False)
    p.add_argument("deal", nargs="?",
                   help="compact ('-JQKA' hands separated by '/') or rank notation ('10H 2C JS / QD 7 A')")
    _add_limits(p)
    p.add_argument("--no-cycles", action="store_true", help="do not detect cycles (a deal that never ends runs forever)")
    p.add_argument("--trace", action="store_true", help="print the game trick by trick")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    s = commands.add_parser("simulate", help="play many random games", description="Play random games and summarise them.",
                            allow_abbrev=False)
    s.add_argument("--games", type=_count(1), default=100_000, metavar="N", help="number of games (default 100000)")
    s.add_argument("--players", type=int, choices=(2, 3, 4), default=2, metavar="P", help="2, 3 or 4 (default 2)")
    s.add_argument("--seed", type=_count(0), metavar="S", help="seed (default: a fresh one, printed)")
    s.add_argument("--threads", type=_count(1), metavar="T", help="threads (default: all cores)")
    _add_limits(s)
    s.add_argument("--json", action="store_true", help="print the raw results as JSON")
    s.add_argument("--out", metavar="FILE.npz", help="save the raw results as .npz")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")

    d = commands.add_parser("dataset", help="generate a labelled dataset", allow_abbrev=False,
                            description="Generate observations of random games labelled with their outcomes.")
    d.add_argument("--games", type=_count(1), required=True, metavar="N", help="number of games")
    d.add_argument("--players", type=int, choices=(2, 3, 4), default=2, metavar="P", help="2, 3 or 4 (default 2)")
    d.add_argument("--samples", default="card", metavar="card|trick|K",
                   help="a sample before every card (default), every trick, or K random points per game")
    d.add_argument("--observation", choices=("public", "full"), default="public", help="default public")
    d.add_argument("--seed", type=_count(0), metavar="S", help="seed (default: a fresh one, printed)")
    d.add_argument("--threads", type=_count(1), metavar="T", help="threads (default: all cores)")
    d.add_argument("--max-cards", type=_count(0), metavar="N", help="the agreed time limit, in cards played")
    d.add_argument("--out", required=True, metavar="FILE.npz", help="where to save it (beggar_env.datasets.load)")
    d.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


# -------------------------------------------------------------------------- play


def _n(count, noun):
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _describe(result):
    lines = []
    if result.outcome == "win":
        lines.append(f"seat {result.winner} wins after {_n(result.cards, 'card')} and {_n(result.tricks, 'trick')}")
    elif result.outcome == "cycle":
        lines.append(
            f"no winner: the game never ends (first repeated position after {_n(result.cards, 'card')}, "
            f"{_n(result.tricks, 'trick')})"
        )
        lines.append(
            f"the cycle starts after {_n(result.cycle_start_cards, 'card')}, "
            f"{_n(result.cycle_start_tricks, 'trick')}; "
            f"its period is {_n(result.cycle_cards, 'card')}, {_n(result.cycle_tricks, 'trick')}"
        )
    else:
        verdict = "a draw" if result.winner is None else f"seat {result.winner} wins on cards in hand"
        lines.append(f"time limit reached after {_n(result.cards, 'card')} and {_n(result.tricks, 'trick')}: {verdict}")
    lines.append("hand sizes: " + " ".join(str(n) for n in result.hand_sizes))
    return "\n".join(lines)


def _cmd_play(args):
    deal = parse_deal(args.deal)
    result = play(deal, max_cards=args.max_cards, max_tricks=args.max_tricks, detect_cycles=not args.no_cycles)
    tricks = list(trace(deal, max_cards=args.max_cards, max_tricks=args.max_tricks)) if args.trace else None
    if args.json:
        out = {"deal": str(deal), "players": deal.n_players, **result.__dict__}
        out["hand_sizes"] = list(result.hand_sizes)
        if tricks is not None:
            out["trace"] = [{**t, "hand_sizes": list(t["hand_sizes"])} for t in tricks]
        print(json.dumps(out))
        return
    if tricks is not None:
        for t in tricks:
            hands = " ".join(f"{n:2d}" for n in t["hand_sizes"])
            if t["taker"] is None:
                print(f"stopped        after {t['cards']:5d} cards   hands {hands}")
            else:
                print(f"trick {t['trick']:4d}: seat {t['taker']} takes {t['taken']:2d} cards "
                      f"(played {t['cards']:5d})   hands {hands}")
    print(_describe(result))


# ---------------------------------------------------------------------- simulate


def wilson_interval(successes, n, z=1.959964):
    """The 95% Wilson score interval of a binomial proportion."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (float(centre - half), float(centre + half))


def summarise(results, n_players):
    """A dict of summary statistics of :func:`simulate` results."""
    n = len(results)
    summary = {"games": n}
    for field in ("cards", "tricks"):
        values = results[field]
        summary[field] = {
            "mean": float(values.mean()),
            "max": int(values.max()),
            **{f"p{q}": float(np.percentile(values, q)) for q in PERCENTILES},
        }
    summary["seats"] = []
    for seat in range(n_players):
        wins = int((results.winner == seat).sum())
        low, high = wilson_interval(wins, n)
        summary["seats"].append({"seat": seat, "wins": wins, "rate": wins / n, "ci95": [low, high]})
    summary["cycles"] = int((results.outcome == core.CYCLE).sum())
    summary["limits"] = int((results.outcome == core.LIMIT).sum())
    summary["draws"] = int(((results.outcome == core.LIMIT) & (results.winner < 0)).sum())
    return summary


def _print_summary(summary, seed, n_players, seconds):
    n = summary["games"]
    print(f"{n} games, {n_players} players, seed {seed}")
    for field in ("cards", "tricks"):
        st = summary[field]
        print(f"{field:>6}: mean {st['mean']:.1f}  median {st['p50']:.0f}  "
              + "  ".join(f"p{q} {st[f'p{q}']:.0f}" for q in PERCENTILES if q != 50)
              + f"  max {st['max']}")
    for seat in summary["seats"]:
        low, high = seat["ci95"]
        print(f"seat {seat['seat']}: wins {seat['rate']:.4f}  (95% CI {low:.4f}-{high:.4f})")
    print(f"cycles: {summary['cycles']}  limits: {summary['limits']} (draws {summary['draws']})")
    print(f"{n / seconds:,.0f} games/s ({seconds:.2f} s)")


def _check_out(command, path):
    if path is not None:
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise UsageError(f"beggar {command}: --out: no such folder: {folder}")


def _seed(args):
    """The seed asked for, or a fresh one (printed, so that the run can be repeated)."""
    if args.seed is not None:
        return args.seed
    return int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> np.uint64(1))


def _run_with_progress(total, disable, run):
    """``run(progress)`` with a progress bar on stderr (shown once a run takes more than half
    a second; ``progress(done)`` moves it); returns its result and the seconds taken."""
    from tqdm import tqdm

    bar = tqdm(total=total, unit="game", unit_scale=True, delay=0.5, file=sys.stderr, disable=disable, leave=False)
    started = time.perf_counter()
    try:
        result = run(lambda done: bar.update(done - bar.n))
    finally:
        bar.close()
    return result, time.perf_counter() - started


def _cmd_simulate(args):
    _check_out("simulate", args.out)
    seed = _seed(args)
    options = dict(n_players=args.players, threads=args.threads, max_cards=args.max_cards, max_tricks=args.max_tricks)
    simulate(1, seed=seed, **options)  # compiles on a first run: games/s counts playing only
    results, seconds = _run_with_progress(
        args.games, args.no_progress, lambda progress: simulate(args.games, seed=seed, progress=progress, **options))
    if args.out is not None:
        np.savez(args.out, outcomes=np.array(core.OUTCOMES), seed=seed, players=args.players,
                 **{name: results[name] for name in results.dtype.names})
    if args.json:
        raw = {name: results[name].tolist() for name in results.dtype.names}
        raw["outcome"] = [core.OUTCOMES[code] for code in results.outcome]
        print(json.dumps({"games": args.games, "players": args.players, "seed": seed, "results": raw}))
        return
    _print_summary(summarise(results, args.players), seed, args.players, seconds)
    if args.out is not None:
        print(f"raw results saved to {args.out}")


def _cmd_dataset(args):
    from . import datasets

    samples = args.samples
    if samples not in ("card", "trick"):
        try:
            samples = _count(1)(samples)
        except argparse.ArgumentTypeError:
            raise UsageError(
                f"beggar dataset: --samples must be card, trick or a whole number >= 1, not {samples!r}"
            ) from None
    _check_out("dataset", args.out)
    seed = _seed(args)
    options = dict(n_players=args.players, observation=args.observation, samples=samples, threads=args.threads,
                   max_cards=args.max_cards)
    datasets.generate(1, seed=seed, **options)  # compiles on a first run: samples/s counts generating only
    dataset, seconds = _run_with_progress(
        args.games, args.no_progress,
        lambda progress: datasets.generate(args.games, seed=seed, progress=progress, **options))
    dataset.save(args.out)
    print(f"{len(dataset)} samples of {args.games} games ({args.players} players, {args.observation} "
          f"observation, samples={args.samples}, seed {seed}) saved to {args.out}")
    print(f"{len(dataset) / seconds:,.0f} samples/s ({seconds:.2f} s)")


COMMANDS = {"play": _cmd_play, "simulate": _cmd_simulate, "dataset": _cmd_dataset}


def parse_args(argv):
    """Parse the command line; a deal may start with '-' (``beggar play -/-``), which
    argparse would take for an option: an unclaimed word with a '/' in it, or made of
    compact symbols only, is the deal."""
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if args.command == "play" and args.deal is None:
        deals = [word for word in extras if "/" in word or not word.strip("-JQKAjqka")]
        if deals:
            args.deal = deals[0]
            extras.remove(deals[0])
        else:
            raise UsageError("beggar play: a deal is required, e.g. beggar play '-A--Q/----K-J'")
    if extras:
        raise UsageError(f"beggar {args.command}: unrecognised arguments: {' '.join(extras)}")
    return args


def main(argv=None):
    try:
        args = parse_args(argv)
        COMMANDS[args.command](args)
    except UsageError as error:
        print(str(error), file=sys.stderr)
        return 2
    except (ValueError, TypeError) as error:
        print(f"beggar: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("beggar: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
