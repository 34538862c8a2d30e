"""``beggar warmup``: compile every compiled part of the package once, so that no later
first use waits for numba.

numba compiles a function the first time it runs with new argument types and keeps the
machine code in its cache (:mod:`beggar_env.jit`); the types differ by player count (a
game's state is a record of one shape per count), so each part runs once per count. The
cache holds code for this machine's processor and these versions, which is why it is
built here rather than shipped with the package.
"""

import importlib.util
import os
import time

import numpy as np

from . import datasets, files, game, jit
from .cycles import backward, census, insertion, reconstruct
from .forecasting import forecasters
from .search import search

PLAYERS = (2, 3, 4)


def parts(players=PLAYERS):
    """(name, call) of every part, for each player count: each call runs the part on a
    handful of games, compiling it (or loading it from the cache)."""
    import gymnasium as gym

    import beggar_env  # noqa: F401 (registers Beggar-v0)

    def env(n):
        for step_unit in ("card", "trick"):
            single = gym.make("Beggar-v0", n_players=n, step_unit=step_unit)
            single.reset(seed=0)
            single.step(0)
            vector = gym.make_vec("Beggar-v0", num_envs=2, n_players=n, step_unit=step_unit)
            vector.reset(seed=0)
            vector.step(np.zeros(2, np.int64))

    def parquet(n):
        with files.scratch_folder("warmup") as folder:
            datasets.shards.generate(os.path.join(folder, "d"), 2, n_players=n, seed=0)

    def bayes(n):
        data = datasets.generate(2, n_players=n, observation="counted", seed=0)
        forecasters.BayesMC(n, k=2).predict_proba(data.fields)

    def cycles(n):
        census.census(n, "random", n=2, seed=0)
        census.census(n, "every", deck="JQ--", n=2)
        small = "/".join(["--J-", "K-J-"] + [""] * (n - 2))  # a cycle with empty seats: the two-player one
        cards, sizes, leader = backward.position_arrays(small, 0)
        backward.counts(cards[None], sizes[None], np.array([leader], np.int32))
        reconstruct.reconstruct(small, max_nodes=4)
        reconstruct.extend("/".join(["-A", "-Q"] + ["-"] * (n - 2)), offsets=1, max_nodes=4)
        insertion.explore([small], n, deck="JJKK------", levels=1, beam=1)

    def forward(n):  # the learned step's machine and the rollouts of the compute-accuracy curve
        from .forecasting import forward

        forward.transitions(20, n, seed=0)
        forward.tally(2, n, seed=0, threads=1)
        forward.machine_games(forward.exact_table(2, n, 0), 2, n, seed=0)
        forward.rolled(datasets.generate(2, n_players=n, observation="counted", seed=0).fields, k=2)

    for n in players:
        yield f"simulate, {n} players", lambda n=n: (game.simulate(2, n_players=n, seed=0), game.play("-A/-Q"))
        yield f"Beggar-v0 and its vector env, {n} players", lambda n=n: env(n)
        yield f"datasets, {n} players", lambda n=n: [datasets.generate(2, n_players=n, samples=s) for s in ("card", 2)]
        if importlib.util.find_spec("pyarrow") is not None:
            yield f"Parquet shards, {n} players", lambda n=n: parquet(n)
        yield (
            f"search, {n} players",
            lambda n=n: [search(n, deals=2, strategy=s, walk_steps=2) for s in ("random", "local")],
        )
        yield f"Bayes forecaster, {n} players", lambda n=n: bayes(n)
        yield f"cycles, {n} players", lambda n=n: cycles(n)
        if importlib.util.find_spec("torch") is not None:
            yield f"forecasters that play forward, {n} players", lambda n=n: forward(n)


def warm_up(players=PLAYERS, report=print):
    """Run every part once; ``report(line)`` after each; return the seconds it all took."""
    started = time.perf_counter()
    for name, call in parts(players):
        began = time.perf_counter()
        call()
        report(f"{name}: {time.perf_counter() - began:.1f} s")
    return time.perf_counter() - started


def cache_is_empty():
    """Whether this build's cache holds no compiled code yet (the next first uses compile)."""
    folder = jit.CACHE_FOLDER
    return folder is None or not any(name.endswith(".nbi") for _, _, names in os.walk(folder) for name in names)
