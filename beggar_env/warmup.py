"""``beggar warmup``: compile every compiled part of the package once, so that no later
first use waits for numba.

numba compiles a function the first time it runs with new argument types and keeps the
machine code in its cache (:mod:`beggar_env.jit`); the types differ by player count (a
game's state is a record of one shape per count), so each part runs once per count. The
cache holds code for this machine's processor and these versions, which is why it is
built here rather than shipped with the package.

The parts compile in parallel, in as many processes as there are cores, each saving into
the shared cache (its saves are locked: :mod:`beggar_env.jit`); the engine of each player
count (the first part of that count) is compiled before the other parts of that count,
which then load it from the cache rather than each compiling it again.
"""

import functools
import importlib.util
import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import NamedTuple

import numpy as np

from . import compiling, datasets, files, game, jit
from .cycles import backward, census, insertion, reconstruct
from .forecasting import forecasters
from .search import search

PLAYERS = (2, 3, 4)


class Part(NamedTuple):
    """One part to compile: its name, a call that runs it on a handful of games (picklable,
    so that another process can run it), and its player count."""

    name: str
    call: Callable[[], object]
    players: int


def engine(n):
    game.simulate(2, n_players=n, seed=0)
    game.play("-A/-Q")


def envs(n):
    import gymnasium as gym

    import beggar_env  # noqa: F401 (registers Beggar-v0)

    for step_unit in ("card", "trick"):
        single = gym.make("Beggar-v0", n_players=n, step_unit=step_unit)
        single.reset(seed=0)
        single.step(0)
        vector = gym.make_vec("Beggar-v0", num_envs=2, n_players=n, step_unit=step_unit)
        vector.reset(seed=0)
        vector.step(np.zeros(2, np.int64))


def in_memory_datasets(n):
    for samples in ("card", 2):
        datasets.generate(2, n_players=n, samples=samples)


def parquet(n):
    with files.scratch_folder("warmup") as folder:
        datasets.shards.generate(os.path.join(folder, "d"), 2, n_players=n, seed=0)


def searches(n):
    for strategy in ("random", "local"):
        search(n, deals=2, strategy=strategy, walk_steps=2)


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
    from .forecasting import machine, transitions

    transitions.transitions(20, n, seed=0)
    transitions.tally(2, n, seed=0, threads=1)
    machine.machine_games(transitions.exact_table(2, n, 0), 2, n, seed=0)
    machine.rolled(datasets.generate(2, n_players=n, observation="counted", seed=0).fields, k=2)


def parts(players=PLAYERS):
    """Every :class:`Part`, for each player count, the engine first."""
    kinds = [
        ("simulate", engine),
        ("Beggar-v0 and its vector env", envs),
        ("datasets", in_memory_datasets),
        *([("Parquet shards", parquet)] if importlib.util.find_spec("pyarrow") is not None else []),
        ("search", searches),
        ("Bayes forecaster", bayes),
        ("cycles", cycles),
        ("forecasters that play forward", forward),
    ]
    return [Part(f"{name}, {n} players", functools.partial(call, n), n) for n in players for name, call in kinds]


def warm_up(players=PLAYERS, report=print, processes=None):
    """Run every part once, ``processes`` at a time (None: one per core), each in a process
    of its own; ``report(line)`` as each part starts (``"NAME ..."``) and ends (``"NAME:
    SECONDS s"``); return the seconds it all took. With one process, or no shared cache,
    the parts run here, one after the other."""
    started = time.perf_counter()
    todo = parts(players)
    processes = min(len(todo), cores() if processes is None else processes)
    if processes <= 1 or not shared_cache():
        for part in todo:
            report(f"{part.name} ...")
            report(f"{part.name}: {timed(part.call):.1f} s")
    else:
        _in_processes(todo, processes, report)
    return time.perf_counter() - started


def cores():
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def shared_cache():
    """Whether a new process caches its code where this one does (the user's cache, not a
    private folder or none), so that what the parts compile in other processes is kept."""
    return jit.CACHE_FOLDER is not None and os.path.dirname(jit.CACHE_FOLDER) == jit.user_cache_root()


def timed(call):
    """The seconds ``call()`` took."""
    began = time.perf_counter()
    call()
    return time.perf_counter() - began


def _quiet():
    """In a part's process: no compile notice (``beggar warmup`` says what it compiles)."""
    os.environ[compiling.QUIET] = "1"


def _in_processes(todo, processes, report):
    """Run the parts in ``processes`` fresh (spawned) processes, at most that many at once
    (so that a part is announced when it starts), each count's engine before its other parts."""
    engines = {}
    for part in todo:
        engines.setdefault(part.players, part)
    ready = [engines[n] for n in engines]
    waiting = [part for part in todo if engines[part.players] is not part]
    context = multiprocessing.get_context("spawn")  # no fork of a process that may hold numba's threads
    with ProcessPoolExecutor(processes, mp_context=context, initializer=_quiet) as pool:
        running = {}
        while ready or running:
            while ready and len(running) < processes:
                part = ready.pop(0)
                report(f"{part.name} ...")
                running[pool.submit(timed, part.call)] = part
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                part = running.pop(future)
                report(f"{part.name}: {future.result():.1f} s")
                if engines[part.players] is part:
                    ready += [other for other in waiting if other.players == part.players]
                    ready.sort(key=todo.index)


def cache_is_empty():
    """Whether this build's cache holds no compiled code yet (the next first uses compile)."""
    folder = jit.CACHE_FOLDER
    return folder is None or not any(name.endswith(".nbi") for _, _, names in os.walk(folder) for name in names)
