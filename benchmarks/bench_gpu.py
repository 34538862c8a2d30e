"""The engine on a GPU (backend="cuda") against the CPU engine, in one run.

    python benchmarks/bench_gpu.py [--games N] [--positions N] [--k K] [--simulator]

Measures, on both engines: deals/s of ``simulate`` (random 2-player games, cycle detection),
deals/s of random ``search``, and cards/s of the Bayes forecaster's rollouts (K rollouts of
each of N counted positions); prints each figure and the GPU/CPU ratio. Every GPU result is
checked against the CPU's (a difference exits with status 1). Each side runs once untimed
first (compilation), then once timed.

Needs numba-cuda (``pip install 'beggar-env[cuda]'``) and an NVIDIA GPU: without one it
says so and exits 0. ``--simulator`` runs a tiny version under numba's CUDA simulator
(NUMBA_ENABLE_CUDASIM=1, set here before numba is imported) to show that the script works;
its "GPU" figures are the simulator's, meaningless as speeds.
"""

import argparse
import os
import sys
import time
import warnings


def _options():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=2_000_000, help="games for simulate and search (default 2e6)")
    parser.add_argument("--positions", type=int, default=2_000, help="positions for the rollouts (default 2000)")
    parser.add_argument("--k", type=int, default=256, help="rollouts per position (default 256)")
    parser.add_argument("--simulator", action="store_true", help="a tiny run under numba's CUDA simulator")
    options = parser.parse_args()
    if options.simulator:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # before numba is imported
        options.games, options.positions, options.k = 200, 20, 8
        warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)
    return options


def _timed(run):
    run()  # untimed: compilation
    started = time.perf_counter()
    value = run()
    return value, time.perf_counter() - started


def _compare(name, rate_unit, cpu, gpu, cpu_seconds, gpu_seconds, amount, same):
    cpu_rate, gpu_rate = amount / cpu_seconds, amount / gpu_seconds
    verdict = "same results" if same else "RESULTS DIFFER"
    print(f"{name:<10} CPU {cpu_rate:>14,.0f} {rate_unit}   GPU {gpu_rate:>14,.0f} {rate_unit}   ", end="")
    print(f"GPU/CPU {gpu_rate / cpu_rate:8.2f}x   {verdict}")
    return same


def bench_simulate(games):
    import numpy as np

    import beggar_env

    cpu, cpu_s = _timed(lambda: beggar_env.simulate(games, seed=1))
    gpu, gpu_s = _timed(lambda: beggar_env.simulate(games, seed=1, backend="cuda"))
    return _compare("simulate", "deals/s", cpu, gpu, cpu_s, gpu_s, games, bool(np.array_equal(cpu, gpu)))


def bench_search(games):
    from dataclasses import replace

    from beggar_env.search import search

    def finds(report):
        return {o: [replace(f, found_at=None) for f in entries] for o, entries in report.found.items()}

    cpu, cpu_s = _timed(lambda: search(2, deals=games, seed=1))
    gpu, gpu_s = _timed(lambda: search(2, deals=games, seed=1, backend="cuda"))
    return _compare("search", "deals/s", cpu, gpu, cpu_s, gpu_s, games, finds(cpu) == finds(gpu))


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
    return _compare("rollouts", "cards/s", cpu, gpu, cpu_s, gpu_s, cards, same)


def main():
    options = _options()
    from beggar_env import gpu

    try:
        gpu.require_cuda()
    except (ImportError, ValueError) as error:
        print(f"bench_gpu: no GPU to measure: {error}")
        return 0
    where = "numba's CUDA simulator (speeds meaningless)" if gpu.simulated() else "a GPU"
    print(f"bench_gpu: {options.games:,} games, {options.positions:,} positions x {options.k} rollouts, on {where}")
    same = [bench_simulate(options.games), bench_search(options.games), bench_rollouts(options.positions, options.k)]
    return 0 if all(same) else 1


if __name__ == "__main__":
    sys.exit(main())
