"""The commands of ``beggar``: the parser and what each subcommand does (the entry point,
and the errors' exit statuses, are :mod:`beggar_env.cli`'s)."""

import argparse
import json
import os
import re
import sys
import threading
import time

import numpy as np

from .. import __version__, checks, core, files
from ..checks import plural
from . import EXIT_STATUSES, UsageError

COMPILE_NOTICE_AFTER = 1.0  # seconds a first call may take before we say what it is doing


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{self.prog}: {message}")


WHOLE_NUMBER = re.compile(r"[+-]?[0-9]+")  # int() would also take '5_0' and other scripts' digits ('５')
REAL_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _whole_number(minimum, maximum=None):
    """An argparse type: an int in [minimum, maximum] (default: the most the engine counts),
    written in ASCII digits, checked as the API checks it."""
    maximum = checks.MAX_COUNT if maximum is None else maximum

    def parse(text):
        if not WHOLE_NUMBER.fullmatch(text.strip()):
            raise argparse.ArgumentTypeError(f"not a whole number: {checks.excerpt(text)}")
        value = int(text)
        try:
            return checks.integer("the value", value, minimum, maximum)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {checks.range_text(minimum, maximum)}, not {value}") from None

    return parse


def _add_limits(parser, tricks=True):
    limit = _whole_number(0, checks.MAX_LIMIT)
    parser.add_argument("--max-cards", type=limit, metavar="N", help="the agreed time limit, in cards played")
    if tricks:
        parser.add_argument("--max-tricks", type=limit, metavar="N", help="the agreed time limit, in tricks")


def _add_run_options(parser, what):
    parser.add_argument("--players", type=int, choices=(2, 3, 4), default=2, metavar="P", help="2, 3 or 4 (default 2)")
    parser.add_argument(
        "--seed", type=_whole_number(0, checks.MAX_SEED), metavar="S", help="seed (default: a fresh one, printed)"
    )
    parser.add_argument("--threads", type=_whole_number(1), metavar="T", help="threads (default: all cores)")
    parser.add_argument("--no-progress", action="store_true", help=f"no progress bar while {what}")


def build_parser():
    parser = _Parser(
        prog="beggar",
        description="Beggar-My-Neighbour: play deals, simulate games, generate datasets, search, evaluate.",
        epilog=EXIT_STATUSES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=_version())
    commands = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")

    p = commands.add_parser(
        "play", help="play one deal", description="Play one deal and report its outcome.", allow_abbrev=False
    )
    p.add_argument(
        "deal", nargs="?", help="compact ('-JQKA' hands separated by '/') or rank notation ('10H 2C JS / QD 7 A')"
    )
    _add_limits(p)
    p.add_argument(
        "--no-cycles", action="store_true", help="do not detect cycles (a deal that never ends runs until Ctrl-C)"
    )
    p.add_argument("--trace", action="store_true", help="print the game trick by trick")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    s = commands.add_parser(
        "simulate",
        help="play many random games",
        allow_abbrev=False,
        description="Play random games and summarise them (in constant memory, unless --out "
        "or --json asks for every result).",
    )
    s.add_argument(
        "--games", type=_whole_number(1), default=100_000, metavar="N", help="number of games (default 100000)"
    )
    _add_run_options(s, "playing")
    _add_limits(s)
    s.add_argument("--json", action="store_true", help="print the raw results as JSON")
    s.add_argument("--out", metavar="FILE.npz", help="save the raw results as .npz")
    _add_ray(s)
    _add_backend(s)

    d = commands.add_parser(
        "dataset",
        help="generate a labelled dataset",
        allow_abbrev=False,
        description="Generate observations of random games labelled with their outcomes.",
    )
    d.add_argument("--games", type=_whole_number(1), required=True, metavar="N", help="number of games")
    d.add_argument(
        "--samples",
        default="card",
        metavar="card|trick|K",
        help="a sample before every card (default), every trick, or K random points per game",
    )
    d.add_argument(
        "--observation",
        default="public",
        metavar="public|full|counted",
        help="the table (default), and every hand (full), or what a card-counter knows (counted)",
    )
    _add_run_options(d, "generating")
    _add_limits(d, tricks=False)
    d.add_argument(
        "--out",
        required=True,
        metavar="DIR|FILE.npz",
        help="a new or empty folder for Parquet shards, streamed as they are generated (needs pyarrow), "
        "or a .npz file for a small set (beggar_env.datasets.load reads either)",
    )
    d.add_argument("--split", metavar="NAME=F,...", help="Parquet: split by game, e.g. train=0.9,test=0.1")
    d.add_argument("--game-weights", action="store_true", help="Parquet: a weight column, so that every game weighs 1")
    d.add_argument("--shard-games", type=_whole_number(1), metavar="N", help="Parquet: games per shard (default 65536)")
    _add_ray(d)

    b = commands.add_parser(
        "baselines",
        help="train and evaluate the winner forecasters",
        allow_abbrev=False,
        description="Train the learned baselines and evaluate every forecaster with one protocol "
        "for 2, 3 and 4 players; print the tables; write JSON, tables and pictures.",
    )
    b.add_argument("--quick", action="store_true", help="a small protocol: 80 s on 2 cores once compiled")
    b.add_argument(
        "--redraw",
        action="store_true",
        help="only write tables.md and the pictures again, from --out's results.json (no study); with "
        "--forecaster, add those rows to it first",
    )
    b.add_argument(
        "--sequences",
        action="store_true",
        help="also train and evaluate the GRU on the public stream for each player count (needs torch: "
        "pip install 'beggar-env[rl]'; 5 to 10 minutes a player count on 2 cores)",
    )
    b.add_argument(
        "--players",
        type=int,
        nargs="+",
        choices=(2, 3, 4),
        default=[2, 3, 4],
        metavar="P",
        help="player counts (default 2 3 4)",
    )
    b.add_argument("--out", default="baselines", metavar="DIR", help="folder for the results (default ./baselines)")
    b.add_argument(
        "--forecaster",
        "--policy",
        dest="reports",
        action="append",
        default=[],
        metavar="FILE.json",
        help="a forecaster's or policy's report (Report.save of beggar_env.forecasting.evaluate on the published "
        "test set) to add as a row; again for more",
    )
    b.add_argument(
        "--seed",
        type=_whole_number(0, checks.MAX_SEED),
        default=0,
        metavar="S",
        help="seed of the forecasters and game statistics (default 0)",
    )
    b.add_argument("--threads", type=_whole_number(1), metavar="T", help="threads (default: all cores)")
    b.add_argument("--no-progress", action="store_true", help="no progress bars")
    _add_search_parser(commands)
    _add_cycles_parser(commands)

    w = commands.add_parser(
        "warmup",
        help="compile every part once, so that no first use waits",
        allow_abbrev=False,
        description="Compile (or load from numba's cache) every compiled part of the package: the engine, the "
        "envs, the datasets, the search and the Bayes forecaster, for each player count. A first use compiles "
        "only the part it runs; this does them all at once.",
    )
    w.add_argument(
        "--players", type=int, nargs="+", choices=(2, 3, 4), default=[2, 3, 4], metavar="P", help="(default 2 3 4)"
    )
    return parser


def _version():
    import numba

    return f"beggar {__version__} (numba {numba.__version__}, numpy {np.__version__})"


# -------------------------------------------------------------------------- play


def _describe(result):
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


def _cmd_play(args):
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
    print(_describe(result))


# ---------------------------------------------------------------------- simulate


def _print_summary(summary, seed, n_players, seconds):
    from ..stats import PERCENTILES

    n = summary["games"]
    print(f"{plural(n, 'game')}, {n_players} players, seed {seed}")
    for field in ("cards", "tricks"):
        st = summary[field]
        print(
            f"{field:>6}: mean {st['mean']:.1f}  median {st['p50']:.0f}  "
            + "  ".join(f"p{q} {st[f'p{q}']:.0f}" for q in PERCENTILES if q != 50)
            + f"  max {st['max']}"
        )
    for seat in summary["seats"]:
        low, high = seat["ci95"]
        print(f"seat {seat['seat']}: wins {seat['rate']:.4f}  (95% CI {low:.4f}-{high:.4f})")
    print(f"cycles: {summary['cycles']}  limits: {summary['limits']} (draws {summary['draws']})")
    print(f"{n / seconds:,.0f} games/s ({seconds:.2f} s)")


def _out_path(command, path):
    """``--out``'s file, checked before any work (see ``files.output_path``)."""
    try:
        return files.output_path(path)
    except ValueError as error:
        raise UsageError(f"beggar {command}: --out: {error}") from None


def _seed(args):
    """The seed asked for, or a fresh one (printed, so that the run can be repeated)."""
    if args.seed is not None:
        return args.seed
    return int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> np.uint64(1))


def _compiling_notice(first_call):
    """Run ``first_call()`` (it compiles the engine on a first run, or loads it from the
    cache); if it takes more than a second, say so on stderr."""
    notice = threading.Timer(
        COMPILE_NOTICE_AFTER,
        lambda: print(
            "beggar: preparing the compiled engine (the first run of each part compiles it once, seconds to a "
            "minute; later runs load it from numba's cache; beggar warmup compiles every part)...",
            file=sys.stderr,
            flush=True,
        ),
    )
    notice.daemon = True
    notice.start()
    try:
        return first_call()
    finally:
        notice.cancel()


def _run_with_progress(unit, disable, run):
    """``run(progress)`` with a progress bar on stderr (shown once a run takes more than half
    a second; ``progress(done, total)`` moves it); returns its result and the seconds taken."""
    from tqdm import tqdm

    bar = tqdm(unit=unit, unit_scale=True, delay=0.5, file=sys.stderr, disable=disable, leave=False)

    def progress(done, total):
        bar.total = total
        bar.update(done - bar.n)

    started = time.perf_counter()
    try:
        result = run(progress)
    finally:
        bar.close()
    return result, time.perf_counter() - started


JSON_BYTES_PER_GAME = 200  # a generous estimate of one game's raw results as JSON text


def _cmd_simulate(args):
    from ..game import simulate, simulate_blocks
    from ..stats import Summary

    out = _out_path("simulate", args.out) if args.out is not None else None
    seed = _seed(args)
    options = dict(n_players=args.players, threads=args.threads, max_cards=args.max_cards, max_tricks=args.max_tricks)
    if args.backend == "cuda":
        _require_cuda("simulate", args)
        options.update(backend="cuda")
        _compiling_notice(lambda: simulate(1, seed=seed, **options))
    elif args.ray is not None:
        _require_ray("simulate", args)
        options.update(threads=None, backend="ray", address=args.ray)
    else:
        _compiling_notice(lambda: simulate(1, seed=seed, **options))  # games/s counts playing only
    if out is None and not args.json:  # a summary needs no more memory for 10**9 games than for 10

        def run(progress):
            summary = Summary(args.players)
            for _, block in simulate_blocks(args.games, seed=seed, progress=progress, **options):
                summary.add(block)
            return summary.as_dict()

        summary, seconds = _run_with_progress("game", args.no_progress, run)
        _print_summary(summary, seed, args.players, seconds)
        _ray_note(args)
        return
    if args.json:
        checks.memory(
            args.games * JSON_BYTES_PER_GAME,
            f"the JSON of {args.games:,} games",
            "use --out FILE.npz, or fewer --games",
        )
    results, seconds = _run_with_progress(
        "game", args.no_progress, lambda progress: simulate(args.games, seed=seed, progress=progress, **options)
    )
    if out is not None:
        out = files.save_npz(
            out,
            outcomes=np.array(core.OUTCOMES),
            seed=seed,
            players=args.players,
            **{name: results[name] for name in results.dtype.names},
        )
    if args.json:
        raw = {name: results[name].tolist() for name in results.dtype.names}
        raw["outcome"] = [core.OUTCOMES[code] for code in results.outcome]
        print(json.dumps({"games": args.games, "players": args.players, "seed": seed, "results": raw}))
        return
    _print_summary(Summary(args.players).add(results).as_dict(), seed, args.players, seconds)
    _ray_note(args)
    print(f"raw results saved to {out}")


def _ray_note(args):
    if args.ray is not None:
        print("(on Ray: the time includes starting Ray and warming its workers)")


def _cmd_dataset(args):
    from .. import datasets
    from ..task import OBSERVATIONS

    if args.observation not in OBSERVATIONS:
        raise UsageError(
            f"beggar dataset: --observation must be one of {', '.join(OBSERVATIONS)}, "
            f"not {checks.excerpt(args.observation)}"
        )
    from ..datasets.samples import MAX_PER_GAME

    samples = args.samples
    if samples not in ("card", "trick"):
        try:
            samples = _whole_number(1, MAX_PER_GAME)(samples)
        except argparse.ArgumentTypeError:
            raise UsageError(
                f"beggar dataset: --samples must be card, trick or a whole number from 1 to {MAX_PER_GAME:,}, "
                f"not {checks.excerpt(samples)}"
            ) from None
    options = dict(
        n_players=args.players,
        observation=args.observation,
        samples=samples,
        threads=args.threads,
        max_cards=args.max_cards,
    )
    if not args.out.endswith(".npz"):
        return _dataset_to_parquet(args, options)
    parquet_only = [name for name in ("split", "game_weights", "shard_games", "ray") if getattr(args, name)]
    if parquet_only:
        raise UsageError(f"beggar dataset: --{parquet_only[0].replace('_', '-')} is for Parquet: give --out DIR")
    out = _out_path("dataset", args.out)
    seed = _seed(args)
    _compiling_notice(lambda: datasets.generate(1, seed=seed, **options))  # samples/s counts generating only
    dataset, seconds = _run_with_progress(
        "game",
        args.no_progress,
        lambda progress: datasets.generate(args.games, seed=seed, progress=progress, **options),
    )
    out = dataset.save(out)
    print(
        f"{plural(len(dataset), 'sample')} of {plural(args.games, 'game')} ({args.players} players, "
        f"{args.observation} observation, samples={args.samples}, seed {seed}) saved to {out}"
    )
    print(f"{len(dataset) / seconds:,.0f} samples/s ({seconds:.2f} s)")


def _dataset_to_parquet(args, options):
    from ..datasets import shards

    try:
        shards.require_pyarrow()
        splits = shards.parse_splits(args.split)
    except ImportError as error:
        raise UsageError(f"beggar dataset: {error}; or give --out FILE.npz") from None
    except ValueError as error:
        raise UsageError(f"beggar dataset: --{error}") from None
    try:
        shards.check_directory(args.out)
    except ValueError as error:
        raise UsageError(f"beggar dataset: --out: {error}") from None
    seed = _seed(args)
    extra = dict(split=args.split, game_weights=args.game_weights, shard_games=args.shard_games or shards.SHARD_GAMES)
    if args.ray is not None:
        _require_ray("dataset", args)
        options = dict(options, threads=None, backend="ray", address=args.ray)
    else:
        with files.scratch_folder("warmup") as folder:  # samples/s counts generating only
            _compiling_notice(lambda: shards.generate(os.path.join(folder, "d"), 1, seed=seed, **options, **extra))
    meta, seconds = _run_with_progress(
        "game",
        args.no_progress,
        lambda progress: shards.generate(args.out, args.games, seed=seed, progress=progress, **options, **extra),
    )
    n, size = meta["n_samples"], meta["bytes"]
    print(
        f"{plural(n, 'sample')} of {plural(args.games, 'game')} ({args.players} players, {args.observation} "
        f"observation, samples={args.samples}, seed {seed}) saved to {args.out} as Parquet: "
        f"{plural(len(meta['shards']), 'shard')}, {size / 2**20:,.1f} MiB ({size / max(n, 1):.1f} bytes a sample)"
    )
    if splits is not None:
        print("splits: " + ", ".join(f"{name} {count:,}" for name, count in meta["split_samples"].items()))
    print(f"{n / seconds:,.0f} samples/s ({seconds:.2f} s)")
    _ray_note(args)


def _cmd_baselines(args):
    from tqdm import tqdm

    from ..forecasting import baselines

    try:
        baselines.require_extras(args.sequences and not args.redraw)
    except ImportError as error:
        raise UsageError(str(error)) from None

    out = os.path.abspath(args.out)
    try:
        baselines.check_out(out)
    except ValueError as error:
        raise UsageError(f"beggar baselines: --out: {error}") from None
    if args.redraw:
        return _redraw(baselines, out, args.reports, args.out)
    protocol = baselines.QUICK if args.quick else baselines.FULL
    for path in args.reports:
        if not os.path.isfile(path):
            raise UsageError(f"beggar baselines: --forecaster: no such file: {path}")
        try:
            baselines.read_report(path, protocol, args.players)
        except ValueError as error:
            raise UsageError(f"beggar baselines: --forecaster: {error}") from None

    def stage(name, unit):
        bar = tqdm(
            desc=name, unit=unit, unit_scale=True, delay=0.5, file=sys.stderr, disable=args.no_progress, leave=False
        )

        def progress(done, total):
            bar.total = total
            bar.update(done - bar.n)
            if done >= total:
                bar.close()

        return progress

    command = "beggar baselines" + (" --quick" if args.quick else "") + (
        f" --players {' '.join(map(str, args.players))}" if args.players != [2, 3, 4] else "") + (
        f" --seed {args.seed}" if args.seed else "") + (" --sequences" if args.sequences else "")  # fmt: skip
    started = time.perf_counter()
    results = baselines.run(
        tuple(args.players), protocol, args.seed, args.threads, args.reports, stage, sequences=args.sequences
    )
    written = baselines.write(results, out, command)
    for n, block in results["players"].items():
        print(f"\n{n} players: {block['positions']:,} test positions ({block['open_positions']:,} open)")
        _print_rows(baselines.table_rows(block))
    print(
        f"\nresults in {out}: results.json, tables.md and {len(written)} pictures "
        f"({time.perf_counter() - started:.0f} s)"
    )


def _redraw(baselines, out, reports, given_out):
    path = os.path.join(out, "results.json")
    try:
        with open(path) as f:
            results = json.load(f)
    except (OSError, ValueError) as error:
        raise UsageError(
            f"beggar baselines: --redraw: cannot read {path}: {getattr(error, 'strerror', error)}"
        ) from None
    if not reports:
        written = baselines.write_tables_and_pictures(results, out)
        print(f"tables.md and {len(written)} pictures written again in {out} from results.json")
        return
    for report in reports:
        if not os.path.isfile(report):
            raise UsageError(f"beggar baselines: --forecaster: no such file: {report}")
    command = f"beggar baselines --redraw --out {given_out}" + "".join(f" --forecaster {r}" for r in reports)
    try:
        written = baselines.add_to_written(results, out, reports, command)
    except ValueError as error:
        raise UsageError(f"beggar baselines: --forecaster: {error}") from None
    print(f"{len(reports)} rows added to {path}; tables.md and {len(written)} pictures written again")


def _print_rows(rows):
    print(
        f"{'forecaster':<34} {'acc':>6} {'logloss':>8} {'brier':>6} {'ece':>6} {'acc<26':>7} {'acc104+':>8} "
        f"{'acc open':>8} {'gap':>5} {'fcst/s':>10}"
    )
    for r in rows:
        print(
            f"{r['forecaster'][:34]:<34} {r['accuracy']:6.3f} {r['log loss all']:8.3f} {r['brier']:6.3f} "
            f"{r['ece']:6.3f} {r['accuracy cards 0-25']:7.3f} {r['accuracy cards 104-207']:8.3f} "
            f"{r['accuracy open']:8.3f} {r['gap closed']:5.2f} {r['forecasts/s']:10,.0f}"
        )


# ------------------------------------------------------------------------ search


def _add_ray(parser):
    parser.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="run on Ray workers, one per CPU: a local Ray, or the cluster at ADDRESS ('auto', HOST:6379)",
    )


def _add_backend(parser):
    parser.add_argument(
        "--backend",
        choices=("local", "cuda"),
        default="local",
        help="local: this machine's cores (default); cuda: an NVIDIA GPU, needs beggar-env[cuda]",
    )


def _require_cuda(command, args):
    """Check ``--backend cuda`` before any work: not with ``--ray`` nor ``--threads``, numba-cuda and a GPU there."""
    from .. import gpu

    for given, flag in ((args.ray is not None, "--ray"), (args.threads is not None, "--threads")):
        if given:
            raise UsageError(f"beggar {command}: --backend cuda runs on a GPU: {flag} is not for it")
    try:
        gpu.require_cuda()
    except (ImportError, ValueError) as error:
        raise UsageError(f"beggar {command}: --backend cuda: {error}") from None


def _real_number(minimum, strict=False):
    """An argparse type: a finite number ``>= minimum`` (``> minimum`` if ``strict``), as
    :func:`beggar_env.checks.number` checks it for the API."""
    bound = f"{'>' if strict else '>='} {minimum}"

    def parse(text):
        if not REAL_NUMBER.fullmatch(text.strip()):  # also refuses 'inf' and 'nan', which float() takes
            raise argparse.ArgumentTypeError(f"not a number: {checks.excerpt(text)}")
        value = float(text)
        if value != float("inf"):
            try:
                return checks.number("the value", value, minimum, strict)
            except ValueError:
                pass
        raise argparse.ArgumentTypeError(f"must be a number {bound}, not {checks.excerpt(text)}")

    return parse


def _add_search_parser(commands):
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
        type=_whole_number(1),
        metavar="N",
        help="the run's deal budget, all sessions together (default: none)",
    )
    q.add_argument(
        "--minutes",
        type=_real_number(0, strict=True),
        metavar="M",
        help="this session's time budget (default: none; with neither budget, until Ctrl-C)",
    )
    q.add_argument("--start", action="append", default=[], metavar="DEAL", help="a start deal for local walks")
    q.add_argument(
        "--walk-steps", type=_whole_number(1), default=1000, metavar="N", help="games per local walk (default 1000)"
    )
    q.add_argument(
        "--temperature",
        type=_real_number(0),
        default=0.0,
        metavar="T",
        help="simulated annealing (default 0: hill climbing)",
    )
    q.add_argument(
        "--top", type=_whole_number(1, 10_000), default=10, metavar="K", help="deals kept per list (default 10)"
    )
    q.add_argument("--out", required=True, metavar="FILE.jsonl", help="the file of the top lists")
    q.add_argument("--resume", action="store_true", help="continue the file (and its run with these settings)")
    _add_run_options(q, "searching")
    _add_ray(q)
    _add_backend(q)


def _add_cycles_parser(commands):
    from ..search.census import SOURCES, STANDARD_DECK
    from ..search.insertion import CHANGES

    c = commands.add_parser(
        "cycles",
        help="the cycle census, and balanced never-ending deals by backward play",
        allow_abbrev=False,
        description="census: play many positions (random ones of any split, or every deal of a small deck) and name "
        "every cycle reached (docs/cycles.md); reconstruct: walk back from the cycle a deal reaches to the balanced "
        "deals that reach it, each replayed by the engine; extend: longer games behind a game's positions; grow: "
        "new cycles from known ones, a card at a time. Results go to --out as JSON.",
    )
    modes = c.add_subparsers(dest="mode", metavar="MODE", parser_class=_Parser)
    modes.required = True
    n = modes.add_parser("census", help="name every cycle that many positions reach", allow_abbrev=False)
    n.add_argument("--source", choices=SOURCES, default="random", help="random positions, or every deal of --deck")
    n.add_argument("--deck", default=STANDARD_DECK, metavar="CARDS", help="the deck, in compact symbols (default: 52)")
    n.add_argument("--positions", type=_whole_number(1), metavar="N", help="positions (random: required)")
    n.add_argument("--first", type=_whole_number(0), default=0, metavar="I", help="the first position's index")
    _add_run_options(n, "playing")
    n.add_argument(
        "--out", metavar="FILE.json", help="write the census as JSON (also every half minute, while it runs)"
    )
    n.add_argument(
        "--resume", action="store_true", help="continue the unfinished census in --out (run with the same settings)"
    )
    _add_ray(n)
    r = modes.add_parser("reconstruct", help="balanced deals that reach a deal's cycle", allow_abbrev=False)
    r.add_argument("--deal", required=True, metavar="DEAL", help="a deal whose game never ends")
    r.add_argument(
        "--max-nodes", type=_whole_number(1), default=10_000_000, metavar="N", help="positions walked (default 10^7)"
    )
    r.add_argument("--no-progress", action="store_true", help="no progress line")
    r.add_argument("--out", metavar="FILE.json", help="write the deals as JSON")
    r.add_argument("--tsv", metavar="FILE.tsv", help="write the deals as a table, one per line (docs/cycles-deals.tsv)")
    g = modes.add_parser("grow", help="new cycles by changing known ones a card at a time", allow_abbrev=False)
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
    g.add_argument("--deck", default=STANDARD_DECK, metavar="CARDS", help="the deck to grow to (default: 52)")
    g.add_argument("--beam", type=_whole_number(1), default=400, metavar="B", help="cycles kept a level (400)")
    g.add_argument("--slack", type=float, metavar="X", help="insert only classes at most X cards above their share")
    g.add_argument("--levels", type=_whole_number(1), metavar="K", help="at most K levels")
    _add_run_options(g, "changing")
    g.add_argument("--out", metavar="FILE.json", help="write the levels and every cycle kept as JSON")
    e = modes.add_parser("extend", help="longer games behind a game's positions, by backward play", allow_abbrev=False)
    e.add_argument("--deal", required=True, metavar="DEAL", help="a deal whose game ends")
    e.add_argument(
        "--offsets", type=_whole_number(1), default=50, metavar="K", help="walk back from its first K positions (50)"
    )
    e.add_argument(
        "--max-nodes", type=_whole_number(1), default=100_000, metavar="N", help="positions walked per start (10^5)"
    )
    e.add_argument("--beam", type=_whole_number(1), metavar="B", help="keep the B most balanced positions a level")
    e.add_argument("--no-progress", action="store_true", help="no progress line")
    e.add_argument("--out", metavar="FILE.json", help="write the longer games as JSON")


def _write_json(path, record):
    from ..files import replacing

    with replacing(path) as f:
        f.write((json.dumps(record, indent=1) + "\n").encode("utf-8"))


def _output(args, path, suffix):
    try:
        return files.output_path(path, suffix)
    except ValueError as error:
        raise UsageError(f"beggar cycles {args.mode}: {path}: {error}") from None


TSV_COLUMNS = ("deal", "hand_sizes", "cycle", "cycle_cards", "cycle_tricks", "cycle_start_cards", "cycle_start_tricks")


def _write_tsv(path, record):
    """The deals of a reconstruction, each with its cycle and where its game enters it (``play``)."""
    from ..files import replacing
    from ..game import play

    lines = ["\t".join(TSV_COLUMNS)]
    for deal in record["deals"]:
        result = play(deal)
        sizes = "/".join(str(len(hand)) for hand in deal.split("/"))
        cycle = record["cycle"]
        values = (
            deal,
            sizes,
            cycle["key"],
            cycle["cards"],
            cycle["tricks"],
            result.cycle_start_cards,
            result.cycle_start_tricks,
        )
        lines.append("\t".join(str(value) for value in values))
    with replacing(path) as f:
        f.write(("\n".join(lines) + "\n").encode("utf-8"))


def _cmd_cycles(args):
    out = None if args.out is None else _output(args, args.out, ".json")
    if getattr(args, "tsv", None) is not None:
        _output(args, args.tsv, ".tsv")
    modes = dict(census=_cycles_census, reconstruct=_cycles_reconstruct, extend=_cycles_extend, grow=_cycles_grow)
    record = modes[args.mode](args)
    if getattr(args, "tsv", None) is not None:
        _write_tsv(_output(args, args.tsv, ".tsv"), record)
    if out is not None and args.mode == "census":
        _write_json(out, record)
    elif out is not None:
        _write_json(out, {"kind": f"beggar-cycles-{args.mode}", "version": __version__, **record})


CHECKPOINT_SECONDS = 30  # how often an unfinished census is written to --out


def _census_record(args, seed, result, seconds, done):
    settings = {name: getattr(args, name) for name in ("players", "source", "deck", "first", "positions")}
    return {
        "kind": "beggar-cycles-census",
        "version": __version__,
        **settings,
        "seed": seed,
        "seconds": round(seconds, 2),
        "done": done,
        "complete": done is None,
        "games": result.games,
        "ended": result.ended,
        "longest": {"cards": result.longest_cards, "tricks": result.longest_tricks, "index": result.longest_index},
        "cycles": [vars(c) for c in sorted(result.cycles.values(), key=lambda c: (c.cards, c.key))],
    }


def _resumed_census(args, out):
    """The census so far in ``out`` (its record), for ``--resume``; one-line refusals."""
    settings = ("players", "source", "deck", "first", "positions")
    if out is None:
        raise UsageError("beggar cycles census: --resume needs --out, the file to continue")
    try:
        with open(out, encoding="utf-8") as f:
            record = json.load(f)
    except FileNotFoundError:
        raise UsageError(f"beggar cycles census: --resume: {out} does not exist") from None
    except (OSError, ValueError) as error:
        raise UsageError(f"beggar cycles census: --resume: {out} cannot be read as a census: {error}") from None
    if record.get("kind") != "beggar-cycles-census" or "done" not in record:
        raise UsageError(f"beggar cycles census: --resume: {out} is not a census this version can continue")
    if record["complete"]:
        raise UsageError(f"beggar cycles census: --resume: {out} is complete: nothing to continue")
    differ = [name for name in settings if record[name] != getattr(args, name)]
    if args.seed is not None and args.seed != record["seed"]:
        differ.append("seed")
    if differ:
        raise UsageError(f"beggar cycles census: --resume: {out} was run with other settings: {', '.join(differ)}")
    return record


def _cycles_census(args):
    from ..search import census

    out = None if args.out is None else _output(args, args.out, ".json")
    before, done_before, seconds_before = census.Census(), 0, 0.0
    if args.resume:
        record = _resumed_census(args, out)
        args.seed = record["seed"]
        before, done_before, seconds_before = census.Census.from_record(record), record["done"], record["seconds"]
    seed = _seed(args)
    backend = dict(backend="local")
    if args.ray is not None:
        _require_ray("cycles census", args)
        backend = dict(backend="ray", address=args.ray)
    if args.source == "every" and args.positions is None:
        n = census.arrangements(args.deck) - args.first if args.resume else None
    else:
        n = args.positions
    left = None if n is None else n - done_before
    started, last = time.perf_counter(), [time.perf_counter()]

    def partial(part, done):
        if out is not None and time.perf_counter() - last[0] >= CHECKPOINT_SECONDS:
            last[0] = time.perf_counter()
            so_far = census.Census()
            so_far.add(before)
            so_far.add(part)
            seconds = seconds_before + last[0] - started
            _write_json(out, _census_record(args, seed, so_far, seconds, done_before + done))

    run = lambda progress: census.census(
        args.players,
        args.source,
        deck=args.deck,
        first=args.first + done_before,
        n=left,
        seed=seed,
        threads=args.threads,
        progress=progress,
        partial=partial,
        **backend,
    )
    found, seconds = _run_with_progress("positions", args.no_progress, lambda p: _compiling_notice(lambda: run(p)))
    result = census.Census()
    result.add(before)
    result.add(found)
    seconds += seconds_before
    periods = ", ".join(f"{cards} cards/{tricks} tricks: {k}" for (cards, tricks), k in result.by_period().items())
    print(f"{result.games:,} positions ({args.source}, {args.players} players, seed {seed}), {seconds:.1f} s")
    print(
        f"ended: {result.ended:,} ({result.ended / max(result.games, 1):.4%}); longest {result.longest_cards} "
        f"cards, {result.longest_tricks} tricks (position {result.longest_index})"
    )
    print(f"distinct cycles: {len(result.cycles)}" + (f" ({periods})" if periods else ""))
    for cycle in sorted(result.cycles.values(), key=lambda c: (c.cards, c.key)):
        print(f"  {cycle.key}  period {cycle.cards} cards, {cycle.tricks} tricks; reached by {cycle.reached:,}")
    _ray_note(args)
    return _census_record(args, seed, result, seconds, None)


def _cycles_reconstruct(args):
    from ..search import reconstruct

    run = lambda progress: reconstruct.reconstruct(
        args.deal, args.max_nodes, progress=lambda positions, deals: progress(positions, args.max_nodes)
    )
    found, seconds = _run_with_progress("positions", args.no_progress, lambda p: _compiling_notice(lambda: run(p)))
    whole = "the whole in-tree" if found.complete else f"stopped at the budget, {found.depth} tricks back"
    print(f"cycle {found.cycle.key}: period {found.cycle.cards} cards, {found.cycle.tricks} tricks")
    print(f"{found.positions:,} positions walked back ({whole}), {seconds:.1f} s; {len(found.deals)} balanced deals:")
    for deal in found.deals:
        print(f"  {deal}")
    return {
        "deal": args.deal,
        "max_nodes": args.max_nodes,
        "cycle": vars(found.cycle),
        "positions": found.positions,
        "depth": found.depth,
        "complete": found.complete,
        "seconds": round(seconds, 2),
        "deals": found.deals,
    }


def _grow_starts(args):
    """The deals or keys ``beggar cycles grow`` starts from: --deal, or a census's cycles."""
    if (args.deal is None) == (args.census is None):
        raise UsageError("beggar cycles grow: give --deal DEAL (repeated for more) or --census FILE.json, not both")
    if args.deal is not None:
        return args.deal
    try:
        with open(args.census, encoding="utf-8") as f:
            record = json.load(f)
        if "levels" in record:  # a growth: the cycles its last level kept
            kept = [level["kept"] for level in record["levels"] if level["kept"]]
            starts = [cycle["key"] for cycle in kept[-1]] if kept else []
        else:
            starts = [cycle["key"] for cycle in record["cycles"]]
    except FileNotFoundError:
        raise UsageError(f"beggar cycles grow: --census: {args.census} does not exist") from None
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UsageError(f"beggar cycles grow: --census: {args.census} cannot be read as a census: {error}") from None
    if not starts:
        raise UsageError(f"beggar cycles grow: --census: {args.census} has no cycles to start from")
    return starts


def _cycles_grow(args):
    from ..search import insertion

    starts, seed = _grow_starts(args), _seed(args)

    def run():
        try:
            return insertion.explore(
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
            )
        except ValueError as error:
            raise UsageError(f"beggar cycles grow: {error}") from None

    started = time.perf_counter()
    levels = _compiling_notice(run)
    seconds = time.perf_counter() - started
    print(f"{len(starts)} starts, {args.change}, beam {args.beam}, seed {seed}: {len(levels)} levels, {seconds:.1f} s")
    for level in levels[-1:]:
        size = len(next(iter(level.found), "").replace("/", ""))
        print(f"last level: {len(level.found):,} cycles reached" + (f", of {size} cards" if level.found else ""))
        for key in level.kept[:10]:
            cycle = level.found[key]
            print(f"  {key}  period {cycle.cards} cards, {cycle.tricks} tricks")
    return {
        "starts": starts,
        "change": args.change,
        "deck": args.deck,
        "players": args.players,
        "beam": args.beam,
        "slack": args.slack,
        "levels_limit": args.levels,
        "seed": seed,
        "seconds": round(seconds, 2),
        "levels": [_level_record(level) for level in levels],
    }


def _level_line(level):
    found = len(level.found)
    return f"  {level.tried:,} cycles of {level.cards} cards, {level.positions:,} positions: {found:,} cycles reached"


def _level_record(level):
    return {
        "cards": level.cards,
        "tried": level.tried,
        "positions": level.positions,
        "found": len(level.found),
        "kept": [vars(level.found[key]) for key in level.kept],
    }


def _cycles_extend(args):
    from ..search import reconstruct

    def run(progress):
        try:
            return reconstruct.extend(
                args.deal, args.offsets, args.max_nodes, beam=args.beam, progress=lambda done, n: progress(done, n)
            )
        except ValueError as error:
            raise UsageError(f"beggar cycles extend: {error}") from None

    found, seconds = _run_with_progress("starts", args.no_progress, lambda p: _compiling_notice(lambda: run(p)))
    print(f"{found.deal}: {found.cards:,} cards, {found.tricks} tricks")
    print(
        f"{found.starts} starts, {found.positions:,} positions walked back, {seconds:.1f} s; "
        f"{len(found.games)} longer games" + (f", the longest {found.games[0][0]:,} cards:" if found.games else "")
    )
    for cards, tricks, deal in found.games[:10]:
        print(f"  {deal}  {cards:,} cards, {tricks} tricks")
    return {
        "deal": found.deal,
        "cards": found.cards,
        "tricks": found.tricks,
        "offsets": args.offsets,
        "max_nodes": args.max_nodes,
        "beam": args.beam,
        "starts": found.starts,
        "positions": found.positions,
        "seconds": round(seconds, 2),
        "games": [{"deal": deal, "cards": cards, "tricks": tricks} for cards, tricks, deal in found.games],
    }


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


class _StatusLine:
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


def _require_ray(command, args):
    """Check ``--ray`` before any work: Ray installed, no ``--threads``."""
    from ..distributed import require_ray

    if args.threads is not None:
        raise UsageError(f"beggar {command}: --threads is for a local run: Ray runs one worker per CPU")
    try:
        require_ray()
    except ImportError as error:
        raise UsageError(f"beggar {command}: --ray: {error}") from None


def _print_search(report):
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


def _cmd_search(args):
    from ..search import search

    options = dict(
        objective=args.objective,
        strategy=args.strategy,
        walk_steps=args.walk_steps,
        temperature=args.temperature,
        starts=args.start,
    )
    out = _search_path(args.out, args.resume)
    if args.backend == "cuda":
        _require_cuda("search", args)
        backend = dict(backend="cuda")
        _compiling_notice(lambda: search(args.players, deals=2, seed=0, **options, **backend))
    elif args.ray is None:  # load or compile the searcher before the timed run
        backend = dict(threads=args.threads)
        warm = dict(options, walk_steps=2, starts=args.start[:1])
        _compiling_notice(lambda: search(args.players, deals=2, seed=0, threads=args.threads, **warm))
    else:
        _require_ray("search", args)
        backend = dict(backend="ray", address=args.ray)
        if not args.no_progress:
            print("beggar: starting Ray workers and warming them...", file=sys.stderr, flush=True)
    line = _StatusLine(args.no_progress)
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
            **options,
            **backend,
        )
    finally:
        line.clear()
    _print_search(report)


def _search_path(path, resume):
    from ..search import results_path

    try:
        with files.exclusive(files.output_path(path, ".jsonl")):  # another run on it: refused before the warm-up
            return results_path(path, resume, name=None)
    except ValueError as error:
        raise UsageError(f"beggar search: --out: {error}") from None


def _cmd_warmup(args):
    from .. import jit, warmup

    seconds = warmup.warm_up(tuple(args.players), report=lambda line: print(line, flush=True))
    where = f"cached in {jit.CACHE_FOLDER}" if jit.CACHE_FOLDER else "not cached (no writable folder)"
    print(f"every part is compiled ({seconds:.0f} s), {where}")


COMMANDS = {
    "play": _cmd_play,
    "simulate": _cmd_simulate,
    "dataset": _cmd_dataset,
    "baselines": _cmd_baselines,
    "search": _cmd_search,
    "cycles": _cmd_cycles,
    "warmup": _cmd_warmup,
}


DEAL_OPTIONS = ("--start", "--deal")  # options whose value is a deal, which may start with '-'


def _attach_deal_values(argv):
    """``--start -A/-Q`` as ``--start=-A/-Q``: argparse would take the deal for an option."""
    words, rest = [], list(argv)
    while rest:
        word = rest.pop(0)
        if word in DEAL_OPTIONS and rest and rest[0].startswith("-") and "/" in rest[0]:
            word = f"{word}={rest.pop(0)}"
        words.append(word)
    return words


def parse_args(argv):
    """Parse the command line; a deal may start with '-' (``beggar play -/-``), which
    argparse would take for an option: an unclaimed word with a '/' in it, or made of
    compact symbols only, is the deal."""
    parser = build_parser()
    args, extras = parser.parse_known_args(_attach_deal_values(sys.argv[1:] if argv is None else argv))
    if args.command is None:
        if extras:
            raise UsageError(f"beggar: unrecognised arguments: {checks.excerpt(' '.join(extras))} (see beggar --help)")
        raise UsageError(parser.format_help().rstrip())
    if args.command == "play":
        words = ([] if args.deal is None else [args.deal]) + extras
        deals = [word for word in words if "/" in word or not word.strip("-JQKAjqka")]
        if not words:
            raise UsageError("beggar play: a deal is required, e.g. beggar play '-A--Q/----K-J'")
        args.deal = deals[0] if deals else words[0]  # else: the deal's own error names what is wrong with it
        words.remove(args.deal)
        extras = words
    if extras:
        raise UsageError(f"beggar {args.command}: unrecognised arguments: {checks.excerpt(' '.join(extras))}")
    return args
