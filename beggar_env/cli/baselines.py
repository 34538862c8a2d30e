"""``beggar baselines``: train and evaluate every forecaster with the published protocol,
and write the results (``--redraw``: the tables and pictures again, with rows added)."""

import os
import sys
import time

from .. import checks
from . import UsageError, options


def add_parser(commands):
    b = commands.add_parser(
        "baselines",
        help="train and evaluate the winner forecasters",
        allow_abbrev=False,
        description="Train the learned baselines and evaluate every forecaster with one protocol "
        "for 2, 3 and 4 players; print the tables; write JSON, tables and pictures. To add your own "
        "forecaster's row to published results, use --redraw --forecaster FILE (seconds): without "
        "--redraw the whole study runs again (37 min on 2 shared cores, docs/results.md).",
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
        help=f"also train and evaluate the GRU on the public stream for each player count (needs torch: "
        f"{checks.install_hint('rl')}; 5 to 10 minutes a player count on 2 cores)",
    )
    b.add_argument(
        "--players",
        type=options.players,
        nargs="+",
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
        "test set) to add as a row; again for more (with --redraw: added to --out's results, in seconds)",
    )
    b.add_argument(
        "--seed",
        type=options.whole_number(0, checks.MAX_SEED),
        default=0,
        metavar="S",
        help="seed of the forecasters and game statistics (default 0)",
    )
    b.add_argument("--threads", type=options.whole_number(1), metavar="T", help="threads (default: all cores)")
    b.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args):
    from tqdm import tqdm

    from ..forecasting.study import folder, results, settings, tables
    from ..forecasting.study.run import run as run_study

    try:
        settings.require_extras(args.sequences and not args.redraw)
    except ImportError as error:
        raise UsageError(str(error)) from None

    out = os.path.abspath(args.out)
    try:
        folder.check_out(out)
    except ValueError as error:
        raise UsageError(f"beggar baselines: --out: {error}") from None
    if args.redraw:
        return _redraw(out, args.reports, args.out)
    protocol = settings.QUICK if args.quick else settings.FULL
    for path in args.reports:
        if not os.path.isfile(path):
            raise UsageError(f"beggar baselines: --forecaster: no such file: {path}")
        try:
            results.read_report(path, protocol, args.players)
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
    study = run_study(
        tuple(args.players), protocol, args.seed, args.threads, args.reports, stage, sequences=args.sequences
    )
    written = folder.write(study, out, command)
    for n, block in study["players"].items():
        print(f"\n{n} players: {block['positions']:,} test positions ({block['open_positions']:,} open)")
        print_rows(tables.table_rows(block))
    print(
        f"\nresults in {out}: results.json, tables.md and {len(written)} pictures "
        f"({time.perf_counter() - started:.0f} s)"
    )


def _redraw(out, reports, given_out):
    """Read ``out``'s results.json, add the reports, write the tables and pictures again: all
    under results.json's lock (a second run on the folder meanwhile is refused, exit 2), every
    report checked before anything is written, results.json replaced last."""
    path = os.path.join(out, "results.json")
    for report in reports:
        if not os.path.isfile(report):
            raise UsageError(f"beggar baselines: --forecaster: no such file: {report}")
    from ..forecasting.study import folder

    command = f"beggar baselines --redraw --out {given_out}" + "".join(f" --forecaster {r}" for r in reports)
    try:
        written = folder.redraw(out, reports, command)
    except ValueError as error:
        raise UsageError(f"beggar baselines --redraw: {error}") from None
    if reports:
        rows = f"{len(reports)} row{'s' if len(reports) > 1 else ''}"
        print(f"{rows} added to {path}; tables.md and {len(written)} pictures written again")
    else:
        print(f"tables.md and {len(written)} pictures written again in {out} from results.json")


def print_rows(rows):
    """One line per forecaster: all positions, then each track (open: inference; determined:
    simulation) with the log-loss gap it closes between the seat prior and Bayes."""
    print(
        f"{'forecaster':<34} {'acc':>6} {'logloss':>8} {'brier':>6} {'ece':>6} {'gap':>6} | {'open: acc':>9} "
        f"{'logloss':>8} {'gap':>6} | {'determined: acc':>15} {'logloss':>8} {'gap':>6} | {'fcst/s':>10}"
    )
    for r in rows:
        print(
            f"{r['forecaster'][:34]:<34} {r['accuracy']:6.3f} {r['log loss all']:8.3f} {r['brier']:6.3f} "
            f"{r['ece']:6.3f} {r['gap closed'] + 0.0:6.2f} | {r['accuracy open']:9.3f} {r['log loss open']:8.3f} "
            f"{r['gap closed open'] + 0.0:6.2f} | {r['accuracy determined']:15.3f} {r['log loss determined']:8.3f} "
            f"{r['gap closed determined'] + 0.0:6.2f} | {r['forecasts/s']:10,.0f}"
        )
