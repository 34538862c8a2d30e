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
among 10^9 deals of the decks counted so far), which the host merges by key. Each work
unit's digest (:mod:`~beggar_env.cycles.units`) is counted as the CPU's walk counts it,
with its own ``hash_term`` and ``length_bucket``: a sum of hash terms per block, a histogram
of lengths per block, the index beside each cycle's key; launches stop at a unit's bound,
so the GPU's manifest is the CPU's to the bit (``tests/test_cuda.py``). Threads of a
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
from . import cycle_keys, positions, units, walk

LAUNCH_POSITIONS = 1 << 26  # positions per launch (about a second of an H200 at 10^8 a second)
SIMULATOR_LAUNCH = 1 << 9  # the simulator plays a block's threads as Python threads: slowly
CYCLE_ROOM = 1 << 12  # keys a launch may write; a launch that reached more is played again with room for all
STAT_ENDED, STAT_CARDS, STAT_TRICKS, STAT_INDEX = range(4)  # a block's row
POSITIONS_FUNCTIONS = ("multinomial", "arrangement", "dealt_sizes", "random_position")
CENSUS_FUNCTIONS = ("write_key", "_less", "cycle_key", "play_to_cycle", "place")
DIGEST_FUNCTIONS = ("hash_term", "length_bucket")  # the walk's: a unit's digest counted as the CPU counts it


@functools.cache
def census_kernel(n_players, n_cards, threads):
    """The kernel of a launch: ``kernel[blocks, threads](source, seed, deck, fixed,
    counts, first, offset, n, stats, hashes, lengths, keys, periods, indices, n_cycles)``
    plays positions ``first .. first + n - 1`` (as :func:`cycle_keys.place` places them;
    position ``i``'s number is ``offset + i``, uint64, for the hash); per block ``b``:
    ``stats[b]`` its games that ended and its longest (cards, tricks, index from ``first``,
    -1 for none), ``hashes[b]`` the sum of its positions' :func:`walk.hash_term`,
    ``lengths[b]`` its ended games by :func:`walk.length_bucket`; each game that never ends
    adds its key, period (cards, tricks) and index (from ``first``) at ``n_cycles[0]``
    (counted beyond the buffers' room, written within it)."""
    twins = kernels.twins_of(cycle_keys, CENSUS_FUNCTIONS, (("positions", positions, POSITIONS_FUNCTIONS),))
    place, play_to_cycle, cycle_key = twins["place"], twins["play_to_cycle"], twins["cycle_key"]
    digest = kernels.twins_of(walk, DIGEST_FUNCTIONS)
    hash_term, length_bucket = digest["hash_term"], digest["length_bucket"]
    state_type, result_type, progress_type = kernels.record_types(n_players, core.capacity_for(n_cards))
    key_length, n_classes = n_cards + n_players - 1, core.N_CLASSES  # constants of the kernel
    records, block_range = kernels.records, kernels.block_range

    @kernels.kernel_jit
    def kernel(source, seed, deck, fixed, counts, first, offset, n, stats, hashes, lengths, keys, periods, indices,
               n_cycles):  # fmt: skip
        taken = cuda.shared.array(1, numba.int64)
        ended = cuda.shared.array(threads, numba.int64)
        best = cuda.shared.array((threads, 3), numba.int64)  # cards, tricks, index
        total = cuda.shared.array(threads, numba.uint64)  # each thread's sum of hash terms
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
        ended[t], best[t, 0], best[t, 1], best[t, 2], total[t] = 0, 0, 0, -1, np.uint64(0)
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
                    indices[slot] = i
            else:
                ended[t] += 1
                cuda.atomic.add(lengths, (cuda.blockIdx.x, length_bucket(r.cards)), 1)
                if r.cards > best[t, 0]:
                    best[t, 0], best[t, 1], best[t, 2] = r.cards, r.tricks, i
            total[t] += hash_term(offset + np.uint64(first + i), r.cards)
            i = cuda.atomic.add(taken, 0, 1)
        cuda.syncthreads()
        if t == 0:  # the block's figures: ended added up, the longest game, the earliest of equals
            row = stats[cuda.blockIdx.x]
            row[STAT_ENDED], row[STAT_CARDS], row[STAT_TRICKS], row[STAT_INDEX] = 0, 0, 0, -1
            hashes[cuda.blockIdx.x] = 0
            for u in range(threads):
                row[STAT_ENDED] += ended[u]
                hashes[cuda.blockIdx.x] += total[u]
                if best[u, 2] >= 0 and (
                    best[u, 0] > row[STAT_CARDS] or (best[u, 0] == row[STAT_CARDS] and best[u, 2] < row[STAT_INDEX])
                ):
                    row[STAT_CARDS], row[STAT_TRICKS], row[STAT_INDEX] = best[u, 0], best[u, 1], best[u, 2]

    return kernel


def launch_size():
    return SIMULATOR_LAUNCH if gpu.simulated() else LAUNCH_POSITIONS


def play(job, counts, first, n, merged):
    """A census job's positions ``first .. first + n - 1`` (its ``n_players``, ``source``,
    ``seed`` and ``unit``) on the GPU, in launches, none across a work unit's bound;
    ``merged(at, m, ended, longest, keys, periods, never, hash, lengths)`` after each, with
    what its ``m`` positions from ``at`` gave: the games that ended, each block's longest
    game (cards, tricks, index of its position; -1: none), the key, period (cards, tricks)
    and index of each game that never ends, the sum of the hash terms and the histogram of
    the ended games' lengths (:mod:`~beggar_env.cycles.units`)."""
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
        key_length = n_cards + job.n_players - 1
        for at, m in units.spans(offset + local, size, launch_size(), job.unit):
            lo = at - offset
            settings = (np.int8(source), np.uint64(job.seed), deck, np.int64(fixed), rest, np.int64(lo),
                        np.uint64(offset % 2**64), np.int64(m))  # fmt: skip
            stats, hashes, lengths, keys, periods, indices = _launch(kernel, threads, settings, key_length)
            longest = [  # the index in Python integers: an every census's positions pass int64
                (int(cards), int(tricks), at + int(index))
                for cards, tricks, index in stats[:, STAT_CARDS:]
                if index >= 0
            ]
            never = [at + int(index) for index in indices]
            ended, hash_sum = stats[:, STAT_ENDED].sum(), int(hashes.sum())
            merged(at, m, ended, longest, keys, periods, never, hash_sum, lengths.sum(axis=0))


def _launch(kernel, threads, settings, key_length, room=CYCLE_ROOM):
    """One launch of the positions of ``settings`` (the kernel's first arguments): the
    blocks' rows, hashes and length histograms, and the keys, periods and indices of the
    games that never end."""
    m = int(settings[-1])
    blocks = gpu.blocks_for(m, 4 * threads)
    stats = cuda.device_array((blocks, 4), np.int64)
    hashes = cuda.device_array(blocks, np.uint64)
    lengths = cuda.to_device(np.zeros((blocks, walk.LENGTH_BUCKETS), np.int64))
    keys = cuda.device_array((room, key_length), np.int8)
    periods = cuda.device_array((room, 2), np.int64)
    indices = cuda.device_array(room, np.int64)
    n_cycles = cuda.to_device(np.zeros(1, np.int64))
    kernel[blocks, threads](*settings, stats, hashes, lengths, keys, periods, indices, n_cycles)
    reached = int(n_cycles.copy_to_host()[0])
    if reached > room:  # rare: the same positions again, with room for every key
        return _launch(kernel, threads, settings, key_length, reached)
    found = indices.copy_to_host()[:reached]
    order = np.argsort(found, kind="stable")  # the never-ending games in order
    return (stats.copy_to_host(), hashes.copy_to_host(), lengths.copy_to_host(), keys.copy_to_host()[:reached][order],
            periods.copy_to_host()[:reached][order], found[order])  # fmt: skip
