"""``beggar dataset``: labelled observations of random games, as Parquet shards streamed to
a folder or a single ``.npz`` file."""

import argparse
import os

from .. import checks, files
from ..checks import plural
from . import UsageError, options


def add_parser(commands):
    d = commands.add_parser(
        "dataset",
        help="generate a labelled dataset",
        allow_abbrev=False,
        description="Generate observations of random games labelled with their outcomes.",
    )
    d.add_argument("--games", type=options.whole_number(1), required=True, metavar="N", help="number of games")
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
    d.add_argument(
        "--faces",
        action="store_true",
        help="also the cards' faces: the pile's, the card just played's, and with full the hands' (a view: "
        "the same games and labels)",
    )
    options.add_run_options(d, "generating")
    options.add_limits(d, tricks=False)
    d.add_argument(
        "--out",
        required=True,
        metavar="DIR|FILE.npz",
        help="a new or empty folder for Parquet shards, streamed as they are generated (needs pyarrow), "
        "or a .npz file for a small set (beggar_env.datasets.load reads either)",
    )
    d.add_argument("--split", metavar="NAME=F,...", help="Parquet: split by game, e.g. train=0.9,test=0.1")
    d.add_argument("--game-weights", action="store_true", help="Parquet: a weight column, so that every game weighs 1")
    d.add_argument(
        "--shard-games", type=options.whole_number(1), metavar="N", help="Parquet: games per shard (default 65536)"
    )
    options.add_ray(d)


def run(args):
    from .. import datasets
    from ..datasets.samples import MAX_PER_GAME
    from ..task import OBSERVATIONS

    if args.observation not in OBSERVATIONS:
        raise UsageError(
            f"beggar dataset: --observation must be one of {', '.join(OBSERVATIONS)}, "
            f"not {checks.excerpt(args.observation)}"
        )
    samples = args.samples
    if samples not in ("card", "trick"):
        try:
            samples = options.whole_number(1, MAX_PER_GAME)(samples)
        except argparse.ArgumentTypeError:
            raise UsageError(
                f"beggar dataset: --samples must be card, trick or a whole number from 1 to {MAX_PER_GAME:,}, "
                f"not {checks.excerpt(samples)}"
            ) from None
    settings = dict(
        n_players=args.players,
        observation=args.observation,
        samples=samples,
        threads=args.threads,
        max_cards=args.max_cards,
        faces=args.faces,
    )
    if not args.out.endswith(".npz"):
        return _to_parquet(args, settings)
    parquet_only = [name for name in ("split", "game_weights", "shard_games", "ray") if getattr(args, name)]
    if parquet_only:
        raise UsageError(f"beggar dataset: --{parquet_only[0].replace('_', '-')} is for Parquet: give --out DIR")
    out = options.out_path("dataset", args.out)
    seed = options.seed(args)
    options.compiling_notice(lambda: datasets.generate(1, seed=seed, **settings))  # samples/s counts generating only
    dataset, seconds = options.run_with_progress(
        "game",
        args.no_progress,
        lambda progress: datasets.generate(args.games, seed=seed, progress=progress, **settings),
    )
    out = dataset.save(out)
    print(
        f"{plural(len(dataset), 'sample')} of {plural(args.games, 'game')} ({args.players} players, "
        f"{args.observation} observation{' with faces' if args.faces else ''}, samples={args.samples}, seed {seed}) "
        f"saved to {out}"
    )
    print(f"{len(dataset) / seconds:,.0f} samples/s ({seconds:.2f} s)")


def _to_parquet(args, settings):
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
    seed = options.seed(args)
    extra = dict(split=args.split, game_weights=args.game_weights, shard_games=args.shard_games or shards.SHARD_GAMES)
    if args.ray is not None:
        options.require_ray("dataset", args)
        settings = dict(settings, threads=None, backend="ray", address=args.ray)
    else:
        with files.scratch_folder("warmup") as folder:  # samples/s counts generating only
            warm = os.path.join(folder, "d")
            options.compiling_notice(lambda: shards.generate(warm, 1, seed=seed, **settings, **extra))
    meta, seconds = options.run_with_progress(
        "game",
        args.no_progress,
        lambda progress: shards.generate(args.out, args.games, seed=seed, progress=progress, **settings, **extra),
    )
    n, size = meta["n_samples"], meta["bytes"]
    print(
        f"{plural(n, 'sample')} of {plural(args.games, 'game')} ({args.players} players, {args.observation} "
        f"observation{' with faces' if args.faces else ''}, samples={args.samples}, seed {seed}) saved to {args.out} "
        "as Parquet: "
        f"{plural(len(meta['shards']), 'shard')}, {size / 2**20:,.1f} MiB ({size / max(n, 1):.1f} bytes a sample)"
    )
    if splits is not None:
        print("splits: " + ", ".join(f"{name} {count:,}" for name, count in meta["split_samples"].items()))
    print(f"{n / seconds:,.0f} samples/s ({seconds:.2f} s)")
    options.ray_note(args)
