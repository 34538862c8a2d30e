"""``beggar search``: hunt for the longest and never-ending deals, keeping the top lists in
a JSON-lines file (:mod:`beggar_env.search`, which owns the file and its resume)."""

import sys
import time

from .. import files
from ..checks import plural
from . import UsageError, options


def add_parser(commands):
    from ..search import OBJECTIVES, STRATEGIES

    q = commands.add_parser(
        "search",
        help="search for the longest and never-ending deals",
        allow_abbrev=False,
        description="Search for the longest and never-ending deals, keeping the top K per objective in a JSON-lines "
        "file (every deal replayed before it is written). Stops at the --deals or --minutes budget, or on Ctrl-C; "
        "--resume continues.",
    )
    q.add_argument(
        "--strategy", choices=STRATEGIES, default="random", help="random shuffles, or local search (default random)"
    )
    q.add_argument(
        "--objective",
        choices=OBJECTIVES,
        default="cards",
        help="what local walks climb (every list is kept; default cards)",
    )
    q.add_argument(
        "--deals",
        type=options.whole_number(1),
        metavar="N",
        help="the run's deal budget, all sessions together (default: none)",
    )
    q.add_argument(
        "--minutes",
        type=options.real_number(0, strict=True),
        metavar="M",
        help="this session's time budget (default: none; with neither budget, until Ctrl-C)",
    )
    q.add_argument("--start", action="append", default=[], metavar="DEAL", help="a start deal for local walks")
    q.add_argument(
        "--walk-steps",
        type=options.whole_number(1),
        default=1000,
        metavar="N",
        help="games per local walk (default 1000)",
    )
    q.add_argument(
        "--temperature",
        type=options.real_number(0),
        default=0.0,
        metavar="T",
        help="simulated annealing (default 0: hill climbing)",
    )
    q.add_argument(
        "--top", type=options.whole_number(1, 10_000), default=10, metavar="K", help="deals kept per list (default 10)"
    )
    q.add_argument("--out", required=True, metavar="FILE.jsonl", help="the file of the top lists")
    q.add_argument("--resume", action="store_true", help="continue the file (and its run with these settings)")
    options.add_run_options(q, "searching")
    options.add_ray(q)
    options.add_backend(q)


def _clock(seconds):
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _best_text(objective, find):
    if find is None:
        return f"{objective} none"
    return f"{objective} {find.score(objective):,}"


def search_line(status):
    """The live line of ``beggar search``."""
    best = "  ".join(_best_text(objective, find) for objective, find in status.best.items())
    left = "" if status.remaining is None else f", {_clock(status.remaining)} left"
    return f"{status.deals:,} deals, {status.rate:,.0f} deals/s | best: {best} | {_clock(status.seconds)} elapsed{left}"


class StatusLine:
    """One line on stderr, rewritten in place on a terminal; elsewhere (a log) a line
    every LOG_EVERY seconds."""

    LOG_EVERY = 30.0

    def __init__(self, disable):
        self.disable = disable
        self.tty = sys.stderr.isatty()
        self.last = time.perf_counter()
        self.shown = False

    def __call__(self, status):
        if self.disable:
            return
        text = search_line(status)
        if self.tty:
            print(f"\r{text}\x1b[K", end="", file=sys.stderr, flush=True)
            self.shown = True
        elif time.perf_counter() - self.last >= self.LOG_EVERY:
            print(text, file=sys.stderr, flush=True)
            self.last = time.perf_counter()

    def clear(self):
        if self.shown:
            print("\r\x1b[K", end="", file=sys.stderr, flush=True)
            self.shown = False


def print_report(report):
    where = f"{report.players} players, {report.strategy}, seed {report.seed}"
    print(
        f"{where}: {plural(report.deals, 'deal', grouped=True)} played ({report.session_deals:,} now, "
        f"{report.seconds:.1f} s, {report.rate:,.0f} deals/s)"
    )
    if report.startup_seconds:
        print(f"Ray start-up (excluded): {report.startup_seconds:.1f} s")
    titles = {"cards": "longest by cards", "tricks": "longest by tricks", "cycle": "never-ending"}
    for objective, entries in report.lists.items():
        if not entries:
            print(f"{titles[objective]}: none found")
            continue
        best = entries[0]
        print(
            f"{titles[objective]}: {best.cards:,} cards, {best.tricks:,} tricks, {best.outcome}  {best.deal}  "
            f"({best.strategy}, seed {best.seed}, deal {best.index:,})"
        )
    if report.path is not None:
        print(f"top {plural(max(len(e) for e in report.lists.values()), 'deal')} per objective in {report.path}")


def run(args):
    from ..search import search

    settings = dict(
        objective=args.objective,
        strategy=args.strategy,
        walk_steps=args.walk_steps,
        temperature=args.temperature,
        starts=args.start,
    )
    _check_starts(args.start)  # all input before the file is locked
    out = _results_path(args.out, args.resume)
    if args.backend == "cuda":
        options.require_cuda("search", args)
        backend = dict(backend="cuda")
        options.compiling_notice(lambda: search(args.players, deals=2, seed=0, **settings, **backend))
    elif args.ray is None:  # load or compile the searcher before the timed run
        backend = dict(threads=args.threads)
        warm = dict(settings, walk_steps=2, starts=args.start[:1])
        options.compiling_notice(lambda: search(args.players, deals=2, seed=0, threads=args.threads, **warm))
    else:
        options.require_ray("search", args)
        backend = dict(backend="ray", address=args.ray)
        if not args.no_progress:
            print("beggar: starting Ray workers and warming them...", file=sys.stderr, flush=True)
    line = StatusLine(args.no_progress)
    try:
        report = search(
            args.players,
            deals=args.deals,
            minutes=args.minutes,
            seed=args.seed,
            top=args.top,
            out=out,
            resume=args.resume,
            progress=line,
            **settings,
            **backend,
        )
    finally:
        line.clear()
    print_report(report)


def _check_starts(starts):
    from ..deals import parse_deal

    for start in starts:
        try:
            parse_deal(start)
        except ValueError as error:
            raise UsageError(f"beggar search: --start: {str(error).splitlines()[0]}") from None


def _results_path(path, resume):
    from ..search import results_path

    try:
        with files.exclusive(files.output_path(path, ".jsonl")):  # another run on it: refused before the warm-up
            return results_path(path, resume, name=None)
    except ValueError as error:
        raise UsageError(f"beggar search: --out: {error}") from None
