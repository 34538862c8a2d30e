"""The rollouts on a GPU (``rollouts.play_out(..., backend="cuda")``, the Bayes forecaster's
and the oracle's ``backend="cuda"``), beside the CPU's :mod:`~beggar_env.forecasting.rollouts`:
the same counts, played by the same compiled steps
(:mod:`~beggar_env.forecasting.rollout_steps`, compiled for the GPU by
:func:`beggar_env.gpu.kernels.twins_of`), one position per thread.

Imported by :func:`~beggar_env.forecasting.rollouts.play_out` only once
:func:`beggar_env.gpu.require_cuda` found numba-cuda and a GPU (or the simulator):
importing ``numba.cuda`` needs them.
"""

import functools

import numba
import numpy as np
from numba import cuda  # a global, which the simulator swaps for its own in a running kernel

from .. import core, gpu
from ..core import DECK_SIZE
from ..gpu.kernels import block_range, kernel_jit, record_types, records, twins_of
from . import rollout_steps

LAUNCH_POSITIONS = 1 << 14  # positions per launch (each is played k times)


@functools.cache
def rollouts_kernel(n_players, capacity):
    """The kernel of the rollouts (rollout_steps' ``roll_position``): one position per
    thread, taken from the block's share as threads free up; ``counts[i]``,
    ``rollouts[i]`` and ``played[i]`` its results."""
    state_type, result_type, progress_type = record_types(n_players, capacity)
    roll_position = twins_of(rollout_steps, ("set_position", "roll_position"))["roll_position"]

    @kernel_jit
    def kernel(
        hands, unseen, pile, pile_size, table, alive, counters, max_cards, k, seed, first, counts, rollouts, played
    ):
        taken = cuda.shared.array(1, numba.int32)
        states = records(cuda.local.array(3, state_type))
        r = records(cuda.local.array(1, result_type))[0]
        f = records(cuda.local.array(1, progress_type))[0]
        bag = cuda.local.array(DECK_SIZE, numba.int8)
        positions = (hands, unseen, pile, pile_size, table, alive, counters)
        lo, hi = block_range(counts.shape[0])
        if cuda.threadIdx.x == 0:
            taken[0] = 0
        cuda.syncthreads()
        i = lo + cuda.atomic.add(taken, 0, 1)
        while i < hi:
            played[i] = roll_position(i, positions, max_cards, k, seed, first, counts, rollouts, bag, states, f, r)
            i = lo + cuda.atomic.add(taken, 0, 1)

    return kernel


def play_out(arrays, k, seed, max_cards, progress=None):
    """The rollouts' counts on the GPU, from the checked ``table_arrays``: (counts,
    rollouts, cards played), the same numbers as the CPU's, in launches of
    :data:`LAUNCH_POSITIONS`; ``progress(done, n)`` after each."""
    n, n_players = arrays[0].shape[:2]
    counts = np.zeros((n, n_players + 1), np.int64)
    rollouts = np.zeros(n, np.int64)
    played = np.zeros(n, np.int64)
    threads = gpu.threads_per_block()
    kernel = rollouts_kernel(n_players, core.capacity_for(DECK_SIZE))
    for lo in range(0, n, LAUNCH_POSITIONS):
        hi = min(lo + LAUNCH_POSITIONS, n)
        out = [cuda.to_device(a[lo:hi]) for a in (counts, rollouts, played)]
        blocks = gpu.blocks_for(hi - lo, 4 * threads)
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
