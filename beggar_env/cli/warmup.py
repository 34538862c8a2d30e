"""``beggar warmup``: compile every compiled part of the package at once."""

from . import options


def add_parser(commands):
    w = commands.add_parser(
        "warmup",
        help="compile every part once, so that no first use waits",
        allow_abbrev=False,
        description="Compile (or load from numba's cache) every compiled part of the package: the engine, the "
        "envs, the datasets, the search, the cycles, the Bayes forecaster and the machine of the forecasters that play "
        "forward, for each player count. A first use "
        "compiles only the part it runs; this does them all at once.",
    )
    w.add_argument("--players", type=options.players, nargs="+", default=[2, 3, 4], metavar="P", help="(default 2 3 4)")


def run(args):
    from .. import jit, warmup

    seconds = warmup.warm_up(tuple(args.players), report=lambda line: print(line, flush=True))
    where = f"cached in {jit.CACHE_FOLDER}" if jit.CACHE_FOLDER else "not cached (no writable folder)"
    print(f"every part is compiled ({seconds:.0f} s), {where}")
