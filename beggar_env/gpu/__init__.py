"""The engine on a GPU: what every wing's CUDA backend shares (``backend="cuda"`` of
:func:`beggar_env.simulate`, of random and local search, of the Bayes forecaster's
rollouts and of the cycle census), with the same results game for game as the CPU.

Each wing's device code lies beside its CPU code, over the compiled steps both share
(``beggar_env.gpu_game`` beside ``game``, ``search.gpu_searchers``,
``forecasting.gpu_rollouts``, ``cycles.gpu_census``); the module that picks the device
imports it once :func:`require_cuda` has found a GPU. What is here is what they all use:
the checks, launch geometry, the games launch and result records as core writes them; and,
in :mod:`beggar_env.gpu.kernels`, the device twins of compiled code and the games kernel's
frame.

It needs the extra (``pip install 'beggar-env[cuda]'``: numba-cuda) and an NVIDIA GPU with
its driver; ``NUMBA_ENABLE_CUDASIM=1`` (set before numba is imported) runs the same kernels
on the CPU under numba's CUDA simulator, slowly: that is how the tests run without a GPU.
"""

import importlib.util

import numba
import numpy as np

from .. import checks, core

INSTALL_HINT = checks.install_hint("cuda")
THREADS_PER_BLOCK = 128
SIMULATOR_THREADS = 8  # the simulator runs a block's threads as Python threads: few are enough
LAUNCH_GAMES = 1 << 20  # games per kernel launch: Ctrl-C and progress between launches
KEPT_ROOM = 1 << 14  # rows a launch keeps at first (candidates, games past the histograms); more: played again


def simulated() -> bool:
    """Whether numba's CUDA simulator stands in for a GPU (``NUMBA_ENABLE_CUDASIM=1``)."""
    return bool(numba.config.ENABLE_CUDASIM)


def require_cuda():
    """``numba.cuda``, ready to launch: ``ImportError`` naming what to install without
    numba-cuda, ``ValueError`` without a GPU (both one line)."""
    if not simulated() and importlib.util.find_spec("numba_cuda") is None:
        raise ImportError(f"backend='cuda' needs numba-cuda, which is not installed: {INSTALL_HINT}")
    from numba import cuda

    if not simulated() and not cuda.is_available():
        raise ValueError(
            "backend='cuda' needs an NVIDIA GPU and its driver, and numba finds none "
            "(NUMBA_ENABLE_CUDASIM=1 runs it on the CPU under numba's CUDA simulator, slowly)"
        )
    return cuda


def check_options(threads, detect_cycles, max_cards, max_tricks):
    """The settings the CUDA backend refuses: ``threads`` (the CPU's), and a run without
    cycle detection nor limit (a game that never ends would hold its GPU thread for ever:
    the CPU engine can be interrupted between calls)."""
    if threads is not None:
        raise ValueError("threads is for the local backend: the CUDA backend runs one game per GPU thread")
    if not detect_cycles and max_cards == core.NO_LIMIT and max_tricks == core.NO_LIMIT:
        raise ValueError(
            "backend='cuda' with detect_cycles=False needs max_cards or max_tricks: "
            "a game that never ends would run for ever on the GPU"
        )


def threads_per_block() -> int:
    """Threads a block runs: a GPU's warps, or a few Python threads under the simulator."""
    return SIMULATOR_THREADS if simulated() else THREADS_PER_BLOCK


def blocks_for(n_items, per_block) -> int:
    """Blocks that share ``n_items`` out, ``per_block`` to a block (one at least)."""
    return max(1, -(-n_items // per_block))


def rows_to_records(rows, results):
    """Result rows of the kernels (int64: outcome, winner, cards, tricks, the four cycle
    fields, hand sizes) into ``results`` (core.result_dtype records)."""
    from .kernels import R_HAND_SIZES

    names = ("outcome", "winner", "cards", "tricks", *core.result_dtype(1).names[5:])
    for column, name in enumerate(names):
        results[name] = rows[:, column]
    results["hand_sizes"] = rows[:, R_HAND_SIZES:]


def launch_games(kernel_of, deals, n_games, n_players, capacity, limits, out):
    """Launch a games kernel ``kernel_of(n_players, capacity, width, threads)`` on
    ``n_games`` games of a core deals tuple (``core.given_deals`` or ``core.shuffled_deals``)
    with ``limits`` (max_cards, max_tricks, detect_cycles), writing to ``out``.

    Parameters
    ----------
    kernel_of : ``(n_players, capacity, width, threads)`` -> the kernel (cached)
    deals : a core deals tuple (cards, sizes, seed, first)
    n_games : the games to play
    n_players : seats at the table
    capacity : core's capacity of a hand (``core.capacity_for``)
    limits : (max_cards, max_tricks, detect_cycles)
    out : the kernel's last argument, where it writes what it keeps
    """
    cuda = require_cuda()
    from .kernels import backlog_deals

    cards, sizes, seed, first = deals
    given = cards.shape[0] > 0
    if not given:
        cards, sizes = np.zeros((1, core.DECK_SIZE), np.int8), np.zeros((1, n_players), np.int32)
    width, threads = cards.shape[1], threads_per_block()
    max_cards, max_tricks, detect_cycles = limits
    kernel_of(n_players, capacity, width, threads)[
        blocks_for(n_games, backlog_deals(threads, width, n_players)), threads
    ](
        np.int8(given),
        cuda.to_device(np.ascontiguousarray(cards, np.int8)),
        cuda.to_device(np.ascontiguousarray(sizes, np.int32)),
        np.uint64(seed),
        np.int64(first),
        np.int64(n_games),
        np.int64(max_cards),
        np.int64(max_tricks),
        np.int8(detect_cycles),
        out,
    )
