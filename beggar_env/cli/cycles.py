"""``beggar cycles``: the cycle census, balanced never-ending deals by backward play, longer
games behind a game, and new cycles from known ones (:mod:`beggar_env.cycles`, which owns
the files each writes and the census's resume)."""

import re
import time

from .. import checks
from . import UsageError, options

FLAGS = {
    "n": "--positions",
    "first": "--first",
    "out": "--out",
    "resume": "--resume",
    "deck": "--deck",
    "unit": "--unit",
    "sample": "--sample",
}
API_NAME = re.compile(r"^(\w+)(?=: | must | needs )")  # an argument's name, as the API's messages start


def add_parser(commands):
    from ..cycles.census import SOURCES
    from ..cycles.insertion import CHANGES
    from ..deals import STANDARD_DECK

    c = commands.add_parser(
        "cycles",
        help="the cycle census, and balanced never-ending deals by backward play",
        allow_abbrev=False,
        description="census: play many positions (random ones of any split, or every deal of a deck) and name "
        "every cycle reached (docs/cycles.md); reconstruct: walk back from the cycle a deal reaches to the balanced "
        "deals that reach it, each replayed by the engine; extend: longer games behind a game's positions; grow: "
        "new cycles from known ones, a card at a time. Results go to --out as JSON.",
    )
    modes = c.add_subparsers(dest="mode", metavar="MODE", parser_class=options.Parser)
    modes.required = True
    deck_help = "in compact symbols (default: the standard 52 cards; may start with -)"
    n = modes.add_parser(
        "census",
        help="name every cycle that many positions reach",
        allow_abbrev=False,
        description="Play many positions to their end or their first repeated position and name every cycle "
        "reached: random positions (any split of a shuffled deck, seat 0 leading), or every deal of a deck, by "
        "its index. With --out, the census is written every half minute while it runs and continued by --resume.",
    )
    n.add_argument(
        "--source", choices=SOURCES, default="random", help="random positions, or every deal of --deck (default random)"
    )
    n.add_argument("--deck", type=options.deck, default=STANDARD_DECK, metavar="CARDS", help=f"the deck, {deck_help}")
    n.add_argument(
        "--positions",
        type=options.whole_number(1),
        metavar="N",
        help="positions to play (random: required; every: default all the deck's deals from --first)",
    )
    n.add_argument(
        "--first",
        type=options.whole_number(0, None),
        default=0,
        metavar="I",
        help="the first position's index (default 0)",
    )
    options.add_run_options(n, "playing")
    n.add_argument(
        "--out", metavar="FILE.json", help="write the census as JSON (also every half minute, while it runs)"
    )
    n.add_argument(
        "--resume", action="store_true", help="continue the unfinished census in --out (run with the same settings)"
    )
    n.add_argument(
        "--unit",
        type=options.whole_number(1),
        metavar="N",
        help="positions per work unit, whose digests the file's manifest lists (default 100000000; resumed: the "
        "file's)",
    )
    options.add_ray(n)
    options.add_backend(n)
    v = modes.add_parser(
        "verify",
        help="check a census's file against the engine",
        allow_abbrev=False,
        description="Check a census's file: its parts against each other, every cycle replayed from its key, every "
        "never-ending deal and longest game its units name played again from its index, and a sample of its units "
        "played again whole, their digests compared (docs/cycles.md). One line per disagreement and exit status 1, "
        "or a summary and 0.",
    )
    v.add_argument("file", metavar="FILE.json", help="a census's file (beggar cycles census --out)")
    v.add_argument(
        "--sample",
        type=options.whole_number(0),
        default=1,
        metavar="N",
        help="units to play again whole, drawn with --seed (default 1)",
    )
    v.add_argument(
        "--seed", type=options.whole_number(0, checks.MAX_SEED), default=0, metavar="S", help="the draw (default 0)"
    )
    v.add_argument("--threads", type=options.whole_number(1), metavar="T", help="threads (default: all cores)")
    r = modes.add_parser(
        "reconstruct",
        help="balanced deals that reach a deal's cycle",
        allow_abbrev=False,
        description="Walk back from the cycle a deal's game reaches, breadth first, to every balanced deal in its "
        "in-tree (within --max-nodes positions); each deal found is replayed by the engine into the cycle.",
    )
    r.add_argument("--deal", required=True, metavar="DEAL", help="a deal whose game never ends")
    r.add_argument(
        "--max-nodes",
        type=options.whole_number(1),
        default=10_000_000,
        metavar="N",
        help="positions walked (default 10000000)",
    )
    r.add_argument("--no-progress", action="store_true", help="no progress line")
    r.add_argument("--out", metavar="FILE.json", help="write the deals as JSON")
    r.add_argument("--tsv", metavar="FILE.tsv", help="write the deals as a table, one per line (docs/cycles-deals.tsv)")
    g = modes.add_parser(
        "grow",
        help="new cycles by changing known ones a card at a time",
        allow_abbrev=False,
        description="Change the cycles the starts reach a card at a time (put in, moved, taken out), level after "
        "level, keeping a beam of the new cycles nearest the deck's proportions.",
    )
    g.add_argument(
        "--deal", action="append", metavar="DEAL", help="a deal or cycle's key to start from (repeat for more)"
    )
    g.add_argument("--census", metavar="FILE.json", help="start from a census's cycles, or a growth's last kept")
    g.add_argument(
        "--change",
        choices=CHANGES,
        default="insert",
        help="insert: a card put in, up to --deck; pairs: two cards; move: a card moved; delete: a card taken out "
        "(default insert)",
    )
    g.add_argument(
        "--deck", type=options.deck, default=STANDARD_DECK, metavar="CARDS", help=f"the deck to grow to, {deck_help}"
    )
    g.add_argument(
        "--beam", type=options.whole_number(1), default=400, metavar="B", help="cycles kept a level (default 400)"
    )
    g.add_argument(
        "--slack",
        type=options.real_number(0),
        metavar="X",
        help="insert only classes at most X cards above their share (default: no bound)",
    )
    g.add_argument("--levels", type=options.whole_number(1), metavar="K", help="at most K levels (default: no bound)")
    options.add_run_options(g, "changing")
    g.add_argument("--out", metavar="FILE.json", help="write the levels and every cycle kept as JSON")
    e = modes.add_parser(
        "extend",
        help="longer games behind a game's positions, by backward play",
        allow_abbrev=False,
        description="From each of a game's first positions, walk back to balanced deals whose games pass through "
        "it later than the game did: longer games, each played by the engine.",
    )
    e.add_argument("--deal", required=True, metavar="DEAL", help="a deal whose game ends")
    e.add_argument(
        "--offsets",
        type=options.whole_number(1),
        default=50,
        metavar="K",
        help="walk back from its first K positions (default 50)",
    )
    e.add_argument(
        "--max-nodes",
        type=options.whole_number(1),
        default=100_000,
        metavar="N",
        help="positions walked per start (default 100000)",
    )
    e.add_argument(
        "--beam",
        type=options.whole_number(1),
        metavar="B",
        help="keep the B most balanced positions a level (default: all)",
    )
    e.add_argument("--no-progress", action="store_true", help="no progress line")
    e.add_argument("--out", metavar="FILE.json", help="write the longer games as JSON")


def run(args):
    modes = dict(census=_census, verify=_verify, reconstruct=_reconstruct, extend=_extend, grow=_grow)
    try:
        modes[args.mode](args)
    except ValueError as error:  # the API's words for an argument are the command line's flags here
        text = str(error).splitlines()[0]
        flagged = API_NAME.sub(lambda m: FLAGS.get(m.group(1), m.group(1)), text)
        raise UsageError(f"beggar cycles {args.mode}: {flagged}") from None


def _census(args):
    from ..cycles import census, positions

    if args.resume and args.out is None:
        raise UsageError("beggar cycles census: --resume needs --out, the file to continue")
    if args.source == "random" and args.positions is None:
        raise UsageError("beggar cycles census: --positions N: a random census needs a number of positions")
    backend = dict(backend="local", threads=args.threads)
    if args.backend == "cuda":
        options.require_cuda("cycles census", args)
        backend = dict(backend="cuda")
    elif args.ray is not None:
        options.require_ray("cycles census", args)
        backend = dict(backend="ray", address=args.ray)
    seed = args.seed if args.resume or args.seed is not None else options.seed(args)  # resumed: the file's
    if args.source == "every" and args.positions is None:
        deals = positions.arrangements(args.deck)
        if deals - args.first > checks.MAX_COUNT:
            raise UsageError(
                f"beggar cycles census: the deck has {deals:,} deals, more than one census counts (at most "
                f"{checks.MAX_COUNT:,} positions): give --positions N (and --first I)"
            )

    def run(progress):
        return census.census(
            args.players,
            args.source,
            deck=args.deck,
            first=args.first,
            n=args.positions,
            seed=seed,
            progress=progress,
            out=args.out,
            resume=args.resume,
            unit=args.unit,
            **backend,
        )

    result, _ = options.run_with_progress(
        "positions", args.no_progress, lambda p: options.compiling_notice(lambda: run(p))
    )
    periods = ", ".join(f"{cards} cards/{tricks} tricks: {k}" for (cards, tricks), k in result.by_period().items())
    print(
        f"{result.games:,} positions ({args.source}, {args.players} players, seed {result.seed}), "
        f"{result.seconds:.1f} s"
    )
    print(
        f"ended: {result.ended:,} ({result.ended / max(result.games, 1):.4%}); longest {result.longest_cards} "
        f"cards, {result.longest_tricks} tricks (position {result.longest_index})"
    )
    by_positions = sum(census.seatings(key) for key in result.cycles)  # a key names its seat-turned copies too
    print(
        f"distinct cycles: {len(result.cycles)} by key ({by_positions} by set of positions)"
        + (f"; by period: {periods}" if periods else "")
    )
    for cycle in sorted(result.cycles.values(), key=lambda c: (c.cards, c.key)):
        print(f"  {cycle.key}  period {cycle.cards} cards, {cycle.tricks} tricks; reached by {cycle.reached:,}")
    options.ray_note(args)


def _verify(args):
    """One line per disagreement, then exit status 1; or a summary line."""
    from ..cycles import verify

    found = options.compiling_notice(
        lambda: verify.verify(args.file, sample=args.sample, seed=args.seed, threads=args.threads)
    )
    for line in found.disagreements:
        print(line)
    if found.disagreements:
        print(f"{args.file}: {len(found.disagreements)} disagreement(s)")
        raise SystemExit(1)
    print(found.summary())


def _reconstruct(args):
    from ..cycles import reconstruct

    def run(progress):
        return reconstruct.reconstruct(
            args.deal,
            args.max_nodes,
            progress=lambda positions, deals: progress(positions, args.max_nodes),
            out=args.out,
            tsv=args.tsv,
        )

    found, _ = options.run_with_progress(
        "positions", args.no_progress, lambda p: options.compiling_notice(lambda: run(p))
    )
    whole = "the whole in-tree" if found.complete else f"stopped at the budget, {found.depth} tricks back"
    print(f"cycle {found.cycle.key}: period {found.cycle.cards} cards, {found.cycle.tricks} tricks")
    print(
        f"{found.positions:,} positions walked back ({whole}), {found.seconds:.1f} s; "
        f"{len(found.deals)} balanced deals:"
    )
    for deal in found.deals:
        print(f"  {deal}")


def _grow(args):
    from ..cycles import insertion

    if (args.deal is None) == (args.census is None):
        raise UsageError("beggar cycles grow: give --deal DEAL (repeated for more) or --census FILE.json, not both")
    if args.census is not None:
        try:
            starts = insertion.starts_of(args.census)
        except ValueError as error:
            raise UsageError(f"beggar cycles grow: --census: {error}") from None
    else:
        starts = args.deal
    seed = options.seed(args)
    started = time.perf_counter()
    levels = options.compiling_notice(
        lambda: insertion.explore(
            starts,
            args.players,
            change=args.change,
            deck=args.deck,
            beam=args.beam,
            slack=args.slack,
            levels=args.levels,
            seed=seed,
            threads=args.threads,
            progress=None if args.no_progress else lambda level: print(_level_line(level), flush=True),
            out=args.out,
        )
    )
    seconds = time.perf_counter() - started
    print(f"{len(starts)} starts, {args.change}, beam {args.beam}, seed {seed}: {len(levels)} levels, {seconds:.1f} s")
    for level in levels[-1:]:
        size = len(next(iter(level.found), "").replace("/", ""))
        print(f"last level: {len(level.found):,} cycles reached" + (f", of {size} cards" if level.found else ""))
        for key in level.kept[:10]:
            cycle = level.found[key]
            print(f"  {key}  period {cycle.cards} cards, {cycle.tricks} tricks")


def _level_line(level):
    found = len(level.found)
    return f"  {level.tried:,} cycles of {level.cards} cards, {level.positions:,} positions: {found:,} cycles reached"


def _extend(args):
    from ..cycles import reconstruct

    def run(progress):
        return reconstruct.extend(
            args.deal, args.offsets, args.max_nodes, beam=args.beam, progress=progress, out=args.out
        )

    found, _ = options.run_with_progress("starts", args.no_progress, lambda p: options.compiling_notice(lambda: run(p)))
    print(f"{found.deal}: {found.cards:,} cards, {found.tricks} tricks")
    print(
        f"{found.starts} starts, {found.positions:,} positions walked back, {found.seconds:.1f} s; "
        f"{len(found.games)} longer games" + (f", the longest {found.games[0][0]:,} cards:" if found.games else "")
    )
    for cards, tricks, deal in found.games[:10]:
        print(f"  {deal}  {cards:,} cards, {tricks} tricks")
