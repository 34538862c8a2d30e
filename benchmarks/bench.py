"""Benchmarks for beggar-env.

    python benchmarks/bench.py [--games N] [--quick] [--only NAME] [--list]

This is the runner; the benchmarks live in ``benchmarks/suite/``, one module per area
(``engine``, ``envs``, ``forecasting``, ``datasets``, ``search``, ``census``), over what
they share: one ``Context`` (the options, the deals, the compiled C reference:
``context``), the timing (``timing``), the printing (``printing``), the engine's
references (``references``) and the machine (``machine``). A benchmark is a function
``name(ctx)`` marked ``@benchmark("name")`` that prints its own section; they run in the
order of :data:`AREAS`, then of their definition. A benchmark that finds a wrong result
calls ``ctx.fail(...)``; the script then exits with status 1. Timings never fail the run:
a target is printed with "ok" or "below target". Each benchmark also records its headline
numbers (``ctx.figure``), printed last as a block of "README figures".

Timings: every contender is run once untimed first (numba's JIT compilation, caches,
page faults), then the contenders are run in turn, round after round, and each keeps
its best time: the machine may be shared, and interleaving spreads any slow patch over
everyone instead of landing on one contender.
"""

import argparse
import inspect
import sys
import time

from suite import census, datasets, engine, envs, forecasting, search
from suite.context import Context
from suite.machine import cpu_model, print_machine, usable_cpus
from suite.printing import section

AREAS = (engine, envs, forecasting, datasets, search, census)  # the running order


def benchmarks():
    """Every benchmark as (name, function, one-line description, run only on request), in
    running order: by area, then as each area defines them."""
    found = []
    for area in AREAS:
        for function in vars(area).values():
            if inspect.isfunction(function) and hasattr(function, "benchmark"):
                name, doc, on_request = function.benchmark
                found.append((name, function, doc, on_request))
    return found


def main(argv=None):
    found = benchmarks()
    names = [name for name, _, _, _ in found]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=None, help="random deals to play (default 200000; --quick: 20000)")
    parser.add_argument("--quick", action="store_true", help="fewer games and repeats: a smoke run")
    parser.add_argument("--only", choices=names, action="append", help="run only this benchmark (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    parser.add_argument("--seed", type=int, default=20240501, help="seed of the random deals")
    parser.add_argument("--repeats", type=int, default=None, help="timed rounds (default 5; --quick: 2)")
    parser.add_argument(
        "--python-games", type=int, default=None, help="games for pure Python (default 2000; --quick: 200)"
    )
    parser.add_argument("--python-repeats", type=int, default=None, help="timed rounds for pure Python (default: all)")
    parser.add_argument(
        "--search-minutes",
        type=float,
        default=None,
        help="search-quality: minutes per strategy (default 10; --quick: 0.5)",
    )
    parser.add_argument("--search-players", type=int, default=2, help="search-quality: players (default 2)")
    parser.add_argument("--search-out", default=None, help="search-quality: keep the finds in this JSON-lines file")
    parser.add_argument(
        "--backward-positions",
        type=int,
        default=None,
        help="backward: random positions (default 1000000; --quick: 100000; a tenth as many positions of games)",
    )
    parser.add_argument(
        "--backward-players", type=int, nargs="+", default=[2, 3, 4], choices=(2, 3, 4), help="backward: players"
    )
    parser.add_argument("--backward-threads", type=int, default=None, help="backward: threads (default numba's)")
    args = parser.parse_args(argv)
    if args.list:
        for name, _, doc, on_request in found:
            print(f"{name:14} {doc}{' (only with --only)' if on_request else ''}")
        return 0
    quick = args.quick
    args.games = args.games if args.games is not None else (20_000 if quick else 200_000)
    args.repeats = args.repeats if args.repeats is not None else (2 if quick else 5)
    args.python_games = args.python_games if args.python_games is not None else (200 if quick else 2000)
    args.search_minutes = args.search_minutes if args.search_minutes is not None else (0.5 if quick else 10.0)
    if args.backward_positions is None:
        args.backward_positions = 100_000 if quick else 1_000_000
    if args.games < 1 or args.repeats < 1:
        parser.error("--games and --repeats must be at least 1")

    print_machine()
    ctx = Context(args)
    started = time.perf_counter()
    for name, function, _, on_request in found:
        if (args.only and name not in args.only) or (not args.only and on_request):
            continue
        function(ctx)
    print()
    print(f"total {time.perf_counter() - started:.1f} s")
    if ctx.figures:
        section("README figures")
        print(f"machine: {cpu_model()}, {usable_cpus()} usable CPUs, numba {ctx.numba_threads} threads")
        for line in ctx.figures:
            print(line)
    if ctx.failures:
        print(f"{len(ctx.failures)} failure(s):")
        for failure in ctx.failures:
            print(f"  {failure}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
