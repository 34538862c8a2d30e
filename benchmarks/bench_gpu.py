"""The engine on a GPU (backend="cuda") against the CPU engine, in one run.

    python benchmarks/bench_gpu.py [--quick] [--games N] [--walks N] [--walk-steps N]
                                   [--positions N] [--k K] [--census N] [--census-deck CARDS ...]
                                   [--simulator | --ptx]

Names the device (GPU, compute capability, CPU cores), then measures on both engines:
deals/s of ``simulate`` (random 2-player games, cycle detection; every game's result
copied back) and of its summary (``beggar simulate`` without ``--out``: counted on the
device), deals/s of ``search`` with strategy ``random`` (only the games that may enter a
list sent back) and with strategy ``local`` (hill climbing), cards/s of the
Bayes forecaster's rollouts (K rollouts of each of N counted positions), and deals/s of
the cycle census (the first N deals of the 26-card deck, two of each court card and 18
numerals, the census of Paulhus's claim); prints each figure and the GPU/CPU ratio.
``--census-deck CARDS`` then counts every deal of each deck given on the GPU alone (the
largest two-of-each-court decks: ``JJQQKKAA`` and 24 or 28 numerals), writing each census
to ``census-CARDS.json`` in the current folder. Every GPU result is checked against the CPU's (a difference
exits with status 1). Each side runs once untimed first (compilation: most of a short
run's time on the GPU), then once timed. ``--quick`` is a short run for a GPU session's
first look (about a minute of device time, most of it compiling); the default sizes take
a few minutes.

Needs numba-cuda (``pip install 'beggar-env[cuda]'``) and an NVIDIA GPU: without one it
says so and exits 0. ``--simulator`` runs a tiny version under numba's CUDA simulator
(NUMBA_ENABLE_CUDASIM=1, set here before numba is imported) to show that the script works;
its "GPU" figures are the simulator's, meaningless as speeds. ``--ptx`` needs no GPU: it
compiles every kernel (2-4 players) to PTX for sm_90 (H100/H200) with numba-cuda's NVVM
(the ``nvidia-cuda-nvcc-cu12`` wheel), the check the simulator cannot make.
"""

import argparse
import os
import sys
import time
import warnings

SIZES = {  # games, walks, walk steps, positions, rollouts per position, census deals
    "default": (1 << 24, 1 << 14, 256, 20_000, 256, 1 << 25),
    "quick": (1 << 21, 1 << 12, 64, 2_000, 64, 1 << 22),
    "simulator": (200, 4, 10, 20, 8, 300),
}
CENSUS_DECK = "JJQQKKAA" + "-" * 18  # 26 cards: 3,936,933,000 deals


def _options():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run: about a minute of device time")
    parser.add_argument("--games", type=int, help="games for simulate and random search (default 2^24; quick 2^21)")
    parser.add_argument("--walks", type=int, help="local search walks (default 2^14; quick 2^12)")
    parser.add_argument("--walk-steps", type=int, help="games per walk (default 256; quick 64)")
    parser.add_argument("--positions", type=int, help="positions for the rollouts (default 20000; quick 2000)")
    parser.add_argument("--k", type=int, help="rollouts per position (default 256; quick 64)")
    parser.add_argument("--census", type=int, help="deals of the census compared (default 2^25; quick 2^22)")
    parser.add_argument(
        "--census-deck", action="append", default=[], metavar="CARDS", help="count every deal of CARDS on the GPU"
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--simulator", action="store_true", help="a tiny run under numba's CUDA simulator")
    where.add_argument("--ptx", action="store_true", help="no GPU needed: compile every kernel to PTX for sm_90")
    options = parser.parse_args()
    size = "simulator" if options.simulator else "quick" if options.quick else "default"
    for name, value in zip(("games", "walks", "walk_steps", "positions", "k", "census"), SIZES[size]):
        if getattr(options, name) is None:
            setattr(options, name, value)
    if options.simulator:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # before numba is imported
        warnings.simplefilter("error", RuntimeWarning)  # none expected: the kernels' uint64 hashing wraps quietly
    return options


def _timed(run):
    run()  # untimed: compilation
    started = time.perf_counter()
    value = run()
    return value, time.perf_counter() - started


def _compare(name, rate_unit, cpu_seconds, gpu_seconds, amount, same):
    cpu_rate, gpu_rate = amount / cpu_seconds, amount / gpu_seconds
    verdict = "same results" if same else "RESULTS DIFFER"
    print(f"{name:<13} CPU {cpu_rate:>14,.0f} {rate_unit}   GPU {gpu_rate:>14,.0f} {rate_unit}   ", end="")
    print(f"GPU/CPU {gpu_rate / cpu_rate:8.2f}x   {verdict}", flush=True)
    return same


def bench_simulate(games):
    import numpy as np

    import beggar_env

    cpu, cpu_s = _timed(lambda: beggar_env.simulate(games, seed=1))
    gpu, gpu_s = _timed(lambda: beggar_env.simulate(games, seed=1, backend="cuda"))
    return _compare("simulate", "deals/s", cpu_s, gpu_s, games, bool(np.array_equal(cpu, gpu)))


def bench_summary(games):
    """simulate's summary (beggar simulate without --out): counted on the device."""
    import numpy as np

    from beggar_env import game

    cpu, cpu_s = _timed(lambda: game.tally(games, seed=1))
    gpu, gpu_s = _timed(lambda: game.tally(games, seed=1, backend="cuda"))
    same = all(np.array_equal(cpu[name], gpu[name]) for name in cpu)
    return _compare("summary", "deals/s", cpu_s, gpu_s, games, same)


def _finds(report):
    from dataclasses import replace

    return {o: [replace(f, found_at=None) for f in entries] for o, entries in report.found.items()}


def bench_search(games):
    from beggar_env.search import search

    cpu, cpu_s = _timed(lambda: search(2, deals=games, seed=1))
    gpu, gpu_s = _timed(lambda: search(2, deals=games, seed=1, backend="cuda"))
    return _compare("search random", "deals/s", cpu_s, gpu_s, games, _finds(cpu) == _finds(gpu))


def bench_local(walks, walk_steps):
    from beggar_env.search import search

    options = dict(strategy="local", deals=walks * walk_steps, walk_steps=walk_steps, seed=1)
    cpu, cpu_s = _timed(lambda: search(2, **options))
    gpu, gpu_s = _timed(lambda: search(2, backend="cuda", **options))
    return _compare("search local", "deals/s", cpu_s, gpu_s, walks * walk_steps, _finds(cpu) == _finds(gpu))


def bench_rollouts(positions, k):
    import numpy as np

    from beggar_env import datasets
    from beggar_env.forecasting import forecasters

    data = datasets.generate(max(1, positions // 100), observation="counted", seed=3)
    obs = {name: value[:positions] for name, value in data.fields.items()}
    cpu_bayes = forecasters.BayesMC(2, k=k, seed=1)
    gpu_bayes = forecasters.BayesMC(2, k=k, seed=1, backend="cuda")
    cpu, cpu_s = _timed(lambda: cpu_bayes.counts(obs))
    gpu, gpu_s = _timed(lambda: gpu_bayes.counts(obs))
    cards = cpu_bayes.cards_played // 2  # two calls each
    same = bool(np.array_equal(cpu, gpu)) and cpu_bayes.cards_played == gpu_bayes.cards_played
    return _compare("rollouts", "cards/s", cpu_s, gpu_s, cards, same)


def bench_census(positions):
    from beggar_env.cycles import census

    options = dict(deck=CENSUS_DECK, n=positions)
    cpu, cpu_s = _timed(lambda: census.census(2, "every", **options))
    gpu, gpu_s = _timed(lambda: census.census(2, "every", backend="cuda", **options))
    return _compare("census", "deals/s", cpu_s, gpu_s, positions, cpu == gpu)


def whole_census(deck):
    """Every deal of ``deck`` on the GPU, written to census-DECK.json; its figures printed."""
    from beggar_env.cycles import census, positions

    out = f"census-{deck}.json"
    started = time.perf_counter()
    found = census.census(2, "every", deck=deck, backend="cuda", out=out)
    seconds = time.perf_counter() - started
    deals = positions.arrangements(deck)
    print(
        f"census {deck}: {deals:,} deals in {seconds:,.0f} s ({deals / seconds:,.0f} deals/s on the GPU): "
        f"{deals - found.ended:,} never end, {len(found.cycles)} distinct cycles by key, longest "
        f"{found.longest_cards:,} cards ({found.longest_tricks} tricks, deal {found.longest_index:,}); {out}",
        flush=True,
    )


def _device_line(cuda):
    import numba

    from beggar_env import gpu

    cores = f"CPU: {os.cpu_count()} cores, numba {numba.__version__} on {numba.config.NUMBA_NUM_THREADS} threads"
    if gpu.simulated():
        return f"device: numba's CUDA simulator (speeds meaningless); {cores}"
    device = cuda.get_current_device()
    name = device.name.decode() if isinstance(device.name, bytes) else device.name
    major, minor = device.compute_capability
    return f"device: {name} (compute capability {major}.{minor}); {cores}"


def compile_ptx():
    """Every kernel compiled to PTX for sm_90, without a GPU; 0 when all compile."""
    import types as pytypes

    import numba.cuda.dispatcher
    from numba import cuda
    from numba import types as t

    # device functions are compiled for the current device's compute capability: stand one in
    numba.cuda.dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=(9, 0))
    from beggar_env import core, gpu_game
    from beggar_env.cycles import gpu_census
    from beggar_env.forecasting import gpu_rollouts
    from beggar_env.gpu import THREADS_PER_BLOCK
    from beggar_env.search import gpu_searchers

    i8, i32, i64, u64 = t.int8, t.int32, t.int64, t.uint64
    capacity = core.capacity_for(core.DECK_SIZE)
    started = time.perf_counter()
    for n in (2, 3, 4):
        signatures = {
            "games": (
                gpu_game.games_kernel(n, capacity, core.DECK_SIZE, THREADS_PER_BLOCK),
                (i8, i8[:, :], i32[:, :], u64, i64, i64, i64, i64, i8, i64[:, :]),
            ),
            "candidates": (
                gpu_searchers.candidates_kernel(n, capacity, core.DECK_SIZE, THREADS_PER_BLOCK),
                (i8, i8[:, :], i32[:, :], u64, i64, i64, i64, i64, i8)
                + (t.Tuple((i64[:], i64[:], i64[:], i64[:, :])),),
            ),
            "tally": (
                gpu_game.tally_kernel(n, capacity, core.DECK_SIZE, THREADS_PER_BLOCK),
                (i8, i8[:, :], i32[:, :], u64, i64, i64, i64, i64, i8)
                + (t.Tuple((i64[:], i64[:], i64[:], i64[:], i64[:], i64[:], i64[:, :])),),
            ),
            "walks": (
                gpu_searchers.walks_kernel(n, capacity, core.DECK_SIZE),
                (i8, u64, i64, i64, i64, t.float64, i64[:], i64, i8[:, :], i32[:, :], i64)
                + (i8[:, :], i32[:, :], i64[:, :], u64[:], i64[:, :], i64[:, :, :], i8[:, :, :], i64[:]),
            ),
            "rollouts": (
                gpu_rollouts.rollouts_kernel(n, capacity),
                (i8[:, :, :], i64[:, :], i8[:, :], i64[:], i64[:, :], t.uint8[:, :], i64[:, :], i64, i64, u64, i64)
                + (i64[:, :], i64[:], i64[:]),
            ),
            "census": (
                gpu_census.census_kernel(n, core.DECK_SIZE, THREADS_PER_BLOCK),
                (i8, u64, i8[:], i64, i64[:], i64, u64, i64, i64[:, :], u64[:], i64[:, :], i8[:, :], i64[:, :])
                + (i64[:], i64[:]),
            ),
        }
        for name, (kernel, signature) in signatures.items():
            try:
                ptx, _ = cuda.compile_ptx(kernel.py_func, signature, cc=(9, 0))
            except Exception as error:  # noqa: BLE001 - NVVM missing, or a kernel that does not compile: say which
                print(f"bench_gpu --ptx: {name} kernel, {n} players: {type(error).__name__}: {error}".splitlines()[0])
                return 1
            depot = [line for line in ptx.splitlines() if "__local_depot" in line]
            local = depot[0].split("[")[-1].rstrip("];") if depot else "0"
            seconds = time.perf_counter() - started
            print(f"{name:<9} {n} players: PTX for sm_90, {len(ptx):,} characters, ", end="")
            print(f"{local} bytes of local memory a thread ({seconds:.0f} s so far)", flush=True)
    return 0


def main():
    options = _options()
    if options.ptx:
        return compile_ptx()
    from beggar_env import gpu

    try:
        cuda = gpu.require_cuda()
    except (ImportError, ValueError) as error:
        print(f"bench_gpu: no GPU to measure: {error}")
        return 0
    started = time.perf_counter()
    print(f"bench_gpu: {_device_line(cuda)}")
    print(
        f"bench_gpu: {options.games:,} games; {options.walks:,} walks of {options.walk_steps} games; "
        f"{options.positions:,} positions x {options.k} rollouts; {options.census:,} census deals",
        flush=True,
    )
    same = [
        bench_simulate(options.games),
        bench_summary(options.games),
        bench_search(options.games),
        bench_local(options.walks, options.walk_steps),
        bench_rollouts(options.positions, options.k),
        bench_census(options.census),
    ]
    for deck in options.census_deck:
        whole_census(deck)
    print(f"bench_gpu: {time.perf_counter() - started:.0f} s in all, compilation included")
    return 0 if all(same) else 1


if __name__ == "__main__":
    sys.exit(main())
