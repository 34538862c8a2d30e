"""``beggar simulate``: many random games, summarised in constant memory (``--out``, ``--json``: every result)."""

import json

import numpy as np

from .. import checks, core, files
from ..checks import plural
from . import options

JSON_BYTES_PER_GAME = 200  # a generous estimate of one game's raw results as JSON text


def add_parser(commands):
    s = commands.add_parser(
        "simulate",
        help="play many random games",
        allow_abbrev=False,
        description="Play random games and summarise them (in constant memory, unless --out "
        "or --json asks for every result).",
    )
    s.add_argument(
        "--games", type=options.whole_number(1), default=100_000, metavar="N", help="number of games (default 100000)"
    )
    options.add_run_options(s, "playing")
    options.add_limits(s)
    s.add_argument("--json", action="store_true", help="print the raw results as JSON")
    s.add_argument("--out", metavar="FILE.npz", help="save the raw results as .npz")
    options.add_ray(s)
    options.add_backend(s)


def print_summary(summary, seed, n_players, seconds):
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


def run(args):
    from ..game import simulate, tally
    from ..stats import Summary

    out = options.out_path("simulate", args.out) if args.out is not None else None
    seed = options.seed(args)
    settings = dict(n_players=args.players, threads=args.threads, max_cards=args.max_cards, max_tricks=args.max_tricks)
    if args.backend == "cuda":
        options.require_cuda("simulate", args)
        settings.update(backend="cuda")
        options.compiling_notice(lambda: simulate(1, seed=seed, **settings))
    elif args.ray is not None:
        options.require_ray("simulate", args)
        settings.update(threads=None, backend="ray", address=args.ray)
    else:
        options.compiling_notice(lambda: simulate(1, seed=seed, **settings))  # games/s counts playing only
    if out is None and not args.json:  # a summary needs no more memory for 10**9 games than for 10 (on a GPU: none)

        def summarised(progress):
            return (
                Summary(args.players).add_tally(tally(args.games, seed=seed, progress=progress, **settings)).as_dict()
            )

        summary, seconds = options.run_with_progress("game", args.no_progress, summarised)
        print_summary(summary, seed, args.players, seconds)
        options.ray_note(args)
        return
    if args.json:
        checks.memory(
            args.games * JSON_BYTES_PER_GAME,
            f"the JSON of {args.games:,} games",
            "use --out FILE.npz, or fewer --games",
        )
    results, seconds = options.run_with_progress(
        "game", args.no_progress, lambda progress: simulate(args.games, seed=seed, progress=progress, **settings)
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
    print_summary(Summary(args.players).add(results).as_dict(), seed, args.players, seconds)
    options.ray_note(args)
    print(f"raw results saved to {out}")
