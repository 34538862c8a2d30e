"""Games on a GPU, beside :mod:`beggar_env.game`: ``simulate(..., backend="cuda")`` and
``tally(..., backend="cuda")``, one game per thread with core's own rules, the same results
game for game as the CPU's.

Two kernels over the games kernel's frame (:func:`beggar_env.gpu.kernels.games_kernel_of`):
:func:`games_kernel` keeps every game's result row, :func:`tally_kernel` only counts (games
by cards and by tricks, by outcome, wins by seat, draws), so that nothing per game crosses
to the host. The host side launches a bounded number of games at a time (progress between
launches) and writes result records as core writes them.

Imported by :mod:`beggar_env.game` only once :func:`beggar_env.gpu.require_cuda` found
numba-cuda and a GPU (or the simulator): importing ``numba.cuda`` needs them.
"""

import functools

import numpy as np
from numba import cuda  # a global, which the simulator swaps for its own in a running kernel

from . import gpu
from .core import Outcome
from .gpu.kernels import device, games_kernel_of, result_length, write_row

LIMIT = int(Outcome.LIMIT)
CARD_BINS, TRICK_BINS = 4096, 1024  # the histograms of game lengths; longer games are listed apart


@device
def _keep_row(i, r, out):
    write_row(r, out[i])


@functools.cache
def games_kernel(n_players, capacity, width, threads):
    """The kernel that plays a launch's games (:func:`~beggar_env.gpu.kernels.games_kernel_of`);
    ``out[i]`` is game ``i``'s result row."""
    return games_kernel_of(n_players, capacity, width, threads, _keep_row)


@functools.cache
def tally_kernel(n_players, capacity, width, threads):
    """:func:`games_kernel` counting, not keeping: ``out`` is (cards int64[CARD_BINS],
    tricks int64[TRICK_BINS], outcomes int64[4], wins int64[n_players], draws int64[1],
    n_long int64[1], long int64[room, 2]): games by cards and by tricks (a game longer than
    the bins adds its (cards, tricks) at ``n_long[0]`` instead), by outcome, wins by seat,
    draws (a limit with no winner), each an atomic add in global memory."""

    @device
    def count_game(i, r, out):
        cards, tricks, outcomes, wins, draws, n_long, long = out
        if r.cards < CARD_BINS and r.tricks < TRICK_BINS:
            cuda.atomic.add(cards, r.cards, 1)
            cuda.atomic.add(tricks, r.tricks, 1)
        else:
            slot = cuda.atomic.add(n_long, 0, 1)
            if slot < long.shape[0]:
                long[slot, 0] = r.cards
                long[slot, 1] = r.tricks
        cuda.atomic.add(outcomes, r.outcome, 1)
        if r.winner >= 0:
            cuda.atomic.add(wins, r.winner, 1)
        elif r.outcome == LIMIT:
            cuda.atomic.add(draws, 0, 1)

    return games_kernel_of(n_players, capacity, width, threads, count_game)


def play_rows(deals, n_games, n_players, capacity, max_cards, max_tricks, detect_cycles):
    """The result rows (int64 [n_games, 8 + n_players]) of ``n_games`` games of a core
    deals tuple (``core.given_deals`` or ``core.shuffled_deals``), in one launch.

    Parameters
    ----------
    deals : a core deals tuple (cards, sizes, seed, first)
    n_games : the games to play
    n_players : seats at the table
    capacity : core's capacity of a hand (``core.capacity_for``)
    max_cards, max_tricks : the games' limits (``core.NO_LIMIT``: none)
    detect_cycles : whether a game stops at its first repeat
    """
    out = cuda.device_array((max(n_games, 1), result_length(n_players)), np.int64)
    gpu.launch_games(games_kernel, deals, n_games, n_players, capacity, (max_cards, max_tricks, detect_cycles), out)
    return out.copy_to_host()[:n_games]


def play_batch(deals, max_cards, max_tricks, detect_cycles, results, capacity, progress=None):
    """:func:`core.play_batch` on the GPU: every game of ``deals`` into ``results``, in
    launches of :data:`beggar_env.gpu.LAUNCH_GAMES`; ``progress(games_done)`` after each.

    Parameters
    ----------
    deals : a core deals tuple (cards, sizes, seed, first)
    max_cards, max_tricks : the games' limits (``core.NO_LIMIT``: none)
    detect_cycles : whether a game stops at its first repeat
    results : core result records, one per game, written in place
    capacity : core's capacity of a hand (``core.capacity_for``)
    progress : called with the games done after each launch, or None
    """
    cards, sizes, seed, first = deals
    n_players = results.dtype["hand_sizes"].shape[0]
    for lo in range(0, len(results), gpu.LAUNCH_GAMES):
        hi = min(lo + gpu.LAUNCH_GAMES, len(results))
        part = (
            (cards[lo:hi], sizes[lo:hi], seed, first + lo) if cards.shape[0] > 0 else (cards, sizes, seed, first + lo)
        )
        rows = play_rows(part, hi - lo, n_players, capacity, max_cards, max_tricks, detect_cycles)
        gpu.rows_to_records(rows, results[lo:hi])
        if progress is not None:
            progress(hi)


def tally(deals, n_games, n_players, capacity, max_cards, max_tricks, detect_cycles, room=None):
    """What a summary needs of ``n_games`` games of a core deals tuple, counted on the device
    in one launch (:func:`tally_kernel`): games by cards and by tricks, by outcome, wins by
    seat and draws; a dict of int64 arrays, as :func:`beggar_env.game.tally_of` gives for
    result records.

    Parameters
    ----------
    deals : a core deals tuple (cards, sizes, seed, first)
    n_games : the games to play
    n_players : seats at the table
    capacity : core's capacity of a hand (``core.capacity_for``)
    max_cards, max_tricks : the games' limits (``core.NO_LIMIT``: none)
    detect_cycles : whether a game stops at its first repeat
    room : games past the histograms kept at first (None: :data:`beggar_env.gpu.KEPT_ROOM`)
    """
    room = gpu.KEPT_ROOM if room is None else room
    counts = [cuda.to_device(np.zeros(size, np.int64)) for size in (CARD_BINS, TRICK_BINS, 4, n_players, 1, 1)]
    long = cuda.device_array((room, 2), np.int64)
    limits = (max_cards, max_tricks, detect_cycles)
    gpu.launch_games(tally_kernel, deals, n_games, n_players, capacity, limits, (*counts, long))
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
