"""The census on a GPU (``census.census(..., backend="cuda")``), beside the CPU's census:
the same positions played by the same code, the compiled steps of
:mod:`~beggar_env.cycles.cycle_keys` compiled for the GPU (:func:`beggar_env.gpu.kernels.twins_of`),
and reduced on the device, so that nothing per game crosses to the host.

One thread plays a position at a time, to its end or its first repeat: it places the
position (a random one from its key, or deal ``index`` of the deck, unranked on the
device from the block's prefix and counts), plays it with core's own rules and cycle
detection, and keeps its own count of games that ended and its longest game; a block adds
its threads' figures up in shared memory, and one row per block comes back. A game that
never ends writes its cycle's canonical key and period to a buffer (cycles are rare: tens
among 10^9 deals of the decks counted so far), which the host merges by key. Threads of a
block take the next position from a counter in shared memory as soon as their game ends,
so a long game does not hold the others back. Launches are bounded (Ctrl-C and progress
between them), so the compiled code never sees an index past int64
(:func:`positions.blocks`).

What it does not do (yet), against the fastest public kernels of this kind (N1k06's
cudacamicia): it unranks with the CPU's own ``arrangement`` (a multinomial computed as it
goes, not a table in constant memory) and plays core's state records in local memory, not
hands packed in registers; it takes positions from a block's counter in shared memory, not
a persistent kernel's global one. Simpler, the same code as the CPU's, and unmeasured: no
GPU was lent to this project.

Imported by the census only once :func:`beggar_env.gpu.require_cuda` found numba-cuda and
a GPU (or the simulator): importing ``numba.cuda`` needs them.
"""

import functools

import numba
import numpy as np
from numba import cuda  # a global, which the simulator swaps for its own in a running kernel

from .. import core, gpu
from ..gpu import kernels
from . import cycle_keys, positions

LAUNCH_POSITIONS = 1 << 26  # positions per launch (about a second of an H200 at 10^8 a second)
SIMULATOR_LAUNCH = 1 << 9  # the simulator plays a block's threads as Python threads: slowly
CYCLE_ROOM = 1 << 12  # keys a launch may write; a launch that reached more is played again with room for all
STAT_ENDED, STAT_CARDS, STAT_TRICKS, STAT_INDEX = range(4)  # a block's row
POSITIONS_FUNCTIONS = ("multinomial", "arrangement", "dealt_sizes", "random_position")
CENSUS_FUNCTIONS = ("write_key", "_less", "cycle_key", "play_to_cycle", "place")


@functools.cache
def census_kernel(n_players, n_cards, threads):
    """The kernel of a launch: ``kernel[blocks, threads](source, seed, deck, fixed,
    counts, first, n, stats, keys, periods, n_cycles)`` plays positions ``first .. first +
    n - 1`` (as :func:`cycle_keys.place` places them); ``stats[b]``: block ``b``'s games that
    ended, and its longest (cards, tricks, index from ``first``, -1 for none); each game
    that never ends adds its key and period (cards, tricks) at ``n_cycles[0]`` (counted
    beyond the buffer's room, written within it)."""
    twins = kernels.twins_of(cycle_keys, CENSUS_FUNCTIONS, (("positions", positions, POSITIONS_FUNCTIONS),))
    place, play_to_cycle, cycle_key = twins["place"], twins["play_to_cycle"], twins["cycle_key"]
    state_type, result_type, progress_type = kernels.record_types(n_players, core.capacity_for(n_cards))
    key_length, n_classes = n_cards + n_players - 1, core.N_CLASSES  # constants of the kernel
    records, block_range = kernels.records, kernels.block_range

    @kernels.kernel_jit
    def kernel(source, seed, deck, fixed, counts, first, n, stats, keys, periods, n_cycles):
        taken = cuda.shared.array(1, numba.int64)
        ended = cuda.shared.array(threads, numba.int64)
        best = cuda.shared.array((threads, 3), numba.int64)  # cards, tricks, index
        states = records(cuda.local.array(3, state_type))  # the game, cycle detection's start and probe
        r = records(cuda.local.array(1, result_type))[0]
        f = records(cuda.local.array(1, progress_type))[0]
        cards = cuda.local.array(n_cards, numba.int8)
        sizes = cuda.local.array(n_players, numba.int32)
        key = cuda.local.array(key_length, numba.int8)
        scratch = cuda.local.array(key_length, numba.int8)
        left = cuda.local.array(n_classes, numba.int64)
        t = cuda.threadIdx.x
        lo, hi = block_range(n)
        if t == 0:
            taken[0] = lo
        ended[t], best[t, 0], best[t, 1], best[t, 2] = 0, 0, 0, -1
        cuda.syncthreads()
        i = cuda.atomic.add(taken, 0, 1)
        while i < hi:  # positions in rising order per thread: its first longest is its earliest
            place(source, seed, deck, fixed, counts, first + i, cards, sizes, left)
            if play_to_cycle(states[0], cards, sizes, states[1], states[2], f, r):
                cycle_key(states[0], r.cycle_tricks, key, scratch)
                slot = cuda.atomic.add(n_cycles, 0, 1)
                if slot < keys.shape[0]:
                    for j in range(key_length):
                        keys[slot, j] = key[j]
                    periods[slot, 0] = r.cycle_cards
                    periods[slot, 1] = r.cycle_tricks
            else:
                ended[t] += 1
                if r.cards > best[t, 0]:
                    best[t, 0], best[t, 1], best[t, 2] = r.cards, r.tricks, i
            i = cuda.atomic.add(taken, 0, 1)
        cuda.syncthreads()
        if t == 0:  # the block's figures: ended added up, the longest game, the earliest of equals
            row = stats[cuda.blockIdx.x]
            row[STAT_ENDED], row[STAT_CARDS], row[STAT_TRICKS], row[STAT_INDEX] = 0, 0, 0, -1
            for u in range(threads):
                row[STAT_ENDED] += ended[u]
                if best[u, 2] >= 0 and (
                    best[u, 0] > row[STAT_CARDS] or (best[u, 0] == row[STAT_CARDS] and best[u, 2] < row[STAT_INDEX])
                ):
                    row[STAT_CARDS], row[STAT_TRICKS], row[STAT_INDEX] = best[u, 0], best[u, 1], best[u, 2]

    return kernel


def launch_size():
    return SIMULATOR_LAUNCH if gpu.simulated() else LAUNCH_POSITIONS


def play(job, counts, first, n, merged):
    """A census job's positions ``first .. first + n - 1`` (its ``n_players``, ``source`` and
    ``seed``) on the GPU, in launches; ``merged(m, ended, longest, keys, periods)`` after
    each, with what its ``m`` positions gave: the games that ended, each block's longest
    game (cards, tricks, index of its position; -1: none), and the key and period (cards,
    tricks) of each game that never ends."""
    deck_classes = np.repeat(np.arange(core.N_CLASSES, dtype=np.int8), counts)
    n_cards, threads = len(deck_classes), gpu.threads_per_block()
    kernel = census_kernel(job.n_players, n_cards, threads)
    if job.source == "random":
        ranges = [(0, deck_classes, len(deck_classes), counts, first, n, 0)]
    else:
        ranges, at = [], first
        for prefix, rest, local, size in positions.blocks(counts, first, n):
            ranges.append((1, np.append(prefix, np.int8(0)), len(prefix), rest, local, size, at - local))
            at += size  # (a prefix is padded: no empty arrays on the device)
    for source, deck, fixed, rest, local, size, offset in ranges:
        deck, rest = cuda.to_device(np.ascontiguousarray(deck, np.int8)), cuda.to_device(np.asarray(rest, np.int64))
        for lo in range(local, local + size, launch_size()):
            m = min(launch_size(), local + size - lo)
            settings = (np.int8(source), np.uint64(job.seed), deck, np.int64(fixed), rest, np.int64(lo), np.int64(m))
            stats, keys, periods = _launch(kernel, threads, settings, n_cards + job.n_players - 1)
            longest = [  # the index in Python integers: an every census's positions pass int64
                (int(cards), int(tricks), lo + offset + int(index))
                for cards, tricks, index in stats[:, STAT_CARDS:]
                if index >= 0
            ]
            merged(m, stats[:, STAT_ENDED].sum(), longest, keys, periods)


def _launch(kernel, threads, settings, key_length, room=CYCLE_ROOM):
    """One launch of the positions of ``settings`` (the kernel's first arguments): the
    blocks' rows, and the keys and periods of the games that never end."""
    m = int(settings[-1])
    blocks = gpu.blocks_for(m, 4 * threads)
    stats = cuda.device_array((blocks, 4), np.int64)
    keys = cuda.device_array((room, key_length), np.int8)
    periods = cuda.device_array((room, 2), np.int64)
    n_cycles = cuda.to_device(np.zeros(1, np.int64))
    kernel[blocks, threads](*settings, stats, keys, periods, n_cycles)
    reached = int(n_cycles.copy_to_host()[0])
    if reached > room:  # rare: the same positions again, with room for every key
        return _launch(kernel, threads, settings, key_length, reached)
    return stats.copy_to_host(), keys.copy_to_host()[:reached], periods.copy_to_host()[:reached]
