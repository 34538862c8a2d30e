"""The engine on a GPU: ``backend="cuda"`` of :func:`beggar_env.simulate`, of random and
local search, and of the Bayes forecaster's rollouts, with the same results game for game
as the CPU engine.

The kernels (:mod:`beggar_env.gpu.kernels`, numba-cuda) play one game per thread with the
CPU's own code compiled for the GPU: :mod:`beggar_env.core`'s rules, cycle detection and
limits, its ``derive_key`` and ``shuffle_deck`` (so a seed gives the same games), the
search walks' steps and the rollouts. This module is the host side: checks, launches a
bounded number of games at a time (Ctrl-C and progress between launches), and result
records as core writes them.

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
LAUNCH_POSITIONS = 1 << 14  # positions per rollouts launch (each is played k times)
LAUNCH_WALKS = 1 << 16  # local search: walks on the GPU at once, one a thread
WALK_LAUNCH_GAMES = 1 << 24  # local search: about this many games per launch, all walks together
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


def _launch_games(kernel_of, deals, n_games, n_players, capacity, limits, out):
    """Launch the games kernel ``kernel_of(n_players, capacity, width, threads)`` on
    ``n_games`` games of a core deals tuple (``core.given_deals`` or ``core.shuffled_deals``)
    with ``limits`` (max_cards, max_tricks, detect_cycles), writing to ``out``."""
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


def play_rows(deals, n_games, n_players, capacity, max_cards, max_tricks, detect_cycles):
    """The result rows (int64 [n_games, 8 + n_players]) of ``n_games`` games of a core
    deals tuple (``core.given_deals`` or ``core.shuffled_deals``), in one launch."""
    cuda = require_cuda()
    from .kernels import games_kernel, result_length

    out = cuda.device_array((max(n_games, 1), result_length(n_players)), np.int64)
    _launch_games(games_kernel, deals, n_games, n_players, capacity, (max_cards, max_tricks, detect_cycles), out)
    return out.copy_to_host()[:n_games]


def candidate_rows(searchers_module, seed, first, n_games, n_players, thresholds, room=KEPT_ROOM):
    """Of random games ``first .. first + n_games - 1`` of the stream ``seed`` (cycles
    detected, no limit), those that may enter a top list (``searchers_module``'s
    ``is_candidate`` against ``thresholds``, one per objective), chosen on the device: their
    numbers in the launch and their result rows, in one launch (again, with room for all,
    when more than ``room`` are kept)."""
    cuda = require_cuda()
    from .kernels import candidates_kernel, result_length

    def kernel_of(n_players, capacity, width, threads):
        return candidates_kernel(n_players, capacity, width, threads, searchers_module)

    thresholds = cuda.to_device(np.asarray(thresholds, np.int64))
    n_kept = cuda.to_device(np.zeros(1, np.int64))
    kept = cuda.device_array(room, np.int64)
    rows = cuda.device_array((room, result_length(n_players)), np.int64)
    deals = core.shuffled_deals(np.uint64(seed), first)
    limits = (core.NO_LIMIT, core.NO_LIMIT, True)
    capacity, out = core.capacity_for(core.DECK_SIZE), (thresholds, n_kept, kept, rows)
    _launch_games(kernel_of, deals, n_games, n_players, capacity, limits, out)
    count = int(n_kept.copy_to_host()[0])
    if count > room:
        return candidate_rows(searchers_module, seed, first, n_games, n_players, thresholds.copy_to_host(), count)
    order = np.argsort(kept.copy_to_host()[:count], kind="stable")  # in the order of the games
    return kept.copy_to_host()[:count][order], rows.copy_to_host()[:count][order]


def tally(deals, n_games, n_players, capacity, max_cards, max_tricks, detect_cycles, room=KEPT_ROOM):
    """What a summary needs of ``n_games`` games of a core deals tuple, counted on the device
    in one launch (:func:`kernels.tally_kernel`): games by cards and by tricks, by outcome,
    wins by seat and draws; a dict of int64 arrays, as :func:`beggar_env.game.tally_of`
    gives for result records."""
    cuda = require_cuda()
    from .kernels import CARD_BINS, TRICK_BINS, tally_kernel

    counts = [cuda.to_device(np.zeros(size, np.int64)) for size in (CARD_BINS, TRICK_BINS, 4, n_players, 1, 1)]
    long = cuda.device_array((room, 2), np.int64)
    limits = (max_cards, max_tricks, detect_cycles)
    _launch_games(tally_kernel, deals, n_games, n_players, capacity, limits, (*counts, long))
    cards, tricks, outcomes, wins, draws, n_long = (a.copy_to_host() for a in counts)
    if n_long[0] > room:
        return tally(deals, n_games, n_players, capacity, max_cards, max_tricks, detect_cycles, int(n_long[0]))
    long = long.copy_to_host()[: n_long[0]]
    cards, tricks = _with(cards, long[:, 0]), _with(tricks, long[:, 1])
    return {"cards": cards, "tricks": tricks, "outcomes": outcomes, "wins": wins, "draws": int(draws[0])}


def _with(counts, values):
    """A histogram's ``counts`` with the ``values`` listed apart added, as long as its
    largest value (as ``numpy.bincount`` makes it on the CPU)."""
    total = np.bincount(values, minlength=len(counts))
    total[: len(counts)] += counts
    return np.trim_zeros(total, "b")


def play_batch(deals, max_cards, max_tricks, detect_cycles, results, capacity, progress=None):
    """:func:`core.play_batch` on the GPU: every game of ``deals`` into ``results``, in
    launches of :data:`LAUNCH_GAMES`; ``progress(games_done)`` after each."""
    cards, sizes, seed, first = deals
    n_players = results.dtype["hand_sizes"].shape[0]
    for lo in range(0, len(results), LAUNCH_GAMES):
        hi = min(lo + LAUNCH_GAMES, len(results))
        part = (
            (cards[lo:hi], sizes[lo:hi], seed, first + lo) if cards.shape[0] > 0 else (cards, sizes, seed, first + lo)
        )
        rows = play_rows(part, hi - lo, n_players, capacity, max_cards, max_tricks, detect_cycles)
        rows_to_records(rows, results[lo:hi])
        if progress is not None:
            progress(hi)


def play_out(rollouts_module, arrays, k, seed, max_cards, progress=None):
    """rollouts.play_out's counts on the GPU, from its ``table_arrays``: (counts, rollouts,
    cards played), the same numbers as the CPU's (its ``roll_position``, from
    ``rollouts_module``, compiled for the GPU)."""
    cuda = require_cuda()
    from .kernels import rollouts_kernel

    n, n_players = arrays[0].shape[:2]
    counts = np.zeros((n, n_players + 1), np.int64)
    rollouts = np.zeros(n, np.int64)
    played = np.zeros(n, np.int64)
    threads = threads_per_block()
    kernel = rollouts_kernel(n_players, core.capacity_for(core.DECK_SIZE), rollouts_module)
    for lo in range(0, n, LAUNCH_POSITIONS):
        hi = min(lo + LAUNCH_POSITIONS, n)
        out = [cuda.to_device(a[lo:hi]) for a in (counts, rollouts, played)]
        blocks = blocks_for(hi - lo, 4 * threads)
        kernel[blocks, threads](
            *(cuda.to_device(np.ascontiguousarray(a[lo:hi])) for a in arrays),
            np.int64(max_cards),
            np.int64(k),
            np.uint64(seed),
            np.int64(lo),
            *out,
        )
        for target, device_array in zip((counts, rollouts, played), out):
            target[lo:hi] = device_array.copy_to_host()
        if progress is not None:
            progress(hi, n)
    return counts, rollouts, int(played.sum())


class Walks:
    """Local search's walks ``first .. first + n_walks - 1`` on the GPU, one a thread
    (``searchers`` strategy ``local``): each :meth:`launch` plays about
    :data:`WALK_LAUNCH_GAMES` games of them and returns the games that reached the
    thresholds. A walk pauses when its buffer of candidates is full and goes on at the
    next launch, so what it keeps does not depend on the launches: the CPU's chunks do the same.
    ``searchers`` is the module of the walks' steps (beggar_env.search.searchers, handed over
    by its caller: this floor imports nothing above it).

    The walks' steps are searchers' own functions; with a temperature, the GPU's ``exp``
    (libdevice, within 1 ulp) may round otherwise than the CPU's, so a draw within an ulp
    of ``exp(gain / T)`` could part the walks on a real GPU (under the simulator both use
    the C library's)."""

    def __init__(
        self,
        searchers,
        n_players,
        starts,
        start_sizes,
        objective,
        seed,
        first,
        n_walks,
        unit_games,
        end_game,
        temperature,
    ):
        self.cuda = require_cuda()
        from .kernels import FOUND_PER_WALK, result_length, walks_kernel

        width = starts.shape[1]
        self.kernel = walks_kernel(n_players, core.capacity_for(width), width, searchers)
        self.settings = (
            np.int8(objective),
            np.uint64(seed),
            np.int64(first),
            np.int64(unit_games),
            np.int64(end_game),
            np.float64(temperature),
        )
        self.first, self.unit_games, self.n_walks = first, unit_games, n_walks
        n_starts = len(starts)
        if n_starts == 0:  # no empty arrays on the device
            starts, start_sizes = np.zeros((1, width), np.int8), np.zeros((1, n_players), np.int32)
        self.starts = (np.int64(n_starts), self.cuda.to_device(starts), self.cuda.to_device(start_sizes))
        self.lengths = np.clip(end_game - (first + np.arange(n_walks)) * unit_games, 0, unit_games)
        self.steps = np.int64(max(1, WALK_LAUNCH_GAMES // n_walks))
        device = self.cuda.to_device
        self.deals = device(np.zeros((n_walks, width), np.int8))
        self.sizes = device(np.zeros((n_walks, n_players), np.int32))
        self.walks = device(np.zeros((n_walks, 3), np.int64))
        self.counters = device(np.zeros(n_walks, np.uint64))
        self.found = (
            device(np.zeros((n_walks, FOUND_PER_WALK), np.int64)),
            device(np.zeros((n_walks, FOUND_PER_WALK, result_length(n_players)), np.int64)),
            device(np.zeros((n_walks, FOUND_PER_WALK, width), np.int8)),
        )
        self.played = 0  # games played so far, all walks
        self.done = not self.lengths.any()

    def launch(self, thresholds):
        """Play on; the games that reached ``thresholds`` (int64 per objective) as
        (index, result row, deal's classes, hand sizes), and update :attr:`played` and
        :attr:`done`."""
        from .kernels import W_STEP

        n_found = self.cuda.to_device(np.zeros(self.n_walks, np.int64))
        self.kernel[blocks_for(self.n_walks, threads_per_block()), threads_per_block()](
            *self.settings,
            self.cuda.to_device(np.asarray(thresholds, np.int64)),
            *self.starts,
            self.steps,
            self.deals,
            self.sizes,
            self.walks,
            self.counters,
            *self.found,
            n_found,
        )
        n_found = n_found.copy_to_host()
        finds = []
        if n_found.any():
            steps, rows, deals = (a.copy_to_host() for a in self.found)
            sizes = self.sizes.copy_to_host()
            for i in np.flatnonzero(n_found):
                for k in range(n_found[i]):
                    index = (self.first + int(i)) * self.unit_games + int(steps[i, k])
                    finds.append((index, rows[i, k], deals[i, k], sizes[i]))
        played = self.walks.copy_to_host()[:, W_STEP]
        self.played = int(played.sum())
        self.done = bool((played >= self.lengths).all())
        return finds
